//! The sans-IO core of the HTTP adaptive streaming client: rate adaptation (Microsoft Smooth
//! Streaming's heuristic as the HAS-over-interconnected-CDNs paper used it, a dash.js-style
//! throughput rule, BBA-0 and BOLA-BASIC), the player's buffer and its QoE metrics, the
//! per-segment log, and (for the tests) a simulator that plays a session over a throughput trace.
//!
//! The `has-client` binary does the I/O: it fetches, times the hops and feeds these types. A
//! session goes: [`make_abr`] and [`Playback::new`]; per segment, wait until
//! [`Playback::may_request`], ask [`Abr::next_quality`], download, then
//! [`Playback::segment_arrived`] and [`Abr::on_download`]; at the end
//! [`Playback::end_of_stream`] and [`QoeMetrics::from_playback`].

pub mod abr;
pub mod bba;
pub mod bola;
pub mod metrics;
pub mod mss;
mod mss_window;
pub mod playback;
pub mod segment_log;
#[cfg(test)]
mod sim;
pub mod throughput;

#[cfg(test)]
mod tests;

pub use abr::{make_abr, Abr, DecisionContext, DownloadObservation, Ladder, ABR_NAMES};
pub use metrics::QoeMetrics;
pub use playback::{Playback, PlaybackConfig, DEFAULT_STARTUP_SEGMENTS};
pub use segment_log::{Hop, RedirectSummary, SegmentRecord, CSV_HEADER};
