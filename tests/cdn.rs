//! Root-only: the interconnected-CDN scenario on real processes, short. The qualitative result of
//! the paper: UpstreamRR's start-up delay grows with the Internet delay D between the CDNs (its
//! first chunk request goes to the uRR, one round trip of 60 + 2D ms), DirectRR's and DirectCS's
//! do not.

mod common;

use common::{can_run_labs, run_topology};
use serde_json::Value;

/// Runs the scenario with `chunks` chunks at one-way Internet delay `delay`; returns the clients'
/// summaries by policy.
fn run_scenario(name: &str, delay: &str) -> Vec<Value> {
    let topology = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/topologies/interconnected-cdn.toml"
    );
    let internet_delay = format!("internet_delay={delay}");
    let (summary, out) = run_topology(
        name,
        topology,
        &[
            "--set",
            &internet_delay,
            "--set",
            "chunks=4",
            "--set",
            "buffer=6s",
            "--timeout",
            "120s",
        ],
    );
    let _ = std::fs::remove_dir_all(&out);
    summary["clients"].as_array().unwrap().clone()
}

fn by_policy<'a>(clients: &'a [Value], policy: &str) -> &'a Value {
    clients
        .iter()
        .find(|c| c["policy"] == policy)
        .unwrap_or_else(|| panic!("no {policy} client in {clients:?}"))
}

fn startup(clients: &[Value], policy: &str) -> f64 {
    let client = by_policy(clients, policy);
    assert_eq!(client["failed"], false, "{client}");
    client["startup_delay_s"].as_f64().expect("startup_delay_s")
}

#[test]
fn upstream_rr_startup_grows_with_internet_delay_and_direct_policies_do_not() {
    if !can_run_labs() {
        return;
    }
    let near = run_scenario("t-icdn0", "0ms");
    let far = run_scenario("t-icdn200", "200ms");
    for (policy, redirects) in [("upstream-rr", 2.0), ("direct-rr", 1.0), ("direct-cs", 0.0)] {
        assert_eq!(
            by_policy(&far, policy)["redirects_per_chunk"],
            redirects,
            "{policy}"
        );
    }
    // One more round trip to the uRR over the kept-alive connection: 2D = 0.4 s more.
    let growth = startup(&far, "upstream-rr") - startup(&near, "upstream-rr");
    assert!(
        (0.36..0.6).contains(&growth),
        "UpstreamRR start-up grew by {growth:.3} s from D = 0 to 200 ms; one extra round trip is 0.4 s"
    );
    for policy in ["direct-rr", "direct-cs"] {
        let change = startup(&far, policy) - startup(&near, policy);
        assert!(
            change.abs() < 0.1,
            "{policy} start-up changed by {change:.3} s with D"
        );
    }
}
