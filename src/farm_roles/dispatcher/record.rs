//! What the dispatcher saw, sample by sample, kept for `farm.json`, `samples.csv` and the
//! plots, all rewritten whole at every sample so a dispatcher stopped at any time leaves
//! complete files.

use super::{Dispatcher, DispatcherConfig};
use crate::farm_roles::messages::DataCenterUsage;
use crate::replication::coordinator::{Decision, Step, Trigger};
use serde::Serialize;
use std::path::PathBuf;

/// Counts since the last sample.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Interval {
    pub requests: Vec<u32>,
    pub losses: Vec<u32>,
    pub virtual_losses: u64,
    pub copies_after_loss: u64,
    pub copies_after_virtual: u64,
    /// Replacements a server did not take (it did not answer, or refused).
    pub replace_failed: u64,
    /// End reports from servers the dispatcher did not think busy.
    pub late_reports: u64,
    /// Servers counted idle again because their client never came.
    pub expired_leases: u64,
}

impl Interval {
    pub fn new(n: usize) -> Interval {
        Interval {
            requests: vec![0; n],
            losses: vec![0; n],
            ..Interval::default()
        }
    }

    pub fn request(&mut self, content: u32, step: &Step) {
        let c = content as usize;
        self.requests[c] += 1;
        if step.decision == Decision::Lost {
            self.losses[c] += 1;
        }
        self.virtual_losses += u64::from(step.virtual_loss);
        match step.copy.map(|copy| copy.trigger) {
            Some(Trigger::Loss) => self.copies_after_loss += 1,
            Some(Trigger::Virtual) => self.copies_after_virtual += 1,
            None => {}
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Seconds since the farm was filled, and the same in mean service times.
    pub t_s: f64,
    pub t_units: f64,
    pub requests: u64,
    pub losses: u64,
    /// The counts of the interval ending here, per content where they are vectors.
    pub interval: Interval,
    /// D_c at the sample.
    pub replicas: Vec<u32>,
    pub busy_servers: usize,
    /// The data center's counts since it started (None: it did not answer).
    pub datacenter: Option<DataCenterUsage>,
}

pub struct Recorder {
    out: PathBuf,
    settings: serde_json::Value,
    samples: Vec<Sample>,
}

impl Recorder {
    pub fn new(out: PathBuf, config: &DispatcherConfig, initial: &[u32]) -> Recorder {
        let settings = serde_json::json!({
            "scheme": config.replication.to_string(),
            "servers": config.servers.len(),
            "slots": config.system.d(),
            "contents": config.system.n(),
            "alpha": config.model.alpha,
            "rho": config.model.rho,
            "service_s": config.model.service.as_secs_f64(),
            "object_size": config.model.object_size,
            "lambdas": config.system.lambdas(),
            "initial_replicas": initial,
            "sample_every_s": config.sample_every.as_secs_f64(),
            "seed": config.seed,
        });
        Recorder {
            out,
            settings,
            samples: Vec::new(),
        }
    }

    /// Takes the interval's counts and the replication now.
    pub fn sample(&mut self, dispatcher: &Dispatcher, datacenter: Option<DataCenterUsage>) {
        let n = dispatcher.config.system.n();
        let t_s = dispatcher.origin.elapsed().as_secs_f64();
        let mut state = dispatcher.lock();
        let interval = std::mem::replace(&mut state.interval, Interval::new(n));
        let farm = state.coordinator.farm();
        let datacenter =
            datacenter.or_else(|| self.samples.last().and_then(|s| s.datacenter.clone()));
        self.samples.push(Sample {
            t_s,
            t_units: t_s / dispatcher.config.model.service.as_secs_f64(),
            requests: interval.requests.iter().map(|&r| u64::from(r)).sum(),
            losses: interval.losses.iter().map(|&l| u64::from(l)).sum(),
            replicas: farm.replicas().to_vec(),
            busy_servers: farm.busy_count(),
            interval,
            datacenter,
        });
    }

    fn totals(&self) -> serde_json::Value {
        let sum = |f: &dyn Fn(&Sample) -> u64| self.samples.iter().map(f).sum::<u64>();
        let requests = sum(&|s| s.requests);
        let losses = sum(&|s| s.losses);
        serde_json::json!({
            "requests": requests,
            "losses": losses,
            "inefficiency": losses as f64 / requests.max(1) as f64,
            "virtual_losses": sum(&|s| s.interval.virtual_losses),
            "copies_after_loss": sum(&|s| s.interval.copies_after_loss),
            "copies_after_virtual": sum(&|s| s.interval.copies_after_virtual),
            "replace_failed": sum(&|s| s.interval.replace_failed),
            "late_reports": sum(&|s| s.interval.late_reports),
            "expired_leases": sum(&|s| s.interval.expired_leases),
            "datacenter": self.samples.last().and_then(|s| s.datacenter.clone()),
        })
    }

    pub fn save(&self) -> Result<(), String> {
        let write = |name: &str, text: String| {
            let path = self.out.join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))
        };
        std::fs::create_dir_all(&self.out).map_err(|e| format!("{}: {e}", self.out.display()))?;
        let value = serde_json::json!({
            "settings": self.settings,
            "totals": self.totals(),
            "samples": self.samples,
        });
        write("farm.json", value.to_string())?;
        let mut csv = String::from(
            "t_s,t_units,requests,losses,virtual_losses,copies_after_loss,copies_after_virtual,busy_servers,dc_user_bytes,dc_copy_bytes\n",
        );
        for s in &self.samples {
            let dc = s.datacenter.clone().unwrap_or_default();
            csv += &format!(
                "{:.3},{:.2},{},{},{},{},{},{},{},{}\n",
                s.t_s,
                s.t_units,
                s.requests,
                s.losses,
                s.interval.virtual_losses,
                s.interval.copies_after_loss,
                s.interval.copies_after_virtual,
                s.busy_servers,
                dc.user_bytes,
                dc.copy_bytes
            );
        }
        write("samples.csv", csv)?;
        super::plots::draw(&self.out, &self.samples)
    }
}
