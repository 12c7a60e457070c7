//! Reading a file another process appends lines to, as it grows: each look reads only what was
//! appended since the last and hands back the lines completed since then, so a long run costs
//! no more per look than a short one. A line still being written waits for its newline.

use crate::regular_file::Beneath;
use std::io::{Read, Seek, SeekFrom};

/// Bytes read in one look at most: a file that grew by more is read over several looks.
const MAX_READ: u64 = 1 << 20;
/// A line longer than this is skipped whole (counted, not returned): no writer of ours writes
/// one, and a reader must not hold an unbounded partial line.
pub const MAX_LINE: usize = 64 * 1024;

#[derive(Debug)]
pub struct LineTail {
    path: Beneath,
    /// Bytes of the file read so far.
    read: u64,
    /// The start of a line whose newline has not arrived yet.
    partial: Vec<u8>,
    /// Whether `partial` is the rest of a line too long to keep.
    skipping: bool,
    /// Complete lines seen so far (returned or skipped).
    pub lines: usize,
    /// Whether the last look read to the file's end (or found no file).
    at_end: bool,
}

impl LineTail {
    /// The file at `path` (a `PathBuf`: its directory taken as named, the file not followed
    /// if a link; or a [`Beneath`]: no link below its base followed).
    pub fn new(path: impl Into<Beneath>) -> LineTail {
        LineTail {
            path: path.into(),
            read: 0,
            partial: Vec::new(),
            skipping: false,
            lines: 0,
            at_end: false,
        }
    }

    /// Whether the last look read all the file held then: a file nobody appends to any more
    /// is read whole once this is true.
    pub fn at_end(&self) -> bool {
        self.at_end
    }

    /// The lines completed since the last look, without their newlines (invalid UTF-8
    /// replaced), or `None` while the file does not exist (or is not a regular file).
    pub fn next_lines(&mut self) -> Option<Vec<String>> {
        self.at_end = true;
        let mut file = self.path.open().ok()?;
        let mut appended = Vec::new();
        if file.seek(SeekFrom::Start(self.read)).is_err()
            || file.take(MAX_READ).read_to_end(&mut appended).is_err()
        {
            return Some(Vec::new());
        }
        self.at_end = (appended.len() as u64) < MAX_READ;
        self.read += appended.len() as u64;
        let mut lines = Vec::new();
        for piece in appended.split_inclusive(|&b| b == b'\n') {
            let complete = piece.last() == Some(&b'\n');
            let piece = piece.strip_suffix(b"\n").unwrap_or(piece);
            if !self.skipping {
                self.partial.extend_from_slice(piece);
                if self.partial.len() > MAX_LINE {
                    self.partial.clear();
                    self.skipping = true;
                }
            }
            if complete {
                if !self.skipping {
                    lines.push(String::from_utf8_lossy(&self.partial).into_owned());
                }
                self.partial.clear();
                self.skipping = false;
                self.lines += 1;
            }
        }
        Some(lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn lines_come_once_each_when_their_newline_arrives_and_an_overlong_one_is_skipped() {
        let dir = std::env::temp_dir().join(format!("cdnlab-line-tail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log.csv");
        let mut tail = LineTail::new(path.clone());
        assert!(!tail.at_end());
        assert_eq!(tail.next_lines(), None);
        assert!(tail.at_end());
        let mut file = std::fs::File::create(&path).unwrap();
        assert_eq!(tail.next_lines(), Some(vec![]));
        file.write_all(b"index,quality\n0,1\n1,").unwrap();
        assert_eq!(
            tail.next_lines(),
            Some(vec!["index,quality".to_string(), "0,1".to_string()])
        );
        file.write_all(b"2\n").unwrap();
        assert_eq!(tail.next_lines(), Some(vec!["1,2".to_string()]));
        file.write_all(&vec![b'x'; MAX_LINE + 10]).unwrap();
        assert_eq!(tail.next_lines(), Some(vec![]));
        file.write_all(b"still the long one\n2,3\n").unwrap();
        assert_eq!(tail.next_lines(), Some(vec!["2,3".to_string()]));
        assert_eq!(tail.lines, 5);
        // A file grown by more than a look reads is at its end only once read whole.
        file.write_all(&vec![b'y'; MAX_READ as usize + 1]).unwrap();
        tail.next_lines();
        assert!(!tail.at_end());
        tail.next_lines();
        assert!(tail.at_end());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
