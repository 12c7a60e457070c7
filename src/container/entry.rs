//! `cdnlab container run`: the entrypoint of a testbed container. It finds the container's
//! networks by subnet, adds its static routes, applies each network's impairments, starts the
//! node's program (a role with its config, or any command) with the container's stdout and
//! stderr, marks the container ready once the program listens, and stays until the program
//! exits (its status becomes the container's) or the container is stopped.

use super::links::{self, state_dir, ContainerState};
use super::spec::{check_nets, interface_in, NetSpec, RouteSpec};
use crate::lab::interrupt;
use crate::lab::process::STOP_GRACE;
use crate::lab::sys::{self, err, Error, Result};
use std::os::fd::AsFd;
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

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub nets: Vec<NetSpec>,
    pub routes: Vec<RouteSpec>,
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

    let ifnames = find_interfaces(&options.nets)?;
    for route in &options.routes {
        sys::run(
            &[
                "ip",
                "route",
                "replace",
                &route.dest.to_string(),
                "via",
                &route.via.to_string(),
            ],
            None,
        )?;
    }
    let backend = links::choose_backend(options.link_backend)?;
    let state = ContainerState::new(backend, &options.nets, ifnames);
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
    let outcome = supervise(options, &mut program, &mut shaper);
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
) -> Result<i32> {
    wait_ready(options, program)?;
    std::fs::write(state_dir().join("ready"), b"")?;
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

/// The interface of every network, waiting a little for docker to attach them all.
fn find_interfaces(nets: &[NetSpec]) -> Result<Vec<String>> {
    let deadline = Instant::now() + INTERFACE_WAIT;
    loop {
        let output = sys::run(&["ip", "-o", "-4", "addr", "show"], None)?;
        let found: Vec<Option<String>> = nets
            .iter()
            .map(|net| interface_in(&output, net.subnet))
            .collect();
        if found.iter().all(Option::is_some) {
            return Ok(found.into_iter().flatten().collect());
        }
        if Instant::now() > deadline {
            let missing: Vec<String> = nets
                .iter()
                .zip(&found)
                .filter(|(_, f)| f.is_none())
                .map(|(net, _)| format!("{} ({})", net.name, net.subnet))
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
