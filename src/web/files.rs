//! What the view reads from files as they grow: the lab's event log, each client's
//! `segments.csv` (HAS) or `deadlines.csv` (F-FDN viewers) and, once it finishes, its
//! `summary.json`, and (replaying a run directory)
//! the link samples `cdnlab run` recorded in `links.jsonl`. The same for a live lab and a run
//! directory; only the paths differ.

use super::feed::{self, Sample, SegmentColumns, Throughput};
use crate::fog_roles::viewers::DEADLINES_HEADER;
use crate::line_tail::LineTail;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Largest `summary.json` read: a client's is a few kB.
const MAX_SUMMARY: u64 = 1 << 20;

struct Client {
    name: String,
    dir: PathBuf,
    segments: LineTail,
    columns: Option<SegmentColumns>,
    deadlines: LineTail,
    /// Whether `deadlines.csv`'s header was read and is the viewers'.
    deadlines_header: Option<bool>,
    done: bool,
}

pub struct Files {
    events: LineTail,
    links: Option<LineTail>,
    throughput: Throughput,
    clients: Vec<Client>,
    /// When the clients started (the `clients_start` event), which their segment times count
    /// from; until it is seen, when this reader started.
    clients_start_unix_s: Option<f64>,
    started_unix_s: f64,
}

impl Files {
    /// `nodes_dir` holds a directory per node; `clients` are names a topology has checked.
    pub fn new(
        events: PathBuf,
        links: Option<PathBuf>,
        nodes_dir: &Path,
        clients: &[String],
    ) -> Files {
        Files {
            events: LineTail::new(events),
            links: links.map(LineTail::new),
            throughput: Throughput::default(),
            clients: clients
                .iter()
                .map(|name| Client {
                    name: name.clone(),
                    dir: nodes_dir.join(name),
                    segments: LineTail::new(nodes_dir.join(name).join("segments.csv")),
                    columns: None,
                    deadlines: LineTail::new(nodes_dir.join(name).join("deadlines.csv")),
                    deadlines_header: None,
                    done: false,
                })
                .collect(),
            clients_start_unix_s: None,
            started_unix_s: crate::wall_clock::unix_now_s(),
        }
    }

    /// The messages of everything appended since the last look: events first (the clients'
    /// start among them), then link samples, segments and finished clients.
    pub fn poll(&mut self) -> Vec<Value> {
        let mut messages = Vec::new();
        for line in self.events.next_lines().unwrap_or_default() {
            if let Some(message) = feed::event(&line) {
                if message["event"]["event"] == "clients_start" {
                    self.clients_start_unix_s = message["time_unix_s"].as_f64();
                }
                messages.push(message);
            }
        }
        if let Some(links) = &mut self.links {
            for line in links.next_lines().unwrap_or_default() {
                if let Ok(sample) = serde_json::from_str::<Sample>(&line) {
                    messages.push(self.throughput.message(&sample));
                }
            }
        }
        let start = self.clients_start_unix_s.unwrap_or(self.started_unix_s);
        for client in &mut self.clients {
            for line in client.segments.next_lines().unwrap_or_default() {
                match &client.columns {
                    None => client.columns = SegmentColumns::of(&line),
                    Some(columns) => messages.extend(columns.message(&client.name, start, &line)),
                }
            }
            for line in client.deadlines.next_lines().unwrap_or_default() {
                match client.deadlines_header {
                    None => client.deadlines_header = Some(line == DEADLINES_HEADER),
                    Some(true) => messages.extend(feed::deadline(&client.name, &line)),
                    Some(false) => {}
                }
            }
            if !client.done {
                if let Some(summary) = read_summary(&client.dir.join("summary.json")) {
                    client.done = true;
                    messages.push(feed::client_done(&client.name, &summary));
                }
            }
        }
        messages
    }

    /// Every message the files hold now, read to their ends.
    pub fn drain(&mut self) -> Vec<Value> {
        let mut all = Vec::new();
        loop {
            let more = self.poll();
            if more.is_empty() {
                return all;
            }
            all.extend(more);
        }
    }
}

/// A client's `summary.json` once it is whole (it may be read while being written).
fn read_summary(path: &Path) -> Option<Value> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_SUMMARY)
        .read_to_string(&mut text)
        .ok()?;
    serde_json::from_str(&text).ok().filter(Value::is_object)
}
