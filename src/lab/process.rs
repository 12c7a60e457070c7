//! Node processes: started in their namespace, in a session of their own (so a Ctrl-C at the
//! terminal reaches the orchestrator, which then stops them in order), logging to one file each.

use super::state::{LabState, ProcessRecord, LOGS};
use super::sys::{self, err, Ended, Error, Result};
use crate::topology::{Program, Ready};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a stopped process gets between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// Starts `argv` in a new session with stdout and stderr appended to `log` (whose directory
/// is the caller's to make).
pub fn spawn_detached(argv: &[String], env: &[(String, String)], log: &Path) -> Result<Child> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Error(format!("{}: {e}", log.display())))?;
    spawn_detached_to(argv, env, out)
}

/// Starts `argv` in a new session with stdout and stderr to `out`.
pub fn spawn_detached_to(
    argv: &[String],
    env: &[(String, String)],
    out: std::fs::File,
) -> Result<Child> {
    let err_out = out.try_clone()?;
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err_out);
    // SAFETY: setsid, close_range and fcntl are async-signal-safe and touch no memory of the
    // parent.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            close_inherited_on_exec();
            Ok(())
        });
    }
    command
        .spawn()
        .map_err(|e| Error(format!("cannot start `{}`: {e}", argv.join(" "))))
}

/// Marks every descriptor above stderr close-on-exec in a child about to exec. Descriptors the
/// orchestrator holds without that flag (a lock taken by `flock LOCK cdnlab up`, a caller's
/// pipe) would otherwise live on in every node and the shaper until `down`. Marking rather than
/// closing keeps the standard library's own exec-error pipe working.
fn close_inherited_on_exec() {
    // SAFETY: close_range only changes flags of this process's descriptors.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if marked != 0 {
        // Kernels before 5.11 lack the flag: mark each descriptor under the soft limit.
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct it is given; fcntl on a closed fd fails harmlessly.
        unsafe {
            let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                limit.rlim_cur.min(1 << 16) as i32
            } else {
                1024
            };
            for fd in 3..top {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
    }
}

pub fn record_of(child: &Child) -> Result<ProcessRecord> {
    let pid = child.id() as i32;
    let start_time = sys::process_start_time(pid)
        .ok_or_else(|| Error(format!("process {pid} vanished right after it started")))?;
    Ok(ProcessRecord { pid, start_time })
}

/// The nodes other than clients whose process ended by itself (not stopped by the lab or its
/// timeline, which forget a process they stop) other than with status 0, each with how it
/// ended ([`Ended::Gone`] when that cannot be told): a server that fails during a run leaves
/// its clients' results in doubt.
pub fn servers_ended(state: &LabState) -> Vec<(String, Ended)> {
    let clients: Vec<&str> = (state.topology.nodes.iter())
        .filter(|n| n.client)
        .map(|n| n.name.as_str())
        .collect();
    (state.processes.iter())
        .filter(|(name, record)| {
            !clients.contains(&name.as_str()) && !sys::process_alive(record.pid, record.start_time)
        })
        .map(|(name, record)| (name.clone(), how_ended(record)))
        .filter(|(_, how)| how.failed())
        .collect()
}

/// The last `lines` lines of a log, indented, for error messages.
pub fn log_tail(log: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let tail = &all[all.len().saturating_sub(lines)..];
    if tail.is_empty() {
        format!("  ({} is empty)", log.display())
    } else {
        tail.iter()
            .map(|l| format!("  | {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The command line that runs node `node` inside its namespace, or `None` for a plain host.
fn node_argv(state: &LabState, node: usize) -> Result<Option<Vec<String>>> {
    let spec = &state.topology.nodes[node];
    let program = match &spec.program {
        Program::None => return Ok(None),
        Program::Command { argv } => argv.clone(),
        Program::Role { role, config } => {
            let binary = sys::bin_dir()?.join(role);
            let config_path = state.subdir("configs")?.join(format!("{}.toml", spec.name));
            let text = toml::to_string(config)
                .map_err(|e| Error(format!("node {}: its config: {e}", spec.name)))?;
            std::fs::write(&config_path, text)?;
            vec![
                binary.to_string_lossy().into_owned(),
                "--config".into(),
                config_path.to_string_lossy().into_owned(),
            ]
        }
    };
    let mut argv = vec![
        "ip".to_string(),
        "netns".into(),
        "exec".into(),
        state.netns(node),
    ];
    argv.extend(program);
    Ok(Some(argv))
}

/// Starts node `node`'s program (if it has one) and records it in the state.
pub fn start_node(state: &mut LabState, node: usize) -> Result<Option<Child>> {
    let Some(argv) = node_argv(state, node)? else {
        return Ok(None);
    };
    let spec = &state.topology.nodes[node];
    let out_dir = state.out_dir.join(&spec.name);
    // The default, in the lab's own directory, is made as the lab's other directories are.
    match out_dir.strip_prefix(state.dir()) {
        Ok(inside) => drop(state.subdir(inside)?),
        Err(_) => std::fs::create_dir_all(&out_dir)?,
    }
    let mut env: Vec<(String, String)> = spec
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // What the role runtime reads (`roles::env`).
    use crate::roles::env::{LAB, NODE, OUT_DIR};
    env.push((LAB.into(), state.lab.clone()));
    env.push((NODE.into(), spec.name.clone()));
    env.push((OUT_DIR.into(), out_dir.to_string_lossy().into_owned()));
    let name = spec.name.clone();
    state.subdir(LOGS)?;
    let child = spawn_detached(&argv, &env, &state.log_path(&name))?;
    let record = record_of(&child)?;
    let recorded = state.update(|state| {
        state.processes.insert(name, record.clone());
        Ok(())
    });
    if let Err(e) = recorded {
        // Unrecorded (the lab was taken down meanwhile), no teardown would find it.
        stop_processes(&[record]);
        return Err(e);
    }
    Ok(Some(child))
}

/// Sends `signal` to node `node`'s process and its session; false if it is not running.
pub fn signal_node(state: &LabState, node: usize, signal: libc::c_int) -> bool {
    let name = &state.topology.nodes[node].name;
    match state.processes.get(name) {
        Some(record) if sys::process_alive(record.pid, record.start_time) => {
            sys::signal_group(record.pid, signal);
            true
        }
        _ => false,
    }
}

/// Stops node `node`'s process: SIGTERM to its session, SIGKILL after the grace period. If the
/// process of a node other than a client had already ended by itself, says how (as
/// `servers_ended` does), since the lab forgets a process it stops; an ended client's status
/// is left to its `Child`.
pub fn stop_node(state: &mut LabState, node: usize) -> Result<Option<Ended>> {
    let name = state.topology.nodes[node].name.clone();
    let Some(record) = state.processes.get(&name).cloned() else {
        return Ok(None);
    };
    let ended = if sys::process_alive(record.pid, record.start_time) {
        stop_processes(&[record]);
        None
    } else {
        (!state.topology.nodes[node].client).then(|| how_ended(&record))
    };
    state.update(|state| {
        state.processes.remove(&name);
        Ok(())
    })?;
    Ok(ended)
}

/// Before node `node` is started again: refused while its last process runs; if that process
/// (not a client's) ended by itself, says how, as [`stop_node`] does, and forgets it.
pub fn forget_ended(state: &mut LabState, node: usize) -> Result<Option<Ended>> {
    let spec = &state.topology.nodes[node];
    let (name, client) = (spec.name.clone(), spec.client);
    let Some(record) = state.processes.get(&name).cloned() else {
        return Ok(None);
    };
    if sys::process_alive(record.pid, record.start_time) {
        return err(format!(
            "node {name} is still running: a `start` must come after its `stop` (or its end)"
        ));
    }
    let ended = (!client).then(|| how_ended(&record));
    state.update(|state| {
        state.processes.remove(&name);
        Ok(())
    })?;
    Ok(ended)
}

/// How a process that is no longer alive ended, or [`Ended::Gone`] when that cannot be told
/// (not this process's child, or reaped already: its pid may be another process's by now).
pub fn how_ended(record: &ProcessRecord) -> Ended {
    let ours = sys::process_start_time(record.pid) == Some(record.start_time);
    ours.then(|| sys::reap_exit(record.pid, Duration::from_secs(2)))
        .flatten()
        .unwrap_or(Ended::Gone)
}

/// SIGTERM to every process (and its session), then SIGKILL to what is left after the grace.
pub fn stop_processes(records: &[ProcessRecord]) {
    let alive = |r: &&ProcessRecord| sys::process_alive(r.pid, r.start_time);
    for record in records.iter().filter(alive) {
        sys::signal_group(record.pid, libc::SIGTERM);
    }
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline && records.iter().any(|r| alive(&r)) {
        reap(records);
        std::thread::sleep(Duration::from_millis(20));
    }
    for record in records.iter().filter(alive) {
        sys::signal_group(record.pid, libc::SIGKILL);
    }
    // A killed multi-threaded process becomes reapable only once its last thread is gone.
    let deadline = Instant::now() + REAP_AFTER_KILL;
    while !reap(records) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// How long `stop_processes` waits for killed processes to become reapable.
const REAP_AFTER_KILL: Duration = Duration::from_secs(1);

/// Collects those of `records` that are exited children of this process, so they do not
/// linger as zombies; true when none is left to collect. Only these: a node that ended by
/// itself keeps its exit status for `servers_ended`, and a client's for its `Child`.
fn reap(records: &[ProcessRecord]) -> bool {
    let mut all = true;
    for record in records {
        // Still the recorded process (a zombie keeps its start time), not a recycled pid.
        if sys::process_start_time(record.pid) != Some(record.start_time) {
            continue;
        }
        // SAFETY: waitpid with WNOHANG on one pid only reaps it if it has exited.
        let reaped = unsafe { libc::waitpid(record.pid, std::ptr::null_mut(), libc::WNOHANG) };
        // 0: still running (or not yet reapable); -1 with ECHILD: not this process's child.
        if reaped == 0 {
            all = false;
        }
    }
    all
}

/// Waits until node `node` is ready (its `ready` check passes), failing with its log's tail if
/// it exits or times out.
pub fn wait_ready(state: &LabState, node: usize, child: &mut Option<Child>) -> Result<()> {
    let spec = &state.topology.nodes[node];
    let Some(ready) = &spec.ready else {
        return Ok(());
    };
    let log = state.log_path(&spec.name);
    let deadline = Instant::now() + Duration::from_nanos(spec.ready_timeout_ns);
    let addr = spec.interfaces.first().map(|i| i.addr);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if check_ready(state, node, ready, addr, left)? {
            return Ok(());
        }
        if let Some(child) = child.as_mut() {
            if let Ok(Some(status)) = child.try_wait() {
                return err(format!(
                    "node {} exited ({status}) before it was ready; the end of {}:\n{}",
                    spec.name,
                    log.display(),
                    log_tail(&log, 10)
                ));
            }
        }
        super::shaper::check_alive(state)?;
        if Instant::now() > deadline {
            return err(format!(
                "node {} was not ready within {:?} ({}); the end of {}:\n{}",
                spec.name,
                Duration::from_nanos(spec.ready_timeout_ns),
                describe_ready(ready),
                log.display(),
                log_tail(&log, 10)
            ));
        }
        super::interrupt::check()?;
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn describe_ready(ready: &Ready) -> String {
    match ready {
        Ready::Tcp(port) => format!("waiting for TCP port {port}"),
        Ready::Command(argv) => format!("waiting for `{}` to succeed", argv.join(" ")),
    }
}

/// One look at whether node `node` is ready; a `ready` command is given `left`, the time the
/// node has left to be ready, and killed past it (a command that hangs must not hang `up`).
fn check_ready(
    state: &LabState,
    node: usize,
    ready: &Ready,
    addr: Option<std::net::Ipv4Addr>,
    left: Duration,
) -> Result<bool> {
    let netns = state.netns(node);
    match ready {
        Ready::Tcp(port) => {
            let target =
                std::net::SocketAddr::from((addr.unwrap_or(std::net::Ipv4Addr::LOCALHOST), *port));
            sys::in_netns(&netns, move || {
                Ok(
                    std::net::TcpStream::connect_timeout(&target, Duration::from_millis(200))
                        .is_ok(),
                )
            })
        }
        Ready::Command(argv) => {
            let limit = format!("{:.3}", left.as_secs_f64().max(0.1));
            let mut full = vec!["ip", "netns", "exec", &netns, "timeout", "-k", "1", &limit];
            full.extend(argv.iter().map(String::as_str));
            Ok(sys::run(&full, None).is_ok())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// A descriptor the orchestrator holds without close-on-exec (as `flock LOCK cdnlab up`
    /// leaves one) is not open in a started process.
    #[test]
    fn started_processes_do_not_inherit_descriptors() {
        let dir = crate::testing::TempDir::new("process-fds");
        std::fs::create_dir_all(&dir.0).unwrap();
        let held = std::fs::File::create(dir.0.join("held")).unwrap();
        // dup gives a descriptor without FD_CLOEXEC, as a shell's redirection would.
        // SAFETY: dup of an open descriptor; the copy is closed below.
        let inherited = unsafe { libc::dup(held.as_raw_fd()) };
        assert!(inherited > 2);
        let log = dir.0.join("out.log");
        let argv: Vec<String> = ["sh", "-c", "ls /proc/self/fd"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let status = spawn_detached(&argv, &[], &log).unwrap().wait().unwrap();
        // SAFETY: closes the copy made above.
        unsafe { libc::close(inherited) };
        assert!(status.success());
        let open: Vec<String> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert!(open.contains(&"1".to_string()), "{open:?}");
        assert!(!open.contains(&inherited.to_string()), "{open:?}");
    }

    /// Stopping some processes leaves the exit status of another, which ended by itself, to
    /// whoever asks for it later (`servers_ended`), and reaps the stopped ones.
    #[test]
    // The processes are reaped by what is tested (`stop_processes`, `reap_exit`), not `Child`.
    #[allow(clippy::zombie_processes)]
    fn stopping_processes_leaves_others_exit_status() {
        let dir = crate::testing::TempDir::new("process-reap");
        std::fs::create_dir_all(&dir.0).unwrap();
        let start = |script: &str, log: &str| {
            let argv: Vec<String> = ["sh", "-c", script].iter().map(|s| s.to_string()).collect();
            let child = spawn_detached(&argv, &[], &dir.0.join(log)).unwrap();
            record_of(&child).unwrap()
        };
        let ended = start("exit 3", "ended.log");
        let stopped = start("sleep 30", "stopped.log");
        let deadline = Instant::now() + Duration::from_secs(10);
        while sys::process_alive(ended.pid, ended.start_time) {
            assert!(Instant::now() < deadline, "`exit 3` did not end");
            std::thread::sleep(Duration::from_millis(5));
        }
        stop_processes(std::slice::from_ref(&stopped));
        assert_eq!(sys::process_start_time(stopped.pid), None, "not reaped");
        assert_eq!(
            sys::reap_exit(ended.pid, Duration::from_secs(2)),
            Some(Ended::Exited(3))
        );
    }
}
