//! `probe stream`: a paced UDP stream that the server echoes, for loss rate and delay variation
//! at a chosen packet rate (where `rtt` probes the path gently, this loads it).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::echo::{run_session, EchoPlan};
use super::packet::check_size;
use super::rtt::{check_count, invalid};
use crate::stats::Summary;

/// The highest packet rate accepted: beyond this the sender's pacing (one datagram per system
/// call, microsecond timers) is no longer what is being measured.
pub const MAX_RATE_PPS: f64 = 1_000_000.0;

/// How to stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamOptions {
    /// Datagrams per second (above 0, at most `MAX_RATE_PPS`).
    pub rate_pps: f64,
    /// Datagrams to send.
    pub count: u64,
    /// UDP payload bytes per datagram.
    pub size: usize,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            rate_pps: 1000.0,
            count: 10_000,
            size: 200,
        }
    }
}

/// Spread of the round-trip delay, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DelayVariation {
    /// Standard deviation of the RTTs.
    pub stdev: f64,
    /// p99 − p50 of the RTTs: how far the tail sits above the typical delay.
    pub p99_minus_p50: f64,
}

/// What `probe stream` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamReport {
    pub target: String,
    /// The rate asked for.
    pub rate_pps: f64,
    /// The rate the sends achieved (first to last send).
    pub achieved_pps: f64,
    pub size: usize,
    pub sent: u64,
    pub received: u64,
    pub loss_rate: f64,
    /// Always `"round_trip"`: a lost datagram may have been lost on the way out or on the way
    /// back; the echo cannot tell which.
    pub loss_scope: String,
    pub duplicates: u64,
    pub reordered: u64,
    pub rtt_ms: Option<Summary>,
    pub delay_variation_ms: Option<DelayVariation>,
}

/// Streams to `target` (a `probe serve`) at `opts.rate_pps` and reports loss and delay
/// variation. Takes count / rate, plus the late-reply wait of `measure_rtt` when some are
/// missing.
pub fn measure_stream(target: SocketAddr, opts: &StreamOptions) -> io::Result<StreamReport> {
    if !(opts.rate_pps > 0.0 && opts.rate_pps <= MAX_RATE_PPS) {
        return Err(invalid(format!(
            "rate {} pps is outside (0, {MAX_RATE_PPS}]",
            opts.rate_pps
        )));
    }
    let interval = Duration::from_secs_f64(1.0 / opts.rate_pps);
    let plan = EchoPlan {
        count: check_count(opts.count)?,
        interval_ns: interval.as_nanos() as u64,
        size: check_size(opts.size).map_err(invalid)?,
    };
    let log = run_session(target, &plan)?;
    let span_ns = log.send_span_ns();
    let rtt = log.report(target.to_string(), false);
    Ok(StreamReport {
        target: rtt.target,
        rate_pps: opts.rate_pps,
        achieved_pps: if span_ns == 0 {
            0.0
        } else {
            (rtt.sent - 1) as f64 * 1e9 / span_ns as f64
        },
        size: plan.size,
        sent: rtt.sent,
        received: rtt.received,
        loss_rate: rtt.loss_rate,
        loss_scope: "round_trip".to_string(),
        duplicates: rtt.duplicates,
        reordered: rtt.reordered,
        rtt_ms: rtt.rtt_ms,
        delay_variation_ms: rtt.rtt_ms.map(|s| DelayVariation {
            stdev: s.stdev,
            p99_minus_p50: s.p99 - s.p50,
        }),
    })
}
