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

pub use config::{parse_config, policy_of_url, read_config, ClientConfig, CONFIG_KEYS};
pub use fetch::{Body, FetchError, Fetched, Fetcher, MAX_ATTEMPTS, MAX_REDIRECTS};
pub use load::{load, Loaded, Stream};
pub use player::run;
pub use report::{SegmentLog, StoppedBy, Summary};
