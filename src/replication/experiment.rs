//! The paper's runs: which farm, which replication, how long; run side by side on the cores.

use super::{initial, scheme_of, simulate, PopularityChange, Replication, SimConfig, SimResult};
use super::{popularity, System};

/// The three popularity models of Section IV-C.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    Class,
    Zipf08,
    Zipf12,
}

impl Model {
    pub const ALL: [Model; 3] = [Model::Class, Model::Zipf08, Model::Zipf12];

    /// The name in tables and file names.
    pub fn name(self) -> &'static str {
        match self {
            Model::Class => "class",
            Model::Zipf08 => "zipf-0.8",
            Model::Zipf12 => "zipf-1.2",
        }
    }

    pub fn system(self) -> Result<System, String> {
        match self {
            Model::Class => popularity::class_farm(),
            Model::Zipf08 => popularity::zipf_farm(0.8),
            Model::Zipf12 => popularity::zipf_farm(1.2),
        }
        .map_err(|e| e.to_string())
    }
}

/// How long runs last: static replications are measured after a short warm-up; adaptive
/// ones start from proportional replication and are measured over their second half.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Durations {
    pub static_run: f64,
    pub adaptive_run: f64,
    pub sample_every: f64,
}

impl Durations {
    /// The paper's 10⁴ time units for static runs; adaptive runs twice that, so that they are
    /// measured over 10⁴ units after 10⁴ units of adaptation.
    pub const PAPER: Durations = Durations {
        static_run: 1e4,
        adaptive_run: 2e4,
        sample_every: 100.0,
    };
    /// A smoke test of every file, not a measurement.
    pub const QUICK: Durations = Durations {
        static_run: 100.0,
        adaptive_run: 200.0,
        sample_every: 10.0,
    };
}

/// The warm-up of a static run: long enough for an idle farm to fill (service times of mean 1).
const STATIC_WARMUP: f64 = 20.0;
/// LFL's EWMA time constant: a few hundred time units hold several losses even of the rarely
/// lost contents at the loss rates of an adapted farm.
pub const LFL_TAU: f64 = 500.0;

/// One run to make.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub model: Model,
    pub replication: Replication,
    /// A label that tells runs of the same model and replication apart ("" for the usual).
    pub variant: &'static str,
    pub changes: Vec<PopularityChange>,
}

impl Job {
    pub fn new(model: Model, replication: Replication) -> Job {
        Job {
            model,
            replication,
            variant: "",
            changes: Vec::new(),
        }
    }

    /// The run's settings: its own seed from `seed` and its place in the list, so each run is
    /// reproducible alone.
    pub fn config(
        &self,
        system: &System,
        durations: &Durations,
        seed: u64,
    ) -> Result<SimConfig, String> {
        let scheme = scheme_of(self.replication);
        let (duration, warmup) = match scheme {
            Some(_) => (durations.adaptive_run, durations.adaptive_run / 2.0),
            None => (
                durations.static_run,
                STATIC_WARMUP.min(durations.static_run / 4.0),
            ),
        };
        Ok(SimConfig {
            replication: initial(system, self.replication).map_err(|e| e.to_string())?,
            scheme,
            duration,
            warmup,
            sample_every: durations.sample_every,
            changes: self.changes.clone(),
            lfl_tau: LFL_TAU,
            seed,
        })
    }
}

/// A job's outcome.
pub struct Run {
    pub job: Job,
    pub system: System,
    pub config: SimConfig,
    pub result: SimResult,
}

/// Runs `jobs` on every core (each its own seed, `seed + index`), in the list's order.
pub fn run_all(jobs: Vec<Job>, durations: &Durations, seed: u64) -> Result<Vec<Run>, String> {
    crate::parallel::map(&jobs, |i, job| {
        run_one(job, durations, seed.wrapping_add(i as u64))
    })
    .into_iter()
    .collect()
}

fn run_one(job: &Job, durations: &Durations, seed: u64) -> Result<Run, String> {
    let system = job.model.system()?;
    let config = job.config(&system, durations, seed)?;
    let result = simulate(&system, &config)
        .map_err(|e| format!("{} {}: {e}", job.model.name(), job.replication))?;
    Ok(Run {
        job: job.clone(),
        system,
        config,
        result,
    })
}
