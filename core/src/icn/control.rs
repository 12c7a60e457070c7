//! The controller's sums (papers/000, Figure 2), sans-IO: the SM module's measurement window,
//! the periods of Equation (1), PARM's input and the FIB rules its solution becomes. The
//! `controller` role asks the sites and borders over the control plane and feeds these.

use crate::pricing::measure::{congestion, mean, site_load};
use crate::pricing::parm::ParmInput;
use std::time::Duration;

/// Equation (1) of papers/000: T_LDP > T_PARM ≥ T_SM; T_PARM a multiple of T_SM and T_LDP of
/// T_PARM, since PARM and LDP run on the SM module's measurements and LDP with a PARM period.
pub fn check_periods(sm: Duration, parm: Duration, ldp: Duration) -> Result<(), String> {
    if !(ldp > parm && parm >= sm) {
        return Err(format!(
            "periods break Equation (1), T_LDP > T_PARM ≥ T_SM: ldp_period {ldp:?}, parm_period {parm:?}, sm_period {sm:?}"
        ));
    }
    if !parm.as_nanos().is_multiple_of(sm.as_nanos()) {
        return Err(format!(
            "parm_period {parm:?} must be a multiple of sm_period {sm:?}"
        ));
    }
    if !ldp.as_nanos().is_multiple_of(parm.as_nanos()) {
        return Err(format!(
            "ldp_period {ldp:?} must be a multiple of parm_period {parm:?}"
        ));
    }
    Ok(())
}

/// d_m and C_m in Mbit/s and θ_m, per site.
pub type Congestion = (Vec<f64>, Vec<f64>, Vec<f64>);

/// The SM module's measurements over one or more SM periods, as the LP wants them (Mbit/s).
#[derive(Debug, Clone, Default)]
pub struct Window {
    /// Seconds covered, per site.
    seconds: Vec<f64>,
    /// Megabits served, per site.
    megabits: Vec<f64>,
    /// Megabits per site and (application, region): `demand[m][n][l]`.
    demand: Vec<Vec<Vec<f64>>>,
    /// The latest C_m, Mbit/s.
    capacity: Vec<Option<f64>>,
}

impl Window {
    pub fn new(sites: usize, apps: usize, regions: usize) -> Window {
        Window {
            seconds: vec![0.0; sites],
            megabits: vec![0.0; sites],
            demand: vec![vec![vec![0.0; regions]; apps]; sites],
            capacity: vec![None; sites],
        }
    }

    /// Adds site `m`'s answer: the `seconds` its counters covered, its capacity C_m in bit/s,
    /// and the bytes it served per (application n, region l) — `None` for a pair the controller
    /// does not know, which counts towards d_m but no λ_nl.
    pub fn add(
        &mut self,
        m: usize,
        seconds: f64,
        capacity_bps: f64,
        served: impl IntoIterator<Item = (Option<(usize, usize)>, u64)>,
    ) {
        self.seconds[m] += seconds;
        self.capacity[m] = Some(capacity_bps / 1e6);
        for (pair, bytes) in served {
            let mbit = bytes as f64 * 8.0 / 1e6;
            self.megabits[m] += mbit;
            if let Some((n, l)) = pair {
                self.demand[m][n][l] += mbit;
            }
        }
    }

    /// d_m in Mbit/s, C_m in Mbit/s and θ_m = d_m / C_m (Equation 2); `None` until every site
    /// answered.
    pub fn congestion(&self) -> Option<Congestion> {
        let mut usage = Vec::new();
        let mut capacity = Vec::new();
        for m in 0..self.seconds.len() {
            let c = self.capacity[m]?;
            if self.seconds[m] <= 0.0 || c <= 0.0 {
                return None;
            }
            usage.push(self.megabits[m] / self.seconds[m]);
            capacity.push(c);
        }
        let theta = congestion(&usage, &capacity);
        Some((usage, capacity, theta))
    }

    /// λ_nl in Mbit/s: each site's part over the time that site's counters covered (a site
    /// that missed an SM period covers it in its next answer), summed over the sites.
    pub fn demand_rates(&self) -> Vec<Vec<f64>> {
        let (apps, regions) = match self.demand.first() {
            Some(first) => (first.len(), first.first().map_or(0, Vec::len)),
            None => (0, 0),
        };
        let mut rates = vec![vec![0.0; regions]; apps];
        for (site, seconds) in self.demand.iter().zip(&self.seconds) {
            if *seconds <= 0.0 {
                continue;
            }
            for (row, site_row) in rates.iter_mut().zip(site) {
                for (rate, mbit) in row.iter_mut().zip(site_row) {
                    *rate += mbit / seconds;
                }
            }
        }
        rates
    }
}

/// The controller's settings that shape PARM's problem.
#[derive(Debug, Clone, Copy)]
pub struct ParmSettings {
    /// Ψ of (4a) (0 for PURM).
    pub psi: f64,
    /// ξ = τ·θ̄ (Equation 8).
    pub tau: f64,
    /// θ̄ of (4b) as Σ_m d_m / Σ_m C_m (true) or as the mean of the θ_m (false); see
    /// [`theta_bar`].
    pub aggregate_theta_bar: bool,
}

/// θ̄ of (4b) from a window's d_m, C_m and θ_m. The aggregate Σ_m d_m / Σ_m C_m is the paper's
/// mean of Θ whenever the C_m are equal (its Section 5); when capacities differ, only it keeps
/// the total demand inside the band (Σ_m C_m·θ̄ = Σ_m d_m), while the mean can put it outside,
/// making (4b) infeasible for any mapping.
pub fn theta_bar((usage, capacity, theta): &Congestion, aggregate: bool) -> f64 {
    if aggregate {
        usage.iter().sum::<f64>() / capacity.iter().sum::<f64>()
    } else {
        mean(theta)
    }
}

/// PARM's input, problem (4a)–(4f): λ_nl and C_m from one PARM period's `window`, t_lm from the
/// borders' `latency` (ms), the `prices` LDP set, Ψ, θ̄ and ξ = τ·θ̄ (Equation 8), and the
/// applications' deadlines t_n (ms). `Err` says which measurement is still missing.
pub fn parm_input(
    window: &Window,
    latency: &[Vec<Option<f64>>],
    prices: Vec<f64>,
    settings: ParmSettings,
    deadline: Vec<f64>,
) -> Result<ParmInput, &'static str> {
    let measured = window
        .congestion()
        .ok_or("not every site was measured in the period")?;
    let latency = latency
        .iter()
        .map(|row| row.iter().copied().collect())
        .collect::<Option<Vec<Vec<f64>>>>()
        .ok_or("no latency measured yet from every region to every site")?;
    let theta_bar = theta_bar(&measured, settings.aggregate_theta_bar);
    let (_, capacity, _) = measured;
    Ok(ParmInput {
        demand: window.demand_rates(),
        latency,
        capacity,
        prices,
        psi: settings.psi,
        theta_bar,
        xi: settings.tau * theta_bar,
        deadline,
    })
}

/// Region `l`'s FIB rules from PARM's α_nlm: for each application n, the sites m (by index)
/// with α_nlm above zero, with their shares (the solver's tiny negatives read as 0).
pub fn region_shares(alpha: &[Vec<Vec<f64>>], l: usize) -> Vec<Vec<(usize, f64)>> {
    alpha
        .iter()
        .map(|shares| {
            shares[l]
                .iter()
                .map(|share| share.max(0.0))
                .enumerate()
                .filter(|(_, share)| *share > 1e-9)
                .collect()
        })
        .collect()
}

/// Σ_nl λ_nl α_nlm / Σ_nl λ_nl: the share of demand a mapping sends to each site.
pub fn site_shares(demand: &[Vec<f64>], alpha: &[Vec<Vec<f64>>]) -> Vec<f64> {
    let total = demand.iter().flatten().sum::<f64>().max(1e-12);
    site_load(demand, alpha)
        .iter()
        .map(|load| load / total)
        .collect()
}

/// Σ_n λ_nl α_nlm / Σ_n λ_nl for every region l: where a mapping sends each region's demand,
/// `[l][m]` (all zero for a region with no demand).
pub fn region_site_shares(demand: &[Vec<f64>], alpha: &[Vec<Vec<f64>>]) -> Vec<Vec<f64>> {
    let regions = demand.iter().map(Vec::len).max().unwrap_or(0);
    (0..regions)
        .map(|l| {
            let only_l: Vec<Vec<f64>> = demand
                .iter()
                .map(|app| {
                    let mut row = vec![0.0; app.len()];
                    if let Some(&lambda) = app.get(l) {
                        row[l] = lambda;
                    }
                    row
                })
                .collect();
            // With no demand, site_shares divides zeros: all zero.
            site_shares(&only_l, alpha)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each region's demand goes where its own α_nlm send it, weighted by its applications'
    /// λ_nl; a region without demand shows none; the regions' shares weighted by their demand
    /// add up to the sites' shares.
    #[test]
    fn region_shares_follow_each_regions_mapping() {
        // Two applications, two regions, two sites.
        let demand = vec![vec![3.0, 0.0], vec![1.0, 0.0]];
        let alpha = vec![
            vec![vec![1.0, 0.0], vec![0.5, 0.5]],
            vec![vec![0.0, 1.0], vec![0.5, 0.5]],
        ];
        let shares = region_site_shares(&demand, &alpha);
        assert_eq!(shares, vec![vec![0.75, 0.25], vec![0.0, 0.0]]);
        assert_eq!(site_shares(&demand, &alpha), shares[0]);
    }

    #[test]
    fn periods_follow_equation_1() {
        let s = Duration::from_secs;
        assert!(check_periods(s(5), s(10), s(30)).is_ok());
        assert!(check_periods(s(5), s(5), s(10)).is_ok());
        for (sm, parm, ldp) in [(5, 10, 10), (10, 5, 30), (5, 30, 20)] {
            let e = check_periods(s(sm), s(parm), s(ldp)).unwrap_err();
            assert!(e.contains("Equation (1), T_LDP > T_PARM ≥ T_SM"), "{e}");
        }
        let e = check_periods(s(4), s(10), s(30)).unwrap_err();
        assert!(e.contains("must be a multiple of sm_period"), "{e}");
        let e = check_periods(s(5), s(10), s(25)).unwrap_err();
        assert!(
            e.contains("ldp_period 25s must be a multiple of parm_period 10s"),
            "{e}"
        );
    }

    /// The SM module's sums: d_m and λ_nl in Mbit/s over the time each site covered, C_m the
    /// latest reported, θ_m = d_m / C_m; nothing until every site answered.
    #[test]
    fn window_turns_site_counters_into_rates() {
        let mut window = Window::new(2, 2, 2);
        window.add(0, 5.0, 4e6, [(Some((0, 0)), 1_250_000)]);
        assert!(window.congestion().is_none(), "s2 has not answered");
        window.add(1, 5.0, 2e6, [(Some((1, 1)), 625_000), (None, 1)]);
        window.add(0, 5.0, 1e6, [(Some((0, 1)), 1_250_000)]);
        let (usage, capacity, theta) = window.congestion().expect("both answered");
        // s1: 20 Mbit over 10 s; s2: 5 Mbit (+8 bits of an unknown app) over 5 s.
        assert!(
            (usage[0] - 2.0).abs() < 1e-9 && (usage[1] - 1.0).abs() < 1e-5,
            "{usage:?}"
        );
        assert_eq!(capacity, [1.0, 2.0], "the latest C_m");
        assert!((theta[0] - 2.0).abs() < 1e-9 && (theta[1] - 0.5).abs() < 1e-5);
        // λ: each site's megabits over the seconds that site covered (s1 10 s, s2 5 s).
        let rates = window.demand_rates();
        assert!((rates[0][0] - 1.0).abs() < 1e-9, "{rates:?}");
        assert!((rates[0][1] - 1.0).abs() < 1e-9);
        assert!((rates[1][1] - 1.0).abs() < 1e-9);
        assert_eq!(rates[1][0], 0.0);
        let total: f64 = rates.iter().flatten().sum();
        assert!((total - usage.iter().sum::<f64>()).abs() < 1e-5, "Σλ = Σd");
    }

    /// PARM's input waits for every site and every latency; θ̄ is aggregate or the mean, ξ = τ·θ̄.
    #[test]
    fn parm_input_needs_every_measurement() {
        let settings = ParmSettings {
            psi: 0.5,
            tau: 0.1,
            aggregate_theta_bar: true,
        };
        let mut window = Window::new(2, 1, 1);
        let latency = vec![vec![Some(40.0), Some(60.0)]];
        window.add(0, 10.0, 4e6, [(Some((0, 0)), 2_500_000)]);
        let e = parm_input(&window, &latency, vec![], settings, vec![80.0]).unwrap_err();
        assert!(e.contains("not every site"), "{e}");
        window.add(1, 10.0, 1e6, [(Some((0, 0)), 1_250_000)]);
        let e = parm_input(
            &window,
            &[vec![Some(40.0), None]],
            vec![],
            settings,
            vec![80.0],
        );
        assert!(e.unwrap_err().contains("no latency"));
        let input = parm_input(&window, &latency, vec![0.3, 0.4], settings, vec![80.0]).unwrap();
        // d = (2, 1) Mbit/s, C = (4, 1): θ̄ = 3/5 aggregate, (0.5 + 1)/2 as the mean.
        assert!((input.theta_bar - 0.6).abs() < 1e-9 && (input.xi - 0.06).abs() < 1e-9);
        assert_eq!(
            (input.capacity, input.latency),
            (vec![4.0, 1.0], vec![vec![40.0, 60.0]])
        );
        assert!((input.demand[0][0] - 3.0).abs() < 1e-9);
        let mean = ParmSettings {
            aggregate_theta_bar: false,
            ..settings
        };
        let input = parm_input(&window, &latency, vec![], mean, vec![80.0]).unwrap();
        assert!((input.theta_bar - 0.75).abs() < 1e-9);
    }

    #[test]
    fn rules_keep_the_sites_with_a_share() {
        // alpha[n][l][m]: application 0 splits region 1 between sites 0 and 2.
        let alpha = vec![vec![vec![1.0, 0.0, 0.0], vec![0.25, -1e-12, 0.75]]];
        assert_eq!(region_shares(&alpha, 0), [vec![(0, 1.0)]]);
        assert_eq!(region_shares(&alpha, 1), [vec![(0, 0.25), (2, 0.75)]]);
        let shares = site_shares(&[vec![1.0, 3.0]], &alpha);
        assert!((shares[0] - 0.4375).abs() < 1e-9 && (shares[2] - 0.5625).abs() < 1e-9);
    }
}
