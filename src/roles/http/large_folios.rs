//! Files whose pages are 2 MiB folios, for chunks too large for a memfd to pay: a 2 MB body
//! from a memfd's 4 KiB pages is 512 page references per `sendfile`, and was measured slower
//! than its copy; from 2 MiB folios it is one or two, and faster than the copy and than nginx
//! (BENCHMARKS.md, http). A memfd cannot have them unless the machine's shmem huge pages are
//! on; a tmpfs mounted with `huge=always` can.
//!
//! The tmpfs is the process's own and attached nowhere (`fsopen` and `fsmount` without
//! `move_mount`): no path reaches it, nobody else sees it, and it goes with the process. Its
//! files cannot be sealed as a memfd is; instead each is made unnamed (`O_TMPFILE`), written,
//! reopened read-only, and its writable descriptor closed, so no descriptor that could change
//! the pages remains. Making the mount needs `CAP_SYS_ADMIN` (roles run as root in a lab);
//! where it cannot be had (a container without it, an old kernel), callers keep their bytes
//! elsewhere.

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
    // The magic link reopens this very file, unnamed as it is.
    File::open(format!("/proc/self/fd/{}", writable.as_raw_fd()))
}

/// A tmpfs with `huge=always`, not attached anywhere: the descriptor is the only way in.
fn private_tmpfs() -> io::Result<OwnedFd> {
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt;

    use super::*;

    /// Needs `CAP_SYS_ADMIN` for the mount: as root (CI) the file is made; otherwise the
    /// caller is told the mount is unsupported, which is what it falls back on.
    #[test]
    fn files_are_unnamed_read_only_and_on_a_tmpfs_of_their_own() {
        let bytes: Vec<u8> = (0..2_000_000u32).map(|i| (i % 253) as u8).collect();
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let file = match read_only_file(&bytes) {
            Ok(file) => file,
            Err(e) if !root && e.kind() == io::ErrorKind::Unsupported => return,
            Err(e) => panic!("as root the tmpfs is made: {e}"),
        };
        let mut read = vec![0u8; bytes.len()];
        file.read_exact_at(&mut read, 0).unwrap();
        assert_eq!(read, bytes);
        assert!(file.write_at(b"x", 0).is_err(), "the file took a write");
        // SAFETY: fstatfs into a zeroed struct on an open descriptor.
        let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::fstatfs(file.as_raw_fd(), &mut stat) }, 0);
        assert_eq!(stat.f_type, libc::TMPFS_MAGIC);
        let link = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap();
        assert!(
            link.to_string_lossy().ends_with("(deleted)"),
            "the file has a name: {}",
            link.display()
        );
    }
}
