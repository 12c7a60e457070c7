//! The `has-client` role: an HTTP adaptive streaming client on real TCP. It fetches an HLS or
//! DASH manifest, follows every redirect itself so each hop is timed (`fetch`), plays in real
//! time with a buffer of P seconds using the sans-IO `has` types for rate adaptation, playback
//! and QoE (`player`), and leaves `summary.json` and `segments.csv` in its output directory
//! (`report`). `config` reads the node's config table; `load` turns manifests into the ladder
//! and segment list.
//!
//! A failure — manifest unreachable, a server dying mid-stream, too many redirects, an error
//! status after the retries `fetch` documents — ends the session with `failed: true`, an
//! `error` naming the URL and the cause, and the metrics gathered so far.

pub mod config;
pub mod fetch;
pub mod load;
pub mod player;
pub mod report;

#[cfg(test)]
mod tests;

pub use config::{parse_config, policy_of_url, ClientConfig, CONFIG_KEYS};
pub use fetch::{Body, FetchError, Fetched, Fetcher, MAX_ATTEMPTS, MAX_REDIRECTS};
pub use load::{load, Loaded, Stream};
pub use player::run;
pub use report::{SegmentLog, StoppedBy, Summary};

/// `has-client --config FILE [--out DIR]`: plays the configured stream, leaves `summary.json`
/// and `segments.csv` in the output directory, and fails if the session failed. A config
/// error also leaves a summary saying why, so `cdnlab run` reports the cause.
pub async fn role(start: crate::roles::Start) -> Result<(), String> {
    use crate::roles::summary::{self, ClientSummary};
    let node = start.env.node_name();
    let out = start.out_dir()?;
    let summary = match start.parse(parse_config) {
        Ok(config) => {
            let stop = async {
                let signal = start.shutdown.signal().await;
                format!("stopped by {signal} before the end")
            };
            ClientSummary::of(&node, &run(&config, &node, &out, stop).await)
        }
        Err(error) => Err(error),
    };
    summary::finish(&out, &node, summary)
}
