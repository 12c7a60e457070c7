//! `cdnlab down` and `cdnlab clean`: stop every process, delete every namespace (which takes
//! its interfaces, routes, qdiscs and iptables rules with it), and remove every file the lab
//! wrote — from the state file when there is one, by the namespaces' names otherwise.

use super::build::existing_netns;
use super::process::stop_processes;
use super::state::{lab_dir, list_labs, LabState, ProcessRecord, NETNS_PREFIX, STATE_ROOT};
use super::sys::{self, Result};
use std::path::Path;

/// Removes everything of the lab described by `state`. Idempotent: what is gone already is
/// skipped, and every step runs even if an earlier one failed.
pub fn teardown(state: &LabState) -> Result<()> {
    let records: Vec<ProcessRecord> = state.processes.values().cloned().collect();
    stop_processes(&records);
    let removed = remove_namespaces(&state.namespaces);
    // The shaper goes last: until the namespaces are gone, queued packets still need it.
    if let Some(shaper) = &state.shaper {
        stop_processes(std::slice::from_ref(shaper));
    }
    removed.and(remove_state_dir(&state.lab))
}

/// Every process still inside the namespaces is stopped, then the namespaces and their
/// /etc/netns directories are removed.
fn remove_namespaces(namespaces: &[String]) -> Result<()> {
    let present = existing_netns();
    let present: Vec<&String> = namespaces.iter().filter(|n| present.contains(n)).collect();
    let mut inside = Vec::new();
    for ns in &present {
        if let Ok(pids) = sys::run(&["ip", "netns", "pids", ns], None) {
            inside.extend(
                pids.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok())
                    .filter_map(|pid| {
                        sys::process_start_time(pid)
                            .map(|start_time| ProcessRecord { pid, start_time })
                    }),
            );
        }
    }
    stop_processes(&inside);
    let lines: Vec<String> = present.iter().map(|ns| format!("netns del {ns}")).collect();
    let deleted = sys::ip_batch(None, &lines);
    for ns in namespaces {
        let dir = Path::new("/etc/netns").join(ns);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
    }
    deleted
}

fn remove_state_dir(lab: &str) -> Result<()> {
    let dir = lab_dir(lab);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}

/// `cdnlab down LAB`: from the state file, or — if it is unreadable — by the lab's prefix.
pub fn down(lab: &str) -> Result<()> {
    match LabState::load(lab) {
        Ok(state) => teardown(&state),
        Err(e) if lab_dir(lab).exists() || has_namespaces(lab) => {
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
    existing_netns()
        .iter()
        .any(|n| n.starts_with(&lab_prefix(lab)))
}

fn remove_by_prefix(lab: &str) -> Result<()> {
    let prefix = lab_prefix(lab);
    let namespaces: Vec<String> = existing_netns()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    remove_namespaces(&namespaces)?;
    stop_shapers_of(lab);
    remove_state_dir(lab)
}

/// Stops `cdnlab-shaper` daemons whose config lies in the lab's state directory (found through
/// /proc, for when the state file that names them is lost).
fn stop_shapers_of(lab: &str) {
    let config_prefix = format!("{}/", lab_dir(lab).display());
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
}

/// `cdnlab clean`: removes every lab — those with state and any namespace, /etc/netns entry or
/// shaper left by a lab whose state is gone — or, if `only` names labs, just those. Returns the
/// labs it removed.
pub fn clean(only: &[String]) -> Result<Vec<String>> {
    let mut labs = list_labs();
    for ns in existing_netns() {
        if let Some(rest) = ns.strip_prefix(NETNS_PREFIX) {
            if let Some((lab, _)) = rest.split_once('.') {
                if !labs.iter().any(|l| l == lab) {
                    labs.push(lab.to_string());
                }
            }
        }
    }
    for entry in std::fs::read_dir("/etc/netns")
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some((lab, _)) = name
            .strip_prefix(NETNS_PREFIX)
            .and_then(|r| r.split_once('.'))
        {
            if !labs.iter().any(|l| l == lab) {
                labs.push(lab.to_string());
            }
        }
    }
    if !only.is_empty() {
        labs.retain(|lab| only.contains(lab));
    }
    let mut first_error = None;
    for lab in &labs {
        let result = match LabState::load(lab) {
            Ok(state) => teardown(&state).and_then(|_| remove_by_prefix(lab)),
            Err(_) => remove_by_prefix(lab),
        };
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
        // Entries in /etc/netns whose namespace is already gone.
        let prefix = lab_prefix(lab);
        for entry in std::fs::read_dir("/etc/netns")
            .into_iter()
            .flatten()
            .flatten()
        {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let _ = std::fs::remove_dir(STATE_ROOT);
    match first_error {
        Some(e) => Err(e),
        None => Ok(labs),
    }
}
