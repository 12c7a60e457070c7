//! The rate-adaptation interface every algorithm implements, and the factory that picks one by
//! name.
//!
//! An algorithm is a sans-IO state machine: the client tells it what happened
//! ([`Abr::on_download`]) and asks it what to fetch next ([`Abr::next_quality`]). Instants are
//! `u64` nanoseconds on the client's clock (any origin); durations and buffer levels are `f64`
//! seconds, as manifests state them.

use super::{bba::Bba, bola::Bola, mss::Mss, throughput::Throughput};

/// The names [`make_abr`] accepts, as the scenario's `abr` variable spells them.
pub const ABR_NAMES: &[&str] = &["mss", "mss-unscaled", "throughput", "bba", "bola"];

/// A bitrate ladder: the encoded bitrates of the qualities in bits per second, ascending. A
/// quality is an index into it (0 is the lowest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ladder(Vec<u64>);

impl Ladder {
    /// Checks that there is at least one quality and that the bitrates are positive and strictly
    /// ascending, since every algorithm relies on "one step up" meaning "more bits".
    pub fn new(bitrates_bps: Vec<u64>) -> Result<Ladder, String> {
        if bitrates_bps.is_empty() {
            return Err("the bitrate ladder has no qualities".into());
        }
        if bitrates_bps[0] == 0 {
            return Err("the bitrate ladder's lowest bitrate is 0 bit/s".into());
        }
        if let Some(i) = bitrates_bps.windows(2).position(|w| w[0] >= w[1]) {
            return Err(format!(
                "the bitrate ladder is not strictly ascending: quality {} is {} bit/s, quality {} is {} bit/s",
                i,
                bitrates_bps[i],
                i + 1,
                bitrates_bps[i + 1]
            ));
        }
        Ok(Ladder(bitrates_bps))
    }

    /// The bitrates in bits per second, ascending.
    pub fn bitrates_bps(&self) -> &[u64] {
        &self.0
    }

    /// The bitrate of `quality`, clamped to the top quality.
    pub fn bitrate_bps(&self, quality: usize) -> u64 {
        self.0[quality.min(self.top())]
    }

    /// The index of the highest quality.
    pub fn top(&self) -> usize {
        self.0.len() - 1
    }

    /// The highest quality whose bitrate is at most `bps`, or the lowest when none is.
    pub fn highest_at_most(&self, bps: f64) -> usize {
        self.0.iter().rposition(|&b| b as f64 <= bps).unwrap_or(0)
    }
}

/// What an algorithm may look at when it picks the next segment's quality.
#[derive(Debug, Clone, Copy)]
pub struct DecisionContext<'a> {
    /// When the decision is made.
    pub now_ns: u64,
    /// Seconds of media buffered and not yet played.
    pub buffer_s: f64,
    /// The qualities on offer.
    pub ladder: &'a Ladder,
    /// The duration of the segment about to be fetched, in seconds.
    pub segment_s: f64,
    /// The quality of the previous segment, `None` before the first.
    pub last_quality: Option<usize>,
    /// The index of the segment about to be fetched.
    pub index: usize,
}

/// One finished segment download, as the client measured it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DownloadObservation {
    /// The segment's index.
    pub index: usize,
    /// The quality fetched.
    pub quality: usize,
    /// Body bytes received.
    pub bytes: u64,
    /// When the first request for the segment was sent: redirects count as part of the
    /// download, as they did for the players the algorithms come from.
    pub start_ns: u64,
    /// When the last byte arrived.
    pub end_ns: u64,
    /// The segment's media duration in seconds.
    pub segment_s: f64,
    /// Seconds of media buffered right after the segment was added to the buffer.
    pub buffer_s: f64,
}

impl DownloadObservation {
    /// The download time in seconds; at least 1 ns so a throughput is always finite.
    pub fn download_s(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns).max(1) as f64 / 1e9
    }

    /// The download throughput in bits per second (bytes over the whole download time).
    pub fn throughput_bps(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.download_s()
    }
}

/// A rate-adaptation algorithm.
pub trait Abr {
    /// The quality (index into `ctx.ladder`) of the segment about to be requested.
    fn next_quality(&mut self, ctx: &DecisionContext) -> usize;
    /// Learns from a finished download.
    fn on_download(&mut self, observation: &DownloadObservation);
    /// The algorithm's name, as [`make_abr`] accepts it.
    fn name(&self) -> &'static str;
}

/// The algorithm `name` (one of [`ABR_NAMES`]) for a client whose buffer holds `buffer_s`
/// seconds; the buffer-based algorithms and the Smooth Streaming thresholds scale with it.
pub fn make_abr(name: &str, buffer_s: f64) -> Result<Box<dyn Abr>, String> {
    if !(buffer_s.is_finite() && buffer_s > 0.0) {
        return Err(format!(
            "the client buffer must be a positive number of seconds, not {buffer_s}"
        ));
    }
    match name {
        "mss" => Ok(Box::new(Mss::new(buffer_s))),
        "mss-unscaled" => Ok(Box::new(Mss::unscaled())),
        "throughput" => Ok(Box::new(Throughput::new())),
        "bba" => Ok(Box::new(Bba::new(buffer_s))),
        "bola" => Ok(Box::new(Bola::new(buffer_s))),
        other => Err(format!(
            "unknown rate adaptation `{other}`; valid names are {}",
            ABR_NAMES.join(", ")
        )),
    }
}
