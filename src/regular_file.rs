//! Opening a file a run wrote, when the run's directory may come from anyone (`cdnlab web
//! --results DIR`, `cdnlab sweep --replot DIR`): only a regular file is opened. A symlink as the last component is not
//! followed (it could point at any file root can read, which the view would then publish),
//! and a FIFO or device is not waited on (opening one can block for ever).

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// `path` opened for reading, if it is a regular file.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

/// The text of `path`, a regular file (see [`open_regular`]) of at most `max` bytes.
pub fn read_regular(path: &Path, max: u64) -> io::Result<String> {
    let mut text = String::new();
    open_regular(path)?
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
    use super::{open_regular, read_regular};
    use crate::testing::TempDir;

    #[test]
    fn only_a_regular_file_opens() {
        let dir = TempDir::new("regular");
        std::fs::create_dir_all(&dir.0).unwrap();
        let file = dir.0.join("summary.json");
        std::fs::write(&file, "{}").unwrap();
        assert!(open_regular(&file).is_ok());
        let link = dir.0.join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(open_regular(&link).is_err(), "a symlink is not followed");
        let fifo = dir.0.join("fifo.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        assert!(
            open_regular(&fifo).is_err(),
            "a FIFO is refused, not waited on"
        );
        assert!(open_regular(&dir.0).is_err(), "a directory is refused");
        assert_eq!(read_regular(&file, 2).unwrap(), "{}");
        let refused = read_regular(&file, 1).unwrap_err();
        assert!(
            refused.to_string().contains("larger than 1 bytes"),
            "{refused}"
        );
    }
}
