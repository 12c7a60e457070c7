//! `LinkShaper`: the sans-IO model of one tc-netem qdisc, i.e. one direction of a link.
//!
//! The userspace backend holds each packet (on NFQUEUE) and asks the shaper when it should
//! leave; the shaper answers as `netem_enqueue()` in the kernel's `net/sched/sch_netem.c` would
//! schedule it: the same order of decisions (loss, then the queue limit, then the delay, then the
//! rate), the same fixed-point arithmetic and the same correlated random numbers
//! (`get_crandom()`), driven by a seeded PRNG instead of the kernel's `prandom_u32_state()`, so a
//! run is reproducible from its seed. Time is passed in (nanoseconds, any monotonic clock).
//!
//! What netem does that this model leaves out, because cdnlab's impairments do not use it:
//! duplication, corruption, reordering by `gap`, slots, ECN marking, and the 4-state and
//! Gilbert-Elliott loss models. One idealisation: a packet counts as departed from the instant
//! of its departure time, where the kernel frees its place when the device next dequeues.
//!
//! `distribution: None` means uniform jitter, as with tc: `tc qdisc ... netem delay 50ms 10ms`
//! without `distribution` sends no table (iproute2's `netem_parse_opt()` in `tc/q_netem.c` only
//! loads one on `distribution X`; checked with strace on tc 6.1: `normal.dist` is opened only when
//! named), and the kernel's `tabledist()` is uniform when no table is loaded. The tc-netem(8)
//! man page's "If not specified, the default distribution is Normal" is wrong about this.

use crate::distribution::{self, tabledist};
use crate::params::Impairments;
use crate::shaper_random::{probability_to_u32, Crandom};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What netem counts on top of the IP packet: on a veth or Ethernet device the root qdisc sees
/// the frame with its 14-byte Ethernet header (`qdisc_pkt_len()`, no FCS), and the rate applies
/// to that length.
pub const ETHERNET_HEADER_LEN: u32 = 14;

/// The fate of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Drop(DropReason),
    /// Send the packet at this time (nanoseconds, the clock of `now_ns`). It can be earlier than
    /// `now_ns` when the jitter exceeds the delay: netem keeps that time, so the packet leaves at
    /// once, ordered by it.
    SendAt(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// Random loss (`loss random P [C]`).
    Loss,
    /// Tail drop: `limit` packets were already waiting.
    QueueFull,
}

/// Counters of one shaper. `packets` and `bytes` count the packets accepted (given a departure
/// time) as they go on the wire, a GSO packet as its segments; bytes are frame bytes as netem
/// counts them (IP length + [`ETHERNET_HEADER_LEN`] per segment): what `tc -s qdisc` reports.
/// `units` counts the queue's entries, a GSO packet once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShaperStats {
    pub packets: u64,
    pub bytes: u64,
    #[serde(default)]
    pub units: u64,
    pub dropped_loss: u64,
    pub dropped_queue_full: u64,
}

/// The impairments as the kernel holds them after tc has converted them (`netem_change()`).
#[derive(Debug, Clone)]
struct KernelParams {
    /// `q->latency`, ns.
    latency: i64,
    /// `q->jitter`, ns, capped to `INT_MAX` as `netem_change()` caps it for `tabledist()`.
    jitter: i32,
    /// `q->loss`, scaled by tc's `set_percent()`.
    loss: u32,
    /// `q->rate` in bytes per second: tc's `get_rate64()` divides bits by 8 and truncates.
    /// 0 is no rate, as in the kernel (so a rate below 8 bit/s is none).
    rate: u64,
    limit: usize,
    table: Option<&'static [i16]>,
    delay_rho: u32,
    loss_rho: u32,
}

impl KernelParams {
    fn new(impairments: &Impairments) -> Self {
        KernelParams {
            latency: i64::try_from(impairments.delay_ns).unwrap_or(i64::MAX),
            jitter: i32::try_from(impairments.jitter_ns).unwrap_or(i32::MAX),
            loss: probability_to_u32(impairments.loss),
            rate: impairments.rate_bps.map_or(0, |bps| bps / 8),
            limit: impairments.limit as usize,
            table: impairments.distribution.and_then(distribution::table),
            delay_rho: probability_to_u32(impairments.delay_correlation),
            loss_rho: probability_to_u32(impairments.loss_correlation),
        }
    }

    /// `packet_time_ns()`: the time to serialise `frame_len` bytes at the rate.
    fn packet_time_ns(&self, frame_len: u64) -> u64 {
        frame_len * 1_000_000_000 / self.rate
    }
}

/// One netem qdisc: see the module documentation.
#[derive(Debug)]
pub struct LinkShaper {
    impairments: Impairments,
    kernel: KernelParams,
    rng: StdRng,
    delay_cor: Crandom,
    loss_cor: Crandom,
    /// Departure times of the entries that have not departed, earliest first (netem's tfifo),
    /// each with the wire packets it holds.
    tfifo: BinaryHeap<Reverse<(u64, u32)>>,
    /// The wire packets in `tfifo`: what the limit counts.
    queued_packets: usize,
    /// The latest departure time in `tfifo`; meaningful only while `tfifo` is not empty.
    tfifo_last: u64,
    stats: ShaperStats,
    /// See [`LinkShaper::least_delay_ns`]; follows the impairments.
    least_delay_ns: u64,
}

impl LinkShaper {
    /// A shaper whose random decisions all follow from `seed`.
    pub fn new(impairments: Impairments, seed: u64) -> Self {
        let kernel = KernelParams::new(&impairments);
        let mut rng = StdRng::seed_from_u64(seed);
        let delay_cor = Crandom::new(kernel.delay_rho, rng.next_u32());
        let loss_cor = Crandom::new(kernel.loss_rho, rng.next_u32());
        LinkShaper {
            impairments,
            rng,
            delay_cor,
            loss_cor,
            tfifo: BinaryHeap::new(),
            queued_packets: 0,
            tfifo_last: 0,
            stats: ShaperStats::default(),
            least_delay_ns: least_delay_ns(&kernel),
            kernel,
        }
    }

    /// Changes the impairments at run time, as `tc qdisc change` does: packets already queued
    /// keep their departure times; later packets get the new impairments and queue behind them.
    /// A correlated source whose correlation changes restarts from a random point, as
    /// `init_crandom()` does on a change.
    pub fn set(&mut self, impairments: Impairments) {
        let kernel = KernelParams::new(&impairments);
        if kernel.delay_rho != self.delay_cor.rho() {
            self.delay_cor = Crandom::new(kernel.delay_rho, self.rng.next_u32());
        }
        if kernel.loss_rho != self.loss_cor.rho() {
            self.loss_cor = Crandom::new(kernel.loss_rho, self.rng.next_u32());
        }
        self.least_delay_ns = least_delay_ns(&kernel);
        self.kernel = kernel;
        self.impairments = impairments;
    }

    pub fn impairments(&self) -> &Impairments {
        &self.impairments
    }

    /// The least time from its arrival to its departure that any packet enqueued from now on
    /// can get (ns). The daemon may read an arrival this late without making it late.
    pub fn least_delay_ns(&self) -> u64 {
        self.least_delay_ns
    }

    /// Decides the fate of a packet of `len` bytes arriving at `now_ns`, as `netem_enqueue()`:
    ///
    /// 1. loss: dropped when `loss >= get_crandom(loss_cor)` (no number is drawn at 0% loss);
    /// 2. limit: dropped when `limit` packets are waiting (`sch->q.qlen >= sch->limit`);
    /// 3. delay: `tabledist(latency, jitter, get_crandom(delay_cor), table)`;
    /// 4. rate: the packet leaves one serialisation time (`packet_time_ns()`) after the later of
    ///    its own delayed time and the departure of the last packet still queued; when every
    ///    earlier packet has already left, after `now + delay`. So with a rate packets stay in
    ///    order and queue behind each other; without one, jittered packets can overtake each
    ///    other (the tfifo is sorted by time).
    ///
    /// `len` is the IP packet length (what NFQUEUE reports); netem counts the Ethernet frame, so
    /// [`ETHERNET_HEADER_LEN`] is added here.
    pub fn enqueue(&mut self, now_ns: u64, len: u32) -> Verdict {
        self.enqueue_segments(now_ns, u64::from(len), 1)
    }

    /// [`LinkShaper::enqueue`] for a GSO packet that goes on the wire as `segments` IP packets
    /// of `ip_bytes` in all: one queue entry, one draw of loss and delay, and the serialisation
    /// time of all its frames, as `netem_enqueue()` treats a GSO skb (`qdisc_pkt_len()` counts
    /// every segment's headers). The limit counts wire packets, so a limit means the same with
    /// and without GSO: the entry is refused when `limit` wire packets already wait (netem's
    /// `qlen >= limit` test), else taken whole, which may overfill the queue by one entry.
    pub fn enqueue_segments(&mut self, now_ns: u64, ip_bytes: u64, segments: u32) -> Verdict {
        let segments = segments.max(1);
        let frame_len = ip_bytes + u64::from(segments) * u64::from(ETHERNET_HEADER_LEN);
        self.forget_departed(now_ns);

        if self.loss_event() {
            self.stats.dropped_loss += 1;
            return Verdict::Drop(DropReason::Loss);
        }
        if self.queued_packets >= self.kernel.limit {
            self.stats.dropped_queue_full += 1;
            return Verdict::Drop(DropReason::QueueFull);
        }

        let (rng, delay_cor) = (&mut self.rng, &mut self.delay_cor);
        let delay = tabledist(
            self.kernel.latency,
            self.kernel.jitter,
            || delay_cor.next(rng.next_u32()),
            self.kernel.table,
        );
        let time = if self.kernel.rate > 0 {
            let last = (!self.tfifo.is_empty()).then_some(self.tfifo_last);
            rate_departure(now_ns, delay, last, self.kernel.packet_time_ns(frame_len))
        } else {
            now_ns.saturating_add_signed(delay)
        };

        self.tfifo_last = if self.tfifo.is_empty() {
            time
        } else {
            self.tfifo_last.max(time)
        };
        self.tfifo.push(Reverse((time, segments)));
        self.queued_packets += segments as usize;
        self.stats.packets += u64::from(segments);
        self.stats.units += 1;
        self.stats.bytes += frame_len;
        Verdict::SendAt(time)
    }

    /// Wire packets accepted but not yet departed at `now_ns`.
    pub fn queued(&self, now_ns: u64) -> usize {
        self.tfifo
            .iter()
            .filter(|Reverse((time, _))| *time > now_ns)
            .map(|Reverse((_, segments))| *segments as usize)
            .sum()
    }

    pub fn stats(&self) -> ShaperStats {
        self.stats
    }

    /// `loss_event()` for the random loss model.
    fn loss_event(&mut self) -> bool {
        self.kernel.loss != 0 && self.kernel.loss >= self.loss_cor.next(self.rng.next_u32())
    }

    /// Removes the packets that have left by `now_ns` (`netem_dequeue()` sends a packet once
    /// `time_to_send <= now`).
    fn forget_departed(&mut self, now_ns: u64) {
        while let Some(&Reverse((time, segments))) = self.tfifo.peek() {
            if time > now_ns {
                break;
            }
            self.tfifo.pop();
            self.queued_packets -= segments as usize;
        }
    }
}

/// [`LinkShaper::least_delay_ns`] of `kernel`: the delay with the jitter at its lowest,
/// `tabledist()` at the smallest table entry (it grows with the entry; the table is looked
/// through only when there is jitter) or at the uniform jitter's lower bound, and 0 when the
/// jitter reaches below zero. A rate only adds to it.
fn least_delay_ns(kernel: &KernelParams) -> u64 {
    let table = kernel.table.filter(|_| kernel.jitter != 0);
    let lowest_entry = table.and_then(|table| (0..table.len()).min_by_key(|&i| table[i]));
    let least = tabledist(
        kernel.latency,
        kernel.jitter,
        || lowest_entry.unwrap_or(0) as u32,
        kernel.table,
    );
    u64::try_from(least).unwrap_or(0)
}

/// The departure time with a rate, as `netem_enqueue()` computes it: "Last packet in queue is
/// reference point (now), calculate this time bonus and subtract from delay", i.e.
/// `delay = max(0, delay - (last - now)); now = last;`, then the packet's own serialisation time
/// is added. Without a queued packet the reference is `now` itself.
fn rate_departure(now: u64, delay: i64, last: Option<u64>, packet_time: u64) -> u64 {
    let start = match last {
        Some(last) => {
            let bonus = i128::from(last) - i128::from(now);
            let delay = (i128::from(delay) - bonus).max(0);
            i128::from(last) + delay
        }
        None => i128::from(now) + i128::from(delay),
    };
    let time = start + i128::from(packet_time);
    u64::try_from(time.max(0)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
