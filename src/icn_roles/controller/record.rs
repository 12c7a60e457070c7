//! What the controller saw and did, kept for `controller.json`, `lp/` and the plots, and logged
//! as it happens to `controller.jsonl` (which `cdnlab web` follows).

use super::ControllerConfig;
use crate::icn::control::Congestion;
use crate::pricing::cost::bandwidth_cost;
use crate::pricing::parm::{Mapping, ParmInput};
use crate::roles::rows::RowLog;
use serde::Serialize;
use std::path::PathBuf;

/// One SM period.
#[derive(Debug, Clone, Serialize)]
pub struct Tick {
    pub t_s: f64,
    /// d_m, C_m (Mbit/s) and θ_m per site; empty if a site did not answer.
    pub usage_mbps: Vec<f64>,
    pub capacity_mbps: Vec<f64>,
    pub theta: Vec<f64>,
    /// Variance of the θ_m (population).
    pub variance: f64,
    /// The prices in force (P_const before LDP first ran).
    pub prices: Vec<f64>,
    /// Σ_m g(d_m) (Equation 7) and Σ_m p_m·d_m.
    pub bandwidth_cost: f64,
    pub payment: f64,
    /// t_lm (ms) as last reported: `latency_ms[l][m]`.
    pub latency_ms: Vec<Vec<Option<f64>>>,
    /// The latest rules the controller installed, and the version each border reported it
    /// forwards by (null: it did not answer, or its rules came from an earlier run of the
    /// controller).
    pub rules_version: u64,
    pub border_rules: Vec<Option<u64>>,
}

impl Tick {
    pub fn new(
        t_s: f64,
        congestion: &Option<Congestion>,
        prices: Option<&[f64]>,
        p_const: f64,
        latency_ms: &[Vec<Option<f64>>],
        rules_version: u64,
        border_rules: &[Option<u64>],
    ) -> Tick {
        let (usage, capacity, theta) = congestion.clone().unwrap_or_default();
        let prices = prices.map_or_else(|| vec![p_const; usage.len()], <[f64]>::to_vec);
        Tick {
            t_s,
            variance: crate::pricing::measure::population_variance(&theta),
            bandwidth_cost: usage
                .iter()
                .zip(&capacity)
                .map(|(d, c)| bandwidth_cost(*d, *c))
                .sum(),
            payment: usage.iter().zip(&prices).map(|(d, p)| d * p).sum(),
            usage_mbps: usage,
            capacity_mbps: capacity,
            theta,
            prices,
            latency_ms: latency_ms.to_vec(),
            rules_version,
            border_rules: border_rules.to_vec(),
        }
    }
}

/// One PARM period: the mapping installed, or why none was.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Period {
    pub t_s: f64,
    pub version: Option<u64>,
    pub error: Option<String>,
    /// Σ_nl λ_nl α_nlm / Σ λ: the share of demand the mapping sends to each site.
    pub site_share: Vec<f64>,
    /// `[l][m]`: Σ_n λ_nl α_nlm / Σ_n λ_nl, the share of region l's demand it sends to site m.
    pub region_share: Vec<Vec<f64>>,
    pub input: Option<ParmInput>,
    pub alpha: Option<Vec<Vec<Vec<f64>>>>,
}

/// A line of `controller.jsonl`: what it is, when it was logged, and the record.
#[derive(Serialize)]
struct Line<'a, T: Serialize> {
    kind: &'static str,
    time_unix_s: f64,
    #[serde(flatten)]
    record: &'a T,
}

/// A period as `controller.jsonl` logs it: the mapping's outcome without the LP (in `lp/`).
#[derive(Serialize)]
struct PeriodLine<'a> {
    t_s: f64,
    version: Option<u64>,
    error: &'a Option<String>,
    site_share: &'a [f64],
    region_share: &'a [Vec<f64>],
}

pub struct Recorder {
    out: PathBuf,
    ticks: Vec<Tick>,
    periods: Vec<Period>,
    /// `controller.jsonl`: first the sites, regions, applications and mode, then a line per
    /// tick and per period as they happen.
    log: RowLog,
    /// Whether a failure to append to `log` was reported already.
    log_failed: bool,
}

fn mode_name(config: &ControllerConfig) -> String {
    format!("{:?}", config.mode).to_lowercase()
}

impl Recorder {
    pub fn new(out: PathBuf, config: &ControllerConfig) -> Result<Recorder, String> {
        let header = serde_json::json!({
            "kind": "controller",
            "sites": config.sites,
            "regions": config.regions,
            "apps": config.apps,
            "mode": mode_name(config),
        });
        Ok(Recorder {
            log: RowLog::create(&out, "controller.jsonl", &header.to_string())?,
            log_failed: false,
            out,
            ticks: Vec::new(),
            periods: Vec::new(),
        })
    }

    fn log<T: Serialize>(&mut self, kind: &'static str, record: &T) {
        let line = Line {
            kind,
            time_unix_s: crate::wall_clock::unix_now_s(),
            record,
        };
        let logged = serde_json::to_string(&line)
            .map_err(|e| e.to_string())
            .and_then(|text| self.log.append(&text));
        // Reported once: the log is for watching, so failing to write it costs the watching,
        // not the controller (controller.json is written whole each period).
        if let Err(e) = logged {
            if !self.log_failed {
                tracing::warn!("controller: controller.jsonl: {e}");
                self.log_failed = true;
            }
        }
    }

    pub fn tick(&mut self, tick: Tick) {
        self.log("tick", &tick);
        self.ticks.push(tick);
    }

    pub fn period(&mut self, period: Period) {
        self.log(
            "period",
            &PeriodLine {
                t_s: period.t_s,
                version: period.version,
                error: &period.error,
                site_share: &period.site_share,
                region_share: &period.region_share,
            },
        );
        self.periods.push(period);
    }

    /// `lp/T.json`: an LP's input and solution (null if none), for an independent solver.
    pub fn write_lp(&self, t_s: f64, input: &ParmInput, mapping: Option<&Mapping>) {
        let dir = self.out.join("lp");
        let value = serde_json::json!({ "t_s": t_s, "input": input, "solution": mapping });
        let written = std::fs::create_dir_all(&dir).and_then(|()| {
            std::fs::write(
                dir.join(format!("parm-{t_s:07.1}s.json")),
                value.to_string(),
            )
        });
        if let Err(e) = written {
            tracing::warn!("controller: writing {}: {e}", dir.display());
        }
    }

    /// `controller.json` and the plots, rewritten whole each period (they are small), so a
    /// controller stopped at any time leaves complete files.
    pub fn save(&self, config: &ControllerConfig) -> Result<(), String> {
        let value = serde_json::json!({
            "sites": config.sites,
            "regions": config.regions,
            "apps": config.apps,
            "mode": mode_name(config),
            "sm_period_s": config.sm_period.as_secs_f64(),
            "parm_period_s": config.parm_period.as_secs_f64(),
            "ldp_period_s": config.ldp_period.as_secs_f64(),
            "ticks": self.ticks,
            "periods": self.periods,
        });
        std::fs::create_dir_all(&self.out).map_err(|e| format!("{}: {e}", self.out.display()))?;
        let path = self.out.join("controller.json");
        std::fs::write(&path, value.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
        super::plots::draw(&self.out, &config.sites, &self.ticks)
    }
}
