//! `cdnlab run`: one whole experiment (up, clients and timeline, results, down) and its table.

use super::topology_args::TopologyArgs;
use super::{default_out_dir, failure, parse_duration, Failure};
use crate::lab::interrupt;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    topology: TopologyArgs,
    /// The run directory (default: results/LAB-UNIXTIME).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Stop clients still running after this long (tc time units).
    #[arg(long, default_value = "600s")]
    timeout: String,
    /// Print the run's summary (`summary.json`: every client's results, and `results`: the run
    /// directory) as JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Show the run live in a browser while it plays (`cdnlab web`'s page), on this address.
    #[arg(long, num_args = 0..=1, default_missing_value = super::web::DEFAULT_LISTEN, value_name = "ADDR")]
    web: Option<String>,
    /// Allow --web on an address other than loopback (see `cdnlab web --expose`).
    #[arg(long, requires = "web")]
    web_expose: bool,
}

pub fn run(args: RunArgs) -> Result<(), Failure> {
    let client_timeout = parse_duration("--timeout", &args.timeout)?;
    let topology = args.topology.load()?;
    let out = args.out.unwrap_or_else(|| default_out_dir(&topology.name));
    let web = args
        .web
        .as_deref()
        .map(|addr| super::web::bind(addr, args.web_expose, "--web"))
        .transpose()?;
    interrupt::install();
    let summary = crate::run::run(
        topology,
        crate::run::RunOptions {
            up: args.topology.up_options(),
            out_dir: out.clone(),
            topology_file: args.topology.file.topology.clone(),
            client_timeout,
            web,
        },
    )?;
    if args.json {
        let mut json = serde_json::to_value(&summary).unwrap_or_default();
        json["results"] = out.display().to_string().into();
        crate::say!(
            "{}",
            serde_json::to_string_pretty(&json).unwrap_or_default()
        );
    } else {
        crate::say_text!("{}", crate::run::summary::table(&summary));
        crate::say!("results: {}", out.display());
    }
    let failed = summary.clients.iter().filter(|c| c.failed).count();
    let mut failures = Vec::new();
    if failed > 0 {
        failures.push(format!("{failed} client(s) failed"));
    }
    for ended in &summary.servers_ended {
        failures.push(format!(
            "node {} {} during the run (see {})",
            ended.node,
            ended.how,
            out.join("logs")
                .join(format!("{}.log", ended.node))
                .display()
        ));
    }
    if !failures.is_empty() {
        return Err(failure(failures.join("; ")));
    }
    Ok(())
}
