//! What a lab costs the machine, from /proc: memory before and after `up` (for `scale`'s
//! memory per idle node), and the kernel's count of network namespaces, which tells when the
//! kernel has freed the namespaces of a lab that is down (it does so later, on a work queue).

use crate::lab::{Error, Result};
use std::time::{Duration, Instant};

/// One reading of /proc/meminfo and /proc/slabinfo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// `MemAvailable`: what the machine could still hand out without swapping.
    pub available_kib: u64,
    /// `Slab` + `Percpu`: what the kernel itself holds, where namespaces, interfaces, routes
    /// and sockets live.
    pub kernel_kib: u64,
    /// Live network namespaces (the active objects of the `net_namespace` slab), if the
    /// kernel shows that slab.
    pub namespaces: Option<u64>,
}

/// How many of a lab's namespaces may still count as live once it is "freed": the slab's count
/// is approximate (objects cached per CPU count as live), and other labs come and go.
const NAMESPACE_SLACK: u64 = 20;

pub fn read() -> Result<Memory> {
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .map_err(|e| Error(format!("/proc/meminfo: {e}")))?;
    let field = |name: &str| {
        meminfo_kib(&meminfo, name)
            .ok_or_else(|| Error(format!("/proc/meminfo has no `{name}` line")))
    };
    let slabinfo = std::fs::read_to_string("/proc/slabinfo").unwrap_or_default();
    Ok(Memory {
        available_kib: field("MemAvailable")?,
        kernel_kib: field("Slab")? + field("Percpu")?,
        namespaces: slab_active(&slabinfo, "net_namespace"),
    })
}

/// Waits until the live namespaces are `deleted` fewer than at reading `before` (taken just
/// before they were deleted; within [`NAMESPACE_SLACK`]); how long that took, or `None` if
/// not within `timeout` or if the kernel does not show the count.
pub fn wait_namespaces_freed(before: &Memory, deleted: u64, timeout: Duration) -> Option<Duration> {
    let target = before.namespaces?.saturating_sub(deleted) + NAMESPACE_SLACK;
    let start = Instant::now();
    while start.elapsed() < timeout {
        let now = std::fs::read_to_string("/proc/slabinfo")
            .ok()
            .and_then(|text| slab_active(&text, "net_namespace"))?;
        if now <= target {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

/// A `NAME:   123 kB` line's value.
fn meminfo_kib(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, rest) = line.split_once(':')?;
        (key == name).then(|| rest.trim().trim_end_matches("kB").trim().parse().ok())?
    })
}

/// The active objects of slab cache `name` in /proc/slabinfo (`name active total …`).
fn slab_active(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut fields = line.split_whitespace();
        (fields.next() == Some(name)).then(|| fields.next()?.parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_and_slabinfo_lines_are_read_by_name() {
        let meminfo = "MemTotal:       24684000 kB\nMemAvailable:   23059784 kB\nSlab: 860620 kB\n";
        assert_eq!(meminfo_kib(meminfo, "MemAvailable"), Some(23_059_784));
        assert_eq!(meminfo_kib(meminfo, "Slab"), Some(860_620));
        assert_eq!(meminfo_kib(meminfo, "Percpu"), None);
        let slabinfo = "slabinfo - version: 2.1\n\
            # name            <active_objs> <num_objs> <objsize>\n\
            net_namespace       1022   1029   4288    7    8 : tunables    0    0    0\n\
            net_namespace_x        5      7   4288    7    8 : tunables    0    0    0\n";
        assert_eq!(slab_active(slabinfo, "net_namespace"), Some(1022));
        assert_eq!(slab_active(slabinfo, "dentry"), None);
    }
}
