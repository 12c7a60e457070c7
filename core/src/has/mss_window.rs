//! The sliding-window mean of Microsoft Smooth Streaming's heuristics (`SlidingWindow` in the
//! Expression Encoder player source): the mean of the last few samples, restarted when a sample
//! jumps too far from it, and the slope of that mean over wall time.

use std::collections::VecDeque;

/// A windowed mean with jump resets and a slope, fed with timestamped samples.
#[derive(Debug, Clone)]
pub(super) struct SlidingWindow {
    samples: VecDeque<f64>,
    size: usize,
    /// A sample more than this fraction above the mean restarts the window.
    up_fraction: f64,
    /// A sample more than this fraction below the mean (a negative number) restarts it.
    down_fraction: f64,
    mean: f64,
    slope: f64,
    /// When the mean last changed (or the window was created); `None` until then.
    last_ns: Option<u64>,
}

impl SlidingWindow {
    pub(super) fn new(size: usize, up_fraction: f64, down_fraction: f64) -> SlidingWindow {
        SlidingWindow {
            samples: VecDeque::with_capacity(size),
            size,
            up_fraction,
            down_fraction,
            mean: 0.0,
            slope: 0.0,
            last_ns: None,
        }
    }

    /// Sets the time the first sample's slope is measured from, if no time is known yet. The
    /// original measured it from the window's creation, when the stream was opened.
    pub(super) fn start_clock(&mut self, now_ns: u64) {
        self.last_ns.get_or_insert(now_ns);
    }

    /// Adds `sample` taken at `now_ns`. A jump beyond the fractions restarts the window with this
    /// sample alone; a restarted window has slope 0 (the original took the restart and the sample
    /// at the same instant, so it never divided by the elapsed time).
    pub(super) fn add(&mut self, sample: f64, now_ns: u64) {
        let mut restarted = false;
        if !self.samples.is_empty() && self.mean != 0.0 {
            let change = (sample - self.mean) / self.mean;
            if change > self.up_fraction || change < self.down_fraction {
                self.samples.clear();
                self.mean = 0.0;
                self.slope = 0.0;
                restarted = true;
            }
        }
        if self.samples.len() == self.size {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
        let previous = self.mean;
        self.mean = self.samples.iter().sum::<f64>() / self.samples.len() as f64;
        if !restarted {
            if let Some(last_ns) = self.last_ns {
                let elapsed_s = now_ns.saturating_sub(last_ns) as f64 / 1e9;
                if elapsed_s > 0.0 {
                    self.slope = (self.mean - previous) / elapsed_s;
                }
            }
        }
        self.last_ns = Some(now_ns);
    }

    /// The mean of the samples in the window (0 when empty).
    pub(super) fn mean(&self) -> f64 {
        self.mean
    }

    /// The change of the mean per second of wall time at the last sample.
    pub(super) fn slope(&self) -> f64 {
        self.slope
    }
}
