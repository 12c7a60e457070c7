//! The F-FDN roles on real processes: `cloud`, `fdn` and `fog-viewers` (papers/003). The
//! algorithms are in `crate::fog`; this is their I/O: HTTP with hyper and reqwest, the control
//! plane for registration, metadata and heartbeats.

pub mod cloud;
pub mod config;
pub mod fdn;
pub mod messages;
pub mod viewers;

use crate::cdn::Payload;
use crate::cdn_roles::config::read_table;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// The bytes of segment `index` of `video`: the same wherever they are served from.
pub fn segment_payload(video: usize, index: usize) -> Payload {
    Payload::numbered(((video as u64) << 32) ^ index as u64)
}

/// `ROLE --config FILE`: what `bins/{cloud,fdn,fog-viewers}.rs` run.
pub fn main(role: &'static str) -> ExitCode {
    crate::roles::main(role, run)
}

async fn run(role: &'static str, path: PathBuf) -> Result<(), String> {
    let table = read_table(&path)?;
    let in_file = |e: String| format!("{}: {e}", path.display());
    let node = std::env::var("CDNLAB_NODE").ok();
    let shutdown = crate::cdn_roles::shutdown_signal()
        .await
        .map_err(|e| format!("installing signal handlers: {e}"))?;
    let any = |port| SocketAddr::from(([0, 0, 0, 0], port));
    match role {
        "cloud" => {
            let config = config::cloud(&table).map_err(in_file)?;
            let identity = crate::cdn_roles::run::load_identity(node.as_deref())?;
            let (http, control) = (any(config.port), any(config.control_port));
            cloud::start(config, identity, http, control)
                .await?
                .run_until(shutdown)
                .await
        }
        "fdn" => {
            let config = config::fdn(&table).map_err(in_file)?;
            let identity = crate::cdn_roles::run::load_identity(node.as_deref())?;
            let (http, control) = (any(config.port), any(config.control_port));
            let starting = fdn::start(config, identity, http, control);
            tokio::pin!(shutdown);
            let running = tokio::select! {
                running = starting => running?,
                () = &mut shutdown => return Ok(()),
            };
            running.run_until(shutdown).await
        }
        "fog-viewers" => {
            let config = config::viewers(&table).map_err(in_file)?;
            let out = std::env::var_os("CDNLAB_OUT_DIR")
                .map(PathBuf::from)
                .ok_or("set $CDNLAB_OUT_DIR for summary.json")?;
            let node = crate::probe::node_name();
            let summary = tokio::select! {
                summary = viewers::run(config, &node, &out) => summary,
                () = shutdown => Err("stopped before the end".to_string()),
            };
            crate::run::summary::finish_client(&out, &node, summary)
        }
        other => Err(format!("unknown role {other:?}")),
    }
}
