//! A directory the lab's keys are written into, opened once without following links and then
//! used only through its handle (`openat`, `unlinkat`, `mkdirat`): the directory may have been
//! handed in (`--certs DIR`), and root must not make private, remove files in, or write keys
//! into whatever a link swapped in for it, or for a node's directory in it, points at.

use std::ffi::CString;
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub struct KeyDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl KeyDir {
    /// `dir`, created if needed (in a parent that must be there: a lab's directory that a
    /// `down` removed is not made again) and made private (mode 0700); refused if it is a link.
    pub fn open(dir: &Path) -> io::Result<KeyDir> {
        if fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(linked(dir));
        }
        match fs::create_dir(dir) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(context(dir, e)),
            _ => {}
        }
        let file = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(dir)
            .map_err(|e| opening(dir, e))?;
        KeyDir::private(OwnedFd::from(file), dir.to_path_buf())
    }

    /// Its subdirectory `name` (a node name), created if needed and made private; refused if
    /// it is a link.
    pub fn child(&self, name: &str) -> io::Result<KeyDir> {
        let path = self.path.join(name);
        let c_name = c_name(name)?;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        if unsafe { libc::mkdirat(self.fd.as_raw_fd(), c_name.as_ptr(), 0o700) } != 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(context(&path, e));
            }
        }
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: as above; the descriptor returned is owned at once.
        let fd = unsafe { libc::openat(self.fd.as_raw_fd(), c_name.as_ptr(), flags) };
        if fd < 0 {
            return Err(opening(&path, io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a fresh descriptor nothing else owns.
        KeyDir::private(unsafe { OwnedFd::from_raw_fd(fd) }, path)
    }

    /// Writes the file `name` afresh with `mode`: any old one (or a link there) is removed
    /// first, so a key never keeps looser permissions from an earlier life.
    pub fn write(&self, name: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
        let path = self.path.join(name);
        let c_name = c_name(name)?;
        // SAFETY: a valid directory descriptor and a NUL-terminated name.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c_name.as_ptr(), 0) } != 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::NotFound {
                return Err(context(&path, e));
            }
        }
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: as above; the descriptor returned is owned at once.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                c_name.as_ptr(),
                flags,
                mode as libc::c_uint,
            )
        };
        if fd < 0 {
            return Err(context(&path, io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a fresh descriptor nothing else owns.
        let mut file = unsafe { File::from_raw_fd(fd) };
        file.write_all(bytes).map_err(|e| context(&path, e))
    }

    /// Made private through the handle, so the mode goes to this directory and nothing else.
    fn private(fd: OwnedFd, path: PathBuf) -> io::Result<KeyDir> {
        let file = File::from(fd);
        file.set_permissions(fs::Permissions::from_mode(0o700))
            .map_err(|e| context(&path, e))?;
        Ok(KeyDir {
            fd: OwnedFd::from(file),
            path,
        })
    }
}

fn c_name(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in a name"))
}

fn context(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// An error opening a directory without following a link: a link there is named as one.
fn opening(path: &Path, e: io::Error) -> io::Error {
    match e.raw_os_error() {
        Some(libc::ELOOP | libc::ENOTDIR) => linked(path),
        _ => context(path, e),
    }
}

fn linked(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is a symbolic link (or not a directory): give the directory itself for the lab's keys",
            path.display()
        ),
    )
}
