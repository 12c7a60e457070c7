//! `cdnlab-shaper --config FILE`: the userspace link backend's daemon (see `netem::daemon`).
//! Binds every queue of the file, creates the control socket, and serves until SIGTERM/SIGINT.

use netem::daemon::{Daemon, DaemonConfig, StopSignals};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: cdnlab-shaper --config FILE | --help | --version";

/// What the command line asks for.
enum Asked {
    Serve(PathBuf),
    Help,
    Version,
}

fn command_line() -> Result<Asked, String> {
    let mut args = std::env::args_os().skip(1);
    let mut path = None;
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--config") => {
                path = Some(args.next().ok_or("--config needs a FILE")?.into());
            }
            Some(text) if text.starts_with("--config=") => {
                path = Some(text["--config=".len()..].into())
            }
            Some("-h" | "--help") => return Ok(Asked::Help),
            Some("-V" | "--version") => return Ok(Asked::Version),
            _ => return Err(format!("unexpected argument `{}`", arg.to_string_lossy())),
        }
    }
    path.map(Asked::Serve)
        .ok_or_else(|| "--config FILE is required".to_string())
}

fn main() -> ExitCode {
    // First, before any thread exists, so that no thread takes these signals' default action.
    let signals = match StopSignals::block() {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("cdnlab-shaper: cannot block SIGTERM/SIGINT: {e}");
            return ExitCode::FAILURE;
        }
    };
    netem::logs::init();
    let path = match command_line() {
        Ok(Asked::Serve(path)) => path,
        Ok(Asked::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Asked::Version) => {
            println!("cdnlab-shaper {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("cdnlab-shaper: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let config = match DaemonConfig::from_file(&path) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("cdnlab-shaper: {e}");
            return ExitCode::from(2);
        }
    };
    let mut daemon = match Daemon::start(config) {
        Ok(daemon) => daemon,
        Err(e) => {
            eprintln!("cdnlab-shaper: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = daemon.stop_on_signals(signals) {
        eprintln!("cdnlab-shaper: {e}");
        return ExitCode::FAILURE;
    }
    tracing::info!("{}", daemon.describe());
    match daemon.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cdnlab-shaper: {e}");
            ExitCode::FAILURE
        }
    }
}
