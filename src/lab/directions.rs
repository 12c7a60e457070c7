//! Every link direction of a running lab as JSON: its segment, sender and receivers, its
//! impairments, its counters (bytes, frames, drops, queued: the shaper's or the kernel root
//! qdisc's) and, under the userspace backend, the shaper's own detail.
//! `cdnlab status` shows it; `cdnlab run` keeps it as `links.json` when the clients are done.

use super::counters::{self, LinkCounters, Sample};
use super::{shaper, Backend, LabState};
use serde_json::{json, Value};

/// Every direction with its impairments and, under the userspace backend, the shaper's
/// counters (a warning, and none, when the shaper does not answer).
pub fn json(state: &LabState) -> Vec<Value> {
    let live = match state.backend {
        Backend::Userspace => match shaper::show(state) {
            Ok(response) => Some(response),
            Err(e) => {
                eprintln!("warning: {e}");
                None
            }
        },
        Backend::Kernel => None,
    };
    let time_unix_s = crate::wall_clock::unix_now_s();
    let sample: Option<Sample> = match &live {
        Some(response) => counters::from_shaper(time_unix_s, response),
        None if state.backend == Backend::Kernel => LinkCounters::open(state)
            .and_then(|mut c| c.sample(state))
            .map_err(|e| eprintln!("warning: the kernel's link counters: {e}"))
            .ok(),
        None => None,
    };
    state
        .directions
        .iter()
        .map(|d| {
            let segment = &state.topology.segments[d.segment];
            let id = d.id(&state.topology);
            let to: Vec<&str> = segment
                .members
                .iter()
                .enumerate()
                .filter(|(m, _)| *m != d.member)
                .map(|(_, &n)| state.topology.nodes[n].name.as_str())
                .collect();
            let counters = live
                .as_ref()
                .and_then(|r| r.queues.as_ref()?.iter().find(|q| q.id == id).cloned())
                .map(|q| json!({"stats": q.stats, "queued": q.queued}));
            let counted = sample
                .as_ref()
                .and_then(|s| s.links.iter().find(|c| c.id == id))
                .map(|c| json!({"bytes": c.bytes, "packets": c.packets, "drops": c.drops, "queued": c.queued}));
            json!({
                "id": id,
                "segment": segment.name,
                "from": state.topology.nodes[segment.members[d.member]].name,
                "to": to,
                "impairments": d.impairments.to_string(),
                "settings": d.impairments,
                "counters": counted,
                "shaper": counters,
            })
        })
        .collect()
}
