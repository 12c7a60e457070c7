//! Section 5.1's traffic model.

use crate::pricing::traffic::{capacity, demand, generalized, latencies, measure, PER_USER, USERS};
use rand::rngs::StdRng;
use rand::SeedableRng;

#[test]
fn demand_is_users_times_per_user_intensity() {
    // Eq. 6: λ_nl = Σ_{u∈l} λ_nu = U_l λ_nu.
    let d = demand(&USERS[0], &PER_USER);
    assert_eq!(d.len(), 3);
    assert_eq!(d[0].len(), 10);
    assert!((d[0][0] - 110.0 * 61.92).abs() < 1e-9);
    assert!((d[2][9] - 500.0 * 22.08).abs() < 1e-9);
}

#[test]
fn capacity_is_1_1_times_the_busiest_site_of_pattern_1() {
    // Region 10 (500 users) is TP1's busiest: 500 × (61.92 + 39.84 + 22.08) = 61,920.
    let c = capacity(&demand(&USERS[0], &PER_USER));
    assert!((c - 1.1 * 61_920.0).abs() < 1e-6, "{c}");
    // So BASE's congestion of region m's site is U_m / 550.
    let d = demand(&USERS[3], &PER_USER);
    let usage: f64 = d.iter().map(|app| app[5]).sum();
    assert!((usage / c - 330.0 / 550.0).abs() < 1e-12);
}

#[test]
fn latencies_follow_the_model_and_the_seed() {
    let a = latencies(&mut StdRng::seed_from_u64(7), 10, 10);
    let b = latencies(&mut StdRng::seed_from_u64(7), 10, 10);
    let c = latencies(&mut StdRng::seed_from_u64(8), 10, 10);
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(
        a.site.iter().all(|t| (40.0..100.0).contains(t)),
        "{:?}",
        a.site
    );
    // t_lm ~ N(t_m, 1 ms): 100 draws all within 5 sd of their site's mean, and not all equal.
    for row in &a.region_site {
        for (t, mean) in row.iter().zip(&a.site) {
            assert!((t - mean).abs() < 5.0, "{t} vs {mean}");
        }
    }
    assert_ne!(a.region_site[0], a.region_site[1]);
}

#[test]
fn measurement_is_poisson_around_the_rate() {
    let d = demand(&USERS[0], &PER_USER);
    let mut rng = StdRng::seed_from_u64(1);
    let m = measure(&mut rng, &d, 600.0).unwrap();
    let again = measure(&mut StdRng::seed_from_u64(1), &d, 600.0).unwrap();
    assert_eq!(m, again);
    for (measured, expected) in m.iter().flatten().zip(d.iter().flatten()) {
        // A count of λT has sd √(λT): the rate's sd is √(λ/T); 6 sd never fails by chance.
        let sd = (expected / 600.0).sqrt();
        assert!(
            (measured - expected).abs() < 6.0 * sd,
            "{measured} vs {expected}"
        );
        // A whole number of requests over T.
        assert!(((measured * 600.0) - (measured * 600.0).round()).abs() < 1e-6);
    }
    assert_ne!(m, d, "the measurement must not be the expectation itself");
    assert_eq!(
        measure(&mut rng, &[vec![0.0]], 600.0).unwrap(),
        vec![vec![0.0]]
    );
    assert!(measure(&mut rng, &d, 0.0).is_err());
    assert!(measure(&mut rng, &[vec![-1.0]], 600.0).is_err());
}

#[test]
fn the_generalised_model_repeats_table_3() {
    let (users, per_user, deadline) = generalized(&mut StdRng::seed_from_u64(3), 10, 100);
    assert_eq!(users.len(), 100);
    assert!(users.iter().all(|u| (75.0..=500.0).contains(u)));
    assert_eq!(per_user.len(), 10);
    assert_eq!(per_user[3], 61.92);
    assert_eq!(deadline[5], 60.0);
}
