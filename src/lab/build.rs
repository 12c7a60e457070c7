//! `cdnlab up`: namespaces, links, addresses, routes, names, link emulation and node processes,
//! in that order. Any failure (or Ctrl-C) tears down what was made and reports the cause.

use super::links::{self, hub_bridge_name, hub_port_name, IPTABLES};
use super::process;
use super::rtnetlink::{self, Request};
use super::state::{
    lab_dir, netns_of_hub, netns_of_node, Backend, BackendChoice, LabState, CERTS, NETNS_PREFIX,
};
use super::sys::{self, err, Result};
use super::{interrupt, shaper, teardown};
use crate::role_configs;
use crate::roles::ROLES;
use crate::topology::{Node, Program, Topology};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub struct UpOptions {
    pub link_backend: BackendChoice,
    /// Where clients write results; defaults to the lab's state directory.
    pub out_dir: Option<PathBuf>,
    /// Seeds the link emulation's random numbers (loss, jitter).
    pub seed: u64,
}

/// Checks what `up` needs before anything is created.
fn preflight(topology: &Topology, backend: Backend) -> Result<()> {
    if !sys::is_root() {
        return err("cdnlab needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces; run it with sudo. Nothing was created.");
    }
    let mut tools = vec!["ip"];
    match backend {
        Backend::Kernel => tools.push("tc"),
        Backend::Userspace => tools.extend([IPTABLES, "iptables-legacy-restore"]),
    }
    for tool in tools {
        if !sys::on_path(tool) {
            let package = if tool.starts_with("iptables") {
                "iptables"
            } else {
                "iproute2"
            };
            return err(format!(
                "`{tool}` is not installed (Debian package `{package}`); the {} link backend needs it. Nothing was created.",
                backend.name()
            ));
        }
    }
    let directions: usize = topology.segments.iter().map(|s| s.members.len()).sum();
    if directions > links::MAX_DIRECTIONS {
        return err(format!(
            "the topology has {directions} link directions (each member of each link or LAN sends one); at most {} fit in one lab. Nothing was created.",
            links::MAX_DIRECTIONS
        ));
    }
    let bin_dir = sys::bin_dir()?;
    for node in &topology.nodes {
        if let Program::Role { role, .. } = &node.program {
            if !ROLES.contains(&role.as_str()) || !bin_dir.join(role).is_file() {
                return err(format!(
                    "node {}: the role binary `{role}` is not in {} (build the workspace). Nothing was created.",
                    node.name,
                    bin_dir.display()
                ));
            }
        }
    }
    if let Some(problem) = role_configs::check_topology(topology).first() {
        return err(format!("{problem}. Nothing was created."));
    }
    let lab = &topology.name;
    let prefix = format!("{NETNS_PREFIX}{lab}.");
    if let Some(stale) = existing_netns()
        .into_iter()
        .find(|n| n.starts_with(&prefix))
    {
        return err(format!(
            "namespace {stale} of an earlier lab `{lab}` is still there; run `cdnlab clean` first"
        ));
    }
    Ok(())
}

/// Names in /run/netns.
pub fn existing_netns() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

/// Brings the lab up and returns its state; on failure nothing is left behind.
pub fn up(topology: Topology, options: &UpOptions) -> Result<LabState> {
    let backend = links::choose_backend(options.link_backend)?;
    preflight(&topology, backend)?;
    let lab = topology.name.clone();
    let mut namespaces: Vec<String> = topology
        .nodes
        .iter()
        .map(|n| netns_of_node(&lab, &n.name))
        .collect();
    namespaces.push(netns_of_hub(&lab));
    let mut state = LabState {
        directions: links::plan_directions(&lab, &topology),
        out_dir: match &options.out_dir {
            Some(dir) => dir.clone(),
            None => lab_dir(&lab)?.join("out"),
        },
        lab,
        backend,
        namespaces,
        topology,
        processes: BTreeMap::new(),
        shaper: None,
        ready: false,
        owner: Some(sys::own_process()?),
    };
    // The state is written before anything exists, so `down` and `clean` can always find it;
    // creating it claims the lab's name (a second `up` of the name stops here).
    state.create()?;
    match build(&mut state, options.seed) {
        Ok(()) => Ok(state),
        Err(e) => {
            let _ = teardown::teardown(&state);
            Err(e)
        }
    }
}

fn build(state: &mut LabState, seed: u64) -> Result<()> {
    let topology = state.topology.clone();
    let lab = state.lab.clone();
    sys::ip_batch(
        None,
        &state
            .namespaces
            .iter()
            .map(|ns| format!("netns add {ns}"))
            .collect::<Vec<_>>(),
    )?;
    interrupt::check()?;
    let hub = netns_of_hub(&lab);
    for ns in state.namespaces.clone() {
        let bridge = ns == hub && state.backend == Backend::Userspace;
        sys::in_netns(&ns, move || {
            for (key, value) in [
                ("net/ipv4/ip_forward", "1"),
                ("net/ipv4/conf/all/rp_filter", "0"),
                ("net/ipv4/conf/default/rp_filter", "0"),
                ("net/ipv6/conf/all/disable_ipv6", "1"),
                ("net/ipv6/conf/default/disable_ipv6", "1"),
            ] {
                sys::write_sysctl(key, value)?;
            }
            if bridge {
                // Bridged frames must pass iptables for the segments' queues to see them.
                sys::write_sysctl("net/bridge/bridge-nf-call-iptables", "1")?;
            }
            Ok(())
        })?;
    }
    interrupt::check()?;
    sys::ip_batch(None, &link_commands(&lab, &topology))?;
    interrupt::check()?;
    for (n, node) in topology.nodes.iter().enumerate() {
        let requests = node_requests(node);
        let ns = state.netns(n);
        sys::in_netns(&ns, move || rtnetlink::apply(&requests))
            .map_err(|e| sys::Error(format!("configuring {ns}: {e}")))?;
        interrupt::check()?;
    }
    sys::ip_batch(Some(&hub), &hub_commands(&topology))?;
    interrupt::check()?;
    write_hosts(state)?;
    let names: Vec<&str> = topology.nodes.iter().map(|n| n.name.as_str()).collect();
    crate::control::issue_lab_certs(&state.subdir(CERTS)?, &lab, &names)
        .map_err(|e| sys::Error(format!("issuing the lab's certificates: {e}")))?;
    match state.backend {
        Backend::Kernel => links::install_qdiscs(state)?,
        Backend::Userspace => {
            let shaper = shaper::start(state, seed)?;
            let recorded = state.update(|state| {
                state.shaper = Some(shaper.clone());
                Ok(())
            });
            if let Err(e) = recorded {
                // Unrecorded, no teardown would find it.
                process::stop_processes(&[shaper]);
                return Err(e);
            }
            links::install_queue_rules(state)?;
        }
    }
    interrupt::check()?;
    let mut children = Vec::new();
    for n in 0..topology.nodes.len() {
        if !topology.nodes[n].client {
            children.push((n, process::start_node(state, n)?));
        }
    }
    for (n, child) in children.iter_mut() {
        process::wait_ready(state, *n, child)?;
    }
    state.update(|state| {
        state.ready = true;
        Ok(())
    })
}

/// What a node's namespace needs once its veths are in: every interface up with its address,
/// then the routes through them.
fn node_requests(node: &Node) -> Vec<Request> {
    let mut requests = vec![Request::LinkUp {
        ifname: "lo".into(),
    }];
    for iface in &node.interfaces {
        requests.push(Request::Addr {
            ifname: iface.ifname.clone(),
            addr: iface.addr,
            prefix_len: iface.prefix_len,
        });
        requests.push(Request::LinkUp {
            ifname: iface.ifname.clone(),
        });
    }
    requests.extend(node.routes.iter().map(|route| Request::Route {
        ifname: route.ifname.clone(),
        dst: route.dst,
        prefix_len: route.prefix_len,
        via: route.via,
    }));
    requests
}

/// The root namespace's `ip -batch` lines that create every segment's bridge in the hub and
/// every member's veth from its node to the hub (both ends placed straight in their
/// namespaces, so nothing of the lab ever sits in the root namespace).
fn link_commands(lab: &str, topology: &Topology) -> Vec<String> {
    let hub = netns_of_hub(lab);
    let mut lines = Vec::new();
    for (s, segment) in topology.segments.iter().enumerate() {
        lines.push(format!(
            "link add {} netns {hub} type bridge",
            hub_bridge_name(s)
        ));
        for (m, &member) in segment.members.iter().enumerate() {
            lines.push(format!(
                "link add {} netns {} type veth peer name {} netns {hub}",
                links::interface_on(topology, member, s),
                netns_of_node(lab, &topology.nodes[member].name),
                hub_port_name(s, m)
            ));
        }
    }
    lines
}

/// The hub's `ip -batch` lines: every bridge up with its ports.
fn hub_commands(topology: &Topology) -> Vec<String> {
    let mut lines = vec!["link set lo up".to_string()];
    for (s, segment) in topology.segments.iter().enumerate() {
        lines.push(format!("link set {} up", hub_bridge_name(s)));
        for m in 0..segment.members.len() {
            let port = hub_port_name(s, m);
            lines.push(format!("link set {port} master {}", hub_bridge_name(s)));
            lines.push(format!("link set {port} up"));
        }
    }
    lines
}

/// Every node's /etc/hosts (mounted by `ip netns exec`) names every node, each by the address
/// that node reaches it by (`Node::hosts`).
fn write_hosts(state: &LabState) -> Result<()> {
    for (n, node) in state.topology.nodes.iter().enumerate() {
        let mut text = String::from("127.0.0.1\tlocalhost\n");
        for entry in &node.hosts {
            text += &format!("{}\t{}\n", entry.addr, entry.name);
        }
        let dir = PathBuf::from("/etc/netns").join(state.netns(n));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("hosts"), &text)?;
    }
    Ok(())
}
