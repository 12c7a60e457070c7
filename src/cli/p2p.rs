//! `cdnlab p2p`: the hybrid P2P-cloud paper's model against its peer-level simulation, offline.

use super::{failure, usage_error, Failure};
use crate::p2p::params::Params;
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum P2pVerb {
    /// Reproduce the model's claims (LRU's ρ_j = B·π_j, Lemma 1's miss rate, Theorem 2's
    /// dispatch and T* in both cases, the inter-ISP cap trade-off) against a peer-level
    /// simulation: write CSV, JSON and SVG figures into --out and print a summary.
    Reproduce {
        /// The directory to write (created if missing).
        #[arg(long)]
        out: PathBuf,
        /// Seed of the simulated peers and the random LP instances.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Change a parameter: peers, upload, scarce_upload (comma lists, one per ISP),
        /// chunks, cache, idle, zipf, dispatch (a comma list of local, proportional,
        /// optimal), slots, warmup.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Short runs: a smoke test of every file, not a measurement.
        #[arg(long)]
        quick: bool,
    },
    /// Set runs of topologies/hybrid-p2p-cloud.toml side by side: the cloud's upload from its
    /// counters, inter-ISP bytes from the peering links' counters, the peers' downloads by
    /// source and their stalls.
    Report {
        /// Run directories (`cdnlab run … --out DIR`).
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(verb: P2pVerb) -> Result<(), Failure> {
    match verb {
        P2pVerb::Report { runs, json } => {
            let reports = (runs.iter())
                .map(|dir| crate::p2p::report::read(dir))
                .collect::<Result<Vec<_>, _>>()
                .map_err(usage_error)?;
            if json {
                let text =
                    serde_json::to_string_pretty(&reports).map_err(|e| failure(e.to_string()))?;
                crate::say!("{text}");
            } else {
                crate::say_text!("{}", crate::p2p::report::table(&reports));
            }
        }
        P2pVerb::Reproduce {
            out,
            seed,
            set,
            quick,
        } => {
            let mut params = if quick {
                Params::quick()
            } else {
                Params::paper()
            };
            for assignment in &set {
                params.set(assignment).map_err(usage_error)?;
            }
            params.systems().map_err(usage_error)?;
            let summary = crate::p2p::reproduce::reproduce(&out, &params, seed).map_err(failure)?;
            crate::say_text!("{summary}");
            crate::say!("\nresults: {}", out.display());
        }
    }
    Ok(())
}
