//! Exclusive `flock` locks on files: a lab's state lock, and the lock a program holds while it
//! owns a lab's namespaces without lab state (`bench http`). The kernel releases a lock however
//! its holder ends, so a lock found free means nobody alive holds it.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use super::sys::{Error, Result};

/// Held until dropped.
pub struct FileLock {
    _file: File,
}

impl FileLock {
    /// Takes the exclusive lock on `path`, waiting while another process holds it.
    pub fn wait_for(path: &Path) -> Result<FileLock> {
        let file = open(path)?;
        lock(&file, libc::LOCK_EX).map_err(|e| locking_failed(path, e))?;
        Ok(FileLock { _file: file })
    }

    /// Takes the exclusive lock on the lock file `path` if it exists, waiting while another
    /// process holds it; `None` if there is no such file, or if it was removed while this
    /// waited (its lab taken down): a lock on a removed file guards nothing.
    pub fn wait_for_existing(path: &Path) -> Result<Option<FileLock>> {
        let file = match open_options(false).open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error(format!("{}: {e}", path.display()))),
        };
        lock(&file, libc::LOCK_EX).map_err(|e| locking_failed(path, e))?;
        let linked = file
            .metadata()
            .map_err(|e| locking_failed(path, e))?
            .nlink();
        Ok((linked > 0).then_some(FileLock { _file: file }))
    }

    /// Takes the exclusive lock on `path`, or `None` at once if another process holds it.
    pub fn try_take(path: &Path) -> Result<Option<FileLock>> {
        FileLock::try_take_open(path, open(path)?)
    }

    /// [`FileLock::try_take`] of a lock file only its owners create: with no file there, no
    /// owner has run (since /run was last emptied), and nothing is created.
    pub fn try_take_existing(path: &Path) -> Result<Existing> {
        let file = match open_options(false).open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Existing::NoFile),
            Err(e) => return Err(Error(format!("{}: {e}", path.display()))),
        };
        Ok(match FileLock::try_take_open(path, file)? {
            Some(lock) => Existing::Taken(lock),
            None => Existing::Held,
        })
    }

    fn try_take_open(path: &Path, file: File) -> Result<Option<FileLock>> {
        match lock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => Ok(Some(FileLock { _file: file })),
            Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(None),
            Err(e) => Err(locking_failed(path, e)),
        }
    }

    /// Takes the exclusive lock on `path`, waiting up to `within` while another process holds
    /// it (polling, so a holder that never lets go costs only the wait); `None` if it still
    /// does then.
    pub fn take_within(path: &Path, within: Duration) -> Result<Option<FileLock>> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(lock) = FileLock::try_take(path)? {
                return Ok(Some(lock));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(POLL);
        }
    }
}

/// How often [`FileLock::take_within`] asks again.
const POLL: Duration = Duration::from_millis(20);

/// What [`FileLock::try_take_existing`] found.
pub enum Existing {
    Taken(FileLock),
    /// Another process holds the lock.
    Held,
    NoFile,
}

/// Opens (creating, mode 0600) the lock file `path`, never through a symbolic link: /run is
/// root's, but a lock file is opened for writing.
fn open(path: &Path) -> Result<File> {
    open_options(true)
        .open(path)
        .map_err(|e| Error(format!("{}: {e}", path.display())))
}

fn open_options(create: bool) -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    options
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW);
    options
}

fn lock(file: &File, operation: i32) -> io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor the caller owns.
        if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn locking_failed(path: &Path, e: io::Error) -> Error {
    Error(format!("locking {}: {e}", path.display()))
}

/// The process holding a `flock` on `path`, if any, read from /proc/locks: looking does not
/// take the lock, so it never makes its holder's next attempt fail. `Ok(None)` if no file is
/// there; an error if /proc/locks cannot be read, so a caller can tell "free" from "unknown".
/// The file is found by the device and inode `stat` gives, which are the kernel's own on the
/// tmpfs /run is (not on every file system: btrfs subvolumes report other device numbers).
pub fn holder(path: &Path) -> io::Result<Option<i32>> {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(None);
    };
    let locks = std::fs::read_to_string("/proc/locks")?;
    Ok(holder_in(&locks, meta.dev(), meta.ino()))
}

/// The pid of the `FLOCK` in `locks` (/proc/locks' text) on the file `dev`:`ino`.
fn holder_in(locks: &str, dev: u64, ino: u64) -> Option<i32> {
    // The file as /proc/locks names it: MAJOR:MINOR:INODE, the device numbers in hex.
    let file = format!("{:02x}:{:02x}:{ino}", libc::major(dev), libc::minor(dev));
    locks.lines().find_map(|line| {
        // "1: FLOCK  ADVISORY  WRITE 1234 00:19:5678 0 EOF"; a waiter's line has "->" after "1:".
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, "FLOCK", _, _, pid, at, ..] if *at == file => pid.parse().ok(),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;

    #[test]
    fn the_holder_is_read_off_the_line_for_the_file() {
        let dev = libc::makedev(0, 0x19);
        // Waiters ("->", nested or not), other kinds of lock and other files come first, so
        // a parser that took any of them would answer wrongly.
        let locks = "1: -> FLOCK  ADVISORY  WRITE 999 00:19:5678 0 EOF\n\
                     1:  -> FLOCK  ADVISORY  WRITE 998 00:19:5678 0 EOF\n\
                     2: POSIX  ADVISORY  WRITE 77 00:19:5678 0 EOF\n\
                     3: OFDLCK ADVISORY  READ -1 00:19:5678 0 EOF\n\
                     4: FLOCK  ADVISORY  WRITE 66 00:1a:5678 0 EOF\n\
                     5: FLOCK  ADVISORY  WRITE 1234 00:19:5678 0 EOF\n\
                     6: FLOCK  ADVISORY  WRITE 55 00:19:42 0 EOF\n\
                     7: FLOCK  ADVISORY  WRITE 44 103:1a3:42 0 EOF\n";
        assert_eq!(holder_in(locks, dev, 5678), Some(1234));
        assert_eq!(holder_in(locks, dev, 42), Some(55));
        assert_eq!(holder_in(locks, dev, 7), None);
        assert_eq!(holder_in(locks, libc::makedev(0, 0x1a), 5678), Some(66));
        assert_eq!(holder_in(locks, libc::makedev(0x103, 0x1a3), 42), Some(44));
        assert_eq!(holder_in(locks, libc::makedev(0, 0x1b), 5678), None);
    }

    #[test]
    fn a_held_lock_is_refused_without_waiting_and_names_its_holder() {
        let dir = TempDir::new("file-lock");
        std::fs::create_dir_all(&dir.0).unwrap();
        let path = dir.0.join("test.lock");
        let held = FileLock::try_take(&path).unwrap();
        assert!(held.is_some());
        assert_eq!(holder(&path).unwrap(), Some(std::process::id() as i32));
        // A second descriptor of the same process conflicts with the first, as another's would.
        assert!(FileLock::try_take(&path).unwrap().is_none());
        drop(held);
        assert_eq!(holder(&path).unwrap(), None);
        assert!(FileLock::wait_for(&path).is_ok());
    }

    #[test]
    fn a_lock_file_its_owners_create_is_taken_only_if_there() {
        let dir = TempDir::new("file-lock-existing");
        std::fs::create_dir_all(&dir.0).unwrap();
        let path = dir.0.join("test.lock");
        assert!(matches!(
            FileLock::try_take_existing(&path).unwrap(),
            Existing::NoFile
        ));
        assert!(!path.exists(), "created a lock file");
        let held = FileLock::try_take(&path).unwrap();
        assert!(matches!(
            FileLock::try_take_existing(&path).unwrap(),
            Existing::Held
        ));
        drop(held);
        assert!(matches!(
            FileLock::try_take_existing(&path).unwrap(),
            Existing::Taken(_)
        ));
    }

    #[test]
    fn a_bounded_wait_takes_a_lock_released_in_time_and_gives_up_on_one_that_is_not() {
        let dir = TempDir::new("file-lock-wait");
        std::fs::create_dir_all(&dir.0).unwrap();
        let path = dir.0.join("test.lock");
        let held = FileLock::try_take(&path).unwrap().unwrap();
        let started = Instant::now();
        assert!(FileLock::take_within(&path, Duration::from_millis(200))
            .unwrap()
            .is_none());
        assert!(started.elapsed() >= Duration::from_millis(200));
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        let taken = FileLock::take_within(&path, Duration::from_secs(10)).unwrap();
        assert!(
            taken.is_some(),
            "the lock released after 300 ms was not taken"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        releaser.join().unwrap();
    }

    #[test]
    fn a_symbolic_link_is_not_opened() {
        let dir = TempDir::new("file-lock-link");
        std::fs::create_dir_all(&dir.0).unwrap();
        let target = dir.0.join("target");
        let link = dir.0.join("link.lock");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(FileLock::wait_for(&link).is_err());
        assert!(!target.exists());
    }
}
