//! When the shaper daemon may leave a socket's arrivals unread until its next timer wake-up.
//!
//! A packet's arrival is the kernel's receive stamp, not the time the daemon reads it, so a
//! packet read late is still timed right, as long as it is read before it is due. No packet can
//! be due sooner than the least delay of the queues it may come to (`LinkShaper::least_delay_ns`)
//! after its arrival, and every packet still unread on a socket arrived after a read last found
//! it empty. So while the daemon's timer will fire at least [`DEFER_MARGIN_NS`] before that
//! read plus the least delay, the socket need not wake the daemon: it is taken out of the epoll
//! set and read at every wake-up. Under a TCP flow the sender's packets come on its own pacing
//! timers, and each woke the daemon on its own: at 100 Mbit/s about as many wake-ups as the
//! departures made (BENCHMARKS.md, "cpu").

use crate::daemon_schedule::MAX_ARRIVAL_AGE_NS;
use crate::shaper::LinkShaper;

/// How much sooner than an unread packet could be due the timer must fire for the daemon to
/// leave the packet unread until then: more than a timer wake-up is late but for the rarest
/// (BENCHMARKS.md, "Timer wake-ups": p99.9 under 0.9 ms), and more than the few µs between the
/// kernel's stamp and the packet reaching the socket. A wake-up later than the margin makes a
/// deferred packet late by what it exceeds it, less than the departure it woke for.
pub(crate) const DEFER_MARGIN_NS: u64 = 1_000_000;

/// The most batches read from a socket out of the epoll set at one wake-up; a socket with more
/// left is watched again.
pub(crate) const MAX_DEFERRED_BATCHES: usize = 16;

/// How long a socket's arrivals are read at once after a packet came to a queue left out of its
/// least delay, a queue became unimpaired (its NFQUEUE rule goes only after the daemon has the
/// change), or a deferred read found a packet already due.
const HOLD_OFF_NS: u64 = 1_000_000_000;

/// The longest an arrival is left unread: a stamp older than [`MAX_ARRIVAL_AGE_NS`] is taken
/// for a stepped clock, and the packet timed by its read.
const MAX_DEFERRAL_NS: u64 = MAX_ARRIVAL_AGE_NS / 2;

/// What decides whether one socket's arrivals can wait for the timer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Deferral {
    /// The least delay of the socket's impaired queues ([`least_delay_ns`]).
    pub(crate) least_delay_ns: u64,
    /// Until then (CLOCK_MONOTONIC ns) the socket's arrivals are read at once.
    undeferred_until: u64,
    /// When a read last found nothing more waiting: every packet still unread arrived after it.
    drained_at: Option<u64>,
    /// The socket's latest packet was timed by the kernel's stamp (a packet without one is
    /// timed by its read, which must then come at once).
    stamped: bool,
}

impl Deferral {
    /// A read that began at `looked_at` left nothing (`more` false) or maybe something waiting.
    pub(crate) fn read(&mut self, looked_at: u64, more: bool) {
        self.drained_at = (!more).then_some(looked_at);
    }

    /// A packet read at `now`, timed by its kernel stamp or not, came to a queue counted in
    /// the least delay or not.
    pub(crate) fn arrival(&mut self, stamped: bool, counted_queue: bool, now: u64) {
        self.stamped = stamped;
        if !counted_queue {
            self.hold_off(now);
        }
    }

    /// Reads arrivals at once for a while from `now`.
    pub(crate) fn hold_off(&mut self, now: u64) {
        self.undeferred_until = now.saturating_add(HOLD_OFF_NS);
    }

    /// True when, at `now`, with the timer armed for `armed` (CLOCK_MONOTONIC ns), no packet
    /// unread on the socket can be due before the timer fires plus [`DEFER_MARGIN_NS`].
    pub(crate) fn can_wait(&self, armed: Option<u64>, now: u64) -> bool {
        let (Some(armed), Some(drained)) = (armed, self.drained_at) else {
            return false;
        };
        let horizon = self.least_delay_ns.min(MAX_DEFERRAL_NS);
        self.stamped
            && now >= self.undeferred_until
            && armed.saturating_add(DEFER_MARGIN_NS) <= drained.saturating_add(horizon)
    }
}

/// Whether a queue's least delay counts for its socket: not when it is unimpaired and gets no
/// packets then (`no_rule_when_unimpaired`: a lab removes such a direction's NFQUEUE rule).
pub(crate) fn counts(shaper: &LinkShaper, no_rule_when_unimpaired: bool) -> bool {
    !(no_rule_when_unimpaired && shaper.impairments().is_none())
}

/// The least delay of the queues that count among `queues` (each a shaper and its
/// `no_rule_when_unimpaired`; 0 if none counts).
pub(crate) fn least_delay_ns<'a>(queues: impl Iterator<Item = (&'a LinkShaper, bool)>) -> u64 {
    queues
        .filter(|&(shaper, no_rule)| counts(shaper, no_rule))
        .map(|(shaper, _)| shaper.least_delay_ns())
        .min()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Impairments;

    const MS: u64 = 1_000_000;

    /// A socket drained at 100 ms whose queues delay at least 20 ms, its last packet stamped.
    fn drained_at_100_ms() -> Deferral {
        let mut deferral = Deferral {
            least_delay_ns: 20 * MS,
            ..Deferral::default()
        };
        deferral.arrival(true, true, 100 * MS);
        deferral.read(100 * MS, false);
        deferral
    }

    #[test]
    fn arrivals_wait_only_for_a_timer_that_fires_a_margin_before_any_can_be_due() {
        let deferral = drained_at_100_ms();
        let now = 100 * MS;
        assert!(deferral.can_wait(Some(101 * MS), now));
        assert!(deferral.can_wait(Some(120 * MS - DEFER_MARGIN_NS), now));
        assert!(!deferral.can_wait(Some(120 * MS - DEFER_MARGIN_NS + 1), now));
        assert!(
            !deferral.can_wait(None, now),
            "no timer: nothing would read them"
        );
    }

    #[test]
    fn a_socket_not_drained_or_timed_by_its_reads_is_watched() {
        let mut more_left = drained_at_100_ms();
        more_left.read(100 * MS, true);
        assert!(!more_left.can_wait(Some(101 * MS), 100 * MS));

        let mut unstamped = drained_at_100_ms();
        unstamped.arrival(false, true, 100 * MS);
        assert!(!unstamped.can_wait(Some(101 * MS), 100 * MS));
        unstamped.arrival(true, true, 100 * MS);
        assert!(unstamped.can_wait(Some(101 * MS), 100 * MS));
    }

    #[test]
    fn a_packet_to_an_unimpaired_queue_holds_deferral_off_for_a_while() {
        let mut deferral = drained_at_100_ms();
        deferral.arrival(true, false, 100 * MS);
        assert!(!deferral.can_wait(Some(101 * MS), 100 * MS));
        let later = 100 * MS + HOLD_OFF_NS;
        deferral.read(later, false);
        assert!(deferral.can_wait(Some(later + MS), later));

        deferral.hold_off(later);
        assert!(!deferral.can_wait(Some(later + MS), later));
    }

    #[test]
    fn arrivals_wait_no_longer_than_half_the_age_a_stamp_is_believed() {
        let mut deferral = drained_at_100_ms();
        deferral.least_delay_ns = 10 * MAX_ARRIVAL_AGE_NS;
        let now = 100 * MS;
        assert!(deferral.can_wait(Some(now + MAX_DEFERRAL_NS - DEFER_MARGIN_NS), now));
        assert!(!deferral.can_wait(Some(now + MAX_DEFERRAL_NS), now));
    }

    #[test]
    fn the_least_delay_leaves_out_unimpaired_queues_without_a_rule() {
        let delayed = |ms: u64| {
            LinkShaper::new(
                Impairments {
                    delay_ns: ms * MS,
                    ..Impairments::default()
                },
                1,
            )
        };
        let unimpaired = LinkShaper::new(Impairments::default(), 1);
        let rate_only = LinkShaper::new(
            Impairments {
                rate_bps: Some(1_000_000),
                ..Impairments::default()
            },
            1,
        );
        let (twenty, five) = (delayed(20), delayed(5));
        let without_rules = [(&twenty, true), (&unimpaired, true), (&five, true)];
        assert_eq!(least_delay_ns(without_rules.into_iter()), 5 * MS);
        // A container keeps the rule of an unimpaired queue: its packets leave at once.
        let with_rule = [(&twenty, false), (&unimpaired, false)];
        assert_eq!(least_delay_ns(with_rule.into_iter()), 0);
        assert_eq!(
            least_delay_ns([(&twenty, true), (&rate_only, true)].into_iter()),
            0
        );
        assert_eq!(least_delay_ns(std::iter::empty()), 0);
    }
}
