//! The simulator against the Erlang loss formula, and its determinism.

use crate::replication::popularity::zipf_farm;
use crate::replication::{initial, scheme_of, simulate, Replication, SimConfig, System};

fn config(replication: Vec<u32>, duration: f64, seed: u64) -> SimConfig {
    SimConfig {
        replication,
        scheme: None,
        duration,
        warmup: 10.0,
        sample_every: duration / 10.0,
        changes: Vec::new(),
        lfl_tau: 100.0,
        seed,
    }
}

/// Erlang's B formula: the loss probability of M/M/m/m at offered load a.
fn erlang_b(m: usize, a: f64) -> f64 {
    (1..=m).fold(1.0, |b, k| a * b / (k as f64 + a * b))
}

#[test]
fn one_content_everywhere_is_an_erlang_loss_system() {
    // n = 1, d = 1: m servers all storing the content, an M/M/m/m queue. 10 servers at a = 8:
    // B = 0.1217. 20,000 time units are 160,000 requests; the loss share's standard error,
    // with the correlation of losses in blocked periods, is about 0.003 (2.5%), so 8% is
    // more than 3 standard errors (and the run is seeded: it passes or fails every time).
    for (m, a) in [(10, 8.0), (30, 20.0)] {
        let system = System::new(vec![a], m, 1).unwrap();
        let result = simulate(&system, &config(vec![m as u32], 20_000.0, 7)).unwrap();
        let want = erlang_b(m, a);
        let got = result.inefficiency();
        assert!(
            (got - want).abs() < 0.08 * want,
            "m = {m}, a = {a}: {got} vs {want}"
        );
        // Z (idle servers) is m minus an Erlang queue's occupancy: E[Z] = m − a(1 − B).
        let z = result.mean_available(0);
        let want_z = m as f64 - a * (1.0 - want);
        assert!((z - want_z).abs() < 0.03 * want_z, "{z} vs {want_z}");
    }
}

#[test]
fn a_seed_gives_one_run() {
    let system = zipf_farm(0.8).unwrap();
    let replication: Replication = "lrl-virtual".parse().unwrap();
    let mut c = config(initial(&system, replication).unwrap(), 50.0, 11);
    c.scheme = scheme_of(replication);
    let (a, b) = (
        simulate(&system, &c).unwrap(),
        simulate(&system, &c).unwrap(),
    );
    assert_eq!(a, b);
    c.seed = 12;
    assert_ne!(simulate(&system, &c).unwrap().losses, a.losses);
    assert!(a.copies_after_virtual > 0, "virtual losses made no copy");
}

#[test]
fn adaptive_runs_keep_the_slots_and_replicas_consistent() {
    let system = zipf_farm(1.2).unwrap();
    for name in ["random", "lrl", "lfl", "random-virtual", "lfl-virtual"] {
        let replication: Replication = name.parse().unwrap();
        let start = initial(&system, replication).unwrap();
        let mut c = config(start.clone(), 40.0, 5);
        c.scheme = scheme_of(replication);
        let result = simulate(&system, &c).unwrap();
        let before: u32 = start.iter().sum();
        assert_eq!(result.final_replicas.iter().sum::<u32>(), before, "{name}");
        assert!(result
            .final_replicas
            .iter()
            .all(|&r| r <= system.m() as u32));
        assert!(result.copies_after_loss > 0, "{name}");
    }
}

#[test]
fn bad_run_settings_are_refused_by_name() {
    let system = zipf_farm(0.8).unwrap();
    let start = initial(&system, Replication::Proportional).unwrap();
    let mut c = config(start, 100.0, 1);
    c.warmup = 200.0;
    assert!(simulate(&system, &c)
        .unwrap_err()
        .to_string()
        .starts_with("warmup:"));
    c.warmup = 0.0;
    c.replication[0] += 5000;
    assert!(simulate(&system, &c)
        .unwrap_err()
        .to_string()
        .starts_with("replication:"));
}
