//! BOLA-BASIC, the Lyapunov rate adaptation of Spiteri, Urgaonkar and Sitaraman, "BOLA:
//! Near-Optimal Bitrate Adaptation for Online Videos" (INFOCOM 2016), as dash.js's `BolaRule`
//! and the authors' simulator sabre implement it.
//!
//! Quality m has utility v_m = ln(S_m / S_1) (S the segment size, proportional to the bitrate
//! for segments of equal duration), so the lowest quality is worth 0. With Q the buffer level in
//! seconds, the next quality maximises (V · (v_m + γp) − Q) / S_m: an empty buffer favours the
//! smallest segment, a full one the most useful per bit.
//!
//! **Parameters.** γp = 5, sabre's default, and V = (P − d) / (v_M + γp) for a buffer of P
//! seconds and segments of d seconds, as sabre sets it: the top quality's objective reaches 0
//! exactly at P − d, the most a decision can see buffered (a segment is only requested when it
//! fits). BOLA-BASIC waits when every objective is negative; here the player's buffer limit does
//! that waiting, so the quality is always the argmax.

use super::abr::{Abr, DecisionContext, DownloadObservation};

/// The γp term of the objective (sabre's `--gamma-p` default).
pub const GAMMA_P: f64 = 5.0;

/// BOLA-BASIC for a buffer of a given size (see the module documentation).
#[derive(Debug, Clone)]
pub struct Bola {
    buffer_s: f64,
}

impl Bola {
    pub fn new(buffer_s: f64) -> Bola {
        Bola { buffer_s }
    }
}

impl Abr for Bola {
    fn next_quality(&mut self, ctx: &DecisionContext) -> usize {
        let rates = ctx.ladder.bitrates_bps();
        let lowest = rates[0] as f64;
        let utility = |r: u64| (r as f64 / lowest).ln();
        let top_utility = utility(rates[ctx.ladder.top()]);
        let v = (self.buffer_s - ctx.segment_s) / (top_utility + GAMMA_P);
        if v <= 0.0 {
            return 0;
        }
        let score = |r: u64| (v * (utility(r) + GAMMA_P) - ctx.buffer_s) / r as f64;
        let mut best = 0;
        for (m, &r) in rates.iter().enumerate().skip(1) {
            if score(r) > score(rates[best]) {
                best = m;
            }
        }
        best
    }

    fn on_download(&mut self, _: &DownloadObservation) {}

    fn name(&self) -> &'static str {
        "bola"
    }
}
