//! The programs the benchmark drives, found before anything starts.

use std::path::PathBuf;
use std::process::Command;

use crate::lab::{Error, Result};

/// How to get the tools this benchmark drives.
const INSTALL_HINT: &str = "install them with `apt-get install -y nginx-light wrk` (Debian/Ubuntu)";

pub(super) struct Tools {
    pub(super) nginx: PathBuf,
    pub(super) nginx_version: String,
    pub(super) wrk: PathBuf,
    pub(super) taskset: Option<PathBuf>,
}

impl Tools {
    /// nginx and wrk (an error names the missing ones and how to install them), and taskset
    /// if there is one.
    pub(super) fn find() -> Result<Tools> {
        let nginx = find_program("nginx");
        let wrk = find_program("wrk");
        let (Some(nginx), Some(wrk)) = (nginx.clone(), wrk.clone()) else {
            let missing: Vec<&str> = [("nginx", nginx.is_none()), ("wrk", wrk.is_none())]
                .iter()
                .filter(|(_, missing)| *missing)
                .map(|(name, _)| *name)
                .collect();
            return Err(Error(format!(
                "bench http compares with nginx under load from wrk, and {} not found: {INSTALL_HINT}",
                match missing.as_slice() {
                    [one] => format!("{one} was"),
                    _ => format!("{} were", missing.join(" and ")),
                }
            )));
        };
        let nginx_version = nginx_version(&nginx);
        Ok(Tools {
            nginx,
            nginx_version,
            wrk,
            taskset: find_program("taskset"),
        })
    }
}

/// `nginx/1.22.1`, from `nginx -v` (which prints `nginx version: nginx/1.22.1` on stderr).
fn nginx_version(nginx: &PathBuf) -> String {
    Command::new(nginx)
        .arg("-v")
        .output()
        .ok()
        .and_then(|out| {
            String::from_utf8_lossy(&out.stderr)
                .trim()
                .strip_prefix("nginx version: ")
                .map(str::to_string)
        })
        .unwrap_or_else(|| "nginx".to_string())
}

/// `program` on PATH, or in /usr/sbin (where Debian puts nginx, off a user's PATH).
pub(in crate::bench) fn find_program(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/bin")])
        .map(|dir| dir.join(program))
        .find(|path| path.is_file())
}
