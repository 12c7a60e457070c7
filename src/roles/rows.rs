//! A log a role appends a line to as things happen (`segments.csv` of a HAS client,
//! `deadlines.csv` of F-FDN viewers, `requests.csv` of ICN users, the ICN controller's
//! `controller.jsonl`): the header (or first line) when it is created, then each line straight
//! to the kernel (no user-space buffer), so a killed role leaves the log of what it did and
//! `cdnlab web` can show the lines as they come.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug)]
pub struct RowLog {
    file: File,
    path: PathBuf,
}

impl RowLog {
    /// Creates (or truncates) `dir/name` and writes `header`.
    pub fn create(dir: &Path, name: &str, header: &str) -> Result<RowLog, String> {
        let path = dir.join(name);
        let mut log = std::fs::create_dir_all(dir)
            .and_then(|()| File::create(&path))
            .map(|file| RowLog {
                file,
                path: path.clone(),
            })
            .map_err(|e| format!("creating {}: {e}", path.display()))?;
        log.append(header)?;
        Ok(log)
    }

    /// Appends `row` (without its newline) in one write.
    pub fn append(&mut self, row: &str) -> Result<(), String> {
        let mut line = String::with_capacity(row.len() + 1);
        line.push_str(row);
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .map_err(|e| format!("writing {}: {e}", self.path.display()))
    }
}
