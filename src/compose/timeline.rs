//! A topology's timeline has no compose form (compose starts containers, it does not run a
//! schedule), so each event is written as the command that does the same by hand, at its time
//! after the clients start.

use super::service::Names;
use crate::topology::{TimelineAction, Topology};
use netem::units::{format_duration_ns, format_percent, format_rate_bps};
use netem::ImpairmentsChange;

/// One line per event: `at 32s: …`.
pub fn commands(topology: &Topology, names: &Names) -> Vec<String> {
    if topology.timeline.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![
        "Timeline (compose runs no schedule; run these by hand, after the clients start):".into(),
    ];
    for event in &topology.timeline {
        let at = format_duration_ns(event.at_ns);
        let service = |node: usize| names.service(&topology.nodes[node].name);
        let line = match &event.action {
            TimelineAction::SetLink {
                segment,
                from,
                change,
            } => {
                let segment = &topology.segments[*segment];
                let one_way = from.len() < segment.members.len();
                format!(
                    "  at {at}: in every container on {net}: cdnlab container link set {net} {}{}",
                    change_flags(change),
                    if one_way {
                        " (the topology changes one direction; this changes the network)"
                    } else {
                        ""
                    },
                    net = names.network(&segment.name),
                )
            }
            TimelineAction::StopNode { node } => {
                format!("  at {at}: docker compose stop {}", service(*node))
            }
            TimelineAction::StartNode { node } => {
                format!("  at {at}: docker compose start {}", service(*node))
            }
            TimelineAction::SignalNode { node } => {
                format!("  at {at}: docker compose kill -s USR1 {}", service(*node))
            }
        };
        lines.push(line);
    }
    lines
}

/// The `cdnlab link set` flags of a change.
fn change_flags(change: &ImpairmentsChange) -> String {
    let mut flags = Vec::new();
    if let Some(delay) = change.delay_ns {
        flags.push(format!("--delay {}", format_duration_ns(delay)));
    }
    if let Some(jitter) = change.jitter_ns {
        flags.push(format!("--jitter {}", format_duration_ns(jitter)));
    }
    if let Some(c) = change.delay_correlation {
        flags.push(format!("--delay-correlation {}", format_percent(c)));
    }
    if let Some(d) = change.distribution {
        flags.push(format!("--distribution {}", d.name()));
    }
    if let Some(loss) = change.loss {
        flags.push(format!("--loss {}", format_percent(loss)));
    }
    if let Some(c) = change.loss_correlation {
        flags.push(format!("--loss-correlation {}", format_percent(c)));
    }
    match change.rate_bps {
        Some(Some(rate)) => flags.push(format!("--rate {}", format_rate_bps(rate))),
        Some(None) => flags.push("--rate unlimited".into()),
        None => {}
    }
    if let Some(limit) = change.limit {
        flags.push(format!("--limit {limit}"));
    }
    flags.join(" ")
}
