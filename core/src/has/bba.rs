//! BBA-0, the buffer-based rate adaptation of Huang et al., "A Buffer-Based Approach to Rate
//! Adaptation: Evidence from a Large Video Streaming Service" (SIGCOMM 2014), Algorithm 1
//! (AStream calls it "netflix").
//!
//! The quality follows the buffer level alone: at or under the *reservoir* the lowest rate; over
//! the *cushion* the top rate; in between, the rate map f(B) rises linearly from the lowest to the
//! top bitrate, and the quality only changes once f(B) crosses the bitrate of a neighbouring
//! quality (up to the highest bitrate under f(B), or down to the lowest over it), which keeps it
//! from flapping.
//!
//! **Buffer size.** The paper's 240 s buffer had a 90 s reservoir and a cushion ending at 216 s;
//! here the reservoir is 10 % and the cushion ends at 90 % of the buffer a decision can see. That
//! is P − segment duration rather than P: a segment is only requested when it fits in the buffer,
//! so a decision never sees more than P − d buffered, and with P = 6 s and 2 s segments a map over
//! the whole P could never reach the top rate. The reservoir is never less than one segment: the
//! decision after a stall sees exactly the segment that ended it, and a reservoir under that is
//! never entered, so BBA would keep a rate the network cannot carry and stall on every segment
//! (the simulator showed it: 1 Mbit/s on a 0.8 Mbit/s link with a 20 s buffer).

use super::abr::{Abr, DecisionContext, DownloadObservation};

/// The reservoir and the cushion's end as fractions of the usable buffer.
const RESERVOIR_FRACTION: f64 = 0.1;
const CUSHION_END_FRACTION: f64 = 0.9;

/// BBA-0 for a buffer of a given size (see the module documentation).
#[derive(Debug, Clone)]
pub struct Bba {
    buffer_s: f64,
}

impl Bba {
    pub fn new(buffer_s: f64) -> Bba {
        Bba { buffer_s }
    }

    /// The (reservoir, cushion end) buffer levels in seconds for segments of `segment_s`: 10 %
    /// (at least one segment) and 90 % of P − `segment_s`. A cushion that ends inside the
    /// reservoir (a buffer of barely more than a segment) leaves only the lowest quality.
    pub fn bounds_s(&self, segment_s: f64) -> (f64, f64) {
        let usable = (self.buffer_s - segment_s).max(0.0);
        let reservoir = (RESERVOIR_FRACTION * usable).max(segment_s);
        (reservoir, CUSHION_END_FRACTION * usable)
    }
}

impl Abr for Bba {
    fn next_quality(&mut self, ctx: &DecisionContext) -> usize {
        let ladder = ctx.ladder;
        let rates = ladder.bitrates_bps();
        let (reservoir, cushion_end) = self.bounds_s(ctx.segment_s);
        let buffer = ctx.buffer_s;
        if buffer <= reservoir || cushion_end <= reservoir {
            return 0;
        }
        if buffer >= cushion_end {
            return ladder.top();
        }
        let (min, max) = (rates[0] as f64, rates[ladder.top()] as f64);
        let f = min + (max - min) * (buffer - reservoir) / (cushion_end - reservoir);
        let previous = ctx.last_quality.unwrap_or(0).min(ladder.top());
        let rate_plus = ladder.bitrate_bps(previous + 1) as f64;
        let rate_minus = rates[previous.saturating_sub(1)] as f64;
        if f >= rate_plus {
            rates.iter().rposition(|&r| (r as f64) < f).unwrap_or(0)
        } else if f <= rate_minus {
            rates
                .iter()
                .position(|&r| r as f64 > f)
                .unwrap_or(ladder.top())
        } else {
            previous
        }
    }

    fn on_download(&mut self, _: &DownloadObservation) {}

    fn name(&self) -> &'static str {
        "bba"
    }
}
