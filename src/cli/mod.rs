//! The `cdnlab` command: flags and dispatch; each verb's work lives in the library.

mod container;
mod link;
mod status;

use crate::lab::{self, interrupt, LabState};
use crate::topology::{self, LoadOptions};
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

#[derive(clap::Args)]
pub struct TopologyArgs {
    /// The topology file (TOML; see topologies/README.md).
    topology: PathBuf,
    /// Lab name (default: the file's `name`).
    #[arg(long)]
    name: Option<String>,
    /// Override a variable of the file's [vars]: `--set internet_delay=200ms`.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = topology::parse_set)]
    set: Vec<(String, String)>,
    /// Link emulation: tc-netem in the kernel, the userspace shaper, or whichever the kernel allows.
    #[arg(long, default_value = "auto", value_parser = ["auto", "kernel", "userspace"])]
    link_backend: String,
    /// Seed of the link emulation's random numbers (loss, jitter).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Subcommand)]
enum Verb {
    /// Create the lab's namespaces, links and processes; return once every node is ready.
    Up(TopologyArgs),
    /// Show nodes, addresses, processes and links with their current impairments.
    Status {
        lab: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Run a command inside a node's namespace (names of nodes resolve there).
    Exec {
        #[arg(long)]
        lab: Option<String>,
        node: String,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Read or change link impairments at run time.
    #[command(subcommand)]
    Link(link::LinkVerb),
    /// Stop the lab's processes and remove everything it created.
    Down { lab: Option<String> },
    /// Remove every leftover of any lab (after a crash), without the topology file; with
    /// names, only of those labs. A lab whose `cdnlab up` or `cdnlab run` is still running is
    /// kept unless --force.
    Clean {
        labs: Vec<String>,
        /// Also remove labs whose owning `cdnlab` process is still running.
        #[arg(long)]
        force: bool,
    },
    /// Up, run the clients and the timeline, collect results, down; print a summary table.
    Run {
        #[command(flatten)]
        args: TopologyArgs,
        /// The run directory (default: results/LAB-UNIXTIME).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Stop clients still running after this long (tc time units).
        #[arg(long, default_value = "600s")]
        timeout: String,
    },
    /// Run a topology once per combination of varied variables, several labs at once; write
    /// every client's results to sweep.csv, print tables and draw SVG plots.
    Sweep(Box<SweepArgs>),
    /// Inside a testbed container (docker-compose.yml): its entrypoint, healthcheck, run-time
    /// link changes and certificates.
    #[command(subcommand)]
    Container(container::ContainerVerb),
    /// Measure link fidelity (delay, rate, jitter, loss), the shaper's CPU, how fast a
    /// 100-node lab comes up and down, PARM's solve time and an ICN router's throughput; print
    /// markdown tables. Needs root. `http` (not in `all`) compares our content server and router with nginx on loopback (needs nginx, wrk).
    Bench {
        #[arg(value_parser = ["delay", "rate", "jitter", "loss", "cpu", "scale", "parm", "icn", "all", "http"])]
        which: String,
        /// Fewer samples and shorter runs: a smoke test, not a measurement.
        #[arg(long)]
        quick: bool,
        /// Link emulation, as for `up`.
        #[arg(long, default_value = "auto", value_parser = ["auto", "kernel", "userspace"])]
        link_backend: String,
    },
    /// Location-dependent pricing and price-aware request mapping (papers/000), offline.
    #[command(subcommand)]
    Pricing(PricingVerb),
}

#[derive(Subcommand)]
enum PricingVerb {
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

#[derive(clap::Args)]
pub struct SweepArgs {
    /// The topology file.
    topology: PathBuf,
    /// A variable and its values: `--vary internet_delay=0ms,50ms,100ms` (repeatable).
    #[arg(long, value_name = "KEY=V1,V2,...", value_parser = crate::sweep::grid::parse_vary, required = true)]
    vary: Vec<(String, Vec<String>)>,
    /// A variable every run gets.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = topology::parse_set)]
    set: Vec<(String, String)>,
    /// How many labs run at once.
    #[arg(long, default_value_t = 4)]
    parallel: usize,
    /// The sweep directory (default: results/sweep-UNIXTIME).
    #[arg(long)]
    out: Option<PathBuf>,
    /// A metric against a varied variable, tabulated and plotted: `--plot startup_delay_s:internet_delay`.
    #[arg(long, value_name = "METRIC:VARIABLE")]
    plot: Vec<String>,
    /// The client field that names the lines of a plot.
    #[arg(long, default_value = "policy")]
    series: String,
    /// A --vary variable whose values are replicates (e.g. workload traces), not a dimension:
    /// tables and plots show the mean over them ± the 95% confidence interval.
    #[arg(long, value_name = "VARIABLE")]
    replicates: Option<String>,
    #[arg(long, default_value = "auto", value_parser = ["auto", "kernel", "userspace"])]
    link_backend: String,
    /// Per run: stop clients still running after this long.
    #[arg(long, default_value = "600s")]
    timeout: String,
    /// Run nothing: tabulate and plot the runs already in --out.
    #[arg(long, requires = "out")]
    replot: bool,
}

fn sweep(args: SweepArgs) -> Result<(), Failure> {
    let plots = args
        .plot
        .iter()
        .map(|p| {
            p.split_once(':')
                .map(|(y, x)| (y.to_string(), x.to_string()))
                .ok_or_else(|| usage_error(format!("--plot `{p}`: expected METRIC:VARIABLE")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(var) = &args.replicates {
        check_replicates(var, &args.vary, &plots, &args.series)?;
    }
    // Check the file and every combination's variables before starting anything.
    for run in crate::sweep::grid::combinations(&args.vary) {
        let set: Vec<(String, String)> = args.set.iter().cloned().chain(run).collect();
        topology::load(
            &args.topology,
            &LoadOptions {
                name: None,
                set: &set,
            },
        )?;
    }
    let out = args.out.unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        PathBuf::from("results").join(format!("sweep-{now}"))
    });
    interrupt::install();
    let report = crate::sweep::sweep(&crate::sweep::SweepOptions {
        topology: args.topology,
        set: args.set,
        vary: args.vary,
        parallel: args.parallel,
        out_dir: out,
        plots,
        series: args.series,
        replicates: args.replicates,
        replot: args.replot,
        run_flags: vec![
            "--link-backend".into(),
            args.link_backend,
            "--timeout".into(),
            args.timeout,
        ],
    })
    .map_err(|message| Failure { message, status: 1 })?;
    print!("{report}");
    Ok(())
}

/// The replicate variable must be varied, or there is nothing to average over, and must be
/// neither a plot's x nor the series, which would split its replicates apart again.
fn check_replicates(
    var: &str,
    vary: &[(String, Vec<String>)],
    plots: &[(String, String)],
    series: &str,
) -> Result<(), Failure> {
    if !vary.iter().any(|(k, _)| k == var) {
        return Err(usage_error(format!(
            "--replicates `{var}`: not a varied variable; give its values with --vary {var}=V1,V2,..."
        )));
    }
    if var == series || plots.iter().any(|(_, x)| x == var) {
        return Err(usage_error(format!(
            "--replicates `{var}`: the replicates cannot also be the --series or a --plot variable"
        )));
    }
    Ok(())
}

/// Runs the command line; returns the process exit status.
pub fn main() -> i32 {
    // Output piped into `head` ends the command quietly, as for any Unix tool, instead of a
    // panic on the broken pipe (Rust ignores SIGPIPE by default).
    // SAFETY: restoring a signal's default disposition at start-up, before any thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(()) => 0,
        Err(Failure { message, status }) => {
            eprintln!("cdnlab: {message}");
            status
        }
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

/// Says which labs a killed `cdnlab` left behind and how to remove them.
fn warn_abandoned() {
    for (lab, owner) in lab::state::abandoned_labs() {
        eprintln!(
            "warning: lab `{lab}` was left behind: the cdnlab process that owned it (pid {}) is gone; `cdnlab down {lab}` (or `cdnlab clean`) removes it",
            owner.pid
        );
    }
}

fn dispatch(verb: Verb) -> Result<(), Failure> {
    if !matches!(
        verb,
        Verb::Down { .. } | Verb::Clean { .. } | Verb::Container(_) | Verb::Pricing(_)
    ) {
        warn_abandoned();
    }
    match verb {
        Verb::Up(args) => {
            let topology = load_topology(&args)?;
            interrupt::install();
            let mut state = lab::up(topology, &up_options(&args, None))?;
            // The lab stays up after this process exits: it is the user's now, not a leftover.
            state.update(|state| {
                state.owner = None;
                Ok(())
            })?;
            println!(
                "lab `{}` is up ({} nodes, {} link backend); `cdnlab status {}` shows it, `cdnlab down {}` removes it",
                state.lab,
                state.topology.nodes.len(),
                state.backend.name(),
                state.lab,
                state.lab
            );
            Ok(())
        }
        Verb::Status { lab, json } => status::status(&resolve_lab(lab)?, json),
        Verb::Exec { lab, node, command } => exec(&resolve_lab(lab)?, &node, &command),
        Verb::Link(verb) => link::run(verb),
        Verb::Container(verb) => container::run(verb),
        Verb::Down { lab } => {
            let lab = resolve_lab(lab)?;
            lab::down(&lab)?;
            println!("lab `{lab}` is down");
            Ok(())
        }
        Verb::Run { args, out, timeout } => run(args, out, &timeout),
        Verb::Sweep(args) => sweep(*args),
        Verb::Bench {
            which,
            quick,
            link_backend,
        } => bench(&which, quick, link_backend),
        Verb::Pricing(PricingVerb::Reproduce { out, seed }) => {
            let summary = crate::pricing::reproduce::reproduce(&out, seed)
                .map_err(|message| Failure { message, status: 1 })?;
            print!("{summary}");
            println!("\nresults: {}", out.display());
            Ok(())
        }
        Verb::Clean { labs, force } => {
            for lab in &labs {
                check_lab_arg(lab)?;
            }
            let cleaned = lab::clean(&labs, force)?;
            for (lab, pid) in &cleaned.kept_live {
                println!("kept: lab `{lab}` belongs to a running cdnlab (pid {pid}); stop that, or `cdnlab clean --force {lab}`");
            }
            if cleaned.removed.is_empty() {
                println!("nothing to clean");
            } else {
                println!("removed: {}", cleaned.removed.join(", "));
            }
            Ok(())
        }
    }
}

pub fn load_topology(args: &TopologyArgs) -> Result<topology::Topology, Failure> {
    Ok(topology::load(
        &args.topology,
        &LoadOptions {
            name: args.name.as_deref(),
            set: &args.set,
        },
    )?)
}

pub fn up_options(args: &TopologyArgs, out_dir: Option<PathBuf>) -> lab::UpOptions {
    lab::UpOptions {
        link_backend: args.link_backend.clone(),
        out_dir,
        seed: args.seed,
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

/// Replaces this process with the command, run inside the node's namespace.
fn exec(lab: &str, node: &str, command: &[String]) -> Result<(), Failure> {
    let state = LabState::load(lab).map_err(|e| lab::Error(e.to_string()))?;
    let Some(index) = state.topology.nodes.iter().position(|n| n.name == node) else {
        return Err(usage_error(format!(
            "lab `{lab}` has no node `{node}`; its nodes: {}",
            node_names(&state)
        )));
    };
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new("ip")
        .args(["netns", "exec", &state.netns(index)])
        .args(command)
        .exec();
    Err(Failure {
        message: format!("cannot run ip netns exec: {error}"),
        status: 1,
    })
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

fn run(args: TopologyArgs, out: Option<PathBuf>, timeout: &str) -> Result<(), Failure> {
    let timeout = netem::units::parse_duration_ns(timeout)
        .map_err(|e| usage_error(format!("--timeout: {e}")))?;
    let topology = load_topology(&args)?;
    let out = out.unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        PathBuf::from("results").join(format!("{}-{now}", topology.name))
    });
    interrupt::install();
    let summary = crate::run::run(
        topology,
        crate::run::RunOptions {
            up: up_options(&args, None),
            out_dir: out.clone(),
            topology_file: args.topology.clone(),
            client_timeout: std::time::Duration::from_nanos(timeout),
        },
    )?;
    print!("{}", crate::run::summary::table(&summary));
    println!("results: {}", out.display());
    let failed = summary.clients.iter().filter(|c| c.failed).count();
    if failed > 0 {
        return Err(Failure {
            message: format!("{failed} client(s) failed"),
            status: 1,
        });
    }
    Ok(())
}

/// `cdnlab bench`: runs the benchmarks named, printing each report as it is ready.
fn bench(which: &str, quick: bool, link_backend: String) -> Result<(), Failure> {
    let names = crate::bench::select(which)
        .ok_or_else(|| usage_error(format!("no benchmark `{which}`")))?;
    interrupt::install();
    let options = crate::bench::BenchOptions {
        quick,
        link_backend,
    };
    Ok(crate::bench::run(&names, &options, |report| {
        println!("{}", report.render())
    })?)
}
