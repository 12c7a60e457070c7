//! Price-aware request mapping (PARM): the share of each application's requests from each region
//! that each site serves, minimising latency plus Ψ × payment within a congestion band and the
//! applications' expected response times (papers/000, §4.2).

use super::feasibility::{self, Dims};
use super::measure::{site_load, total_latency};
use good_lp::{
    microlp, variable, Expression, ProblemVariables, ResolutionError, Solution, SolverModel,
};
use serde::{Deserialize, Serialize};

/// One PARM problem: what the SM modules measured, LDP's prices and the operator's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParmInput {
    /// λ_nl, `[n][l]`, in the same unit as capacity (bandwidth).
    pub demand: Vec<Vec<f64>>,
    /// t_lm, `[l][m]`.
    pub latency: Vec<Vec<f64>>,
    /// C_m.
    pub capacity: Vec<f64>,
    /// p_m.
    pub prices: Vec<f64>,
    /// Ψ, the weight of payment against latency in (4a); 0 makes PARM the price-unaware PURM.
    pub psi: f64,
    /// θ̄, the mean congestion of the previous period.
    pub theta_bar: f64,
    /// ξ, how far a site's congestion may stray from θ̄.
    pub xi: f64,
    /// t_n, each application's expected response time, in the unit of latency.
    pub deadline: Vec<f64>,
}

/// A solution: α_nlm, `[n][l][m]`, and the value of (4a) it reaches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mapping {
    pub alpha: Vec<Vec<Vec<f64>>>,
    pub objective: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ParmError {
    /// Malformed input (dimensions, NaN, negative or zero where not allowed): names the field.
    Input(String),
    /// No mapping satisfies the constraints; `family` names which: "(4b)/(5a)-(5b) site
    /// congestion band", "(4c) expected response time", or both together.
    Infeasible {
        family: String,
        detail: String,
    },
    Solver(String),
}

impl std::fmt::Display for ParmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParmError::Input(message) => write!(f, "PARM input: {message}"),
            ParmError::Infeasible { family, detail } => {
                write!(f, "PARM infeasible: {family}: {detail}")
            }
            ParmError::Solver(message) => write!(f, "PARM solver: {message}"),
        }
    }
}

impl std::error::Error for ParmError {}

/// PARM, problem (4a)–(4f) of the LDP/PARM paper (papers/000) with (4b) as (5a)–(5b), solved as
/// an LP with good_lp + microlp.
///
/// Variables α_nlm ∈ [0, 1] (4e, 4f). Objective (4a): Σ λ_nl α_nlm t_lm + Ψ Σ λ_nl α_nlm p_m,
/// divided by Σλ before it reaches the solver so its coefficients are of the order of a latency
/// whatever the demand's unit (the minimiser is the same; `Mapping::objective` is (4a) itself).
/// (5a)–(5b): θ̄ − ξ ≤ Σ_nl λ_nl α_nlm / C_m ≤ θ̄ + ξ for every site; (5a) is left out when
/// θ̄ − ξ ≤ 0, where no load can violate it. (4c) as printed: Σ_m Σ_l α_nlm t_lm / L ≤ t_n —
/// not weighted by λ, so a region with few requests counts as much as a busy one. (4d):
/// Σ_m α_nlm = 1.
///
/// Infeasibility is checked per family before solving (see `feasibility`), so the error names
/// the family at fault; if the solver still finds none, the two families conflict together.
pub fn solve(input: &ParmInput) -> Result<Mapping, ParmError> {
    let dims = feasibility::validate(input)?;
    if let Some(error) = feasibility::diagnose(input) {
        return Err(error);
    }
    let Dims {
        applications,
        regions,
        sites,
    } = dims;
    let total: f64 = input.demand.iter().flatten().sum();
    let scale = if total > 0.0 { 1.0 / total } else { 1.0 };

    let mut vars = ProblemVariables::new();
    // α_nlm at index (n·L + l)·M + m.
    let columns = vars.add_vector(variable().min(0.0).max(1.0), applications * regions * sites);
    let at = |n: usize, l: usize, m: usize| columns[(n * regions + l) * sites + m];

    let mut objective = Expression::with_capacity(columns.len());
    for (n, app_demand) in input.demand.iter().enumerate() {
        for (l, &lambda) in app_demand.iter().enumerate() {
            for m in 0..sites {
                let cost = lambda * (input.latency[l][m] + input.psi * input.prices[m]);
                objective.add_mul(cost * scale, at(n, l, m));
            }
        }
    }
    let mut model = vars.minimise(objective).using(microlp);

    // (4d): each (application, region)'s shares sum to one.
    for n in 0..applications {
        for l in 0..regions {
            let mut shares = Expression::with_capacity(sites);
            for m in 0..sites {
                shares.add_mul(1.0, at(n, l, m));
            }
            model.add_constraint(shares.eq(1.0));
        }
    }
    // (5a)–(5b): every site's congestion within θ̄ ± ξ.
    let low = input.theta_bar - input.xi;
    let high = input.theta_bar + input.xi;
    for (m, &capacity) in input.capacity.iter().enumerate() {
        let mut congestion = Expression::with_capacity(applications * regions);
        for (n, app_demand) in input.demand.iter().enumerate() {
            for (l, &lambda) in app_demand.iter().enumerate() {
                if lambda > 0.0 {
                    congestion.add_mul(lambda / capacity, at(n, l, m));
                }
            }
        }
        if low > 0.0 {
            model.add_constraint(congestion.clone().geq(low));
        }
        model.add_constraint(congestion.leq(high));
    }
    // (4c), unweighted as printed.
    for (n, &deadline) in input.deadline.iter().enumerate() {
        let mut response = Expression::with_capacity(regions * sites);
        for (l, row) in input.latency.iter().enumerate() {
            for (m, &t) in row.iter().enumerate() {
                response.add_mul(t / regions as f64, at(n, l, m));
            }
        }
        model.add_constraint(response.leq(deadline));
    }

    let solution = match model.solve() {
        Ok(solution) => solution,
        Err(ResolutionError::Infeasible) => return Err(feasibility::jointly_infeasible()),
        Err(other) => return Err(ParmError::Solver(other.to_string())),
    };
    // The simplex may return a share a rounding error outside [0, 1].
    let alpha: Vec<Vec<Vec<f64>>> = (0..applications)
        .map(|n| {
            (0..regions)
                .map(|l| {
                    (0..sites)
                        .map(|m| solution.value(at(n, l, m)).clamp(0.0, 1.0))
                        .collect()
                })
                .collect()
        })
        .collect();
    Ok(Mapping {
        objective: objective_value(input, &alpha),
        alpha,
    })
}

/// The value of (4a) for a mapping: Σ λ α t + Ψ Σ λ α p.
pub fn objective_value(input: &ParmInput, alpha: &[Vec<Vec<f64>>]) -> f64 {
    let latency = total_latency(&input.demand, &input.latency, alpha);
    let payment: f64 = site_load(&input.demand, alpha)
        .iter()
        .zip(&input.prices)
        .map(|(d, p)| d * p)
        .sum();
    latency + input.psi * payment
}
