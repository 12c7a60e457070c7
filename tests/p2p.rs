//! Root-only: the hybrid P2P-cloud CDN (papers/002) on real processes
//! (topologies/hybrid-p2p-cloud.toml: 3 ISPs of 8, 6 and 6 peer processes uploading 1.5, 0.8
//! and 0.25 chunks per slot, a tracker, a cloud). Measured, not computed: the cloud's upload
//! from its counters, inter-ISP bytes from the peering links' counters.

mod common;

use cdnlab::p2p::report::{read, RunReport};
use common::harness::{self, tests, LAB};
use common::{check_refused_sets, run_topology, TestDir};
use serde_json::Value;
use std::path::Path;

const TOPOLOGY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/topologies/hybrid-p2p-cloud.toml"
);
const CHUNK: u64 = 25_000;

fn run_policy(name: &str, sets: &[&'static str]) -> (Value, RunReport, TestDir) {
    let mut args = vec!["--timeout", "150s", "--set", "duration=40s"];
    for set in sets {
        args.extend(["--set", set]);
    }
    let (summary, out) = run_topology(name, TOPOLOGY, &args);
    let report = read(&out).unwrap_or_else(|e| panic!("{e}"));
    (summary, report, out)
}

fn json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("JSON")
}

/// What the peers, the cloud, the tracker and the links each counted agree with each other.
fn check_accounts(report: &RunReport, out: &Path) {
    assert_eq!(report.peers, 20, "{report:?}");
    assert_eq!(report.failed_peers, 0, "{report:?}");
    assert_eq!(report.failed_downloads, 0, "{report:?}");
    // 80 slots, the first 6 (the lookahead) empty, 80% of the rest played: ~59 per peer.
    assert!(report.played > 20 * 45, "{report:?}");
    assert!(report.stall_rate < 0.1, "{report:?}");
    // Every chunk the peers got from the cloud is one the cloud counted serving.
    assert_eq!(report.cloud_chunks, report.from_cloud, "{report:?}");
    assert_eq!(report.cloud_bytes, report.cloud_chunks * CHUNK);
    // The peering links carried the chunks served across ISPs, plus headers and the
    // requests and acknowledgements going the other way.
    let across = report.from_other_isp * CHUNK;
    assert!(
        report.inter_isp_bytes >= across && report.inter_isp_bytes <= across * 12 / 10 + 200_000,
        "{} bytes on the peering links for {} chunks across ISPs",
        report.inter_isp_bytes,
        report.from_other_isp
    );
    // The tracker sent across ISPs what the peers say came from another ISP, and the few it
    // sent to a peer that had just evicted the chunk (the requester then went to the cloud),
    // or whose requester had given up waiting for its answer (a peer's request can wait
    // behind its uploads on its link) and asked the cloud.
    let tracker = json(&out.join("nodes/tracker/tracker.json"));
    let (mut crossing, mut located) = (0, 0);
    for table in ["to_peers", "to_cloud"] {
        let rows = tracker["totals"][table].as_array().expect(table);
        for (l, row) in rows.iter().enumerate() {
            for (m, n) in row.as_array().expect("row").iter().enumerate() {
                let n = n.as_u64().expect("count");
                located += n;
                if table == "to_peers" && l != m {
                    crossing += n;
                }
            }
        }
    }
    assert!(
        report.from_other_isp <= crossing
            && crossing
                <= report.from_other_isp + report.peer_fallbacks + report.tracker_unanswered,
        "tracker {crossing}, peers {} (+{} fallbacks, +{} unanswered)",
        report.from_other_isp,
        report.peer_fallbacks,
        report.tracker_unanswered
    );
    // Every download the tracker dispatched is one a peer made (finished or not); the peers
    // made more only by as many as the tracker never heard of (an unanswered request that
    // never arrived).
    let downloads = report.from_own_isp
        + report.from_other_isp
        + report.from_cloud
        + report.failed_downloads
        + report.unfinished_downloads;
    assert!(
        located <= downloads && downloads <= located + report.tracker_unanswered,
        "tracker dispatched {located}, peers downloaded {downloads} ({} unanswered, {} unfinished)",
        report.tracker_unanswered,
        report.unfinished_downloads
    );
}

/// Theorem 2's dispatch against a locality-unaware one and against none, on the same peers
/// playing the same chunks (the plays are seeded per peer): the tracker sends only ISP 3's
/// excess abroad, so the peering links carry far less than under `proportional`, and ISP 1's
/// spare upload serves what ISP 3's peers cannot, so the cloud serves less than under
/// `local`. The model puts `optimal`'s cloud bandwidth at `proportional`'s; with 6–8 peers
/// an ISP it is 1.08–1.13 times it in our runs (RESULTS.md: a deficit ISP filled to its
/// upload exactly misses chunks no playing peer of its holds), so the test allows 1.3.
fn optimal_carries_less_inter_isp_traffic_than_proportional() {
    let runs: Vec<_> = [
        ("t-p2p-local", "dispatch=local"),
        ("t-p2p-prop", "dispatch=proportional"),
    ]
    .into_iter()
    .map(|(name, set)| std::thread::spawn(move || run_policy(name, &[set])))
    .collect();
    let (_, optimal, optimal_out) = run_policy("t-p2p-opt", &["dispatch=optimal"]);
    let mut others = runs.into_iter().map(|r| r.join().expect("run"));
    let (_, local, local_out) = others.next().expect("local");
    let (_, proportional, proportional_out) = others.next().expect("proportional");
    for (report, out) in [
        (&local, &local_out),
        (&proportional, &proportional_out),
        (&optimal, &optimal_out),
    ] {
        check_accounts(report, out);
    }
    eprintln!(
        "{}",
        cdnlab::p2p::report::table(&[local.clone(), proportional.clone(), optimal.clone()])
    );
    assert_eq!(local.inter_isp_bytes, 0, "{local:?}");
    assert!(
        optimal.inter_isp_bytes * 2 < proportional.inter_isp_bytes,
        "inter-ISP bytes: optimal {}, proportional {}",
        optimal.inter_isp_bytes,
        proportional.inter_isp_bytes
    );
    assert!(
        optimal.cloud_bytes < local.cloud_bytes,
        "cloud bytes: optimal {}, local {}",
        optimal.cloud_bytes,
        local.cloud_bytes
    );
    assert!(
        optimal.cloud_bytes as f64 <= 1.3 * proportional.cloud_bytes as f64,
        "cloud bytes: optimal {}, proportional {}",
        optimal.cloud_bytes,
        proportional.cloud_bytes
    );
}

/// Half of ISP 1's peers leave at 20 s (a `signal` event each): they say so in their
/// summaries, and the upload the tracker measures for ISP 1 falls by half.
fn churn_takes_peers_and_their_upload_away() {
    let (summary, report, out) = run_policy(
        "t-p2p-churn",
        &["dispatch=optimal", "churn=yes", "churn_at=20s"],
    );
    assert_eq!(report.failed_peers, 0, "{report:?}");
    let clients = summary["clients"].as_array().expect("clients");
    for client in clients {
        let node = client["node"].as_str().expect("node");
        let left = client["left_at_s"].as_f64();
        if ["i1-1", "i1-2", "i1-3", "i1-4"].contains(&node) {
            let left = left.unwrap_or_else(|| panic!("{node} did not leave: {client}"));
            assert!((19.0..23.0).contains(&left), "{node} left at {left}");
        } else {
            assert!(left.is_none(), "{node} left: {client}");
        }
    }
    // C_1 as the tracker measured it each slot: before the churn and at the end.
    let csv =
        std::fs::read_to_string(out.join("nodes/tracker/dispatch.csv")).expect("dispatch.csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let c1 = header.iter().position(|h| *h == "c1").expect("c1");
    let rows: Vec<(f64, f64)> = lines
        .map(|l| {
            let cells: Vec<f64> = l.split(',').map(|c| c.parse().expect("number")).collect();
            (cells[0], cells[c1])
        })
        .collect();
    let mean = |from: f64, to: f64| {
        let values: Vec<f64> = rows
            .iter()
            .filter(|(t, _)| (from..to).contains(t))
            .map(|r| r.1)
            .collect();
        values.iter().sum::<f64>() / values.len().max(1) as f64
    };
    let (before, after) = (mean(12.0, 20.0), mean(32.0, 40.0));
    // Eight peers of upload 1.5 playing 80% of slots: 9.6 chunks per slot; four left: 4.8.
    assert!(
        (8.0..11.5).contains(&before) && (3.8..6.0).contains(&after),
        "C_1 {before:.2} → {after:.2}"
    );
}

/// A dispatch that does not exist and caches larger than the catalogue fail at once, naming
/// the key, and leave nothing behind.
fn bad_parameters_are_refused_before_anything_starts() {
    check_refused_sets(
        TOPOLOGY,
        "t-p2p-bad",
        &[
            (
                "dispatch=nearest",
                "config key `dispatch`: dispatch: unknown policy `nearest`",
            ),
            (
                "cache=25",
                "config key `cache`: B = 25 must be 1 to the number of chunks J = 24",
            ),
            (
                "upload=1.5,0,0.25",
                "config key `upload`: the upload of ISP 2 must be above 0",
            ),
        ],
    );
}

tests!(
    LAB =>
        optimal_carries_less_inter_isp_traffic_than_proportional,
        churn_takes_peers_and_their_upload_away,
        bad_parameters_are_refused_before_anything_starts;
);
