//! The playback model's start-up, stall and switch accounting, and the metric names.

use super::*;
use crate::has::{Playback, PlaybackConfig, QoeMetrics};

const MBIT: u64 = 1_000_000;

fn player(buffer_s: f64, startup: usize) -> Playback {
    Playback::new(PlaybackConfig::new(buffer_s, startup).unwrap())
}

fn metrics(p: &Playback, first_request_s: f64) -> QoeMetrics {
    QoeMetrics::from_playback(p, 0, Some(ns(first_request_s)))
}

#[test]
fn config_rejects_nonsense() {
    assert!(PlaybackConfig::new(0.0, 1).is_err());
    assert!(PlaybackConfig::new(f64::INFINITY, 1).is_err());
    assert!(PlaybackConfig::new(6.0, 0).is_err());
}

#[test]
fn startup_delay_runs_from_the_first_request_to_playback_start() {
    let mut p = player(20.0, 1);
    p.segment_arrived(ns(1.5), 0, 0, MBIT, 2.0).unwrap();
    assert_eq!(p.started_ns(), Some(ns(1.5)));
    let m = metrics(&p, 0.5);
    assert_eq!(m.startup_delay_s, Some(1.0));
    assert_eq!(m.startup_delay_from_manifest_s, Some(1.5));
}

#[test]
fn startup_waits_for_the_configured_segments() {
    let mut p = player(20.0, 2);
    p.segment_arrived(ns(1.0), 0, 0, MBIT, 2.0).unwrap();
    assert_eq!(p.started_ns(), None);
    p.advance(ns(2.5));
    assert!(
        (p.buffer_s() - 2.0).abs() < 1e-9,
        "nothing plays before start-up"
    );
    assert!(!p.is_stalled(), "start-up is not a stall");
    p.segment_arrived(ns(3.0), 1, 0, MBIT, 2.0).unwrap();
    assert_eq!(p.started_ns(), Some(ns(3.0)));
    p.end_of_stream(ns(3.0));
    assert_eq!(metrics(&p, 0.0).stall_count, 0);
}

#[test]
fn stalls_are_counted_after_startup_only() {
    let mut p = player(20.0, 1);
    p.segment_arrived(ns(1.0), 0, 0, MBIT, 2.0).unwrap();
    p.segment_arrived(ns(2.5), 1, 0, MBIT, 2.0).unwrap();
    // 2 s played from 1.0 and 2 s more: dry at 5.0; the next segment comes at 6.0.
    p.advance(ns(5.5));
    assert!(p.is_stalled());
    p.segment_arrived(ns(6.0), 2, 0, MBIT, 2.0).unwrap();
    assert!(!p.is_stalled());
    // A segment arriving exactly when the buffer runs dry is no stall.
    p.segment_arrived(ns(8.0), 3, 0, MBIT, 2.0).unwrap();
    assert_eq!(p.end_of_stream(ns(8.0)), ns(10.0));
    let m = metrics(&p, 0.0);
    assert_eq!(m.stall_count, 1);
    assert!((m.stall_time_s - 1.0).abs() < 1e-9);
    assert_eq!(m.stall_events_s, vec![[5.0, 6.0]]);
    assert_eq!(m.segments, 4);
    assert_eq!(m.startup_delay_s, Some(1.0));
}

#[test]
fn a_stall_cut_short_by_the_end_of_the_stream_still_counts() {
    let mut p = player(20.0, 1);
    p.segment_arrived(ns(1.0), 0, 0, MBIT, 2.0).unwrap();
    // The server died: nothing more after 3.0; at 4.5 the client gives up.
    assert_eq!(p.end_of_stream(ns(4.5)), ns(4.5));
    let m = metrics(&p, 0.0);
    assert_eq!(m.stall_events_s, vec![[3.0, 4.5]]);
    assert!(p.segment_arrived(ns(5.0), 1, 0, MBIT, 2.0).is_err());
}

#[test]
fn requests_wait_for_room_in_the_buffer() {
    let mut p = player(6.0, 1);
    for i in 0..3 {
        assert!(p.may_request(ns(0.1 * i as f64), 2.0), "segment {i} fits");
        p.segment_arrived(ns(0.1 * (i + 1) as f64), i, 0, MBIT, 2.0)
            .unwrap();
    }
    // 6 s buffered at 0.3 s, less the 0.2 s played: 5.8 s; a 2 s segment fits at 4 s, in 1.8 s.
    assert!(!p.may_request(ns(0.3), 2.0));
    assert_eq!(p.wait_for_room_ns(ns(0.3), 2.0), Some(ns(1.8)));
    assert!(p.may_request(ns(2.1), 2.0));
}

#[test]
fn startup_segments_may_exceed_a_small_buffer() {
    let mut p = player(3.0, 2);
    assert!(p.may_request(0, 2.0));
    p.segment_arrived(ns(1.0), 0, 0, MBIT, 2.0).unwrap();
    assert!(
        p.may_request(ns(1.0), 2.0),
        "the second start-up segment must be fetched"
    );
    p.segment_arrived(ns(2.0), 1, 0, MBIT, 2.0).unwrap();
    assert!(!p.may_request(ns(2.0), 2.0));
}

#[test]
fn switches_and_average_quality_follow_the_played_segments() {
    let ladder = paper_ladder();
    let mut p = player(20.0, 1);
    let qualities = [0, 2, 2, 1, 1, 0, 2];
    for (i, &q) in qualities.iter().enumerate() {
        p.segment_arrived(ns(0.1 * i as f64 + 0.1), i, q, ladder.bitrate_bps(q), 2.0)
            .unwrap();
    }
    p.end_of_stream(ns(1.0));
    let m = metrics(&p, 0.0);
    assert_eq!(m.segments, 7);
    assert!((m.avg_quality_mbps - 9.0 / 7.0).abs() < 1e-9);
    assert_eq!((m.switches, m.switches_up, m.switches_down), (4, 2, 2));
    // |+1.5| + |−1| + |−0.5| + |+1.5| over 4.
    assert!((m.avg_switch_magnitude_mbps - 1.125).abs() < 1e-9);
    let starts: Vec<u64> = p.played().iter().map(|s| s.start_ns).collect();
    assert_eq!(
        starts[1],
        ns(2.1),
        "the second segment plays when the first is done"
    );
}

#[test]
fn bad_segment_durations_are_errors_that_name_the_segment() {
    let mut p = player(20.0, 1);
    for duration in [0.0, -2.0, f64::NAN, 1e9] {
        let error = p
            .segment_arrived(ns(1.0), 7, 0, MBIT, duration)
            .unwrap_err();
        assert!(error.contains("segment 7"), "{error}");
    }
}

#[test]
fn metrics_serialize_under_the_stable_names() {
    let mut p = player(20.0, 1);
    p.end_of_stream(ns(1.0));
    let json = serde_json::to_value(metrics(&p, 0.5)).unwrap();
    let mut keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "avg_quality_mbps",
            "avg_switch_magnitude_mbps",
            "segments",
            "stall_count",
            "stall_events_s",
            "stall_time_s",
            "startup_delay_from_manifest_s",
            "startup_delay_s",
            "switches",
            "switches_down",
            "switches_up",
        ]
    );
    assert!(json["startup_delay_s"].is_null(), "never started");
    assert_eq!(json["stall_time_s"], 0.0);
}
