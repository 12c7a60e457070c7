//! The traffic model of Section 5.1 of the LDP/PARM paper (papers/000): regions' user numbers
//! (Table 2), per-user request intensities, latencies, site capacity and the Poisson arrivals
//! the SM modules measure.
//!
//! Bandwidth is counted in the unit of the request intensity λ ("λ units"): the paper gives no
//! object size, so a site's bandwidth usage is the request rate it serves, and C_m, g(D) and
//! the payment are in the same unit.
//!
//! Site m is region m's own site: BASE's "nearest site" for region l is site l, and region m's
//! users are site m's population U_m in LDP. The paper's latencies cannot say which site is
//! nearest — t_lm ~ N(t_m, 1 ms) makes the fastest site the same for every region, which would
//! put all of BASE's traffic on one site — while its Figures 4–7 show each site's congestion
//! following its region's user number.

use rand::{Rng, RngExt};
use rand_distr::{Distribution, Poisson, StandardNormal};

/// Table 2: the user number of each of the 10 regions, per traffic pattern.
pub const USERS: [[f64; 10]; 4] = [
    [
        110.0, 150.0, 90.0, 230.0, 320.0, 190.0, 430.0, 380.0, 450.0, 500.0,
    ],
    [
        90.0, 255.0, 375.0, 160.0, 80.0, 150.0, 310.0, 75.0, 150.0, 175.0,
    ],
    [
        230.0, 210.0, 190.0, 240.0, 220.0, 200.0, 205.0, 225.0, 245.0, 215.0,
    ],
    [
        300.0, 320.0, 305.0, 310.0, 325.0, 330.0, 315.0, 290.0, 305.0, 325.0,
    ],
];

/// Table 3: λ_nu, each user's request intensity for each of the 3 applications (per second).
pub const PER_USER: [f64; 3] = [61.92, 39.84, 22.08];

/// Table 3: t_n, each application's expected response time, ms.
pub const DEADLINE_MS: [f64; 3] = [90.0, 70.0, 60.0];

/// §5.1.1: t_m ~ Uniform(40, 100) ms.
const SITE_LATENCY_MS: std::ops::Range<f64> = 40.0..100.0;
/// §5.1.1: t_lm ~ Normal(t_m, 1 ms).
const LATENCY_SD_MS: f64 = 1.0;
/// §5.1.1: C_m is 1.1 × the largest site usage of Traffic Pattern 1.
const CAPACITY_HEADROOM: f64 = 1.1;

/// λ_nl of Equation 6: Σ_{u∈l} λ_nu = U_l · λ_nu, as `[n][l]`.
pub fn demand(users: &[f64], per_user: &[f64]) -> Vec<Vec<f64>> {
    per_user
        .iter()
        .map(|lambda| users.iter().map(|u| u * lambda).collect())
        .collect()
}

/// The drawn latencies: each site's mean t_m and each region's t_lm around it.
#[derive(Debug, Clone, PartialEq)]
pub struct Latencies {
    /// t_m, ms.
    pub site: Vec<f64>,
    /// t_lm, `[l][m]`, ms.
    pub region_site: Vec<Vec<f64>>,
}

/// §5.1.1: t_m ~ Uniform(40, 100) ms, then t_lm ~ Normal(t_m, 1 ms), drawn in that order.
pub fn latencies(rng: &mut impl Rng, regions: usize, sites: usize) -> Latencies {
    let site: Vec<f64> = (0..sites)
        .map(|_| rng.random_range(SITE_LATENCY_MS))
        .collect();
    let region_site = (0..regions)
        .map(|_| {
            site.iter()
                .map(|&mean| mean + LATENCY_SD_MS * rng.sample::<f64, _>(StandardNormal))
                .collect()
        })
        .collect();
    Latencies { site, region_site }
}

/// §5.1.1: the capacity of every site, 1.1 × the largest site usage under BASE of `demand`
/// (`[n][l]`; BASE sends region l's requests to site l, so site l's usage is Σ_n λ_nl). The
/// expected usage, not a Poisson draw: capacity is provisioned, not measured.
pub fn capacity(demand: &[Vec<f64>]) -> f64 {
    let regions = demand.iter().map(Vec::len).max().unwrap_or(0);
    let usage = (0..regions).map(|l| demand.iter().filter_map(|app| app.get(l)).sum::<f64>());
    CAPACITY_HEADROOM * usage.fold(0.0, f64::max)
}

/// What the SM module measures over one period of `period_s` seconds: each (n, l)'s request
/// count is Poisson(λ_nl · T), reported as a rate, count / T. `Err` for a non-positive period
/// or a negative or non-finite λ.
pub fn measure(
    rng: &mut impl Rng,
    demand: &[Vec<f64>],
    period_s: f64,
) -> Result<Vec<Vec<f64>>, String> {
    if !(period_s.is_finite() && period_s > 0.0) {
        return Err(format!("measurement period must be > 0 s, got {period_s}"));
    }
    demand
        .iter()
        .map(|app| {
            app.iter()
                .map(|&lambda| {
                    let mean = lambda * period_s;
                    if mean == 0.0 {
                        return Ok(0.0);
                    }
                    let poisson = Poisson::new(mean)
                        .map_err(|e| format!("request rate {lambda}: no Poisson law ({e})"))?;
                    Ok(poisson.sample(rng) / period_s)
                })
                .collect()
        })
        .collect()
}

/// The Section 5.1 model generalised to any size (the PARM benchmark): `regions` user numbers
/// drawn uniformly within Table 2's range (75–500), and `applications` per-user intensities
/// and expected response times repeating Table 3's three in turn.
pub fn generalized(
    rng: &mut impl Rng,
    applications: usize,
    regions: usize,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let users = (0..regions)
        .map(|_| rng.random_range(75.0..=500.0_f64).round())
        .collect();
    let per_user = (0..applications)
        .map(|n| PER_USER[n % PER_USER.len()])
        .collect();
    let deadline = (0..applications)
        .map(|n| DEADLINE_MS[n % DEADLINE_MS.len()])
        .collect();
    (users, per_user, deadline)
}
