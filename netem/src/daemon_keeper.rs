//! Keeps the shaper's CPU from halting long just before a timed departure.
//!
//! A CPU with nothing to run halts, and a timer that fires on a CPU halted for long is served
//! late: in a VM the host must schedule the vCPU again. Measured on the 2-vCPU Firecracker VM
//! this is developed on, a SCHED_FIFO thread sleeping 0.5–10 ms woke 50–60 µs late at the
//! median and 0.12–0.36 ms late at the 99th percentile. A sleep of 20–300 µs woke on time
//! (10 µs, p99 22–31 µs): the host keeps polling a vCPU that has just halted. (BENCHMARKS.md,
//! "Timer wake-ups", measures this with `scripts/timer-wakeups.c`.) On bare metal,
//! deep C-states do the same on a smaller scale, and a CPU that has just gone idle stays shallow.
//!
//! So when the daemon's timer will wait longer than the keeper's window, a thread at
//! `SCHED_IDLE` priority on the daemon's CPU wakes once, a window's length before the timer: the
//! long halt is cut in two, and the second is short enough to end on time. On the same VM, with
//! a window of 300 µs, such timers woke 15–20 µs late at the median and 62–72 µs at the 99th
//! percentile (spinning through the window: 9–13 µs and 47–77 µs, at several times the CPU).
//! The keeper displaces nothing: any other thread that wants the CPU runs first, the daemon's
//! SCHED_FIFO thread most of all. Its own CPU time is bounded by a budget per 100 ms period
//! (while it is spent the keeper sleeps, and wake-ups falling due are skipped), and it is
//! reported in the daemon's status. In a VM the host may spend CPU polling the vCPU between
//! the keeper's wake-up and the timer; that cost is the host's and is not seen from here.

use crate::daemon_control::KeeperStatus;
use crate::daemon_sys::{
    futex_wait_until, futex_wake, monotonic_ns, set_idle_priority, thread_cpu_ns,
};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;

/// The period over which the keeper's CPU budget is counted.
const BUDGET_PERIOD_NS: u64 = 100_000_000;

/// No time: no wake-up to make, or a keeper asleep until woken.
const NONE: u64 = u64::MAX;

/// `sleeping_until_ns` of a keeper that needs no wake: it is awake and will look at
/// `wake_at_ns` before it sleeps, or its budget is spent.
const LOOKING: u64 = 0;

/// What the daemon and the keeper thread share.
struct Shared {
    /// When the keeper should next wake, CLOCK_MONOTONIC ns ([`NONE`] when there is no window).
    wake_at_ns: AtomicU64,
    /// When the keeper, asleep, will wake by itself ([`NONE`]: only when woken; [`LOOKING`]:
    /// never wake it).
    sleeping_until_ns: AtomicU64,
    /// Bumped on every change of `wake_at_ns` or `stop`; the keeper sleeps on it.
    generation: AtomicU32,
    stop: AtomicBool,
    /// The keeper thread's id, for its CPU affinity (0 until it has started).
    tid: AtomicI32,
    /// The keeper thread's CPU time, ns, since the start.
    used_ns: AtomicU64,
    /// Wake-ups made in time for a timer.
    wakeups: AtomicU64,
    /// Wake-ups skipped because the budget was spent.
    skipped: AtomicU64,
}

/// The keeper thread and when it is to wake; see the module documentation.
pub(crate) struct Keeper {
    shared: Arc<Shared>,
    window_ns: u64,
    /// The CPU the keeper was last pinned to.
    cpu: Option<i32>,
}

impl Keeper {
    /// Starts a keeper that wakes `window_ns` before each long wait of the daemon's timer ends,
    /// using at most `budget_percent` of one CPU in each period of 100 ms. Fails if the thread
    /// cannot be made or cannot run at SCHED_IDLE (at the daemon's priority its wake-ups would
    /// take the CPU from the lab).
    pub(crate) fn start(window_ns: u64, budget_percent: u8) -> io::Result<Keeper> {
        let shared = Arc::new(Shared {
            wake_at_ns: AtomicU64::new(NONE),
            sleeping_until_ns: AtomicU64::new(LOOKING),
            generation: AtomicU32::new(0),
            stop: AtomicBool::new(false),
            tid: AtomicI32::new(0),
            used_ns: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
        });
        let budget_ns = BUDGET_PERIOD_NS * u64::from(budget_percent) / 100;
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        // Not joined: see `drop`.
        std::thread::Builder::new()
            .name("shaper-keeper".into())
            .spawn({
                let shared = shared.clone();
                move || {
                    let started = set_idle_priority();
                    let ok = started.is_ok();
                    let _ = started_tx.send(started);
                    if ok {
                        keep_awake(&shared, window_ns, budget_ns);
                    }
                }
            })?;
        started_rx
            .recv()
            .map_err(|_| io::Error::other("the keeper thread ended before it started"))??;
        Ok(Keeper {
            shared,
            window_ns,
            cpu: None,
        })
    }

    /// Sets the keeper's wake-up for a timer armed for `armed_ns` at `now_ns` (None: no
    /// timer), and keeps the keeper on the calling thread's CPU, where the timer was armed.
    pub(crate) fn follow(&mut self, armed_ns: Option<u64>, now_ns: u64) {
        let wake_at = wake_time(armed_ns, now_ns, self.window_ns).unwrap_or(NONE);
        if wake_at != NONE {
            // Before any wake, so the keeper's own timer is armed on this CPU.
            self.pin_to_current_cpu();
        }
        let shared = &self.shared;
        shared.wake_at_ns.store(wake_at, SeqCst);
        shared.generation.fetch_add(1, SeqCst);
        // A keeper that would sleep past the new time must be woken; one that is looking, or
        // will wake sooner by itself, finds the new time when it looks.
        if wake_at < shared.sleeping_until_ns.load(SeqCst) {
            futex_wake(&shared.generation);
        }
    }

    fn pin_to_current_cpu(&mut self) {
        // SAFETY: sched_getcpu takes no arguments.
        let cpu = unsafe { libc::sched_getcpu() };
        let tid = self.shared.tid.load(SeqCst);
        let in_set = (0..libc::CPU_SETSIZE).contains(&cpu);
        if !in_set || tid == 0 || self.cpu == Some(cpu) {
            return;
        }
        self.cpu = Some(cpu);
        // SAFETY: a cpu_set_t we own, zeroed, then one CPU set in it.
        let result = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut set);
            libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        if result != 0 {
            tracing::debug!(
                "cdnlab-shaper: cannot move the keeper to CPU {cpu}: {}",
                io::Error::last_os_error()
            );
        }
    }

    /// The keeper's CPU time so far (ns), its wake-ups made in time and those skipped.
    pub(crate) fn report(&self) -> KeeperStatus {
        KeeperStatus {
            cpu_ns: self.shared.used_ns.load(SeqCst),
            wakeups: self.shared.wakeups.load(SeqCst),
            skipped: self.shared.skipped.load(SeqCst),
        }
    }
}

impl Drop for Keeper {
    /// Stops the keeper without waiting for it: at SCHED_IDLE on one CPU, it may not run again
    /// for long if that CPU is kept busy, and it holds nothing but its share of `Shared`.
    fn drop(&mut self) {
        self.shared.stop.store(true, SeqCst);
        self.shared.generation.fetch_add(1, SeqCst);
        futex_wake(&self.shared.generation);
    }
}

/// When the keeper should wake for a timer armed for `armed_ns` at `now_ns`: `window_ns`
/// before it. None without a timer, or when the wait is no longer than the window: a CPU
/// halted that briefly wakes on time by itself.
fn wake_time(armed_ns: Option<u64>, now_ns: u64, window_ns: u64) -> Option<u64> {
    let at = armed_ns?;
    (at > now_ns.saturating_add(window_ns)).then(|| at - window_ns)
}

/// The keeper thread (already at SCHED_IDLE): sleeps until the time it is given, wakes, and
/// sleeps again until given another, within `budget_ns` of its own CPU time per
/// [`BUDGET_PERIOD_NS`]: while that is spent it sleeps to the period's end, and a time whose
/// timer (`window_ns` later) fired meanwhile is skipped.
fn keep_awake(shared: &Shared, window_ns: u64, budget_ns: u64) {
    // SAFETY: gettid takes no arguments.
    shared.tid.store(unsafe { libc::gettid() }, SeqCst);
    let mut period_start = monotonic_ns();
    let mut used_at_period_start = thread_cpu_ns();
    let mut used_before = used_at_period_start;
    // The wake-up time last served (or skipped), so it is not served twice.
    let mut served = NONE;
    while !shared.stop.load(SeqCst) {
        shared.sleeping_until_ns.store(LOOKING, SeqCst);
        let generation = shared.generation.load(SeqCst);
        let wake_at = shared.wake_at_ns.load(SeqCst);
        let now = monotonic_ns();
        let used = thread_cpu_ns();
        shared
            .used_ns
            .fetch_add(used.saturating_sub(used_before), SeqCst);
        used_before = used;
        if now >= period_start + BUDGET_PERIOD_NS {
            (period_start, used_at_period_start) = (now, used);
        }
        let (sleep_until, published) = if used - used_at_period_start >= budget_ns {
            (Some(period_start + BUDGET_PERIOD_NS), LOOKING)
        } else if wake_at == NONE || wake_at == served {
            (None, NONE)
        } else if now < wake_at {
            (Some(wake_at), wake_at)
        } else {
            served = wake_at;
            if now < wake_at + window_ns {
                // In time: the CPU is awake, and will halt only briefly before the timer.
                shared.wakeups.fetch_add(1, SeqCst);
            } else {
                // The timer has fired: the time fell due while the budget was spent.
                shared.skipped.fetch_add(1, SeqCst);
            }
            continue;
        };
        shared.sleeping_until_ns.store(published, SeqCst);
        if let Err(e) = futex_wait_until(&shared.generation, generation, sleep_until) {
            tracing::warn!("cdnlab-shaper: the keeper cannot sleep ({e}); it stops");
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const W: u64 = 300_000;

    #[test]
    fn wakes_only_before_a_timer_that_waits_longer_than_the_window() {
        assert_eq!(wake_time(None, 1_000, W), None);
        assert_eq!(wake_time(Some(1_000 + W), 1_000, W), None, "a short wait");
        assert_eq!(wake_time(Some(500), 1_000, W), None, "a timer already due");
        assert_eq!(wake_time(Some(5_000_000), 1_000, W), Some(5_000_000 - W));
        assert_eq!(
            wake_time(Some(u64::MAX), u64::MAX - 1, W),
            None,
            "no overflow"
        );
    }

    fn affinity(tid: i32) -> Vec<usize> {
        // SAFETY: sched_getaffinity fills a cpu_set_t we own.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set)
        };
        assert_eq!(rc, 0, "{}", io::Error::last_os_error());
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
            .collect()
    }

    fn started(budget_percent: u8) -> Keeper {
        let keeper = Keeper::start(W, budget_percent).unwrap();
        while keeper.shared.tid.load(SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        keeper
    }

    /// Wake-ups made or skipped so far.
    fn served(keeper: &Keeper) -> u64 {
        keeper.shared.wakeups.load(SeqCst) + keeper.shared.skipped.load(SeqCst)
    }

    /// Waits until the keeper has served `expected` wake-ups in all (up to 2 s: a SCHED_IDLE
    /// thread may wait long on a busy machine), then 20 ms more for any wake-up too many;
    /// returns its count.
    fn served_after(keeper: &Keeper, expected: u64) -> u64 {
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while served(keeper) < expected && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(20));
        served(keeper)
    }

    /// Arms a "timer" 2 ms ahead, as the daemon does.
    fn arm_in_2_ms(keeper: &mut Keeper) {
        let now = monotonic_ns();
        keeper.follow(Some(now + 2_000_000), now);
    }

    #[test]
    fn wakes_once_per_timer_at_idle_priority_on_the_daemons_cpu() {
        let mut keeper = started(100);
        arm_in_2_ms(&mut keeper);
        assert_eq!(served_after(&keeper, 1), 1);
        arm_in_2_ms(&mut keeper);
        assert_eq!(served_after(&keeper, 2), 2);
        let tid = keeper.shared.tid.load(SeqCst);
        // SAFETY: sched_getscheduler takes a thread id.
        let policy = unsafe { libc::sched_getscheduler(tid) };
        assert_eq!(
            policy,
            libc::SCHED_IDLE,
            "the keeper yields to every other thread"
        );
        let pinned_to = keeper.cpu.map(|cpu| vec![cpu as usize]);
        assert_eq!(
            Some(affinity(tid)),
            pinned_to,
            "pinned to the CPU that armed the timer"
        );
    }

    #[test]
    fn a_keeper_asleep_until_later_is_woken_for_an_earlier_time() {
        let mut keeper = started(100);
        let now = monotonic_ns();
        let later = now + 10_000_000_000;
        keeper.follow(Some(later), now);
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while keeper.shared.sleeping_until_ns.load(SeqCst) != later - W {
            assert!(
                std::time::Instant::now() < deadline,
                "the keeper never slept"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        arm_in_2_ms(&mut keeper);
        assert_eq!(served_after(&keeper, 1), 1, "served long before 10 s");
    }

    #[test]
    fn a_spent_budget_leaves_the_cpu_alone() {
        let mut keeper = started(0);
        arm_in_2_ms(&mut keeper);
        // Past the end of a budget period, where the keeper looks again.
        std::thread::sleep(Duration::from_millis(150));
        assert_eq!(keeper.shared.wakeups.load(SeqCst), 0);
        assert_eq!(
            keeper.shared.sleeping_until_ns.load(SeqCst),
            LOOKING,
            "asleep for the budget: the daemon never wakes it"
        );
    }
}
