//! A deterministic, sans-IO stand-in for the network: plays a session with an ABR algorithm and
//! the playback model over a throughput trace, so the algorithms can be tested in microseconds
//! and real runs cross-checked against what a simple model predicts.
//!
//! The model: the manifest takes one round trip; each segment request follows the hops in order,
//! every redirect costing one round trip to its host, and the last hop one round trip plus the
//! body at the trace's rate (piecewise constant in time). Connections are persistent and TCP's
//! slow start is ignored, so real runs should be somewhat slower.

use super::abr::{Abr, DecisionContext, DownloadObservation, Ladder};
use super::metrics::QoeMetrics;
use super::playback::{Playback, PlaybackConfig};
use super::segment_log::{Hop, SegmentRecord};

/// Bottleneck throughput over time: steps of constant rate.
#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputTrace {
    /// (start in ns since the session started, rate in bit/s), by start.
    steps: Vec<(u64, f64)>,
}

impl ThroughputTrace {
    /// `bps` for ever.
    pub fn constant(bps: f64) -> Result<ThroughputTrace, String> {
        ThroughputTrace::new(vec![(0.0, bps)])
    }

    /// Steps of (start in seconds, rate in bit/s): the first starts at 0, starts ascend, rates are
    /// not negative and the last is positive (so every download ends).
    pub fn new(steps: Vec<(f64, f64)>) -> Result<ThroughputTrace, String> {
        match steps.first() {
            None => return Err("a throughput trace needs at least one step".into()),
            Some(&(start, _)) if start != 0.0 => {
                return Err(format!("the throughput trace starts at {start} s, not 0"))
            }
            _ => {}
        }
        let mut converted = Vec::with_capacity(steps.len());
        for (i, &(start_s, bps)) in steps.iter().enumerate() {
            if !(start_s.is_finite() && start_s >= 0.0 && bps.is_finite() && bps >= 0.0) {
                return Err(format!(
                    "throughput trace step {i} ({start_s} s, {bps} bit/s) needs a finite start and rate, neither negative"
                ));
            }
            let start_ns = (start_s * 1e9).round() as u64;
            if let Some(&(previous, _)) = converted.last() {
                if start_ns <= previous {
                    return Err(format!(
                        "throughput trace step {i} starts at {start_s} s, not after the step before it"
                    ));
                }
            }
            converted.push((start_ns, bps));
        }
        if converted.last().is_some_and(|&(_, bps)| bps <= 0.0) {
            return Err(
                "the throughput trace's last step has rate 0, so a download could never end".into(),
            );
        }
        Ok(ThroughputTrace { steps: converted })
    }

    /// When `bytes` whose transfer starts at `start_ns` have all arrived.
    pub fn transfer_end_ns(&self, start_ns: u64, bytes: u64) -> u64 {
        let mut bits = bytes as f64 * 8.0;
        let mut t = start_ns;
        let mut i = self.steps.iter().rposition(|&(s, _)| s <= t).unwrap_or(0);
        loop {
            let rate = self.steps[i].1;
            match self.steps.get(i + 1) {
                Some(&(next, _)) if rate * ((next - t) as f64 / 1e9) < bits => {
                    bits -= rate * ((next - t) as f64 / 1e9);
                    t = next;
                    i += 1;
                }
                _ => return t + (bits / rate * 1e9).ceil() as u64,
            }
        }
    }
}

/// One host on a segment's path and the round-trip time to it.
#[derive(Debug, Clone, PartialEq)]
pub struct SimHop {
    pub host: String,
    pub rtt_s: f64,
}

/// A simulated session.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub ladder: Ladder,
    pub segment_s: f64,
    pub segments: usize,
    pub playback: PlaybackConfig,
    pub trace: ThroughputTrace,
    /// Round trip to the host that serves the manifest.
    pub manifest_rtt_s: f64,
    /// Each segment's path: redirects first, the content server last.
    pub hops: Vec<SimHop>,
}

/// What a simulated session produced.
#[derive(Debug, Clone)]
pub struct SimResult {
    pub metrics: QoeMetrics,
    pub records: Vec<SegmentRecord>,
}

/// Plays `config.segments` segments with `abr`: wait for room in the buffer, ask for a quality,
/// download over the hops, hand the segment to the player and the observation to `abr`.
pub fn simulate(abr: &mut dyn Abr, config: &SimConfig) -> Result<SimResult, String> {
    let seconds = |s: f64, what: &str| -> Result<u64, String> {
        if s.is_finite() && s >= 0.0 {
            Ok((s * 1e9).round() as u64)
        } else {
            Err(format!(
                "{what} must be a finite number of seconds, not {s}"
            ))
        }
    };
    if !(config.segment_s.is_finite() && config.segment_s > 0.0) {
        return Err(format!(
            "the segment duration must be positive, not {} s",
            config.segment_s
        ));
    }
    let Some((server, redirects)) = config.hops.split_last() else {
        return Err("a segment's path needs at least the content server".into());
    };
    let redirect_rtts = redirects
        .iter()
        .map(|h| seconds(h.rtt_s, &format!("the RTT to {}", h.host)))
        .collect::<Result<Vec<u64>, String>>()?;
    let server_rtt = seconds(server.rtt_s, &format!("the RTT to {}", server.host))?;
    let ladder = &config.ladder;
    let mut playback = Playback::new(config.playback);
    let mut t = seconds(config.manifest_rtt_s, "the manifest RTT")?;
    let first_request_ns = t;
    let mut last_quality = None;
    let mut records = Vec::with_capacity(config.segments);
    for index in 0..config.segments {
        t += playback
            .wait_for_room_ns(t, config.segment_s)
            .ok_or_else(|| format!("segment {index}: the player has no room and is not playing"))?;
        let ctx = DecisionContext {
            now_ns: t,
            buffer_s: playback.buffer_s(),
            ladder,
            segment_s: config.segment_s,
            last_quality,
            index,
        };
        let quality = abr.next_quality(&ctx).min(ladder.top());
        let bitrate_bps = ladder.bitrate_bps(quality);
        let bytes = (bitrate_bps as f64 * config.segment_s / 8.0).round() as u64;
        let mut hops = Vec::with_capacity(config.hops.len());
        let mut hop_start = t;
        for (hop, &rtt) in redirects.iter().zip(&redirect_rtts) {
            hops.push(Hop {
                host: hop.host.clone(),
                seconds: rtt as f64 / 1e9,
            });
            hop_start += rtt;
        }
        let end = config.trace.transfer_end_ns(hop_start + server_rtt, bytes);
        hops.push(Hop {
            host: server.host.clone(),
            seconds: (end - hop_start) as f64 / 1e9,
        });
        playback.segment_arrived(end, index, quality, bitrate_bps, config.segment_s)?;
        let observation = DownloadObservation {
            index,
            quality,
            bytes,
            start_ns: t,
            end_ns: end,
            segment_s: config.segment_s,
            buffer_s: playback.buffer_s(),
        };
        abr.on_download(&observation);
        records.push(SegmentRecord::new(
            &observation,
            bitrate_bps,
            0,
            playback.stalls().len(),
            hops,
        ));
        last_quality = Some(quality);
        t = end;
    }
    playback.end_of_stream(t);
    Ok(SimResult {
        metrics: QoeMetrics::from_playback(&playback, 0, Some(first_request_ns)),
        records,
    })
}
