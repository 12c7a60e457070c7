//! `controller`: the SM, LDP and PARM modules of papers/000 (Figure 2) over the control plane.
//!
//! Every `sm_period` the SM module asks each CDN site for the bytes it served per (application,
//! region) and its capacity C_m, and each border router for the latency it measured to every
//! site. Every `parm_period` PARM solves (4a)–(4f) on the last PARM period's measurements —
//! λ_nl, θ̄, t_lm — with the prices LDP set, and installs the proportions α_nlm on the border
//! routers as FIB rules. LDP runs with the first PARM period (on the congestion the borders'
//! initial nearest-site rules produced, as Section 5.2.1 prices from BASE) and then every
//! `ldp_period` on that period's congestion. Periods must satisfy Equation (1),
//! T_LDP > T_PARM ≥ T_SM, and be multiples of T_SM. An infeasible PARM is logged naming its
//! constraint family and the borders keep the last valid rules.
//!
//! θ̄ in (4b) is the sites' aggregate congestion Σd_m/ΣC_m by default, which is the paper's
//! mean of Θ whenever the C_m are equal (its Section 5); `theta_bar = "mean"` takes the mean
//! literally, which makes (4b) infeasible once one site's capacity drops far below the others'.
//!
//! `mode = "base"` never installs rules (requests stay with the nearest site) and prices at
//! P_const; `"purm"` solves with Ψ = 0 and prices at P_const; `"parm"` (default) is the paper's.
//!
//! Writes to `$CDNLAB_OUT_DIR`: `controller.json` (every SM period and every PARM solution),
//! `lp/` (each LP's input and solution), and the plots `prices.svg`, `congestion.svg`,
//! `mapping.svg`, `cost.svg`, `latency.svg`.

mod record;

use super::messages::{
    AppRule, BorderRequest, BorderResponse, FibRules, SiteRequest, SiteResponse, SiteUsage,
};
use crate::control::{Client, Identity};
use crate::pricing::cabp::PriceRange;
use crate::pricing::ldp::{ldp, LdpParams};
use crate::pricing::parm::{self, ParmInput};
use crate::roles::config::Keys;
use crate::roles::control::load_identity;
use crate::roles::control::DEFAULT_CONTROL_PORT;
use crate::roles::env::NodeEnv;
use record::{Period, Recorder, Tick};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use toml::Table;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Base,
    Purm,
    Parm,
}

#[derive(Debug, Clone)]
pub struct ControllerConfig {
    pub sites: Vec<String>,
    /// U_m: the users of each site's region (LDP's population weights), in `sites` order.
    pub users: Vec<f64>,
    /// The border routers' node names and their regions' names, in one order.
    pub borders: Vec<String>,
    pub regions: Vec<String>,
    pub apps: Vec<String>,
    /// t_n per application, milliseconds.
    pub deadlines_ms: Vec<f64>,
    pub sm_period: Duration,
    pub parm_period: Duration,
    pub ldp_period: Duration,
    pub mode: Mode,
    /// Ψ of (4a).
    pub psi: f64,
    /// ξ = τ·θ̄ (Equation 8).
    pub tau: f64,
    /// θ̄ of (4b) as Σ_m d_m / Σ_m C_m (true) or as the mean of the θ_m (false). They are
    /// equal when every C_m is, as in the paper's Section 5; when capacities differ, only the
    /// first keeps the total demand inside the band (Σ_m C_m·θ̄ = Σ_m d_m), while the mean can
    /// put it outside, making (4b) infeasible for any mapping.
    pub aggregate_theta_bar: bool,
    pub ldp: LdpParams,
    pub p_const: f64,
    pub control_port: u16,
}

pub fn config(table: &Table) -> Result<ControllerConfig, String> {
    let keys = Keys::new(table);
    keys.only(
        &[
            "sites",
            "users",
            "borders",
            "regions",
            "apps",
            "deadlines",
            "sm_period",
            "parm_period",
            "ldp_period",
            "mode",
            "psi",
            "tau",
            "theta_bar",
            "p_const",
            "p_min",
            "p_max",
            "delta",
            "control_port",
        ],
        "role controller",
    )?;
    let sites = keys.items("sites")?;
    let borders = keys.items("borders")?;
    let regions = keys.items("regions")?;
    let apps = keys.items("apps")?;
    if regions.len() != borders.len() {
        return keys.fail("regions", "needs one region name per border router");
    }
    let users = keys.numbers("users")?;
    if users.len() != sites.len() {
        return keys.fail("users", "needs one number of users per site");
    }
    let deadlines_ms = keys
        .items("deadlines")?
        .iter()
        .map(|text| {
            netem::units::parse_duration_ns(text)
                .map(|ns| ns as f64 / 1e6)
                .or_else(|e| keys.fail("deadlines", e))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if deadlines_ms.len() != apps.len() {
        return keys.fail(
            "deadlines",
            "needs one expected response time per application",
        );
    }
    let period = |key: &str, default: u64| -> Result<Duration, String> {
        let d = keys.duration(key)?.unwrap_or(Duration::from_secs(default));
        if d.is_zero() {
            return keys.fail(key, "must be above zero");
        }
        Ok(d)
    };
    let (sm, parm, ldp) = (
        period("sm_period", 5)?,
        period("parm_period", 10)?,
        period("ldp_period", 30)?,
    );
    check_periods(sm, parm, ldp)?;
    let mode = match keys.string("mode")?.unwrap_or("parm") {
        "base" => Mode::Base,
        "purm" => Mode::Purm,
        "parm" => Mode::Parm,
        other => return keys.fail("mode", format!("`{other}`: expected base, purm or parm")),
    };
    let mut params = LdpParams::paper();
    params.range = PriceRange {
        p_min: keys.number("p_min")?.unwrap_or(params.range.p_min),
        p_max: keys.number("p_max")?.unwrap_or(params.range.p_max),
    };
    params.delta = keys.number("delta")?.unwrap_or(params.delta);
    if params.range.p_min > params.range.p_max {
        return keys.fail("p_max", "is below p_min");
    }
    Ok(ControllerConfig {
        sites,
        users,
        borders,
        regions,
        apps,
        deadlines_ms,
        sm_period: sm,
        parm_period: parm,
        ldp_period: ldp,
        mode,
        psi: keys.number("psi")?.unwrap_or(0.5),
        tau: keys.number("tau")?.unwrap_or(0.15),
        aggregate_theta_bar: match keys.string("theta_bar")?.unwrap_or("aggregate") {
            "aggregate" => true,
            "mean" => false,
            other => {
                return keys.fail(
                    "theta_bar",
                    format!("`{other}`: expected aggregate or mean"),
                )
            }
        },
        ldp: params,
        p_const: keys.number("p_const")?.unwrap_or(0.3),
        control_port: keys.port("control_port", DEFAULT_CONTROL_PORT)?,
    })
}

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

/// A kept control-plane connection to one node, made again after a failure.
struct Peer {
    name: String,
    client: Option<Client>,
}

impl Peer {
    /// One call, the connection (made again if it failed) and the answer each awaited up to
    /// `limit`.
    async fn call<Req, Resp>(
        &mut self,
        port: u16,
        id: &Identity,
        request: &Req,
        limit: Duration,
    ) -> Option<Resp>
    where
        Req: serde::Serialize,
        Resp: serde::de::DeserializeOwned,
    {
        if self.client.is_none() {
            let addr = format!("{}:{port}", self.name);
            let connect = crate::roles::control::connect(&addr, &self.name, id);
            self.client = tokio::time::timeout(limit, connect).await.ok()?.ok();
        }
        let answer = tokio::time::timeout(limit, self.client.as_ref()?.call(request)).await;
        match answer {
            Ok(Ok(response)) => Some(response),
            Ok(Err(_)) => {
                self.client = None;
                None
            }
            Err(_) => None,
        }
    }
}

/// Calls every peer at once with its request: one slow peer (a congested site's link carries
/// its control traffic too) must not hold up the others. Answers come back in `peers` order.
async fn call_all<Req, Resp>(
    peers: &mut Vec<Peer>,
    port: u16,
    id: &Arc<Identity>,
    requests: Vec<Req>,
    limit: Duration,
) -> Vec<Option<Resp>>
where
    Req: serde::Serialize + Send + Sync + 'static,
    Resp: serde::de::DeserializeOwned + Send + 'static,
{
    let mut calls = tokio::task::JoinSet::new();
    for (i, (mut peer, request)) in std::mem::take(peers).into_iter().zip(requests).enumerate() {
        let id = id.clone();
        calls.spawn(async move {
            let answer = peer.call(port, &id, &request, limit).await;
            (i, peer, answer)
        });
    }
    let mut done = calls.join_all().await;
    done.sort_by_key(|(i, ..)| *i);
    done.into_iter()
        .map(|(_, peer, answer)| {
            peers.push(peer);
            answer
        })
        .collect()
}

/// One SM period's measurements, as the LP wants them (Mbit/s, ms).
#[derive(Debug, Clone, Default)]
struct Window {
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
    fn new(sites: usize, apps: usize, regions: usize) -> Window {
        Window {
            seconds: vec![0.0; sites],
            megabits: vec![0.0; sites],
            demand: vec![vec![vec![0.0; regions]; apps]; sites],
            capacity: vec![None; sites],
        }
    }

    fn add(&mut self, config: &ControllerConfig, m: usize, usage: &SiteUsage) {
        self.seconds[m] += usage.interval_s;
        self.capacity[m] = Some(usage.capacity_bps / 1e6);
        for d in &usage.demand {
            let mbit = d.bytes as f64 * 8.0 / 1e6;
            self.megabits[m] += mbit;
            let n = config.apps.iter().position(|a| *a == d.app);
            let l = config.regions.iter().position(|r| *r == d.region);
            if let (Some(n), Some(l)) = (n, l) {
                self.demand[m][n][l] += mbit;
            }
        }
    }

    /// d_m in Mbit/s, C_m in Mbit/s and θ_m (Equation 2); `None` until every site answered.
    fn congestion(&self) -> Option<(Vec<f64>, Vec<f64>, Vec<f64>)> {
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
        let theta = crate::pricing::measure::congestion(&usage, &capacity);
        Some((usage, capacity, theta))
    }

    /// λ_nl in Mbit/s: each site's part over the time that site's counters covered (a site
    /// that missed an SM period covers it in its next answer), summed over the sites.
    fn demand_rates(&self) -> Vec<Vec<f64>> {
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

struct Controller {
    config: ControllerConfig,
    identity: Arc<Identity>,
    sites: Vec<Peer>,
    borders: Vec<Peer>,
    /// t_lm, ms: the latest each border reported.
    latency: Vec<Vec<Option<f64>>>,
    prices: Option<Vec<f64>>,
    rules_version: u64,
    /// The version of the rules each border said it forwards by at the last SM period.
    border_rules: Vec<Option<u64>>,
    recorder: Recorder,
}

impl Controller {
    /// The SM module: one measurement of every site and border.
    async fn measure(&mut self) -> Vec<Option<SiteUsage>> {
        let (port, limit) = (self.config.control_port, self.config.sm_period * 4 / 5);
        let requests = vec![SiteRequest::Measure; self.sites.len()];
        let usages: Vec<Option<SiteResponse>> =
            call_all(&mut self.sites, port, &self.identity, requests, limit).await;
        let requests = vec![BorderRequest::Report; self.borders.len()];
        let reports: Vec<Option<BorderResponse>> =
            call_all(&mut self.borders, port, &self.identity, requests, limit).await;
        for (l, report) in reports.into_iter().enumerate() {
            let Some(BorderResponse::Report(report)) = report else {
                self.border_rules[l] = None;
                continue;
            };
            self.border_rules[l] = Some(report.rules_version);
            for (site, ms) in &report.latency_ms {
                if let Some(m) = self.config.sites.iter().position(|s| s == site) {
                    self.latency[l][m] = Some(*ms);
                }
            }
        }
        usages
            .into_iter()
            .map(|u| u.map(|SiteResponse::Usage(u)| u))
            .collect()
    }

    /// LDP (Algorithm 2) on a period's congestion; `mode` base and purm price at P_const.
    fn price(&mut self, theta: &[f64], t_s: f64) {
        let prices = match self.config.mode {
            Mode::Parm => match ldp(theta, &self.config.users, &self.config.ldp) {
                Ok(prices) => {
                    tracing::info!(
                        "controller: LDP at {t_s:.1} s: variance {:.4} → {} prices {:?}",
                        prices.variance,
                        if prices.location_dependent {
                            "location-dependent"
                        } else {
                            "one price,"
                        },
                        prices.prices
                    );
                    prices.prices
                }
                Err(e) => {
                    tracing::warn!("controller: LDP at {t_s:.1} s failed ({e}); prices unchanged");
                    return;
                }
            },
            Mode::Base | Mode::Purm => vec![self.config.p_const; theta.len()],
        };
        self.prices = Some(prices);
    }

    /// Region `l`'s FIB rules: for each application, the sites with a share above zero.
    fn rules(&self, l: usize, version: u64, alpha: &[Vec<Vec<f64>>]) -> FibRules {
        let rules = self
            .config
            .apps
            .iter()
            .zip(alpha)
            .map(|(app, shares)| AppRule {
                app: app.clone(),
                sites: self
                    .config
                    .sites
                    .iter()
                    .zip(&shares[l])
                    .map(|(site, share)| (site.clone(), share.max(0.0)))
                    .filter(|(_, share)| *share > 1e-9)
                    .collect(),
            })
            .collect();
        FibRules { version, rules }
    }

    /// PARM on the last period's measurements; installs the mapping on every border.
    async fn map(&mut self, window: &Window, t_s: f64) -> Period {
        let mut period = Period {
            t_s,
            ..Period::default()
        };
        let Some((usage, capacity, theta)) = window.congestion() else {
            period.error = Some("not every site was measured in the period".into());
            return period;
        };
        let latency: Option<Vec<Vec<f64>>> = self
            .latency
            .iter()
            .map(|row| row.iter().copied().collect())
            .collect();
        let Some(latency) = latency else {
            period.error = Some("no latency measured yet from every region to every site".into());
            return period;
        };
        let theta_bar = if self.config.aggregate_theta_bar {
            usage.iter().sum::<f64>() / capacity.iter().sum::<f64>()
        } else {
            crate::pricing::measure::mean(&theta)
        };
        let input = ParmInput {
            demand: window.demand_rates(),
            latency,
            capacity,
            prices: self.prices.clone().unwrap_or_default(),
            psi: if self.config.mode == Mode::Parm {
                self.config.psi
            } else {
                0.0
            },
            theta_bar,
            xi: self.config.tau * theta_bar,
            deadline: self.config.deadlines_ms.clone(),
        };
        let solved = parm::solve(&input);
        self.recorder.write_lp(t_s, &input, solved.as_ref().ok());
        let mapping = match solved {
            Ok(mapping) => mapping,
            Err(e) => {
                tracing::warn!(
                    "controller: PARM at {t_s:.1} s: {e}; the borders keep the last valid rules"
                );
                period.error = Some(e.to_string());
                period.input = Some(input);
                return period;
            }
        };
        self.rules_version += 1;
        let version = self.rules_version;
        let requests: Vec<BorderRequest> = (0..self.borders.len())
            .map(|l| BorderRequest::Install(self.rules(l, version, &mapping.alpha)))
            .collect();
        let (port, limit) = (self.config.control_port, self.config.sm_period * 4 / 5);
        let answers: Vec<Option<BorderResponse>> =
            call_all(&mut self.borders, port, &self.identity, requests, limit).await;
        for (peer, answer) in self.borders.iter().zip(answers) {
            match answer {
                Some(BorderResponse::Installed { .. }) => {}
                Some(BorderResponse::Refused(e)) => {
                    tracing::warn!("controller: {} refused rules {version}: {e}", peer.name)
                }
                _ => tracing::warn!(
                    "controller: {} did not take rules {version}; it keeps its last ones",
                    peer.name
                ),
            }
        }
        tracing::info!(
            "controller: PARM at {t_s:.1} s: rules {version} installed (objective {:.3})",
            mapping.objective
        );
        period.version = Some(version);
        period.site_share = crate::pricing::measure::site_load(&input.demand, &mapping.alpha)
            .iter()
            .map(|load| load / input.demand.iter().flatten().sum::<f64>().max(1e-12))
            .collect();
        period.input = Some(input);
        period.alpha = Some(mapping.alpha);
        period
    }

    async fn run(mut self) {
        let config = self.config.clone();
        let per_parm = (config.parm_period.as_nanos() / config.sm_period.as_nanos()) as u64;
        let per_ldp = (config.ldp_period.as_nanos() / config.sm_period.as_nanos()) as u64;
        let (s, n, l) = (config.sites.len(), config.apps.len(), config.regions.len());
        let mut parm_window = Window::new(s, n, l);
        let mut ldp_window = Window::new(s, n, l);
        let mut next_ldp = per_parm;
        let started = tokio::time::Instant::now();
        let mut ticker = tokio::time::interval_at(started + config.sm_period, config.sm_period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The counters restart now: the first period is measured from here.
        self.measure().await;
        for k in 1u64.. {
            ticker.tick().await;
            let t_s = started.elapsed().as_secs_f64();
            let usages = self.measure().await;
            let mut tick_window = Window::new(s, n, l);
            for (m, usage) in usages.iter().enumerate() {
                if let Some(usage) = usage {
                    for w in [&mut tick_window, &mut parm_window, &mut ldp_window] {
                        w.add(&config, m, usage);
                    }
                }
            }
            self.recorder.tick(Tick::new(
                t_s,
                &tick_window.congestion(),
                self.prices.as_deref(),
                config.p_const,
                &self.latency,
                self.rules_version,
                &self.border_rules,
            ));
            if k % per_parm == 0 {
                if k >= next_ldp {
                    if let Some((_, _, theta)) = ldp_window.congestion() {
                        self.price(&theta, t_s);
                    }
                    ldp_window = Window::new(s, n, l);
                    next_ldp = k + per_ldp;
                }
                if config.mode != Mode::Base && self.prices.is_some() {
                    let period = self.map(&parm_window, t_s).await;
                    self.recorder.period(period);
                }
                parm_window = Window::new(s, n, l);
            }
            if let Err(e) = self.recorder.save(&config) {
                tracing::warn!("controller: writing results: {e}");
            }
        }
    }
}

pub async fn run(
    config: ControllerConfig,
    env: &NodeEnv,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    let identity = load_identity(env)?;
    let out = env.out_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let peers = |names: &[String]| {
        names
            .iter()
            .map(|name| Peer {
                name: name.clone(),
                client: None,
            })
            .collect()
    };
    tracing::info!(
        "controller: mode {:?}; SM every {:?}, PARM every {:?}, LDP every {:?}; sites {}; borders {}",
        config.mode,
        config.sm_period,
        config.parm_period,
        config.ldp_period,
        config.sites.join(", "),
        config.borders.join(", ")
    );
    let controller = Controller {
        identity,
        sites: peers(&config.sites),
        borders: peers(&config.borders),
        latency: vec![vec![None; config.sites.len()]; config.borders.len()],
        prices: None,
        rules_version: 0,
        border_rules: vec![None; config.borders.len()],
        recorder: Recorder::new(out),
        config,
    };
    tokio::select! {
        () = controller.run() => Ok(()),
        () = shutdown => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().expect("test TOML")
    }

    const GOOD: &str = r#"
        sites = ["s1", "s2"]
        users = ["100", 300]
        borders = ["b1", "b2"]
        regions = ["r1", "r2"]
        apps = "a1,a2"
        deadlines = "60ms,45ms"
    "#;

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

    #[test]
    fn config_reads_the_paper_defaults_and_refuses_bad_periods() {
        let c = config(&table(GOOD)).expect("valid");
        assert_eq!(c.users, [100.0, 300.0]);
        assert_eq!(c.deadlines_ms, [60.0, 45.0]);
        assert_eq!(c.mode, Mode::Parm);
        assert_eq!((c.psi, c.tau, c.p_const), (0.5, 0.15, 0.3));
        assert!(c.aggregate_theta_bar);
        let bad = format!("{GOOD}\nsm_period = '10s'\nparm_period = '5s'");
        let e = config(&table(&bad)).unwrap_err();
        assert!(e.contains("T_LDP > T_PARM ≥ T_SM"), "{e}");
    }

    #[test]
    fn config_errors_name_the_key() {
        for (extra, key) in [
            ("mode = 'cheap'", "`mode`"),
            ("theta_bar = 'median'", "`theta_bar`"),
            ("p_min = 0.6", "`p_max`"),
            ("typo = 1", "`typo`"),
        ] {
            let e = config(&table(&format!("{GOOD}\n{extra}"))).unwrap_err();
            assert!(e.contains(key), "{extra}: {e}");
        }
        let e = config(&table(
            &GOOD.replace("deadlines = \"60ms,45ms\"", "deadlines = \"60ms\""),
        ))
        .unwrap_err();
        assert!(
            e.contains("`deadlines`: needs one expected response time per application"),
            "{e}"
        );
        let e = config(&table(
            &GOOD.replace("users = [\"100\", 300]", "users = [1]"),
        ))
        .unwrap_err();
        assert!(e.contains("`users`"), "{e}");
    }

    fn usage(
        site: &str,
        seconds: f64,
        capacity_bps: f64,
        demand: &[(&str, &str, u64)],
    ) -> SiteUsage {
        SiteUsage {
            site: site.into(),
            interval_s: seconds,
            capacity_bps,
            demand: demand
                .iter()
                .map(|(app, region, bytes)| super::super::messages::Demand {
                    app: app.to_string(),
                    region: region.to_string(),
                    bytes: *bytes,
                })
                .collect(),
        }
    }

    /// The SM module's sums: d_m and λ_nl in Mbit/s over the time each site covered, C_m the
    /// latest reported, θ_m = d_m / C_m; nothing until every site answered.
    #[test]
    fn window_turns_site_counters_into_rates() {
        let c = config(&table(GOOD)).expect("valid");
        let mut window = Window::new(2, 2, 2);
        window.add(&c, 0, &usage("s1", 5.0, 4e6, &[("a1", "r1", 1_250_000)]));
        assert!(window.congestion().is_none(), "s2 has not answered");
        window.add(
            &c,
            1,
            &usage("s2", 5.0, 2e6, &[("a2", "r2", 625_000), ("a9", "r1", 1)]),
        );
        window.add(&c, 0, &usage("s1", 5.0, 1e6, &[("a1", "r2", 1_250_000)]));
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
}
