//! The F-FDN roles on real processes: `cloud`, `fdn` and `fog-viewers` (papers/003). The
//! algorithms are in `crate::fog`; this is their I/O: HTTP with hyper and reqwest, the control
//! plane for registration, metadata and heartbeats.

pub mod cloud;
pub mod config;
pub mod fdn;
pub mod messages;
pub mod viewers;

use crate::cdn::Payload;
use crate::roles::control::load_identity;
use crate::roles::http::any_address;
use crate::roles::http::serve_until_stopped;
use crate::roles::summary::{self, ClientSummary};
use crate::roles::Start;

/// The bytes of segment `index` of `video`: the same wherever they are served from.
pub fn segment_payload(video: usize, index: usize) -> Payload {
    Payload::numbered(((video as u64) << 32) ^ index as u64)
}

/// `cloud --config FILE`: serves until stopped.
pub async fn cloud(start: Start) -> Result<(), String> {
    let config = start.parse(config::cloud)?;
    let identity = load_identity(&start.env)?;
    let (http, control) = (any_address(config.port), any_address(config.control_port));
    serve_until_stopped(
        start.shutdown,
        cloud::start(config, identity, http, control),
    )
    .await
}

/// `fdn --config FILE`: registers with the cloud, then serves until stopped.
pub async fn fdn(start: Start) -> Result<(), String> {
    let config = start.parse(config::fdn)?;
    let identity = load_identity(&start.env)?;
    let (http, control) = (any_address(config.port), any_address(config.control_port));
    serve_until_stopped(start.shutdown, fdn::start(config, identity, http, control)).await
}

/// `fog-viewers --config FILE [--out DIR]`: plays the viewers' sessions, writes the summary.
pub async fn viewers(start: Start) -> Result<(), String> {
    let config = start.parse(config::viewers)?;
    let out = start.out_dir()?;
    let node = start.env.node_name();
    let result = tokio::select! {
        result = viewers::run(config, &node, &out) => result,
        signal = start.shutdown.signal() => Err(format!("stopped by {signal} before the end")),
    };
    let summary = result.and_then(|value| ClientSummary::of(&node, &value));
    summary::finish(&out, &node, summary)
}
