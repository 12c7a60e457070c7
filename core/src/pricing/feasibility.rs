//! Why a PARM problem has no solution: its input is malformed, or one family of constraints
//! cannot be met, or two families cannot be met together. Checked by closed-form tests so the
//! error names the constraint an operator must relax rather than just "infeasible".

use super::parm::{ParmError, ParmInput};

/// The name of constraint family (4b), written as (5a)–(5b).
pub const BAND: &str = "(4b)/(5a)-(5b) site congestion band";
/// The name of constraint family (4c).
pub const RESPONSE_TIME: &str = "(4c) expected response time";

/// Relative slack of the closed-form tests: input exactly on a boundary (θ̄ = Σλ/ΣC with ξ = 0)
/// is left to the solver rather than declared infeasible by a rounding error.
const SLACK: f64 = 1e-9;

/// The problem's dimensions: applications N, regions L, sites M.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub applications: usize,
    pub regions: usize,
    pub sites: usize,
}

/// Checks shapes and values; `ParmError::Input` names the first bad field.
pub fn validate(input: &ParmInput) -> Result<Dims, ParmError> {
    let bad = |message: String| Err(ParmError::Input(message));
    let applications = input.demand.len();
    let regions = input.latency.len();
    let sites = input.capacity.len();
    if applications == 0 {
        return bad("demand: no applications (N = 0)".into());
    }
    if regions == 0 {
        return bad("latency: no regions (L = 0)".into());
    }
    if sites == 0 {
        return bad("capacity: no sites (M = 0)".into());
    }
    for (n, row) in input.demand.iter().enumerate() {
        if row.len() != regions {
            return bad(format!(
                "demand[{n}]: {} regions, but latency has {regions} rows (one per region)",
                row.len()
            ));
        }
        if let Some((l, v)) = row.iter().enumerate().find(|(_, v)| !non_negative(**v)) {
            return bad(format!("demand[{n}][{l}]: must be finite and ≥ 0, got {v}"));
        }
    }
    for (l, row) in input.latency.iter().enumerate() {
        if row.len() != sites {
            return bad(format!(
                "latency[{l}]: {} sites, but capacity has {sites} (one per site)",
                row.len()
            ));
        }
        if let Some((m, v)) = row.iter().enumerate().find(|(_, v)| !non_negative(**v)) {
            return bad(format!(
                "latency[{l}][{m}]: must be finite and ≥ 0, got {v}"
            ));
        }
    }
    if let Some((m, c)) = input
        .capacity
        .iter()
        .enumerate()
        .find(|(_, c)| !(c.is_finite() && **c > 0.0))
    {
        return bad(format!("capacity[{m}]: must be finite and > 0, got {c}"));
    }
    if input.prices.len() != sites {
        return bad(format!(
            "prices: {} prices for {sites} sites",
            input.prices.len()
        ));
    }
    if let Some((m, p)) = input
        .prices
        .iter()
        .enumerate()
        .find(|(_, p)| !non_negative(**p))
    {
        return bad(format!("prices[{m}]: must be finite and ≥ 0, got {p}"));
    }
    if input.deadline.len() != applications {
        return bad(format!(
            "deadline: {} deadlines for {applications} applications",
            input.deadline.len()
        ));
    }
    if let Some((n, t)) = input
        .deadline
        .iter()
        .enumerate()
        .find(|(_, t)| !non_negative(**t))
    {
        return bad(format!("deadline[{n}]: must be finite and ≥ 0, got {t}"));
    }
    for (name, value) in [
        ("psi", input.psi),
        ("theta_bar", input.theta_bar),
        ("xi", input.xi),
    ] {
        if !non_negative(value) {
            return bad(format!("{name}: must be finite and ≥ 0, got {value}"));
        }
    }
    Ok(Dims {
        applications,
        regions,
        sites,
    })
}

fn non_negative(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

/// (4b) with (4d)–(4e) alone: any site can take any share of any demand, so the sites' loads
/// can be any split of Σλ, and a split within every site's [C·max(0, θ̄ − ξ), C·(θ̄ + ξ)] exists
/// iff Σλ lies between the sums of those bounds. `Some(detail)` when it does not.
pub fn band_infeasibility(input: &ParmInput) -> Option<String> {
    let total: f64 = input.demand.iter().flatten().sum();
    let capacity: f64 = input.capacity.iter().sum();
    let low = capacity * (input.theta_bar - input.xi).max(0.0);
    let high = capacity * (input.theta_bar + input.xi);
    let slack = SLACK * total.max(high).max(1.0);
    if total < low - slack || total > high + slack {
        Some(format!(
            "the total demand Σλ = {total} must lie within [ΣC·max(0, θ̄ − ξ), ΣC·(θ̄ + ξ)] = \
             [{low}, {high}] (θ̄ = {}, ξ = {}, ΣC = {capacity}) for every site to stay within \
             θ̄ ± ξ",
            input.theta_bar, input.xi
        ))
    } else {
        None
    }
}

/// (4c) with (4d)–(4e) alone: application n's left-hand side is smallest when every region
/// uses its fastest site, (Σ_l min_m t_lm) / L; feasible iff that is ≤ t_n for every n.
/// `Some(detail)` naming each application that cannot meet its deadline.
pub fn response_time_infeasibility(input: &ParmInput) -> Option<String> {
    let regions = input.latency.len().max(1) as f64;
    let best = input
        .latency
        .iter()
        .map(|row| row.iter().copied().fold(f64::INFINITY, f64::min))
        .sum::<f64>()
        / regions;
    let failing: Vec<String> = input
        .deadline
        .iter()
        .enumerate()
        .filter(|(_, &t)| best > t + SLACK * t.max(1.0))
        .map(|(n, t)| {
            format!(
                "application {n}: its best possible (Σ_l min_m t_lm)/L = {best} exceeds its \
                 expected response time t_n = {t}"
            )
        })
        .collect();
    (!failing.is_empty()).then(|| failing.join("; "))
}

/// The error for a well-formed input that violates a family on its own; `None` if each family
/// alone can be met.
pub fn diagnose(input: &ParmInput) -> Option<ParmError> {
    match (
        band_infeasibility(input),
        response_time_infeasibility(input),
    ) {
        (None, None) => None,
        (Some(detail), None) => Some(ParmError::Infeasible {
            family: BAND.into(),
            detail,
        }),
        (None, Some(detail)) => Some(ParmError::Infeasible {
            family: RESPONSE_TIME.into(),
            detail,
        }),
        (Some(band), Some(response)) => Some(ParmError::Infeasible {
            family: both(),
            detail: format!("each is infeasible on its own: {band}; and {response}"),
        }),
    }
}

/// The error when each family alone can be met but the solver found no mapping meeting both.
pub fn jointly_infeasible() -> ParmError {
    ParmError::Infeasible {
        family: both(),
        detail: "each family can be met on its own, but no mapping meets both: keeping every \
                 site within θ̄ ± ξ forces requests onto sites too slow for some application's \
                 t_n (widen ξ or relax t_n)"
            .into(),
    }
}

/// Both families' names together.
pub fn both() -> String {
    format!("{BAND} and {RESPONSE_TIME} together")
}
