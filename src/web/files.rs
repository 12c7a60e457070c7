//! What the view reads from files as they grow: the lab's event log, each client's
//! `segments.csv` (HAS), `deadlines.csv` (F-FDN viewers) or `requests.csv` (ICN users) and, once
//! it finishes, its `summary.json`, an ICN controller's `controller.jsonl`, and (replaying a run
//! directory) the link samples `cdnlab run` recorded in `links.jsonl`. The same for a live lab
//! and a run directory; only the paths differ.

use super::feed::icn::{self, RegionLatency};
use super::feed::{self, Sample, SegmentColumns, Throughput};
use crate::fog_roles::viewers::DEADLINES_HEADER;
use crate::icn_roles::load::REQUESTS_HEADER;
use crate::line_tail::LineTail;
use crate::regular_file::Beneath;
use serde_json::Value;
use std::path::PathBuf;

/// Largest `summary.json` read: a client's is a few kB.
const MAX_SUMMARY: u64 = 1 << 20;

/// How long after a second ends a live view publishes the ICN requests that completed in it:
/// a request is logged when it completes, so by then its second's rows are in the file.
const LATENCY_LATE_S: f64 = 1.0;

/// A CSV a client appends to, whose rows count once its header is the one expected.
struct Rows {
    tail: LineTail,
    header: &'static str,
    /// Whether the header was read and is `header`.
    known: Option<bool>,
}

impl Rows {
    fn new(path: Beneath, header: &'static str) -> Rows {
        Rows {
            tail: LineTail::new(path),
            header,
            known: None,
        }
    }

    fn at_end(&self) -> bool {
        self.tail.at_end()
    }

    /// The rows appended since the last look.
    fn next(&mut self) -> Vec<String> {
        let mut rows = Vec::new();
        for line in self.tail.next_lines().unwrap_or_default() {
            match self.known {
                None => self.known = Some(line == self.header),
                Some(true) => rows.push(line),
                Some(false) => {}
            }
        }
        rows
    }
}

struct Client {
    name: String,
    dir: Beneath,
    segments: LineTail,
    columns: Option<SegmentColumns>,
    deadlines: Rows,
    requests: Rows,
    latency: RegionLatency,
    done: bool,
}

pub struct Files {
    events: LineTail,
    links: Option<LineTail>,
    throughput: Throughput,
    clients: Vec<Client>,
    /// Each ICN controller's name and its `controller.jsonl`.
    controllers: Vec<(String, LineTail)>,
    /// When the clients started (the `clients_start` event), which their segment times count
    /// from; until it is seen, when this reader started.
    clients_start_unix_s: Option<f64>,
    started_unix_s: f64,
}

impl Files {
    /// `nodes` holds a directory per node, whose files are read through no link below its
    /// base; `clients` and `controllers` (ICN controllers) are names a topology has checked.
    pub fn new(
        events: PathBuf,
        links: Option<PathBuf>,
        nodes: &Beneath,
        clients: &[String],
        controllers: &[String],
    ) -> Files {
        Files {
            events: LineTail::new(events),
            links: links.map(LineTail::new),
            throughput: Throughput::default(),
            clients: clients
                .iter()
                .map(|name| Client {
                    name: name.clone(),
                    dir: nodes.join(name),
                    segments: LineTail::new(nodes.join(name).join("segments.csv")),
                    columns: None,
                    deadlines: Rows::new(nodes.join(name).join("deadlines.csv"), DEADLINES_HEADER),
                    requests: Rows::new(nodes.join(name).join("requests.csv"), REQUESTS_HEADER),
                    latency: RegionLatency::default(),
                    done: false,
                })
                .collect(),
            controllers: controllers
                .iter()
                .map(|name| {
                    let log = nodes.join(name).join("controller.jsonl");
                    (name.clone(), LineTail::new(log))
                })
                .collect(),
            clients_start_unix_s: None,
            started_unix_s: crate::wall_clock::unix_now_s(),
        }
    }

    /// The messages of everything appended since the last look: events first (the clients'
    /// start among them), then link samples, the clients' rows, the ICN regions' seconds that
    /// are over, finished clients and the controllers' records.
    pub fn poll(&mut self) -> Vec<Value> {
        self.read(Some(crate::wall_clock::unix_now_s() - LATENCY_LATE_S))
    }

    /// Every message the files hold now, read to their ends and handed to `publish` one
    /// look's worth at a time, so a long run's files are never all in memory at once.
    pub fn drain(&mut self, mut publish: impl FnMut(&Value)) {
        loop {
            self.read(None).iter().for_each(&mut publish);
            if self.at_end() {
                break;
            }
        }
        for client in &mut self.clients {
            (client.latency.publish(&client.name, f64::INFINITY).iter()).for_each(&mut publish);
        }
    }

    /// Whether the last look read every file to its end.
    fn at_end(&self) -> bool {
        let clients = (self.clients.iter())
            .all(|c| c.segments.at_end() && c.deadlines.at_end() && c.requests.at_end());
        self.events.at_end()
            && self.links.as_ref().is_none_or(LineTail::at_end)
            && clients
            && self.controllers.iter().all(|(_, log)| log.at_end())
    }

    /// What [`Files::poll`] says, publishing the ICN seconds over by `until_unix_s` (all of a
    /// finished client's); `None` (files no longer growing) publishes each client's seconds
    /// over by its latest request read, as a live view would have then.
    fn read(&mut self, until_unix_s: Option<f64>) -> Vec<Value> {
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
            // Read before the rows: a summary is written after the client's last row.
            let finished = (!client.done)
                .then(|| read_summary(&client.dir.join("summary.json")))
                .flatten();
            for line in client.segments.next_lines().unwrap_or_default() {
                match &client.columns {
                    None => client.columns = SegmentColumns::of(&line),
                    Some(columns) => messages.extend(columns.message(&client.name, start, &line)),
                }
            }
            for row in client.deadlines.next() {
                messages.extend(feed::deadline(&client.name, &row));
            }
            // Seconds are published as the rows settle them, so a look's rows (up to a MiB,
            // many minutes of a light load) never open more seconds than are kept.
            let settled = |latency: &RegionLatency| {
                let latest = latency.latest_unix_s() - LATENCY_LATE_S;
                until_unix_s.map_or(latest, |until| until.min(latest))
            };
            for row in client.requests.next() {
                if let Some(request) = icn::request(start, &row) {
                    client.latency.add(request);
                    messages.extend(
                        client
                            .latency
                            .publish(&client.name, settled(&client.latency)),
                    );
                }
            }
            let until = if client.done || finished.is_some() {
                f64::INFINITY
            } else {
                until_unix_s.unwrap_or(settled(&client.latency))
            };
            messages.extend(client.latency.publish(&client.name, until));
            if let Some(summary) = finished {
                client.done = true;
                messages.push(feed::client_done(&client.name, &summary));
            }
        }
        for (name, log) in &mut self.controllers {
            for line in log.next_lines().unwrap_or_default() {
                messages.extend(icn::controller(name, &line));
            }
        }
        messages
    }
}

/// A client's `summary.json` once it is whole (it may be read while being written).
fn read_summary(path: &Beneath) -> Option<Value> {
    let text = path.read(MAX_SUMMARY).ok()?;
    serde_json::from_str(&text).ok().filter(Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A replay reads every file to its end, however many looks that takes, and publishes every
    /// second of an ICN client that wrote no summary: 800 seconds of rows, more than a look
    /// reads and more seconds than a live view keeps open.
    #[test]
    fn a_drain_reads_every_file_whole_and_publishes_every_second() {
        let dir = crate::testing::TempDir::new("web-files-drain");
        let client = dir.0.join("nodes/u");
        std::fs::create_dir_all(&client).unwrap();
        let mut rows = format!("{REQUESTS_HEADER}\n");
        for second in 0..800 {
            for k in 0..30 {
                let sent = f64::from(second) + f64::from(k) / 40.0;
                rows += &format!("{sent:.4},app-{k},object-{second}-{k},0.0100,200,hit,site-a\n");
            }
        }
        assert!(
            rows.len() > 1 << 20,
            "{} bytes: one look would read all",
            rows.len()
        );
        std::fs::write(client.join("requests.csv"), rows).unwrap();
        // The clients started on a whole second, so each second's rows fall in one.
        let start = r#"{"event":"clients_start","time_unix_s":1700000000}"#;
        std::fs::write(dir.0.join("events.jsonl"), format!("{start}\n")).unwrap();
        let mut files = Files::new(
            dir.0.join("events.jsonl"),
            None,
            &Beneath::new(&dir.0, "nodes"),
            &["u".to_string()],
            &[],
        );
        let mut latency = Vec::new();
        files.drain(|message| {
            if message["kind"] == "latency" {
                latency.push(message.clone());
            }
        });
        assert_eq!(latency.len(), 800);
        let requests: u64 = (latency.iter())
            .map(|m| m["requests"].as_u64().unwrap())
            .sum();
        assert_eq!(requests, 800 * 30);
    }
}
