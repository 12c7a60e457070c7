//! `probe`: cdnlab's link-measurement tool. Measuring subcommands print one JSON object on
//! stdout; `probe --config FILE` runs a topology node's role (server or client).

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use cdnlab::probe::{
    self, Direction, GoodputOptions, RoleConfig, RttOptions, ServeOptions, StreamOptions,
    DEFAULT_PORT,
};
use cdnlab::roles::{self, summary::ClientSummary};
use clap::{Parser, Subcommand};
use serde::Serialize;

#[derive(Parser)]
#[command(
    name = "probe",
    about = "Measure a link: UDP echo RTT, TCP goodput, paced-stream loss and delay variation",
    version,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Run a topology node's role from its TOML config table (mode = "server" or "client").
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where a client writes summary.json (default: $CDNLAB_OUT_DIR).
    #[arg(long, value_name = "DIR", requires = "config")]
    out: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// UDP echo and TCP sink/source server on one port.
    Serve {
        #[arg(long, default_value_t = DEFAULT_PORT)]
        port: u16,
        /// Address to bind.
        #[arg(long, default_value = "0.0.0.0")]
        bind: IpAddr,
        /// Stop after this long (tc units, e.g. 30s); 0 serves until stopped.
        #[arg(long, default_value = "0", value_parser = parse_duration)]
        duration: Duration,
    },
    /// UDP echo pings: loss and RTT percentiles.
    Rtt {
        /// HOST[:PORT] of a `probe serve`.
        #[arg(long)]
        target: String,
        #[arg(long, default_value_t = 10)]
        count: u64,
        /// Time between pings (tc units).
        #[arg(long, default_value = "10ms", value_parser = parse_duration)]
        interval: Duration,
        /// UDP payload bytes.
        #[arg(long, default_value_t = 64)]
        size: usize,
        /// Include every ping's RTT (null where lost).
        #[arg(long)]
        samples: bool,
    },
    /// One TCP flow: goodput measured by the receiver after a warmup.
    Goodput {
        #[arg(long)]
        target: String,
        /// Measured seconds after the warmup.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        #[arg(long, default_value = "download", value_parser = parse_direction)]
        direction: Direction,
        /// Time after the first byte left out (slow start), tc units.
        #[arg(long, default_value = "1s", value_parser = parse_duration)]
        warmup: Duration,
    },
    /// Paced UDP stream echoed back: round-trip loss and delay variation.
    Stream {
        #[arg(long)]
        target: String,
        #[arg(long, default_value_t = 1000.0)]
        rate_pps: f64,
        #[arg(long, default_value_t = 10_000)]
        count: u64,
        /// UDP payload bytes.
        #[arg(long, default_value_t = 200)]
        size: usize,
    },
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    netem::units::parse_duration_ns(text)
        .map(Duration::from_nanos)
        .map_err(|e| e.to_string())
}

fn parse_direction(text: &str) -> Result<Direction, String> {
    text.parse()
}

/// Prints a report as one JSON line.
fn print_json(report: &impl Serialize) -> Result<(), String> {
    let line = serde_json::to_string(report).map_err(|e| e.to_string())?;
    cdnlab::say!("{line}");
    Ok(())
}

fn run_command(command: Command) -> Result<(), String> {
    match command {
        Command::Serve {
            port,
            bind,
            duration,
        } => {
            let opts = ServeOptions {
                bind,
                port,
                duration: (!duration.is_zero()).then_some(duration),
            };
            tracing::info!("probe: serving UDP echo and TCP on {bind}:{port}");
            print_json(&probe::serve(&opts).map_err(|e| e.to_string())?)
        }
        Command::Rtt {
            target,
            count,
            interval,
            size,
            samples,
        } => {
            let addr = probe::resolve_target(&target, DEFAULT_PORT).map_err(|e| e.to_string())?;
            let opts = RttOptions {
                count,
                interval,
                size,
                keep_samples: samples,
            };
            print_json(&probe::measure_rtt(addr, &opts).map_err(|e| e.to_string())?)
        }
        Command::Goodput {
            target,
            seconds,
            direction,
            warmup,
        } => {
            let addr = probe::resolve_target(&target, DEFAULT_PORT).map_err(|e| e.to_string())?;
            let duration = Duration::try_from_secs_f64(seconds)
                .map_err(|_| format!("--seconds {seconds} is not a time"))?;
            let opts = GoodputOptions {
                direction,
                duration,
                warmup,
            };
            print_json(&probe::measure_goodput(addr, &opts).map_err(|e| e.to_string())?)
        }
        Command::Stream {
            target,
            rate_pps,
            count,
            size,
        } => {
            let addr = probe::resolve_target(&target, DEFAULT_PORT).map_err(|e| e.to_string())?;
            let opts = StreamOptions {
                rate_pps,
                count,
                size,
            };
            print_json(&probe::measure_stream(addr, &opts).map_err(|e| e.to_string())?)
        }
    }
}

/// Runs a node's role; a client's failure still writes its summary, then exits non-zero.
fn run_role(config: PathBuf, out: Option<PathBuf>) -> Result<(), String> {
    let table = roles::config::read_table(&config)?;
    let role =
        probe::parse_role_config(&table).map_err(|e| format!("{}: {e}", config.display()))?;
    match role {
        RoleConfig::Server(role) => run_command(Command::Serve {
            port: role.port,
            bind: IpAddr::from([0, 0, 0, 0]),
            duration: role.duration.unwrap_or(Duration::ZERO),
        }),
        RoleConfig::Client(role) => {
            let env = roles::env::NodeEnv::read();
            let out = out.or(env.out_dir.clone()).ok_or_else(|| {
                format!(
                    "a client needs --out DIR or ${} for its summary.json",
                    roles::env::OUT_DIR
                )
            })?;
            let node = env.node_name();
            let summary = ClientSummary::of(&node, &probe::run_client(&role, node.clone()));
            roles::summary::finish(&out, &node, summary)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    roles::logs::init();
    let result = match (cli.command, cli.config) {
        (Some(command), _) => run_command(command),
        (None, Some(config)) => run_role(config, cli.out),
        (None, None) => {
            Err("give a subcommand (serve, rtt, goodput, stream) or --config FILE".into())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("probe: {error}");
            ExitCode::FAILURE
        }
    }
}
