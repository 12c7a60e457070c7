//! Link emulation inside one testbed container. A compose network stands for a link or a LAN;
//! every member of the network runs `cdnlab container run` with the network's impairments, so a
//! packet crossing the network is impaired exactly once: on the sender's egress by tc-netem
//! (kernel backend) or on the receiver's ingress by NFQUEUE and `cdnlab-shaper` (userspace
//! backend, for the same reason as in a lab: a flow held on its sender's host collapses under
//! TCP Small Queues). What was set up is kept in a state file so that `cdnlab container link
//! set`, run later by `docker exec`, can change it.

use super::spec::NetSpec;
use crate::lab::links::{
    apply_netem, change_netem, change_shaped, choose_backend_with, ingress_queue_rule,
    update_queue_rule, IPTABLES, IPTABLES_WAIT,
};
use crate::lab::shaper;
use crate::lab::sys::{self, Error, Result};
use crate::lab::{Backend, BackendChoice};
use netem::daemon::{DaemonConfig, QueueSpec, Request, Response};
use netem::{Impairments, ImpairmentsChange};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::Child;

/// Where the container's own files live (state, shaper socket, role config, ready mark).
pub const STATE_DIR: &str = "/run/cdnlab-container";

/// One network of this container, as set up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetState {
    pub name: String,
    pub ifname: String,
    /// The NFQUEUE number (userspace backend).
    pub queue_num: u16,
    pub impairments: Impairments,
    /// Members whose arriving traffic has impairments of its own (`--net-from`), each on a
    /// queue of its own; with any, every queue of the network is always installed, so no
    /// sender's packets fall through to the network's default queue.
    #[serde(default)]
    pub senders: Vec<SenderState>,
    /// The other members' node names.
    #[serde(default)]
    pub peers: Vec<String>,
}

/// One sender of `--net-from` on a network, as set up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SenderState {
    pub addr: std::net::Ipv4Addr,
    pub queue_num: u16,
    pub impairments: Impairments,
}

impl NetState {
    /// The shaper's queue id of one sender on this network.
    fn sender_id(&self, sender: &SenderState) -> String {
        format!("{}<-{}", self.name, sender.addr)
    }
}

/// What `cdnlab container run` set up, for the commands that change it later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerState {
    pub backend: Backend,
    pub nets: Vec<NetState>,
    /// The real network's round trip to each peer (Swarm stacks: measured on the directory
    /// network at start-up), which the emulated links carry on top of their impairments.
    #[serde(default)]
    pub underlay: Vec<Underlay>,
}

/// The real network's round trip to one peer on one emulated network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Underlay {
    pub net: String,
    pub peer: String,
    pub rtt_ms: f64,
}

/// Whether this host is a testbed container whose userspace shaper holds arriving packets on
/// its own ingress: after the kernel stamped their arrival, so a receive stamp here is not when
/// a packet really arrived (plain `ping` shows only the sender's half of the delay). False on
/// a lab's host, whose holds are in the hub, and in a container on the kernel backend.
pub fn stamps_precede_the_hold() -> bool {
    ContainerState::load().is_ok_and(|state| state.stamps_precede_the_hold())
}

pub fn state_dir() -> PathBuf {
    PathBuf::from(STATE_DIR)
}

fn state_path() -> PathBuf {
    state_dir().join("state.json")
}

fn shaper_socket() -> PathBuf {
    state_dir().join("shaper.sock")
}

impl ContainerState {
    /// The container's networks (`nets`, in `--net` order) on the interfaces found for them.
    pub fn new(backend: Backend, nets: &[NetSpec], ifnames: Vec<String>) -> ContainerState {
        // Each network's queue is its index; the senders' queues follow them.
        let mut next_queue = nets.len() as u16;
        ContainerState {
            backend,
            nets: nets
                .iter()
                .zip(ifnames)
                .enumerate()
                .map(|(i, (net, ifname))| NetState {
                    name: net.name.clone(),
                    ifname,
                    queue_num: i as u16,
                    impairments: net.impairments.clone(),
                    senders: net
                        .senders
                        .iter()
                        .map(|(addr, impairments)| {
                            next_queue += 1;
                            SenderState {
                                addr: *addr,
                                queue_num: next_queue - 1,
                                impairments: impairments.clone(),
                            }
                        })
                        .collect(),
                    peers: net.peers.clone(),
                })
                .collect(),
            underlay: Vec::new(),
        }
    }

    /// Whether arrivals are held after the kernel stamps them (the userspace backend's hold is
    /// on this container's ingress).
    fn stamps_precede_the_hold(&self) -> bool {
        self.backend == Backend::Userspace
    }

    pub fn load() -> Result<ContainerState> {
        let path = state_path();
        let text = std::fs::read_to_string(&path).map_err(|e| {
            Error(format!(
                "{}: {e} (is this a container started by `cdnlab container run`?)",
                path.display()
            ))
        })?;
        serde_json::from_str(&text).map_err(|e| Error(format!("{}: {e}", path.display())))
    }

    pub fn save(&self) -> Result<()> {
        let path = state_path();
        let text = serde_json::to_string_pretty(self).map_err(|e| Error(e.to_string()))?;
        crate::atomic_write::write_atomically(&path, text.as_bytes())
            .map_err(|e| Error(e.to_string()))
    }

    fn net_index(&self, name: &str) -> Result<usize> {
        self.nets
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.nets.iter().map(|n| n.name.as_str()).collect();
                Error(format!(
                    "this container is on no network `{name}`; its networks: {}",
                    names.join(", ")
                ))
            })
    }
}

/// The sure test of `sch_netem`, cheap inside a container's own namespace: put a netem qdisc
/// on `lo` and take it off again (the kernel loads the module on demand when it can).
pub fn netem_works() -> bool {
    let added = sys::run(&["tc", "qdisc", "add", "dev", "lo", "root", "netem"], None).is_ok();
    if added {
        let _ = sys::run(&["tc", "qdisc", "del", "dev", "lo", "root"], None);
    }
    added
}

/// Chooses the backend as `--link-backend` asks (`auto`: tc-netem when the kernel has it).
pub fn choose_backend(requested: BackendChoice) -> Result<Backend> {
    choose_backend_with(requested, netem_works)
}

/// Applies every network's impairments; with the userspace backend, first starts the shaper
/// (writing to `output`), which serves every network so later changes need no restart.
pub fn install(state: &ContainerState, seed: u64, output: std::fs::File) -> Result<Option<Child>> {
    match state.backend {
        Backend::Kernel => {
            for net in state.nets.iter().filter(|n| !n.impairments.is_none()) {
                apply_netem(None, &net.ifname, None, &net.impairments)?;
            }
            Ok(None)
        }
        Backend::Userspace => {
            let queue = |id: String, queue_num: u16, impairments: &Impairments| QueueSpec {
                id,
                netns: None,
                queue_num,
                impairments: impairments.clone(),
                seed: seed.wrapping_add(u64::from(queue_num)),
                // A network's catch-all and its senders' rules stay whatever they carry.
                no_rule_when_unimpaired: false,
            };
            let mut queues = Vec::new();
            for net in &state.nets {
                queues.push(queue(net.name.clone(), net.queue_num, &net.impairments));
                for sender in &net.senders {
                    queues.push(queue(
                        net.sender_id(sender),
                        sender.queue_num,
                        &sender.impairments,
                    ));
                }
            }
            let config = DaemonConfig::new(shaper_socket(), queues);
            let child = shaper::spawn(
                &config,
                &state_dir().join("shaper.json"),
                &shaper_socket(),
                output,
                || "  (its messages are in the container's log)".to_string(),
            )?;
            let none = Impairments::default();
            for net in &state.nets {
                if net.senders.is_empty() {
                    update_queue_rule(None, &queue_rule(net), &none, &net.impairments)?;
                    continue;
                }
                // The senders' rules first: the network's own rule catches everyone else.
                for sender in &net.senders {
                    append_queue_rule(&sender_rule(net, sender))?;
                }
                append_queue_rule(&queue_rule(net))?;
            }
            Ok(Some(child))
        }
    }
}

fn queue_rule(net: &NetState) -> String {
    ingress_queue_rule(&net.ifname, false, net.queue_num)
}

fn sender_rule(net: &NetState, sender: &SenderState) -> String {
    format!(
        "-i {} -s {} -j NFQUEUE --queue-num {}",
        net.ifname, sender.addr, sender.queue_num
    )
}

fn append_queue_rule(rule: &str) -> Result<()> {
    let mut argv = vec![IPTABLES];
    argv.extend(IPTABLES_WAIT);
    argv.extend(["-t", "raw", "-A", "PREROUTING"]);
    argv.extend(rule.split(' '));
    sys::run(&argv, None).map(|_| ())
}

/// Changes network `name`'s impairments at run time and saves the state; returns them. The
/// change is checked on the network and each sender first, so one some part cannot take
/// changes nothing; if a step then fails, what the steps before it changed is saved.
pub fn set(
    state: &mut ContainerState,
    name: &str,
    change: &ImpairmentsChange,
) -> Result<Impairments> {
    let index = state.net_index(name)?;
    let new = change.apply_to(&state.nets[index].impairments);
    // The senders' own queues are the userspace backend's; the kernel's one qdisc has none.
    let senders: Vec<Impairments> = match state.backend {
        Backend::Userspace => (state.nets[index].senders.iter())
            .map(|sender| change.apply_to(&sender.impairments))
            .collect(),
        Backend::Kernel => Vec::new(),
    };
    for impairments in std::iter::once(&new).chain(&senders) {
        impairments
            .check()
            .map_err(|e| Error(format!("network `{name}`: {e}; nothing was changed")))?;
    }
    let applied = apply(state, index, &new, senders);
    let saved = state.save();
    applied?;
    saved?;
    Ok(new)
}

/// Takes network `index` to `new`, and its senders (userspace backend) to theirs, recording
/// each step in `state` once it is made.
fn apply(
    state: &mut ContainerState,
    index: usize,
    new: &Impairments,
    senders: Vec<Impairments>,
) -> Result<()> {
    let net = state.nets[index].clone();
    let set = |id: String, impairments: &Impairments| {
        call(&Request::Set {
            id,
            impairments: impairments.clone(),
        })
        .map(|_| ())
    };
    match state.backend {
        Backend::Kernel => change_netem(None, &net.ifname, &net.impairments, new)?,
        // A network whose senders have queues of their own has no queue rule of its own.
        Backend::Userspace if !net.senders.is_empty() => set(net.name.clone(), new)?,
        Backend::Userspace => change_shaped(
            |impairments| set(net.name.clone(), impairments),
            None,
            &queue_rule(&net),
            &net.impairments,
            new,
        )?,
    }
    state.nets[index].impairments = new.clone();
    // The change applies to every sender's traffic on the network.
    for (position, changed) in senders.into_iter().enumerate() {
        set(net.sender_id(&net.senders[position]), &changed)?;
        state.nets[index].senders[position].impairments = changed;
    }
    Ok(())
}

/// Whether a change to network `name` can be made here, changing nothing: this container is on
/// the network, and its shaper (with the userspace backend) answers.
pub fn check(state: &ContainerState, name: &str) -> Result<()> {
    state.net_index(name)?;
    if state.backend == Backend::Userspace {
        call(&Request::Show)?;
    }
    Ok(())
}

fn call(request: &Request) -> Result<Response> {
    shaper::call_socket(&shaper_socket(), "this container", request)
}

/// One line per network: name, interface, impairments and, with the shaper, its counters.
pub fn show(state: &ContainerState) -> Result<String> {
    let counters = match state.backend {
        Backend::Userspace => call(&Request::Show)?.queues.unwrap_or_default(),
        Backend::Kernel => Vec::new(),
    };
    let mut text = format!("backend: {}\n", state.backend.name());
    for net in &state.nets {
        text += &format!("{} ({}): {}", net.name, net.ifname, net.impairments);
        text += &counters_of(&counters, &net.name);
        text.push('\n');
        for sender in &net.senders {
            text += &format!("  from {}: {}", sender.addr, sender.impairments);
            text += &counters_of(&counters, &net.sender_id(sender));
            text.push('\n');
        }
    }
    for u in &state.underlay {
        text += &format!(
            "underlay to {} on {}: {:.3} ms round trip (not emulated: added to the link's)\n",
            u.peer, u.net, u.rtt_ms
        );
    }
    Ok(text)
}

/// `  [packets … queued …]` for the shaper's queue `id`, or nothing without the shaper.
fn counters_of(counters: &[netem::daemon::QueueStatus], id: &str) -> String {
    counters
        .iter()
        .find(|q| q.id == id)
        .map(|queue| {
            format!(
                "  [packets {} lost {} overflowed {} queued {}]",
                queue.stats.packets,
                queue.stats.dropped_loss,
                queue.stats.dropped_queue_full,
                queue.queued
            )
        })
        .unwrap_or_default()
}

/// Makes the state directory, clearing what an earlier start of this container left.
pub fn prepare_state_dir() -> Result<()> {
    let dir = state_dir();
    std::fs::create_dir_all(&dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
    for stale in [
        "ready",
        "state.json",
        "shaper.sock",
        "shaper.json",
        "role.toml",
    ] {
        let _ = std::fs::remove_file(dir.join(stale));
    }
    Ok(())
}
