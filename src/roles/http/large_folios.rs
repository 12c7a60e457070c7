//! Files whose memory comes in folios as large as their size allows, for the chunks the
//! fast path sends by `sendfile`: a 500 KB chunk in folios of 256, 128, 64, 32 and 8 KiB and
//! a page rather than 123 pages of 4 KiB, a 2 MB one in five folios and a page rather than
//! 489 pages. The kernel looks a file's memory up folio by folio, and the fewer folios cost a
//! content server less CPU per request: as little as nginx's at 100 KB and 500 KB, where a
//! memfd's pages cost 10–20% more (BENCHMARKS.md, http).
//!
//! A memfd gets such folios only if the machine's shmem huge pages are on; a tmpfs mounted with
//! `huge=` gets them whatever that setting (unless `deny`). From Linux 6.14 on, mounted
//! `huge=within_size`, a file takes folios of every size up to 2 MiB that fit within its size,
//! so a chunk wastes no memory beyond its last page. Before, a tmpfs has no folios but 2 MiB
//! ones, so the mount is `huge=always` and only chunks large enough to pay for a whole folio go
//! there (`every_folio_size`; smaller ones stay in a memfd's pages). Each file's size is set
//! before it is written, so a kernel that decides by the size sees the whole chunk. The memory
//! a file takes is read back from its block count, not assumed.
//!
//! The tmpfs is the process's own and attached nowhere (`fsopen` and `fsmount` without
//! `move_mount`): no path reaches it but this process's descriptors, and it goes with the
//! process. Its files cannot be sealed as a memfd is; instead each is made unnamed
//! (`O_TMPFILE`), written, marked immutable (`FS_IMMUTABLE_FL`: no open for writing and no
//! truncation succeeds afterwards, even as root through /proc/PID/fd), reopened read-only, and
//! its writable descriptor closed. Making the mount needs `CAP_SYS_ADMIN` (roles run as root in
//! a lab), and the flag `CAP_LINUX_IMMUTABLE`; where either cannot be had (a container without
//! them, a seccomp filter, an old kernel, shmem huge pages set to `deny`), callers keep their
//! bytes elsewhere. The first attempt at the mount decides for the process's whole life.

use std::ffi::CStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::sync::OnceLock;

// From linux/mount.h (the libc crate does not carry them).
const FSOPEN_CLOEXEC: libc::c_uint = 0x1;
const FSCONFIG_SET_STRING: libc::c_uint = 1;
const FSCONFIG_CMD_CREATE: libc::c_uint = 6;
const FSMOUNT_CLOEXEC: libc::c_uint = 0x1;
const MOUNT_ATTR_NOSUID: libc::c_uint = 0x2;
const MOUNT_ATTR_NODEV: libc::c_uint = 0x4;
const MOUNT_ATTR_NOEXEC: libc::c_uint = 0x8;
// From linux/fs.h.
const FS_IMMUTABLE_FL: libc::c_long = 0x10;

/// Whether this kernel's tmpfs has folios of every size up to 2 MiB (Linux 6.14 on), by the
/// release it reports.
pub(super) fn every_folio_size() -> bool {
    static EVERY: OnceLock<bool> = OnceLock::new();
    *EVERY.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .is_ok_and(|release| release_at_least(&release, (6, 14)))
    })
}

/// Whether a kernel release such as `6.18.44-fc` is `major.minor` or later.
fn release_at_least(release: &str, (major, minor): (u32, u32)) -> bool {
    let mut numbers = release
        .trim()
        .split(['.', '-'])
        .map(|n| n.parse::<u32>().ok());
    match (numbers.next().flatten(), numbers.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}

/// The process's tmpfs, made on first use; `None` if it could not be made.
static MOUNT: OnceLock<Option<OwnedFd>> = OnceLock::new();

/// An unnamed, read-only file on the process's tmpfs holding `bytes`.
pub(super) fn read_only_file(bytes: &[u8]) -> io::Result<File> {
    let mount = MOUNT
        .get_or_init(|| {
            private_tmpfs()
                .inspect_err(|e| tracing::debug!("no tmpfs of huge pages ({e})"))
                .ok()
        })
        .as_ref()
        .ok_or(io::ErrorKind::Unsupported)?;
    let mut writable = unnamed_file(mount)?;
    // The final size first: a kernel that sizes folios by it sees the whole chunk at once.
    writable.set_len(u64::try_from(bytes.len()).map_err(io::Error::other)?)?;
    writable.write_all(bytes)?;
    make_immutable(&writable)?;
    // The magic link reopens this very file, unnamed as it is.
    File::open(format!("/proc/self/fd/{}", writable.as_raw_fd()))
}

/// A new unnamed file on `mount`, open for reading and writing.
fn unnamed_file(mount: &OwnedFd) -> io::Result<File> {
    // SAFETY: a NUL-terminated path relative to an open directory descriptor; checked.
    let fd = unsafe {
        libc::openat(
            mount.as_raw_fd(),
            c".".as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o600,
        )
    };
    Ok(File::from(owned(fd)?))
}

/// The memory `file`'s pages and folios take, as the kernel counts its blocks.
pub(super) fn allocated_bytes(file: &File) -> io::Result<usize> {
    let blocks = file.metadata()?.blocks();
    // `st_blocks` counts 512-byte units, whatever the filesystem's block size.
    usize::try_from(blocks.saturating_mul(512)).map_err(io::Error::other)
}

/// Sets `FS_IMMUTABLE_FL` on `file`: from now on it cannot be opened for writing or truncated.
fn make_immutable(file: &File) -> io::Result<()> {
    let mut flags: libc::c_long = 0;
    // SAFETY: FS_IOC_GETFLAGS and FS_IOC_SETFLAGS read and write one long at a valid address.
    check(unsafe { libc::ioctl(file.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) }.into())?;
    flags |= FS_IMMUTABLE_FL;
    // SAFETY: as above.
    check(unsafe { libc::ioctl(file.as_raw_fd(), libc::FS_IOC_SETFLAGS, &flags) }.into())
}

/// A tmpfs with large folios (`huge=within_size` where it has every size, else `huge=always`),
/// not attached anywhere: the descriptor is the only way in.
fn private_tmpfs() -> io::Result<OwnedFd> {
    // `deny` overrides every mount's `huge=`: its files would have 4 KiB pages, which a memfd
    // has already, with seals.
    let shmem = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/shmem_enabled")?;
    if shmem.contains("[deny]") {
        return Err(io::Error::other("shmem huge pages are set to deny"));
    }
    // SAFETY: fsopen with a NUL-terminated name and a flag; the result is checked.
    let context = owned(unsafe {
        libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) as libc::c_int
    })?;
    let huge = if every_folio_size() {
        c"within_size"
    } else {
        c"always"
    };
    for (key, value) in [(c"huge", huge), (c"mode", c"0700")] {
        set(&context, key, value)?;
    }
    // SAFETY: fsconfig on the context just made, with no key or value for this command.
    check(unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            context.as_raw_fd(),
            FSCONFIG_CMD_CREATE,
            std::ptr::null::<libc::c_char>(),
            std::ptr::null::<libc::c_void>(),
            0,
        )
    })?;
    // SAFETY: fsmount of a created context with plain flags; the result is checked.
    let mount = owned(unsafe {
        libc::syscall(
            libc::SYS_fsmount,
            context.as_raw_fd(),
            FSMOUNT_CLOEXEC,
            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
        ) as libc::c_int
    })?;
    // Without `CAP_LINUX_IMMUTABLE` no file here could be made immutable: found out once,
    // rather than by writing every chunk here and then again elsewhere.
    make_immutable(&unnamed_file(&mount)?)?;
    Ok(mount)
}

/// One `key=value` option of a filesystem context.
fn set(context: &OwnedFd, key: &CStr, value: &CStr) -> io::Result<()> {
    // SAFETY: fsconfig on an open context with NUL-terminated strings.
    check(unsafe {
        libc::syscall(
            libc::SYS_fsconfig,
            context.as_raw_fd(),
            FSCONFIG_SET_STRING,
            key.as_ptr(),
            value.as_ptr(),
            0,
        )
    })
}

fn check(result: libc::c_long) -> io::Result<()> {
    if result < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A descriptor a call returned, owned, or the call's error.
fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just returned to us, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether this process may make the tmpfs: `CAP_SYS_ADMIN` in its effective set (the
/// tests' stand-in for "runs as a lab's root").
#[cfg(test)]
pub(super) fn may_mount() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
            u64::from_str_radix(hex.trim(), 16).ok()
        })
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;

    use super::super::sealed::{page_bytes, Mapping};
    use super::*;

    /// With `CAP_SYS_ADMIN` (CI runs as root) the file is made: on a tmpfs, with its bytes,
    /// unnamed, closed to writes even through a reopen, and mapped by 2 MiB pages; without it
    /// the caller is told the mount is unsupported, which is what it falls back on.
    #[test]
    fn files_are_unnamed_immutable_and_in_2_mib_folios() {
        // Two whole folios, so a mapping can be made of PMD entries.
        let bytes: Vec<u8> = (0..4 * 1024 * 1024u32).map(|i| (i % 253) as u8).collect();
        let file = match read_only_file(&bytes) {
            Ok(file) => file,
            Err(e) if !may_mount() && e.kind() == io::ErrorKind::Unsupported => return,
            Err(e) => panic!("with CAP_SYS_ADMIN the tmpfs is made: {e}"),
        };
        let mut read = vec![0u8; bytes.len()];
        file.read_exact_at(&mut read, 0).unwrap();
        assert_eq!(read, bytes);
        assert!(file.write_at(b"x", 0).is_err(), "the file took a write");
        let link = format!("/proc/self/fd/{}", file.as_raw_fd());
        let reopened = std::fs::OpenOptions::new().write(true).open(&link);
        assert!(reopened.is_err(), "reopened for writing");
        // SAFETY: fstatfs into a zeroed struct on an open descriptor.
        let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::fstatfs(file.as_raw_fd(), &mut stat) }, 0);
        assert_eq!(stat.f_type, libc::TMPFS_MAGIC);
        let target = std::fs::read_link(&link).unwrap();
        assert!(
            target.to_string_lossy().ends_with("(deleted)"),
            "the file has a name: {}",
            target.display()
        );
        assert_eq!(pmd_mapped_kib(&file, bytes.len()), 4096, "2 MiB folios");
    }

    /// A 500 KB chunk (below 2 MiB) is held mostly in folios larger than a page, and takes
    /// its whole pages and no more, on kernels whose tmpfs has folios of every size (6.14 on).
    #[test]
    fn a_chunk_below_2_mib_is_in_large_folios_that_fit_within_it() {
        if !every_folio_size() {
            assert!(
                std::env::var_os("CI").is_none(),
                "needs Linux 6.14 or later, whose tmpfs has folios of every size"
            );
            eprintln!("skipped: this kernel's tmpfs has no folios between 4 KiB and 2 MiB");
            return;
        }
        let bytes: Vec<u8> = (0..500_000u32).map(|i| (i % 251) as u8).collect();
        let file = match read_only_file(&bytes) {
            Ok(file) => file,
            Err(e) if !may_mount() && e.kind() == io::ErrorKind::Unsupported => return,
            Err(e) => panic!("with CAP_SYS_ADMIN the tmpfs is made: {e}"),
        };
        let page = page_bytes();
        assert_eq!(
            allocated_bytes(&file).unwrap(),
            500_000usize.div_ceil(page) * page
        );
        let large = bytes_in_large_folios(&file, bytes.len());
        // 256 + 128 + 64 + 32 + 8 KiB and a page, where memory is not too fragmented for such
        // folios; at least the largest of them.
        assert!(large >= 256 * 1024, "{large} bytes in large folios");
    }

    #[test]
    fn kernel_releases_compare_by_major_and_minor() {
        assert!(release_at_least("6.18.44-fc-v1147\n", (6, 14)));
        assert!(release_at_least("6.14", (6, 14)));
        assert!(release_at_least("7.0.1", (6, 14)));
        assert!(!release_at_least("6.13.9", (6, 14)));
        assert!(!release_at_least("5.19.0-generic", (6, 14)));
        assert!(!release_at_least("garbage", (6, 14)));
    }

    /// A read-only mapping of `len` bytes of `file`, every page touched so it is present.
    fn touched_mapping(file: &File, len: usize) -> Mapping {
        let mapping = Mapping::new(file, len).unwrap();
        let touched: u64 = mapping
            .as_ref()
            .iter()
            .step_by(page_bytes())
            .map(|&b| u64::from(b))
            .sum();
        std::hint::black_box(touched);
        mapping
    }

    /// How many of the first `len` bytes of `file` lie in folios larger than a page, by the
    /// page flags of the pages a mapping of it reaches (/proc/self/pagemap and
    /// /proc/kpageflags, which need root).
    fn bytes_in_large_folios(file: &File, len: usize) -> usize {
        // From linux/kernel-page-flags.h and Documentation/admin-guide/mm/pagemap.rst.
        const KPF_COMPOUND_HEAD: u64 = 1 << 15;
        const KPF_COMPOUND_TAIL: u64 = 1 << 16;
        const PRESENT: u64 = 1 << 63;
        const PFN_MASK: u64 = (1 << 55) - 1;
        let page = page_bytes();
        let mapping = touched_mapping(file, len);
        let pagemap = File::open("/proc/self/pagemap").unwrap();
        let flags = File::open("/proc/kpageflags").unwrap();
        let first = mapping.as_ref().as_ptr() as usize / page;
        let mut large = 0;
        for index in 0..len.div_ceil(page) {
            let mut entry = [0u8; 8];
            pagemap
                .read_exact_at(&mut entry, ((first + index) * 8) as u64)
                .unwrap();
            let entry = u64::from_le_bytes(entry);
            assert!(entry & PRESENT != 0, "page {index} is not present");
            let pfn = entry & PFN_MASK;
            assert_ne!(pfn, 0, "page {index}: its frame is hidden (not root?)");
            let mut word = [0u8; 8];
            flags.read_exact_at(&mut word, pfn * 8).unwrap();
            if u64::from_le_bytes(word) & (KPF_COMPOUND_HEAD | KPF_COMPOUND_TAIL) != 0 {
                large += page.min(len - index * page);
            }
        }
        large
    }

    /// Maps `len` bytes of `file`, touches every page, and returns the kB of the mapping
    /// that /proc/self/smaps counts as mapped by 2 MiB entries (`ShmemPmdMapped`).
    fn pmd_mapped_kib(file: &File, len: usize) -> u64 {
        let mapping = touched_mapping(file, len);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let start = format!("{:x}-", mapping.as_ref().as_ptr() as usize);
        smaps
            .lines()
            .skip_while(|line| !line.starts_with(&start))
            .skip(1)
            .take_while(|line| {
                line.split_whitespace()
                    .next()
                    .is_some_and(|key| key.ends_with(':'))
            })
            .find_map(|line| line.strip_prefix("ShmemPmdMapped:"))
            .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}
