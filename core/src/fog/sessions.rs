//! An FDN's open sessions, bounded: a viewer opens one with a single small request and the FDN
//! then gets every segment of the video for it, so sessions are what a client could grow the
//! FDN (and its fetches from the cloud) by. At most `max` are open at once — `open` refuses past
//! it — and one that nobody has read for `idle` (no read in progress, none begun or ended
//! since) is expired, handing its value back so the caller can cancel its pending work.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// `open` found `max` sessions open, even after expiring the idle ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

pub struct Sessions<S> {
    max: usize,
    idle: Duration,
    next_id: u64,
    open: HashMap<u64, Entry<S>>,
}

struct Entry<S> {
    value: S,
    /// When a read last began or ended (or the session opened).
    touched: Instant,
    /// Reads in progress: a session being read from is never idle, however long a read waits.
    readers: usize,
}

impl<S: Clone> Sessions<S> {
    pub fn new(max: usize, idle: Duration) -> Sessions<S> {
        Sessions {
            max,
            idle,
            next_id: 0,
            open: HashMap::new(),
        }
    }

    /// Opens a session for `value` at `now` and returns its id, with the sessions it expired
    /// to make room (whose pending work the caller cancels); `Full` (and the expired ones)
    /// when `max` are still open.
    pub fn open(&mut self, value: S, now: Instant) -> (Result<u64, Full>, Vec<S>) {
        let expired = self.expire(now);
        if self.open.len() >= self.max {
            return (Err(Full), expired);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.open.insert(
            id,
            Entry {
                value,
                touched: now,
                readers: 0,
            },
        );
        (Ok(id), expired)
    }

    /// A read of session `id` begins at `now`: its value, or `None` if it is not open. Each
    /// read that began must end with `end_read`.
    pub fn begin_read(&mut self, id: u64, now: Instant) -> Option<S> {
        let entry = self.open.get_mut(&id)?;
        entry.readers += 1;
        entry.touched = now;
        Some(entry.value.clone())
    }

    /// A read of session `id` ended at `now`; the idle time counts from here.
    pub fn end_read(&mut self, id: u64, now: Instant) {
        if let Some(entry) = self.open.get_mut(&id) {
            entry.readers = entry.readers.saturating_sub(1);
            entry.touched = now;
        }
    }

    /// Closes session `id` (its viewer is done), handing back its value if it was open.
    pub fn close(&mut self, id: u64) -> Option<S> {
        self.open.remove(&id).map(|entry| entry.value)
    }

    /// Removes the sessions idle for `idle` or longer at `now`, handing back their values.
    pub fn expire(&mut self, now: Instant) -> Vec<S> {
        let idle = self.idle;
        let mut expired = Vec::new();
        self.open.retain(|_, entry| {
            let keep = entry.readers > 0 || now.saturating_duration_since(entry.touched) < idle;
            if !keep {
                expired.push(entry.value.clone());
            }
            keep
        });
        expired
    }

    pub fn len(&self) -> usize {
        self.open.len()
    }

    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Duration = Duration::from_secs(10);

    #[test]
    fn past_the_cap_open_is_refused_until_one_closes() {
        let mut sessions = Sessions::new(2, IDLE);
        let t0 = crate::testing::origin();
        let (a, _) = sessions.open("a", t0);
        assert!(sessions.open("b", t0).0.is_ok());
        assert_eq!(sessions.open("c", t0), (Err(Full), vec![]));
        assert_eq!(sessions.len(), 2);
        assert_eq!(sessions.close(a.unwrap()), Some("a"));
        assert!(sessions.open("c", t0).0.is_ok());
    }

    #[test]
    fn a_session_not_read_for_the_idle_time_expires_and_makes_room() {
        let mut sessions = Sessions::new(2, IDLE);
        let t0 = crate::testing::origin();
        let at = |s| t0 + Duration::from_secs(s);
        let a = sessions.open("a", t0).0.unwrap();
        let b = sessions.open("b", t0).0.unwrap();
        // b is read at 5 s; a never.
        assert_eq!(sessions.begin_read(b, at(5)), Some("b"));
        sessions.end_read(b, at(5));
        assert!(sessions.expire(at(9)).is_empty());
        // At 10 s a has been idle for IDLE: opening c expires it and takes its place.
        assert_eq!(sessions.open("c", at(10)), (Ok(2), vec!["a"]));
        assert_eq!(sessions.begin_read(a, at(10)), None, "a is gone");
        assert_eq!(sessions.expire(at(15)), vec!["b"]);
        assert_eq!(sessions.len(), 1);
    }

    #[test]
    fn a_read_in_progress_keeps_its_session_however_long_it_waits() {
        let mut sessions = Sessions::new(1, IDLE);
        let t0 = crate::testing::origin();
        let a = sessions.open("a", t0).0.unwrap();
        assert_eq!(sessions.begin_read(a, t0), Some("a"));
        assert!(sessions.expire(t0 + 5 * IDLE).is_empty());
        sessions.end_read(a, t0 + 5 * IDLE);
        assert!(sessions
            .expire(t0 + 6 * IDLE - Duration::from_nanos(1))
            .is_empty());
        assert_eq!(sessions.expire(t0 + 6 * IDLE), vec!["a"]);
        assert!(sessions.is_empty());
    }
}
