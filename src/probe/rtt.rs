//! `probe rtt`: UDP echo pings at a fixed interval, like `ping` but with percentiles, late
//! replies counted, and no raw sockets needed.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::echo::{run_session, EchoPlan};
use super::packet::check_size;
use crate::stats::Summary;

/// The most pings one measurement may send, so a typo cannot run for days.
pub const MAX_COUNT: u64 = 10_000_000;

/// How to ping.
#[derive(Debug, Clone, PartialEq)]
pub struct RttOptions {
    /// Pings to send (1 to `MAX_COUNT`).
    pub count: u64,
    /// Time between sends.
    pub interval: Duration,
    /// UDP payload bytes per ping (`packet::HEADER_LEN` to `packet::MAX_LEN`).
    pub size: usize,
    /// Keep every ping's RTT in the report.
    pub keep_samples: bool,
}

impl Default for RttOptions {
    fn default() -> Self {
        RttOptions {
            count: 10,
            interval: Duration::from_millis(10),
            size: 64,
            keep_samples: false,
        }
    }
}

/// What `probe rtt` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RttReport {
    /// The address pinged.
    pub target: String,
    pub sent: u64,
    /// Pings answered, each counted once, however late (within the drain wait) or out of order.
    pub received: u64,
    /// 1 − received / sent: round-trip loss (out or back).
    pub loss_rate: f64,
    /// Extra copies of replies already counted.
    pub duplicates: u64,
    /// Replies that arrived after a reply to a later ping.
    pub reordered: u64,
    /// RTT summary in milliseconds; `null` when nothing came back.
    pub rtt_ms: Option<Summary>,
    /// Every ping's RTT in ms in sequence order, `null` where lost (only with `--samples`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_ms: Option<Vec<Option<f64>>>,
}

/// Checks a ping count, naming the allowed range.
pub(crate) fn check_count(count: u64) -> io::Result<u64> {
    if (1..=MAX_COUNT).contains(&count) {
        Ok(count)
    } else {
        Err(invalid(format!("count {count} is outside 1..={MAX_COUNT}")))
    }
}

/// An `InvalidInput` error with a message.
pub(crate) fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// Pings `target` (a `probe serve`) as `opts` says and reports the RTTs. Takes about
/// count × interval, plus up to max(1 s, 3 × the worst RTT) for late replies when some are
/// missing. An unreachable target is not an error: it shows as `loss_rate` 1.
pub fn measure_rtt(target: SocketAddr, opts: &RttOptions) -> io::Result<RttReport> {
    let plan = EchoPlan {
        count: check_count(opts.count)?,
        interval_ns: opts
            .interval
            .as_nanos()
            .try_into()
            .map_err(|_| invalid(format!("interval {:?} is too long", opts.interval)))?,
        size: check_size(opts.size).map_err(invalid)?,
    };
    let log = run_session(target, &plan)?;
    Ok(log.report(target.to_string(), opts.keep_samples))
}
