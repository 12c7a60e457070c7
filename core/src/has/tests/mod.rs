//! Tests of the HAS core: each algorithm on crafted inputs, the playback model's accounting, the
//! segment log, and whole sessions in the simulator.

mod mss;
mod playback;
mod rules;
mod segment_log;
mod sim;

use super::abr::{DecisionContext, DownloadObservation, Ladder};

/// The paper's ladder: 0.5, 1 and 2 Mbit/s.
fn paper_ladder() -> Ladder {
    Ladder::new(vec![500_000, 1_000_000, 2_000_000]).unwrap()
}

/// Nanoseconds in `s` seconds.
fn ns(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

/// A decision at `now_s` with `buffer_s` buffered, 2 s segments.
fn ctx(ladder: &Ladder, now_s: f64, buffer_s: f64, last: Option<usize>) -> DecisionContext<'_> {
    DecisionContext {
        now_ns: ns(now_s),
        buffer_s,
        ladder,
        segment_s: 2.0,
        last_quality: last,
        index: 0,
    }
}

/// A 2 s segment of `quality` at `bitrate_bps` downloaded at `bps` ending at `end_s`, leaving
/// `buffer_s` buffered.
fn download(
    index: usize,
    quality: usize,
    bitrate_bps: u64,
    bps: f64,
    end_s: f64,
    buffer_s: f64,
) -> DownloadObservation {
    let bytes = bitrate_bps * 2 / 8;
    let seconds = bytes as f64 * 8.0 / bps;
    DownloadObservation {
        index,
        quality,
        bytes,
        start_ns: ns(end_s - seconds),
        end_ns: ns(end_s),
        segment_s: 2.0,
        buffer_s,
    }
}
