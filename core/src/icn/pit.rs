//! The Pending Interest Table, in the manner of NFD's: one entry per name with an upstream
//! request outstanding, holding the in-records (the waiters, of whatever type the I/O layer
//! answers through). The first Interest for a name is forwarded; the others that arrive while
//! it is pending are aggregated onto it, so a name costs one upstream request however many ask
//! for it at once. Data (or a failure) for the name satisfies every waiter together.
//!
//! An entry lives at most `lifetime` from the Interest that created it (NFD's Interest
//! lifetime, 4 s by default): `expire` removes older entries and hands back their waiters, so
//! a lost upstream answer leaves no one waiting forever. Callers call `expire` before
//! `interest`, so that an Interest never joins an entry already past its lifetime.
//!
//! Clients choose the names, so the table is bounded: at most `max_entries` names pending (each
//! one upstream fetch) and `max_waiters` in-records on one name. An Interest past either bound
//! is refused ([`Outcome::Full`]) rather than grow the table.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::name::Name;

/// What to do with an Interest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The first pending Interest for its name: send it upstream, and satisfy the entry with
    /// this ticket when the answer comes.
    Forward(Ticket),
    /// Joined the pending entry of its name: wait for that one upstream answer.
    Aggregated,
    /// Not recorded: the table holds `max_entries` names, or the name `max_waiters` waiters.
    Full,
}

/// What the PIT has done since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PitStats {
    /// Interests that created an entry (one upstream request each).
    pub forwarded: u64,
    /// Interests that joined a pending entry.
    pub aggregated: u64,
    /// Entries satisfied (their waiters answered by an upstream answer).
    pub satisfied: u64,
    /// Entries removed after their lifetime.
    pub expired: u64,
    /// Interests refused because the table was full.
    pub refused: u64,
}

/// Names one entry: an upstream answer satisfies only the entry whose Interest it answers, not
/// a later entry for the same name made after that one expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(u64);

pub struct Pit<W> {
    lifetime: Duration,
    max_entries: usize,
    max_waiters: usize,
    entries: HashMap<Name, Entry<W>>,
    /// (creation, sequence) → name, oldest first: what `expire` walks. The sequence keeps
    /// entries created at the same instant apart.
    by_age: BTreeMap<(Instant, u64), Name>,
    next_sequence: u64,
    stats: PitStats,
}

struct Entry<W> {
    created: (Instant, u64),
    waiters: Vec<W>,
}

impl<W> Pit<W> {
    pub fn new(lifetime: Duration, max_entries: usize, max_waiters: usize) -> Pit<W> {
        Pit {
            lifetime,
            max_entries,
            max_waiters,
            entries: HashMap::new(),
            by_age: BTreeMap::new(),
            next_sequence: 0,
            stats: PitStats::default(),
        }
    }

    /// Records an Interest for `name` from `waiter`, arrived at `now`; a refused one's waiter
    /// is dropped.
    pub fn interest(&mut self, name: &Name, waiter: W, now: Instant) -> Outcome {
        if let Some(entry) = self.entries.get_mut(name) {
            if entry.waiters.len() >= self.max_waiters {
                self.stats.refused += 1;
                return Outcome::Full;
            }
            entry.waiters.push(waiter);
            self.stats.aggregated += 1;
            return Outcome::Aggregated;
        }
        if self.entries.len() >= self.max_entries {
            self.stats.refused += 1;
            return Outcome::Full;
        }
        let created = (now, self.next_sequence);
        self.next_sequence += 1;
        self.by_age.insert(created, name.clone());
        self.entries.insert(
            name.clone(),
            Entry {
                created,
                waiters: vec![waiter],
            },
        );
        self.stats.forwarded += 1;
        Outcome::Forward(Ticket(created.1))
    }

    /// The waiters of `name`'s entry `ticket`, in arrival order, removing it: the upstream
    /// answer came. None when that entry is not pending (it expired — a newer entry for the
    /// name, with its own fetch, is left alone — or was never made).
    pub fn satisfy(&mut self, name: &Name, ticket: Ticket) -> Vec<W> {
        if self
            .entries
            .get(name)
            .is_none_or(|e| e.created.1 != ticket.0)
        {
            return Vec::new();
        }
        let Some(entry) = self.entries.remove(name) else {
            return Vec::new();
        };
        self.by_age.remove(&entry.created);
        self.stats.satisfied += 1;
        entry.waiters
    }

    /// Removes every entry created `lifetime` or longer before `now`, oldest first, with its
    /// waiters.
    pub fn expire(&mut self, now: Instant) -> Vec<(Name, Vec<W>)> {
        let mut expired = Vec::new();
        while let Some(entry) = self.by_age.first_entry() {
            let (created, _) = *entry.key();
            if now.saturating_duration_since(created) < self.lifetime {
                break;
            }
            let name = entry.remove();
            if let Some(gone) = self.entries.remove(&name) {
                expired.push((name, gone.waiters));
            }
        }
        self.stats.expired += expired.len() as u64;
        expired
    }

    /// Entries pending now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn stats(&self) -> PitStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::icn::name::name;

    const LIFETIME: Duration = Duration::from_secs(4);

    fn forwarded(outcome: Outcome) -> Ticket {
        match outcome {
            Outcome::Forward(ticket) => ticket,
            other => panic!("expected the Interest to be forwarded, not {other:?}"),
        }
    }

    /// Room enough that only the bounds test meets the bounds.
    fn pit<W>() -> Pit<W> {
        Pit::new(LIFETIME, 100, 100)
    }

    #[test]
    fn names_and_waiters_past_the_bounds_are_refused_and_the_table_does_not_grow() {
        let mut pit = Pit::new(LIFETIME, 2, 3);
        let t0 = crate::testing::origin();
        let (a, b, c) = (name("/a"), name("/b"), name("/c"));
        let ticket = forwarded(pit.interest(&a, 1, t0));
        forwarded(pit.interest(&b, 2, t0));
        assert_eq!(pit.interest(&c, 3, t0), Outcome::Full, "a third name");
        assert_eq!(pit.len(), 2);
        assert_eq!(pit.interest(&a, 4, t0), Outcome::Aggregated);
        assert_eq!(pit.interest(&a, 5, t0), Outcome::Aggregated);
        assert_eq!(pit.interest(&a, 6, t0), Outcome::Full, "a fourth waiter");
        assert_eq!(pit.satisfy(&a, ticket), [1, 4, 5]);
        // Room again once an entry is gone.
        forwarded(pit.interest(&c, 7, t0));
        assert_eq!(pit.stats().refused, 2);
    }

    #[test]
    fn one_forward_per_name_and_the_rest_aggregated() {
        let mut pit = pit();
        let t0 = crate::testing::origin();
        let a = name("/app1/a");
        let ticket = forwarded(pit.interest(&a, "first", t0));
        assert_eq!(pit.interest(&a, "second", t0), Outcome::Aggregated);
        forwarded(pit.interest(&name("/app1/b"), "other name", t0));
        assert_eq!(pit.interest(&a, "third", t0), Outcome::Aggregated);
        assert_eq!(pit.len(), 2);
        // Every waiter of the name at once, in arrival order; the entry is gone.
        assert_eq!(pit.satisfy(&a, ticket), ["first", "second", "third"]);
        assert!(pit.satisfy(&a, ticket).is_empty());
        assert_eq!(pit.len(), 1);
        // The next Interest for it is forwarded again.
        forwarded(pit.interest(&a, "later", t0));
        assert_eq!(
            pit.stats(),
            PitStats {
                forwarded: 3,
                aggregated: 2,
                satisfied: 1,
                expired: 0,
                refused: 0
            }
        );
    }

    #[test]
    fn entries_expire_after_their_lifetime_with_their_waiters() {
        let mut pit = pit();
        let t0 = crate::testing::origin();
        let (old, young) = (name("/old"), name("/young"));
        let old_ticket = forwarded(pit.interest(&old, 1, t0));
        pit.interest(&young, 2, t0 + Duration::from_secs(1));
        // Aggregating does not extend an entry's life.
        pit.interest(&old, 3, t0 + Duration::from_secs(3));
        assert!(pit
            .expire(t0 + LIFETIME - Duration::from_nanos(1))
            .is_empty());
        assert_eq!(pit.expire(t0 + LIFETIME), vec![(old.clone(), vec![1, 3])]);
        assert!(
            pit.satisfy(&old, old_ticket).is_empty(),
            "an expired entry is gone"
        );
        assert_eq!(pit.len(), 1);
        // An earlier `now` (a caller's clocks need not be monotonic across threads) expires
        // nothing.
        assert!(pit.expire(t0).is_empty());
        assert_eq!(
            pit.expire(t0 + Duration::from_secs(10)),
            vec![(young, vec![2])]
        );
        assert!(pit.is_empty());
        assert_eq!(pit.stats().expired, 2);
        assert_eq!(pit.stats().satisfied, 0);
    }

    #[test]
    fn a_satisfied_entry_is_not_expired_later() {
        let mut pit = pit();
        let t0 = crate::testing::origin();
        let a = name("/a");
        let first = forwarded(pit.interest(&a, 1, t0));
        assert_eq!(pit.satisfy(&a, first), [1]);
        // A new entry for the same name, created later, keeps its own lifetime.
        let second = forwarded(pit.interest(&a, 2, t0 + Duration::from_secs(3)));
        assert!(pit.expire(t0 + LIFETIME).is_empty());
        assert_eq!(pit.satisfy(&a, second), [2]);
    }

    /// An entry expires while its fetch is out; a new Interest makes a new entry with a fetch
    /// of its own. The old fetch's late answer must not satisfy (or fail) the new waiters.
    #[test]
    fn a_late_answer_leaves_a_newer_entry_for_its_own_fetch() {
        let mut pit = pit();
        let t0 = crate::testing::origin();
        let a = name("/a");
        let old = forwarded(pit.interest(&a, 1, t0));
        assert_eq!(pit.expire(t0 + LIFETIME), vec![(a.clone(), vec![1])]);
        let new = forwarded(pit.interest(&a, 2, t0 + LIFETIME));
        assert!(pit.satisfy(&a, old).is_empty());
        assert_eq!(pit.len(), 1);
        assert_eq!(pit.satisfy(&a, new), [2]);
    }
}
