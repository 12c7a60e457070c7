//! PARM on instances small enough to solve by hand: 1 application, 2 regions, 2 sites.

use crate::pricing::feasibility::{BAND, RESPONSE_TIME};
use crate::pricing::measure::{response_times, site_load};
use crate::pricing::parm::{solve, ParmError, ParmInput};

/// λ = [1, 1]; region 0 is near site 0 (10 vs 20 ms), region 1 near site 1; a band (θ̄ ± ξ =
/// 0.5 ± 0.5, C = 2) and a deadline (100) that bind nothing.
fn symmetric() -> ParmInput {
    ParmInput {
        demand: vec![vec![1.0, 1.0]],
        latency: vec![vec![10.0, 20.0], vec![20.0, 10.0]],
        capacity: vec![2.0, 2.0],
        prices: vec![0.3, 0.3],
        psi: 0.0,
        theta_bar: 0.5,
        xi: 0.5,
        deadline: vec![100.0],
    }
}

fn assert_alpha(got: &[Vec<Vec<f64>>], want: &[[f64; 2]; 2]) {
    for (l, row) in want.iter().enumerate() {
        for (m, &w) in row.iter().enumerate() {
            assert!(
                (got[0][l][m] - w).abs() < 1e-6,
                "α[0][{l}][{m}] = {} (want {w}); α = {got:?}",
                got[0][l][m]
            );
        }
    }
}

#[test]
fn unconstrained_requests_go_to_their_nearest_site() {
    let mapping = solve(&symmetric()).unwrap();
    assert_alpha(&mapping.alpha, &[[1.0, 0.0], [0.0, 1.0]]);
    // (4a) = 1·10 + 1·10 (Ψ = 0).
    assert!((mapping.objective - 20.0).abs() < 1e-6);
}

#[test]
fn the_congestion_band_binds() {
    // Site 0 is faster for both regions (by 10 and 15 ms); θ̄ ± ξ = 0.5 ± 0.1 with C = 2 keeps
    // each site's load within [0.8, 1.2]. Site 0 takes 1.2: all of region 1 (it gains more, 15
    // ms) and 0.2 of region 0; the rest of region 0 goes to site 1. (4a) = 0.2·10 + 0.8·20 + 15.
    let input = ParmInput {
        latency: vec![vec![10.0, 20.0], vec![15.0, 30.0]],
        xi: 0.1,
        ..symmetric()
    };
    let mapping = solve(&input).unwrap();
    assert_alpha(&mapping.alpha, &[[0.2, 0.8], [1.0, 0.0]]);
    assert!((mapping.objective - 33.0).abs() < 1e-6);
    let load = site_load(&input.demand, &mapping.alpha);
    assert!(
        (load[0] - 1.2).abs() < 1e-6 && (load[1] - 0.8).abs() < 1e-6,
        "{load:?}"
    );
}

#[test]
fn the_price_weight_changes_the_answer() {
    // Site 0 costs 1 per unit, site 1 nothing. With Ψ = 20, region 0 saves 20 by moving to site
    // 1 and loses 10 ms: everything goes to site 1. With Ψ = 0 each region keeps its nearest.
    let priced = ParmInput {
        prices: vec![1.0, 0.0],
        ..symmetric()
    };
    let latency_only = solve(&priced).unwrap();
    assert_alpha(&latency_only.alpha, &[[1.0, 0.0], [0.0, 1.0]]);
    let mapping = solve(&ParmInput {
        psi: 20.0,
        ..priced.clone()
    })
    .unwrap();
    assert_alpha(&mapping.alpha, &[[0.0, 1.0], [0.0, 1.0]]);
    // (4a) = 20 + 10 (latency) + 20 · 0 (payment).
    assert!((mapping.objective - 30.0).abs() < 1e-6);
    // Below the break-even Ψ = 10 the latency wins again.
    let mapping = solve(&ParmInput { psi: 9.0, ..priced }).unwrap();
    assert_alpha(&mapping.alpha, &[[1.0, 0.0], [0.0, 1.0]]);
}

#[test]
fn the_response_time_binds_unweighted() {
    // Both regions: site 0 10 ms, site 1 20 ms but free; Ψ = 20 pushes everything to site 1,
    // where (4c) = (20 + 20)/2 = 20 > t_n = 15. (4c) needs α_00 + α_10 ≥ 1, and each unit of
    // α_l0 costs 10·λ_l in (4a), so the region with fewer requests (region 0, λ = 1 against 3)
    // takes the fast site: (4c) counts regions, not requests.
    let input = ParmInput {
        demand: vec![vec![1.0, 3.0]],
        latency: vec![vec![10.0, 20.0], vec![10.0, 20.0]],
        capacity: vec![4.0, 4.0],
        prices: vec![1.0, 0.0],
        psi: 20.0,
        deadline: vec![15.0],
        ..symmetric()
    };
    let mapping = solve(&input).unwrap();
    assert_alpha(&mapping.alpha, &[[1.0, 0.0], [0.0, 1.0]]);
    assert!((response_times(&input.latency, &mapping.alpha)[0] - 15.0).abs() < 1e-6);
    // (4a) = 1·(10 + 20·1) + 3·(20 + 20·0).
    assert!((mapping.objective - 90.0).abs() < 1e-6);
}

#[test]
fn an_impossible_band_is_named() {
    // Σλ = 2 but ΣC·(θ̄ + ξ) = 2 · 0.6 = 1.2.
    let input = ParmInput {
        capacity: vec![1.0, 1.0],
        xi: 0.1,
        ..symmetric()
    };
    match solve(&input) {
        Err(ParmError::Infeasible { family, detail }) => {
            assert_eq!(family, BAND);
            assert!(detail.contains("1.2"), "{detail}");
        }
        other => panic!("expected the band to be infeasible, got {other:?}"),
    }
    // θ̄ − ξ above what the demand can fill: the lower side (5a).
    let input = ParmInput {
        theta_bar: 0.9,
        xi: 0.05,
        ..symmetric()
    };
    assert!(matches!(solve(&input), Err(ParmError::Infeasible { family, .. }) if family == BAND));
}

#[test]
fn an_impossible_deadline_names_the_application() {
    // The fastest sites give (10 + 10)/2 = 10 > 5 for application 1.
    let input = ParmInput {
        demand: vec![vec![1.0, 1.0], vec![0.5, 0.5]],
        deadline: vec![100.0, 5.0],
        ..symmetric()
    };
    match solve(&input) {
        Err(ParmError::Infeasible { family, detail }) => {
            assert_eq!(family, RESPONSE_TIME);
            assert!(detail.contains("application 1"), "{detail}");
            assert!(!detail.contains("application 0"), "{detail}");
            assert!(
                detail.contains("= 10") && detail.contains("= 5"),
                "{detail}"
            );
        }
        other => panic!("expected (4c) to be infeasible, got {other:?}"),
    }
}

#[test]
fn families_that_conflict_only_together_are_both_named() {
    // ξ = 0 with θ̄ = 1 and C = 1: each site must carry exactly 1, so only one unit of region
    // traffic can use the fast site 0 and (4c) ≥ (10 + 20)/2 = 15 > 12, though either family
    // alone is feasible (the band: Σλ = 2 = ΣC·θ̄; (4c): (10 + 10)/2 = 10 ≤ 12).
    let input = ParmInput {
        latency: vec![vec![10.0, 20.0], vec![10.0, 20.0]],
        capacity: vec![1.0, 1.0],
        theta_bar: 1.0,
        xi: 0.0,
        deadline: vec![12.0],
        ..symmetric()
    };
    match solve(&input) {
        Err(ParmError::Infeasible { family, .. }) => {
            assert!(
                family.contains(BAND) && family.contains(RESPONSE_TIME),
                "{family}"
            );
        }
        other => panic!("expected a joint infeasibility, got {other:?}"),
    }
    // The same deadline relaxed to 15 is met exactly.
    let mapping = solve(&ParmInput {
        deadline: vec![15.0],
        ..input
    })
    .unwrap();
    assert!(
        (response_times(&[vec![10.0, 20.0], vec![10.0, 20.0]], &mapping.alpha)[0] - 15.0).abs()
            < 1e-6
    );
}

#[test]
fn malformed_input_names_the_field() {
    let check = |input: ParmInput, field: &str| match solve(&input) {
        Err(ParmError::Input(message)) => assert!(message.contains(field), "{message}"),
        other => panic!("expected an input error about {field}, got {other:?}"),
    };
    check(
        ParmInput {
            demand: vec![vec![1.0]],
            ..symmetric()
        },
        "demand[0]",
    );
    check(
        ParmInput {
            demand: vec![vec![1.0, f64::NAN]],
            ..symmetric()
        },
        "demand[0][1]",
    );
    check(
        ParmInput {
            latency: vec![vec![10.0, 20.0], vec![20.0]],
            ..symmetric()
        },
        "latency[1]",
    );
    check(
        ParmInput {
            capacity: vec![2.0, 0.0],
            ..symmetric()
        },
        "capacity[1]",
    );
    check(
        ParmInput {
            prices: vec![0.3],
            ..symmetric()
        },
        "prices",
    );
    check(
        ParmInput {
            deadline: vec![],
            ..symmetric()
        },
        "deadline",
    );
    check(
        ParmInput {
            xi: -0.1,
            ..symmetric()
        },
        "xi",
    );
    check(
        ParmInput {
            demand: vec![],
            ..symmetric()
        },
        "demand",
    );
    let message = solve(&ParmInput {
        psi: f64::INFINITY,
        ..symmetric()
    })
    .unwrap_err()
    .to_string();
    assert!(message.starts_with("PARM input: psi"), "{message}");
}
