//! What a lab created, written down before and while it is created, so that `down` and `clean`
//! remove exactly that — even after the orchestrator or its nodes were killed.

use super::file_lock::FileLock;
use super::sys::{self, Error, Result};
use crate::topology::{check_lab_name, Topology};
use netem::Impairments;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Every lab's state lives under this directory (`/run` is a tmpfs: nothing survives a reboot,
/// and neither do namespaces, so the two stay consistent).
pub const STATE_ROOT: &str = "/run/cdnlab";

/// Prefix of every network namespace cdnlab makes: `cdnlab-LAB.NODE` and the lab's hub,
/// `cdnlab-LAB.hub.segments`.
pub const NETNS_PREFIX: &str = "cdnlab-";

/// Which link-emulation backend a lab uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// tc-netem qdiscs on each sender's egress.
    Kernel,
    /// NFQUEUE on each segment's bridge in the lab's hub namespace, scheduled by the
    /// `cdnlab-shaper` daemon.
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

/// The backend `--link-backend` asks for: one of the two, or whichever the kernel allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// tc-netem when the kernel has `sch_netem`, the userspace shaper otherwise.
    Auto,
    /// tc-netem in the kernel (fails without `sch_netem`).
    Kernel,
    /// The userspace shaper (NFQUEUE and the `cdnlab-shaper` daemon).
    Userspace,
}

impl BackendChoice {
    /// The flag's value, for a `cdnlab` command line this one starts.
    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Kernel => "kernel",
            BackendChoice::Userspace => "userspace",
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
    /// Where the userspace backend queues this direction: the hub namespace, the bridge port
    /// the sender's frames enter there, and the NFQUEUE number.
    pub queue_netns: String,
    pub queue_ifname: String,
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

/// The lock a program holds while it owns namespaces of lab `lab` without writing lab state
/// (`bench http`): `clean` keeps such a lab while the lock is held. Beside [`STATE_ROOT`], not
/// in it, so that `clean` removing the state root never takes a held lock's file.
pub fn stateless_owner_lock(lab: &str) -> PathBuf {
    PathBuf::from(format!("{STATE_ROOT}-{lab}.lock"))
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
    /// The `cdnlab` process that is making the lab (`up`) or running it (`run`); `None` once
    /// `up` has handed the lab over to the user. A recorded owner that is gone means the lab
    /// was left behind by a killed `cdnlab`, and `clean` may remove it; a live owner's lab is
    /// not a leftover.
    #[serde(default)]
    pub owner: Option<ProcessRecord>,
}

/// The state directory of lab `lab`. The name is checked first, so the path is always one
/// level below [`STATE_ROOT`]: a name like `/`, `..` or `a/b` is an error naming the rule.
pub fn lab_dir(lab: &str) -> Result<PathBuf> {
    check_lab_name(lab).map_err(Error)?;
    Ok(Path::new(STATE_ROOT).join(lab))
}

/// The file whose lock serialises every read-modify-write of a lab's state.
pub(crate) const LOCK_FILE: &str = "state.lock";
const STATE_FILE: &str = "state.json";
/// The nodes' and the shaper's logs, in the lab's state directory.
pub const LOGS: &str = "logs";
/// The lab CA and each node's certificate for the control plane (`control::Identity`), in
/// the lab's state directory.
pub const CERTS: &str = "certs";

pub fn netns_of_node(lab: &str, node: &str) -> String {
    format!("{NETNS_PREFIX}{lab}.{node}")
}

/// The lab's hub: one bridge per link or LAN, joining the veths of its members (a name with a
/// dot, so no node's namespace can have it).
pub fn netns_of_hub(lab: &str) -> String {
    format!("{NETNS_PREFIX}{lab}.hub.segments")
}

impl LabState {
    /// The lab's state directory (`self.lab` was checked when the state was made or loaded).
    pub fn dir(&self) -> PathBuf {
        Path::new(STATE_ROOT).join(&self.lab)
    }

    pub fn logs_dir(&self) -> PathBuf {
        self.dir().join(LOGS)
    }

    pub fn log_path(&self, node: &str) -> PathBuf {
        self.logs_dir().join(format!("{node}.log"))
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

    /// Creates the lab's state directory and writes the first state. Creating the directory is
    /// the lab's claim on its name: of two `up`s of one name, exactly one creates it; the other
    /// gets an error and touches nothing. The directory is private (0700): the state carries
    /// the topology's `env` values and the nodes' keys.
    pub fn create(&self) -> Result<()> {
        let dir = lab_dir(&self.lab)?;
        let mut made = Err(io::Error::from(io::ErrorKind::NotFound));
        // A `clean` removes the state root when it has emptied it: make it again, a few times.
        for _ in 0..3 {
            std::fs::create_dir_all(STATE_ROOT)
                .map_err(|e| Error(format!("creating {STATE_ROOT}: {e}")))?;
            made = std::fs::DirBuilder::new().mode(0o700).create(&dir);
            if !matches!(&made, Err(e) if e.kind() == io::ErrorKind::NotFound) {
                break;
            }
        }
        match made {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return sys::err(format!(
                    "lab `{lab}` is already up (state in {}); run `cdnlab down {lab}` first, or pick another --name",
                    dir.display(),
                    lab = self.lab
                ))
            }
            Err(e) => return sys::err(format!("creating {}: {e}", dir.display())),
        }
        let _lock = FileLock::wait_for(&dir.join(LOCK_FILE))?;
        self.write()
    }

    /// Applies `change` to the lab's current state and saves it, holding the lab's state lock
    /// throughout: the state is first re-read from disk, so a change made meanwhile by another
    /// process (`link set` while `run` plays its timeline) is kept, not overwritten. The state
    /// is saved even if `change` fails: a change records each step in the state once the
    /// system has taken it, so a change that fails halfway (the second direction of a link)
    /// leaves the steps it made recorded, not applied and forgotten. A lab taken down
    /// meanwhile is an error: nothing is changed, and no state is written back.
    pub fn update<T>(&mut self, change: impl FnOnce(&mut LabState) -> Result<T>) -> Result<T> {
        let _lock = state_lock(&self.dir())?.ok_or_else(|| self.gone())?;
        *self = LabState::load(&self.lab).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => self.gone(),
            _ => Error(e.to_string()),
        })?;
        let changed = change(self);
        let saved = self.write();
        match (changed, saved) {
            (Ok(value), Ok(())) => Ok(value),
            (Err(e), Ok(())) | (Ok(_), Err(e)) => Err(e),
            (Err(e), Err(unsaved)) => Err(Error(format!("{e}; {unsaved}"))),
        }
    }

    /// Makes directory `relative` inside the lab's state directory (private, 0700), one level
    /// at a time, each unless it is there, and returns its path. Never the state directory
    /// itself: a lab taken down meanwhile (a `down` racing an `up`) stays down, rather than
    /// coming back as a directory that no lock or state file proves to be a lab's, which
    /// nothing would then remove.
    pub fn subdir(&self, relative: impl AsRef<Path>) -> Result<PathBuf> {
        let mut path = self.dir();
        for part in relative.as_ref().components() {
            let std::path::Component::Normal(part) = part else {
                return sys::err(format!(
                    "{} is not a plain path inside the lab's directory",
                    relative.as_ref().display()
                ));
            };
            path.push(part);
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(self.gone()),
                Err(e) => return sys::err(format!("creating {}: {e}", path.display())),
            }
        }
        Ok(path)
    }

    fn gone(&self) -> Error {
        Error(format!("lab `{}` is not up: it was taken down", self.lab))
    }

    /// Writes the state atomically (write to a temporary file, then rename).
    fn write(&self) -> Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(|e| Error(e.to_string()))?;
        crate::atomic_write::write_atomically(&self.dir().join(STATE_FILE), text.as_bytes())
            .map_err(|e| Error(format!("saving the state of lab `{}`: {e}", self.lab)))
    }

    /// Reads lab `lab`'s state; the name is checked first.
    pub fn load(lab: &str) -> io::Result<LabState> {
        let dir = lab_dir(lab).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.0))?;
        let path = dir.join(STATE_FILE);
        check_private(&dir)?;
        let text = crate::regular_file::read_regular(&path, MAX_STATE).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no lab named `{lab}` is up (no {})", path.display()),
                )
            } else {
                io::Error::new(e.kind(), format!("{}: {e}", path.display()))
            }
        })?;
        let state: LabState = serde_json::from_str(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })?;
        if state.lab != lab {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: names lab `{}`, not `{lab}`", path.display(), state.lab),
            ));
        }
        state.check().map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })?;
        Ok(state)
    }

    /// Whether the state holds together before anything indexes into it or signals what it
    /// records: every index points inside the topology, and every process is one that could
    /// be ours (pid 0 or 1 would signal a whole process group or init's).
    fn check(&self) -> std::result::Result<(), String> {
        self.topology.check_indices()?;
        for d in &self.directions {
            let members = self
                .topology
                .segments
                .get(d.segment)
                .map(|s| s.members.len());
            if members.is_none_or(|n| d.member >= n) {
                return Err(format!(
                    "a direction names member {} of segment {}, which does not exist",
                    d.member, d.segment
                ));
            }
        }
        let records = (self.processes.iter())
            .map(|(node, p)| (node.as_str(), p))
            .chain(self.shaper.iter().map(|p| ("the shaper", p)))
            .chain(self.owner.iter().map(|p| ("the owner", p)));
        for (whose, record) in records {
            if record.pid <= 1 {
                return Err(format!("the process of {whose} has pid {}", record.pid));
            }
        }
        Ok(())
    }

    /// True if a `cdnlab` process owns the lab and is still running.
    pub fn owner_alive(&self) -> bool {
        self.owner
            .as_ref()
            .is_some_and(|o| sys::process_alive(o.pid, o.start_time))
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

/// The largest state file read: a 1000-node lab's is a few MB.
const MAX_STATE: u64 = 64 << 20;

/// Refuses a state directory another user owns or could write: root acts on what the state
/// says (namespaces, interfaces, pids, commands), so only what root wrote may say it. One that
/// does not exist is left to the read, which names it.
fn check_private(dir: &Path) -> io::Result<()> {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return Ok(());
    };
    if !super::sys::private_dir(&meta) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a directory of this user's that only it can write; refusing its state",
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Takes the state lock of the lab whose state directory is `dir` (`DIR/state.lock`), waiting
/// for whoever holds it; `None` if the lab has no lock file, or was taken down meanwhile. The
/// file is never created here: only `create` makes it, so a lab being removed stays removed.
pub fn state_lock(dir: &Path) -> Result<Option<FileLock>> {
    FileLock::wait_for_existing(&dir.join(LOCK_FILE))
}

/// True if `dir` is provably a lab's state directory: a real directory (not a link) directly
/// inside a real [`STATE_ROOT`], holding the lock or state file every lab writes first.
/// Removal touches nothing else.
pub fn is_lab_dir(dir: &Path) -> bool {
    let real_dir = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    let inside_root = match (
        std::fs::canonicalize(STATE_ROOT),
        std::fs::canonicalize(dir),
    ) {
        (Ok(root), Ok(real)) => real.parent() == Some(root.as_path()),
        _ => false,
    };
    real_dir(Path::new(STATE_ROOT))
        && real_dir(dir)
        && inside_root
        && (dir.join(LOCK_FILE).is_file() || dir.join(STATE_FILE).is_file())
}

/// Names of the labs that have a state directory (entries that are not lab names are ignored).
pub fn list_labs() -> Vec<String> {
    let mut labs: Vec<String> = std::fs::read_dir(STATE_ROOT)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| check_lab_name(name).is_ok())
        .collect();
    labs.sort();
    labs
}

/// Labs left behind by a `cdnlab` that was killed: their recorded owner is gone.
pub fn abandoned_labs() -> Vec<(String, ProcessRecord)> {
    list_labs()
        .into_iter()
        .filter_map(|lab| {
            let state = LabState::load(&lab).ok()?;
            let owner = state.owner.clone()?;
            (!state.owner_alive()).then_some((lab, owner))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::LoadOptions;

    fn state() -> LabState {
        let topology = crate::topology::parse(
            "name = \"t\"\n[nodes.a]\n[nodes.b]\n[[links]]\nendpoints = [\"a\", \"b\"]\n",
            "t.toml",
            &LoadOptions::default(),
        )
        .unwrap();
        let direction = |member| Direction {
            segment: 0,
            member,
            impairments: Impairments::default(),
            queue_netns: String::new(),
            queue_ifname: String::new(),
            queue_num: 0,
            sender_netns: String::new(),
            sender_ifname: String::new(),
        };
        LabState {
            lab: "t".into(),
            backend: Backend::Userspace,
            namespaces: vec![],
            topology,
            directions: vec![direction(0), direction(1)],
            processes: BTreeMap::from([(
                "a".to_string(),
                ProcessRecord {
                    pid: 4242,
                    start_time: 1,
                },
            )]),
            shaper: None,
            out_dir: PathBuf::new(),
            ready: true,
            owner: None,
        }
    }

    /// A directory inside a lab taken down is an error, and does not make the lab's state
    /// directory again.
    #[test]
    fn a_subdir_of_a_lab_taken_down_is_an_error_and_makes_nothing() {
        let mut gone = state();
        gone.lab = "t-never-up-subdir".into();
        let refused = gone.subdir(LOGS).unwrap_err();
        assert!(refused.0.contains("was taken down"), "{refused}");
        assert!(!gone.dir().exists());
    }

    /// A state file that does not hold together is refused before anything indexes into it
    /// or signals a process it names.
    #[test]
    fn a_state_whose_indices_or_pids_are_off_is_refused() {
        assert_eq!(state().check(), Ok(()));
        let mut off = state();
        off.directions[1].member = 2;
        assert!(off.check().unwrap_err().contains("member 2 of segment 0"));
        let mut off = state();
        off.topology.segments[0].members = vec![0, 5];
        assert!(off.check().unwrap_err().contains("names node 5"));
        let mut off = state();
        off.topology.nodes[1].interfaces[0].segment = 9;
        assert!(off.check().unwrap_err().contains("names segment 9"));
        for pid in [1, 0, -1] {
            let mut off = state();
            off.owner = Some(ProcessRecord { pid, start_time: 1 });
            let error = off.check().unwrap_err();
            assert!(
                error.contains(&format!("the owner has pid {pid}")),
                "{error}"
            );
        }
    }
}
