//! `cdnlab container run`: the entrypoint of a testbed container. It finds the container's
//! networks by subnet, adds its static routes, applies each network's impairments, starts the
//! node's program (a role with its config, or any command) with the container's stdout and
//! stderr, marks the container ready once the program listens, and stays until the program
//! exits (its status becomes the container's) or the container is stopped.
//!
//! In a Swarm stack (`--directory`) it first serves its own card and learns from other
//! containers' cards what the orchestrator decided: gateways, LAN peers' addresses, the names
//! `/etc/hosts` needs; and it starts its program only once the nodes it waits for are ready.

use super::directory::{Card, Directory};
use super::links::{self, state_dir, ContainerState, Underlay};
use super::spec::{
    attach_senders, check_nets, interface_in, HostSpec, NetSpec, PeerAddr, RouteSpec, SenderSpec,
    Subnet,
};
use crate::lab::interrupt;
use crate::lab::process::STOP_GRACE;
use crate::lab::sys::{self, err, Error, Result};
use std::collections::BTreeMap;
use std::io::Write;
use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What the container runs once its networks are set up.
#[derive(Debug, Clone, PartialEq)]
pub enum Program {
    /// Nothing: a router or a plain host, up until stopped.
    Nothing,
    /// A cdnlab role with its config table (TOML text).
    Role { role: String, config: String },
    /// Any command.
    Command(Vec<String>),
}

/// A Swarm stack's directory network, and who this container is on it.
#[derive(Debug, Clone)]
pub struct DirectoryOptions {
    pub subnet: Subnet,
    /// This container's node.
    pub node: String,
    /// Where this node's certificate, key and the lab's CA are (`ca.pem`, `NODE.pem`,
    /// `NODE.key`: the stack's secrets).
    pub certs: PathBuf,
    /// Where this node records that a task of its service has started, and the service's ID
    /// (`started`): a task started again in the same deployment stops there.
    pub started: Option<(PathBuf, String)>,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub nets: Vec<NetSpec>,
    /// `--net-from`, given to their networks once any node's address is known.
    pub senders: Vec<SenderSpec>,
    pub routes: Vec<RouteSpec>,
    /// Names for `/etc/hosts`, by the node's address on a network (needs `directory`).
    pub hosts: Vec<HostSpec>,
    pub directory: Option<DirectoryOptions>,
    /// Nodes whose programs must be ready before this one starts (needs `directory`).
    pub wait_for: Vec<String>,
    pub link_backend: crate::lab::BackendChoice,
    pub seed: u64,
    pub program: Program,
    /// The container is ready once this TCP port accepts on loopback.
    pub ready_tcp: Option<u16>,
    pub ready_timeout: Duration,
}

/// How long the networks docker attaches get to appear.
const INTERFACE_WAIT: Duration = Duration::from_secs(10);

/// Runs the container; returns the exit status the container should have.
pub fn run(options: &RunOptions) -> Result<i32> {
    check_nets(&options.nets).map_err(Error)?;
    links::prepare_state_dir()?;
    let argv = program_argv(&options.program)?;
    interrupt::install();
    // SAFETY: the handler only stores to an atomic flag.
    let handler: extern "C" fn(libc::c_int) = on_usr1;
    unsafe { libc::signal(libc::SIGUSR1, handler as libc::sighandler_t) };

    let found = find_interfaces(&options.nets, options.directory.as_ref().map(|d| d.subnet))?;
    let mut directory = Lookup::new(options, &found)?;
    let mut nets = options.nets.clone();
    attach_senders(&mut nets, &options.senders, |net, node| {
        directory.address(node, net).map_err(|e| e.0)
    })
    .map_err(Error)?;
    for route in &options.routes {
        let via = match &route.via {
            PeerAddr::Ip(ip) => *ip,
            PeerAddr::Node(node) => {
                let Some(net) = nets.iter().find(|n| n.peers.contains(node)) else {
                    return err(format!(
                        "--route `{}={node}`: `{node}` is on none of this container's networks",
                        route.dest
                    ));
                };
                directory.address(node, &net.name)?
            }
        };
        sys::run(
            &[
                "ip",
                "route",
                "replace",
                &route.dest.to_string(),
                "via",
                &via.to_string(),
            ],
            None,
        )?;
    }
    add_hosts(&options.hosts, &mut directory)?;
    let ifnames = found.into_iter().take(nets.len()).map(|(i, _)| i).collect();
    let backend = links::choose_backend(options.link_backend)?;
    let mut state = ContainerState::new(backend, &nets, ifnames);
    state.underlay = directory.underlay(&nets);
    state.save()?;
    let mut shaper = links::install(&state, options.seed, stderr_file()?)?;
    for net in &state.nets {
        tracing::info!(
            "cdnlab container: {} on {}: {} ({} backend)",
            net.name,
            net.ifname,
            net.impairments,
            backend.name()
        );
    }
    report_underlay(&state.underlay)?;
    if let Some(served) = &directory.served {
        // Before the program starts, so a role connecting at once finds its peers up.
        let deadline = Instant::now() + super::directory::CARD_WAIT;
        served
            .wait_ready(&options.wait_for, deadline)
            .map_err(|e| Error(e.to_string()))?;
    }

    let mut program = match &argv {
        Some(argv) => Some(
            Command::new(&argv[0])
                .args(&argv[1..])
                .stdin(Stdio::null())
                .spawn()
                .map_err(|e| Error(format!("cannot start `{}`: {e}", argv.join(" "))))?,
        ),
        None => None,
    };
    let outcome = supervise(
        options,
        &mut program,
        &mut shaper,
        directory.served.as_ref(),
    );
    if let Some(child) = program.as_mut() {
        stop(child);
    }
    if let Some(child) = shaper.as_mut() {
        stop(child);
    }
    outcome
}

/// Waits for readiness, then for the program's end, an interrupt or the shaper's death.
fn supervise(
    options: &RunOptions,
    program: &mut Option<Child>,
    shaper: &mut Option<Child>,
    directory: Option<&Directory>,
) -> Result<i32> {
    wait_ready(options, program)?;
    std::fs::write(state_dir().join("ready"), b"")?;
    if let Some(directory) = directory {
        directory.set_ready();
    }
    tracing::info!("cdnlab container: ready");
    loop {
        if let Some(child) = program.as_mut() {
            if let Some(status) = child.try_wait()? {
                *program = None;
                return Ok(exit_code(status));
            }
        }
        if let Some(child) = shaper.as_mut() {
            if let Some(status) = child.try_wait()? {
                *shaper = None;
                return err(format!(
                    "the link shaper exited ({status}): impaired networks carry no traffic"
                ));
            }
        }
        if interrupt::interrupted() {
            return Ok(0);
        }
        if USR1.swap(false, Ordering::Relaxed) {
            if let Some(child) = program.as_ref() {
                // SAFETY: signalling our own child by its pid.
                unsafe { libc::kill(child.id() as i32, libc::SIGUSR1) };
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The program's command line; a role's config is checked and written first.
/// SIGUSR1 to the container (`docker kill -s USR1`, a timeline's `signal`) goes on to its
/// program: a role with a next phase moves to it, as in a lab.
static USR1: AtomicBool = AtomicBool::new(false);

extern "C" fn on_usr1(_: libc::c_int) {
    USR1.store(true, Ordering::Relaxed);
}

fn program_argv(program: &Program) -> Result<Option<Vec<String>>> {
    match program {
        Program::Nothing => Ok(None),
        Program::Command(argv) => Ok(Some(argv.clone())),
        Program::Role { role, config } => {
            if !crate::roles::ROLES.contains(&role.as_str()) {
                return err(format!(
                    "--role `{role}`: no such role (roles: {})",
                    crate::roles::ROLES.join(", ")
                ));
            }
            toml::from_str::<toml::Table>(config)
                .map_err(|e| Error(format!("--role-config is not a TOML table: {e}")))?;
            let binary = sys::bin_dir()?.join(role);
            let path = state_dir().join("role.toml");
            std::fs::write(&path, config).map_err(|e| Error(format!("{}: {e}", path.display())))?;
            Ok(Some(vec![
                binary.to_string_lossy().into_owned(),
                "--config".into(),
                path.to_string_lossy().into_owned(),
            ]))
        }
    }
}

/// The interface and address on every network (and last, the directory network's), waiting a
/// little for docker to attach them all.
fn find_interfaces(nets: &[NetSpec], directory: Option<Subnet>) -> Result<Vec<(String, Ipv4Addr)>> {
    let deadline = Instant::now() + INTERFACE_WAIT;
    let wanted: Vec<(&str, Subnet)> = nets
        .iter()
        .map(|net| (net.name.as_str(), net.subnet))
        .chain(directory.map(|subnet| ("the directory network", subnet)))
        .collect();
    loop {
        let output = sys::run(&["ip", "-o", "-4", "addr", "show"], None)?;
        let found: Vec<Option<(String, Ipv4Addr)>> = wanted
            .iter()
            .map(|(_, subnet)| interface_in(&output, *subnet))
            .collect();
        if found.iter().all(Option::is_some) {
            return Ok(found.into_iter().flatten().collect());
        }
        if Instant::now() > deadline {
            let missing: Vec<String> = wanted
                .iter()
                .zip(&found)
                .filter(|(_, f)| f.is_none())
                .map(|((name, subnet), _)| format!("{name} ({subnet})"))
                .collect();
            return err(format!(
                "no interface has an address in: {}; this container's addresses:\n{}",
                missing.join(", "),
                output.trim_end()
            ));
        }
        interrupt::check()?;
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_ready(options: &RunOptions, program: &mut Option<Child>) -> Result<()> {
    let Some(port) = options.ready_tcp else {
        return Ok(());
    };
    let target = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + options.ready_timeout;
    loop {
        if std::net::TcpStream::connect_timeout(&target, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if let Some(child) = program.as_mut() {
            if let Some(status) = child.try_wait()? {
                *program = None;
                return err(format!("the program exited ({status}) before it was ready"));
            }
        }
        if Instant::now() > deadline {
            return err(format!(
                "the program did not accept on TCP port {port} within {:?}",
                options.ready_timeout
            ));
        }
        interrupt::check()?;
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGTERM, then SIGKILL after the grace period.
fn stop(child: &mut Child) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    // SAFETY: kill only sends a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A process's status as a shell reports it: its code, or 128 + the signal that ended it.
fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// This process's stderr as a file, for the shaper's messages.
fn stderr_file() -> Result<std::fs::File> {
    let fd = std::io::stderr().as_fd().try_clone_to_owned()?;
    Ok(std::fs::File::from(fd))
}

/// Where the addresses of nodes named instead of written come from: the directory in a Swarm
/// stack, nowhere otherwise (a name is then an error). Cards are asked once each.
struct Lookup {
    served: Option<Directory>,
    cards: BTreeMap<String, (Card, std::time::Duration)>,
    deadline: Instant,
}

impl Lookup {
    /// Starts serving this container's card when it is in a stack: its address on each
    /// network, found in `found` (the networks', then the directory network's).
    fn new(options: &RunOptions, found: &[(String, Ipv4Addr)]) -> Result<Lookup> {
        let served = match &options.directory {
            None => None,
            Some(d) => {
                let identity = crate::control::Identity::load(&d.certs, &d.node)
                    .map_err(|e| Error(format!("--directory: {e}")))?;
                let own: BTreeMap<String, Ipv4Addr> = options
                    .nets
                    .iter()
                    .zip(found)
                    .map(|(net, (_, addr))| (net.name.clone(), *addr))
                    .collect();
                let (_, at) = found.last().expect("the directory network was looked for");
                if let Some((dir, service)) = &d.started {
                    super::started::record(dir, &d.node, service)
                        .map_err(|e| Error(format!("--started-dir {}: {e}", dir.display())))?;
                }
                let directory = Directory::start(*at, identity, own).map_err(|e| {
                    // Nothing was served, so a task started again may go on.
                    if let Some((dir, _)) = &d.started {
                        super::started::forget(dir, &d.node);
                    }
                    Error(format!("the directory on {at}: {e}"))
                })?;
                tracing::info!("cdnlab container: card served on {at}");
                Some(directory)
            }
        };
        if served.is_none() && !options.wait_for.is_empty() {
            return err("--wait-for needs --directory (a Swarm stack)");
        }
        Ok(Lookup {
            served,
            cards: BTreeMap::new(),
            deadline: Instant::now() + super::directory::CARD_WAIT,
        })
    }

    /// `node`'s address on its network `net`.
    fn address(&mut self, node: &str, net: &str) -> Result<Ipv4Addr> {
        let Some(directory) = &self.served else {
            return err(format!(
                "node `{node}` is named where an address is needed: names need --directory \
                 (a Swarm stack)"
            ));
        };
        if !self.cards.contains_key(node) {
            let card = directory
                .card(node, self.deadline)
                .map_err(|e| Error(e.to_string()))?;
            self.cards.insert(node.to_string(), card);
        }
        let (card, _) = &self.cards[node];
        card.nets.get(net).copied().ok_or_else(|| {
            Error(format!(
                "node `{node}`'s card has no network `{net}` (it has: {})",
                card.nets.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// The round trip on the directory network to each peer whose card was asked: the real
    /// network's own, which every emulated link to that peer carries besides its impairments.
    fn underlay(&self, nets: &[NetSpec]) -> Vec<Underlay> {
        nets.iter()
            .flat_map(|net| net.peers.iter().map(move |peer| (net, peer)))
            .filter_map(|(net, peer)| {
                let (_, rtt) = self.cards.get(peer)?;
                Some(Underlay {
                    net: net.name.clone(),
                    peer: peer.clone(),
                    rtt_ms: rtt.as_secs_f64() * 1e3,
                })
            })
            .collect()
    }
}

/// Appends `ADDRESS NODE` to `/etc/hosts` for every `--host`.
fn add_hosts(hosts: &[HostSpec], lookup: &mut Lookup) -> Result<()> {
    if hosts.is_empty() {
        return Ok(());
    }
    let mut lines = String::new();
    for host in hosts {
        let addr = lookup
            .address(&host.node, &host.net)
            .map_err(|e| Error(format!("--host `{}@{}`: {e}", host.node, host.net)))?;
        lines += &format!("{addr}\t{}\n", host.node);
    }
    std::fs::OpenOptions::new()
        .append(true)
        .open("/etc/hosts")
        .and_then(|mut f| f.write_all(lines.as_bytes()))
        .map_err(|e| Error(format!("/etc/hosts: {e}")))
}

/// Logs the underlay's round trips and writes them to the results (`underlay.json` in
/// `CDNLAB_OUT_DIR`, when the container has one).
fn report_underlay(underlay: &[Underlay]) -> Result<()> {
    for u in underlay {
        tracing::info!(
            "cdnlab container: underlay round trip to {} (network {}): {:.3} ms",
            u.peer,
            u.net,
            u.rtt_ms
        );
    }
    let Some(dir) = std::env::var_os("CDNLAB_OUT_DIR").filter(|_| !underlay.is_empty()) else {
        return Ok(());
    };
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
    let path = dir.join("underlay.json");
    let text = serde_json::to_string_pretty(underlay).expect("plain data serializes");
    std::fs::write(&path, text).map_err(|e| Error(format!("{}: {e}", path.display())))
}
