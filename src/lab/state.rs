//! What a lab created, written down before and while it is created, so that `down` and `clean`
//! remove exactly that — even after the orchestrator or its nodes were killed.

use crate::topology::Topology;
use netem::Impairments;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// Every lab's state lives under this directory (`/run` is a tmpfs: nothing survives a reboot,
/// and neither do namespaces, so the two stay consistent).
pub const STATE_ROOT: &str = "/run/cdnlab";

/// Prefix of every network namespace cdnlab makes: `cdnlab-LAB.NODE`, `cdnlab-LAB.lan.NAME`.
pub const NETNS_PREFIX: &str = "cdnlab-";

/// Which link-emulation backend a lab uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// tc-netem qdiscs on each sender's egress.
    Kernel,
    /// NFQUEUE on each receiver's ingress, scheduled by the `cdnlab-shaper` daemon.
    Userspace,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Kernel => "kernel",
            Backend::Userspace => "userspace",
        }
    }
}

/// A process the lab started, identified by pid and start time so that a recycled pid is
/// never mistaken for ours.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessRecord {
    pub pid: i32,
    /// Field 22 of /proc/PID/stat (clock ticks since boot).
    pub start_time: u64,
}

/// One direction of one segment: traffic sent by `sender` onto `segment`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Direction {
    pub segment: usize,
    /// Index into the segment's members.
    pub member: usize,
    /// Current impairments (updated by `link set`).
    pub impairments: Impairments,
    /// Where the userspace backend queues this direction: the receiving namespace, the
    /// interface packets arrive on, and the NFQUEUE number there.
    pub queue_netns: String,
    pub queue_ifname: String,
    /// Match on the bridge port (`-m physdev --physdev-in`) rather than the interface.
    pub queue_physdev: bool,
    pub queue_num: u16,
    /// Where the kernel backend puts the qdisc: the sender's namespace and interface.
    pub sender_netns: String,
    pub sender_ifname: String,
}

impl Direction {
    /// The name the shaper and `link show` use: `SEGMENT/SENDER`.
    pub fn id(&self, topology: &Topology) -> String {
        let segment = &topology.segments[self.segment];
        let sender = &topology.nodes[segment.members[self.member]].name;
        format!("{}/{}", segment.name, sender)
    }
}

/// The lab's state file, `STATE_ROOT/LAB/state.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabState {
    pub lab: String,
    pub backend: Backend,
    /// Namespaces this lab creates (written before creating them).
    pub namespaces: Vec<String>,
    pub topology: Topology,
    pub directions: Vec<Direction>,
    /// Node name → its running process.
    pub processes: BTreeMap<String, ProcessRecord>,
    pub shaper: Option<ProcessRecord>,
    /// Where clients write results (`CDNLAB_OUT_DIR/NODE`).
    pub out_dir: PathBuf,
    /// False until `up` finished.
    pub ready: bool,
}

pub fn lab_dir(lab: &str) -> PathBuf {
    Path::new(STATE_ROOT).join(lab)
}

pub fn netns_of_node(lab: &str, node: &str) -> String {
    format!("{NETNS_PREFIX}{lab}.{node}")
}

pub fn netns_of_lan(lab: &str, lan: &str) -> String {
    format!("{NETNS_PREFIX}{lab}.lan.{lan}")
}

impl LabState {
    pub fn dir(&self) -> PathBuf {
        lab_dir(&self.lab)
    }

    pub fn logs_dir(&self) -> PathBuf {
        self.dir().join("logs")
    }

    pub fn log_path(&self, node: &str) -> PathBuf {
        self.logs_dir().join(format!("{node}.log"))
    }

    /// The lab CA and each node's certificate for the control plane (`control::Identity`).
    pub fn certs_dir(&self) -> PathBuf {
        self.dir().join("certs")
    }

    pub fn shaper_socket(&self) -> PathBuf {
        self.dir().join("shaper.sock")
    }

    pub fn events_path(&self) -> PathBuf {
        self.dir().join("events.jsonl")
    }

    pub fn netns(&self, node: usize) -> String {
        netns_of_node(&self.lab, &self.topology.nodes[node].name)
    }

    /// Writes the state atomically (write to a temporary file, then rename).
    pub fn save(&self) -> super::sys::Result<()> {
        self.write()
            .map_err(|e| super::sys::Error(format!("saving the state of lab `{}`: {e}", self.lab)))
    }

    fn write(&self) -> io::Result<()> {
        let dir = self.dir();
        std::fs::create_dir_all(&dir)?;
        let tmp = dir.join("state.json.tmp");
        let text = serde_json::to_string_pretty(self).map_err(io::Error::other)?;
        std::fs::write(&tmp, text)?;
        std::fs::rename(tmp, dir.join("state.json"))
    }

    pub fn load(lab: &str) -> io::Result<LabState> {
        let path = lab_dir(lab).join("state.json");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no lab named `{lab}` is up (no {})", path.display()),
                )
            } else {
                io::Error::new(e.kind(), format!("{}: {e}", path.display()))
            }
        })?;
        serde_json::from_str(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })
    }

    /// The current rate (bits/s; `None` unlimited) of what node `sender` sends to node `peer`
    /// over the segment they share; `None` if no segment joins them.
    pub fn egress_rate_bps(&self, sender: &str, peer: &str) -> Option<Option<u64>> {
        let index = |name: &str| self.topology.nodes.iter().position(|n| n.name == name);
        let (s, p) = (index(sender)?, index(peer)?);
        let segment = self
            .topology
            .segments
            .iter()
            .position(|seg| seg.members.contains(&s) && seg.members.contains(&p))?;
        let direction = self.direction_index(segment, s)?;
        Some(self.directions[direction].impairments.rate_bps)
    }

    /// The index of the direction sent by `sender` on `segment`.
    pub fn direction_index(&self, segment: usize, sender: usize) -> Option<usize> {
        self.directions.iter().position(|d| {
            d.segment == segment && self.topology.segments[segment].members[d.member] == sender
        })
    }
}

/// Names of the labs that have a state directory.
pub fn list_labs() -> Vec<String> {
    let mut labs: Vec<String> = std::fs::read_dir(STATE_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    labs.sort();
    labs
}
