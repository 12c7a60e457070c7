//! Sans-IO bookkeeping of the shaper daemon: the verdicts waiting for their departure time, and
//! how late they were given.

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
