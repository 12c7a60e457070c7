//! Throughput-based rate adaptation in the style of dash.js's `ThroughputRule` with its
//! `ThroughputHistory` EWMA estimator.
//!
//! Each download's throughput (bytes × 8 over the whole download time, redirects included) feeds
//! two exponentially weighted moving averages whose weights are the download times, with
//! half-lives of 3 s (fast) and 8 s (slow); each is divided by `1 − 0.5^(total weight /
//! half-life)` to remove the bias of starting from zero, as dash.js does. The estimate is the
//! smaller of the two, so a drop is followed quickly and a rise slowly. The next quality is the
//! highest whose bitrate is at most 0.9 × the estimate (dash.js's bandwidth safety factor); the
//! lowest before any download.
//!
//! The EWMA was chosen over dash.js's older 4-sample sliding window because it weighs long
//! downloads more than short ones, which is what the current dash.js does.

use super::abr::{Abr, DecisionContext, DownloadObservation};

/// Half-lives of the fast and slow averages, in seconds of download time.
const FAST_HALF_LIFE_S: f64 = 3.0;
const SLOW_HALF_LIFE_S: f64 = 8.0;
/// The fraction of the estimate a quality's bitrate may use.
const SAFETY_FACTOR: f64 = 0.9;

/// An EWMA weighted by download time, with dash.js's start-up bias correction.
#[derive(Debug, Clone)]
struct Ewma {
    half_life_s: f64,
    estimate: f64,
    total_weight: f64,
}

impl Ewma {
    fn new(half_life_s: f64) -> Ewma {
        Ewma {
            half_life_s,
            estimate: 0.0,
            total_weight: 0.0,
        }
    }

    fn add(&mut self, value: f64, weight: f64) {
        let alpha = 0.5f64.powf(weight / self.half_life_s);
        self.estimate = (1.0 - alpha) * value + alpha * self.estimate;
        self.total_weight += weight;
    }

    /// The bias-corrected average, `None` before any sample.
    fn value(&self) -> Option<f64> {
        let zero_factor = 1.0 - 0.5f64.powf(self.total_weight / self.half_life_s);
        (zero_factor > 0.0).then(|| self.estimate / zero_factor)
    }
}

/// The throughput rule (see the module documentation).
#[derive(Debug, Clone)]
pub struct Throughput {
    fast: Ewma,
    slow: Ewma,
}

impl Default for Throughput {
    fn default() -> Self {
        Throughput::new()
    }
}

impl Throughput {
    pub fn new() -> Throughput {
        Throughput {
            fast: Ewma::new(FAST_HALF_LIFE_S),
            slow: Ewma::new(SLOW_HALF_LIFE_S),
        }
    }

    /// The throughput estimate in bits per second: the smaller of the two averages; `None`
    /// before the first download.
    pub fn estimate_bps(&self) -> Option<f64> {
        Some(self.fast.value()?.min(self.slow.value()?))
    }
}

impl Abr for Throughput {
    fn next_quality(&mut self, ctx: &DecisionContext) -> usize {
        match self.estimate_bps() {
            Some(estimate) => ctx.ladder.highest_at_most(SAFETY_FACTOR * estimate),
            None => 0,
        }
    }

    fn on_download(&mut self, d: &DownloadObservation) {
        let weight = d.download_s();
        let bps = d.throughput_bps();
        self.fast.add(bps, weight);
        self.slow.add(bps, weight);
    }

    fn name(&self) -> &'static str {
        "throughput"
    }
}
