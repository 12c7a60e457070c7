//! Request dispatching among ISPs: the share a_lm of ISP l's chunk requests sent to peers of
//! ISP m, what a dispatch costs in cloud bandwidth and inter-ISP traffic when caches are
//! optimal (Lemma 1), and the dispatch of Theorem 2 that reaches the minimum cloud bandwidth
//! with the least inter-ISP traffic.

use super::error::{non_negative, positive, P2pError};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The dispatch policies a tracker can follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// a_ll = 1: every request stays in its ISP.
    Local,
    /// a_lm = C_m / Σ C: requests spread over all peers in proportion to their upload,
    /// whatever ISP they are in (a locality-unaware P2P system).
    Proportional,
    /// Theorem 2's a*_lm.
    Optimal,
}

impl Policy {
    pub const ALL: [Policy; 3] = [Policy::Local, Policy::Proportional, Policy::Optimal];

    pub fn name(self) -> &'static str {
        match self {
            Policy::Local => "local",
            Policy::Proportional => "proportional",
            Policy::Optimal => "optimal",
        }
    }

    /// The dispatch matrix `[l][m]` for ISPs with request rates `requests` (r_l) and peer
    /// upload `capacities` (U_m·N_m·(1 − π_0)).
    pub fn matrix(self, requests: &[f64], capacities: &[f64]) -> Result<Vec<Vec<f64>>, P2pError> {
        check(requests, capacities)?;
        let isps = requests.len();
        Ok(match self {
            Policy::Local => (0..isps)
                .map(|l| (0..isps).map(|m| f64::from(u8::from(l == m))).collect())
                .collect(),
            Policy::Proportional => {
                let total: f64 = capacities.iter().sum();
                let row: Vec<f64> = capacities.iter().map(|c| c / total).collect();
                vec![row; isps]
            }
            Policy::Optimal => optimal(requests, capacities),
        })
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = P2pError;

    fn from_str(name: &str) -> Result<Policy, P2pError> {
        (Policy::ALL.into_iter().find(|p| p.name() == name)).ok_or_else(|| {
            P2pError::invalid(
                "dispatch",
                format!("unknown policy `{name}` (expected local, proportional or optimal)"),
            )
        })
    }
}

/// Requests and capacities of the same length, requests ≥ 0 and capacities > 0.
fn check(requests: &[f64], capacities: &[f64]) -> Result<(), P2pError> {
    if requests.len() != capacities.len() || requests.is_empty() {
        return Err(P2pError::invalid(
            "requests",
            format!(
                "{} request rates for {} ISPs' capacities",
                requests.len(),
                capacities.len()
            ),
        ));
    }
    for (m, (&r, &c)) in requests.iter().zip(capacities).enumerate() {
        non_negative(&format!("requests of ISP {}", m + 1), r)?;
        positive(&format!("capacity of ISP {}", m + 1), c)?;
    }
    Ok(())
}

/// I_m = U_m·N_m·(1 − π_0) − r_m: an ISP's spare peer upload (negative: a deficit).
pub fn imbalance(requests: &[f64], capacities: &[f64]) -> Vec<f64> {
    capacities
        .iter()
        .zip(requests)
        .map(|(c, r)| c - r)
        .collect()
}

/// Σ_{I_m > 0} I_m and −Σ_{I_m < 0} I_m: the system's spare upload and its deficit.
fn surplus_and_deficit(imbalance: &[f64]) -> (f64, f64) {
    let surplus = imbalance.iter().filter(|&&i| i > 0.0).sum();
    let deficit = -imbalance.iter().filter(|&&i| i < 0.0).sum::<f64>();
    (surplus, deficit)
}

/// Theorem 2's a*_lm, both cases in one formula. Let S = Σ_{I_t > 0} I_t, D = −Σ_{I_s < 0} I_s
/// and k = min(1, S/D) (case 1, enough peer upload overall: S ≥ D and k = 1; case 2: k = S/D).
/// An ISP m with I_m ≥ 0 keeps its own requests (a*_mm = 1) and takes from each ISP l with
/// I_l < 0 the share a*_lm = k·(I_m/S)·(−I_l/r_l) of l's requests; an ISP l with I_l < 0 keeps
/// a*_ll = U_l·N_l·(1 − π_0)/r_l + (1 − k)·(−I_l/r_l) and sends nothing to other deficit ISPs.
/// Each row sums to 1: l's excess −I_l goes abroad in the share k and the rest stays, to miss.
fn optimal(requests: &[f64], capacities: &[f64]) -> Vec<Vec<f64>> {
    let imbalance = imbalance(requests, capacities);
    let (surplus, deficit) = surplus_and_deficit(&imbalance);
    let k = if deficit > 0.0 {
        (surplus / deficit).min(1.0)
    } else {
        1.0
    };
    let isps = requests.len();
    (0..isps)
        .map(|l| {
            let mut row = vec![0.0; isps];
            if imbalance[l] >= 0.0 {
                row[l] = 1.0;
                return row;
            }
            let excess = -imbalance[l] / requests[l];
            row[l] = capacities[l] / requests[l] + (1.0 - k) * excess;
            for m in (0..isps).filter(|&m| imbalance[m] > 0.0) {
                row[m] = k * imbalance[m] / surplus * excess;
            }
            row
        })
        .collect()
}

/// T*, the minimum inter-ISP traffic at the minimum cloud bandwidth (Theorem 2): the deficit
/// −Σ_{I_m < 0} I_m when peers have enough upload overall (case 1), the surplus
/// Σ_{I_m > 0} I_m when they do not (case 2); min(S, D) either way.
pub fn minimum_inter_isp(requests: &[f64], capacities: &[f64]) -> Result<f64, P2pError> {
    check(requests, capacities)?;
    let (surplus, deficit) = surplus_and_deficit(&imbalance(requests, capacities));
    Ok(surplus.min(deficit))
}

/// What a dispatch costs, per unit time, when every ISP's caches are optimal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// L_m, each ISP's chunk miss rate (Lemma 1).
    pub miss: Vec<f64>,
    /// Requests the cloud serves: Σ_m L_m·Σ_l a_lm·r_l.
    pub cloud_bandwidth: f64,
    /// Requests served by peers of another ISP: Σ_m (1 − L_m)·Σ_{l≠m} a_lm·r_l.
    pub inter_isp_traffic: f64,
}

/// Lemma 1: with optimal caches, ISP m misses L_m = max{0, 1 − 1/η_m} of the requests sent to
/// it, where η_m·U_m·N_m·(1 − π_0) = Σ_l a_lm·r_l (Lemma 1's N_m counts the online peers);
/// the cloud serves the misses and a miss crosses no ISP boundary between peers.
pub fn evaluate(
    dispatch: &[Vec<f64>],
    requests: &[f64],
    capacities: &[f64],
) -> Result<Outcome, P2pError> {
    check(requests, capacities)?;
    let isps = requests.len();
    if dispatch.len() != isps || dispatch.iter().any(|row| row.len() != isps) {
        return Err(P2pError::invalid(
            "dispatch",
            format!("must be {isps} rows of {isps} shares"),
        ));
    }
    for (l, row) in dispatch.iter().enumerate() {
        for &a in row {
            non_negative(&format!("dispatch share of ISP {}", l + 1), a)?;
        }
        let sum: f64 = row.iter().sum();
        if (sum - 1.0).abs() > 1e-9 {
            return Err(P2pError::invalid(
                format!("dispatch of ISP {}", l + 1),
                format!("shares sum to {sum}, not 1"),
            ));
        }
    }
    let mut outcome = Outcome {
        miss: Vec::with_capacity(isps),
        cloud_bandwidth: 0.0,
        inter_isp_traffic: 0.0,
    };
    for m in 0..isps {
        let load: f64 = (0..isps).map(|l| dispatch[l][m] * requests[l]).sum();
        let remote: f64 = (0..isps)
            .filter(|&l| l != m)
            .map(|l| dispatch[l][m] * requests[l])
            .sum();
        let miss = if load > capacities[m] {
            1.0 - capacities[m] / load
        } else {
            0.0
        };
        outcome.miss.push(miss);
        outcome.cloud_bandwidth += miss * load;
        outcome.inter_isp_traffic += (1.0 - miss) * remote;
    }
    Ok(outcome)
}
