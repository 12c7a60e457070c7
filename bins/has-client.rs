//! `has-client --config FILE`: a topology node's HTTP adaptive streaming client. Plays the
//! configured stream, writes `summary.json` and `segments.csv` to `--out DIR` or
//! `$CDNLAB_OUT_DIR`, prints the summary as one JSON line, and exits 1 if the session failed.

use std::path::PathBuf;
use std::process::ExitCode;

use cdnlab::has_client::{self, ClientConfig};
use cdnlab::probe::node_name;
use clap::Parser;
use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};

#[derive(Parser)]
#[command(
    name = "has-client",
    about = "HTTP adaptive streaming client: plays an HLS or DASH stream and reports its QoE"
)]
struct Cli {
    /// The node's config table as TOML (keys: url, abr, buffer, startup_segments, segments,
    /// timeout, policy, http2, max_duration).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// Where summary.json and segments.csv go (default: $CDNLAB_OUT_DIR).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Resolves on SIGTERM or SIGINT with a reason for the summary; never if they cannot be caught.
async fn stop_signal() -> String {
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => "stopped by SIGTERM before the end".to_string(),
        _ = int.recv() => "stopped by SIGINT before the end".to_string(),
    }
}

fn play(config: &ClientConfig, node: &str, out: &std::path::Path) -> Result<bool, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let summary = runtime.block_on(has_client::run(config, node, out, stop_signal()));
    cdnlab::run::summary::write_client_summary(out, &summary).map_err(|e| e.to_string())?;
    let line = serde_json::to_string(&summary).map_err(|e| e.to_string())?;
    println!("{line}");
    if let Some(error) = &summary.error {
        eprintln!("has-client: {error}");
    }
    Ok(!summary.failed)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let node = node_name();
    let Some(out) = cli
        .out
        .or_else(|| std::env::var_os("CDNLAB_OUT_DIR").map(PathBuf::from))
    else {
        eprintln!("has-client: give --out DIR or set $CDNLAB_OUT_DIR for summary.json");
        return ExitCode::FAILURE;
    };
    let result = has_client::read_config(&cli.config).and_then(|config| play(&config, &node, &out));
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("has-client: {error}");
            // A summary that says why, so `cdnlab run` reports the cause rather than a log tail.
            let failure = json!({ "node": node, "failed": true, "error": error });
            if let Err(e) = cdnlab::run::summary::write_client_summary(&out, &failure) {
                eprintln!("has-client: {e}");
            }
            ExitCode::FAILURE
        }
    }
}
