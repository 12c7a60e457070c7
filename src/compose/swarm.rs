//! What a Swarm stack file (`cdnlab compose --swarm`) has that a compose file does not:
//! placement of nodes on hosts, certificates as secrets, the directory network through which
//! containers learn the addresses Swarm gives them, and the `deploy` section of each service.

use super::yaml::{pair, s, Map, Yaml};
use crate::topology::{Node, Topology};
use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// The network every container of a stack joins to serve and ask for cards
/// (`container::directory`); it carries no emulated traffic.
pub const DIRECTORY: &str = "cdnlab-directory";

/// Where in a container the secrets are (`ca.pem`, `NODE.pem`, `NODE.key`).
pub const SECRETS_DIR: &str = "/run/secrets";

/// How often Swarm starts a failed task of a node again; Docker's start failures are rare and
/// independent, and a task that ran refuses at once.
const RESTARTS: u32 = 3;

/// Where, in a container, the nodes record that they started: in the stack's results
/// directory (bound at `/results` in every service of a stack), under a name no node can have.
pub const STARTED_DIR: &str = "/results/_started";

/// The node label placement constraints read.
pub const HOST_LABEL: &str = "cdnlab.host";

/// `--swarm`'s settings.
#[derive(Debug, Clone)]
pub struct SwarmOptions {
    /// Where the certificates are issued (one directory per node); the stack's secrets name
    /// these files.
    pub certs: PathBuf,
    /// `--hosts N`: place the nodes that name no `host` on `h1`..`hN`.
    pub hosts: Option<usize>,
}

/// A stack's decisions beyond the compose file's.
#[derive(Debug)]
pub struct Plan {
    pub directory: (Ipv4Addr, u8),
    /// Each node's host class, where it has one.
    pub placement: BTreeMap<String, String>,
    pub certs: PathBuf,
}

/// The nodes' host classes: a node's own `host`, else, with `hosts`, one of `h1`..`hN`.
///
/// The partition takes the nodes in breadth-first order over the segments (from the first
/// node declared, in declaration order) and cuts that order into `hosts` runs of near-equal
/// size, so neighbours mostly share a host and few emulated links cross between hosts. It is
/// not a minimum cut; a topology whose cut matters names `host` on its nodes.
pub fn placement(topology: &Topology, hosts: Option<usize>) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = topology
        .nodes
        .iter()
        .filter_map(|n| Some((n.name.clone(), n.host.clone()?)))
        .collect();
    let Some(hosts) = hosts.filter(|&h| h > 0) else {
        return out;
    };
    let free: Vec<usize> = breadth_first(topology)
        .into_iter()
        .filter(|&i| topology.nodes[i].host.is_none())
        .collect();
    let per_host = free.len().div_ceil(hosts).max(1);
    for (position, &node) in free.iter().enumerate() {
        out.insert(
            topology.nodes[node].name.clone(),
            format!("h{}", position / per_host + 1),
        );
    }
    out
}

/// Every node once: breadth-first over shared segments from each not yet reached node in
/// declaration order.
fn breadth_first(topology: &Topology) -> Vec<usize> {
    let mut seen = vec![false; topology.nodes.len()];
    let mut order = Vec::with_capacity(seen.len());
    for start in 0..topology.nodes.len() {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        let mut queue = VecDeque::from([start]);
        while let Some(node) = queue.pop_front() {
            order.push(node);
            for iface in &topology.nodes[node].interfaces {
                for &member in &topology.segments[iface.segment].members {
                    if !seen[member] {
                        seen[member] = true;
                        queue.push_back(member);
                    }
                }
            }
        }
    }
    order
}

/// Issues every node's certificate into `dir/NODE/` unless they are there (a stack deployed
/// again keeps its secrets' contents, which Swarm does not let change).
pub fn issue_certs(dir: &Path, topology: &Topology) -> Result<(), String> {
    let nodes: Vec<&str> = topology.nodes.iter().map(|n| n.name.as_str()).collect();
    crate::container::issue_certs_once(dir, &topology.name, &nodes)
        .map(|_| ())
        .map_err(|e| format!("issuing the certificates into {}: {e}", dir.display()))
}

fn ca_secret() -> String {
    "ca".into()
}

fn cert_secret(node: &str) -> String {
    format!("{node}-pem")
}

fn key_secret(node: &str) -> String {
    format!("{node}-key")
}

/// The stack's `secrets`: the CA's certificate once, and each node's certificate and key.
pub fn secrets(topology: &Topology, plan: &Plan) -> Map {
    let file = |path: PathBuf| Yaml::Map(vec![pair("file", s(path.display().to_string()))]);
    let mut out = Map::new();
    if let Some(first) = topology.nodes.first() {
        out.push((
            ca_secret(),
            file(plan.certs.join(&first.name).join("ca.pem")),
        ));
    }
    for node in &topology.nodes {
        let dir = plan.certs.join(&node.name);
        out.push((
            cert_secret(&node.name),
            file(dir.join(format!("{}.pem", node.name))),
        ));
        out.push((
            key_secret(&node.name),
            file(dir.join(format!("{}.key", node.name))),
        ));
    }
    out
}

/// A service's secrets: the CA's certificate and its own certificate and key, nobody else's.
pub fn service_secrets(node: &Node) -> Yaml {
    let secret = |source: String, target: String, mode: Option<u32>| {
        let mut entry = vec![pair("source", s(source)), pair("target", s(target))];
        if let Some(mode) = mode {
            // Written in decimal: YAML readers disagree on octal.
            entry.push(pair("mode", Yaml::Plain(mode.to_string())));
        }
        Yaml::Map(entry)
    };
    Yaml::List(vec![
        secret(ca_secret(), "ca.pem".into(), None),
        secret(cert_secret(&node.name), format!("{}.pem", node.name), None),
        secret(
            key_secret(&node.name),
            format!("{}.key", node.name),
            Some(0o400),
        ),
    ])
}

/// `deploy`: addresses by DNS round robin (no virtual IP in front of a node), started again on
/// failure only until a task of it has served its card (`container::started`: a task started
/// after that would get new addresses that its peers' routes do not follow, and stops), and
/// placed on its host class if it has one.
pub fn deploy(node: &Node, plan: &Plan) -> Yaml {
    let mut deploy = vec![
        pair("endpoint_mode", s("dnsrr")),
        pair(
            "restart_policy",
            Yaml::Map(vec![
                pair("condition", s("on-failure")),
                pair("delay", s("2s")),
                pair("max_attempts", Yaml::Plain(RESTARTS.to_string())),
            ]),
        ),
    ];
    if let Some(host) = plan.placement.get(&node.name) {
        deploy.push(pair(
            "placement",
            Yaml::Map(vec![pair(
                "constraints",
                Yaml::Flow(vec![s(format!("node.labels.{HOST_LABEL} == {host}"))]),
            )]),
        ));
    }
    Yaml::Map(deploy)
}

/// The directory network's entry in a service's `networks`: its alias there.
pub fn directory_attachment(node: &Node) -> (String, Yaml) {
    (
        DIRECTORY.into(),
        Yaml::Map(vec![pair(
            "aliases",
            Yaml::Flow(vec![s(crate::container::directory::alias(&node.name))]),
        )]),
    )
}

/// `container run`'s flags for the directory: its subnet, the node, and where it records that
/// it started.
pub fn directory_flags(node: &Node, plan: &Plan) -> Vec<Yaml> {
    let (subnet, prefix) = plan.directory;
    vec![
        s(format!("--directory={subnet}/{prefix}")),
        s(format!("--node={}", node.name)),
        s(format!("--started-dir={STARTED_DIR}")),
    ]
}

/// The environment every service of a stack has: its service's ID, which Swarm fills in for
/// each task, so a task started again knows whether an earlier one of its service ran.
pub fn service_environment() -> (String, Yaml) {
    pair(crate::container::started::SERVICE_ENV, s("{{.Service.ID}}"))
}

/// A network of the stack: an attachable overlay on the topology's subnet.
pub fn network(subnet: Ipv4Addr, prefix: u8) -> Yaml {
    Yaml::Map(vec![
        pair("driver", s("overlay")),
        pair("attachable", Yaml::Plain("true".into())),
        pair(
            "ipam",
            Yaml::Map(vec![pair(
                "config",
                Yaml::List(vec![Yaml::Map(vec![pair(
                    "subnet",
                    s(format!("{subnet}/{prefix}")),
                )])]),
            )]),
        ),
    ])
}
