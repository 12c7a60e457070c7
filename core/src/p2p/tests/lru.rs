//! Lemma 1 (L_m = max{0, 1 − 1/η_m}) and Lemma 3 (LRU caches reach ρ_j = B·π_j) in the
//! peer-level simulation, where Theorem 1's max flow decides what peers serve from LRU caches.

use crate::p2p::cache::{che_distribution, optimal_distribution};
use crate::p2p::sim::{simulate, SimConfig, SimResult};
use crate::p2p::{Isp, Policy, System};

/// Two ISPs of 300 peers, one with twice the upload its peers ask for, one short of it.
fn run() -> (System, SimResult) {
    let isps = vec![
        Isp {
            peers: 300,
            upload: 1.5,
        },
        Isp {
            peers: 300,
            upload: 0.5,
        },
    ];
    let system = System::new(isps, 10, 0.2, &crate::zipf::weights(100, 0.8)).unwrap();
    let local = Policy::Local
        .matrix(&[1.0, 1.0], &system.capacities())
        .unwrap();
    let config = SimConfig {
        dispatch: local,
        slots: 600,
        warmup: 100,
        sample_every: 5,
        seed: 1,
    };
    let result = simulate(&system, &config).unwrap();
    (system, result)
}

#[test]
fn lemma_1_gives_each_isps_miss_rate() {
    let (system, result) = run();
    let capacities = system.capacities();
    for (m, capacity) in capacities.iter().enumerate() {
        let eta = result.requests[m] / capacity;
        let lemma = (1.0 - 1.0 / eta).max(0.0);
        // ~9·10⁴ downloads per ISP: sampling error well under 0.005; caches add misses only
        // where a chunk's holders are all busy, which is rare this far from η = 1.
        assert!(
            (result.miss[m] - lemma).abs() < 0.01,
            "ISP {m}: η = {eta:.3}, simulated L = {:.4}, Lemma 1 {lemma:.4}",
            result.miss[m]
        );
    }
    assert!(result.requests.iter().zip(&capacities).any(|(r, c)| r > c));
}

#[test]
fn lru_caches_follow_che_not_exactly_b_pi() {
    let (system, result) = run();
    let b = system.cache() as f64;
    // Every cache is full: Σ_j ρ_j = B, while Σ_j B·π_j = B·(1 − π_0).
    assert!((result.rho.iter().sum::<f64>() - b).abs() < 1e-9);
    let che = che_distribution(&system);
    for (j, (rho, che)) in result.rho.iter().zip(&che).enumerate() {
        assert!(
            (rho - che).abs() < 0.02,
            "chunk {}: ρ = {rho:.4}, Che {che:.4}",
            j + 1
        );
    }
    // Lemma 3's B·π_j is near for the middle of the catalogue and off at both ends: the most
    // popular chunk cannot be on more than every peer, and the rest share what it leaves.
    let lemma = optimal_distribution(&system);
    assert!(lemma[0] > result.rho[0] + 0.1);
    let tail = 50..100;
    let ratio =
        tail.clone().map(|j| result.rho[j]).sum::<f64>() / tail.map(|j| lemma[j]).sum::<f64>();
    assert!(ratio > 1.25, "tail ρ / B·π_j = {ratio:.3}");
}
