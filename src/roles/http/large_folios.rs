//! Files whose pages are 2 MiB folios, for chunks too large for a memfd to pay: a 2 MB body
//! from a memfd's 4 KiB pages is 512 page references per `sendfile`, and was measured slower
//! than its copy; from 2 MiB folios it is one or two, and faster than the copy and than nginx
//! (BENCHMARKS.md, http). A memfd cannot have them unless the machine's shmem huge pages are
//! on; a tmpfs mounted with `huge=always` can.
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

/// The size of the folios `huge=always` gives: the machine's PMD size (2 MiB on x86-64).
pub(super) fn folio_bytes() -> usize {
    static FOLIO: OnceLock<usize> = OnceLock::new();
    *FOLIO.get_or_init(|| {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(2 * 1024 * 1024)
    })
}

/// The process's tmpfs, made on first use; `None` if it could not be made.
static MOUNT: OnceLock<Option<OwnedFd>> = OnceLock::new();

/// An unnamed, read-only file on the process's `huge=always` tmpfs holding `bytes`.
pub(super) fn read_only_file(bytes: &[u8]) -> io::Result<File> {
    let mount = MOUNT
        .get_or_init(|| {
            private_tmpfs()
                .inspect_err(|e| tracing::debug!("no tmpfs of huge pages ({e})"))
                .ok()
        })
        .as_ref()
        .ok_or(io::ErrorKind::Unsupported)?;
    // SAFETY: a NUL-terminated path relative to an open directory descriptor; checked.
    let fd = unsafe {
        libc::openat(
            mount.as_raw_fd(),
            c".".as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o600,
        )
    };
    let mut writable = File::from(owned(fd)?);
    writable.write_all(bytes)?;
    make_immutable(&writable)?;
    // The magic link reopens this very file, unnamed as it is.
    File::open(format!("/proc/self/fd/{}", writable.as_raw_fd()))
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

/// A tmpfs with `huge=always`, not attached anywhere: the descriptor is the only way in.
fn private_tmpfs() -> io::Result<OwnedFd> {
    // `deny` overrides every mount's `huge=`: its files would have 4 KiB pages, which a memfd
    // has already, without the seals.
    let shmem = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/shmem_enabled")?;
    if shmem.contains("[deny]") {
        return Err(io::Error::other("shmem huge pages are set to deny"));
    }
    // SAFETY: fsopen with a NUL-terminated name and a flag; the result is checked.
    let context = owned(unsafe {
        libc::syscall(libc::SYS_fsopen, c"tmpfs".as_ptr(), FSOPEN_CLOEXEC) as libc::c_int
    })?;
    for (key, value) in [(c"huge", c"always"), (c"mode", c"0700")] {
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
    owned(unsafe {
        libc::syscall(
            libc::SYS_fsmount,
            context.as_raw_fd(),
            FSMOUNT_CLOEXEC,
            MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
        ) as libc::c_int
    })
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

    /// Maps `len` bytes of `file`, touches every page, and returns the kB of the mapping
    /// that /proc/self/smaps counts as mapped by 2 MiB entries (`ShmemPmdMapped`).
    fn pmd_mapped_kib(file: &File, len: usize) -> u64 {
        let mapping = super::super::sealed::Mapping::new(file, len).unwrap();
        let bytes = mapping.as_ref();
        let touched: u64 = bytes.iter().step_by(4096).map(|&b| u64::from(b)).sum();
        std::hint::black_box(touched);
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let start = format!("{:x}-", bytes.as_ptr() as usize);
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
