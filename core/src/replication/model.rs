//! Section IV's loss-network approximation: the distribution of a content's available replicas
//! Z_c (Equation 1), its loss rate γ_c (Equation 2, and the exact product form it
//! approximates), and the fixed point in γ̄ that ties them to the effective load.

use super::error::{invalid, ParamError};
use super::gamma::{ln_gamma, EULER};
use super::system::System;
use serde::Serialize;

/// θ_eff = ρ_eff / (1 − ρ_eff) · (d − 1)/d: the rate, per available replica, at which
/// requests for other contents take a server that also stores c (Section IV-A).
pub fn theta_eff(rho_eff: f64, d: usize) -> f64 {
    rho_eff / (1.0 - rho_eff) * (d as f64 - 1.0) / d as f64
}

/// Equation (1): π(Z_c = z) for z = 0..=D_c, from the local balance
/// (D_c − z) π(z) = (λ_c + (z+1) θ_eff) π(z+1), normalized exactly (summed in logarithms,
/// as the products overflow for a thousand replicas).
pub fn z_distribution(replicas: u32, lambda: f64, theta: f64) -> Vec<f64> {
    let d = replicas as usize;
    // ln π(z) − ln π(D), from z = D down to 0.
    let mut log = vec![0.0; d + 1];
    for z in (0..d).rev() {
        log[z] = log[z + 1] + (lambda + (z as f64 + 1.0) * theta).ln() - ((d - z) as f64).ln();
    }
    let top = log.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = log.iter().map(|l| (l - top).exp()).sum();
    log.iter().map(|l| (l - top).exp() / total).collect()
}

/// γ_c = λ_c π(Z_c = 0) with π from Equation (1) exactly normalized (the product form).
pub fn loss_exact(replicas: u32, lambda: f64, theta: f64) -> f64 {
    lambda * z_distribution(replicas, lambda, theta)[0]
}

/// Equation (2): γ_c ≈ λ_c C(λ_c) (1 + 1/θ_eff)^(−D_c) D_c^(λ_c/θ_eff), with
/// C(λ_c) = e^(−C_Euler λ_c/θ_eff) / ((1+θ_eff)^(λ_c/θ_eff) Γ(1 + λ_c/θ_eff)). Capped at λ_c:
/// for few replicas the asymptotic form can exceed the request rate, which no loss rate can.
/// With θ_eff = 0 (d = 1: no other content shares a server) the form has no limit to take, and
/// the exact one is returned.
pub fn loss_asymptotic(replicas: u32, lambda: f64, theta: f64) -> f64 {
    if replicas == 0 || lambda == 0.0 {
        return lambda;
    }
    if theta <= 0.0 {
        return loss_exact(replicas, lambda, theta);
    }
    let x = lambda / theta;
    let d = replicas as f64;
    let log_c = -EULER * x - x * (1.0 + theta).ln() - ln_gamma(1.0 + x);
    let log = log_c - d * (1.0 + 1.0 / theta).ln() + x * d.ln();
    (lambda * log.exp()).min(lambda)
}

/// Which form of γ_c the fixed point uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LossForm {
    /// λ_c π(Z_c = 0) with Equation (1) normalized exactly.
    Exact,
    /// Equation (2).
    Asymptotic,
}

impl LossForm {
    pub fn loss(self, replicas: u32, lambda: f64, theta: f64) -> f64 {
        match self {
            LossForm::Exact => loss_exact(replicas, lambda, theta),
            LossForm::Asymptotic => loss_asymptotic(replicas, lambda, theta),
        }
    }
}

/// The model's answer for one replication.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FixedPoint {
    /// Average loss rate γ̄ (over contents).
    pub gamma_bar: f64,
    /// γ̄ / λ̄, the paper's inefficiency.
    pub inefficiency: f64,
    pub rho_eff: f64,
    pub theta_eff: f64,
    /// γ_c per content.
    pub gammas: Vec<f64>,
    /// Iterations until γ̄ moved by less than 1e-12 of itself.
    pub iterations: usize,
}

/// The fixed point in γ̄ of Section IV-A: γ̄ → ρ_eff = ρ(1 − γ̄/λ̄) → θ_eff → γ_c → γ̄. The map
/// is decreasing, so its iterates alternate around the fixed point and bracket it; an iterate
/// that leaves the bracket, or that has not halved it in two iterations, is replaced by the
/// bracket's midpoint, which keeps the paper's simple iteration convergent where the map is
/// steep (its slope near or below −1, as in small farms).
pub fn fixed_point(
    system: &System,
    replication: &[u32],
    form: LossForm,
) -> Result<FixedPoint, ParamError> {
    system.check_replication(replication)?;
    let lambda_bar = system.mean_lambda();
    let evaluate = |gamma_bar: f64| {
        let rho_eff = system.rho() * (1.0 - gamma_bar / lambda_bar);
        let theta = theta_eff(rho_eff, system.d());
        let gammas: Vec<f64> = (replication.iter().zip(system.lambdas()))
            .map(|(&r, &l)| form.loss(r, l, theta))
            .collect();
        let out = gammas.iter().sum::<f64>() / gammas.len() as f64;
        (out, rho_eff, theta, gammas)
    };
    let (mut lo, mut hi) = (0.0, lambda_bar);
    let mut x = 0.0;
    // The bracket's width two iterations back: where the map's slope is near −1 its iterates
    // alternate without closing in, and then the midpoint is taken instead.
    let mut widths = [hi - lo; 2];
    for iterations in 1..=200 {
        let (next, rho_eff, theta_eff, gammas) = evaluate(x);
        if (next - x).abs() <= 1e-12 * next.max(1e-300) {
            return Ok(FixedPoint {
                gamma_bar: next,
                inefficiency: next / lambda_bar,
                rho_eff,
                theta_eff,
                gammas,
                iterations,
            });
        }
        if next > x {
            lo = x;
        } else {
            hi = x;
        }
        let slow = hi - lo > widths[0] / 2.0;
        widths = [widths[1], hi - lo];
        x = if next > lo && next < hi && !slow {
            next
        } else {
            (lo + hi) / 2.0
        };
    }
    Err(invalid(
        "fixed point",
        "γ̄ did not converge in 200 iterations",
    ))
}

/// E[Z_c] under Equation (1).
pub fn mean_available(distribution: &[f64]) -> f64 {
    distribution
        .iter()
        .enumerate()
        .map(|(z, p)| z as f64 * p)
        .sum()
}
