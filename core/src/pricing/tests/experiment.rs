//! Section 5's experiment, end to end on the paper's settings: properties that hold whatever
//! the draws, not the paper's numbers (RESULTS.md compares those).

use crate::pricing::experiment::{run, Case, Reproduction, Settings};
use crate::pricing::measure::{congestion, response_times, site_load};
use std::sync::OnceLock;

/// The default reproduction, computed once for all tests (about 0.3 s).
fn paper() -> &'static Reproduction {
    static RESULT: OnceLock<Reproduction> = OnceLock::new();
    RESULT.get_or_init(|| run(&Settings::paper(1)).expect("the paper's settings are feasible"))
}

#[test]
fn the_same_seed_gives_the_same_results() {
    let again = run(&Settings::paper(1)).unwrap();
    assert!(&again == paper());
    let other = run(&Settings::paper(2)).unwrap();
    assert_ne!(other.world.latency, paper().world.latency);
    assert_ne!(other.cases, paper().cases);
}

#[test]
fn ldp_follows_the_spread_of_each_pattern() {
    let ldp = &paper().ldp;
    // Patterns 1 and 2 spread their users unevenly, 3 and 4 evenly (Table 2).
    assert!(ldp[0].prices.location_dependent && ldp[1].prices.location_dependent);
    assert!(!ldp[2].prices.location_dependent && !ldp[3].prices.location_dependent);
    // Pattern 4's sites are busier than pattern 3's: one higher price.
    assert!(ldp[3].prices.prices[0] > ldp[2].prices.prices[0]);
}

#[test]
fn purm_pays_what_base_pays() {
    // Both pay P_const, and every mapping serves all the demand (4d): Σ_m D_m = Σ λ.
    let cases = &paper().cases;
    for pattern in 1..=4 {
        let payment = |case: Case| {
            let row = cases
                .iter()
                .find(|r| r.pattern == pattern && r.case == case);
            row.and_then(|r| r.outcome.metrics.as_ref())
                .map(|m| m.payment)
                .unwrap()
        };
        let (base, purm) = (payment(Case::Base), payment(Case::Purm));
        assert!(
            (purm / base - 1.0).abs() < 1e-9,
            "TP{pattern}: {purm} vs {base}"
        );
    }
}

#[test]
fn every_lp_solution_meets_its_constraints() {
    let result = paper();
    // PURM, PARM and PARM-s, 6 periods each, and 6 per P_max value, per pattern.
    let per_pattern = 3 * 6 + result.settings.p_maxes.len() * 6;
    assert_eq!(result.lps.len(), 4 * per_pattern);
    for lp in &result.lps {
        let input = &lp.input;
        let alpha = &lp.mapping.alpha;
        for shares in alpha.iter().flatten() {
            assert!(
                (shares.iter().sum::<f64>() - 1.0).abs() < 1e-6,
                "{}: (4d)",
                lp.name
            );
        }
        let theta = congestion(&site_load(&input.demand, alpha), &input.capacity);
        for t in theta {
            assert!(
                (t - input.theta_bar).abs() <= input.xi + 1e-6,
                "{}: (4b) {t}",
                lp.name
            );
        }
        for (r, t) in response_times(&input.latency, alpha)
            .iter()
            .zip(&input.deadline)
        {
            assert!(*r <= t + 1e-6, "{}: (4c) {r} > {t}", lp.name);
        }
    }
}

#[test]
fn optimised_cases_meet_every_response_time_and_base_is_checked_too() {
    for row in &paper().cases {
        let metrics = row.outcome.metrics.as_ref().expect("feasible at seed 1");
        if row.case != Case::Base {
            assert!(
                metrics.response_time_met,
                "TP{} {:?}",
                row.pattern, row.case
            );
        }
        assert_eq!(metrics.response_time_ms.len(), 3);
    }
    // BASE ignores (4c): its left-hand side is the mean of t_ll, the same for every app.
    let world = &paper().world;
    let own: f64 = (0..10)
        .map(|l| world.latency.region_site[l][l])
        .sum::<f64>()
        / 10.0;
    let base = paper().cases.iter().find(|r| r.case == Case::Base).unwrap();
    let met = base.outcome.metrics.as_ref().unwrap();
    assert!((met.response_time_ms[2] - own).abs() < 1e-9);
    assert_eq!(met.response_time_met, own <= 60.0);
}

#[test]
fn a_wider_band_never_lowers_the_variance() {
    // ξ = τθ̄ bounds each site's congestion; the LP fills the fastest sites to the bound.
    let sweep = &paper().tau_sweep;
    for pattern in 1..=4 {
        let variances: Vec<f64> = sweep
            .iter()
            .filter(|r| r.pattern == pattern && r.case == Case::Parm)
            .map(|r| r.outcome.metrics.as_ref().unwrap().variance)
            .collect();
        assert_eq!(variances.len(), 9);
        for pair in variances.windows(2) {
            assert!(pair[1] >= pair[0] - 1e-9, "TP{pattern}: {variances:?}");
        }
    }
}
