//! The live view's messages, one JSON object each (`kind` names it), made from what a lab and
//! its run directory already hold. Plain functions of their inputs, so a live lab and a replayed
//! run directory produce the same messages from the same facts:
//!
//! - `hello`: the lab, its picture (the layout `cdnlab graph` draws), every link direction
//!   with its edge of the picture and its impairments, the clients; first on every connection.
//! - `links`: at a time, every direction's throughput since the last sample, queue and drops.
//! - `event`: a timeline or `link set` event as the lab recorded it, with a line of text.
//! - `segment`: a row of a HAS client's `segments.csv` (quality, bitrate, buffer, stalls),
//!   stamped with when the segment arrived.
//! - `deadline`: a row of F-FDN viewers' `deadlines.csv`: a segment arrived, missed or not.
//! - `latency`, `controller`, `controller_tick`, `controller_period`: the ICN scenario's
//!   regions and controller ([`icn`]).
//! - `client`: a client finished; its `summary.json`.
//! - `end`: nothing more will come (the lab is down, or the replay is complete).

pub mod icn;

use crate::picture::{layout, Picture, VertexKind};
use crate::topology::{Program, SegmentKind, Topology};
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};

pub use crate::lab::counters::Sample;

/// The picture's edge that shows `member`'s direction of `segment`, and whether the direction
/// runs from the edge's `a` to its `b` (`Picture::of` adds one edge per link, sender member 0
/// at `a`, and one per LAN member, the member at `a`).
pub fn edge_of(topology: &Topology, segment: usize, member: usize) -> Option<(usize, bool)> {
    let before: usize = topology.segments[..segment.min(topology.segments.len())]
        .iter()
        .map(|s| match s.kind {
            SegmentKind::Link => 1,
            SegmentKind::Lan => s.members.len(),
        })
        .sum();
    match topology.segments.get(segment)?.kind {
        SegmentKind::Link => Some((before, member == 0)),
        SegmentKind::Lan => Some((before + member, true)),
    }
}

/// The `hello` message. `directions` are the lab's directions as `cdnlab status --json` lists
/// them (`links.json` in a run directory); `counters` says whether link samples will follow.
pub fn hello(mode: &str, topology: &Topology, directions: &[Value], counters: bool) -> Value {
    let picture = Picture::of(topology);
    let at = layout(&picture);
    let nodes: Vec<Value> = picture
        .vertices
        .iter()
        .zip(&at.centres)
        .map(|(v, &(x, y))| {
            let kind = match v.kind {
                VertexKind::Node => "node",
                VertexKind::Client => "client",
                VertexKind::Lan => "lan",
            };
            json!({"name": v.name, "what": v.what, "kind": kind, "x": x, "y": y})
        })
        .collect();
    let edges: Vec<Value> = picture
        .edges
        .iter()
        .map(|e| json!({"a": e.a, "b": e.b}))
        .collect();
    let directions: Vec<Value> = directions
        .iter()
        .filter_map(|d| {
            let segment = topology
                .segments
                .iter()
                .position(|s| Some(s.name.as_str()) == d["segment"].as_str())?;
            let member = topology.segments[segment]
                .members
                .iter()
                .position(|&n| Some(topology.nodes[n].name.as_str()) == d["from"].as_str())?;
            let (edge, forward) = edge_of(topology, segment, member)?;
            Some(json!({
                "id": d["id"], "segment": d["segment"], "from": d["from"], "to": d["to"], "edge": edge, "forward": forward,
                "impairments": d["impairments"], "rate_bps": d["settings"]["rate_bps"],
            }))
        })
        .collect();
    let clients: Vec<&str> = topology
        .nodes
        .iter()
        .filter(|n| n.client)
        .map(|n| n.name.as_str())
        .collect();
    // The region whose users each ICN load generator is.
    let regions: serde_json::Map<String, Value> = role_nodes(topology, "icn-load")
        .filter_map(|(name, config)| {
            Some((name.to_string(), config.get("region")?.as_str()?.into()))
        })
        .collect();
    json!({
        "kind": "hello",
        "mode": mode,
        "lab": topology.name,
        "counters": counters,
        "picture": {"title": picture.title, "width": at.width, "height": at.height, "nodes": nodes, "edges": edges},
        "directions": directions,
        "clients": clients,
        "regions": regions,
    })
}

/// The nodes of `topology` that run `role`, with their configurations.
pub fn role_nodes<'a>(
    topology: &'a Topology,
    role: &'a str,
) -> impl Iterator<Item = (&'a str, &'a toml::Table)> + 'a {
    topology.nodes.iter().filter_map(move |n| match &n.program {
        Program::Role { role: r, config } if r == role => Some((n.name.as_str(), config)),
        _ => None,
    })
}

/// Throughput is averaged over this much time: a 100 ms sample of a TCP flow holds a whole
/// burst or none, and the chart would swing between zero and twice the link's rate.
pub const THROUGHPUT_WINDOW_S: f64 = 0.5;

/// Turns successive counter samples into `links` messages: each direction's throughput is its
/// bytes over the last [`THROUGHPUT_WINDOW_S`] (from the oldest sample kept within it, or the
/// one just before) over the time between (a direction's first sample shows none).
#[derive(Debug, Default)]
pub struct Throughput {
    recent: HashMap<String, VecDeque<(f64, u64)>>,
}

/// The most link directions whose throughput is followed: a lab has far fewer, a replayed
/// `links.jsonl` could name any number (past it a new one shows no throughput).
const MAX_LINKS: usize = 4096;
/// The most samples of one link kept for its window.
const MAX_WINDOW_SAMPLES: usize = 64;

impl Throughput {
    pub fn message(&mut self, sample: &Sample) -> Value {
        let now = sample.time_unix_s;
        let links: Vec<Value> = sample
            .links
            .iter()
            .map(|c| {
                let bps = self.bps(&c.id, now, c.bytes);
                json!({"id": c.id, "bps": bps.round(), "packets": c.packets, "drops": c.drops, "queued": c.queued})
            })
            .collect();
        json!({"kind": "links", "time_unix_s": now, "links": links})
    }

    /// Link `id`'s bits per second over the last window, its byte counter at `bytes` now.
    fn bps(&mut self, id: &str, now: f64, bytes: u64) -> f64 {
        if self.recent.len() >= MAX_LINKS && !self.recent.contains_key(id) {
            return 0.0;
        }
        let recent = self.recent.entry(id.to_string()).or_default();
        // Counters that went back (a restarted shaper) start the window over.
        if recent.back().is_some_and(|&(t, b)| bytes < b || now <= t) {
            recent.clear();
        }
        while recent.len() > 1 && recent[1].0 <= now - THROUGHPUT_WINDOW_S {
            recent.pop_front();
        }
        let bps = recent
            .front()
            .map_or(0.0, |&(t, b)| (bytes - b) as f64 * 8.0 / (now - t));
        // Samples come 10 a second live; a replayed file's could be any distance apart.
        if recent.len() >= MAX_WINDOW_SAMPLES {
            recent.pop_front();
        }
        recent.push_back((now, bytes));
        bps
    }
}

/// The `event` message of a line of the lab's `events.jsonl`, or `None` for a line that is not
/// an event (a JSON object with `event` and `time_unix_s`).
pub fn event(line: &str) -> Option<Value> {
    let event: Value = serde_json::from_str(line).ok()?;
    let object = event.as_object()?;
    let name = object.get("event")?.as_str()?;
    let time = object.get("time_unix_s")?.as_f64()?;
    let mut words = vec![name.replace('_', " ")];
    for (key, value) in object {
        if key == "event" || key == "time_unix_s" || key == "rate_bps" {
            continue;
        }
        match value {
            Value::String(s) => words.push(s.clone()),
            other => words.push(format!("{key} {other}")),
        }
    }
    let mut message =
        json!({"kind": "event", "time_unix_s": time, "event": event, "text": words.join(" ")});
    if let Some(rate) = object.get("rate_bps") {
        message["rate_bps"] = rate.clone();
    }
    Some(message)
}

/// The columns of a HAS client's `segments.csv` the view shows, found by name in its header.
#[derive(Debug, Clone)]
pub struct SegmentColumns {
    index: usize,
    quality: usize,
    bitrate_bps: usize,
    request_time_s: usize,
    download_time_s: usize,
    buffer_s: usize,
    stalls: Option<usize>,
}

impl SegmentColumns {
    /// The columns of `header`, or `None` when it is not a HAS client's.
    pub fn of(header: &str) -> Option<SegmentColumns> {
        let names: Vec<&str> = header.split(',').collect();
        let at = |name: &str| names.iter().position(|&n| n == name);
        Some(SegmentColumns {
            index: at("index")?,
            quality: at("quality")?,
            bitrate_bps: at("bitrate_bps")?,
            request_time_s: at("request_time_s")?,
            download_time_s: at("download_time_s")?,
            buffer_s: at("buffer_s")?,
            stalls: at("stalls"),
        })
    }

    /// The `segment` message of a row of client `client`, whose session started at
    /// `start_unix_s` (its times are seconds since then), or `None` for a row that does not
    /// parse.
    pub fn message(&self, client: &str, start_unix_s: f64, row: &str) -> Option<Value> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(row.as_bytes());
        let record = reader.records().next()?.ok()?;
        let number = |i: usize| record.get(i)?.parse::<f64>().ok().filter(|v| v.is_finite());
        let arrived_s = number(self.request_time_s)? + number(self.download_time_s)?;
        Some(json!({
            "kind": "segment",
            "client": client,
            "time_unix_s": start_unix_s + arrived_s,
            "index": number(self.index)?,
            "quality": number(self.quality)?,
            "bitrate_bps": number(self.bitrate_bps)?,
            "buffer_s": number(self.buffer_s)?,
            "stalls": self.stalls.and_then(number).unwrap_or(0.0),
        }))
    }
}

/// The `deadline` message of a row of an F-FDN viewers' `deadlines.csv` (under
/// `fog_roles::viewers::DEADLINES_HEADER`): a segment arrived, or failed, and whether it missed.
pub fn deadline(client: &str, row: &str) -> Option<Value> {
    let mut cells = row.split(',');
    let time: f64 = cells.next()?.parse().ok().filter(|t: &f64| t.is_finite())?;
    let request: u64 = cells.next()?.parse().ok()?;
    let index: u64 = cells.next()?.parse().ok()?;
    let missed: bool = cells.next()?.parse().ok()?;
    cells.next().is_none().then(|| {
        json!({"kind": "deadline", "client": client, "time_unix_s": time, "request": request, "index": index, "missed": missed})
    })
}

/// The `client` message of a finished client's `summary.json`.
pub fn client_done(client: &str, summary: &Value) -> Value {
    let failed = summary["failed"].as_bool().unwrap_or(false);
    json!({
        "kind": "client",
        "client": client,
        "state": if failed { "failed" } else { "done" },
        "summary": summary,
    })
}

pub fn end(reason: &str) -> Value {
    json!({"kind": "end", "reason": reason})
}

#[cfg(test)]
mod tests;
