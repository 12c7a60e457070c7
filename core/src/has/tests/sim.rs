//! Whole sessions in the simulator: convergence on a fast link, settling on a slow one, and the
//! cost of redirects.

use super::*;
use crate::has::sim::{simulate, SimConfig, SimHop, SimResult, ThroughputTrace};
use crate::has::{make_abr, PlaybackConfig, ABR_NAMES};

fn config(trace: ThroughputTrace, buffer_s: f64, segments: usize) -> SimConfig {
    SimConfig {
        ladder: paper_ladder(),
        segment_s: 2.0,
        segments,
        playback: PlaybackConfig::new(buffer_s, 1).unwrap(),
        trace,
        manifest_rtt_s: 0.04,
        hops: vec![SimHop {
            host: "dcs".into(),
            rtt_s: 0.04,
        }],
    }
}

fn run(name: &str, config: &SimConfig) -> SimResult {
    let mut abr = make_abr(name, config.playback.buffer_s).unwrap();
    simulate(abr.as_mut(), config).unwrap()
}

fn qualities(result: &SimResult) -> Vec<usize> {
    result.records.iter().map(|r| r.quality).collect()
}

#[test]
fn every_abr_converges_to_the_top_at_5_mbit() {
    for buffer_s in [20.0, 6.0] {
        let config = config(ThroughputTrace::constant(5e6).unwrap(), buffer_s, 40);
        for name in ABR_NAMES {
            let result = run(name, &config);
            let q = qualities(&result);
            assert!(
                q[20..].iter().all(|&q| q == 2),
                "{name}, P = {buffer_s} s: {q:?}"
            );
            assert_eq!(result.metrics.stall_count, 0, "{name}, P = {buffer_s} s");
        }
    }
}

#[test]
fn at_0_8_mbit_mss_and_throughput_settle_at_the_lowest_and_buffer_rules_stay_under_the_link() {
    let config = config(ThroughputTrace::constant(0.8e6).unwrap(), 20.0, 60);
    for name in ["mss", "throughput"] {
        let result = run(name, &config);
        assert!(qualities(&result).iter().all(|&q| q == 0), "{name}");
        assert_eq!(result.metrics.stall_count, 0, "{name}");
    }
    // Buffer-based rules cannot settle between rungs: they alternate 0.5 and 1 Mbit/s, never 2,
    // and average no more than the link carries.
    for name in ["bba", "bola"] {
        let result = run(name, &config);
        let q = qualities(&result);
        assert!(q.iter().all(|&q| q < 2), "{name}: {q:?}");
        assert!(
            result.metrics.avg_quality_mbps <= 0.8,
            "{name}: {:?}",
            result.metrics
        );
    }
}

#[test]
fn mss_and_throughput_step_down_when_the_link_slows() {
    // 5 Mbit/s for 60 s, then 0.8 Mbit/s.
    let trace = ThroughputTrace::new(vec![(0.0, 5e6), (60.0, 0.8e6)]).unwrap();
    let config = config(trace, 20.0, 80);
    for name in ["mss", "throughput"] {
        let result = run(name, &config);
        let q = qualities(&result);
        assert!(q[20..25].iter().all(|&q| q == 2), "{name}: {q:?}");
        assert!(q[70..].iter().all(|&q| q == 0), "{name}: {q:?}");
        assert_eq!(
            result.metrics.stall_count, 0,
            "{name}: {:?}",
            result.metrics
        );
    }
}

#[test]
fn each_redirect_adds_its_round_trip_to_the_startup_delay() {
    let direct = config(ThroughputTrace::constant(5e6).unwrap(), 6.0, 10);
    // The paper's UpstreamRR at D = 200 ms: uRR at RTT 60 + 2D ms, then dRR and dCS at 40 ms.
    let mut upstream = direct.clone();
    upstream.hops = vec![
        SimHop {
            host: "urr".into(),
            rtt_s: 0.46,
        },
        SimHop {
            host: "drr".into(),
            rtt_s: 0.04,
        },
        SimHop {
            host: "dcs".into(),
            rtt_s: 0.04,
        },
    ];
    let startup = |c: &SimConfig| run("mss", c).metrics.startup_delay_s.unwrap();
    // The first segment (0.5 Mbit/s × 2 s) takes 0.2 s at 5 Mbit/s after the round trips.
    assert!((startup(&direct) - 0.24).abs() < 1e-6);
    assert!((startup(&upstream) - 0.74).abs() < 1e-6);
    let result = run("mss", &upstream);
    let first = &result.records[0];
    assert_eq!(first.redirects(), 2);
    assert!((first.redirect_time_s() - 0.5).abs() < 1e-6);
    assert!(first
        .to_csv_row()
        .ends_with("urr:0.460000;drr:0.040000;dcs:0.240000"));
}

#[test]
fn a_transfer_spans_the_trace_steps() {
    let trace = ThroughputTrace::new(vec![(0.0, 1e6), (1.0, 3e6)]).unwrap();
    // 2 Mbit from 0.5 s: 0.5 Mbit by 1 s at 1 Mbit/s, the other 1.5 Mbit in 0.5 s at 3 Mbit/s.
    assert_eq!(trace.transfer_end_ns(ns(0.5), 250_000), ns(1.5));
    assert_eq!(trace.transfer_end_ns(ns(2.0), 0), ns(2.0));
    let stalled = ThroughputTrace::new(vec![(0.0, 0.0), (1.0, 1e6)]).unwrap();
    assert_eq!(stalled.transfer_end_ns(0, 125_000), ns(2.0));
}

#[test]
fn bad_traces_and_paths_are_refused() {
    assert!(ThroughputTrace::new(vec![]).is_err());
    assert!(ThroughputTrace::new(vec![(1.0, 1e6)]).is_err());
    assert!(ThroughputTrace::new(vec![(0.0, 1e6), (0.0, 2e6)]).is_err());
    assert!(ThroughputTrace::new(vec![(0.0, -1.0)]).is_err());
    assert!(ThroughputTrace::constant(0.0).is_err());
    let mut c = config(ThroughputTrace::constant(1e6).unwrap(), 20.0, 3);
    c.hops.clear();
    assert!(simulate(make_abr("bba", 20.0).unwrap().as_mut(), &c).is_err());
}
