//! Every link direction of a running lab as JSON: its segment, sender and receivers, its
//! impairments and, under the userspace backend, the shaper's counters (frames, bytes, drops).
//! `cdnlab status` shows it; `cdnlab run` keeps it as `links.json` when the clients are done.

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
            json!({
                "id": id,
                "segment": segment.name,
                "from": state.topology.nodes[segment.members[d.member]].name,
                "to": to,
                "impairments": d.impairments.to_string(),
                "settings": d.impairments,
                "shaper": counters,
            })
        })
        .collect()
}
