//! The sans-IO record of one echo session: what was sent when, which replies came back, and the
//! round-trip times they imply.
//!
//! The socket loop in `echo` feeds it send and receive events with times on its monotonic clock;
//! everything about matching replies (duplicates, reordering, strays) and how long to wait for
//! late ones is decided here, so it is tested without a network.

use super::packet::Echo;
use super::rtt::RttReport;
use crate::stats::Summary;

/// Nanoseconds per millisecond, for reports in milliseconds.
const NS_PER_MS: f64 = 1e6;

/// The least time to wait for late replies after the last send.
const MIN_DRAIN_NS: u64 = 1_000_000_000;

/// The most time to wait for late replies after the last send, however slow the path looked.
const MAX_DRAIN_NS: u64 = 30_000_000_000;

/// What a received datagram turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// The first reply to a ping, with its round-trip time.
    Fresh { rtt_ns: u64 },
    /// A second copy of a reply already counted.
    Duplicate,
    /// Not a reply to a ping of this session (another session, or a forged or garbled time).
    Foreign,
}

/// Sends and replies of one session, indexed by sequence number.
#[derive(Debug, Clone)]
pub struct EchoLog {
    session: u64,
    sent_ns: Vec<u64>,
    rtt_ns: Vec<Option<u64>>,
    received: u64,
    duplicates: u64,
    reordered: u64,
    highest_answered: Option<u64>,
    max_rtt_ns: u64,
}

impl EchoLog {
    /// An empty log for the session id `session` (random, chosen by the caller).
    pub fn new(session: u64) -> EchoLog {
        EchoLog {
            session,
            sent_ns: Vec::new(),
            rtt_ns: Vec::new(),
            received: 0,
            duplicates: 0,
            reordered: 0,
            highest_answered: None,
            max_rtt_ns: 0,
        }
    }

    /// Records a ping sent at `now_ns` and returns the header to put in it.
    pub fn on_send(&mut self, now_ns: u64) -> Echo {
        let seq = self.sent_ns.len() as u64;
        self.sent_ns.push(now_ns);
        self.rtt_ns.push(None);
        Echo {
            session: self.session,
            seq,
            sent_ns: now_ns,
            held_ns: 0,
        }
    }

    /// Records a reply read at `now_ns` after waiting `queued_ns` in the socket (the kernel's
    /// receive stamp to the read). A reply counts only if it carries this session, a sequence
    /// number that was sent and that ping's send time; it need not arrive in order. Its RTT
    /// leaves out the server's hold time and the client's own wait, as `ping`'s kernel stamps
    /// do; a hold longer than the whole round trip is garbled (foreign), and a wait longer
    /// than what is left can only be a step of the wall clock, so it is ignored.
    pub fn on_reply(&mut self, echo: Echo, now_ns: u64, queued_ns: u64) -> Reply {
        let Ok(index) = usize::try_from(echo.seq) else {
            return Reply::Foreign;
        };
        if echo.session != self.session
            || self.sent_ns.get(index) != Some(&echo.sent_ns)
            || now_ns < echo.sent_ns.saturating_add(echo.held_ns)
        {
            return Reply::Foreign;
        }
        if self.rtt_ns[index].is_some() {
            self.duplicates += 1;
            return Reply::Duplicate;
        }
        let unheld_ns = now_ns - echo.sent_ns - echo.held_ns;
        let rtt_ns = unheld_ns.checked_sub(queued_ns).unwrap_or(unheld_ns);
        self.rtt_ns[index] = Some(rtt_ns);
        self.received += 1;
        self.max_rtt_ns = self.max_rtt_ns.max(rtt_ns);
        match self.highest_answered {
            Some(highest) if echo.seq < highest => self.reordered += 1,
            _ => self.highest_answered = Some(echo.seq),
        }
        Reply::Fresh { rtt_ns }
    }

    /// Pings sent so far.
    pub fn sent(&self) -> u64 {
        self.sent_ns.len() as u64
    }

    /// Nanoseconds from the first send to the last (0 with fewer than two sends).
    pub fn send_span_ns(&self) -> u64 {
        match (self.sent_ns.first(), self.sent_ns.last()) {
            (Some(first), Some(last)) => last.saturating_sub(*first),
            _ => 0,
        }
    }

    /// Pings answered so far (each counted once).
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Whether every ping sent so far has been answered, so no reply is outstanding.
    pub fn all_answered(&self) -> bool {
        self.received == self.sent()
    }

    /// How long to keep listening after the last send: max(1 s, 3 × the largest RTT seen),
    /// at most 30 s. Three times the worst RTT lets replies queued behind a burst arrive, while
    /// a reply later than that is as good as lost to anyone using the path.
    pub fn drain_wait_ns(&self) -> u64 {
        self.max_rtt_ns
            .saturating_mul(3)
            .clamp(MIN_DRAIN_NS, MAX_DRAIN_NS)
    }

    /// The session's report: counts, loss, RTT summary in milliseconds and, with
    /// `keep_samples`, every ping's RTT in sequence order (`None` for a ping never answered).
    pub fn report(&self, target: String, keep_samples: bool) -> RttReport {
        let rtts_ms: Vec<f64> = self
            .rtt_ns
            .iter()
            .flatten()
            .map(|&ns| ns as f64 / NS_PER_MS)
            .collect();
        let sent = self.sent();
        RttReport {
            target,
            sent,
            received: self.received,
            loss_rate: if sent == 0 {
                0.0
            } else {
                1.0 - self.received as f64 / sent as f64
            },
            duplicates: self.duplicates,
            reordered: self.reordered,
            rtt_ms: Summary::of(&rtts_ms),
            samples_ms: keep_samples.then(|| {
                self.rtt_ns
                    .iter()
                    .map(|rtt| rtt.map(|ns| ns as f64 / NS_PER_MS))
                    .collect()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn replies_match_their_pings_in_any_order() {
        let mut log = EchoLog::new(7);
        let pings: Vec<Echo> = (0..4).map(|i| log.on_send(i * 10 * MS)).collect();
        assert_eq!(log.send_span_ns(), 30 * MS);
        assert_eq!(pings[2].seq, 2);
        assert_eq!(
            log.on_reply(pings[1], 15 * MS, 0),
            Reply::Fresh { rtt_ns: 5 * MS }
        );
        // Ping 0 answered after ping 1: reordered, yet its RTT counts.
        assert_eq!(
            log.on_reply(pings[0], 20 * MS, 0),
            Reply::Fresh { rtt_ns: 20 * MS }
        );
        assert_eq!(log.on_reply(pings[1], 21 * MS, 0), Reply::Duplicate);
        // A late reply, after later pings were sent, still counts.
        assert_eq!(
            log.on_reply(pings[3], 31 * MS, 0),
            Reply::Fresh { rtt_ns: MS }
        );
        assert!(!log.all_answered());

        let report = log.report("t".into(), true);
        assert_eq!((report.sent, report.received), (4, 3));
        assert_eq!((report.duplicates, report.reordered), (1, 1));
        assert!((report.loss_rate - 0.25).abs() < 1e-12);
        let rtt = report.rtt_ms.unwrap();
        assert_eq!((rtt.min, rtt.p50, rtt.max), (1.0, 5.0, 20.0));
        assert_eq!(
            report.samples_ms,
            Some(vec![Some(20.0), Some(5.0), None, Some(1.0)])
        );
    }

    #[test]
    fn strays_are_not_counted() {
        let mut log = EchoLog::new(7);
        let ping = log.on_send(MS);
        let other_session = Echo { session: 8, ..ping };
        let wrong_time = Echo {
            sent_ns: 2 * MS,
            ..ping
        };
        let never_sent = Echo { seq: 5, ..ping };
        for stray in [other_session, wrong_time, never_sent] {
            assert_eq!(log.on_reply(stray, 3 * MS, 0), Reply::Foreign);
        }
        // A reply "before" its send is a broken clock or a forgery.
        assert_eq!(log.on_reply(ping, 0, 0), Reply::Foreign);
        assert_eq!(log.received(), 0);
        assert!(log.report("t".into(), false).samples_ms.is_none());
    }

    #[test]
    fn the_servers_hold_and_the_clients_wait_are_left_out() {
        let mut log = EchoLog::new(7);
        let pings: Vec<Echo> = (0..3).map(|_| log.on_send(MS)).collect();
        let held = |ping: Echo, held_ns: u64| Echo { held_ns, ..ping };
        // 10 ms from send to read: 0.3 ms in the server, 0.2 ms waiting for the client.
        assert_eq!(
            log.on_reply(held(pings[0], 300_000), 11 * MS, 200_000),
            Reply::Fresh { rtt_ns: 9_500_000 }
        );
        // A hold longer than the round trip is garbled.
        assert_eq!(
            log.on_reply(held(pings[1], 11 * MS), 11 * MS, 0),
            Reply::Foreign
        );
        // A wait longer than what is left is a step of the wall clock: not taken out.
        assert_eq!(
            log.on_reply(held(pings[2], MS), 11 * MS, 20 * MS),
            Reply::Fresh { rtt_ns: 9 * MS }
        );
    }

    #[test]
    fn drain_wait_follows_the_worst_rtt_within_bounds() {
        let mut log = EchoLog::new(1);
        assert_eq!(log.drain_wait_ns(), 1_000 * MS);
        let a = log.on_send(0);
        log.on_reply(a, 500 * MS, 0);
        assert_eq!(log.drain_wait_ns(), 1_500 * MS);
        let b = log.on_send(0);
        log.on_reply(b, 20_000 * MS, 0);
        assert_eq!(log.drain_wait_ns(), 30_000 * MS);
        assert!(log.all_answered());
    }

    #[test]
    fn nothing_answered_means_full_loss_and_no_summary() {
        let mut log = EchoLog::new(1);
        log.on_send(0);
        log.on_send(MS);
        let report = log.report("t".into(), false);
        assert_eq!(report.loss_rate, 1.0);
        assert_eq!(report.rtt_ms, None);
    }
}
