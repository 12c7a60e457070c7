//! Opening a file a run wrote, when the run's directory may come from anyone (`cdnlab web
//! --results DIR`, `cdnlab sweep --replot DIR`): only a regular file is opened, reached through
//! no symlink below the directory the user named (a link could point at any file root can
//! read, which the view would then publish), and a FIFO or device is not waited on (opening
//! one can block for ever). Each component is opened relative to the directory before it, so
//! a link swapped in after a check is not followed either.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// The most bytes read of one of a run's or a sweep's own files (`summary.json`,
/// `topology.json`, `links.json`, a node's JSON), read back from a directory anyone may hand in.
pub const MAX_RUN_FILE: u64 = 64 << 20;

/// A file below a directory taken as named: opened through no symlink below it.
#[derive(Debug, Clone, PartialEq)]
pub struct Beneath {
    pub base: PathBuf,
    pub relative: PathBuf,
}

impl Beneath {
    pub fn new(base: impl Into<PathBuf>, relative: impl Into<PathBuf>) -> Beneath {
        Beneath {
            base: base.into(),
            relative: relative.into(),
        }
    }

    /// The file opened for reading, if it is a regular file ([`open_regular_beneath`]).
    pub fn open(&self) -> io::Result<File> {
        open_regular_beneath(&self.base, &self.relative)
    }

    /// The file's text, if it is a regular file of at most `max` bytes.
    pub fn read(&self, max: u64) -> io::Result<String> {
        read_regular_beneath(&self.base, &self.relative, max)
    }

    /// The path it names, for messages.
    pub fn path(&self) -> PathBuf {
        self.base.join(&self.relative)
    }

    pub fn join(&self, name: impl AsRef<Path>) -> Beneath {
        Beneath::new(&self.base, self.relative.join(name))
    }
}

/// A path's file beneath its directory, taken as named.
impl From<PathBuf> for Beneath {
    fn from(path: PathBuf) -> Beneath {
        match split(&path) {
            Ok((dir, name)) => Beneath::new(dir, name),
            // Names no file: opening it fails, saying so.
            Err(_) => Beneath::new(path, ""),
        }
    }
}

/// `path`'s directory (`.` for a bare name) and last component.
fn split(path: &Path) -> io::Result<(&Path, &std::ffi::OsStr)> {
    let name = path.file_name().ok_or_else(|| invalid("names no file"))?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
    Ok((dir.unwrap_or(Path::new(".")), name))
}

/// `relative` beneath `base`, opened for reading if it is a regular file reached through no
/// symlink: `base` is followed as named (the user's choice), every component of `relative`
/// is not, each opened in the directory before it.
fn open_regular_beneath(base: &Path, relative: &Path) -> io::Result<File> {
    // Directories are opened only to look up in (`O_PATH`: no read permission needed).
    let mut at = open_at(None, base.as_os_str(), libc::O_PATH | libc::O_DIRECTORY)?;
    let mut parts = relative.components().peekable();
    if parts.peek().is_none() {
        return Err(invalid("names no file"));
    }
    while let Some(part) = parts.next() {
        let Component::Normal(name) = part else {
            return Err(invalid("a path below a run's directory names only entries"));
        };
        let how = match parts.peek() {
            Some(_) => libc::O_PATH | libc::O_DIRECTORY,
            None => libc::O_RDONLY | libc::O_NONBLOCK,
        };
        at = open_at(Some(&at), name, libc::O_NOFOLLOW | how)?;
    }
    let file = File::from(at);
    if !file.metadata()?.is_file() {
        return Err(invalid("not a regular file"));
    }
    Ok(file)
}

/// `openat(2)` of `name` in `dir` (the working directory when None), close-on-exec.
fn open_at(dir: Option<&OwnedFd>, name: &std::ffi::OsStr, flags: i32) -> io::Result<OwnedFd> {
    let name = CString::new(name.as_bytes()).map_err(|_| invalid("a NUL in a path"))?;
    let dir = dir.map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd);
    // SAFETY: `name` is a NUL-terminated string that outlives the call, `dir` an open
    // descriptor or AT_FDCWD; a descriptor returned is owned by nothing else.
    let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, why.to_string())
}

/// The text of `path`, a regular file (see [`open_regular_beneath`]) of at most `max` bytes.
pub fn read_regular(path: &Path, max: u64) -> io::Result<String> {
    let (dir, name) = split(path)?;
    read_regular_beneath(dir, Path::new(name), max)
}

/// The text of `relative` beneath `base`, a regular file (see [`open_regular_beneath`]) of at
/// most `max` bytes.
fn read_regular_beneath(base: &Path, relative: &Path, max: u64) -> io::Result<String> {
    let mut text = String::new();
    open_regular_beneath(base, relative)?
        .take(max + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {max} bytes"),
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::{read_regular, Beneath};
    use crate::testing::TempDir;
    use std::os::unix::fs::symlink;

    #[test]
    fn only_a_regular_file_opens() {
        let dir = TempDir::new("regular");
        std::fs::create_dir_all(&dir.0).unwrap();
        let file = dir.0.join("summary.json");
        std::fs::write(&file, "{}").unwrap();
        let open = |path: &std::path::Path| Beneath::from(path.to_path_buf()).open();
        assert!(open(&file).is_ok());
        let link = dir.0.join("link.json");
        symlink(&file, &link).unwrap();
        assert!(open(&link).is_err(), "a symlink is not followed");
        let fifo = dir.0.join("fifo.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        assert!(open(&fifo).is_err(), "a FIFO is refused, not waited on");
        assert!(open(&dir.0).is_err(), "a directory is refused");
        assert_eq!(read_regular(&file, 2).unwrap(), "{}");
        let refused = read_regular(&file, 1).unwrap_err();
        assert!(
            refused.to_string().contains("larger than 1 bytes"),
            "{refused}"
        );
    }

    /// Below its base a file is reached through no link, a directory's either; the base is
    /// taken as named, a link or not.
    #[test]
    fn no_link_below_the_base_is_followed() {
        let dir = TempDir::new("regular-beneath");
        let node = dir.0.join("run/nodes/u");
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(node.join("summary.json"), "{}").unwrap();
        let run = dir.0.join("run");
        let summary = Beneath::new(&run, "nodes/u/summary.json");
        assert_eq!(summary.read(10).unwrap(), "{}");
        std::fs::create_dir_all(run.join("other")).unwrap();
        std::fs::write(run.join("other/x.json"), "{}").unwrap();
        for bad in ["nodes/../other/x.json", "./other/x.json", "/etc/hostname"] {
            let error = Beneath::new(&run, bad).open().unwrap_err();
            assert!(
                error.to_string().contains("names only entries"),
                "{bad}: {error}"
            );
        }
        symlink(&run, dir.0.join("named")).unwrap();
        let through_base = Beneath::new(dir.0.join("named"), "nodes/u/summary.json");
        assert_eq!(through_base.read(10).unwrap(), "{}", "the base is followed");
        std::fs::rename(&node, dir.0.join("elsewhere")).unwrap();
        symlink(dir.0.join("elsewhere"), &node).unwrap();
        assert!(
            summary.open().is_err(),
            "a linked directory is not followed"
        );
        assert!(Beneath::new(&run, "").open().is_err());
    }
}
