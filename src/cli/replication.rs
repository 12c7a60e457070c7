//! `cdnlab replication`: the adaptive-replication paper's experiments, simulated offline.

use super::{failure, Failure};
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum ReplicationVerb {
    /// Reproduce Sections IV-C and V-C (class and Zipf models; proportional, optimized and
    /// adaptive replication; a popularity change): write CSV, JSON and SVG figures into
    /// --out; print the inefficiencies beside the paper's.
    Reproduce {
        /// The directory to write (created if missing).
        #[arg(long)]
        out: PathBuf,
        /// Seed of the placements and the simulated requests.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Short runs: a smoke test of every file, not a measurement.
        #[arg(long)]
        quick: bool,
    },
    /// Time the simulator on the paper's farms, single-threaded; print a markdown table.
    Bench {
        /// 100 time units per run instead of 10⁴.
        #[arg(long)]
        quick: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

pub fn run(verb: ReplicationVerb) -> Result<(), Failure> {
    match verb {
        ReplicationVerb::Reproduce { out, seed, quick } => {
            let summary =
                crate::replication::reproduce::reproduce(&out, seed, quick).map_err(failure)?;
            crate::say_text!("{summary}");
            crate::say!("\nresults: {}", out.display());
        }
        ReplicationVerb::Bench { quick, seed } => {
            crate::say_text!(
                "{}",
                crate::replication::bench::bench(quick, seed).map_err(failure)?
            );
        }
    }
    Ok(())
}
