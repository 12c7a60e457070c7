//! Sans-IO bookkeeping of the shaper daemon: when packets arrived, the verdicts waiting for their
//! departure time, and how late they were given.

use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Which packet a held verdict is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Held {
    /// Index of the daemon's queue (and so of its socket and shaper).
    pub queue: u32,
    pub packet_id: u32,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    at_ns: u64,
    /// Arrival order, so packets due at the same nanosecond leave in the order they came
    /// (a heap alone would reorder them).
    seq: u64,
    held: Held,
}

/// Packets waiting for their departure time, earliest first. The heap keeps its capacity, so
/// a steady flow allocates nothing.
#[derive(Debug, Default)]
pub(crate) struct Schedule {
    heap: BinaryHeap<Reverse<Entry>>,
    next_seq: u64,
}

impl Schedule {
    pub(crate) fn push(&mut self, at_ns: u64, held: Held) {
        self.heap.push(Reverse(Entry {
            at_ns,
            seq: self.next_seq,
            held,
        }));
        self.next_seq += 1;
    }

    /// The earliest departure time, if any packet is held.
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse(e)| e.at_ns)
    }

    /// Removes and returns the earliest packet due at or before `now_ns`, with its departure time.
    pub(crate) fn pop_due(&mut self, now_ns: u64) -> Option<(u64, Held)> {
        match self.heap.peek() {
            Some(Reverse(e)) if e.at_ns <= now_ns => {
                self.heap.pop().map(|Reverse(e)| (e.at_ns, e.held))
            }
            _ => None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

/// How often [`ArrivalClock`] wants CLOCK_REALTIME − CLOCK_MONOTONIC sampled again. NTP slews
/// both clocks alike, so the offset changes only when CLOCK_REALTIME is stepped; a stamp that
/// falls outside its bounds also asks for a new sample at once.
const CLOCK_OFFSET_REFRESH_NS: u64 = 1_000_000_000;

/// A kernel stamp this much older than the read is taken for a stepped clock, not for a packet
/// that waited: the daemon runs at SCHED_FIFO priority and reads within milliseconds even on a
/// loaded machine.
pub(crate) const MAX_ARRIVAL_AGE_NS: u64 = 1_000_000_000;

/// The kernel stamps in whole microseconds, truncating: the packet arrived within the
/// microsecond after its stamp, on average half of it later.
const STAMP_ROUNDING_NS: i128 = 500;

/// Where a packet's arrival time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ArrivalSource {
    /// The kernel's stamp, converted to CLOCK_MONOTONIC.
    Kernel,
    /// The time the daemon read the packet: it had no stamp, or no clock offset was sampled.
    ReadTime,
    /// The stamp fell before the queue's previous arrival (that is used) or after the read (the
    /// read time is used).
    Clamped,
    /// The stamp was older than [`MAX_ARRIVAL_AGE_NS`]: the read time is used.
    Stale,
}

/// The arrival time for a packet the kernel stamped at `stamp_realtime_ns` (CLOCK_REALTIME),
/// read at `now_ns` (CLOCK_MONOTONIC), given CLOCK_REALTIME − CLOCK_MONOTONIC = `offset_ns` and
/// the previous arrival of its queue, `floor_ns`. The result lies in [`floor_ns`, `now_ns`]
/// (`now_ns` alone should the floor be later), so a bad stamp or offset can neither schedule a
/// packet after the time it was seen nor ahead of an earlier packet of its queue.
pub(crate) fn arrival_time(
    stamp_realtime_ns: u64,
    offset_ns: i64,
    floor_ns: u64,
    now_ns: u64,
) -> (u64, ArrivalSource) {
    let floor_ns = floor_ns.min(now_ns);
    let at = i128::from(stamp_realtime_ns) - i128::from(offset_ns) + STAMP_ROUNDING_NS;
    if at > i128::from(now_ns) {
        (now_ns, ArrivalSource::Clamped)
    } else if at < i128::from(now_ns) - i128::from(MAX_ARRIVAL_AGE_NS) {
        (now_ns, ArrivalSource::Stale)
    } else if at < i128::from(floor_ns) {
        (floor_ns, ArrivalSource::Clamped)
    } else {
        // Between floor_ns and now_ns, so within u64.
        (at as u64, ArrivalSource::Kernel)
    }
}

/// Turns the kernel's arrival stamps into the daemon's clock: holds the sampled offset between
/// CLOCK_REALTIME and CLOCK_MONOTONIC and says when to sample it again.
#[derive(Debug, Default)]
pub(crate) struct ArrivalClock {
    /// CLOCK_REALTIME − CLOCK_MONOTONIC in ns, and the CLOCK_MONOTONIC time it was sampled at.
    offset: Option<(i64, u64)>,
    /// A stamp fell outside its bounds: the clock may have been stepped.
    suspect: bool,
}

impl ArrivalClock {
    /// True when the offset should be sampled (again) before stamps are converted at `now_ns`.
    pub(crate) fn needs_offset(&self, now_ns: u64) -> bool {
        match self.offset {
            None => true,
            Some((_, at)) => self.suspect || now_ns.saturating_sub(at) >= CLOCK_OFFSET_REFRESH_NS,
        }
    }

    /// Records CLOCK_REALTIME − CLOCK_MONOTONIC as sampled at `now_ns`.
    pub(crate) fn set_offset(&mut self, realtime_minus_monotonic_ns: i64, now_ns: u64) {
        self.offset = Some((realtime_minus_monotonic_ns, now_ns));
        self.suspect = false;
    }

    /// The arrival time of a packet read at `now_ns` with the kernel's stamp `stamp_realtime_ns`
    /// (if any), whose queue's previous arrival was `floor_ns`: see [`arrival_time`].
    pub(crate) fn arrival(
        &mut self,
        stamp_realtime_ns: Option<u64>,
        floor_ns: u64,
        now_ns: u64,
    ) -> (u64, ArrivalSource) {
        let (Some(stamp), Some((offset, _))) = (stamp_realtime_ns, self.offset) else {
            return (now_ns, ArrivalSource::ReadTime);
        };
        let arrival = arrival_time(stamp, offset, floor_ns, now_ns);
        if arrival.1 != ArrivalSource::Kernel {
            self.suspect = true;
        }
        arrival
    }
}

/// How the daemon timed the packets it received, in a `show` response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ArrivalStats {
    /// Timed by the kernel's stamp.
    pub kernel: u64,
    /// Timed by the daemon's read: no stamp (the kernel stamps only while receive timestamps
    /// are enabled, see `nfqueue`) or no clock offset yet.
    pub read_time: u64,
    /// Stamps outside [the queue's previous arrival, the read], moved inside.
    pub clamped: u64,
    /// Stamps too old to believe; timed by the read instead.
    pub stale: u64,
    /// For the packets timed by the kernel's stamp: how long before the daemon read them they
    /// arrived, i.e. the error timing them by the read would have added.
    pub age: Lateness,
}

impl ArrivalStats {
    /// Counts one packet read at `now_ns` and given `arrival` (time and source).
    pub(crate) fn record(&mut self, arrival: (u64, ArrivalSource), now_ns: u64) {
        let (at, source) = arrival;
        match source {
            ArrivalSource::Kernel => {
                self.kernel += 1;
                self.age.record(now_ns as i64 - at as i64);
            }
            ArrivalSource::ReadTime => self.read_time += 1,
            ArrivalSource::Clamped => self.clamped += 1,
            ArrivalSource::Stale => self.stale += 1,
        }
    }
}

/// Upper bounds (exclusive, ns) of the lateness histogram's buckets; the last bucket is open.
pub const LATENESS_BOUNDS_NS: [u64; 7] =
    [10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000];

/// How late events happened relative to when they were due: a histogram of the late ones, a
/// count of the early ones, the mean and the extremes. Reported by the control socket's `show`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Lateness {
    pub count: u64,
    /// Events that happened before they were due (released within the release window).
    pub early: u64,
    /// Mean lateness; negative when early on average.
    pub mean_ns: i64,
    pub max_late_ns: u64,
    pub max_early_ns: u64,
    /// Counts of the events on time or late, per bucket of [`LATENESS_BOUNDS_NS`], then the
    /// count of 1 ms or more.
    pub buckets: [u64; 8],
    #[serde(skip)]
    sum_ns: i128,
}

impl Lateness {
    /// Records one event `late_ns` after it was due (negative: before).
    pub(crate) fn record(&mut self, late_ns: i64) {
        self.count += 1;
        self.sum_ns += i128::from(late_ns);
        self.mean_ns = (self.sum_ns / i128::from(self.count)) as i64;
        if late_ns < 0 {
            self.early += 1;
            self.max_early_ns = self.max_early_ns.max(late_ns.unsigned_abs());
            return;
        }
        let late_ns = late_ns as u64;
        self.max_late_ns = self.max_late_ns.max(late_ns);
        let bucket = LATENESS_BOUNDS_NS
            .iter()
            .position(|&bound| late_ns < bound)
            .unwrap_or(LATENESS_BOUNDS_NS.len());
        self.buckets[bucket] += 1;
    }

    /// Events at least `bound_ns` late; `None` unless `bound_ns` is one of
    /// [`LATENESS_BOUNDS_NS`], where the histogram can tell.
    pub fn at_least(&self, bound_ns: u64) -> Option<u64> {
        let bucket = LATENESS_BOUNDS_NS.iter().position(|&b| b == bound_ns)? + 1;
        Some(self.buckets[bucket..].iter().sum())
    }
}

/// The most the timer is armed ahead of a departure time.
const MAX_LEAD_NS: u64 = 200_000;

/// How far ahead of a departure time to arm the timer so the wake-up lands on it: a moving
/// average of how late recent wake-ups were (tens of µs in a VM, whose halted vCPU takes that
/// long to resume). Samples are capped so a rare preemption of milliseconds does not make every
/// later packet leave early.
#[derive(Debug, Default)]
pub(crate) struct WakeupLead {
    lead_ns: u64,
}

impl WakeupLead {
    /// Learns from a wake-up `late_ns` after the time the timer was armed for.
    pub(crate) fn record(&mut self, late_ns: u64) {
        let sample = late_ns.min(MAX_LEAD_NS) as i64;
        let lead = self.lead_ns as i64;
        self.lead_ns = (lead + (sample - lead) / 16) as u64;
    }

    /// When to arm the timer for a departure at `deadline_ns`, at `now_ns`: ahead by the lead,
    /// unless that is already past (a wake-up that came early), then at the deadline itself.
    pub(crate) fn arm_time(&self, deadline_ns: u64, now_ns: u64) -> u64 {
        let early = deadline_ns.saturating_sub(self.lead_ns);
        if early > now_ns {
            early
        } else {
            deadline_ns
        }
    }

    pub(crate) fn lead_ns(&self) -> u64 {
        self.lead_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(id: u32) -> Held {
        Held {
            queue: 0,
            packet_id: id,
        }
    }

    #[test]
    fn releases_in_time_order_and_ties_in_arrival_order() {
        let mut s = Schedule::default();
        s.push(300, held(1));
        s.push(100, held(2));
        s.push(200, held(3));
        s.push(100, held(4));
        s.push(100, held(0));
        assert_eq!(s.next_deadline(), Some(100));
        assert_eq!(s.pop_due(99), None);
        let due: Vec<u32> = std::iter::from_fn(|| s.pop_due(200))
            .map(|(_, h)| h.packet_id)
            .collect();
        assert_eq!(due, vec![2, 4, 0, 3]);
        assert_eq!(s.len(), 1);
        assert_eq!(s.next_deadline(), Some(300));
        assert_eq!(s.pop_due(1000), Some((300, held(1))));
        assert_eq!(s.next_deadline(), None);
    }

    const S: u64 = 1_000_000_000;
    /// CLOCK_REALTIME − CLOCK_MONOTONIC of a machine booted 2024-06-01.
    const OFFSET: i64 = 1_717_200_000 * S as i64;

    #[test]
    fn kernel_stamps_convert_to_the_monotonic_clock() {
        let now = 5_000 * S;
        // Stamped 60 µs before the read: the stamp, shifted by the offset, plus half its
        // microsecond of resolution.
        let stamp = (now - 60_000) + OFFSET as u64;
        assert_eq!(
            arrival_time(stamp, OFFSET, 0, now),
            (now - 60_000 + 500, ArrivalSource::Kernel)
        );
        // A stamp equal to the floor is kept.
        assert_eq!(
            arrival_time(stamp, OFFSET, now - 59_500, now),
            (now - 59_500, ArrivalSource::Kernel)
        );
        // A negative offset (CLOCK_REALTIME set before the boot) converts as well.
        assert_eq!(
            arrival_time(now - 80_000 - 7 * S, -7 * S as i64, 0, now),
            (now - 80_000 + 500, ArrivalSource::Kernel)
        );
    }

    #[test]
    fn bad_stamps_stay_between_the_previous_arrival_and_the_read() {
        let now = 5_000 * S;
        let floor = now - 100_000;
        let real = |mono: u64| mono + OFFSET as u64;
        // After the read (a clock stepped forward): the read time.
        assert_eq!(
            arrival_time(real(now + 3 * S), OFFSET, floor, now),
            (now, ArrivalSource::Clamped)
        );
        assert_eq!(
            arrival_time(real(now), OFFSET, floor, now),
            (now, ArrivalSource::Clamped),
            "the half-microsecond rounding never passes the read"
        );
        // Before the queue's previous arrival: that arrival, so the queue keeps its order.
        assert_eq!(
            arrival_time(real(floor - 10_000), OFFSET, floor, now),
            (floor, ArrivalSource::Clamped)
        );
        // Older than a second (a clock stepped back): the read time.
        assert_eq!(
            arrival_time(real(now - 2 * S), OFFSET, 0, now),
            (now, ArrivalSource::Stale)
        );
        // Far outside u64 after the offset: no overflow.
        assert_eq!(
            arrival_time(u64::MAX, i64::MIN, floor, now),
            (now, ArrivalSource::Clamped)
        );
        assert_eq!(
            arrival_time(0, i64::MAX, floor, now),
            (now, ArrivalSource::Stale)
        );
        // A floor after the read (cannot happen with one monotonic clock) yields the read.
        assert_eq!(
            arrival_time(real(now - 50_000), OFFSET, now + S, now),
            (now, ArrivalSource::Clamped)
        );
    }

    #[test]
    fn arrival_clock_samples_its_offset_when_due_or_suspect() {
        let mut clock = ArrivalClock::default();
        let now = 5_000 * S;
        let stamp = now - 40_000 + OFFSET as u64;
        assert!(clock.needs_offset(now));
        // Without an offset, stamps cannot be converted.
        assert_eq!(
            clock.arrival(Some(stamp), 0, now),
            (now, ArrivalSource::ReadTime)
        );
        clock.set_offset(OFFSET, now);
        assert!(!clock.needs_offset(now + S - 1));
        assert!(clock.needs_offset(now + S), "refreshed every second");
        assert_eq!(
            clock.arrival(Some(stamp), 0, now),
            (now - 39_500, ArrivalSource::Kernel)
        );
        assert_eq!(clock.arrival(None, 0, now), (now, ArrivalSource::ReadTime));
        assert!(!clock.needs_offset(now));
        // A stamp out of bounds makes the offset suspect: sampled again before the next batch.
        assert_eq!(
            clock.arrival(Some(stamp + S), 0, now),
            (now, ArrivalSource::Clamped)
        );
        assert!(clock.needs_offset(now));
        clock.set_offset(OFFSET, now);
        assert!(!clock.needs_offset(now));
    }

    #[test]
    fn arrival_stats_count_sources_and_age() {
        let mut stats = ArrivalStats::default();
        stats.record((900, ArrivalSource::Kernel), 1_000);
        stats.record((940, ArrivalSource::Kernel), 1_000);
        stats.record((1_000, ArrivalSource::ReadTime), 1_000);
        stats.record((1_000, ArrivalSource::Clamped), 1_000);
        stats.record((1_000, ArrivalSource::Stale), 1_000);
        assert_eq!(
            (stats.kernel, stats.read_time, stats.clamped, stats.stale),
            (2, 1, 1, 1)
        );
        assert_eq!(stats.age.count, 2);
        assert_eq!(stats.age.mean_ns, 80);
        assert_eq!(stats.age.max_late_ns, 100);
    }

    #[test]
    fn lateness_histogram() {
        let mut l = Lateness::default();
        for ns in [5_000, 15_000, 15_000, 2_000_000, -7_000, -3_000] {
            l.record(ns);
        }
        assert_eq!((l.count, l.early), (6, 2));
        assert_eq!((l.max_late_ns, l.max_early_ns), (2_000_000, 7_000));
        assert_eq!(l.mean_ns, (5_000 + 30_000 + 2_000_000 - 10_000) / 6);
        assert_eq!(l.buckets, [1, 2, 0, 0, 0, 0, 0, 1]);
        l.record(300_000);
        assert_eq!(l.at_least(10_000), Some(4));
        assert_eq!(l.at_least(200_000), Some(2));
        assert_eq!(l.at_least(500_000), Some(1));
        assert_eq!(l.at_least(1_000_000), Some(1));
        assert_eq!(l.at_least(300_000), None);
    }

    #[test]
    fn wakeup_lead_follows_lateness_but_ignores_spikes() {
        let mut lead = WakeupLead::default();
        assert_eq!(lead.arm_time(1_000_000, 0), 1_000_000);
        for _ in 0..200 {
            lead.record(60_000);
        }
        assert!(
            (59_000..=60_000).contains(&lead.lead_ns()),
            "{}",
            lead.lead_ns()
        );
        lead.record(50_000_000);
        assert!(lead.lead_ns() < 60_000 + 200_000 / 16, "{}", lead.lead_ns());
        let l = lead.lead_ns();
        assert_eq!(lead.arm_time(1_000_000, 0), 1_000_000 - l);
        // Too late to arm ahead: arm at the deadline.
        assert_eq!(lead.arm_time(1_000_000, 1_000_000 - l), 1_000_000);
    }
}
