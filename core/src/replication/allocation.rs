//! Static replications: how many replicas D_c each content gets, as integers with
//! Σ_c D_c ≤ m·d and no content on more than 95% of the servers.

use super::error::ParamError;
use super::model::{fixed_point, theta_eff, LossForm};
use super::system::System;

/// The most servers one content may occupy: 95% of them (Section IV-C caps proportional
/// replication there, as the most popular Zipf contents would otherwise need more than m).
pub fn cap(system: &System) -> u32 {
    ((system.m() as f64 * 0.95).floor() as u32).max(1)
}

/// Proportional replication (Section IV-C): D_c ∝ λ_c, each capped at 95% of the servers,
/// the slots a capped content cannot use shared among the others in proportion.
pub fn proportional(system: &System) -> Vec<u32> {
    let lambdas = system.lambdas();
    let top = lambdas.iter().cloned().fold(0.0, f64::max);
    let smallest = (lambdas.iter().cloned())
        .filter(|&l| l > 0.0)
        .fold(f64::INFINITY, f64::min);
    // Scale factors from 0 (nothing stored) to one that saturates every content with λ_c > 0.
    let hi = if top > 0.0 {
        cap(system) as f64 / smallest * 2.0
    } else {
        0.0
    };
    fill(system, 0.0, hi, |s, c| s * lambdas[c])
}

/// Optimized replication, Equation (5):
/// D_c = D̄ + (λ_c − λ̄) ln D̄ / (θ_eff ln(1 + 1/θ_eff)), clamped to [0, 95% of m] and shifted
/// by a constant so the slots a clamped content gives up (or takes) go to the others; θ_eff
/// comes from the fixed point of the replication it yields, found by repeating until the
/// replication no longer changes (at most 20 rounds).
pub fn optimized(system: &System) -> Result<Vec<u32>, ParamError> {
    let mut theta = theta_eff(system.rho(), system.d());
    let mut replication = Vec::new();
    for _ in 0..20 {
        let next = equation_5(system, theta);
        if next == replication {
            break;
        }
        replication = next;
        theta = fixed_point(system, &replication, LossForm::Asymptotic)?.theta_eff;
    }
    Ok(replication)
}

/// Equation (5) for a given θ_eff, clamped and rounded as `optimized` says.
fn equation_5(system: &System, theta: f64) -> Vec<u32> {
    let d_bar = system.mean_replicas();
    let lambda_bar = system.mean_lambda();
    let slope = d_bar.ln() / (theta * (1.0 + 1.0 / theta).ln());
    let target: Vec<f64> = (system.lambdas().iter())
        .map(|l| d_bar + (l - lambda_bar) * slope)
        .collect();
    let spread = target.iter().map(|t| t.abs()).fold(0.0, f64::max);
    let reach = spread + cap(system) as f64;
    fill(system, -reach, reach, |shift, c| target[c] + shift)
}

/// Finds by bisection the parameter t in [lo, hi] at which Σ_c clamp(shape(t, c)) fills the
/// m·d slots (shape increasing in t), then rounds to integers: floors, then one more replica to
/// the largest remainders while slots are left. Σ D_c ≤ m·d and D_c ≤ cap always hold.
fn fill(system: &System, lo: f64, hi: f64, shape: impl Fn(f64, usize) -> f64) -> Vec<u32> {
    let n = system.n();
    let cap = cap(system) as f64;
    let budget = (system.m() * system.d()) as f64;
    let values = |t: f64| -> Vec<f64> { (0..n).map(|c| shape(t, c).clamp(0.0, cap)).collect() };
    let (mut lo, mut hi) = (lo, hi);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if values(mid).iter().sum::<f64>() > budget {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let real = values(lo);
    let mut counts: Vec<u32> = real.iter().map(|v| v.floor() as u32).collect();
    let mut left = budget as u64 - counts.iter().map(|&c| c as u64).sum::<u64>();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        let (fa, fb) = (real[a] - real[a].floor(), real[b] - real[b].floor());
        fb.total_cmp(&fa).then(a.cmp(&b))
    });
    for c in order {
        if left == 0 {
            break;
        }
        if (counts[c] as f64) < cap && real[c] > counts[c] as f64 {
            counts[c] += 1;
            left -= 1;
        }
    }
    counts
}
