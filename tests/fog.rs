//! Root-only: the F-FDN system (papers/003) on real processes, short. Robust F-FDN, which can
//! use its cache, its neighbours' caches, on-demand processing and the cloud, misses no more
//! deadlines than Central Cloud and CDN on the same traces; and a killed FDN is marked down by
//! the cloud's fog monitor within its heartbeat window, its segments leave the metadata, and
//! the viewers finish (misses recorded, nothing hangs). In every run the FDN decides each
//! segment against the deadline the viewers score, and the rows the live view reads as
//! segments arrive add up to the results.

mod common;

use common::harness::{self, tests, LAB};
use common::{run_topology, TestDir};
use serde_json::Value;

const TOPOLOGY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/topologies/f-fdn.toml");

/// Runs f-fdn.toml as lab `name` with a short trace and `sets`; returns the viewers' summary
/// and the run directory.
fn run_ffdn(name: &str, sets: &[&str]) -> (Value, TestDir) {
    let mut args = vec![
        "--timeout",
        "180s",
        "--set",
        "window=15s",
        "--set",
        "segments=200",
    ];
    for set in sets {
        args.extend(["--set", set]);
    }
    let (summary, out) = run_topology(name, TOPOLOGY, &args);
    let viewers = summary["clients"][0].clone();
    assert_eq!(viewers["failed"], false, "{viewers}");
    assert_eq!(viewers["failed_requests"], 0, "{viewers}");
    // The FDN decided every segment it delivered against the deadline the viewers scored it
    // by, to the millisecond (the stream's arrival travels with its request).
    let gap = viewers["fdn_deadline_gap_max_s"].as_f64();
    assert!(gap.is_some_and(|g| g <= 0.001), "{viewers}");
    let delivered = viewers["segments"].as_u64().unwrap()
        - viewers["segments_by_source"]["failed"]["segments"]
            .as_u64()
            .unwrap_or(0);
    assert_eq!(viewers["fdn_deadlines_reported"], delivered, "{viewers}");
    // What the live view read as segments came (`deadlines.csv`) is what the results say.
    let live = std::fs::read_to_string(out.join("nodes/viewers/deadlines.csv")).unwrap();
    let rows: Vec<&str> = live.lines().skip(1).collect();
    assert_eq!(
        rows.len() as u64,
        viewers["segments"].as_u64().unwrap(),
        "{viewers}"
    );
    let missed = rows.iter().filter(|r| r.ends_with(",true")).count() as u64;
    assert_eq!(
        missed,
        viewers["deadline_misses"].as_u64().unwrap(),
        "{viewers}"
    );
    (viewers, out)
}

fn miss_rate(viewers: &Value) -> f64 {
    viewers["deadline_miss_rate"]
        .as_f64()
        .expect("deadline_miss_rate")
}

/// Robust F-FDN against Central Cloud and CDN, summed over two traces, with the FDNs caching 60%
/// (their region's hot videos, then every video's beginning; a CDN site holds 75% of the
/// videos whole). Robust must miss at most half of Central Cloud's deadlines, and be level with
/// CDN: at most 2% of the segments more (RESULTS.md: at the paper's intensity it misses ~0.3%,
/// CDN ~2.5%, Central Cloud ~7.4%).
///
/// Expected pass rate: above 99.9%. Every method runs the same two traces (same seeds), so what
/// varies between runs is only timing. Central Cloud misses the first segment of every stream
/// (the ingestion's round trip and a cloud fetch exceed its 1 s), about 20 of the ~400 segments
/// here; Robust holds every stream's first segments locally. Failing takes Robust missing half
/// as many as Central Cloud, which no run of the experiments in RESULTS.md came near (at most
/// 1.2% of a trace against Central Cloud's 6.4% or more).
///
/// The three methods of a trace run at once, as the experiments in RESULTS.md run three at a
/// time: each is a lab of its own.
fn robust_ffdn_halves_central_clouds_misses_and_is_level_with_cdn() {
    const METHODS: [&str; 3] = ["central-cloud", "cdn", "robust-ffdn"];
    let mut runs: Vec<Vec<Value>> = vec![Vec::new(); METHODS.len()];
    for trace in ["0", "1"] {
        let done: Vec<Value> = std::thread::scope(|scope| {
            let handles: Vec<_> = METHODS
                .iter()
                .enumerate()
                .map(|(i, method)| {
                    scope.spawn(move || {
                        let (viewers, _) = run_ffdn(
                            &format!("t-ffdn-m{i}"),
                            &[
                                &format!("method={method}"),
                                &format!("trace={trace}"),
                                "caching=60%",
                            ],
                        );
                        viewers
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        for ((method, viewers), all) in METHODS.iter().zip(done).zip(&mut runs) {
            assert_eq!(viewers["method"], *method, "{viewers}");
            eprintln!(
                "{method} trace {trace}: {} misses of {} segments",
                viewers["deadline_misses"], viewers["segments"]
            );
            let rate = miss_rate(&viewers);
            assert!((0.0..=1.0).contains(&rate), "{method}: {viewers}");
            all.push(viewers);
        }
    }
    let sum =
        |runs: &[Value], key: &str| runs.iter().map(|v| v[key].as_f64().unwrap()).sum::<f64>();
    let [cloud_runs, cdn_runs, robust_runs] = &runs[..] else {
        unreachable!()
    };
    let misses = |runs| sum(runs, "deadline_misses");
    let (cloud, cdn, robust) = (misses(cloud_runs), misses(cdn_runs), misses(robust_runs));
    let segments = sum(robust_runs, "segments");
    assert!(
        2.0 * robust <= cloud && robust <= cdn + 0.02 * segments,
        "deadline misses: robust-ffdn {robust}, central-cloud {cloud}, cdn {cdn}:\n{robust_runs:?}\n{cloud_runs:?}\n{cdn_runs:?}"
    );
    // Central Cloud sends every segment from the cloud; Robust F-FDN uses its cache too.
    for viewers in robust_runs {
        let sources = &viewers["segments_by_source"];
        assert!(
            sources["local-cache"]["segments"].as_u64() > Some(0),
            "{sources}"
        );
    }
    for viewers in cloud_runs {
        assert_eq!(
            viewers["segments_by_source"]
                .as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>()),
            Some(vec!["cloud".to_string()])
        );
    }
}

/// The first line of the cloud's log saying `fdn` went down at or after `since`: its
/// `time_unix_s` and how many heartbeats it says were missed.
fn down_time(cloud_log: &str, fdn: &str, since: f64) -> Option<(f64, u64)> {
    cloud_log
        .lines()
        .filter(|l| l.contains(&format!("fog monitor: {fdn} is down")))
        .filter_map(|l| {
            let at = l.split("time_unix_s ").nth(1)?.split(')').next()?.parse();
            let missed = l.split(" is down (").nth(1)?.split(' ').next()?.parse();
            Some((at.ok()?, missed.ok()?))
        })
        .find(|(t, _)| *t >= since)
}

fn a_killed_fdn_is_noticed_and_its_segments_go_elsewhere() {
    let (viewers, out) = run_ffdn(
        "t-ffdn-fault",
        &["method=robust-ffdn", "fail=fdn2", "fail_at=6s"],
    );
    let events = std::fs::read_to_string(out.join("events.jsonl")).unwrap();
    let stopped: f64 = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"] == "node_stop" && e["node"] == "fdn2")
        .and_then(|e| e["time_unix_s"].as_f64())
        .unwrap_or_else(|| panic!("no node_stop of fdn2 in {events}"));
    let cloud_log = std::fs::read_to_string(out.join("logs/cloud.log")).unwrap();
    // It was up and answering before: no down line before the kill.
    assert_eq!(
        down_time(&cloud_log, "fdn2", 0.0),
        down_time(&cloud_log, "fdn2", stopped),
        "{cloud_log}"
    );
    let (down, missed) = down_time(&cloud_log, "fdn2", stopped)
        .unwrap_or_else(|| panic!("the fog monitor never marked fdn2 down:\n{cloud_log}"));
    // The monitor decided on the third missed heartbeat in a row (missed_limit, 3), not on the
    // first nor on some later one. How long that took (about 3 s: three heartbeats 500 ms
    // apart, each answer awaited up to 1 s; RESULTS.md measured 2.7 s) is a time the machine's
    // load stretches, so it is reported, not bounded from above.
    let noticed = down - stopped;
    eprintln!("fdn2 marked down {noticed:.3} s after it was stopped, after {missed} misses");
    assert_eq!(
        missed, 3,
        "fdn2 stopped at {stopped}, marked down at {down} ({noticed:.2} s)"
    );
    assert!(
        noticed >= 0.0,
        "fdn2 marked down at {down}, before it was stopped at {stopped}"
    );
    // Once the metadata (read every 500 ms) says so, no segment is sent for from fdn2.
    let origin = viewers["origin_unix_s"].as_f64().unwrap();
    let csv = std::fs::read_to_string(out.join("nodes/viewers/segments.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (arrival, source) = (col("arrival_s"), col("source"));
    let mut late_from_fdn2 = Vec::new();
    let mut after = 0;
    for line in csv.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let at = origin + fields[arrival].parse::<f64>().unwrap();
        if at > down + 1.0 {
            after += 1;
            if fields[source] == "neighbor:fdn2" {
                late_from_fdn2.push(line.to_string());
            }
        }
    }
    assert!(after > 0, "no request arrived after fdn2 went down");
    assert_eq!(
        late_from_fdn2,
        Vec::<String>::new(),
        "segments from fdn2 after it was down"
    );
}

tests!(
    LAB =>
        robust_ffdn_halves_central_clouds_misses_and_is_level_with_cdn,
        a_killed_fdn_is_noticed_and_its_segments_go_elsewhere;
);
