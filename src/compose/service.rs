//! One topology's services, networks and volumes in a compose file.

use super::plan::gateway;
use super::swarm::{self, Plan};
use super::yaml::{pair, s, Map, Yaml};
use super::{runs_program, EnvVars, IMAGE, RESULTS};
use crate::container::spec::impairment_keys;
use crate::topology::{Node, Program, Ready, Topology};

/// Service, network and volume names: the topology's own, after `PROFILE-` for a profile's
/// topology, so several topologies fit in one file. Containers keep the node's name as their
/// hostname and find each other by it (`extra_hosts`: each by the address its lab's
/// `/etc/hosts` has for it, `Node::hosts`).
pub struct Names {
    prefix: String,
}

impl Names {
    pub fn new(profile: Option<&str>) -> Names {
        Names {
            prefix: profile.map(|p| format!("{p}-")).unwrap_or_default(),
        }
    }

    pub fn service(&self, node: &str) -> String {
        format!("{}{node}", self.prefix)
    }

    pub fn network(&self, segment: &str) -> String {
        format!("{}{segment}", self.prefix)
    }

    fn certs(&self) -> String {
        format!("{}certs", self.prefix)
    }

    fn certs_volume(&self, node: &str) -> String {
        format!("{}certs-{node}", self.prefix)
    }

    fn profile(&self) -> Option<String> {
        self.prefix.strip_suffix('-').map(str::to_string)
    }
}

/// The nodes that talk on the control plane: every role gets a certificate.
fn role_nodes(topology: &Topology) -> Vec<&Node> {
    topology
        .nodes
        .iter()
        .filter(|n| matches!(n.program, Program::Role { .. }))
        .collect()
}

/// The services of one topology; with a Swarm `plan`, a stack's (`swarm`).
pub fn services(topology: &Topology, names: &Names, env: &EnvVars, plan: Option<&Plan>) -> Map {
    let mut out = Map::new();
    let roles = role_nodes(topology);
    if !roles.is_empty() && plan.is_none() {
        out.push((names.certs(), certs_service(topology, &roles, names)));
    }
    for node in &topology.nodes {
        let service = node_service(topology, node, names, env, plan);
        out.push((names.service(&node.name), Yaml::Map(service)));
    }
    out
}

/// The one-shot service that issues every role node's certificate into a volume of that
/// node's own, which only it and that node mount: no container holds another node's key.
fn certs_service(topology: &Topology, roles: &[&Node], names: &Names) -> Yaml {
    let mut command = vec![
        s("container"),
        s("certs"),
        s("--dir"),
        s("/certs"),
        s("--lab"),
        s(&topology.name),
    ];
    command.extend(roles.iter().map(|n| s(&n.name)));
    let mut service = vec![pair("image", s(IMAGE))];
    if let Some(profile) = names.profile() {
        service.push(pair("profiles", Yaml::Flow(vec![s(profile)])));
    }
    service.extend([
        pair("network_mode", s("none")),
        pair("restart", s("no")),
        pair(
            "volumes",
            Yaml::List(
                roles
                    .iter()
                    .map(|n| s(format!("{}:/certs/{}", names.certs_volume(&n.name), n.name)))
                    .collect(),
            ),
        ),
        pair("command", Yaml::Flow(command)),
    ]);
    Yaml::Map(service)
}

fn node_service(
    topology: &Topology,
    node: &Node,
    names: &Names,
    env: &EnvVars,
    plan: Option<&Plan>,
) -> Map {
    let is_role = matches!(node.program, Program::Role { .. });
    let runs = runs_program(&node.program);
    let mut service = vec![pair("image", s(IMAGE))];
    if let Some(profile) = names.profile() {
        service.push(pair("profiles", Yaml::Flow(vec![s(profile)])));
    }
    service.extend([
        pair("hostname", s(&node.name)),
        pair("init", Yaml::Plain("true".into())),
        // Link emulation needs NET_ADMIN in the container's own namespace, nothing more.
        pair("cap_add", Yaml::Flow(vec![s("NET_ADMIN")])),
    ]);
    if node.interfaces.len() > 1 {
        service.push(pair(
            "sysctls",
            Yaml::Flow(vec![s("net.ipv4.ip_forward=1")]),
        ));
    }
    if plan.is_none() {
        service.push(pair("restart", s("no")));
        let depends = depends_on(topology, node, names);
        if !depends.is_empty() {
            service.push(pair("depends_on", Yaml::Map(depends)));
        }
    }
    let mut environment = Vec::new();
    if runs {
        environment.extend([
            pair("CDNLAB_LAB", s(&topology.name)),
            pair("CDNLAB_NODE", s(&node.name)),
            pair("CDNLAB_OUT_DIR", s(format!("/results/{}", node.name))),
        ]);
        if is_role {
            let certs = if plan.is_some() {
                swarm::SECRETS_DIR
            } else {
                "/certs"
            };
            environment.push(pair("CDNLAB_CERTS", s(certs)));
        }
        environment.extend(node.env.iter().map(|(k, v)| pair(k, s(env.text(v)))));
    }
    if plan.is_some() {
        environment.push(swarm::service_environment());
    }
    if !environment.is_empty() {
        service.push(pair("environment", Yaml::Map(environment)));
    }
    // In a stack every node records in the results directory that it started.
    let mut volumes = Vec::new();
    if runs || plan.is_some() {
        volumes.push(Yaml::Str(format!("{RESULTS}/{}:/results", topology.name)));
    }
    if is_role && plan.is_none() {
        volumes.push(s(format!("{}:/certs:ro", names.certs_volume(&node.name))));
    }
    if !volumes.is_empty() {
        service.push(pair("volumes", Yaml::List(volumes)));
    }
    if plan.is_some() {
        // Every node serves its card on the control plane, so every node has a certificate.
        service.push(pair("secrets", swarm::service_secrets(node)));
    }
    // Swarm puts a task in its peers' DNS only once it is healthy, and a container that
    // waits for its peers' cards would never be: in a stack the cards' `ready` gates start-up
    // instead, and the task has no healthcheck.
    if plan.is_none() {
        // Setting up links and routes takes a few seconds on a loaded machine; the program then
        // gets its `ready_timeout`.
        let retries = node.ready_timeout_ns.div_ceil(1_000_000_000) + 30;
        service.push(pair(
            "healthcheck",
            Yaml::Map(vec![
                pair(
                    "test",
                    Yaml::Flow(vec![s("CMD"), s("cdnlab"), s("container"), s("ready")]),
                ),
                pair("interval", s("1s")),
                pair("timeout", s("2s")),
                pair("retries", Yaml::Plain(retries.to_string())),
            ]),
        ));
        let hosts = node
            .hosts
            .iter()
            .map(|h| s(format!("{}:{}", h.name, h.addr)));
        service.push(pair("extra_hosts", Yaml::Flow(hosts.collect())));
    }
    let mut networks: Map = node
        .interfaces
        .iter()
        .map(|iface| {
            let segment = &topology.segments[iface.segment];
            // Swarm picks the address: the container learns its peers' from the directory.
            let address = match plan {
                None => vec![pair("ipv4_address", s(iface.addr.to_string()))],
                Some(_) => Vec::new(),
            };
            pair(&names.network(&segment.name), Yaml::Map(address))
        })
        .collect();
    if plan.is_some() {
        networks.push(swarm::directory_attachment(node));
    }
    service.push(pair("networks", Yaml::Map(networks)));
    service.push(pair(
        "command",
        Yaml::List(command(topology, node, names, env, plan)),
    ));
    if let Some(plan) = plan {
        service.push(pair("deploy", swarm::deploy(node, plan)));
    }
    service
}

/// The nodes that must be ready before `node`'s program starts: the plain routers for a role
/// (their paths exist, as in a lab, where every link is up before any program starts); every
/// other node for a client; none for a router.
fn prerequisites<'a>(topology: &'a Topology, node: &Node) -> Vec<&'a Node> {
    if !runs_program(&node.program) {
        return Vec::new();
    }
    topology
        .nodes
        .iter()
        .filter(|other| {
            let wanted = if node.client {
                !other.client
            } else {
                !runs_program(&other.program)
            };
            wanted && other.name != node.name
        })
        .collect()
}

/// `depends_on`: the certificates for a role, and the prerequisites healthy.
fn depends_on(topology: &Topology, node: &Node, names: &Names) -> Map {
    let mut depends = Map::new();
    if matches!(node.program, Program::Role { .. }) {
        depends.push((
            names.certs(),
            Yaml::Map(vec![pair("condition", s("service_completed_successfully"))]),
        ));
    }
    let healthy = || Yaml::Map(vec![pair("condition", s("service_healthy"))]);
    for other in prerequisites(topology, node) {
        depends.push((names.service(&other.name), healthy()));
    }
    depends
}

/// The node that has `addr` on one of its segments, and that segment.
fn holder(topology: &Topology, addr: std::net::Ipv4Addr) -> Option<(&Node, usize)> {
    topology.nodes.iter().find_map(|n| {
        n.interfaces
            .iter()
            .find(|i| i.addr == addr)
            .map(|i| (n, i.segment))
    })
}

/// `cdnlab container run` with the node's networks, routes and program; in a stack, peers
/// are named where a compose file gives their addresses.
fn command(
    topology: &Topology,
    node: &Node,
    names: &Names,
    env: &EnvVars,
    plan: Option<&Plan>,
) -> Vec<Yaml> {
    let mut argv = vec![s("container"), s("run")];
    for iface in &node.interfaces {
        argv.extend(net_flags(
            topology,
            iface.segment,
            node,
            names,
            plan.is_some(),
        ));
    }
    for route in &node.routes {
        let via = match (plan, holder(topology, route.via)) {
            (Some(_), Some((gateway, _))) => gateway.name.clone(),
            _ => route.via.to_string(),
        };
        argv.push(s(format!(
            "--route={}/{}={via}",
            route.dst, route.prefix_len
        )));
    }
    if let Some(plan) = plan {
        argv.extend(swarm::directory_flags(node, plan));
        // Names cost a card each at start-up: in a stack, the nodes that run a program are
        // named in the containers that run one, not every node in every container.
        let hosts = node.hosts.iter().filter(|_| runs_program(&node.program));
        for host in hosts {
            if let Some((named, segment)) = holder(topology, host.addr) {
                if runs_program(&named.program) {
                    let network = names.network(&topology.segments[segment].name);
                    argv.push(s(format!("--host={}@{network}", host.name)));
                }
            }
        }
        let waits: Vec<&str> = prerequisites(topology, node)
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        if !waits.is_empty() {
            argv.push(s(format!("--wait-for={}", waits.join(","))));
        }
    }
    if let Some(Ready::Tcp(port)) = node.ready {
        argv.push(s(format!("--ready-tcp={port}")));
        argv.push(s(format!(
            "--ready-timeout={}s",
            node.ready_timeout_ns.div_ceil(1_000_000_000)
        )));
    }
    match &node.program {
        Program::None => {}
        Program::Role { role, config } => {
            argv.push(s(format!("--role={role}")));
            argv.push(s("--role-config"));
            let text = toml::to_string(config).expect("a TOML table serializes");
            argv.push(Yaml::text(env.text(&text)));
        }
        Program::Command { argv: program } => {
            argv.push(s("--"));
            argv.extend(program.iter().map(|a| s(env.text(a))));
        }
    }
    argv
}

/// `--net` with what this member sends onto the segment, and `--net-from` for each member
/// that sends with other impairments (the userspace backend holds arriving packets as their
/// sender's impairments say).
fn net_flags(
    topology: &Topology,
    index: usize,
    node: &Node,
    names: &Names,
    by_name: bool,
) -> Vec<Yaml> {
    let segment = &topology.segments[index];
    let network = names.network(&segment.name);
    let address_on = |member: usize| {
        topology.nodes[member]
            .interfaces
            .iter()
            .find(|iface| iface.segment == index)
            .map(|iface| iface.addr)
            .expect("a member has an address on its segment")
    };
    let me = segment
        .members
        .iter()
        .position(|&m| topology.nodes[m].name == node.name)
        .expect("the node is a member of its segment");
    let keys = |i: usize| {
        let keys = impairment_keys(&segment.egress[i]);
        if keys.is_empty() {
            keys
        } else {
            format!(",{keys}")
        }
    };
    let peers: Vec<&str> = segment
        .members
        .iter()
        .filter(|&&m| m != segment.members[me])
        .map(|&m| topology.nodes[m].name.as_str())
        .collect();
    let mut flags = vec![s(format!(
        "--net={network}={}/{},peers={}{}",
        segment.subnet,
        segment.prefix_len,
        peers.join("+"),
        keys(me)
    ))];
    for (i, &member) in segment.members.iter().enumerate() {
        if i != me && segment.egress[i] != segment.egress[me] {
            let sender = if by_name {
                topology.nodes[member].name.clone()
            } else {
                address_on(member).to_string()
            };
            flags.push(s(format!("--net-from={network}={sender}{}", keys(i))));
        }
    }
    flags
}

pub fn networks(topology: &Topology, names: &Names, plan: Option<&Plan>) -> Map {
    let mut out: Map = topology
        .segments
        .iter()
        .map(|segment| {
            if plan.is_some() {
                let network = swarm::network(segment.subnet, segment.prefix_len);
                return (names.network(&segment.name), network);
            }
            let config = Yaml::Map(vec![
                pair(
                    "subnet",
                    s(format!("{}/{}", segment.subnet, segment.prefix_len)),
                ),
                pair("gateway", s(gateway(segment.subnet).to_string())),
            ]);
            (
                names.network(&segment.name),
                // Not `internal`: Docker drops forwarded packets on an internal network whose
                // source or destination is outside its subnet, which is every routed hop.
                Yaml::Map(vec![pair(
                    "ipam",
                    Yaml::Map(vec![pair("config", Yaml::List(vec![config]))]),
                )]),
            )
        })
        .collect();
    if let Some(plan) = plan {
        let (subnet, prefix) = plan.directory;
        out.push((swarm::DIRECTORY.into(), swarm::network(subnet, prefix)));
    }
    out
}

/// The certificates' volumes (a stack's certificates are secrets instead).
pub fn volumes(topology: &Topology, names: &Names, plan: Option<&Plan>) -> Map {
    if plan.is_some() {
        return Map::new();
    }
    role_nodes(topology)
        .iter()
        .map(|n| (names.certs_volume(&n.name), Yaml::Map(Vec::new())))
        .collect()
}
