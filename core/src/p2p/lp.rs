//! The trade-off between cloud bandwidth and inter-ISP traffic as a linear program (good_lp +
//! microlp). Its input and solution serialize to JSON so another solver can check them.
//!
//! Variables f_lm ≥ 0: the rate of ISP l's requests that peers of ISP m serve. Constraints:
//! Σ_m f_lm ≤ r_l (no more than l asks), Σ_l f_lm ≤ C_m = U_m·N_m·(1 − π_0) (no more than m's
//! online peers upload), and, when capped, Σ_m Σ_{l≠m} f_lm ≤ T_cap. The cloud serves the
//! rest: cloud = Σ_l r_l − Σ_lm f_lm. `minimum_cloud` minimises cloud + ε·inter (ε small, so
//! that of the flows with the least cloud bandwidth it takes one without pointless crossings);
//! `minimum_inter_isp` then minimises the inter-ISP traffic among flows whose cloud bandwidth
//! is the minimum — Theorem 2's T*.

use super::error::{non_negative, positive, P2pError};
use good_lp::{microlp, variable, Expression, ProblemVariables, Solution, SolverModel};
use serde::{Deserialize, Serialize};

/// One LP's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TradeoffInput {
    /// r_l, requests per unit time from each ISP.
    pub requests: Vec<f64>,
    /// C_m = U_m·N_m·(1 − π_0).
    pub capacities: Vec<f64>,
    /// T_cap, the most inter-ISP traffic allowed; none: uncapped.
    pub inter_isp_cap: Option<f64>,
}

/// One LP's solution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TradeoffSolution {
    /// f_lm, `[l][m]`.
    pub flows: Vec<Vec<f64>>,
    pub cloud_bandwidth: f64,
    pub inter_isp_traffic: f64,
}

impl TradeoffSolution {
    /// The dispatch that carries these flows: a_lm = f_lm / r_l to other ISPs, and the rest of
    /// l's requests (what l's peers serve and what they miss) to l itself.
    pub fn dispatch(&self, requests: &[f64]) -> Vec<Vec<f64>> {
        (self.flows.iter().zip(requests).enumerate())
            .map(|(l, (row, &r))| {
                let mut shares: Vec<f64> = (row.iter().enumerate())
                    .map(|(m, f)| if m == l || r <= 0.0 { 0.0 } else { f / r })
                    .collect();
                shares[l] = 1.0 - shares.iter().sum::<f64>();
                shares
            })
            .collect()
    }
}

/// The weight of inter-ISP traffic beside cloud bandwidth in `minimum_cloud`'s objective.
const EPSILON: f64 = 1e-6;

fn validate(input: &TradeoffInput) -> Result<(), P2pError> {
    if input.requests.is_empty() || input.requests.len() != input.capacities.len() {
        return Err(P2pError::invalid(
            "requests",
            format!(
                "{} request rates for {} ISPs' capacities",
                input.requests.len(),
                input.capacities.len()
            ),
        ));
    }
    for (m, (&r, &c)) in input.requests.iter().zip(&input.capacities).enumerate() {
        non_negative(&format!("requests of ISP {}", m + 1), r)?;
        positive(&format!("capacity of ISP {}", m + 1), c)?;
    }
    if let Some(cap) = input.inter_isp_cap {
        non_negative("inter_isp_cap", cap)?;
    }
    Ok(())
}

/// What one LP asks: the least cloud bandwidth under the cap, or the least inter-ISP traffic
/// at a given total served.
enum Goal {
    LeastCloud,
    LeastInterAt { served: f64 },
}

fn solve(input: &TradeoffInput, goal: Goal) -> Result<TradeoffSolution, P2pError> {
    validate(input)?;
    let isps = input.requests.len();
    let mut vars = ProblemVariables::new();
    let columns = vars.add_vector(variable().min(0.0), isps * isps);
    let f = |l: usize, m: usize| columns[l * isps + m];
    let served: Expression = columns.iter().sum();
    let inter: Expression = (0..isps)
        .flat_map(|l| (0..isps).filter(move |&m| m != l).map(move |m| (l, m)))
        .map(|(l, m)| f(l, m))
        .sum();
    let total: f64 = input.requests.iter().sum();
    // Both objectives divided by Σ r so the solver sees coefficients near 1 whatever the unit.
    let scale = 1.0 / total.max(1e-12);
    let objective = match goal {
        Goal::LeastCloud => (inter.clone() * EPSILON - served.clone()) * scale,
        Goal::LeastInterAt { .. } => inter.clone() * scale,
    };
    let mut model = vars.minimise(objective).using(microlp);
    for l in 0..isps {
        let asked: Expression = (0..isps).map(|m| f(l, m)).sum();
        model = model.with(asked.leq(input.requests[l]));
    }
    for m in 0..isps {
        let uploaded: Expression = (0..isps).map(|l| f(l, m)).sum();
        model = model.with(uploaded.leq(input.capacities[m]));
    }
    if let Some(cap) = input.inter_isp_cap {
        model = model.with(inter.clone().leq(cap));
    }
    if let Goal::LeastInterAt { served: at } = goal {
        model = model.with(served.clone().geq(at));
    }
    let solution = model.solve().map_err(|e| P2pError::Solver(e.to_string()))?;
    let flows: Vec<Vec<f64>> = (0..isps)
        .map(|l| {
            (0..isps)
                .map(|m| solution.value(f(l, m)).max(0.0))
                .collect()
        })
        .collect();
    let carried: f64 = flows.iter().flatten().sum();
    let crossing: f64 = (0..isps)
        .flat_map(|l| (0..isps).filter(move |&m| m != l).map(move |m| (l, m)))
        .map(|(l, m)| flows[l][m])
        .sum();
    Ok(TradeoffSolution {
        flows,
        cloud_bandwidth: (total - carried).max(0.0),
        inter_isp_traffic: crossing,
    })
}

/// The least cloud bandwidth under `input`'s inter-ISP cap.
pub fn minimum_cloud(input: &TradeoffInput) -> Result<TradeoffSolution, P2pError> {
    solve(input, Goal::LeastCloud)
}

/// Of the flows with the least cloud bandwidth (no cap), one with the least inter-ISP
/// traffic: the LP's T*.
pub fn minimum_inter_isp(
    requests: &[f64],
    capacities: &[f64],
) -> Result<TradeoffSolution, P2pError> {
    let uncapped = TradeoffInput {
        requests: requests.to_vec(),
        capacities: capacities.to_vec(),
        inter_isp_cap: None,
    };
    let least = minimum_cloud(&uncapped)?;
    let total: f64 = requests.iter().sum();
    // The served total the second LP must keep, a hair below the first's so that the
    // solver's rounding cannot make it infeasible.
    let served = (total - least.cloud_bandwidth) * (1.0 - 1e-9);
    solve(&uncapped, Goal::LeastInterAt { served })
}
