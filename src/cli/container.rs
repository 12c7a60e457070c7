//! `cdnlab container run|ready|link|certs`: the commands a testbed container runs (see
//! `docker-compose.yml`): its entrypoint, its healthcheck, run-time link changes through
//! `docker exec`, and the one-shot issuing of the control plane's certificates.

use super::topology_args::EmulationArgs;
use super::{failure, parse_duration, usage_error, Failure};
use crate::container::entry::{self, DirectoryOptions, Program, RunOptions};
use crate::container::links::{self, state_dir, ContainerState};
use crate::container::spec::{
    parse_host, parse_net, parse_route, parse_sender, HostSpec, NetSpec, RouteSpec, SenderSpec,
    Subnet,
};
use crate::container::started;
use crate::lab;
use crate::topology::ChangeFlags;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum ContainerVerb {
    /// The container's entrypoint: routes, each network's impairments, then the node's program
    /// (`--role` or a command after `--`); the container ends with the program.
    Run(Box<RunArgs>),
    /// The healthcheck: succeeds once `run` has set up the container and its program is ready.
    Ready,
    /// Read or change this container's impairments (through `docker exec`).
    #[command(subcommand)]
    Link(LinkVerb),
    /// Issue the lab's control-plane certificates into DIR, unless they are all there.
    Certs {
        /// Where the certificates go (a volume the role containers mount).
        #[arg(long)]
        dir: PathBuf,
        /// The lab's name, written into the CA.
        #[arg(long)]
        lab: String,
        /// Every node that talks on the control plane.
        #[arg(required = true)]
        nodes: Vec<String>,
    },
}

#[derive(Subcommand)]
pub enum LinkVerb {
    /// Change one network's impairments in this container (the flags given replace the current
    /// ones). Every container on the network needs the same change: the scripts do that.
    Set(Box<SetArgs>),
    /// Show this container's networks, their impairments and the shaper's counters.
    Show,
}

#[derive(Args)]
pub struct SetArgs {
    /// The network's name, as given to `run --net`.
    net: String,
    /// Only check that the change is valid and this container is on the network; change
    /// nothing (the scripts check every container before they change any).
    #[arg(long)]
    check: bool,
    #[command(flatten)]
    change: ChangeFlags,
}

#[derive(Args)]
pub struct RunArgs {
    /// A network of this container: `NAME=SUBNET[,delay=10ms,rate=5mbit,...]` (the topology's
    /// impairment keys). Its interface is the one with an address in SUBNET. Repeatable.
    #[arg(long = "net", value_name = "NAME=SUBNET[,KEY=VALUE...]", value_parser = parse_net)]
    nets: Vec<NetSpec>,
    /// Traffic on network NAME from member ADDRESS has impairments of its own:
    /// `NAME=ADDRESS[,KEY=VALUE...]` (a LAN whose members send at different rates); with
    /// `--directory`, ADDRESS may be the member's node name. Repeatable.
    #[arg(long = "net-from", value_name = "NAME=ADDRESS[,KEY=VALUE...]", value_parser = parse_sender)]
    senders: Vec<SenderSpec>,
    /// A static route, `SUBNET=GATEWAY`; with `--directory`, GATEWAY may be a peer's node
    /// name. Repeatable.
    #[arg(long = "route", value_name = "SUBNET=GATEWAY", value_parser = parse_route)]
    routes: Vec<RouteSpec>,
    /// In a Swarm stack: the directory network's subnet, where this container serves its card
    /// and asks for others' (their addresses, whether they are ready).
    #[arg(long, value_name = "SUBNET", value_parser = Subnet::parse, requires = "node")]
    directory: Option<Subnet>,
    /// This container's node (its certificate's name).
    #[arg(long, requires = "directory")]
    node: Option<String>,
    /// Where `ca.pem`, `NODE.pem` and `NODE.key` are (the stack's secrets).
    #[arg(long, default_value = "/run/secrets", requires = "directory")]
    certs: PathBuf,
    /// Record in DIR/NODE that this node's task has started, with its service's ID (from
    /// `CDNLAB_SWARM_SERVICE`), and stop if an earlier task of that service already did: a
    /// task Swarm starts again must not come back with new addresses its peers do not follow.
    #[arg(long, value_name = "DIR", requires = "directory")]
    started_dir: Option<PathBuf>,
    /// `/etc/hosts` names NODE by its address on network NET (needs `--directory`).
    /// Repeatable.
    #[arg(long = "host", value_name = "NODE@NET", value_parser = parse_host)]
    hosts: Vec<HostSpec>,
    /// Start the program only once these nodes are ready, comma-separated (needs
    /// `--directory`).
    #[arg(long, value_delimiter = ',', value_name = "NODE,...")]
    wait_for: Vec<String>,
    #[command(flatten)]
    emulation: EmulationArgs,
    /// The cdnlab role to run (ucs, dcs, urr, drr, has-client, probe).
    #[arg(long, requires = "role_config", conflicts_with = "command")]
    role: Option<String>,
    /// The role's config table, as TOML text (the `config` of a topology node).
    #[arg(long, value_name = "TOML", requires = "role")]
    role_config: Option<String>,
    /// Ready once this TCP port accepts on loopback (the healthcheck waits for it).
    #[arg(long, value_name = "PORT")]
    ready_tcp: Option<u16>,
    /// How long the program gets to become ready.
    #[arg(long, default_value = "60s")]
    ready_timeout: String,
    /// Any command to run instead of a role.
    #[arg(last = true)]
    command: Vec<String>,
}

pub fn run(verb: ContainerVerb) -> Result<(), Failure> {
    match verb {
        ContainerVerb::Run(args) => run_container(*args),
        ContainerVerb::Ready => {
            if state_dir().join("ready").is_file() {
                Ok(())
            } else {
                Err(failure("not ready yet"))
            }
        }
        ContainerVerb::Link(LinkVerb::Set(args)) => {
            let SetArgs { net, check, change } = *args;
            let change = change.to_change().map_err(usage_error)?;
            if change.is_empty() {
                return Err(usage_error(
                    "nothing to change: give --delay, --jitter, --loss, --rate, ...",
                ));
            }
            let mut state = ContainerState::load()?;
            if check {
                links::check(&state, &net)?;
                crate::say!("{net}: the change can be made");
                return Ok(());
            }
            let now = links::set(&mut state, &net, &change)?;
            crate::say!("{net}: {now}");
            Ok(())
        }
        ContainerVerb::Link(LinkVerb::Show) => {
            crate::say_text!("{}", links::show(&ContainerState::load()?)?);
            Ok(())
        }
        ContainerVerb::Certs { dir, lab, nodes } => {
            let names: Vec<&str> = nodes.iter().map(String::as_str).collect();
            let issued = crate::container::issue_certs_once(&dir, &lab, &names)
                .map_err(|e| lab::Error(e.to_string()))?;
            let verb = if issued { "issued" } else { "kept" };
            crate::say!(
                "{verb} the certificates of {} in {}",
                nodes.join(", "),
                dir.display()
            );
            Ok(())
        }
    }
}

fn run_container(args: RunArgs) -> Result<(), Failure> {
    let ready_timeout = parse_duration("--ready-timeout", &args.ready_timeout)?;
    let program = match (args.role, args.role_config) {
        (Some(role), Some(config)) => Program::Role { role, config },
        _ if !args.command.is_empty() => Program::Command(args.command),
        _ => Program::Nothing,
    };
    let started = match args.started_dir {
        Some(dir) => match std::env::var(started::SERVICE_ENV) {
            Ok(service) => Some((dir, service)),
            Err(_) => {
                return Err(usage_error(format!(
                    "--started-dir needs the service's ID in {}",
                    started::SERVICE_ENV
                )))
            }
        },
        None => None,
    };
    let directory = match (args.directory, args.node) {
        (Some(subnet), Some(node)) => Some(DirectoryOptions {
            subnet,
            node,
            certs: args.certs,
            started,
        }),
        _ => None,
    };
    let status = entry::run(&RunOptions {
        nets: args.nets,
        senders: args.senders,
        routes: args.routes,
        hosts: args.hosts,
        directory,
        wait_for: args.wait_for,
        link_backend: args.emulation.link_backend,
        seed: args.emulation.seed,
        program,
        ready_tcp: args.ready_tcp,
        ready_timeout,
    })?;
    if status == 0 {
        Ok(())
    } else {
        Err(Failure {
            message: format!("the program exited with status {status}"),
            status,
        })
    }
}
