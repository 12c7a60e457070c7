//! Equations (1) and (2) against hand-computed chains, and the fixed point.

use crate::replication::allocation::proportional;
use crate::replication::gamma::{ln_gamma, EULER};
use crate::replication::model::*;
use crate::replication::popularity::{zipf, zipf_farm};
use crate::replication::System;

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

#[test]
fn equation_1_matches_a_hand_computed_chain() {
    // D = 2, λ = 1, θ = 1: 2π(0) = (1+1)π(1) and 1π(1) = (1+2)π(2), so π ∝ (3, 3, 1).
    let p = z_distribution(2, 1.0, 1.0);
    for (got, want) in p.iter().zip([3.0 / 7.0, 3.0 / 7.0, 1.0 / 7.0]) {
        assert!(close(*got, want, 1e-12), "{p:?}");
    }
    assert!(close(loss_exact(2, 1.0, 1.0), 3.0 / 7.0, 1e-12));
    // D = 1, λ = 2, θ = 0.5: π(0) = 2.5 π(1).
    assert!(close(z_distribution(1, 2.0, 0.5)[0], 2.5 / 3.5, 1e-12));
    // No replica: every request is lost.
    assert_eq!(loss_exact(0, 3.0, 1.0), 3.0);
}

#[test]
fn equation_1_stays_finite_for_a_thousand_replicas() {
    let p = z_distribution(1900, 400.0, 8.1);
    assert!(close(p.iter().sum::<f64>(), 1.0, 1e-9));
    assert!(p.iter().all(|x| x.is_finite() && *x >= 0.0));
}

#[test]
fn equation_2_by_hand_and_its_limit() {
    // D = 1, λ = θ = 1: x = 1, C = e^(−C_E) / (2 Γ(2)), γ = C · (1 + 1)^(−1).
    assert!(close(
        loss_asymptotic(1, 1.0, 1.0),
        (-EULER).exp() / 4.0,
        1e-12
    ));
    // For many replicas Equation (2) tends to e^(−C_Euler λ/θ) times the exact form: D^x stands
    // for e^(x H_D) ≈ D^x e^(x C_Euler), and C(λ) takes e^(−x C_Euler) once more.
    for (d, lambda) in [(200, 9.0), (500, 9.0), (500, 1.0)] {
        let ratio = loss_asymptotic(d, lambda, 8.1) / loss_exact(d, lambda, 8.1);
        assert!(
            close(ratio, (-EULER * lambda / 8.1).exp(), 0.02),
            "{d} {lambda}: {ratio}"
        );
    }
    // Never above the request rate.
    assert!(loss_asymptotic(1, 5.0, 0.1) <= 5.0);
}

#[test]
fn ln_gamma_knows_factorials_and_half() {
    assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-12));
    assert!(close(
        ln_gamma(0.5),
        std::f64::consts::PI.sqrt().ln(),
        1e-12
    ));
    assert!(close(ln_gamma(0.1).exp(), 9.513_507_698_668_732, 1e-10));
}

#[test]
fn the_fixed_point_converges_and_is_one() {
    let system = zipf_farm(0.8).unwrap();
    let replication = proportional(&system);
    for form in [LossForm::Exact, LossForm::Asymptotic] {
        let fp = fixed_point(&system, &replication, form).unwrap();
        assert!(fp.iterations < 40, "{form:?}: {} iterations", fp.iterations);
        // Feeding γ̄ back in gives γ̄ again.
        let rho_eff = system.rho() * (1.0 - fp.gamma_bar / system.mean_lambda());
        let theta = theta_eff(rho_eff, system.d());
        let again: f64 = (replication.iter().zip(system.lambdas()))
            .map(|(&r, &l)| form.loss(r, l, theta))
            .sum::<f64>()
            / system.n() as f64;
        assert!(close(again, fp.gamma_bar, 1e-9), "{form:?}");
        assert!(fp.inefficiency > 0.0 && fp.inefficiency < 0.1);
    }
}

#[test]
fn the_fixed_point_refuses_a_replication_of_the_wrong_size() {
    let system = zipf_farm(0.8).unwrap();
    let error = fixed_point(&system, &[1, 2], LossForm::Exact).unwrap_err();
    assert!(error.to_string().starts_with("replication:"), "{error}");
}

/// In a small, loaded farm the map's slope is near −1 and its iterates alternate without
/// closing in (n = 60, m = 24, d = 6, ρ = 0.9 ran 200 iterations without converging); the
/// bracket's midpoint then takes over and the fixed point is found, and Eq. 5 with it.
#[test]
fn the_fixed_point_converges_in_a_small_loaded_farm() {
    let system = System::new(zipf(60, 0.8, 0.9 * 24.0 / 60.0), 24, 6).unwrap();
    let optimized = crate::replication::allocation::optimized(&system).unwrap();
    let fp = fixed_point(&system, &optimized, LossForm::Asymptotic).unwrap();
    assert!(fp.iterations < 200);
    let rho_eff = system.rho() * (1.0 - fp.gamma_bar / system.mean_lambda());
    let again: f64 = (optimized.iter().zip(system.lambdas()))
        .map(|(&r, &l)| LossForm::Asymptotic.loss(r, l, theta_eff(rho_eff, system.d())))
        .sum::<f64>()
        / system.n() as f64;
    assert!(close(again, fp.gamma_bar, 1e-9));
}
