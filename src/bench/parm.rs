//! `bench parm`: how long PARM's LP (papers/000, problem (4a)–(4f)) takes to solve with good_lp
//! and microlp, at the paper's size (Table 3: 3 applications × 10 regions × 10 sites) and at
//! 10 applications × 100 regions × 100 sites, the size a controller of a large telco CDN would
//! solve every T_PARM. No lab, no root: the LP is built from Section 5.1's traffic model.

use super::stats::median;
use super::{progress, BenchOptions, Report, Verdict};
use crate::lab::{Error, Result};
use crate::pricing::measure::{congestion, local_mapping, mean, site_load};
use crate::pricing::traffic::{self, capacity, demand, latencies};
use crate::pricing::{ldp, solve, LdpParams, ParmInput};
use crate::table::{num, Table};
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::time::Instant;

/// The target for the large instance, seconds.
const TARGET_S: f64 = 5.0;

/// Seed of the instances' users and latencies.
const SEED: u64 = 1;

/// Ψ and τ as in the paper's Section 5.2.2.
const PSI: f64 = 0.5;
const TAU: f64 = 0.15;

/// (applications, regions = sites, solves, solves with --quick); the last is the one judged.
const SIZES: [(usize, usize, usize, usize); 2] = [(3, 10, 21, 5), (10, 100, 3, 1)];

pub fn run(options: &BenchOptions) -> Result<Report> {
    let mut table = Table::new(&[
        "N × L × M",
        "variables",
        "constraints",
        "solves",
        "median (ms)",
        "min (ms)",
        "max (ms)",
    ]);
    let mut judged = None;
    for (applications, regions, solves, quick_solves) in SIZES {
        let solves = if options.quick { quick_solves } else { solves };
        let size = format!("{applications} × {regions} × {regions}");
        let input = instance(applications, regions).map_err(Error)?;
        let mut times = Vec::new();
        for i in 1..=solves {
            progress(format!("parm: {size}, solve {i} of {solves}"));
            let start = Instant::now();
            solve(&input).map_err(|e| Error(format!("PARM at {size}: {e}")))?;
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let ms = median(&times);
        table.push(vec![
            size.clone(),
            (applications * regions * regions).to_string(),
            constraints(&input).to_string(),
            solves.to_string(),
            num(ms, 1),
            num(times.iter().copied().reduce(f64::min), 1),
            num(times.iter().copied().reduce(f64::max), 1),
        ]);
        judged = ms.map(|ms| (size, ms / 1e3));
    }
    let (size, seconds) = judged.unwrap_or_default();
    Ok(Report {
        name: "parm",
        title: "PARM's LP solve time (good_lp + microlp)".into(),
        setup: vec![
            "Section 5.1's model: users per region uniform in 75–500 (seeded), λ_nu and t_n \
             repeating Table 3's three values, t_m ~ U(40, 100) ms, t_lm ~ N(t_m, 1 ms), C = 1.1 \
             × the busiest site under BASE, θ̄ and LDP's prices from BASE's congestion, Ψ = \
             0.5, ξ = 0.15·θ̄."
                .into(),
            "Timed: building the LP, solving it and reading the mapping back (`pricing::solve`); \
             one thread."
                .into(),
        ],
        table,
        target: format!("median solve < {TARGET_S} s at 10 × 100 × 100."),
        verdict: if seconds < TARGET_S {
            Verdict::Met(format!("median {seconds:.2} s at {size}"))
        } else {
            Verdict::Missed(format!("median {seconds:.2} s at {size}"))
        },
    })
}

/// A PARM problem of Section 5.1's model with `applications` applications and `regions`
/// regions, each with its own site (site m is region m's, as in the reproduction).
fn instance(applications: usize, regions: usize) -> std::result::Result<ParmInput, String> {
    let mut rng = StdRng::seed_from_u64(SEED);
    let (users, per_user, deadline) = traffic::generalized(&mut rng, applications, regions);
    let latency = latencies(&mut rng, regions, regions).region_site;
    let demand = demand(&users, &per_user);
    let capacity = vec![capacity(&demand); regions];
    let base = site_load(&demand, &local_mapping(applications, regions));
    let theta = congestion(&base, &capacity);
    let theta_bar = mean(&theta);
    let prices = ldp(&theta, &users, &LdpParams::paper())?.prices;
    Ok(ParmInput {
        demand,
        latency,
        capacity,
        prices,
        psi: PSI,
        theta_bar,
        xi: TAU * theta_bar,
        deadline,
    })
}

/// The LP's constraint count: (4d) per application and region, (5b) per site, (5a) per site
/// when θ̄ − ξ > 0, (4c) per application.
fn constraints(input: &ParmInput) -> usize {
    let (applications, regions, sites) = (
        input.demand.len(),
        input.latency.len(),
        input.capacity.len(),
    );
    let lower = if input.theta_bar - input.xi > 0.0 {
        sites
    } else {
        0
    };
    applications * regions + sites + lower + applications
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instances_are_feasible_and_sized() {
        let input = instance(3, 10).unwrap();
        assert_eq!(input.demand.len(), 3);
        assert_eq!(input.latency.len(), 10);
        assert_eq!(constraints(&input), 30 + 10 + 10 + 3);
        assert!(solve(&input).is_ok());
    }
}
