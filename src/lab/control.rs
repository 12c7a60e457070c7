//! Changes to a running lab — link impairments, node stops, starts and signals — each recorded in the
//! lab's event log. `cdnlab link set` and `run`'s timeline both come through here.

use super::state::LabState;
use super::sys::{err, Ended, Result};
use super::{events, links, process};
use netem::{Impairments, ImpairmentsChange};

/// Applies `change` to the directions of `segment` sent by `senders`, and records it; under
/// the lab's state lock, on the state as it is on disk, so concurrent changes are not lost.
pub fn change_segment(
    state: &mut LabState,
    segment: usize,
    senders: &[usize],
    change: &ImpairmentsChange,
) -> Result<()> {
    state.update(|state| change_directions(state, segment, senders, change))
}

/// Checks the change on every direction before it touches one, so a change some direction
/// cannot take changes none; a direction that then fails to change ends the change there, and
/// what the earlier ones took stays recorded.
fn change_directions(
    state: &mut LabState,
    segment: usize,
    senders: &[usize],
    change: &ImpairmentsChange,
) -> Result<()> {
    let mut planned = Vec::new();
    for &sender in senders {
        let Some(index) = state.direction_index(segment, sender) else {
            continue;
        };
        let new = change.apply_to(&state.directions[index].impairments);
        if let Err(e) = new.check() {
            let id = state.directions[index].id(&state.topology);
            return err(format!("direction {id}: {e}; nothing was changed"));
        }
        planned.push((index, new));
    }
    for (index, new) in planned {
        links::set_direction(state, index, new)?;
        record_link_set(state, index)?;
    }
    Ok(())
}

/// Removes every impairment of the `segments`' directions and records it, one `link_reset`
/// a segment, under the lab's state lock as [`change_segment`]. A direction that fails to
/// change ends the reset there; those of its segment reset before it are recorded one by one
/// (`link_set`), as a change that fails halfway is.
pub fn reset_segments(state: &mut LabState, segments: &[usize]) -> Result<()> {
    state.update(|state| {
        for &segment in segments {
            let of_segment: Vec<usize> = (0..state.directions.len())
                .filter(|&index| state.directions[index].segment == segment)
                .collect();
            for (done, &index) in of_segment.iter().enumerate() {
                if let Err(e) = links::set_direction(state, index, Impairments::default()) {
                    for &reset in &of_segment[..done] {
                        // The failure to report is the reset's own.
                        if let Err(unrecorded) = record_link_set(state, reset) {
                            tracing::error!("recording a partial link reset: {unrecorded}");
                        }
                    }
                    return Err(e);
                }
            }
            let name = &state.topology.segments[segment].name;
            events::record(
                state,
                serde_json::json!({"event": "link_reset", "segment": name}),
            )?;
        }
        Ok(())
    })
}

/// Records direction `index`'s impairments as they now are (`link_set`).
fn record_link_set(state: &LabState, index: usize) -> Result<()> {
    let direction = &state.directions[index];
    let now = &direction.impairments;
    events::record(
        state,
        serde_json::json!({"event": "link_set", "direction": direction.id(&state.topology), "impairments": now.to_string(), "rate_bps": now.rate_bps}),
    )
}

/// Stops a node's process and records it; if the process had already ended by itself, says
/// how (recorded as the event's `had_ended`).
pub fn stop_node(state: &mut LabState, node: usize) -> Result<Option<Ended>> {
    let had_ended = process::stop_node(state, node)?;
    let name = state.topology.nodes[node].name.clone();
    let mut event = serde_json::json!({"event": "node_stop", "node": name});
    if let Some(how) = &had_ended {
        event["had_ended"] = how.to_string().into();
    }
    events::record(state, event)?;
    Ok(had_ended)
}

/// Sends SIGUSR1 to a node's process and records it; a node not running (stopped, or a
/// client that already ended) is recorded as not reached rather than failing the run.
pub fn signal_node(state: &mut LabState, node: usize) -> Result<()> {
    let delivered = process::signal_node(state, node, libc::SIGUSR1);
    let name = state.topology.nodes[node].name.clone();
    if !delivered {
        tracing::warn!("timeline: node {name} is not running; its signal was not delivered");
    }
    events::record(
        state,
        serde_json::json!({"event": "node_signal", "node": name, "delivered": delivered}),
    )
}

/// Starts a node's process again and records it; refused while the node's last process runs.
/// If that process had ended by itself, says how (recorded as the event's `had_ended`).
pub fn start_node(state: &mut LabState, node: usize) -> Result<Option<Ended>> {
    let had_ended = process::forget_ended(state, node)?;
    // The process is followed by its record, as `up`'s are.
    drop(process::start_node(state, node)?);
    let name = state.topology.nodes[node].name.clone();
    let mut event = serde_json::json!({"event": "node_start", "node": name});
    if let Some(how) = &had_ended {
        event["had_ended"] = how.to_string().into();
    }
    events::record(state, event)?;
    Ok(had_ended)
}
