//! `cdnlab web` and `cdnlab run --web`: a page that shows a lab while it runs — its topology
//! with each link direction's throughput, queue and drops (the shaper's counters, or the kernel
//! qdiscs'), the timeline's events as they fire, each HAS client's buffer, played bitrate and
//! stalls, F-FDN deadline misses, each ICN region's latency and the ICN controller's prices and
//! mapping — or replays a finished run's directory the same way. Read-only: nothing here changes the lab.
//!
//! A sampler thread turns the lab's counters and files into messages ([`feed`]) ten times a
//! second and publishes them to a [`hub::Hub`]; an HTTP server on a runtime of its own serves
//! the page and the messages to every browser that follows them ([`server`]).

pub mod feed;
mod files;
pub mod hub;
pub mod server;

use crate::lab::counters::LinkCounters;
use crate::lab::{self, LabState};
use crate::regular_file::Beneath;
use crate::topology::Topology;
use files::Files;
use hub::Hub;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How often a live lab is sampled: the feed's updates per second are its inverse.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// The HTTP server of a view, on its own thread and runtime.
pub struct Server {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Serves the page and `hub`'s feed on `listener` until dropped.
    pub fn start(listener: TcpListener, hub: Arc<Hub>) -> Result<Server, String> {
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("the web server's runtime: {e}"))?;
        let site = Arc::new(server::Site::new(hub, addr));
        let thread = std::thread::Builder::new()
            .name("web".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => listener,
                        Err(e) => return tracing::error!("web: {e}"),
                    };
                    let handler = move |request| server::handle(site.clone(), request);
                    let options = crate::roles::http::ServeOptions {
                        role: "web",
                        access_log: false,
                    };
                    let shutdown = async {
                        let _ = stopped.await;
                    };
                    if let Err(e) = crate::roles::http::serve_http(
                        listener,
                        handler,
                        options,
                        server::MAX_CONNECTIONS,
                        shutdown,
                    )
                    .await
                    {
                        tracing::error!("web: {e}");
                    }
                })
            })
            .map_err(|e| e.to_string())?;
        Ok(Server {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What a sampler following a lab is asked, and what it answers.
#[derive(Default)]
pub struct Follow {
    /// Publish what is left and end.
    stop: AtomicBool,
    /// Let go of the lab's counters (sockets in its namespaces) but keep following its files.
    release: AtomicBool,
    /// Set by the sampler once it holds no counters.
    released: AtomicBool,
}

impl Follow {
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Samples the running lab `lab` into `hub` every [`SAMPLE_EVERY`] until the lab is gone or
/// `follow` says stop, then publishes what its files hold still and `end`.
pub fn follow_lab(lab: &str, hub: &Hub, follow: &Follow) -> Result<(), String> {
    let state = LabState::load(lab).map_err(|e| format!("lab {lab}: {e}"))?;
    let mut counters = LinkCounters::open(&state)
        .map_err(|e| tracing::warn!("web: no link counters: {e}"))
        .ok();
    hub.publish(&feed::hello(
        "live",
        &state.topology,
        &lab::directions::json(&state),
        counters.is_some(),
    ));
    let (clients, controllers) = followed(&state.topology);
    let mut files = Files::new(
        state.events_path(),
        None,
        &Beneath::new(&state.out_dir, ""),
        &clients,
        &controllers,
    );
    let mut throughput = feed::Throughput::default();
    // On a fixed beat, so the time a look takes does not stretch the period.
    let mut next = std::time::Instant::now();
    loop {
        if follow.release.load(Ordering::Acquire) {
            counters = None;
            follow.released.store(true, Ordering::Release);
        }
        let gone = follow.stop.load(Ordering::Acquire) || !state.dir().exists();
        if let Some(counters) = counters.as_mut().filter(|_| !gone) {
            if let Ok(sample) = counters.sample(&state) {
                hub.publish(&throughput.message(&sample));
            }
        }
        if gone {
            files.drain(|message| hub.publish(message));
            hub.publish(&feed::end("the lab is down"));
            return Ok(());
        }
        for message in files.poll() {
            hub.publish(&message);
        }
        next += SAMPLE_EVERY;
        let now = std::time::Instant::now();
        match next.checked_duration_since(now) {
            Some(wait) => std::thread::sleep(wait),
            None => next = now,
        }
    }
}

/// A run's file as text: a regular file of at most `MAX_RUN_FILE` bytes.
fn read_run_file(path: &Path) -> Result<String, String> {
    use crate::regular_file::{read_regular, MAX_RUN_FILE};
    read_regular(path, MAX_RUN_FILE).map_err(|e| e.to_string())
}

/// Publishes everything a finished run's directory holds, then `end`.
///
/// The directory may be anyone's: only regular files are read (no symlink is followed, no FIFO
/// waited on), each at most `MAX_RUN_FILE` bytes, and the topology must hold together before
/// anything indexes into it.
pub fn replay(dir: &Path, hub: &Hub) -> Result<(), String> {
    let read = |name: &str| {
        let path = dir.join(name);
        read_run_file(&path).map_err(|e| {
            format!(
                "{}: {e} (a run directory holds what `cdnlab run` wrote: topology.json, links.json, events.jsonl, nodes/)",
                path.display()
            )
        })
    };
    let in_topology = |e: String| format!("{}: {e}", dir.join("topology.json").display());
    let topology: Topology =
        serde_json::from_str(&read("topology.json")?).map_err(|e| in_topology(e.to_string()))?;
    topology.check_indices().map_err(in_topology)?;
    let (clients, controllers) = followed(&topology);
    let nodes = dir.join("nodes");
    for name in clients.iter().chain(&controllers) {
        crate::topology::check_node_name(name, "node").map_err(in_topology)?;
        for path in [nodes.clone(), nodes.join(name)] {
            if path.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
                return Err(format!("{}: not a directory", path.display()));
            }
        }
    }
    let directions: Vec<serde_json::Value> = serde_json::from_str(&read("links.json")?)
        .map_err(|e| format!("{}: {e}", dir.join("links.json").display()))?;
    let links = dir.join("links.jsonl");
    hub.publish(&feed::hello(
        "replay",
        &topology,
        &directions,
        links.exists(),
    ));
    let mut files = Files::new(
        dir.join("events.jsonl"),
        Some(links),
        &Beneath::new(dir, "nodes"),
        &clients,
        &controllers,
    );
    files.drain(|message| hub.publish(message));
    hub.publish(&feed::end(&format!("replay of {}", dir.display())));
    Ok(())
}

/// The nodes whose files the view follows: the clients, and the ICN controllers.
fn followed(topology: &Topology) -> (Vec<String>, Vec<String>) {
    let clients = topology
        .nodes
        .iter()
        .filter(|n| n.client)
        .map(|n| n.name.clone())
        .collect();
    let controllers = feed::role_nodes(topology, "controller")
        .map(|(name, _)| name.to_string())
        .collect();
    (clients, controllers)
}

/// A live view beside a run (`cdnlab run --web`): its server and sampler threads.
pub struct LiveView {
    pub server: Server,
    follow: Arc<Follow>,
    sampler: Option<std::thread::JoinHandle<()>>,
}

impl LiveView {
    /// Follows lab `lab` (already up) and serves it on `listener`.
    pub fn start(listener: TcpListener, lab: &str) -> Result<LiveView, String> {
        let hub = Arc::new(Hub::default());
        let server = Server::start(listener, hub.clone())?;
        let follow = Arc::new(Follow::default());
        let (lab, following) = (lab.to_string(), follow.clone());
        let sampler = std::thread::Builder::new()
            .name("web-sampler".into())
            .spawn(move || {
                if let Err(e) = follow_lab(&lab, &hub, &following) {
                    tracing::warn!("web: {e}");
                }
            })
            .map_err(|e| e.to_string())?;
        Ok(LiveView {
            server,
            follow,
            sampler: Some(sampler),
        })
    }

    /// Returns once the sampler holds nothing in the lab's namespaces (its counters' sockets),
    /// so they can be deleted; it goes on following the run's files.
    pub fn release_lab(&self) {
        self.follow.release.store(true, Ordering::Release);
        let finished = || self.sampler.as_ref().is_none_or(|s| s.is_finished());
        while !self.follow.released.load(Ordering::Acquire) && !finished() {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Publishes what is left and `end`, gives the pages a moment to read it, and stops.
    pub fn finish(mut self) {
        self.follow.stop();
        if let Some(sampler) = self.sampler.take() {
            let _ = sampler.join();
        }
        std::thread::sleep(SAMPLE_EVERY * 3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::LoadOptions;
    use serde_json::{json, Value};

    const PAIR: &str = r#"
name = "pair"
[nodes.viewer]
command = ["/bin/true"]
client = true
[nodes.server]
[[links]]
endpoints = ["viewer", "server"]
rate = "5mbit"
"#;

    /// A run directory as `cdnlab run` writes it, with `clients` named in its topology.
    fn run_dir(name: &str, client: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("cdnlab-web-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let nodes = dir.join("nodes").join("viewer");
        std::fs::create_dir_all(&nodes).unwrap();
        let mut topology =
            crate::topology::parse(PAIR, "pair.toml", &LoadOptions::default()).unwrap();
        topology.nodes[0].name = client.into();
        let write = |file: &str, text: String| std::fs::write(dir.join(file), text).unwrap();
        write("topology.json", serde_json::to_string(&topology).unwrap());
        let direction = |from: &str| {
            json!({"id": format!("viewer-server/{from}"), "segment": "viewer-server", "from": from,
                   "to": [], "impairments": "rate 5mbit", "settings": {"rate_bps": 5_000_000}})
        };
        write(
            "links.json",
            json!([direction("viewer"), direction("server")]).to_string(),
        );
        write(
            "events.jsonl",
            "{\"event\":\"clients_start\",\"time_unix_s\":100.0}\n".into(),
        );
        let sample = |t: f64, bytes: u64| json!({"time_unix_s": t, "links": [{"id": "viewer-server/server", "bytes": bytes, "packets": 1, "drops": 0, "queued": 0}]});
        write(
            "links.jsonl",
            format!("{}\n{}\n", sample(100.0, 0), sample(100.5, 312_500)),
        );
        std::fs::write(
            nodes.join("segments.csv"),
            format!(
                "{}\n0,1,1000000,250000,0.5,0.25,8,2,0,server:0.25\n",
                cdnlab_core::has::CSV_HEADER
            ),
        )
        .unwrap();
        std::fs::write(
            nodes.join("summary.json"),
            "{\"startup_delay_s\": 0.75, \"failed\": false}",
        )
        .unwrap();
        dir
    }

    fn kinds(messages: &[Value]) -> Vec<&str> {
        messages
            .iter()
            .map(|m| m["kind"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn a_run_directory_replays_as_the_messages_it_was_made_of() {
        let dir = run_dir("replay", "viewer");
        let hub = Hub::default();
        replay(&dir, &hub).unwrap();
        let (sent, _) = hub.subscribe();
        let messages: Vec<Value> = sent
            .iter()
            .map(|event| {
                let text = std::str::from_utf8(event).unwrap();
                serde_json::from_str(text.strip_prefix("data: ").unwrap().trim_end()).unwrap()
            })
            .collect();
        assert_eq!(
            kinds(&messages),
            ["hello", "event", "links", "links", "segment", "client", "end"]
        );
        assert_eq!(messages[0]["mode"], "replay");
        assert_eq!(messages[0]["counters"], true);
        assert_eq!(messages[0]["directions"][1]["forward"], false);
        assert_eq!(messages[3]["links"][0]["bps"], 5_000_000.0);
        // The segment arrived 0.75 s after the clients started.
        assert_eq!(messages[4]["time_unix_s"], 100.75);
        assert_eq!(messages[5]["summary"]["startup_delay_s"], 0.75);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_replay_refuses_a_client_name_that_would_leave_the_directory() {
        let dir = run_dir("escape", "../../etc");
        let error = replay(&dir, &Hub::default()).unwrap_err();
        assert!(error.contains("topology.json"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
        let missing = replay(Path::new("/nonexistent-run"), &Hub::default()).unwrap_err();
        assert!(
            missing.contains("/nonexistent-run/topology.json"),
            "{missing}"
        );
    }

    /// A run directory from someone else: links out of it are not followed, whatever they
    /// point at, and a topology whose indices point nowhere is refused, not indexed.
    #[test]
    fn a_replay_follows_no_symlink_and_refuses_a_topology_that_does_not_hold_together() {
        let dir = run_dir("links", "viewer");
        let secret = dir.join("secret.json");
        std::fs::write(&secret, "{\"key\": \"do not publish\"}").unwrap();
        let summary = dir.join("nodes/viewer/summary.json");
        std::fs::remove_file(&summary).unwrap();
        std::os::unix::fs::symlink(&secret, &summary).unwrap();
        let hub = Hub::default();
        replay(&dir, &hub).unwrap();
        let (sent, _) = hub.subscribe();
        let text: String = sent
            .iter()
            .map(|event| String::from_utf8_lossy(event).into_owned())
            .collect();
        assert!(!text.contains("do not publish"), "{text}");

        std::fs::rename(dir.join("nodes/viewer"), dir.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(dir.join("elsewhere"), dir.join("nodes/viewer")).unwrap();
        let error = replay(&dir, &Hub::default()).unwrap_err();
        assert!(error.ends_with("nodes/viewer: not a directory"), "{error}");

        let topology = dir.join("topology.json");
        let mut bad: Value =
            serde_json::from_str(&std::fs::read_to_string(&topology).unwrap()).unwrap();
        bad["segments"][0]["members"] = json!([0, 7]);
        std::fs::write(&topology, bad.to_string()).unwrap();
        let error = replay(&dir, &Hub::default()).unwrap_err();
        assert!(
            error.contains(
                "topology.json: segment `viewer-server` names node 7, but there are 2 nodes"
            ),
            "{error}"
        );
        bad["segments"][0]["members"] = json!([0]);
        std::fs::write(&topology, bad.to_string()).unwrap();
        let error = replay(&dir, &Hub::default()).unwrap_err();
        assert!(
            error.contains("segment `viewer-server` has 1 members (a link has 2 members)"),
            "{error}"
        );

        std::fs::remove_file(&topology).unwrap();
        std::os::unix::fs::symlink(&secret, &topology).unwrap();
        let error = replay(&dir, &Hub::default()).unwrap_err();
        assert!(error.contains("topology.json"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
