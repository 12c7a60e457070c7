//! Link emulation for a lab: which queue or qdisc carries each direction of each segment, and
//! how a change reaches it. Every segment (a link is a LAN of two) is a bridge in the lab's hub
//! namespace joining its members' veths. The kernel backend puts a tc-netem qdisc on the
//! sender's egress; the userspace backend queues the direction where the sender's frames enter
//! the bridge (NFQUEUE, br_netfilter's `physdev` match), and the `cdnlab-shaper` daemon holds
//! each packet until netem would have released it. Held there, a packet has left the sender
//! (crossing into another namespace detached it from the sending socket, so TCP Small Queues
//! does not count it) and has not yet reached the receiver, which stamps it on arrival after
//! the hold: `ping` and every receive timestamp see the configured delay.

use super::state::{netns_of_hub, netns_of_node, Backend, BackendChoice, Direction, LabState};
use super::sys::{self, err, Result};
use crate::topology::Topology;
use netem::Impairments;

/// The iptables binary: nft's `queue` is missing on many kernels (ours among them), the legacy
/// NFQUEUE target is not.
pub const IPTABLES: &str = "iptables-legacy";
/// `-w`: wait (up to 10 s) for the machine-wide xtables lock, which every namespace shares,
/// rather than fail at once while another lab's iptables holds it.
pub const IPTABLES_WAIT: [&str; 2] = ["-w", "10"];

/// Every direction of every segment, with where each backend applies it. The userspace
/// backend's queue numbers are the directions' indices (all queues live in the hub).
pub fn plan_directions(lab: &str, topology: &Topology) -> Vec<Direction> {
    let mut directions = Vec::new();
    for (s, segment) in topology.segments.iter().enumerate() {
        for (m, &sender) in segment.members.iter().enumerate() {
            let queue_num = directions.len() as u16;
            directions.push(Direction {
                segment: s,
                member: m,
                impairments: segment.egress[m].clone(),
                queue_netns: netns_of_hub(lab),
                queue_ifname: hub_port_name(s, m),
                queue_num,
                sender_netns: netns_of_node(lab, &topology.nodes[sender].name),
                sender_ifname: interface_on(topology, sender, s),
            });
        }
    }
    directions
}

/// The most link directions a lab can have: every one is an NFQUEUE number in the hub.
pub const MAX_DIRECTIONS: usize = u16::MAX as usize + 1;

/// The bridge of segment `segment` in the hub namespace.
pub fn hub_bridge_name(segment: usize) -> String {
    format!("s{segment}")
}

/// The hub's bridge port of the segment's `member`-th member (the far end of its veth).
pub fn hub_port_name(segment: usize, member: usize) -> String {
    format!("s{segment}p{member}")
}

/// The name of `node`'s interface on `segment`.
pub fn interface_on(topology: &Topology, node: usize, segment: usize) -> String {
    topology.nodes[node]
        .interfaces
        .iter()
        .find(|i| i.segment == segment)
        .map(|i| i.ifname.clone())
        .unwrap_or_default()
}

/// The iptables rule (after `-A`/`-D PREROUTING`) that queues a direction: the frames its
/// sender puts on the segment's bridge.
fn queue_rule(direction: &Direction) -> String {
    ingress_queue_rule(&direction.queue_ifname, true, direction.queue_num)
}

/// The raw-table PREROUTING rule that hands what arrives on `ifname` (a bridge port when
/// `physdev`) to NFQUEUE `queue_num`.
pub fn ingress_queue_rule(ifname: &str, physdev: bool, queue_num: u16) -> String {
    let matcher = if physdev {
        format!("-m physdev --physdev-in {ifname}")
    } else {
        format!("-i {ifname}")
    };
    format!("{matcher} -j NFQUEUE --queue-num {queue_num}")
}

/// Installs the NFQUEUE rules of every impaired direction, one iptables-restore per namespace.
pub fn install_queue_rules(state: &LabState) -> Result<()> {
    let mut by_netns: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for direction in state.directions.iter().filter(|d| !d.impairments.is_none()) {
        by_netns
            .entry(direction.queue_netns.as_str())
            .or_default()
            .push(format!("-A PREROUTING {}", queue_rule(direction)));
    }
    for (netns, rules) in by_netns {
        let text = format!(
            "*raw\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n{}\nCOMMIT\n",
            rules.join("\n")
        );
        let restore = format!("{IPTABLES}-restore");
        let argv = ["ip", "netns", "exec", netns, &restore, "--wait=10"];
        sys::run(&argv, Some(&text))?;
    }
    Ok(())
}

/// Installs the tc-netem qdisc of every impaired direction (kernel backend).
pub fn install_qdiscs(state: &LabState) -> Result<()> {
    for direction in &state.directions {
        apply_qdisc(direction, None, &direction.impairments)?;
    }
    Ok(())
}

/// Runs the tc commands that take the sender's qdisc from `current` (`None`: no qdisc yet)
/// to `next`, inside the sender's namespace.
fn apply_qdisc(
    direction: &Direction,
    current: Option<&Impairments>,
    next: &Impairments,
) -> Result<()> {
    apply_netem(
        Some(&direction.sender_netns),
        &direction.sender_ifname,
        current,
        next,
    )
}

/// Runs the tc commands that take `ifname`'s root qdisc from `current` (`None`: no netem
/// yet) to `next`, in the named namespace (`None`: this process's own).
pub fn apply_netem(
    netns: Option<&str>,
    ifname: &str,
    current: Option<&Impairments>,
    next: &Impairments,
) -> Result<()> {
    for argv in netem_commands(netns, ifname, current, next)? {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        sys::run(&argv, None)?;
    }
    Ok(())
}

/// The tc command lines [`apply_netem`] runs: `tc [-n NETNS] qdisc ...`.
pub fn netem_commands(
    netns: Option<&str>,
    ifname: &str,
    current: Option<&Impairments>,
    next: &Impairments,
) -> Result<Vec<Vec<String>>> {
    let commands = netem::kernel::netem_apply_argvs(ifname, current, next)
        .map_err(|e| sys::Error(format!("{ifname}: {e}")))?;
    Ok(commands
        .into_iter()
        .map(|argv| {
            let mut full = vec!["tc".to_string()];
            if let Some(netns) = netns {
                full.extend(["-n".to_string(), netns.to_string()]);
            }
            full.extend(argv.into_iter().skip(1));
            full
        })
        .collect())
}

/// Adds or removes a queue rule when a direction goes from unimpaired to impaired or back
/// (an unimpaired direction carries no rule), in the named namespace (`None`: our own).
pub fn update_queue_rule(
    netns: Option<&str>,
    rule: &str,
    old: &Impairments,
    new: &Impairments,
) -> Result<()> {
    let op = match (old.is_none(), new.is_none()) {
        (true, false) => "-A",
        (false, true) => "-D",
        _ => return Ok(()),
    };
    let mut argv: Vec<&str> = Vec::new();
    if let Some(netns) = netns {
        argv.extend(["ip", "netns", "exec", netns]);
    }
    argv.push(IPTABLES);
    argv.extend(IPTABLES_WAIT);
    argv.extend(["-t", "raw", op, "PREROUTING"]);
    argv.extend(rule.split(' '));
    sys::run(&argv, None).map(|_| ())
}

/// Changes one direction's impairments in a running lab, without restarting anything.
pub fn set_direction(state: &mut LabState, index: usize, new: Impairments) -> Result<()> {
    let direction = state.directions[index].clone();
    let old = &direction.impairments;
    match state.backend {
        Backend::Kernel => change_netem(
            Some(&direction.sender_netns),
            &direction.sender_ifname,
            old,
            &new,
        )?,
        Backend::Userspace => {
            let id = direction.id(&state.topology);
            change_shaped(
                |impairments| super::shaper::set(state, &id, impairments),
                Some(&direction.queue_netns),
                &queue_rule(&direction),
                old,
                &new,
            )?;
        }
    }
    state.directions[index].impairments = new;
    Ok(())
}

/// Takes `ifname`'s netem qdisc from `old` to `new` (kernel backend). Only a delete-then-add
/// can fail halfway; then `old` is added afresh, so the link keeps what its state records.
pub fn change_netem(
    netns: Option<&str>,
    ifname: &str,
    old: &Impairments,
    new: &Impairments,
) -> Result<()> {
    let current = (!old.is_none()).then_some(old);
    let changed = apply_netem(netns, ifname, current, new);
    if changed.is_err() && !old.is_none() {
        undo("qdisc", apply_netem(netns, ifname, None, old));
    }
    changed
}

/// Takes a shaper queue from `old` to `new` with `set`, and adds or removes its queue `rule`
/// (userspace backend); if the rule cannot follow, the queue is set back to `old`, so the link
/// keeps what its state records.
pub fn change_shaped(
    set: impl Fn(&Impairments) -> Result<()>,
    netns: Option<&str>,
    rule: &str,
    old: &Impairments,
    new: &Impairments,
) -> Result<()> {
    set(new)?;
    let ruled = update_queue_rule(netns, rule, old, new);
    if ruled.is_err() {
        undo("shaper", set(old));
    }
    ruled
}

/// Logs an undo that failed: the change's own error is the one reported.
fn undo(what: &str, result: Result<()>) {
    if let Err(e) = result {
        tracing::error!("undoing a failed link change in the {what} failed too: {e}");
    }
}

/// Chooses the backend: `auto` takes the kernel's when `sch_netem` is there.
pub fn choose_backend(requested: BackendChoice) -> Result<Backend> {
    choose_backend_with(requested, netem::kernel::netem_available)
}

/// Chooses the backend, asking `netem_available` whether the kernel can run tc-netem.
pub fn choose_backend_with(
    requested: BackendChoice,
    netem_available: impl FnOnce() -> bool,
) -> Result<Backend> {
    match requested {
        BackendChoice::Auto => Ok(if netem_available() {
            Backend::Kernel
        } else {
            Backend::Userspace
        }),
        BackendChoice::Kernel => {
            if netem_available() {
                Ok(Backend::Kernel)
            } else {
                err("--link-backend kernel: this kernel has no sch_netem (tc-netem); use --link-backend userspace or auto")
            }
        }
        BackendChoice::Userspace => Ok(Backend::Userspace),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delay(ms: u64) -> Impairments {
        Impairments {
            delay_ns: ms * 1_000_000,
            ..Impairments::default()
        }
    }

    #[test]
    fn netem_commands_run_in_the_named_namespace_or_our_own() {
        let in_lab = netem_commands(Some("cdnlab-x.a"), "eth0", None, &delay(10)).unwrap();
        assert_eq!(
            in_lab,
            vec![vec![
                "tc",
                "-n",
                "cdnlab-x.a",
                "qdisc",
                "replace",
                "dev",
                "eth0",
                "root",
                "netem",
                "delay",
                "10ms",
                "limit",
                "1000"
            ]]
        );
        // In a container: its own namespace; a qdisc already there is replaced in place.
        let here = netem_commands(None, "eth1", Some(&delay(10)), &delay(250)).unwrap();
        assert_eq!(here.len(), 1);
        assert_eq!(&here[0][..3], ["tc", "qdisc", "replace"]);
        assert!(here[0]
            .join(" ")
            .ends_with("eth1 root netem delay 250ms limit 1000"));
    }

    #[test]
    fn a_queue_rule_matches_the_interface_or_the_bridge_port() {
        assert_eq!(
            ingress_queue_rule("eth2", false, 3),
            "-i eth2 -j NFQUEUE --queue-num 3"
        );
        assert_eq!(
            ingress_queue_rule("p1", true, 1),
            "-m physdev --physdev-in p1 -j NFQUEUE --queue-num 1"
        );
    }
}
