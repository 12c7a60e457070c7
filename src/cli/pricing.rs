//! `cdnlab pricing`: the pricing paper's experiments, computed offline.

use super::{failure, Failure};
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum PricingVerb {
    /// Reproduce the paper's Section 5 (LDP prices, BASE/PURM/PARM, the τ and P_max sweeps):
    /// write CSV, JSON, SVG figures and every LP into --out; print a summary table.
    Reproduce {
        /// The directory to write (created if missing).
        #[arg(long)]
        out: PathBuf,
        /// Seed of the latencies and the Poisson traffic.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

pub fn run(verb: PricingVerb) -> Result<(), Failure> {
    match verb {
        PricingVerb::Reproduce { out, seed } => {
            let summary = crate::pricing::reproduce::reproduce(&out, seed).map_err(failure)?;
            crate::say_text!("{summary}");
            crate::say!("\nresults: {}", out.display());
            Ok(())
        }
    }
}
