//! Replacing a file whole: the bytes go to a new file beside it, which is then renamed over
//! it, so a reader (or a kill) sees the old file or the new one, never a part. cdnlab runs as
//! root and writes into directories a user named, so the temporary file is created fresh
//! (`O_CREAT|O_EXCL|O_NOFOLLOW`): a file or link someone placed at its name is never written
//! through, and one left by a failed write is removed.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// How many names a write tries before giving up, when earlier names are taken.
const NAMES_TRIED: usize = 8;

/// Replaces `path` with `bytes` (a new file has mode 0644). Errors name the file.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, 0o644, |_| Ok(()))
}

/// `write_atomically` for a script: the new file has mode 0755.
pub fn write_executable(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, 0o755, |_| Ok(()))
}

/// `write_atomically` for a record that must outlive a crash of the machine: the new file has
/// `mode` and reaches the disk before it replaces the old one.
pub fn write_durably(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    replace(path, bytes, mode, File::sync_all)
}

fn replace(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    finish: impl Fn(&File) -> io::Result<()>,
) -> io::Result<()> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let context =
        |e: io::Error, what: &Path| io::Error::new(e.kind(), format!("{}: {e}", what.display()));
    let numbers = std::iter::repeat_with(|| WRITES.fetch_add(1, Ordering::Relaxed));
    let (partial, mut file) = create_partial(path, mode, numbers).map_err(|e| context(e, path))?;
    let written = file
        .write_all(bytes)
        .and_then(|()| finish(&file))
        .map_err(|e| context(e, &partial))
        .and_then(|()| std::fs::rename(&partial, path).map_err(|e| context(e, path)));
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// A new temporary file beside `path`, named `.NAME.PID-N.partial` with N the first of
/// `numbers` whose name is free: the process id and the number keep two writers of one file
/// (a periodic record and the last one) apart, and a name already taken is never opened.
fn create_partial(
    path: &Path,
    mode: u32,
    numbers: impl Iterator<Item = u64>,
) -> io::Result<(PathBuf, File)> {
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?
        .to_string_lossy();
    let mut last = None;
    for n in numbers.take(NAMES_TRIED) {
        let partial = path.with_file_name(format!(".{name}.{}-{n}.partial", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&partial)
        {
            Ok(file) => return Ok((partial, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;
    use std::os::unix::fs::PermissionsExt;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_is_replaced_whole_and_nothing_is_left_beside_it() {
        let dir = TempDir::new("atomic-write");
        std::fs::create_dir_all(&dir.0).unwrap();
        let path = dir.0.join("summary.json");
        write_atomically(&path, b"old").unwrap();
        write_atomically(&path, b"new").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(entries(&dir.0), ["summary.json"]);
        write_durably(&path, b"kept", 0o600).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"kept");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // A rename that fails (a directory is in the way) leaves no temporary file.
        let blocked = dir.0.join("blocked");
        std::fs::create_dir_all(blocked.join("inside")).unwrap();
        assert!(write_atomically(&blocked, b"x").is_err());
        assert_eq!(entries(&dir.0), ["blocked", "summary.json"]);
    }

    /// A link planted at a temporary file's name is never written through: that name is
    /// skipped, and with no other name the write fails.
    #[test]
    fn a_planted_link_is_never_written_through() {
        let dir = TempDir::new("atomic-write-link");
        std::fs::create_dir_all(&dir.0).unwrap();
        let target = dir.0.join("target");
        std::fs::write(&target, b"precious").unwrap();
        let path = dir.0.join("state.json");
        let planted = dir
            .0
            .join(format!(".state.json.{}-0.partial", std::process::id()));
        std::os::unix::fs::symlink(&target, &planted).unwrap();

        let taken = create_partial(&path, 0o644, 0..1).unwrap_err();
        assert_eq!(taken.kind(), io::ErrorKind::AlreadyExists);
        let (partial, mut file) = create_partial(&path, 0o644, 0..2).unwrap();
        assert_ne!(partial, planted);
        file.write_all(b"evil").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    }
}
