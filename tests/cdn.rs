//! Root-only: the interconnected-CDN scenario on real processes, short. The qualitative result of
//! the paper: UpstreamRR's start-up delay grows with the Internet delay D between the CDNs (its
//! first chunk request goes to the uRR, one round trip of 60 + 2D ms), DirectRR's and DirectCS's
//! do not.

mod common;

use common::harness::{self, tests, LAB};
use common::run_topology;
use serde_json::Value;

/// Runs the scenario with 4 chunks at one-way Internet delay `delay`; returns the clients'
/// summaries and the fastest of upstream-rr's first hops (its request to the uRR), seconds.
fn run_scenario(name: &str, delay: &str) -> (Vec<Value>, f64) {
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
    let csv = std::fs::read_to_string(out.join("nodes/c-upstream-rr/segments.csv"))
        .expect("upstream-rr's segments.csv");
    let urr_hops: Vec<f64> = csv
        .lines()
        .skip(1)
        .map(|line| {
            let hops = line.rsplit(',').next().unwrap_or_default();
            let (host, seconds) = hops
                .split(';')
                .next()
                .and_then(|h| h.split_once(':'))
                .expect("host:seconds");
            assert_eq!(host, "urr", "upstream-rr's first hop: {line}");
            seconds.parse().expect("seconds")
        })
        .collect();
    assert_eq!(urr_hops.len(), 4, "{csv}");
    let fastest = urr_hops.iter().copied().fold(f64::INFINITY, f64::min);
    (summary["clients"].as_array().unwrap().clone(), fastest)
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

/// Two runs, D = 0 and D = 200 ms, compared; what varies between runs is the machine's load.
///
/// The extra round trip itself, 2D = 0.4 s, is checked on upstream-rr's request to the uRR,
/// by the fastest of its 4 chunks in each run: a hop can only be slowed, so the fastest is
/// within milliseconds of 60 + 2D ms unless all 4 were held up (measured: 0.061 and 0.461 s
/// in each of 3 runs). The bounds, 0.36 and 0.6 s, leave 40 ms below (all 4 hops of the D = 0
/// run held up by 40 ms more than the D = 200 ms run's) and 200 ms above (two extra round
/// trips would be 0.8 s).
///
/// Start-up delay, the paper's measure, is one sample per client and run, so it is held to
/// the decision it shows: UpstreamRR's grows by nearer one extra round trip than none or two
/// (0.2-0.6 s), DirectRR's and DirectCS's by nearer none than one (under 0.2 s either way;
/// it was 0.1 s, 0.36-0.6 s for UpstreamRR, bounds that held a single sample to 40 ms).
/// Over 6 runs of this test at load averages 4-7 on 2 CPUs, start-up grew by
/// 0.389-0.407 s for UpstreamRR and changed by at most 0.005 s for the direct policies: the
/// 0.2 s margins are some 40 times the spread seen, so a run fails only if a stall of a fifth
/// of a second lands in one client's start-up in one of the two runs. Expected pass rate:
/// above 99.9%.
fn upstream_rr_startup_grows_with_internet_delay_and_direct_policies_do_not() {
    let (near, near_urr) = run_scenario("t-icdn0", "0ms");
    let (far, far_urr) = run_scenario("t-icdn200", "200ms");
    for (policy, redirects) in [("upstream-rr", 2.0), ("direct-rr", 1.0), ("direct-cs", 0.0)] {
        assert_eq!(
            by_policy(&far, policy)["redirects_per_chunk"],
            redirects,
            "{policy}"
        );
    }
    for policy in ["upstream-rr", "direct-rr", "direct-cs"] {
        eprintln!(
            "{policy}: start-up {:.3} s at D = 0, {:.3} s at D = 200 ms",
            startup(&near, policy),
            startup(&far, policy)
        );
    }
    eprintln!(
        "upstream-rr's fastest uRR hop: {near_urr:.3} s at D = 0, {far_urr:.3} s at D = 200 ms"
    );
    // No load makes a round trip faster than 60 + 2D ms (5 ms for clock granularity).
    assert!(
        near_urr >= 0.055 && far_urr >= 0.455,
        "{near_urr} {far_urr}"
    );
    let hop_growth = far_urr - near_urr;
    assert!(
        (0.36..0.6).contains(&hop_growth),
        "UpstreamRR's request to the uRR grew by {hop_growth:.3} s from D = 0 to 200 ms; one \
         extra round trip is 0.4 s"
    );
    // One more round trip to the uRR over the kept-alive connection: 2D = 0.4 s more.
    let growth = startup(&far, "upstream-rr") - startup(&near, "upstream-rr");
    assert!(
        (0.2..0.6).contains(&growth),
        "UpstreamRR start-up grew by {growth:.3} s from D = 0 to 200 ms; one extra round trip is 0.4 s"
    );
    for policy in ["direct-rr", "direct-cs"] {
        let change = startup(&far, policy) - startup(&near, policy);
        assert!(
            change.abs() < 0.2,
            "{policy} start-up changed by {change:.3} s with D; one round trip is 0.4 s"
        );
    }
}

tests!(
    LAB =>
        upstream_rr_startup_grows_with_internet_delay_and_direct_policies_do_not;
);
