//! Theorem 2 and the trade-off against the LP, on random instances of both of its cases:
//! enough peer upload overall (Σ C_m ≥ Σ r_m) and not enough.

use crate::p2p::lp::{minimum_cloud, minimum_inter_isp as lp_minimum_inter_isp, TradeoffInput};
use crate::p2p::{evaluate, imbalance, minimum_inter_isp, Policy};
use proptest::prelude::*;

/// r_m and C_m for 2–5 ISPs, scaled so that Σ C = 1.25·Σ r (`enough`) or 0.8·Σ r.
fn instance() -> impl Strategy<Value = (Vec<f64>, Vec<f64>, bool)> {
    (2usize..=5, any::<bool>()).prop_flat_map(|(isps, enough)| {
        let rates = proptest::collection::vec(0.5f64..20.0, isps);
        (rates.clone(), rates).prop_map(move |(requests, raw)| {
            let k = requests.iter().sum::<f64>() / raw.iter().sum::<f64>()
                * if enough { 1.25 } else { 0.8 };
            let capacities = raw.iter().map(|c| c * k).collect();
            (requests, capacities, enough)
        })
    })
}

/// A random dispatch matrix: rows of non-negative shares summing to 1.
fn random_dispatch(isps: usize) -> impl Strategy<Value = Vec<Vec<f64>>> {
    proptest::collection::vec(proptest::collection::vec(0.01f64..1.0, isps), isps).prop_map(
        |rows| {
            (rows.into_iter())
                .map(|row| {
                    let sum: f64 = row.iter().sum();
                    row.into_iter().map(|a| a / sum).collect()
                })
                .collect()
        },
    )
}

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-6 * scale.max(1.0)
}

proptest! {
    #[test]
    fn theorem_2_reaches_the_lp_minima((requests, capacities, enough) in instance()) {
        let scale: f64 = requests.iter().sum();
        let a = Policy::Optimal.matrix(&requests, &capacities).unwrap();
        for row in &a {
            prop_assert!(row.iter().all(|&x| x >= -1e-12));
            prop_assert!(close(row.iter().sum(), 1.0, 1.0));
        }
        let outcome = evaluate(&a, &requests, &capacities).unwrap();
        let least = minimum_cloud(&TradeoffInput {
            requests: requests.clone(),
            capacities: capacities.clone(),
            inter_isp_cap: None,
        })
        .unwrap();
        let floor = (scale - capacities.iter().sum::<f64>()).max(0.0);
        prop_assert!(close(outcome.cloud_bandwidth, floor, scale));
        prop_assert!(close(least.cloud_bandwidth, floor, scale));

        let t_star = minimum_inter_isp(&requests, &capacities).unwrap();
        let lp = lp_minimum_inter_isp(&requests, &capacities).unwrap();
        prop_assert!(close(outcome.inter_isp_traffic, t_star, scale),
            "a* carries {} across ISPs, T* = {t_star}", outcome.inter_isp_traffic);
        prop_assert!(close(lp.inter_isp_traffic, t_star, scale),
            "LP's T* = {}, Theorem 2's = {t_star}", lp.inter_isp_traffic);

        // Case 1: no ISP misses. Case 2: exactly the deficit ISPs do.
        for (miss, i) in outcome.miss.iter().zip(imbalance(&requests, &capacities)) {
            if enough || i >= 0.0 {
                prop_assert!(*miss < 1e-9);
            } else {
                prop_assert!(*miss > 0.0);
            }
        }
    }

    #[test]
    fn no_dispatch_does_better_than_theorem_2(
        (requests, capacities, a) in instance().prop_flat_map(|(r, c, _)| {
            let isps = r.len();
            (Just(r), Just(c), random_dispatch(isps))
        })
    ) {
        let scale: f64 = requests.iter().sum();
        let best = evaluate(&Policy::Optimal.matrix(&requests, &capacities).unwrap(), &requests, &capacities).unwrap();
        for other in [a, Policy::Local.matrix(&requests, &capacities).unwrap(), Policy::Proportional.matrix(&requests, &capacities).unwrap()] {
            let outcome = evaluate(&other, &requests, &capacities).unwrap();
            prop_assert!(outcome.cloud_bandwidth >= best.cloud_bandwidth - 1e-9 * scale);
            if close(outcome.cloud_bandwidth, best.cloud_bandwidth, scale) {
                prop_assert!(outcome.inter_isp_traffic >= best.inter_isp_traffic - 1e-6 * scale);
            }
        }
    }

    #[test]
    fn each_unit_of_cap_below_t_star_costs_one_unit_of_cloud(
        (requests, capacities, _) in instance(),
        fraction in 0.0f64..1.0,
    ) {
        let scale: f64 = requests.iter().sum();
        let t_star = minimum_inter_isp(&requests, &capacities).unwrap();
        let floor = (scale - capacities.iter().sum::<f64>()).max(0.0);
        let cap = fraction * t_star;
        let input = TradeoffInput { requests: requests.clone(), capacities: capacities.clone(), inter_isp_cap: Some(cap) };
        let solution = minimum_cloud(&input).unwrap();
        prop_assert!(close(solution.cloud_bandwidth, floor + (t_star - cap), scale),
            "cap {cap}: cloud {} against {}", solution.cloud_bandwidth, floor + t_star - cap);
        prop_assert!(solution.inter_isp_traffic <= cap + 1e-6 * scale);
        // Its dispatch, judged by Lemma 1, costs what the LP says.
        let judged = evaluate(&solution.dispatch(&requests), &requests, &capacities).unwrap();
        prop_assert!(close(judged.cloud_bandwidth, solution.cloud_bandwidth, scale));
        prop_assert!(close(judged.inter_isp_traffic, solution.inter_isp_traffic, scale));
    }
}

#[test]
fn theorem_2_on_a_hand_instance() {
    // ISP 1 spares 4, ISPs 2 and 3 lack 2 and 6: S = 4 < D = 8 (case 2, k = S/D = 1/2), so
    // T* = S = 4, taken from ISPs 2 and 3 in proportion to their deficits, 1:3.
    let requests = [6.0, 4.0, 8.0];
    let capacities = [10.0, 2.0, 2.0];
    let a = Policy::Optimal.matrix(&requests, &capacities).unwrap();
    assert_eq!(minimum_inter_isp(&requests, &capacities).unwrap(), 4.0);
    assert_eq!(a[0], [1.0, 0.0, 0.0]);
    // ISP 2 sends k·(I_1/S)·(−I_2/r_2) = 0.5·1·0.5 of its requests to ISP 1 and keeps
    // C_2/r_2 + (1 − k)·(−I_2/r_2) = 0.5 + 0.25.
    assert!((a[1][0] - 0.25).abs() < 1e-12 && (a[1][1] - 0.75).abs() < 1e-12);
    assert!((a[2][0] - 0.375).abs() < 1e-12 && (a[2][2] - 0.625).abs() < 1e-12);
    let outcome = evaluate(&a, &requests, &capacities).unwrap();
    assert!((outcome.cloud_bandwidth - 4.0).abs() < 1e-12);
    assert!((outcome.inter_isp_traffic - 4.0).abs() < 1e-12);
}
