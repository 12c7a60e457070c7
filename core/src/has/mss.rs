//! The Microsoft Smooth Streaming heuristic: the rate adaptation of the first Smooth Streaming
//! client (Expression Encoder's `HeuristicsImpl`, `NetworkHeuristicsParams`, `NetworkMediaInfo`
//! and `SlidingWindow`), which the HAS-over-interconnected-CDNs paper used in its experiments.
//!
//! The client is in one of two states. *Buffering* fills the buffer as fast as the bandwidth
//! allows: the target is the lower of the bandwidth mean / 1.25 and bandwidth mean × buffer mean
//! × 0.8 × 0.8 / chunk duration, limited to one step up while the buffer is falling or changing
//! slowly (or when the bandwidth looks like a cache's, ≥ 20 Mbit/s); once the buffer reaches
//! halfway between the lower and upper thresholds the client is *Steady*. Steady keeps the buffer
//! between the thresholds: under *panic* it takes the lowest quality and buffers again; with a
//! slowly changing buffer it steps down under *lower*, tries a step up over *upper*, else holds;
//! a fast-falling buffer under *lower* means lowest quality and buffering again; a fast-rising
//! one tries a step up. A step up needs 5 s of media downloaded since the last one and the target
//! quality's measured bitrate under the bandwidth mean.
//!
//! Bandwidth is a 3-sample mean restarted on a jump (a sample over 5× the mean or under 0.8×);
//! the first two chunks probe the path, and later samples at or above max(5 × probe, 2 Mbit/s)
//! are taken for cache hits and ignored. Buffer fullness is a 3-sample mean (restarted at +50 %
//! or −20 %) whose slope over wall time, against ±0.5 s/s, tells slow from fast changes.
//!
//! **Buffer size.** The original buffers 20 s with thresholds panic 7 s, lower 12 s, upper 17 s.
//! The paper also runs P = 6 s, where those thresholds could never be reached. Here every buffer
//! threshold is scaled by P / 20 (P = 6 s: panic 2.1 s, lower 3.6 s, upper 5.1 s, steady from
//! 4.35 s), keeping their places relative to the buffer. Rates, fractions, window sizes, the
//! slope threshold (s/s) and the 5 s up-step pacing are not buffer levels and stay as they were.
//! The rescale is this project's choice, not the paper's: [`Mss::unscaled`] (the `mss-unscaled`
//! rate adaptation) keeps the original thresholds whatever the buffer, to show what it changes.
//!
//! Two details are kept as the source has them: the 5 s pacing counts seconds of *media
//! downloaded* (equal to wall time once the buffer is full), and the "reset" after a step down
//! or a panic sets the last attempt to 0, which lets the next step up through at once.

use std::collections::BTreeMap;

use super::abr::{Abr, DecisionContext, DownloadObservation, Ladder};
use super::mss_window::SlidingWindow;

/// The buffer the original thresholds were set for, in seconds.
const REFERENCE_BUFFER_S: f64 = 20.0;
/// Panic, lower and upper buffer fullness at the reference buffer, in seconds.
const PANIC_S: f64 = 7.0;
const LOWER_S: f64 = 12.0;
const UPPER_S: f64 = 17.0;
/// A buffer whose mean changes slower than this (s per s) is "slowly changing".
const SLOPE_THRESHOLD: f64 = 0.5;
/// Media seconds to download between attempts to step up.
const IMPROVE_PERIOD_S: f64 = 5.0;
/// Download speed relative to the media rate the Buffering state aims for.
const RELATIVE_DOWNLOAD_SPEED: f64 = 1.25;
/// The fractions of bandwidth and of buffer fullness Buffering may spend.
const BANDWIDTH_FRACTION: f64 = 0.8;
const BUFFER_FRACTION: f64 = 0.8;
/// Bandwidth at which the history is suspected to come from a cache: step one level at a time.
const HIGH_BANDWIDTH_BPS: f64 = 20e6;
/// Samples are capped at this rate.
const MAX_SAMPLE_BPS: f64 = 1e9;
/// Chunks that probe the path for the cache-hit filter.
const PROBE_CHUNKS: usize = 2;
/// A sample this many times the probe (and at least the minimum) is a cache hit.
const CACHE_FACTOR: f64 = 5.0;
const CACHE_MIN_BPS: f64 = 2e6;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Buffering,
    Steady,
}

/// What one download left for the next decision to act on.
#[derive(Debug, Clone, Copy)]
struct Pending {
    quality: usize,
    buffer_s: f64,
    chunk_s: f64,
    /// The sample, or the mean when the sample was a cache hit.
    bandwidth_bps: f64,
}

/// The Smooth Streaming heuristic (see the module documentation).
#[derive(Debug, Clone)]
pub struct Mss {
    /// `mss` or `mss-unscaled`, as [`make_abr`](super::make_abr) names it.
    name: &'static str,
    panic_s: f64,
    lower_s: f64,
    upper_s: f64,
    state: State,
    bandwidth: SlidingWindow,
    buffer: SlidingWindow,
    /// Measured bitrate of each quality (bytes × 8 / duration), a 5-sample window.
    encoded: BTreeMap<usize, SlidingWindow>,
    probes: usize,
    probe_bps: f64,
    cache_bps: f64,
    downloaded_s: f64,
    last_attempt_s: f64,
    next: usize,
    pending: Option<Pending>,
}

impl Mss {
    /// The heuristic for a buffer of `buffer_s` seconds (thresholds scaled by `buffer_s / 20`).
    pub fn new(buffer_s: f64) -> Mss {
        Mss::with_threshold_scale(buffer_s / REFERENCE_BUFFER_S, "mss")
    }

    /// The heuristic with the original's thresholds (panic 7 s, lower 12 s, upper 17 s) whatever
    /// the buffer: with a buffer under 14.5 s it never leaves the Buffering state.
    pub fn unscaled() -> Mss {
        Mss::with_threshold_scale(1.0, "mss-unscaled")
    }

    fn with_threshold_scale(scale: f64, name: &'static str) -> Mss {
        Mss {
            name,
            panic_s: PANIC_S * scale,
            lower_s: LOWER_S * scale,
            upper_s: UPPER_S * scale,
            state: State::Buffering,
            bandwidth: SlidingWindow::new(3, 4.0, -0.2),
            buffer: SlidingWindow::new(3, 0.5, -0.2),
            encoded: BTreeMap::new(),
            probes: 0,
            probe_bps: 0.0,
            cache_bps: f64::INFINITY,
            downloaded_s: 0.0,
            last_attempt_s: 0.0,
            next: 0,
            pending: None,
        }
    }

    /// The scaled (panic, lower, upper) thresholds in seconds.
    pub fn thresholds_s(&self) -> (f64, f64, f64) {
        (self.panic_s, self.lower_s, self.upper_s)
    }

    /// The bandwidth estimate in bits per second: the window's mean (0 before any sample).
    pub fn bandwidth_estimate_bps(&self) -> f64 {
        self.bandwidth.mean()
    }

    /// Whether the heuristic is in its Steady state (else Buffering), for the tests.
    #[cfg(test)]
    pub fn is_steady(&self) -> bool {
        self.state == State::Steady
    }

    /// The original's `ProcessChunkDownload` decision, once per download.
    fn decide(&mut self, p: Pending, ladder: &Ladder) -> usize {
        let previous = p.quality.min(ladder.top());
        let slope = self.buffer.slope();
        let slow = (-SLOPE_THRESHOLD..=SLOPE_THRESHOLD).contains(&slope);
        match self.state {
            State::Buffering => {
                let limit_steps = p.bandwidth_bps >= HIGH_BANDWIDTH_BPS || slope < 0.0 || slow;
                let mean = self.bandwidth.mean();
                let by_speed = mean / RELATIVE_DOWNLOAD_SPEED;
                let by_buffer =
                    mean * self.buffer.mean() * BANDWIDTH_FRACTION * BUFFER_FRACTION / p.chunk_s;
                let mut target = by_speed.min(by_buffer);
                if limit_steps {
                    target = target.min(ladder.bitrate_bps(previous + 1) as f64);
                }
                if p.buffer_s >= self.lower_s + (self.upper_s - self.lower_s) / 2.0 {
                    self.state = State::Steady;
                }
                ladder.highest_at_most(target)
            }
            State::Steady if p.buffer_s < self.panic_s => {
                self.last_attempt_s = 0.0;
                self.state = State::Buffering;
                0
            }
            State::Steady if slow => {
                if p.buffer_s < self.lower_s {
                    self.last_attempt_s = 0.0;
                    previous.saturating_sub(1)
                } else if p.buffer_s > self.upper_s {
                    self.try_step_up(previous, ladder)
                } else {
                    previous
                }
            }
            State::Steady if slope < -SLOPE_THRESHOLD => {
                if p.buffer_s < self.lower_s {
                    self.last_attempt_s = 0.0;
                    self.state = State::Buffering;
                    0
                } else {
                    previous
                }
            }
            State::Steady => self.try_step_up(previous, ladder),
        }
    }

    /// One step up if 5 s of media came since the last attempt and the step's measured bitrate
    /// (its nominal one before any was fetched) is under the bandwidth mean.
    fn try_step_up(&mut self, previous: usize, ladder: &Ladder) -> usize {
        if self.downloaded_s - self.last_attempt_s < IMPROVE_PERIOD_S || previous >= ladder.top() {
            return previous;
        }
        let up = previous + 1;
        let measured = self.encoded.get(&up).map_or(0.0, SlidingWindow::mean);
        let media_bps = if measured > 0.0 {
            measured
        } else {
            ladder.bitrate_bps(up) as f64
        };
        if media_bps >= self.bandwidth.mean() {
            return previous;
        }
        self.last_attempt_s = self.downloaded_s;
        up
    }
}

impl Abr for Mss {
    fn next_quality(&mut self, ctx: &DecisionContext) -> usize {
        self.buffer.start_clock(ctx.now_ns);
        if let Some(pending) = self.pending.take() {
            self.next = self.decide(pending, ctx.ladder);
        }
        self.next.min(ctx.ladder.top())
    }

    fn on_download(&mut self, d: &DownloadObservation) {
        let sample = d.throughput_bps().min(MAX_SAMPLE_BPS);
        if self.probes < PROBE_CHUNKS {
            self.probe_bps = if self.probes == 0 {
                sample
            } else {
                self.probe_bps.max(sample)
            };
            self.probes += 1;
            self.cache_bps = (CACHE_FACTOR * self.probe_bps).max(CACHE_MIN_BPS);
        }
        let bandwidth_bps = if sample < self.cache_bps {
            self.bandwidth.add(sample, d.end_ns);
            sample
        } else {
            self.bandwidth.mean()
        };
        self.buffer.add(d.buffer_s, d.end_ns);
        if d.segment_s > 0.0 {
            self.encoded
                .entry(d.quality)
                .or_insert_with(|| SlidingWindow::new(5, 0.2, -0.2))
                .add(d.bytes as f64 * 8.0 / d.segment_s, d.end_ns);
            self.downloaded_s += d.segment_s;
        }
        self.pending = Some(Pending {
            quality: d.quality,
            buffer_s: d.buffer_s,
            chunk_s: d.segment_s,
            bandwidth_bps,
        });
    }

    fn name(&self) -> &'static str {
        self.name
    }
}
