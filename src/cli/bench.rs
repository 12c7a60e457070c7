//! `cdnlab bench`: the benchmarks named, each report printed as soon as it is ready.

use super::{usage_error, Failure};
use crate::bench::{BENCHMARKS, BY_NAME_ONLY};
use crate::lab::{interrupt, BackendChoice};
use clap::builder::PossibleValuesParser;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// The benchmark to run, or `all` (every one but `http`).
    #[arg(value_parser = benchmark_names())]
    which: String,
    /// Fewer samples and shorter runs: a smoke test, not a measurement.
    #[arg(long)]
    quick: bool,
    /// Link emulation, as for `up`.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    link_backend: BackendChoice,
    /// Print each report as one line of JSON (name, title, setup, table, target, verdict)
    /// instead of markdown.
    #[arg(long)]
    json: bool,
}

/// What WHICH may be: every benchmark and `all`.
fn benchmark_names() -> PossibleValuesParser {
    let all = ["all"];
    PossibleValuesParser::new(BENCHMARKS.iter().chain(&all).chain(&BY_NAME_ONLY))
}

pub fn run(args: BenchArgs) -> Result<(), Failure> {
    let names = crate::bench::select(&args.which)
        .ok_or_else(|| usage_error(format!("no benchmark `{}`", args.which)))?;
    // Progress goes to stderr as log lines (`main` started the logs); stdout holds only the
    // reports.
    interrupt::install();
    let options = crate::bench::BenchOptions {
        quick: args.quick,
        link_backend: args.link_backend,
    };
    Ok(crate::bench::run(&names, &options, |report| {
        if args.json {
            crate::say!("{}", serde_json::to_string(report).unwrap_or_default())
        } else {
            crate::say!("{}", report.render())
        }
    })?)
}
