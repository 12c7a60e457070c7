//! What the servers cost in CPU: their processes' ticks and how busy their pinned core was.

use crate::bench::sample::cpu_ticks;

/// One CPU's time counters from /proc/stat, in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CpuTimes {
    pub(super) busy: u64,
    pub(super) total: u64,
}

/// CPU `cpu`'s counters now.
pub(super) fn cpu_times(cpu: &str) -> Option<CpuTimes> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_times(&stat, cpu)
}

/// The `cpuN` line of /proc/stat: user nice system idle iowait irq softirq steal (guest time is
/// already inside user); busy is all but idle and iowait.
fn parse_cpu_times(stat: &str, cpu: &str) -> Option<CpuTimes> {
    let line = stat
        .lines()
        .find(|line| line.split_whitespace().next() == Some(&format!("cpu{cpu}")))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    if fields.len() < 8 {
        return None;
    }
    let total: u64 = fields.iter().sum();
    Some(CpuTimes {
        busy: total - fields[3] - fields[4],
        total,
    })
}

/// The fraction of a CPU that was busy between two readings.
pub(super) fn busy_fraction(before: Option<CpuTimes>, after: Option<CpuTimes>) -> Option<f64> {
    match (before, after) {
        (Some(before), Some(after)) if after.total > before.total => Some(
            after.busy.saturating_sub(before.busy) as f64 / (after.total - before.total) as f64,
        ),
        _ => None,
    }
}

pub(in crate::bench) fn ticks_per_second() -> Option<f64> {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then_some(hz as f64)
}

/// CPU ticks of every process in process group `pgid` (nginx's master and worker).
pub(super) fn group_cpu_ticks(pgid: i32) -> Option<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if process_group(&stat) == Some(pgid) {
            total += cpu_ticks(&stat)?;
        }
    }
    Some(total)
}

/// The process group (field 5) from /proc/PID/stat's text.
fn process_group(stat: &str) -> Option<i32> {
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    rest.split_whitespace().nth(2)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lines_give_busy_and_total_ticks() {
        let stat = "cpu  10 0 10 100 0 0 0 0 0 0\n\
                    cpu0 5 1 2 40 3 1 4 0 0 0\n\
                    cpu1 5 0 8 60 0 0 0 0 0 0\n\
                    intr 12345\n";
        assert_eq!(
            parse_cpu_times(stat, "0"),
            Some(CpuTimes {
                busy: 13,
                total: 56
            })
        );
        assert_eq!(
            parse_cpu_times(stat, "1").map(|t| (t.busy, t.total)),
            Some((13, 73))
        );
        assert_eq!(parse_cpu_times(stat, "2"), None);
    }

    #[test]
    fn process_group_is_field_five() {
        let stat = "1234 (nginx: worker (x)) S 1200 1200 1200 0 -1 4194560 10 0 0 0 7 3 0 0";
        assert_eq!(process_group(stat), Some(1200));
        assert_eq!(cpu_ticks(stat), Some(10));
    }
}
