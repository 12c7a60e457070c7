//! A topology as the lab builds it: names resolved, variables substituted, units parsed,
//! addresses assigned and routes computed. Produced by `topology::load`; consumed by `lab`.

use netem::{Impairments, ImpairmentsChange};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

/// Index into `Topology::nodes`.
pub type NodeId = usize;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Lab name (the file's `name`, or `--name`).
    pub name: String,
    /// Every variable as run: the file's `[vars]` with `--set` overrides applied.
    pub vars: BTreeMap<String, String>,
    pub nodes: Vec<Node>,
    /// Point-to-point links and LAN segments; each joins two or more nodes.
    pub segments: Vec<Segment>,
    /// Timeline events, sorted by `at_ns`.
    pub timeline: Vec<TimelineEvent>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub name: String,
    /// The class of Swarm hosts it runs on (`host = "h1"`: `cdnlab compose --swarm` places it
    /// on the Swarm nodes labelled `cdnlab.host=h1`); labs ignore it.
    #[serde(default)]
    pub host: Option<String>,
    pub program: Program,
    /// Extra environment for the node's process.
    pub env: BTreeMap<String, String>,
    pub ready: Option<Ready>,
    /// How long `up` waits for readiness, in nanoseconds.
    pub ready_timeout_ns: u64,
    /// A client: `run` waits for it to exit and collects its results.
    pub client: bool,
    /// Whether paths between other nodes may pass through this node (`transit = false`: only
    /// traffic to and from it does).
    #[serde(default = "forwards")]
    pub transit: bool,
    /// The node's interfaces, in the order of `segments`.
    pub interfaces: Vec<Interface>,
    /// Static routes to every address of every other node that is not on a shared segment;
    /// subnets behind one neighbour share a route where they can (`topology::aggregate`).
    pub routes: Vec<Route>,
    /// What this node's `/etc/hosts` says: every node's name with the address this node
    /// reaches it by (`topology::routes`).
    #[serde(default)]
    pub hosts: Vec<HostEntry>,
}

/// A lab's state written before `transit` existed describes nodes that forward.
fn forwards() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Program {
    /// A plain host: nothing runs in it.
    None,
    /// A cdnlab role binary (found beside the `cdnlab` executable), run with its config table
    /// written as TOML to a file passed as `--config FILE`.
    Role { role: String, config: toml::Table },
    /// Any program with its arguments.
    Command { argv: Vec<String> },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ready {
    /// A TCP port on the node accepts connections.
    Tcp(u16),
    /// A command run in the node's namespace exits 0.
    Command(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interface {
    /// Kernel name inside the node's namespace (`eth0`, `eth1`, … in segment order).
    pub ifname: String,
    pub segment: usize,
    pub addr: Ipv4Addr,
    pub prefix_len: u8,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    /// `a-b` for a link, the LAN's name for a LAN.
    pub name: String,
    pub kind: SegmentKind,
    /// Members in declaration order (two for a link).
    pub members: Vec<NodeId>,
    /// Network address of the segment's subnet.
    pub subnet: Ipv4Addr,
    pub prefix_len: u8,
    /// Impairments of traffic leaving `members[i]` onto the segment, per member. For a link,
    /// `egress[0]` is the a→b direction and `egress[1]` is b→a.
    pub egress: Vec<Impairments>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SegmentKind {
    Link,
    Lan,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// Destination subnet.
    pub dst: Ipv4Addr,
    pub prefix_len: u8,
    /// Next hop, on a segment the node is on.
    pub via: Ipv4Addr,
    pub ifname: String,
}

/// One line of a node's `/etc/hosts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostEntry {
    pub name: String,
    pub addr: Ipv4Addr,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineEvent {
    /// Nanoseconds after the clients start.
    pub at_ns: u64,
    pub action: TimelineAction,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimelineAction {
    /// Change the impairments of a segment; `from` lists the sending member(s) whose egress
    /// changes (both ends of a link, unless the event names one direction).
    SetLink {
        segment: usize,
        from: Vec<NodeId>,
        change: ImpairmentsChange,
    },
    StopNode {
        node: NodeId,
    },
    StartNode {
        node: NodeId,
    },
    /// SIGUSR1 to the node's process: a role that has a next phase moves to it (the farm's
    /// load changes its popularity).
    SignalNode {
        node: NodeId,
    },
}

impl Topology {
    /// Whether a topology read back from JSON (a run's `topology.json`, which anyone may have
    /// written or edited) holds together as `load` would have made it: node names are names,
    /// a link has two members and a LAN at least one, and every index points at a node or
    /// segment that exists. Readers index with them, so a bad one must stop here, named.
    pub fn check_indices(&self) -> Result<(), String> {
        let nodes = self.nodes.len();
        let node = |id: NodeId, what: &str| {
            if id < nodes {
                Ok(())
            } else {
                Err(format!(
                    "{what} names node {id}, but there are {nodes} nodes"
                ))
            }
        };
        for n in &self.nodes {
            super::check_node_name(&n.name, "node")?;
            if let Some(i) = n
                .interfaces
                .iter()
                .find(|i| i.segment >= self.segments.len())
            {
                return Err(format!(
                    "an interface of node `{}` names segment {}, but there are {} segments",
                    n.name,
                    i.segment,
                    self.segments.len()
                ));
            }
        }
        for s in &self.segments {
            let (ok, needs) = match s.kind {
                SegmentKind::Link => (s.members.len() == 2, "a link has 2 members"),
                SegmentKind::Lan => (!s.members.is_empty(), "a LAN has at least 1 member"),
            };
            if !ok {
                return Err(format!(
                    "segment `{}` has {} members ({needs})",
                    s.name,
                    s.members.len()
                ));
            }
            for &m in &s.members {
                node(m, &format!("segment `{}`", s.name))?;
            }
        }
        for event in &self.timeline {
            match &event.action {
                TimelineAction::SetLink { segment, from, .. } => {
                    let Some(s) = self.segments.get(*segment) else {
                        return Err(format!(
                            "a timeline event names segment {segment}, but there are {} segments",
                            self.segments.len()
                        ));
                    };
                    if let Some(f) = from.iter().find(|f| !s.members.contains(f)) {
                        return Err(format!(
                            "a timeline event on `{}` names sender {f}, not a member",
                            s.name
                        ));
                    }
                }
                TimelineAction::StopNode { node: id }
                | TimelineAction::StartNode { node: id }
                | TimelineAction::SignalNode { node: id } => node(*id, "a timeline event")?,
            }
        }
        Ok(())
    }
}
