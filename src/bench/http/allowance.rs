//! Congestion controls added to the machine's allowed list for the benchmark's run: Linux lets
//! a namespace other than the machine's own default only to one on
//! `net.ipv4.tcp_allowed_congestion_control` (reno and the machine's default, unless an
//! administrator added more). The list as it was is written back when the run ends, and it is
//! recorded in a file before it is widened, so that a run killed before it could write it back
//! (SIGKILL) has it written back by the next run.

use std::path::{Path, PathBuf};

use crate::lab::{sys, Error, Result};

const ALLOWED: &str = "net/ipv4/tcp_allowed_congestion_control";

/// Where a run keeps the list it widened until it has written it back. /run is root's alone.
pub const RECORD: &str = "/run/cdnlab-bench-http.allowed-congestion";

/// The most names a recorded list may hold; the kernel has a handful of congestion controls.
const MAX_NAMES: usize = 32;

/// The kernel's longest congestion-control name (TCP_CA_NAME_MAX less its NUL).
const MAX_NAME_LEN: usize = 15;

/// A widened allowed list, written back (and its record removed) when dropped.
pub struct Allowance {
    before: Vec<String>,
    record: PathBuf,
}

/// Why a congestion control could not be allowed.
pub enum GrantError {
    /// The kernel's list could not be read or widened (it is read-only here, say).
    Sysctl(Error),
    /// The list as it was could not be recorded, so it is left as it is.
    Record(Error),
}

impl Allowance {
    /// `None` if `congestion` is already allowed: nothing to grant or write back. Called by
    /// the run holding the bench's lock (`own_netns::Session`), so no other run's record is
    /// replaced.
    pub fn grant(congestion: &str) -> std::result::Result<Option<Allowance>, GrantError> {
        let before = read_list(ALLOWED).map_err(GrantError::Sysctl)?;
        if before.iter().any(|allowed| allowed == congestion) {
            return Ok(None);
        }
        if before.is_empty() {
            // An empty list could not be told from a damaged record, nor written back.
            return Err(GrantError::Sysctl(Error(format!("{ALLOWED} is empty"))));
        }
        let record = PathBuf::from(RECORD);
        save(&record, &before).map_err(GrantError::Record)?;
        let widened = format!("{} {congestion}", before.join(" "));
        if let Err(e) = sys::write_sysctl(ALLOWED, &widened) {
            let _ = std::fs::remove_file(&record);
            return Err(GrantError::Sysctl(e));
        }
        tracing::info!(
            "widened {ALLOWED} from `{}` to `{widened}` until the benchmark ends (if it is \
             killed: `cdnlab down bench-http`, then the next `bench http` writes the first back)",
            before.join(" "),
        );
        Ok(Some(Allowance { before, record }))
    }
}

impl Drop for Allowance {
    fn drop(&mut self) {
        match sys::write_sysctl(ALLOWED, &self.before.join(" ")) {
            Ok(()) => {
                let _ = std::fs::remove_file(&self.record);
            }
            Err(e) => tracing::warn!(
                "restoring {ALLOWED} to `{}`: {e}; the next `bench http` tries again",
                self.before.join(" ")
            ),
        }
    }
}

/// Writes back the list a killed run recorded, if there is one: called by the run holding
/// the bench's lock (`own_netns::Session`), so the record cannot be a live run's.
pub fn restore_left_behind() -> Result<()> {
    let record = Path::new(RECORD);
    let Some(before) = load(record)? else {
        return Ok(());
    };
    sys::write_sysctl(ALLOWED, &before.join(" ")).map_err(|e| {
        Error(format!(
            "writing back the list a killed `bench http` recorded in {RECORD}: {e}"
        ))
    })?;
    std::fs::remove_file(record).map_err(|e| Error(format!("removing {RECORD}: {e}")))?;
    tracing::warn!(
        "wrote {ALLOWED} back to `{}`, as a killed `bench http` left it recorded",
        before.join(" ")
    );
    Ok(())
}

/// The congestion controls this kernel has loaded.
pub fn available() -> Vec<String> {
    read_list("net/ipv4/tcp_available_congestion_control").unwrap_or_default()
}

fn read_list(key: &str) -> Result<Vec<String>> {
    let path = format!("/proc/sys/{key}");
    std::fs::read_to_string(&path)
        .map(|text| text.split_whitespace().map(str::to_string).collect())
        .map_err(|e| Error(format!("{path}: {e}")))
}

/// Records `list` at `path`, new or replacing an old record: written whole to a new file
/// beside it, then renamed over it, so a kill leaves the old record or the new one, never a
/// part of one. Never writes through a symbolic link.
fn save(path: &Path, list: &[String]) -> Result<()> {
    crate::atomic_write::write_durably(path, list.join(" ").as_bytes(), 0o600)
        .map_err(|e| Error(format!("recording the allowed list: {e}")))
}

/// The list recorded at `path` (`None` if there is no record); an error if it is not a list
/// of congestion-control names, rather than writing anything else into the kernel's.
fn load(path: &Path) -> Result<Option<Vec<String>>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error(format!("{}: {e}", path.display()))),
    };
    let names: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    let valid_name = |name: &String| {
        name.len() <= MAX_NAME_LEN
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    };
    if names.is_empty() || names.len() > MAX_NAMES || !names.iter().all(valid_name) {
        return Err(Error(format!(
            "{}: not a list of congestion-control names (remove it, and check {ALLOWED})",
            path.display()
        )));
    }
    Ok(Some(names))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;

    /// An empty directory of the test's own, removed with the guard even when the test fails.
    fn scratch(name: &str) -> TempDir {
        let dir = TempDir::new(&format!("allowance-{name}"));
        std::fs::create_dir_all(&dir.0).unwrap();
        dir
    }

    #[test]
    fn a_recorded_list_reads_back_as_written() {
        let scratch = scratch("roundtrip");
        let dir = &scratch.0;
        let record = dir.join("record");
        assert_eq!(
            load(&record).unwrap(),
            None,
            "no record, nothing to restore"
        );
        let list = vec!["reno".to_string(), "bbr".to_string()];
        save(&record, &list).unwrap();
        assert_eq!(load(&record).unwrap(), Some(list));
        // A newer record replaces the old one whole, leaving nothing beside it.
        save(&record, &["cubic".to_string()]).unwrap();
        assert_eq!(load(&record).unwrap(), Some(vec!["cubic".to_string()]));
        let names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["record"]);
    }

    #[test]
    fn a_record_that_is_not_a_list_of_names_is_refused() {
        let scratch = scratch("refused");
        let dir = &scratch.0;
        let record = dir.join("record");
        for bad in [
            "",
            "  \n",
            "reno cubic-x",
            "reno; reboot",
            "reno ../x",
            "Reno",
            "averyveryverylongname",
        ] {
            std::fs::write(&record, bad).unwrap();
            let error = load(&record).unwrap_err().0;
            assert!(error.contains("not a list"), "{bad:?}: {error}");
        }
        let many = vec!["reno"; MAX_NAMES + 1].join(" ");
        std::fs::write(&record, many).unwrap();
        assert!(load(&record).is_err());
    }

    #[test]
    fn a_record_is_never_written_through_a_symbolic_link() {
        let scratch = scratch("symlink");
        let dir = &scratch.0;
        let target = dir.join("target");
        std::fs::write(&target, "keep").unwrap();
        let record = dir.join("record");
        // A link where the record goes, and where its new copy is first written: each is
        // replaced by the file, and what it pointed at is left alone.
        std::os::unix::fs::symlink(&target, &record).unwrap();
        std::os::unix::fs::symlink(&target, dir.join("record.new")).unwrap();
        save(&record, &["reno".to_string()]).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(!std::fs::symlink_metadata(&record).unwrap().is_symlink());
        assert_eq!(load(&record).unwrap(), Some(vec!["reno".to_string()]));
    }
}
