//! Root-only: the ICN-based telco CDN (papers/000) on real processes, scaled down to 4 regions ×
//! 4 sites × 3 applications (topologies/icn-telco-cdn.toml). A timeline event that lowers one
//! site's link rate (its C_m) moves PARM's mapping away from that site at the next PARM period;
//! a border router that loses the controller keeps forwarding on its last rules; an infeasible
//! PARM names its constraint family and installs nothing.

mod common;

use common::harness::{self, tests, LAB};
use common::run_topology;
use serde_json::Value;
use std::path::Path;

const TOPOLOGY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/topologies/icn-telco-cdn.toml");

fn controller(out: &Path) -> Value {
    let path = out.join("nodes/controller/controller.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("controller.json is JSON")
}

/// Every load generator finished having sent over 100 requests.
fn check_loads(summary: &Value) {
    let clients = summary["clients"].as_array().expect("clients");
    assert_eq!(clients.len(), 4, "{summary}");
    for load in clients {
        assert_eq!(load["failed"], false, "{load}");
        assert!(
            load["requests"].as_f64().expect("requests") > 100.0,
            "{load}"
        );
    }
}

/// How many requests every region's users sent within [from_s, to_s), and the failed ones' CSV
/// lines (with the load node's name).
fn failures(out: &Path, from_s: f64, to_s: f64) -> (usize, Vec<String>) {
    let mut sent = 0;
    let mut failed = Vec::new();
    for l in 1..=4 {
        let path = out.join(format!("nodes/load{l}/requests.csv"));
        let csv =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for line in csv.lines().skip(1) {
            let fields: Vec<&str> = line.split(',').collect();
            let t: f64 = fields[0].parse().expect("sent_s");
            if (from_s..to_s).contains(&t) {
                sent += 1;
                if fields[4] != "200" {
                    failed.push(format!("load{l}: {line}"));
                }
            }
        }
    }
    (sent, failed)
}

/// The share of demand PARM's installed mappings sent to `site` in the periods at or after
/// `from_s` and before `to_s`, averaged.
fn planned_share(controller: &Value, site: usize, from_s: f64, to_s: f64) -> f64 {
    let shares: Vec<f64> = controller["periods"]
        .as_array()
        .expect("periods")
        .iter()
        .filter(|p| p["version"].is_u64())
        .filter(|p| (from_s..to_s).contains(&p["t_s"].as_f64().unwrap_or(-1.0)))
        .map(|p| p["site_share"][site].as_f64().expect("site_share"))
        .collect();
    assert!(
        !shares.is_empty(),
        "no mapping installed in [{from_s}, {to_s}) s"
    );
    shares.iter().sum::<f64>() / shares.len() as f64
}

/// When site1's queue has drained after the move at 40 s: 4 s past the latest last failure
/// seen (54.3 s; see `congesting_a_site_moves_the_mapping_away_from_it`).
const DRAINED_S: f64 = 58.0;

/// site1 (the nearest to every region, so PARM loads it to the top of its band) drops from
/// 4 to 1 Mbit/s at 32 s. Its SM module reads the new C_m; the PARM period at 40 s must give it
/// well under half the share it had before, the bandwidth it serves must fall with it, and
/// requests must be served again once the new mapping is in force.
///
/// The event is at 32 s, not 30 s: the controller's SM periods end at 30 s and 35 s by its own
/// clock, which starts within 50 ms of the clients', so at 30 s whether the period's PARM saw
/// the new C_m was a race, and the bandwidth site1 served afterwards depended on who won
/// (0.135 or 0.086 of the total in two runs). At 32 s the 35 s period sees it and the 40 s
/// PARM moves the mapping, every run.
///
/// Expected pass rates (each above 99.9%), from 3 runs at load averages 4-6 on 2 CPUs (and 3
/// earlier ones with the event at 30 s):
/// - planned share: decided by the LP from the measured C_m, the same in every run (0.287-0.288
///   before, 0.088 after: 0.31 of it, against at most 0.5); it fails only if site1's SM
///   answers miss every period from 35 s to 70 s.
/// - served share, SM periods from 50 s (the new mapping 10 s in force)
///   against those before the event: 0.080 of 0.265, 0.090 of 0.302 and 0.082 of 0.277, each
///   0.30 of it (spread 0.003), against at most 0.6: a margin of 100 times the spread.
/// - requests failed once site1's backlog has drained (`DRAINED_S`): none sent after 54.3 s in
///   11 runs (the scenario alone, 60 s, the event at 32 s). After the move site1 still carries
///   ~0.8 of its new 1 Mbit/s (PARM's band), so the requests queued before it drain slowly: in
///   the slowest run a request to site1 took 1.1–1.5 s on average in each second from 50 to
///   56 s (its 100-packet queue is 1.2 s), and 0.3–0.7 s from 57 s. The last failed request of
///   each run was sent at 44.6, 45.4, 45.8, 48.7, 49.5, 49.8, 51.0, 51.4, 52.9, 53.3 and
///   54.3 s. Counting from 50 s, as this test once did, failed 2 of 5 runs of the whole suite
///   (16 of 1228, all sent 50–53 s). At most 1% may fail after `DRAINED_S`.
fn congesting_a_site_moves_the_mapping_away_from_it() {
    let (summary, out) = run_topology(
        "t-icn-congest",
        TOPOLOGY,
        &[
            "--timeout",
            "150s",
            "--set",
            "duration=70s",
            "--set",
            "congest_at=32s",
        ],
    );
    check_loads(&summary);
    // Nothing fails before the event. Between it and the move, requests mapped to site1 wait
    // in its queue and some time out; once the new mapping is in force (from 40 s) and site1's
    // backlog has drained (by 54 s in 11 runs; see above), they are served again.
    assert_eq!(failures(&out, 0.0, 32.0).1, Vec::<String>::new());
    // Each failed request (sent_s, app, object, latency_s, status, ...) is printed: whether
    // failures come in one burst (a machine stall) or spread out tells which this was.
    let (sent, failed) = failures(&out, DRAINED_S, 1e9);
    eprintln!(
        "after {DRAINED_S} s: {} of {sent} requests failed",
        failed.len()
    );
    assert!(
        sent > 1000 && failed.len() * 100 <= sent,
        "{} of {sent} failed after {DRAINED_S} s:\n{}",
        failed.len(),
        failed.join("\n")
    );
    let controller = controller(&out);
    // Before the event every PARM period is solved. After it, a period may be infeasible (the
    // band's lower bound, θ̄ − ξ, still loads site1) or lack site1's measurement; such a period
    // must say which and install nothing.
    let periods = controller["periods"].as_array().expect("periods");
    for p in periods {
        let t = p["t_s"].as_f64().expect("t_s");
        match p["error"].as_str() {
            None => assert!(p["version"].is_u64(), "{p}"),
            Some(e) => {
                assert!(t > 32.0, "PARM failed before the event: {e}");
                // site1's SM answer crosses its congested link and may miss a whole period.
                let named = e.contains("(4b)") || e.contains("(4c)");
                assert!(named || e.contains("not every site was measured"), "{e}");
                assert!(p["version"].is_null(), "{p}");
            }
        }
    }
    let before = planned_share(&controller, 0, 10.0, 32.0);
    let after = planned_share(&controller, 0, 40.0, 1e9);
    eprintln!("site1's planned share {before:.3} before, {after:.3} after");
    assert!(
        after < 0.5 * before,
        "site1's planned share {before:.3} before the event, {after:.3} after"
    );
    // What site1 served: its share of all bandwidth, SM periods before vs after the move.
    let served = |from: f64, to: f64| {
        let ticks: Vec<f64> = controller["ticks"]
            .as_array()
            .expect("ticks")
            .iter()
            .filter(|t| (from..to).contains(&t["t_s"].as_f64().unwrap_or(-1.0)))
            .filter_map(|t| {
                let usage: Vec<f64> = t["usage_mbps"]
                    .as_array()?
                    .iter()
                    .filter_map(Value::as_f64)
                    .collect();
                let total: f64 = usage.iter().sum();
                (total > 0.0).then(|| usage[0] / total)
            })
            .collect();
        assert!(!ticks.is_empty(), "no SM period in [{from}, {to}) s");
        ticks.iter().sum::<f64>() / ticks.len() as f64
    };
    let (served_before, served_after) = (served(20.0, 32.0), served(50.0, 1e9));
    eprintln!("site1 served {served_before:.3} of the bandwidth before, {served_after:.3} after");
    assert!(
        served_after < 0.6 * served_before,
        "site1 served {served_before:.3} of the bandwidth before, {served_after:.3} after"
    );
    // The SM module saw the new capacity (in the last period every site answered).
    let last = controller["ticks"]
        .as_array()
        .and_then(|t| t.iter().rev().find(|t| t["capacity_mbps"][0].is_f64()))
        .expect("a tick with every site measured");
    let c1 = last["capacity_mbps"][0].as_f64().expect("capacity");
    assert!(
        (c1 - 1.0).abs() < 1e-6,
        "site1's C_m at the end: {c1} Mbit/s"
    );
    assert!(out.join("nodes/controller/mapping.svg").is_file());
    assert!(std::fs::read_dir(out.join("nodes/controller/lp")).is_ok_and(|d| d.count() >= 4));
}

/// The controller is stopped at 25 s, after two PARM periods. The border routers keep the last
/// rules: region r4 (the most users) still splits its misses over several sites as PARM said,
/// rather than falling back to its nearest site, and requests keep being served.
fn borders_keep_their_last_rules_without_the_controller() {
    let (summary, out) = run_topology(
        "t-icn-lose",
        TOPOLOGY,
        &[
            "--timeout",
            "120s",
            "--set",
            "duration=45s",
            "--set",
            "congest=none",
            "--set",
            "lose_controller=yes",
            "--set",
            "lose_controller_at=25s",
        ],
    );
    check_loads(&summary);
    assert_eq!(
        failures(&out, 0.0, 1e9).1,
        Vec::<String>::new(),
        "requests failed"
    );
    let controller = controller(&out);
    // The timeline stopped the controller at 25 s (never earlier), and it wrote nothing after
    // that: its controller.json, saved after every SM period, is older than the stop. (Its own
    // t_s counts from its start during `up`, before the clients' clock starts, so it is not
    // compared with 25 s.) Before the stop it ran its first four SM periods, 20 s, so two PARM
    // periods installed rules: the stop comes at least 5 s after the fourth is due.
    let events: Vec<Value> = std::fs::read_to_string(out.join("events.jsonl"))
        .expect("events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("an event is JSON"))
        .collect();
    let time_of = |event: &str, node: Option<&str>| {
        events
            .iter()
            .find(|e| e["event"] == event && node.is_none_or(|n| e["node"] == n))
            .and_then(|e| e["time_unix_s"].as_f64())
            .unwrap_or_else(|| panic!("no {event} {node:?} in {events:?}"))
    };
    let stopped = time_of("node_stop", Some("controller"));
    let stopped_after_s = stopped - time_of("clients_start", None);
    assert!(stopped_after_s >= 25.0, "stopped {stopped_after_s} s in");
    let saved = std::fs::metadata(out.join("nodes/controller/controller.json"))
        .and_then(|m| m.modified())
        .expect("controller.json's time")
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let ticks = controller["ticks"].as_array().expect("ticks");
    eprintln!(
        "controller stopped {stopped_after_s:.3} s after clients_start; its last save \
         {:.3} s before that; {} ticks, the last at t_s {}",
        stopped - saved,
        ticks.len(),
        ticks.last().map_or(Value::Null, |t| t["t_s"].clone())
    );
    assert!(
        saved <= stopped,
        "controller.json saved {} s after the controller was stopped",
        saved - stopped
    );
    assert!(
        ticks.len() >= 4,
        "{} SM periods before the stop",
        ticks.len()
    );
    let csv = std::fs::read_to_string(out.join("nodes/load4/requests.csv")).expect("requests.csv");
    let mut sites = std::collections::BTreeMap::<String, usize>::new();
    let mut late = 0;
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let sent: f64 = f[0].parse().expect("sent_s");
        if sent > 30.0 && f[4] == "200" {
            late += 1;
            if !f[6].is_empty() {
                *sites.entry(f[6].to_string()).or_default() += 1;
            }
        }
    }
    assert!(
        late > 100,
        "{late} requests served after the controller stopped"
    );
    let home = sites.get("site4").copied().unwrap_or(0);
    let elsewhere: usize = sites.values().sum::<usize>() - home;
    assert!(
        elsewhere > 0 && sites.len() >= 2,
        "region r4's misses after the controller stopped went to {sites:?}"
    );
}

/// t_n = 10 ms, which no site meets: every PARM period is infeasible and says it is (4c), the
/// application and both numbers; no rules are installed, so every region's misses stay with its
/// nearest site, and requests are still served.
fn an_infeasible_parm_names_its_constraint_and_installs_nothing() {
    let (summary, out) = run_topology(
        "t-icn-infeasible",
        TOPOLOGY,
        &[
            "--timeout",
            "90s",
            "--set",
            "duration=25s",
            "--set",
            "congest=none",
            "--set",
            "deadlines=10ms,10ms,10ms",
        ],
    );
    check_loads(&summary);
    assert_eq!(
        failures(&out, 0.0, 1e9).1,
        Vec::<String>::new(),
        "requests failed"
    );
    let controller = controller(&out);
    let periods = controller["periods"].as_array().expect("periods");
    assert!(periods.len() >= 2, "{periods:?}");
    for p in periods {
        let e = p["error"].as_str().unwrap_or_else(|| panic!("solved: {p}"));
        assert!(
            e.contains("(4c) expected response time") && e.contains("t_n = 10"),
            "{e}"
        );
        assert!(p["version"].is_null(), "{p}");
    }
    // Every border reported it still forwards by its initial rules (version 0).
    let ticks = controller["ticks"].as_array().expect("ticks");
    assert!(ticks.len() >= 4, "{ticks:?}");
    for t in ticks {
        for version in t["border_rules"].as_array().expect("border_rules") {
            assert!(version.is_null() || version == 0, "{t}");
        }
    }
    assert_eq!(
        ticks[ticks.len() - 1]["border_rules"],
        serde_json::json!([0, 0, 0, 0])
    );
    for l in 1..=4 {
        let csv = std::fs::read_to_string(out.join(format!("nodes/load{l}/requests.csv")))
            .expect("requests.csv");
        let home = format!("site{l}");
        for line in csv.lines().skip(1) {
            let site = line.split(',').nth(6).unwrap_or("");
            assert!(
                site.is_empty() || site == home,
                "region r{l} was served by {site}"
            );
        }
    }
}

tests!(
    LAB =>
        congesting_a_site_moves_the_mapping_away_from_it,
        borders_keep_their_last_rules_without_the_controller,
        an_infeasible_parm_names_its_constraint_and_installs_nothing;
);
