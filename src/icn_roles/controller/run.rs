//! The controller's loop: every SM period it measures the sites and borders; on PARM periods
//! it prices (LDP, on LDP periods) and maps (PARM), installing the rules on the borders.

use super::record::{Period, Recorder, Tick};
use super::{ControllerConfig, Mode};
use crate::control::Identity;
use crate::icn::control::{
    parm_input, region_shares, region_site_shares, site_shares, ParmSettings, Window,
};
use crate::icn_roles::messages::{
    AppRule, BorderRequest, BorderResponse, FibRules, SiteRequest, SiteResponse, SiteUsage,
};
use crate::pricing::ldp::ldp;
use crate::pricing::parm;
use crate::roles::control::load_identity;
use crate::roles::env::NodeEnv;
use crate::roles::peers::{call_all, Peer};
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

struct Controller {
    config: ControllerConfig,
    identity: Arc<Identity>,
    sites: Vec<Peer>,
    borders: Vec<Peer>,
    /// t_lm, ms: the latest each border reported.
    latency: Vec<Vec<Option<f64>>>,
    prices: Option<Vec<f64>>,
    /// This run of the controller (`FibRules::epoch`).
    epoch: u64,
    rules_version: u64,
    /// The version of the rules each border said it forwards by at the last SM period.
    border_rules: Vec<Option<u64>>,
    recorder: Recorder,
}

/// Adds site `m`'s answer to `window`, its applications and regions by their index in the
/// configuration.
fn add_usage(window: &mut Window, config: &ControllerConfig, m: usize, usage: &SiteUsage) {
    let served = usage.demand.iter().map(|d| {
        let n = config.apps.iter().position(|a| *a == d.app);
        let l = config.regions.iter().position(|r| *r == d.region);
        (n.zip(l), d.bytes)
    });
    window.add(m, usage.interval_s, usage.capacity_bps, served);
}

impl Controller {
    /// The SM module: one measurement of every site and border.
    async fn measure(&mut self) -> Vec<Option<SiteUsage>> {
        let (port, limit) = (self.config.control_port, self.config.sm_period * 4 / 5);
        let site_requests = vec![SiteRequest::Measure; self.sites.len()];
        let border_requests = vec![BorderRequest::Report; self.borders.len()];
        // Sites and borders are asked at once, so one measurement takes one limit, not two.
        let (usages, reports): (Vec<Option<SiteResponse>>, Vec<Option<BorderResponse>>) = tokio::join!(
            call_all(&mut self.sites, port, &self.identity, site_requests, limit),
            call_all(
                &mut self.borders,
                port,
                &self.identity,
                border_requests,
                limit
            ),
        );
        for (l, report) in reports.into_iter().enumerate() {
            let Some(BorderResponse::Report(report)) = report else {
                self.border_rules[l] = None;
                continue;
            };
            // Rules of an earlier run of the controller are none of this run's versions.
            self.border_rules[l] = match report.rules_epoch {
                Some(epoch) if epoch != self.epoch => None,
                _ => Some(report.rules_version),
            };
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
            .zip(region_shares(alpha, l))
            .map(|(app, shares)| AppRule {
                app: app.clone(),
                sites: shares
                    .into_iter()
                    .map(|(m, share)| (self.config.sites[m].clone(), share))
                    .collect(),
            })
            .collect();
        FibRules {
            epoch: self.epoch,
            version,
            rules,
        }
    }

    /// PARM on the last period's measurements; installs the mapping on every border.
    async fn map(&mut self, window: &Window, t_s: f64) -> Period {
        let mut period = Period {
            t_s,
            ..Period::default()
        };
        let settings = ParmSettings {
            psi: if self.config.mode == Mode::Parm {
                self.config.psi
            } else {
                0.0
            },
            tau: self.config.tau,
            aggregate_theta_bar: self.config.aggregate_theta_bar,
        };
        let prices = self.prices.clone().unwrap_or_default();
        let deadlines = self.config.deadlines_ms.clone();
        let input = match parm_input(window, &self.latency, prices, settings, deadlines) {
            Ok(input) => input,
            Err(missing) => {
                period.error = Some(missing.into());
                return period;
            }
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
        let version = self.install(&mapping.alpha).await;
        tracing::info!(
            "controller: PARM at {t_s:.1} s: rules {version} installed (objective {:.3})",
            mapping.objective
        );
        period.version = Some(version);
        period.site_share = site_shares(&input.demand, &mapping.alpha);
        period.region_share = region_site_shares(&input.demand, &mapping.alpha);
        period.input = Some(input);
        period.alpha = Some(mapping.alpha);
        period
    }

    /// Sends the next version of the rules to every border; its version.
    async fn install(&mut self, alpha: &[Vec<Vec<f64>>]) -> u64 {
        self.rules_version += 1;
        let version = self.rules_version;
        let requests: Vec<BorderRequest> = (0..self.borders.len())
            .map(|l| BorderRequest::Install(self.rules(l, version, alpha)))
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
        version
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
                        add_usage(w, &config, m, usage);
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

/// A controller run's epoch (`FibRules::epoch`), from the OS's random source.
fn random_epoch() -> Result<u64, String> {
    use ring::rand::{SecureRandom, SystemRandom};
    let mut bytes = [0; 8];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "the OS's random source failed".to_string())?;
    Ok(u64::from_le_bytes(bytes))
}

pub async fn run(
    config: ControllerConfig,
    env: &NodeEnv,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    let identity = load_identity(env)?;
    let out = env.out_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let peers = |names: &[String]| names.iter().map(|name| Peer::new(name)).collect();
    tracing::info!(
        "controller: mode {:?}; SM every {:?}, PARM every {:?}, LDP every {:?}; sites {}; borders {}",
        config.mode,
        config.sm_period,
        config.parm_period,
        config.ldp_period,
        config.sites.join(", "),
        config.borders.join(", ")
    );
    let recorder = Recorder::new(out, &config)?;
    let controller = Controller {
        identity,
        sites: peers(&config.sites),
        borders: peers(&config.borders),
        latency: vec![vec![None; config.sites.len()]; config.borders.len()],
        prices: None,
        epoch: random_epoch()?,
        rules_version: 0,
        border_rules: vec![None; config.borders.len()],
        recorder,
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
    use crate::icn_roles::messages::Demand;

    /// A site's counters land at their application's and region's indices; an application the
    /// controller does not know counts towards d_m but no λ_nl.
    #[test]
    fn site_usage_lands_in_its_application_and_region() {
        let table = "sites = ['s1']\nusers = [1]\nborders = ['b1', 'b2']\nregions = ['r1', 'r2']\n\
                     apps = 'a1,a2'\ndeadlines = '60ms,45ms'";
        let config = super::super::config(&table.parse().expect("TOML")).expect("valid");
        let demand = |app: &str, region: &str, bytes| Demand {
            app: app.into(),
            region: region.into(),
            bytes,
        };
        let usage = SiteUsage {
            site: "s1".into(),
            interval_s: 5.0,
            capacity_bps: 1e6,
            demand: vec![demand("a2", "r1", 625_000), demand("a9", "r2", 625_000)],
        };
        let mut window = Window::new(1, 2, 2);
        add_usage(&mut window, &config, 0, &usage);
        let (usage, _, _) = window.congestion().expect("the one site answered");
        assert!(
            (usage[0] - 2.0).abs() < 1e-9,
            "both count in d_m: {usage:?}"
        );
        assert_eq!(window.demand_rates(), [[0.0, 0.0], [1.0, 0.0]]);
    }
}
