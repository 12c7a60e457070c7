//! A client's quality of experience, computed from the playback model, under the stable names
//! every cdnlab client summary uses (units in the names).

use serde::Serialize;

use super::playback::Playback;

/// The QoE of one streaming session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QoeMetrics {
    /// From the first segment request to playback start: the HAS-over-CDNI paper's definition.
    /// `None` (JSON null) if playback never started.
    pub startup_delay_s: Option<f64>,
    /// From the manifest request to playback start.
    pub startup_delay_from_manifest_s: Option<f64>,
    /// Mean bitrate of the played segments in Mbit/s (0 when none played).
    pub avg_quality_mbps: f64,
    /// Total time frozen for want of media, start-up excluded.
    pub stall_time_s: f64,
    pub stall_count: usize,
    /// Each stall's [start, end] in seconds since the manifest request.
    pub stall_events_s: Vec<[f64; 2]>,
    /// Quality changes between consecutively played segments.
    pub switches: usize,
    pub switches_up: usize,
    pub switches_down: usize,
    /// Mean absolute bitrate change per switch in Mbit/s (0 without switches).
    pub avg_switch_magnitude_mbps: f64,
    /// Segments played.
    pub segments: usize,
}

impl QoeMetrics {
    /// The metrics of `playback` for a session whose manifest was requested at
    /// `manifest_request_ns` and whose first segment was requested at `first_request_ns`. Call it
    /// after [`Playback::end_of_stream`]: a stall still going on is not counted.
    pub fn from_playback(
        playback: &Playback,
        manifest_request_ns: u64,
        first_request_ns: Option<u64>,
    ) -> QoeMetrics {
        let seconds_between = |from: u64, to: u64| to.saturating_sub(from) as f64 / 1e9;
        let start = playback.started_ns();
        let played = playback.played();
        let mbps: Vec<f64> = played.iter().map(|p| p.bitrate_bps as f64 / 1e6).collect();
        let mut switches_up = 0;
        let mut switches_down = 0;
        let mut magnitude = 0.0;
        for pair in played.windows(2) {
            if pair[1].quality != pair[0].quality {
                if pair[1].quality > pair[0].quality {
                    switches_up += 1;
                } else {
                    switches_down += 1;
                }
                magnitude += (pair[1].bitrate_bps as f64 - pair[0].bitrate_bps as f64).abs() / 1e6;
            }
        }
        let switches = switches_up + switches_down;
        let stalls = playback.stalls();
        QoeMetrics {
            startup_delay_s: start
                .zip(first_request_ns)
                .map(|(start, first)| seconds_between(first, start)),
            startup_delay_from_manifest_s: start
                .map(|start| seconds_between(manifest_request_ns, start)),
            avg_quality_mbps: mean(&mbps),
            stall_time_s: stalls
                .iter()
                .map(|s| seconds_between(s.start_ns, s.end_ns))
                .fold(0.0, |total, s| total + s),
            stall_count: stalls.len(),
            stall_events_s: stalls
                .iter()
                .map(|s| {
                    [
                        seconds_between(manifest_request_ns, s.start_ns),
                        seconds_between(manifest_request_ns, s.end_ns),
                    ]
                })
                .collect(),
            switches,
            switches_up,
            switches_down,
            avg_switch_magnitude_mbps: if switches == 0 {
                0.0
            } else {
                magnitude / switches as f64
            },
            segments: played.len(),
        }
    }
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().fold(0.0, |total, v| total + v) / values.len() as f64
    }
}
