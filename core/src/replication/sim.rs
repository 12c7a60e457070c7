//! The discrete-event simulator of the farm: Poisson requests, exponential service times of
//! mean 1, a request served by a uniformly random idle server storing its content or lost,
//! and the adaptive schemes reacting to real and virtual losses. Seeded and deterministic.
//!
//! No event heap: with exponential service times the next event comes after an Exp(Λ + B)
//! time (Λ = Σλ_c, B busy servers), and is an arrival with probability Λ/(Λ + B), else the end
//! of service of a uniformly random busy server. Each event costs O(d).

use super::coordinator::{Coordinator, Decision, Trigger};
use super::error::{invalid, ParamError};
use super::farm::Observer;
use super::placement::place;
use super::scheme::Scheme;
use super::system::System;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use rand_distr::weighted::WeightedAliasIndex;
use rand_distr::{Distribution, Exp1};

/// New request rates from time `at` on.
#[derive(Debug, Clone, PartialEq)]
pub struct PopularityChange {
    pub at: f64,
    pub lambdas: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// D_c at time 0.
    pub replication: Vec<u32>,
    /// None: the replication stays as it is.
    pub scheme: Option<Scheme>,
    pub duration: f64,
    /// Statistics count from here on (adaptive runs converge first).
    pub warmup: f64,
    /// Every this many time units, the replication and the losses since the last sample.
    pub sample_every: f64,
    pub changes: Vec<PopularityChange>,
    /// LFL's EWMA time constant.
    pub lfl_tau: f64,
    pub seed: u64,
}

/// The replication and what happened in one sampling interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub t: f64,
    pub replicas: Vec<u32>,
    /// Real losses per content in the interval ending at `t`.
    pub losses: Vec<u32>,
    pub requests: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimResult {
    /// Length of the measured window [warmup, duration].
    pub measured: f64,
    /// Per content, in the measured window.
    pub requests: Vec<u64>,
    pub losses: Vec<u64>,
    pub virtual_losses: Vec<u64>,
    /// Per content, time spent with Z_c = z (index z), in the measured window.
    pub z_time: Vec<Vec<f64>>,
    /// Per content, time-average D_c over the measured window.
    pub mean_replicas: Vec<f64>,
    pub final_replicas: Vec<u32>,
    pub samples: Vec<Sample>,
    /// New replicas made over the whole run after a real loss (a second copy from the data
    /// center) and after a virtual one (copied from a server).
    pub copies_after_loss: u64,
    pub copies_after_virtual: u64,
    /// Requests and events over the whole run.
    pub total_requests: u64,
    pub events: u64,
}

impl SimResult {
    /// γ_c: losses per unit time.
    pub fn loss_rates(&self) -> Vec<f64> {
        self.losses
            .iter()
            .map(|&l| l as f64 / self.measured)
            .collect()
    }

    /// γ̄/λ̄ measured: the share of requests lost.
    pub fn inefficiency(&self) -> f64 {
        let requests: u64 = self.requests.iter().sum();
        self.losses.iter().sum::<u64>() as f64 / requests.max(1) as f64
    }

    /// The time-share distribution of Z_c.
    pub fn z_distribution(&self, c: usize) -> Vec<f64> {
        let total: f64 = self.z_time[c].iter().sum();
        self.z_time[c].iter().map(|t| t / total).collect()
    }

    /// E[Z_c] over time.
    pub fn mean_available(&self, c: usize) -> f64 {
        super::model::mean_available(&self.z_distribution(c))
    }
}

/// Time-weighted statistics: each content's Z_c and D_c intervals, clipped to [start, ∞).
struct Clock {
    t: f64,
    start: f64,
    z_since: Vec<f64>,
    z_time: Vec<Vec<f64>>,
    d_since: Vec<f64>,
    d_area: Vec<f64>,
}

impl Observer for Clock {
    fn available_changes(&mut self, c: u32, z: u32) {
        let c = c as usize;
        let dt = self.t - self.z_since[c].max(self.start);
        if dt > 0.0 {
            let time = &mut self.z_time[c];
            if time.len() <= z as usize {
                time.resize(z as usize + 1, 0.0);
            }
            time[z as usize] += dt;
        }
        self.z_since[c] = self.t;
    }

    fn replicas_change(&mut self, c: u32, replicas: u32) {
        let c = c as usize;
        let dt = self.t - self.d_since[c].max(self.start);
        if dt > 0.0 {
            self.d_area[c] += replicas as f64 * dt;
        }
        self.d_since[c] = self.t;
    }
}

fn check(system: &System, config: &SimConfig) -> Result<(), ParamError> {
    system.check_replication(&config.replication)?;
    if !(config.duration > 0.0 && config.duration.is_finite()) {
        return Err(invalid("duration", "must be a finite time > 0"));
    }
    if !(config.warmup >= 0.0 && config.warmup < config.duration) {
        return Err(invalid("warmup", "must be in [0, duration)"));
    }
    if !(config.sample_every > 0.0 && config.sample_every.is_finite()) {
        return Err(invalid("sample_every", "must be > 0"));
    }
    if !(config.lfl_tau > 0.0 && config.lfl_tau.is_finite()) {
        return Err(invalid("lfl_tau", "must be a finite time > 0"));
    }
    for change in &config.changes {
        if !(change.at > 0.0 && change.at < config.duration) {
            return Err(invalid(
                "changes",
                "a change must come inside (0, duration)",
            ));
        }
        system.with_lambdas(change.lambdas.clone())?;
    }
    Ok(())
}

fn alias(lambdas: &[f64]) -> Result<(WeightedAliasIndex<f64>, f64), ParamError> {
    let total: f64 = lambdas.iter().sum();
    let table = WeightedAliasIndex::new(lambdas.to_vec())
        .map_err(|e| invalid("lambda", format!("no request rate to draw from: {e}")))?;
    Ok((table, total))
}

/// Runs the farm `system` as `config` says.
pub fn simulate(system: &System, config: &SimConfig) -> Result<SimResult, ParamError> {
    check(system, config)?;
    let (n, d) = (system.n(), system.d());
    let mut rng = SmallRng::seed_from_u64(config.seed);
    let slots = place(system, &config.replication, &mut rng)?;
    let mut coordinator = Coordinator::new(n, d, slots, config.scheme, config.lfl_tau, &mut rng);
    let (mut table, mut lambda_total) = alias(system.lambdas())?;
    let mut changes = config.changes.clone();
    changes.sort_by(|a, b| a.at.total_cmp(&b.at));
    let mut changes = changes.into_iter().peekable();
    let mut clock = Clock {
        t: 0.0,
        start: config.warmup,
        z_since: vec![0.0; n],
        z_time: vec![Vec::new(); n],
        d_since: vec![0.0; n],
        d_area: vec![0.0; n],
    };
    let mut result = SimResult {
        measured: config.duration - config.warmup,
        requests: vec![0; n],
        losses: vec![0; n],
        virtual_losses: vec![0; n],
        z_time: Vec::new(),
        mean_replicas: Vec::new(),
        final_replicas: Vec::new(),
        samples: Vec::new(),
        copies_after_loss: 0,
        copies_after_virtual: 0,
        total_requests: 0,
        events: 0,
    };
    let mut interval_losses = vec![0u32; n];
    let mut interval_requests = 0u64;
    let mut next_sample = config.sample_every;
    let mut t = 0.0;
    loop {
        let rate = lambda_total + coordinator.farm().busy_count() as f64;
        let wait: f64 = Exp1.sample(&mut rng);
        let next = t + wait / rate;
        let change_at = changes.peek().map_or(f64::INFINITY, |c| c.at);
        let boundary = next_sample.min(change_at).min(config.duration);
        if next >= boundary {
            // Exponential clocks forget: stopping at a boundary and drawing again is exact.
            t = boundary;
            clock.t = t;
            if t >= config.duration {
                break;
            }
            if t >= next_sample {
                result.samples.push(Sample {
                    t,
                    replicas: coordinator.farm().replicas().to_vec(),
                    losses: std::mem::replace(&mut interval_losses, vec![0; n]),
                    requests: std::mem::take(&mut interval_requests),
                });
                next_sample += config.sample_every;
            }
            if t >= change_at {
                let change = changes.next().expect("peeked");
                (table, lambda_total) = alias(&change.lambdas)?;
            }
            continue;
        }
        t = next;
        clock.t = t;
        result.events += 1;
        let measuring = t >= config.warmup;
        let busy = coordinator.farm().busy_count();
        if rng.random::<f64>() * rate >= lambda_total {
            let server = coordinator.farm().busy_server(rng.random_range(0..busy));
            coordinator.finish(server, &mut clock);
            continue;
        }
        let c = table.sample(&mut rng) as u32;
        result.total_requests += 1;
        interval_requests += 1;
        let step = coordinator.request(c, t, &mut clock, &mut rng);
        if step.decision == Decision::Lost {
            interval_losses[c as usize] += 1;
        }
        if measuring {
            result.requests[c as usize] += 1;
            if step.decision == Decision::Lost {
                result.losses[c as usize] += 1;
            }
            if step.virtual_loss {
                result.virtual_losses[c as usize] += 1;
            }
        }
        match step.copy.map(|copy| copy.trigger) {
            Some(Trigger::Loss) => result.copies_after_loss += 1,
            Some(Trigger::Virtual) => result.copies_after_virtual += 1,
            None => {}
        }
    }
    let farm = coordinator.farm();
    for c in 0..n as u32 {
        clock.available_changes(c, farm.available_count(c));
        clock.replicas_change(c, farm.replicas()[c as usize]);
    }
    result.mean_replicas = clock.d_area.iter().map(|a| a / result.measured).collect();
    result.z_time = clock.z_time;
    result.final_replicas = farm.replicas().to_vec();
    Ok(result)
}
