//! What the flow benchmarks (`rate`, `cpu`) sample over a flow's steady state: the shaper's CPU
//! time from /proc and its byte counter of the link direction carrying the data.

use super::lab::BenchLab;
use crate::lab::{interrupt, Error, Result};
use netem::daemon::KeeperStatus;
use std::time::{Duration, Instant};

/// How long after the flow's warmup the sampled interval starts, and how long before the
/// flow's end it stops, so it lies inside the flow's measured window and its steady state.
pub const START_AFTER_WARMUP: Duration = Duration::from_secs(1);
pub const END_BEFORE_FINISH: Duration = Duration::from_millis(500);

/// The shaper over the sampled interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Steady {
    pub seconds: f64,
    /// CPU seconds per second: utime + stime of every shaper thread.
    pub shaper_cores: f64,
    /// CPU seconds per second the whole machine was busy (/proc/stat: everything but idle and
    /// iowait), the kernel's softirq work for the lab's packets included.
    pub machine_cores: f64,
    /// Frame bytes the data direction's queue accepted (netem's count: Ethernet frames).
    pub data_bytes: u64,
    /// Wire packets (a GSO packet counts as its segments) and queue entries (it counts once).
    pub data_packets: u64,
    pub data_units: u64,
    /// Times the shaper's departure timer woke it up.
    pub timer_wakeups: u64,
    /// Times its event loop slept (and so woke again), for a timer or an arrival: the voluntary
    /// context switches of its main thread.
    pub sleeps: u64,
    /// The shaper's keeper thread (it wakes the shaper's CPU before long timer waits end), if
    /// it runs one.
    pub keeper: Option<KeeperUse>,
}

/// What the shaper's keeper did over a `Steady` window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeeperUse {
    /// CPU seconds per second, by its own thread clock (part of `shaper_cores`).
    pub cores: f64,
    /// Wake-ups made, and skipped for a spent budget.
    pub wakeups: u64,
    pub skipped: u64,
}

impl Steady {
    /// What the link direction carried, Mbit/s, retransmissions and headers included.
    pub fn link_mbps(&self) -> f64 {
        self.data_bytes as f64 * 8.0 / self.seconds / 1e6
    }
}

/// utime + stime of a process (all its threads), in clock ticks, from /proc/PID/stat's text.
pub fn cpu_ticks(stat: &str) -> Option<u64> {
    // The command name (field 2) may hold spaces and parentheses; it ends at the last ')'.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// The voluntary context switches of a thread, from its /proc `status` text.
pub fn voluntary_switches(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|n| n.trim().parse().ok())
}

/// The voluntary context switches of process `pid`'s main thread (the shaper's event loop).
fn read_sleeps(pid: i32) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let text =
        std::fs::read_to_string(&path).map_err(|e| Error(format!("the shaper's {path}: {e}")))?;
    voluntary_switches(&text)
        .ok_or_else(|| Error(format!("{path}: no voluntary_ctxt_switches line")))
}

fn read_ticks(pid: i32) -> Result<u64> {
    let path = format!("/proc/{pid}/stat");
    let text =
        std::fs::read_to_string(&path).map_err(|e| Error(format!("the shaper's {path}: {e}")))?;
    cpu_ticks(&text).ok_or_else(|| Error(format!("{path}: no utime/stime fields in `{text}`")))
}

/// Clock ticks of all CPUs together, from /proc/stat's first (`cpu`) line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachineTicks {
    /// User, nice, system, irq, softirq and steal: all but idle and iowait.
    pub busy: u64,
    /// Steal alone: time the host ran something else while a vCPU had work (0 on bare metal).
    pub steal: u64,
}

impl MachineTicks {
    /// The ticks from `self` to `later`.
    pub fn until(self, later: MachineTicks) -> MachineTicks {
        MachineTicks {
            busy: later.busy.saturating_sub(self.busy),
            steal: later.steal.saturating_sub(self.steal),
        }
    }
}

/// [`MachineTicks`] from /proc/stat's text.
pub fn machine_ticks(stat: &str) -> Option<MachineTicks> {
    let line = stat.lines().next()?;
    let mut fields = line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let values: Vec<u64> = fields
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let [user, nice, system, _idle, _iowait, irq, softirq, steal] = values[..] else {
        return None;
    };
    Some(MachineTicks {
        busy: user + nice + system + irq + softirq + steal,
        steal,
    })
}

pub fn read_machine_ticks() -> Result<MachineTicks> {
    let text =
        std::fs::read_to_string("/proc/stat").map_err(|e| Error(format!("/proc/stat: {e}")))?;
    machine_ticks(&text).ok_or_else(|| Error("/proc/stat: no `cpu` line".into()))
}

pub fn ticks_per_second() -> Result<f64> {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        Ok(hz as f64)
    } else {
        Err(Error("sysconf(_SC_CLK_TCK) failed".into()))
    }
}

/// The shaper's counters that `Steady` takes differences of.
struct Counters {
    bytes: u64,
    packets: u64,
    units: u64,
    timer_wakeups: u64,
    keeper: Option<KeeperStatus>,
}

/// The data queue's byte and packet counters and the daemon's timer wake-ups.
fn counters(lab: &BenchLab, queue_id: &str) -> Result<Counters> {
    let status = lab
        .shaper_status()?
        .ok_or_else(|| Error("the lab runs no shaper".into()))?;
    let daemon = status.daemon.as_ref();
    let timer_wakeups = daemon.map_or(0, |d| d.wakeup_lateness.count);
    let keeper = daemon.and_then(|d| d.keeper.clone());
    status
        .queues
        .into_iter()
        .flatten()
        .find(|q| q.id == queue_id)
        .map(|q| Counters {
            bytes: q.stats.bytes,
            packets: q.stats.packets,
            units: q.stats.units,
            timer_wakeups,
            keeper,
        })
        .ok_or_else(|| Error(format!("the shaper has no queue `{queue_id}`")))
}

/// Waits out the warmup of a flow that has just started, then samples the shaper over its
/// steady state; `None` on the kernel backend (no shaper).
pub fn steady_state(
    lab: &BenchLab,
    data_queue: &str,
    warmup: Duration,
    seconds: Duration,
) -> Result<Option<Steady>> {
    let Some(shaper) = lab.state().shaper.clone() else {
        std::thread::sleep(warmup + seconds);
        return Ok(None);
    };
    let hz = ticks_per_second()?;
    std::thread::sleep(warmup + START_AFTER_WARMUP);
    interrupt::check()?;
    let start = Instant::now();
    let ticks_start = read_ticks(shaper.pid)?;
    let sleeps_start = read_sleeps(shaper.pid)?;
    let machine_start = read_machine_ticks()?;
    let first = counters(lab, data_queue)?;
    std::thread::sleep(seconds.saturating_sub(START_AFTER_WARMUP + END_BEFORE_FINISH));
    let ticks_end = read_ticks(shaper.pid)?;
    let sleeps_end = read_sleeps(shaper.pid)?;
    let machine_end = read_machine_ticks()?;
    let last = counters(lab, data_queue)?;
    let elapsed = start.elapsed().as_secs_f64();
    interrupt::check()?;
    Ok(Some(Steady {
        seconds: elapsed,
        shaper_cores: ticks_end.saturating_sub(ticks_start) as f64 / hz / elapsed,
        machine_cores: machine_start.until(machine_end).busy as f64 / hz / elapsed,
        data_bytes: last.bytes.saturating_sub(first.bytes),
        data_packets: last.packets.saturating_sub(first.packets),
        data_units: last.units.saturating_sub(first.units),
        timer_wakeups: last.timer_wakeups.saturating_sub(first.timer_wakeups),
        sleeps: sleeps_end.saturating_sub(sleeps_start),
        keeper: keeper_use(first.keeper.as_ref(), last.keeper.as_ref(), elapsed),
    }))
}

/// The keeper's work between two status reads `elapsed` seconds apart; `None` if the shaper
/// ran none at either.
fn keeper_use(
    first: Option<&KeeperStatus>,
    last: Option<&KeeperStatus>,
    elapsed: f64,
) -> Option<KeeperUse> {
    let (first, last) = (first?, last?);
    Some(KeeperUse {
        cores: last.cpu_ns.saturating_sub(first.cpu_ns) as f64 / 1e9 / elapsed,
        wakeups: last.wakeups.saturating_sub(first.wakeups),
        skipped: last.skipped.saturating_sub(first.skipped),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_utime_plus_stime() {
        // A real line's shape: utime 1234 and stime 56 are fields 14 and 15; the name holds a
        // space and a parenthesis.
        let stat = "4242 (cdnlab shaper)) S 1 4242 4242 0 -1 4194560 500 0 0 0 1234 56 0 0 20 0 \
                    3 0 987654 12345678 600 18446744073709551615";
        assert_eq!(cpu_ticks(stat), Some(1290));
        assert_eq!(cpu_ticks("4242 (x) S 1 2"), None);
        assert_eq!(cpu_ticks("garbage"), None);
    }

    #[test]
    fn machine_ticks_leave_out_idle_and_iowait_and_give_steal_apart() {
        let stat = "cpu  100 2 30 5000 40 1 7 3 0 0\ncpu0 50 1 15 2500 20 0 3 1 0 0\n";
        let ticks = machine_ticks(stat).unwrap();
        assert_eq!(ticks.busy, 100 + 2 + 30 + 1 + 7 + 3);
        assert_eq!(ticks.steal, 3);
        let later = MachineTicks {
            busy: ticks.busy + 50,
            steal: ticks.steal + 20,
        };
        assert_eq!(
            ticks.until(later),
            MachineTicks {
                busy: 50,
                steal: 20
            }
        );
        assert_eq!(machine_ticks("cpu0 1 2 3 4 5 6 7 8\n"), None);
        assert_eq!(machine_ticks("cpu 1 2 3\n"), None);
    }

    #[test]
    fn keeper_use_is_the_difference_of_two_reads_and_absent_without_a_keeper() {
        let first = KeeperStatus {
            cpu_ns: 1_000_000,
            wakeups: 10,
            skipped: 1,
        };
        let last = KeeperStatus {
            cpu_ns: 21_000_000,
            wakeups: 610,
            skipped: 4,
        };
        assert_eq!(
            keeper_use(Some(&first), Some(&last), 2.0),
            Some(KeeperUse {
                cores: 0.01,
                wakeups: 600,
                skipped: 3,
            })
        );
        assert_eq!(keeper_use(None, None, 2.0), None);
        assert_eq!(keeper_use(Some(&first), None, 2.0), None);
    }

    #[test]
    fn link_rate_counts_frame_bits() {
        let steady = Steady {
            seconds: 2.0,
            shaper_cores: 0.1,
            machine_cores: 1.0,
            data_bytes: 25_000_000,
            data_packets: 16_512,
            data_units: 1_000,
            timer_wakeups: 0,
            sleeps: 0,
            keeper: None,
        };
        assert_eq!(steady.link_mbps(), 100.0);
    }

    #[test]
    fn voluntary_switches_are_read_off_their_line() {
        let status = "Name:\tcdnlab-shaper\nvoluntary_ctxt_switches:\t20610\n\
                      nonvoluntary_ctxt_switches:\t1\n";
        assert_eq!(voluntary_switches(status), Some(20610));
        assert_eq!(voluntary_switches("Name:\tx\n"), None);
    }
}
