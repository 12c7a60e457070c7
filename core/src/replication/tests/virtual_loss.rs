//! p_c(Z_c)'s bounds.

use crate::replication::virtual_loss::{probability, q, z_star};

#[test]
fn p_is_a_probability_and_vanishes_above_z_star() {
    for replicas in [1u32, 5, 20, 100, 400] {
        for lambda in [0.0, 0.5, 9.0, 60.0] {
            for theta in [0.5, 1.0, 8.1, 30.0] {
                let star = z_star(replicas, lambda, theta);
                for z in 0..=replicas {
                    let p = probability(z, replicas, lambda, theta, 2.0);
                    assert!(
                        (0.0..=1.0).contains(&p),
                        "{z} {replicas} {lambda} {theta}: {p}"
                    );
                    if z as f64 > star {
                        assert_eq!(p, 0.0);
                    }
                }
            }
        }
    }
}

#[test]
fn p_is_the_ratio_of_z_stars_times_q_within_the_range() {
    // D = 100, λ = 9, θ = 8.1: z* ≈ 11.2; below it q ≤ 1 (the paper's coarse bound).
    let (replicas, lambda, theta) = (100, 9.0, 8.1);
    let star = z_star(replicas, lambda, theta);
    for z in 1..=11 {
        let qz = q(z, replicas, lambda, theta);
        assert!(qz <= 1.0, "{z}: {qz}");
        let p = probability(z, replicas, lambda, theta, 3.0);
        assert!((p - 3.0 / star * qz).abs() < 1e-15);
    }
    // The least popular content itself (z* = min z*) is subsampled by q alone.
    let p = probability(5, replicas, lambda, theta, star);
    assert!((p - q(5, replicas, lambda, theta)).abs() < 1e-15);
}

#[test]
fn no_virtual_loss_without_an_estimate_or_a_load() {
    assert_eq!(probability(1, 10, 1.0, 2.0, f64::NAN), 0.0);
    assert_eq!(probability(1, 10, 1.0, 0.0, 1.0), 0.0);
    assert_eq!(probability(1, 10, 1.0, f64::INFINITY, 1.0), 0.0);
    // D ≤ λ: z* ≤ 0.
    assert_eq!(probability(1, 5, 6.0, 2.0, 1.0), 0.0);
}
