//! Section 5 of the LDP/PARM paper (papers/000) as an offline experiment: LDP's prices from
//! BASE's congestion (§5.2.1), BASE, PURM and PARM over one hour of measured traffic (§5.2.2),
//! and PARM as τ and P_max vary (§5.2.3). Pure computation: `reproduce` writes the files.
//!
//! Time: T_LDP = 1 h, T_PARM = T_SM = 10 min (Eq. 1 holds). Period 0 is the hour before, served
//! by BASE: its measurement is the historical congestion LDP prices from and the first PARM
//! input. Periods 1–6 are the simulated hour: PARM period k solves with the λ and θ̄ measured
//! in period k − 1 (under its own mapping), then serves period k's fresh Poisson traffic. The
//! metrics are averages over periods 1–6. Every case sees the same draws of traffic (the
//! measured λ does not depend on the mapping), so cases differ by their mapping alone.
//!
//! Besides the paper's three cases, `PARM-s` is PARM given its latencies (t_lm, t_n) in seconds
//! rather than milliseconds: (4a) adds latency to Ψ × price, so the unit of latency sets how much
//! the price can weigh. In ms a price (0.2–0.5, × Ψ = 0.5) is worth a fraction of one ms and
//! PARM maps as PURM does; in s it is worth 100–250 ms. The paper does not state the unit it
//! solved with; this case shows what the choice does, it is not one of the paper's cases.

use super::cabp::PriceRange;
use super::cost::bandwidth_cost;
use super::ldp::{ldp, LdpParams, Prices};
use super::measure::{
    congestion, local_mapping, mean, mean_latency, population_variance, response_times, site_load,
};
use super::parm::{solve, Mapping, ParmError, ParmInput};
use super::traffic::{self, Latencies};
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::Serialize;

/// A mapping meets (4c) if its left-hand side exceeds t_n by no more than this (ms): the
/// simplex's rounding.
const RESPONSE_TOLERANCE_MS: f64 = 1e-6;

/// The experiment's parameters (Table 3 and §5.1–5.2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    pub seed: u64,
    /// PARM periods in the simulated hour.
    pub periods: usize,
    /// T_SM = T_PARM, seconds.
    pub period_s: f64,
    /// The fixed price of BASE and PURM.
    pub p_const: f64,
    /// Ψ of PARM.
    pub psi: f64,
    /// ξ = τ·θ̄ (Eq. 8).
    pub tau: f64,
    pub ldp: LdpParams,
    /// §5.2.3's τ values.
    pub taus: Vec<f64>,
    /// §5.2.3's P_max values (P_min stays at `ldp.range.p_min`).
    pub p_maxes: Vec<f64>,
}

impl Settings {
    /// The paper's: 6 periods of 600 s, P_const 0.3, Ψ 0.5, τ 0.15, LDP as Table 3, τ from 0.1
    /// to 0.3 in steps of 0.025, P_max from 0.35 to 0.8 in steps of 0.05 (the paper gives the
    /// range, not the step).
    pub fn paper(seed: u64) -> Settings {
        Settings {
            seed,
            periods: 6,
            period_s: 600.0,
            p_const: 0.3,
            psi: 0.5,
            tau: 0.15,
            ldp: LdpParams::paper(),
            taus: (0..=8).map(|i| 0.1 + 0.025 * f64::from(i)).collect(),
            p_maxes: (0..=9).map(|i| 0.35 + 0.05 * f64::from(i)).collect(),
        }
    }
}

/// One traffic pattern's users and traffic.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pattern {
    /// 1–4, as in Table 2.
    pub number: usize,
    /// U_l = U_m.
    pub users: Vec<f64>,
    /// Expected λ_nl (Eq. 6), `[n][l]`.
    pub demand: Vec<Vec<f64>>,
    /// Measured λ_nl of periods 0..=periods.
    pub measured: Vec<Vec<Vec<f64>>>,
}

/// Everything drawn from the seed.
#[derive(Debug, Clone, PartialEq)]
pub struct World {
    pub latency: Latencies,
    /// C_m, equal for every site.
    pub capacity: Vec<f64>,
    pub deadline: Vec<f64>,
    pub patterns: Vec<Pattern>,
}

/// Draws the latencies, then each pattern's measured traffic, from one seeded generator.
pub fn world(settings: &Settings) -> Result<World, String> {
    let mut rng = StdRng::seed_from_u64(settings.seed);
    let sites = traffic::USERS[0].len();
    let latency = traffic::latencies(&mut rng, sites, sites);
    let capacity = traffic::capacity(&traffic::demand(&traffic::USERS[0], &traffic::PER_USER));
    let patterns = traffic::USERS
        .iter()
        .enumerate()
        .map(|(i, users)| {
            let demand = traffic::demand(users, &traffic::PER_USER);
            let measured = (0..=settings.periods)
                .map(|_| traffic::measure(&mut rng, &demand, settings.period_s))
                .collect::<Result<_, _>>()?;
            Ok(Pattern {
                number: i + 1,
                users: users.to_vec(),
                demand,
                measured,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(World {
        latency,
        capacity: vec![capacity; sites],
        deadline: traffic::DEADLINE_MS.to_vec(),
        patterns,
    })
}

/// The three compared cases of Table 4, and PARM with latencies in seconds (see the module's
/// documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Case {
    #[serde(rename = "BASE")]
    Base,
    #[serde(rename = "PURM")]
    Purm,
    #[serde(rename = "PARM")]
    Parm,
    #[serde(rename = "PARM-s")]
    ParmSeconds,
}

impl Case {
    pub const ALL: [Case; 4] = [Case::Base, Case::Purm, Case::Parm, Case::ParmSeconds];

    pub fn name(self) -> &'static str {
        match self {
            Case::Base => "BASE",
            Case::Purm => "PURM",
            Case::Parm => "PARM",
            Case::ParmSeconds => "PARM-s",
        }
    }

    /// What one unit of the world's latency (ms) is in the LP's unit.
    fn latency_unit(self) -> f64 {
        match self {
            Case::ParmSeconds => 1e-3,
            _ => 1.0,
        }
    }
}

/// §5.1.2's metrics, averaged over the simulated periods.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    /// Population variance of the sites' congestion D_m / C_m.
    pub variance: f64,
    /// Σ_m g(D_m) (Eq. 7).
    pub cost: f64,
    /// Σ_m p_m D_m.
    pub payment: f64,
    /// Request-weighted Σ λ α t / Σ λ, ms.
    pub latency_ms: f64,
    /// Per application, the largest (4c) left-hand side over the periods, ms.
    pub response_time_ms: Vec<f64>,
    /// Whether every (4c) held in every period.
    pub response_time_met: bool,
}

/// One solved LP, kept so an independent solver can check it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lp {
    pub name: String,
    pub input: ParmInput,
    pub mapping: Mapping,
}

/// A case's outcome: its metrics, or why PARM found no mapping in some period.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    pub metrics: Option<Metrics>,
    pub infeasible: Option<String>,
}

/// LDP's prices for one pattern from BASE's congestion in period 0 (§5.2.1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LdpTable {
    pub pattern: usize,
    /// θ_m measured under BASE.
    pub theta: Vec<f64>,
    pub users: Vec<f64>,
    pub prices: Prices,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseRow {
    pub pattern: usize,
    pub case: Case,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// PARM (or PARM-s) at one value of a swept parameter.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepRow {
    pub pattern: usize,
    pub case: Case,
    pub x: f64,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// The whole reproduction.
#[derive(Debug, Clone, PartialEq)]
pub struct Reproduction {
    pub settings: Settings,
    pub world: World,
    pub ldp: Vec<LdpTable>,
    pub cases: Vec<CaseRow>,
    pub tau_sweep: Vec<SweepRow>,
    pub p_max_sweep: Vec<SweepRow>,
    /// Every LP solved at the default τ (the cases and the P_max sweep), in order.
    pub lps: Vec<Lp>,
}

impl Reproduction {
    /// PARM's payment relative to BASE's, percent, for a pattern; `None` if either is missing.
    pub fn payment_change(&self, pattern: usize) -> Option<f64> {
        let payment = |case: Case| {
            self.cases
                .iter()
                .find(|r| r.pattern == pattern && r.case == case)
                .and_then(|r| r.outcome.metrics.as_ref())
                .map(|m| m.payment)
        };
        Some((payment(Case::Parm)? / payment(Case::Base)? - 1.0) * 100.0)
    }
}

/// Runs Section 5: LDP per pattern, the cases, and the τ sweep (PARM and PARM-s) and P_max
/// sweep (PARM) of §5.2.3.
pub fn run(settings: &Settings) -> Result<Reproduction, String> {
    let world = world(settings)?;
    let mut ldp_tables = Vec::new();
    let mut cases = Vec::new();
    let mut tau_sweep = Vec::new();
    let mut p_max_sweep = Vec::new();
    let mut lps = Vec::new();
    for pattern in &world.patterns {
        let table = ldp_table(&world, pattern, &settings.ldp)?;
        let fixed = vec![settings.p_const; world.capacity.len()];
        let tp = pattern.number;
        let run = |case: Case, prices: &[f64], tau: f64, label: &str| {
            let (prices, psi) = match case {
                Case::Base | Case::Purm => (fixed.clone(), 0.0),
                Case::Parm | Case::ParmSeconds => (prices.to_vec(), settings.psi),
            };
            Run {
                world: &world,
                pattern,
                case,
                prices,
                psi,
                tau,
                name: format!("tp{tp}-{}{label}", case.name().to_lowercase()),
            }
        };
        for case in Case::ALL {
            let run = run(case, &table.prices.prices, settings.tau, "");
            let outcome = if case == Case::Base {
                run.base()
            } else {
                run.optimised(&mut lps)?
            };
            cases.push(CaseRow {
                pattern: tp,
                case,
                outcome,
            });
        }
        // The τ sweep's LPs are not kept: with them the LP files would pass 5 MB, and every
        // other run (the cases, the P_max sweep) uses the default τ.
        for case in [Case::Parm, Case::ParmSeconds] {
            for &tau in &settings.taus {
                let run = run(case, &table.prices.prices, tau, &format!("-tau{tau:.3}"));
                tau_sweep.push(SweepRow {
                    pattern: tp,
                    case,
                    x: tau,
                    outcome: run.optimised(&mut Vec::new())?,
                });
            }
        }
        for &p_max in &settings.p_maxes {
            let params = LdpParams {
                range: PriceRange {
                    p_max,
                    ..settings.ldp.range
                },
                ..settings.ldp
            };
            let prices = ldp_table(&world, pattern, &params)?.prices.prices;
            let run = run(
                Case::Parm,
                &prices,
                settings.tau,
                &format!("-pmax{p_max:.2}"),
            );
            p_max_sweep.push(SweepRow {
                pattern: tp,
                case: Case::Parm,
                x: p_max,
                outcome: run.optimised(&mut lps)?,
            });
        }
        ldp_tables.push(table);
    }
    Ok(Reproduction {
        settings: settings.clone(),
        world,
        ldp: ldp_tables,
        cases,
        tau_sweep,
        p_max_sweep,
        lps,
    })
}

/// BASE's load in period 0: the historical usage LDP and the first PARM period start from.
fn history(world: &World, pattern: &Pattern) -> Vec<f64> {
    let base = local_mapping(pattern.demand.len(), world.capacity.len());
    site_load(&pattern.measured[0], &base)
}

/// §5.2.1: LDP on BASE's measured congestion, with region m's users as site m's population.
fn ldp_table(world: &World, pattern: &Pattern, params: &LdpParams) -> Result<LdpTable, String> {
    let theta = congestion(&history(world, pattern), &world.capacity);
    let prices = ldp(&theta, &pattern.users, params)
        .map_err(|e| format!("traffic pattern {}: {e}", pattern.number))?;
    Ok(LdpTable {
        pattern: pattern.number,
        theta,
        users: pattern.users.clone(),
        prices,
    })
}

/// One case of one pattern over the simulated periods.
struct Run<'a> {
    world: &'a World,
    pattern: &'a Pattern,
    case: Case,
    /// p_m: what is paid, and (weighted by Ψ) what PARM minimises.
    prices: Vec<f64>,
    psi: f64,
    tau: f64,
    /// Prefix of the LPs' names.
    name: String,
}

impl Run<'_> {
    /// BASE: every period served by the local mapping.
    fn base(&self) -> Outcome {
        let alpha = local_mapping(self.pattern.demand.len(), self.world.capacity.len());
        let periods = &self.pattern.measured[1..];
        let metrics = average(periods.iter().map(|demand| self.period(demand, &alpha)));
        Outcome {
            metrics: Some(metrics),
            infeasible: None,
        }
    }

    /// PURM or PARM: each period's mapping solved from the previous period's measurement.
    /// An infeasible period ends the case with its reason; any other solver error is returned.
    fn optimised(&self, lps: &mut Vec<Lp>) -> Result<Outcome, String> {
        let mut previous_load = history(self.world, self.pattern);
        let mut periods = Vec::new();
        for k in 1..self.pattern.measured.len() {
            let theta_bar = mean(&congestion(&previous_load, &self.world.capacity));
            let unit = self.case.latency_unit();
            let input = ParmInput {
                demand: self.pattern.measured[k - 1].clone(),
                latency: (self.world.latency.region_site.iter())
                    .map(|row| row.iter().map(|t| t * unit).collect())
                    .collect(),
                capacity: self.world.capacity.clone(),
                prices: self.prices.clone(),
                psi: self.psi,
                theta_bar,
                xi: self.tau * theta_bar,
                deadline: self.world.deadline.iter().map(|t| t * unit).collect(),
            };
            let mapping = match solve(&input) {
                Ok(mapping) => mapping,
                Err(e @ ParmError::Infeasible { .. }) => {
                    return Ok(Outcome {
                        metrics: None,
                        infeasible: Some(format!("period {k}: {e}")),
                    })
                }
                Err(e) => return Err(format!("{} period {k}: {e}", self.name)),
            };
            let demand = &self.pattern.measured[k];
            periods.push(self.period(demand, &mapping.alpha));
            previous_load = site_load(demand, &mapping.alpha);
            lps.push(Lp {
                name: format!("{}-p{k}", self.name),
                input,
                mapping,
            });
        }
        Ok(Outcome {
            metrics: Some(average(periods.into_iter())),
            infeasible: None,
        })
    }

    /// The metrics of one period's traffic served by a mapping.
    fn period(&self, demand: &[Vec<f64>], alpha: &[Vec<Vec<f64>>]) -> Metrics {
        let capacity = &self.world.capacity;
        let load = site_load(demand, alpha);
        let response = response_times(&self.world.latency.region_site, alpha);
        Metrics {
            variance: population_variance(&congestion(&load, capacity)),
            cost: load
                .iter()
                .zip(capacity)
                .map(|(&d, &c)| bandwidth_cost(d, c))
                .sum(),
            payment: load.iter().zip(&self.prices).map(|(d, p)| d * p).sum(),
            // Without demand there is no latency to average; Table 2's patterns always have some.
            latency_ms: mean_latency(demand, &self.world.latency.region_site, alpha).unwrap_or(0.0),
            response_time_met: response
                .iter()
                .zip(&self.world.deadline)
                .all(|(r, t)| *r <= t + RESPONSE_TOLERANCE_MS),
            response_time_ms: response,
        }
    }
}

/// The mean of each metric over the periods; the worst response time; whether all met (4c).
fn average(periods: impl Iterator<Item = Metrics>) -> Metrics {
    let periods: Vec<Metrics> = periods.collect();
    let of = |f: fn(&Metrics) -> f64| mean(&periods.iter().map(f).collect::<Vec<_>>());
    let applications = periods.first().map_or(0, |p| p.response_time_ms.len());
    Metrics {
        variance: of(|m| m.variance),
        cost: of(|m| m.cost),
        payment: of(|m| m.payment),
        latency_ms: of(|m| m.latency_ms),
        response_time_ms: (0..applications)
            .map(|n| {
                periods
                    .iter()
                    .filter_map(|p| p.response_time_ms.get(n).copied())
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .collect(),
        response_time_met: periods.iter().all(|p| p.response_time_met),
    }
}
