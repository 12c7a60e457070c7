//! The resolved plan of a topology in words, as `cdnlab check` prints it: every node with what
//! runs there, its interfaces, addresses and routes; every link and LAN with its subnet and each
//! direction's impairments; the timeline. What `cdnlab up` would build, without building it.

use super::impairments::change_entries;
use super::model::{Program, SegmentKind, TimelineAction, Topology};
use netem::units::format_duration_ns;

/// A command's argument as a shell would need it: as it is when it is plain, quoted (with Rust's
/// escapes, `\n` for a newline) when it holds spaces, quotes or control characters.
fn word(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=%{}@+,".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("{arg:?}")
    }
}

/// The plan of `topology` (see the module doc).
pub fn describe(topology: &Topology) -> String {
    let clients = topology.nodes.iter().filter(|n| n.client).count();
    let links = topology
        .segments
        .iter()
        .filter(|s| s.kind == SegmentKind::Link)
        .count();
    let mut out = format!(
        "topology `{}`: nodes {} (clients {clients}), links {links}, LANs {}, timeline events {}\n",
        topology.name,
        topology.nodes.len(),
        topology.segments.len() - links,
        topology.timeline.len()
    );
    out += "\nNODES\n";
    for node in &topology.nodes {
        let what = match &node.program {
            Program::None => "host (nothing runs)".to_string(),
            Program::Role { role, .. } => format!("role {role}"),
            Program::Command { argv } => {
                let words: Vec<String> = argv.iter().map(|a| word(a)).collect();
                format!("command {}", words.join(" "))
            }
        };
        let mut marks = Vec::new();
        if node.client {
            marks.push("client".to_string());
        }
        if let Some(host) = &node.host {
            marks.push(format!("host class {host}"));
        }
        let marks = if marks.is_empty() {
            String::new()
        } else {
            format!(" [{}]", marks.join(", "))
        };
        out += &format!("  {}: {what}{marks}\n", node.name);
        for interface in &node.interfaces {
            out += &format!(
                "    {} {}/{} on {}\n",
                interface.ifname,
                interface.addr,
                interface.prefix_len,
                topology.segments[interface.segment].name
            );
        }
        for route in &node.routes {
            out += &format!(
                "    route {}/{} via {} dev {}\n",
                route.dst, route.prefix_len, route.via, route.ifname
            );
        }
    }
    out += "\nLINKS AND LANS (impairments of what each member sends)\n";
    for segment in &topology.segments {
        let kind = match segment.kind {
            SegmentKind::Link => "link",
            SegmentKind::Lan => "LAN",
        };
        out += &format!(
            "  {} ({kind} {}/{})\n",
            segment.name, segment.subnet, segment.prefix_len
        );
        for (i, &member) in segment.members.iter().enumerate() {
            let to = match segment.kind {
                SegmentKind::Link => topology.nodes[segment.members[1 - i]].name.clone(),
                SegmentKind::Lan => segment.name.clone(),
            };
            out += &format!(
                "    {} → {to}: {}\n",
                topology.nodes[member].name, segment.egress[i]
            );
        }
    }
    if !topology.timeline.is_empty() {
        out += "\nTIMELINE (after the clients start)\n";
    }
    for event in &topology.timeline {
        out += &format!(
            "  {}: {}\n",
            format_duration_ns(event.at_ns),
            describe_action(topology, &event.action)
        );
    }
    out
}

/// A timeline action in words: `set router-server (sent by router, server): delay 200ms`,
/// `stop server`.
pub fn describe_action(topology: &Topology, action: &TimelineAction) -> String {
    let node = |n: usize| topology.nodes[n].name.clone();
    match action {
        TimelineAction::SetLink {
            segment,
            from,
            change,
        } => {
            let senders: Vec<String> = from.iter().map(|&n| node(n)).collect();
            let change: Vec<String> = change_entries(change)
                .into_iter()
                .map(|(key, value)| format!("{key} {value}"))
                .collect();
            format!(
                "set {} (sent by {}): {}",
                topology.segments[*segment].name,
                senders.join(", "),
                change.join(" ")
            )
        }
        TimelineAction::StopNode { node: n } => format!("stop {}", node(*n)),
        TimelineAction::StartNode { node: n } => format!("start {}", node(*n)),
        TimelineAction::SignalNode { node: n } => format!("signal {}", node(*n)),
    }
}
