//! The benchmark's directory of configs, media and logs, readable by nginx's unprivileged worker.

use std::path::{Path, PathBuf};

use crate::lab::{Error, Result};

/// The benchmark's files (configs, media, logs), removed when dropped.
pub(in crate::bench) struct WorkDir {
    pub(in crate::bench) path: PathBuf,
}

impl WorkDir {
    /// `cdnlab-bench-BENCH-PID` in the temporary directory.
    pub(in crate::bench) fn create(bench: &str) -> Result<WorkDir> {
        let path =
            std::env::temp_dir().join(format!("cdnlab-bench-{bench}-{}", std::process::id()));
        // A leftover of a crashed run with the same pid holds nothing we need.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)
            .map_err(|e| Error(format!("creating {}: {e}", path.display())))?;
        // nginx's worker drops root to `nobody`: it must be able to read the media below.
        set_mode(&path, 0o755)?;
        Ok(WorkDir { path })
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

pub(super) fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error(format!("chmod {}: {e}", path.display())))
}

pub(super) fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error(format!("writing {}: {e}", path.display())))
}
