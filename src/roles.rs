//! The cdnlab role binaries a topology node may name with `role = "..."`. Each is built from
//! `bins/` and installed beside the `cdnlab` executable.

use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;

/// `ROLE --config FILE`: parses the flags, starts a two-worker tokio runtime and runs `run`
/// with the config file's path; an error is printed as `ROLE: message` with a failing exit.
pub fn main<F, Fut>(role: &'static str, run: F) -> ExitCode
where
    F: FnOnce(&'static str, PathBuf) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    init_logs();
    let mut args = std::env::args_os().skip(1);
    let config = match (args.next(), args.next(), args.next()) {
        (Some(flag), Some(path), None) if flag == "--config" => PathBuf::from(path),
        _ => {
            eprintln!("usage: {role} --config FILE (the node's config table as TOML)");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("{role}: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(role, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{role}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Sends `tracing` events of level info and above to stderr — the node's log — as plain lines,
/// without colour codes, since the log is a file. Once per process; a second call changes nothing.
pub fn init_logs() {
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .try_init();
}

/// Every role a topology may name.
pub const ROLES: &[&str] = &[
    "probe",
    "has-client",
    "ucs",
    "dcs",
    "urr",
    "drr",
    "cloud",
    "fdn",
    "fog-viewers",
    "icn-router",
    "icn-border",
    "cdn-site",
    "controller",
    "icn-load",
];

#[cfg(test)]
mod tests {
    /// The container image carries every role (scripts/build-image.sh lists them by hand).
    #[test]
    fn the_image_carries_every_role() {
        let script = include_str!("../scripts/build-image.sh");
        let line = script
            .lines()
            .find(|l| l.starts_with("binaries=("))
            .expect("build-image.sh lists its binaries");
        let listed: Vec<&str> = line
            .trim_start_matches("binaries=(")
            .trim_end_matches(')')
            .split_whitespace()
            .collect();
        for role in super::ROLES {
            assert!(listed.contains(role), "build-image.sh misses role {role}");
        }
    }
}
