//! `cdnlab replication bench`: how fast the simulator runs, single-threaded, on the paper's
//! farms (the Zipf runs are ~1.8·10⁷ requests in 10⁴ time units).

use super::experiment::{Durations, Job, Model};
use super::{simulate, Replication};
use crate::table::Table;
use std::time::Instant;

/// The runs timed: (model, replication).
const RUNS: [(Model, &str); 4] = [
    (Model::Zipf08, "proportional"),
    (Model::Zipf12, "proportional"),
    (Model::Zipf08, "lrl-virtual"),
    (Model::Class, "proportional"),
];

/// Times each run (`quick`: 100 time units instead of 10⁴) one after the other on this
/// thread; returns a markdown table.
pub fn bench(quick: bool, seed: u64) -> Result<String, String> {
    let duration = if quick { 100.0 } else { 1e4 };
    let durations = Durations {
        static_run: duration,
        adaptive_run: duration,
        sample_every: duration / 10.0,
    };
    let mut table = Table::new(&[
        "farm",
        "replication",
        "time units",
        "requests",
        "events",
        "wall time (s)",
        "requests/s",
    ]);
    for (model, name) in RUNS {
        let replication: Replication =
            name.parse().map_err(|e: super::ParamError| e.to_string())?;
        let system = model.system()?;
        let config = Job::new(model, replication).config(&system, &durations, seed)?;
        let start = Instant::now();
        let result = simulate(&system, &config).map_err(|e| e.to_string())?;
        let seconds = start.elapsed().as_secs_f64();
        table.push(vec![
            format!(
                "{} (n = {}, m = {}, d = {})",
                model.name(),
                system.n(),
                system.m(),
                system.d()
            ),
            name.into(),
            format!("{duration}"),
            result.total_requests.to_string(),
            result.events.to_string(),
            format!("{seconds:.2}"),
            format!("{:.2e}", result.total_requests as f64 / seconds),
        ]);
    }
    Ok(table.render())
}
