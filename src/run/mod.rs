//! `cdnlab run`: bring a lab up, start its clients, play its timeline, collect every client's
//! results, tear the lab down, and write the run directory.

mod links_log;
pub mod progress;
pub mod segments_plot;
pub mod summary;

use crate::lab::sys::Ended;
use crate::lab::{self, control, events, interrupt, process, LabState};
use crate::roles::summary::ClientSummary;
use crate::topology::{describe_action, TimelineAction, Topology};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

pub struct RunOptions {
    pub up: lab::UpOptions,
    /// The run directory.
    pub out_dir: PathBuf,
    /// The topology file as given, copied into the run directory.
    pub topology_file: PathBuf,
    /// Clients still running after this long are stopped and marked failed.
    pub client_timeout: Duration,
    /// Serve the live view (`cdnlab web`'s page) on this socket while the clients play.
    pub web: Option<std::net::TcpListener>,
}

/// Runs the scenario and returns the aggregated summary (also written to `OUT/summary.json`).
pub fn run(topology: Topology, options: RunOptions) -> lab::Result<summary::RunSummary> {
    let out = &options.out_dir;
    let made = new_results_dir(out).map_err(|e| lab::Error(format!("{}: {e}", out.display())))?;
    let started = std::time::SystemTime::now();
    let up = |topology: Topology| {
        std::fs::copy(&options.topology_file, out.join("topology.toml"))
            .map_err(|e| lab::Error(format!("{}: {e}", options.topology_file.display())))?;
        write_json(
            &out.join("topology.json"),
            &serde_json::to_value(&topology).unwrap_or_default(),
        )?;
        let up_options = lab::UpOptions {
            out_dir: Some(out.join("nodes")),
            link_backend: options.up.link_backend,
            seed: options.up.seed,
        };
        lab::up(topology, &up_options)
    };
    // A run that never started leaves no results behind, so the same command can be given
    // again (with root, once the other lab is down).
    let mut state = up(topology).inspect_err(|_| made.remove())?;
    let view = options.web.and_then(|listener| {
        crate::web::LiveView::start(listener, &state.lab)
            .inspect(|view| eprintln!("live view: http://{}", view.server.addr))
            .inspect_err(|e| eprintln!("warning: the live view did not start: {e}"))
            .ok()
    });
    let outcome = play(
        &mut state,
        options.client_timeout,
        &mut links_log::LinksLog::new(out),
    );
    // Every link direction's counters as the clients left them, before the lab goes.
    let links = write_json(
        &out.join("links.json"),
        &crate::lab::directions::json(&state),
    );
    // Whatever happened, the logs and events are kept and the lab is removed.
    let kept = keep_lab_files(&state, out);
    // The view's sampler holds sockets in the lab's namespaces (kernel counters): it lets go
    // before they are deleted, so nothing of the lab outlives the teardown. It follows the
    // run's files until the nodes are stopped, so what they write up to then (an ICN
    // controller's last period) reaches the page too.
    if let Some(view) = &view {
        view.release_lab();
    }
    let removed = lab::teardown::teardown(&state);
    if let Some(view) = view {
        view.finish();
    }
    let (clients, servers_ended) = outcome?;
    links?;
    kept?;
    removed?;
    let duration_s = started.elapsed().map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let summary = summary::RunSummary {
        lab: state.lab.clone(),
        vars: state.topology.vars.clone(),
        link_backend: state.backend.name().to_string(),
        seed: options.up.seed,
        duration_s,
        clients,
        servers_ended,
    };
    write_json(&out.join("summary.json"), &summary)?;
    let clients: Vec<String> = summary.clients.iter().map(|c| c.node.clone()).collect();
    segments_plot::plot(out, &clients).map_err(lab::Error)?;
    Ok(summary)
}

/// Makes `out`, which must not exist yet or be an empty directory of this user's that no one
/// else can write: results written as root into a directory that already holds files would
/// mix with another run's (a summary read back as this run's) and would follow any symlink
/// planted there, as they would one that another user places there during the run. Made
/// anew, the directory is root's, and nobody else can place anything in it.
fn new_results_dir(out: &Path) -> std::io::Result<ResultsDir> {
    use std::os::unix::fs::MetadataExt;
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::create_dir(out) {
        Ok(()) => Ok(ResultsDir::Made(out.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = out.symlink_metadata()?;
            if !meta.is_dir() || out.read_dir()?.next().is_some() {
                return Err(std::io::Error::new(
                    e.kind(),
                    "already exists and is not an empty directory: a run writes its results into a new one",
                ));
            }
            if !lab::sys::private_dir(&meta) {
                let why = format!(
                    "an empty directory of uid {} with mode {:o}: a run writes into one only if it is \
                     this user's and no one else can write it, or into a new one",
                    meta.uid(),
                    meta.mode() & 0o7777
                );
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    why,
                ));
            }
            Ok(ResultsDir::WasEmpty(out.to_path_buf()))
        }
        Err(e) => Err(e),
    }
}

/// A run's results directory, as `new_results_dir` found it.
enum ResultsDir {
    /// Made by this run: all of it is the run's.
    Made(PathBuf),
    /// An empty directory that was there: only what the run wrote into it is the run's.
    WasEmpty(PathBuf),
}

impl ResultsDir {
    /// Removes what the run wrote, for a run that never started.
    fn remove(&self) {
        match self {
            ResultsDir::Made(dir) => {
                let _ = std::fs::remove_dir_all(dir);
            }
            ResultsDir::WasEmpty(dir) => {
                let _ = std::fs::remove_file(dir.join("topology.toml"));
                let _ = std::fs::remove_file(dir.join("topology.json"));
                let _ = std::fs::remove_dir_all(dir.join("nodes"));
            }
        }
    }
}

/// Starts the clients, plays the timeline until every client has exited, and collects each
/// client's `summary.json`, and the servers that failed meanwhile (each named in the events
/// as `server_ended`).
fn play(
    state: &mut LabState,
    timeout: Duration,
    links: &mut links_log::LinksLog,
) -> lab::Result<(Vec<ClientSummary>, Vec<summary::ServerEnded>)> {
    let clients: Vec<usize> = (0..state.topology.nodes.len())
        .filter(|&n| state.topology.nodes[n].client)
        .collect();
    events::record(state, serde_json::json!({"event": "clients_start"}))?;
    let start = Instant::now();
    let mut running: Vec<(usize, Option<Child>)> = Vec::new();
    for &n in &clients {
        running.push((n, process::start_node(state, n)?));
    }
    let mut statuses: Vec<(usize, Option<std::process::ExitStatus>)> = Vec::new();
    let timeline = state.topology.timeline.clone();
    let mut next_event = 0;
    // Servers a timeline `stop` found already ended by themselves: the lab forgets them.
    let mut ended_before_stop = Vec::new();
    let mut progress = progress::Progress::new(
        clients
            .iter()
            .map(|&n| {
                let name = &state.topology.nodes[n].name;
                (name.clone(), state.out_dir.join(name))
            })
            .collect(),
    );
    loop {
        let elapsed = start.elapsed();
        while next_event < timeline.len()
            && Duration::from_nanos(timeline[next_event].at_ns) <= elapsed
        {
            let action = &timeline[next_event].action;
            if let Some(had_ended) = apply(state, action)? {
                ended_before_stop.push(had_ended);
            }
            progress.event(elapsed, &describe_action(&state.topology, action));
            next_event += 1;
        }
        running.retain_mut(|(n, child)| {
            let status = match child.as_mut().map(|c| c.try_wait()) {
                Some(Ok(None)) => return true,
                Some(Ok(Some(status))) => Some(status),
                _ => None,
            };
            let ok = status.is_some_and(|s| s.success());
            progress.finished(&state.topology.nodes[*n].name, ok);
            statuses.push((*n, status));
            false
        });
        if running.is_empty() {
            break;
        }
        progress.tick(elapsed);
        links.tick(state);
        if elapsed > timeout {
            for (n, _) in &running {
                process::stop_node(state, *n)?;
                statuses.push((*n, None));
            }
            break;
        }
        interrupt::check()?;
        lab::shaper::check_alive(state)?;
        std::thread::sleep(Duration::from_millis(5));
    }
    events::record(state, serde_json::json!({"event": "clients_done"}))?;
    let mut servers_ended = Vec::new();
    for (node, how) in ended_before_stop
        .into_iter()
        .chain(lab::process::servers_ended(state))
    {
        let how = how.to_string();
        let event = serde_json::json!({"event": "server_ended", "node": node, "how": how});
        events::record(state, event)?;
        servers_ended.push(summary::ServerEnded { node, how });
    }
    let clients = (clients.iter())
        .map(|&n| {
            let status = statuses.iter().find(|(m, _)| *m == n).and_then(|(_, s)| *s);
            summary::client_result(state, n, status, timeout)
        })
        .collect();
    Ok((clients, servers_ended))
}

/// Applies a timeline action. A `stop` or `start` of a server that had already failed by
/// itself returns that server and how it ended, for the run's `servers_ended`.
fn apply(state: &mut LabState, action: &TimelineAction) -> lab::Result<Option<(String, Ended)>> {
    let (node, had_ended) = match action {
        TimelineAction::SetLink {
            segment,
            from,
            change,
        } => return control::change_segment(state, *segment, from, change).map(|_| None),
        TimelineAction::SignalNode { node } => {
            return control::signal_node(state, *node).map(|_| None)
        }
        TimelineAction::StopNode { node } => (*node, control::stop_node(state, *node)?),
        TimelineAction::StartNode { node } => (*node, control::start_node(state, *node)?),
    };
    let name = &state.topology.nodes[node].name;
    Ok(had_ended
        .filter(|how| how.failed())
        .map(|how| (name.clone(), how)))
}

/// Copies the lab's logs and event log into the run directory.
fn keep_lab_files(state: &LabState, out: &Path) -> lab::Result<()> {
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs)?;
    for entry in std::fs::read_dir(state.logs_dir())
        .into_iter()
        .flatten()
        .flatten()
    {
        std::fs::copy(entry.path(), logs.join(entry.file_name()))?;
    }
    if state.events_path().exists() {
        std::fs::copy(state.events_path(), out.join("events.jsonl"))?;
    }
    Ok(())
}

pub fn write_json(path: &Path, value: &impl serde::Serialize) -> lab::Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| lab::Error(e.to_string()))?;
    crate::atomic_write::write_atomically(path, (text + "\n").as_bytes())
        .map_err(|e| lab::Error(e.to_string()))
}
