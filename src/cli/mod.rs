//! The `cdnlab` command: the verbs, their parsing and dispatch, and what every verb shares. Each
//! verb's flags and work live in its own file (`up.rs`, `run.rs`, …); the library does the rest.

mod bench;
mod capture;
mod check;
mod clean;
mod completions;
mod compose;
mod container;
mod down;
mod exec;
mod graph;
mod link;
mod manuals;
mod p2p;
mod pricing;
mod replication;
mod run;
mod status;
mod sweep;
mod topology_args;
mod up;
mod web;

use crate::lab::{self, interrupt, LabState};
use crate::topology;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "cdnlab",
    version,
    about = "Emulation testbed for content delivery research"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Verb,
}

#[derive(Subcommand)]
enum Verb {
    /// Create the lab's namespaces, links and processes; return once every node is ready.
    Up(topology_args::TopologyArgs),
    /// Show nodes, addresses, processes and links with their current impairments.
    Status(status::StatusArgs),
    /// Run a command inside a node's namespace (names of nodes resolve there).
    Exec(exec::ExecArgs),
    /// Read or change link impairments at run time.
    #[command(subcommand)]
    Link(link::LinkVerb),
    /// Write a link's packets as its receivers get them (after the emulation) to a pcap file.
    Capture(capture::CaptureArgs),
    /// Stop the lab's processes and remove everything it created.
    Down(down::DownArgs),
    /// Remove every leftover of any lab (after a crash), without the topology file; with
    /// names, only of those labs. A lab whose `cdnlab up` or `cdnlab run` is still running is
    /// kept unless --force.
    Clean(clean::CleanArgs),
    /// Up, run the clients and the timeline, collect results, down; print a summary table.
    Run(run::RunArgs),
    /// Run a topology once per combination of varied variables, several labs at once; write
    /// every client's results to sweep.csv, print tables and draw SVG plots.
    Sweep(Box<sweep::SweepArgs>),
    /// Write a compose file for topology files: one service per node, one network per link or
    /// LAN, the impairments applied inside each container.
    Compose(compose::ComposeArgs),
    /// Inside a testbed container (docker-compose.yml): its entrypoint, healthcheck, run-time
    /// link changes and certificates.
    #[command(subcommand)]
    Container(container::ContainerVerb),
    /// Measure link fidelity (delay, rate, jitter, loss), the shaper's CPU, how fast a
    /// 100-node lab comes up and down, PARM's solve time and an ICN router's throughput; print
    /// markdown tables. Needs root. `http` (not in `all`) compares our content server and router with nginx on loopback (needs nginx, wrk).
    Bench(bench::BenchArgs),
    /// Location-dependent pricing and price-aware request mapping (papers/000), offline.
    #[command(subcommand)]
    Pricing(pricing::PricingVerb),
    /// Adaptive replication in a server farm (loss-network model, optimized and adaptive
    /// replication, virtual losses), simulated offline.
    #[command(subcommand)]
    Replication(replication::ReplicationVerb),
    /// Locality-aware streaming in a hybrid P2P-cloud CDN (peer caches, dispatch among ISPs,
    /// cloud bandwidth against inter-ISP traffic), modelled and simulated offline.
    #[command(subcommand)]
    P2p(p2p::P2pVerb),
    /// Read a topology file as `up` would and print the resolved plan (addresses, routes,
    /// impairments, timeline) without building anything; needs no root.
    Check(check::CheckArgs),
    /// Show a running lab in the browser (topology, link throughput, queues and drops,
    /// events, clients' buffers and quality), or replay a finished run's directory.
    Web(web::WebArgs),
    /// Draw a topology: nodes, links, LANs and each direction's impairments, as SVG, dot or
    /// Mermaid.
    Graph(graph::GraphArgs),
    /// Print the completion script of a shell (bash, zsh, fish, elvish, powershell).
    Completions(completions::CompletionsArgs),
    /// Write man pages of cdnlab and each of its verbs into a directory.
    Manuals(manuals::ManualsArgs),
}

/// Runs the command line; returns the process exit status.
pub fn main() -> i32 {
    // SIGPIPE stays ignored (Rust's default): output piped into `head` is dropped by `say!`
    // and the verb finishes, so a `cdnlab run … | head -1` still takes its lab down rather
    // than dying half-way with the lab up.
    let cli = Cli::parse();
    // Diagnostics (a benchmark's progress, …) go through `tracing` to stderr; what a verb
    // answers is plain text on stdout.
    crate::roles::logs::init();
    match dispatch(cli.command) {
        Ok(()) => 0,
        Err(Failure { message, status }) => {
            eprintln!("cdnlab: {message}");
            status
        }
    }
}

fn dispatch(verb: Verb) -> Result<(), Failure> {
    if !matches!(
        verb,
        Verb::Down(_)
            | Verb::Clean(_)
            | Verb::Container(_)
            | Verb::Compose(_)
            | Verb::Pricing(_)
            | Verb::Replication(_)
            | Verb::P2p(_)
            | Verb::Completions(_)
            | Verb::Manuals(_)
            | Verb::Check(_)
            | Verb::Graph(_)
    ) {
        warn_abandoned();
    }
    match verb {
        Verb::Up(args) => up::run(args),
        Verb::Status(args) => status::run(args),
        Verb::Exec(args) => exec::run(args),
        Verb::Link(verb) => link::run(verb),
        Verb::Capture(args) => capture::run(args),
        Verb::Web(args) => web::run(args),
        Verb::Down(args) => down::run(args),
        Verb::Clean(args) => clean::run(args),
        Verb::Run(args) => run::run(args),
        Verb::Sweep(args) => sweep::run(*args),
        Verb::Container(verb) => container::run(verb),
        Verb::Compose(args) => compose::run(args),
        Verb::Bench(args) => bench::run(args),
        Verb::Pricing(verb) => pricing::run(verb),
        Verb::Replication(verb) => replication::run(verb),
        Verb::P2p(verb) => p2p::run(verb),
        Verb::Check(args) => check::run(args),
        Verb::Graph(args) => graph::run(args),
        Verb::Completions(args) => completions::run(args),
        Verb::Manuals(args) => manuals::run(args),
    }
}

/// A failed verb: its message and exit status (2 for bad input, 1 otherwise, 130 on Ctrl-C).
pub struct Failure {
    pub message: String,
    pub status: i32,
}

impl From<lab::Error> for Failure {
    fn from(e: lab::Error) -> Self {
        let status = if interrupt::interrupted() { 130 } else { 1 };
        Failure {
            message: e.0,
            status,
        }
    }
}

impl From<topology::TopologyError> for Failure {
    fn from(e: topology::TopologyError) -> Self {
        Failure {
            message: e.to_string(),
            status: 2,
        }
    }
}

pub fn usage_error(message: impl Into<String>) -> Failure {
    Failure {
        message: message.into(),
        status: 2,
    }
}

/// A failure that is not the user's input (exit status 1).
pub fn failure(message: impl Into<String>) -> Failure {
    Failure {
        message: message.into(),
        status: 1,
    }
}

/// Says which labs a killed `cdnlab` left behind and how to remove them.
fn warn_abandoned() {
    for (lab, owner) in lab::state::abandoned_labs() {
        eprintln!(
            "warning: lab `{lab}` was left behind: the cdnlab process that owned it (pid {}) is gone; `cdnlab down {lab}` (or `cdnlab clean`) removes it",
            owner.pid
        );
    }
}

/// `--lab`, for the verbs that act on a running lab.
#[derive(clap::Args)]
pub struct LabFlag {
    /// The lab (default: the only one up).
    #[arg(long)]
    lab: Option<String>,
}

impl LabFlag {
    /// The lab named (checked), or the only one up.
    pub fn resolve(self) -> Result<String, Failure> {
        resolve_lab(self.lab)
    }
}

/// A LAB argument must be a well-formed lab name before it names any file (exit 2 otherwise).
fn check_lab_arg(lab: &str) -> Result<(), Failure> {
    topology::check_lab_name(lab).map_err(|e| usage_error(format!("LAB argument: {e}")))
}

/// The lab named (checked), or the only one up.
pub fn resolve_lab(lab: Option<String>) -> Result<String, Failure> {
    if let Some(lab) = lab {
        check_lab_arg(&lab)?;
        return Ok(lab);
    }
    let labs = lab::state::list_labs();
    match labs.as_slice() {
        [only] => Ok(only.clone()),
        [] => Err(usage_error("no lab is up")),
        _ => Err(usage_error(format!(
            "several labs are up ({}); name one",
            labs.join(", ")
        ))),
    }
}

/// The state of a lab that is up.
pub fn load_lab(lab: &str) -> Result<LabState, Failure> {
    LabState::load(lab).map_err(|e| failure(e.to_string()))
}

pub fn node_names(state: &LabState) -> String {
    state
        .topology
        .nodes
        .iter()
        .map(|n| n.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where a verb writes when not given --out: `results/NAME-UNIXTIME`, a new directory per call.
pub fn default_out_dir(name: &str) -> PathBuf {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    PathBuf::from("results").join(format!("{name}-{now}"))
}

/// A `--timeout`-like flag's duration (tc time units: `600s`, `500ms`, …).
pub fn parse_duration(flag: &str, value: &str) -> Result<std::time::Duration, Failure> {
    netem::units::parse_duration_ns(value)
        .map(std::time::Duration::from_nanos)
        .map_err(|e| usage_error(format!("{flag}: {e}")))
}
