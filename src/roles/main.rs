//! The one `main` of every role binary: `ROLE --config FILE` (and `--out DIR` for a client),
//! `--help`, `--version`; logs; a tokio runtime; the node's environment; the shutdown signal.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::ExitCode;
use std::task::{Context, Poll};

use clap::{value_parser, Arg, ArgMatches, Command};
use toml::Table;

use super::config::read_table;
use super::env::NodeEnv;

/// A role binary: its name (the binary's, and a topology's `role = "..."`), one line for
/// `--help`, and whether it is a client.
pub struct Role {
    pub name: &'static str,
    pub about: &'static str,
    pub kind: Kind,
}

/// A server runs until it is stopped; a client ends by itself and writes `summary.json` to
/// its output directory (`--out`, else `$CDNLAB_OUT_DIR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Server,
    Client,
}

/// What a role starts with.
pub struct Start {
    pub role: &'static str,
    /// The config file's path, for messages.
    pub config_path: PathBuf,
    /// The node's config table, read from `config_path`.
    pub config: Table,
    pub env: NodeEnv,
    /// A client's output directory; `None` for a server.
    pub out: Option<PathBuf>,
    /// Resolves on SIGTERM (what `cdnlab down` sends) or SIGINT.
    pub shutdown: Shutdown,
}

impl Start {
    /// Parses the config table with `parse`; an error names the config file.
    pub fn parse<T>(&self, parse: impl FnOnce(&Table) -> Result<T, String>) -> Result<T, String> {
        parse(&self.config).map_err(|e| format!("{}: {e}", self.config_path.display()))
    }

    /// A client's output directory (always there for `Kind::Client`).
    pub fn out_dir(&self) -> Result<PathBuf, String> {
        self.out
            .clone()
            .ok_or_else(|| format!("{} is not a client: it has no output directory", self.role))
    }
}

/// Runs `role`: parses the command line (`--help` and `--version` print and exit 0), starts
/// the logs and a tokio runtime, reads the config table and the environment, and
/// runs `run` until it returns. An error is printed as `ROLE: message` (the last line of
/// the node's log) with a failing exit.
pub fn main<F, Fut>(role: Role, run: F) -> ExitCode
where
    F: FnOnce(Start) -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let args = command(&role).get_matches();
    super::logs::init();
    raise_open_file_limit();
    // One worker per core, or `TOKIO_WORKER_THREADS` (bench http gives every server one). One
    // worker runs on tokio's current-thread scheduler: the same single thread of work without
    // the work-stealing scheduler's cross-thread bookkeeping, ~5% of a 302's cost.
    let mut builder = if super::env::worker_threads() == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return fail(role.name, &format!("starting the runtime: {e}")),
    };
    let result = runtime.block_on(async {
        let start = start(&role, &args).await?;
        run(start).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(role.name, &e),
    }
}

/// Lifts the soft limit on open descriptors to the hard one, as servers do: a content server
/// keeps one per cached chunk (`http::sealed`) besides its connections, and Debian's soft
/// limit of 1024 would run out first.
fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit on a live local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 || limit.rlim_cur >= limit.rlim_max
        {
            return;
        }
        let wanted = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) != 0 {
            tracing::debug!(
                "raising the open-file limit: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

fn fail(role: &str, message: &str) -> ExitCode {
    eprintln!("{role}: {message}");
    ExitCode::FAILURE
}

/// The role's command line.
fn command(role: &Role) -> Command {
    let command = Command::new(role.name)
        .about(role.about)
        .version(env!("CARGO_PKG_VERSION"))
        .arg(
            Arg::new("config")
                .long("config")
                .value_name("FILE")
                .required(true)
                .value_parser(value_parser!(PathBuf))
                .help("The node's config table as TOML (what `cdnlab up` writes)"),
        );
    match role.kind {
        Kind::Server => command,
        Kind::Client => command.arg(
            Arg::new("out")
                .long("out")
                .value_name("DIR")
                .value_parser(value_parser!(PathBuf))
                .help("Where summary.json goes [default: $CDNLAB_OUT_DIR]"),
        ),
    }
}

async fn start(role: &Role, args: &ArgMatches) -> Result<Start, String> {
    let config_path = args
        .get_one::<PathBuf>("config")
        .cloned()
        .ok_or("--config FILE is required")?;
    let env = NodeEnv::read();
    tracing::debug!(
        "{} {}: config {}, node {:?}, lab {:?}",
        role.name,
        env!("CARGO_PKG_VERSION"),
        config_path.display(),
        env.node,
        env.lab
    );
    let config = read_table(&config_path)?;
    let out = match role.kind {
        Kind::Server => None,
        Kind::Client => Some(
            args.get_one::<PathBuf>("out")
                .cloned()
                .or_else(|| env.out_dir.clone())
                .ok_or_else(|| {
                    format!(
                        "give --out DIR or set ${} for summary.json",
                        super::env::OUT_DIR
                    )
                })?,
        ),
    };
    let shutdown =
        Shutdown::on_signals().map_err(|e| format!("installing signal handlers: {e}"))?;
    Ok(Start {
        role: role.name,
        config,
        config_path,
        env,
        out,
        shutdown,
    })
}

/// A signal that stops a role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Term,
    Int,
}

impl std::fmt::Display for Signal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Signal::Term => "SIGTERM",
            Signal::Int => "SIGINT",
        })
    }
}

/// Resolves (to `()`) when the role is asked to stop; `signal` tells which signal it was.
pub struct Shutdown {
    signal: Pin<Box<dyn Future<Output = Signal> + Send>>,
}

impl Shutdown {
    /// Resolves on SIGTERM (what `cdnlab down` sends) or SIGINT.
    pub fn on_signals() -> std::io::Result<Shutdown> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        Ok(Shutdown {
            signal: Box::pin(async move {
                tokio::select! {
                    _ = term.recv() => Signal::Term,
                    _ = int.recv() => Signal::Int,
                }
            }),
        })
    }

    /// The signal that stopped the role, once it arrives.
    pub async fn signal(self) -> Signal {
        self.signal.await
    }
}

impl Future for Shutdown {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.signal.as_mut().poll(cx).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(kind: Kind) -> Role {
        Role {
            name: "example",
            about: "An example role",
            kind,
        }
    }

    #[test]
    fn a_server_takes_config_and_no_out() {
        let args = command(&role(Kind::Server))
            .try_get_matches_from(["example", "--config", "node.toml"])
            .unwrap();
        assert_eq!(
            args.get_one::<PathBuf>("config"),
            Some(&PathBuf::from("node.toml"))
        );
        let refused = command(&role(Kind::Server))
            .try_get_matches_from(["example", "--config", "a", "--out", "b"])
            .unwrap_err();
        assert_eq!(refused.kind(), clap::error::ErrorKind::UnknownArgument);
    }

    #[test]
    fn a_client_takes_out_and_both_answer_help_and_version() {
        let args = command(&role(Kind::Client))
            .try_get_matches_from(["example", "--config", "a", "--out", "b"])
            .unwrap();
        assert_eq!(args.get_one::<PathBuf>("out"), Some(&PathBuf::from("b")));
        for kind in [Kind::Server, Kind::Client] {
            let help = command(&role(kind))
                .try_get_matches_from(["example", "--help"])
                .unwrap_err();
            assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
            let version = command(&role(kind))
                .try_get_matches_from(["example", "--version"])
                .unwrap_err();
            assert_eq!(version.kind(), clap::error::ErrorKind::DisplayVersion);
        }
        let missing = command(&role(Kind::Client))
            .try_get_matches_from(["example"])
            .unwrap_err();
        assert_eq!(
            missing.kind(),
            clap::error::ErrorKind::MissingRequiredArgument
        );
    }
}
