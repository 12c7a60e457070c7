//! `cdnlab down` and `cdnlab clean`: stop every process, delete every namespace (which takes
//! its interfaces, routes, qdiscs and iptables rules with it), and remove every file the lab
//! wrote — from the state file when there is one, by the namespaces' names otherwise.
//!
//! Removal only ever touches what a lab provably made: namespaces and `/etc/netns` entries
//! named `cdnlab-LAB.…` of a well-formed lab name, and the lab's own directory directly inside
//! the state root (see [`is_lab_dir`]).

use super::build::existing_netns;
use super::file_lock::{self, Existing, FileLock};
use super::process::stop_processes;
use super::state::{
    is_lab_dir, lab_dir, list_labs, state_lock, stateless_owner_lock, LabState, ProcessRecord,
    LOCK_FILE, NETNS_PREFIX, STATE_ROOT,
};
use super::sys::{self, Error, Result};
use crate::topology::check_lab_name;
use std::path::Path;

/// Removes everything of the lab described by `state`. Idempotent: what is gone already is
/// skipped. The state directory goes only once the namespaces are gone: if removing them
/// failed (an `ip` killed mid-way, say), the state stays so `down` or `clean` can finish the
/// job knowing everything the lab made.
pub fn teardown(state: &LabState) -> Result<()> {
    let records: Vec<ProcessRecord> = state.processes.values().cloned().collect();
    stop_processes(&records);
    let removed = remove_namespaces(&state.lab, &state.namespaces);
    // The shaper goes last: until the namespaces are gone, queued packets still need it.
    if let Some(shaper) = &state.shaper {
        stop_processes(std::slice::from_ref(shaper));
    }
    removed.and_then(|()| remove_state_dir(&state.lab))
}

/// True if `ns` is a namespace name lab `lab` can have made: `cdnlab-LAB.` and then node or
/// LAN name characters only (so it is one path component under /run/netns and /etc/netns).
fn is_netns_of(lab: &str, ns: &str) -> bool {
    ns.strip_prefix(&lab_prefix(lab)).is_some_and(|rest| {
        !rest.is_empty()
            && !rest.starts_with('.')
            && rest
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    })
}

/// Every process still inside the namespaces is stopped, then the namespaces and their
/// /etc/netns directories are removed. Names that are not the lab's are left alone.
fn remove_namespaces(lab: &str, namespaces: &[String]) -> Result<()> {
    let (ours, foreign): (Vec<&String>, Vec<&String>) =
        namespaces.iter().partition(|ns| is_netns_of(lab, ns));
    if !foreign.is_empty() {
        eprintln!(
            "warning: lab `{lab}`'s state names namespaces that are not its own, left alone: {}",
            foreign
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let present = existing_netns();
    let present: Vec<&String> = ours
        .iter()
        .copied()
        .filter(|n| present.contains(n))
        .collect();
    let names: Vec<&str> = present.iter().map(|ns| ns.as_str()).collect();
    let inside: Vec<ProcessRecord> = sys::pids_in_netns(&names)
        .into_iter()
        .filter_map(|pid| {
            sys::process_start_time(pid).map(|start_time| ProcessRecord { pid, start_time })
        })
        .collect();
    stop_processes(&inside);
    let lines: Vec<String> = present.iter().map(|ns| format!("netns del {ns}")).collect();
    let deleted = sys::ip_batch(None, &lines);
    for ns in ours {
        let dir = Path::new("/etc/netns").join(ns);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
    }
    deleted
}

/// Removes the lab's state directory, if it is provably one (see [`is_lab_dir`]). The lab's
/// state lock is held meanwhile: a change in progress (`link set`, a timeline step) finishes
/// first, and one waiting after it finds the lab gone. Without the lock, a state file written
/// back mid-removal left a directory that was no longer provably the lab's, for good. Another
/// `down` or `clean` that removed it while this waited leaves nothing to do.
fn remove_state_dir(lab: &str) -> Result<()> {
    let dir = lab_dir(lab)?;
    if std::fs::symlink_metadata(&dir).is_err() {
        return Ok(());
    }
    if !is_lab_dir(&dir) {
        return sys::err(format!(
            "{} is not provably lab `{lab}`'s state directory (a real directory in a real {STATE_ROOT}, holding state.lock or state.json); left alone",
            dir.display()
        ));
    }
    let locked = dir.join(LOCK_FILE).exists();
    let lock = state_lock(&dir)?;
    if locked && lock.is_none() {
        return Ok(());
    }
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            sys::err(format!("removing {}: {e}", dir.display()))
        }
        _ => Ok(()),
    }
}

/// `cdnlab down LAB`: from the state file, or — if it is unreadable — by the lab's prefix.
pub fn down(lab: &str) -> Result<()> {
    let dir = lab_dir(lab)?;
    match LabState::load(lab) {
        Ok(state) => teardown(&state),
        Err(e) if dir.exists() || has_namespaces(lab) => {
            eprintln!("warning: {e}; removing lab `{lab}` by its namespaces' names");
            remove_by_prefix(lab)
        }
        Err(e) => Err(e.into()),
    }
}

fn lab_prefix(lab: &str) -> String {
    format!("{NETNS_PREFIX}{lab}.")
}

fn has_namespaces(lab: &str) -> bool {
    existing_netns().iter().any(|n| is_netns_of(lab, n))
}

fn remove_by_prefix(lab: &str) -> Result<()> {
    let namespaces: Vec<String> = existing_netns()
        .into_iter()
        .filter(|n| is_netns_of(lab, n))
        .collect();
    remove_namespaces(lab, &namespaces)?;
    stop_shapers_of(lab)?;
    remove_state_dir(lab)
}

/// Stops `cdnlab-shaper` daemons whose config lies in the lab's state directory (found through
/// /proc, for when the state file that names them is lost).
fn stop_shapers_of(lab: &str) -> Result<()> {
    let config_prefix = format!("{}/", lab_dir(lab)?.display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let is_shaper = args.first().is_some_and(|a| a.ends_with(b"cdnlab-shaper"));
        let ours = args.iter().any(|a| a.starts_with(config_prefix.as_bytes()));
        if is_shaper && ours {
            if let Some(start_time) = sys::process_start_time(pid) {
                found.push(ProcessRecord { pid, start_time });
            }
        }
    }
    stop_processes(&found);
    Ok(())
}

/// What `clean` did: the labs it removed, those it left because a live `cdnlab` owns them, and
/// those it could not remove (each tried all the same, and the others still cleaned).
#[derive(Debug, Default)]
pub struct Cleaned {
    pub removed: Vec<String>,
    /// Lab name, and who owns it: `a running cdnlab (pid N)`, or why that cannot be told.
    pub kept_live: Vec<(String, String)>,
    /// Lab name, and what stopped its removal.
    pub failed: Vec<(String, Error)>,
}

impl Cleaned {
    /// One error naming every lab that could not be removed, if any.
    pub fn failure(&self) -> Option<Error> {
        (!self.failed.is_empty()).then(|| {
            let each: Vec<String> = (self.failed.iter())
                .map(|(lab, e)| format!("lab `{lab}`: {e}"))
                .collect();
            Error(format!("could not remove {}", each.join("; ")))
        })
    }
}

/// The lab a namespace or /etc/netns entry name belongs to, if it is a well-formed lab's.
fn lab_of_netns(name: &str) -> Option<&str> {
    let (lab, _) = name.strip_prefix(NETNS_PREFIX)?.split_once('.')?;
    check_lab_name(lab).is_ok().then_some(lab)
}

/// `cdnlab clean`: removes every lab — those with state and any namespace, /etc/netns entry or
/// shaper left by a lab whose state is gone — or, if `only` names labs, just those. A lab
/// whose owning `cdnlab` (an `up` still building it, a `run` playing it, a `bench http` holding
/// the lab's [`stateless_owner_lock`]) is alive is not a leftover: it is kept unless `force`.
pub fn clean(only: &[String], force: bool) -> Result<Cleaned> {
    for lab in only {
        check_lab_name(lab).map_err(Error)?;
    }
    let mut labs = list_labs();
    let etc_netns: Vec<String> = std::fs::read_dir("/etc/netns")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    for name in existing_netns().iter().chain(&etc_netns) {
        if let Some(lab) = lab_of_netns(name) {
            if !labs.iter().any(|l| l == lab) {
                labs.push(lab.to_string());
            }
        }
    }
    if !only.is_empty() {
        labs.retain(|lab| only.contains(lab));
    }
    let mut cleaned = Cleaned::default();
    for lab in labs {
        let state = LabState::load(&lab).ok();
        let running = |pid: i32| format!("a running cdnlab (pid {pid})");
        // A lab without state is held by its owner's lock (`bench http`); `clean` holds it
        // while it removes the lab, so an owner starting meanwhile waits instead of losing
        // what it makes. Only owners create the file: a lab that never had one has none.
        let mut _stateless_lock = None;
        let live_owner = match &state {
            Some(state) => state
                .owner
                .as_ref()
                .filter(|_| state.owner_alive())
                .map(|owner| running(owner.pid)),
            None => {
                let lock = stateless_owner_lock(&lab);
                match FileLock::try_take_existing(&lock) {
                    Ok(Existing::Taken(held)) => {
                        _stateless_lock = Some(held);
                        None
                    }
                    Ok(Existing::NoFile) => None,
                    Ok(Existing::Held) => Some(match file_lock::holder(&lock) {
                        Ok(Some(pid)) => running(pid),
                        _ => format!("a running cdnlab (it holds {})", lock.display()),
                    }),
                    // Kept when it cannot be told: removing a live bench's namespaces breaks
                    // its run.
                    Err(e) => Some(format!("a `cdnlab bench http` that may be running ({e})")),
                }
            }
        };
        if let Some(owner) = live_owner.filter(|_| !force) {
            cleaned.kept_live.push((lab, owner));
            continue;
        }
        let result = match &state {
            Some(state) => teardown(state).and_then(|_| remove_by_prefix(&lab)),
            None => remove_by_prefix(&lab),
        };
        // Entries in /etc/netns whose namespace is already gone.
        for name in etc_netns.iter().filter(|n| is_netns_of(&lab, n)) {
            let _ = std::fs::remove_dir_all(Path::new("/etc/netns").join(name));
        }
        match result {
            Ok(()) => cleaned.removed.push(lab),
            Err(e) => cleaned.failed.push((lab, e)),
        }
    }
    let _ = std::fs::remove_dir(STATE_ROOT);
    Ok(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_labs_own_namespace_names_are_its_own() {
        assert!(is_netns_of("lab", "cdnlab-lab.client"));
        assert!(is_netns_of("lab", "cdnlab-lab.hub.segments"));
        for foreign in [
            "cdnlab-lab.",
            "cdnlab-lab..",
            "cdnlab-lab./x",
            "cdnlab-lab.a/../../etc",
            "cdnlab-labx.client",
            "cdnlab-other.client",
            "lab.client",
        ] {
            assert!(!is_netns_of("lab", foreign), "{foreign}");
        }
    }

    #[test]
    fn namespace_names_give_their_lab_only_if_it_is_a_lab_name() {
        assert_eq!(lab_of_netns("cdnlab-lab.client"), Some("lab"));
        assert_eq!(lab_of_netns("cdnlab-..client"), None);
        assert_eq!(lab_of_netns("cdnlab-/.x"), None);
        assert_eq!(lab_of_netns("other-lab.client"), None);
    }
}
