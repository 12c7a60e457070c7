//! The fog monitor's bookkeeping (Section III-B): heartbeats to every FDN, the round trips they
//! measure, and an FDN marked down after `missed_limit` heartbeats in a row go unanswered
//! (and up again on its next answer). An FDN is up from its first answer: one still starting is
//! not yet in the metadata, rather than marked down.

use super::stats::RunningStats;

#[derive(Debug, Clone, PartialEq)]
pub struct FdnHealth {
    pub name: String,
    pub up: bool,
    /// Has it ever answered?
    pub seen: bool,
    /// Heartbeats unanswered in a row.
    pub missed: u32,
    pub rtt: RunningStats,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Monitor {
    missed_limit: u32,
    pub fdns: Vec<FdnHealth>,
}

/// What a heartbeat's outcome changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    None,
    /// First answer.
    Joined,
    WentDown,
    CameBack,
}

impl Monitor {
    /// No FDN is up until it answers.
    pub fn new(names: &[String], missed_limit: u32) -> Monitor {
        Monitor {
            missed_limit: missed_limit.max(1),
            fdns: names
                .iter()
                .map(|name| FdnHealth {
                    name: name.clone(),
                    up: false,
                    seen: false,
                    missed: 0,
                    rtt: RunningStats::default(),
                })
                .collect(),
        }
    }

    /// FDN `i` answered a heartbeat after `rtt_s`.
    pub fn answered(&mut self, i: usize, rtt_s: f64) -> Change {
        let fdn = &mut self.fdns[i];
        fdn.missed = 0;
        fdn.rtt.push(rtt_s);
        let first = !fdn.seen;
        fdn.seen = true;
        match (fdn.up, first) {
            (true, _) => Change::None,
            (false, true) => {
                fdn.up = true;
                Change::Joined
            }
            (false, false) => {
                fdn.up = true;
                Change::CameBack
            }
        }
    }

    /// FDN `i` did not answer a heartbeat in time.
    pub fn missed(&mut self, i: usize) -> Change {
        let fdn = &mut self.fdns[i];
        fdn.missed += 1;
        if fdn.up && fdn.missed >= self.missed_limit {
            fdn.up = false;
            Change::WentDown
        } else {
            Change::None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_fdn_is_up_from_its_first_answer_and_not_down_before() {
        let mut monitor = Monitor::new(&["a".into()], 2);
        assert!(!monitor.fdns[0].up);
        for _ in 0..5 {
            assert_eq!(monitor.missed(0), Change::None, "still starting");
        }
        assert_eq!(monitor.answered(0, 0.02), Change::Joined);
        assert!(monitor.fdns[0].up);
    }

    #[test]
    fn an_fdn_goes_down_after_the_missed_limit_and_comes_back_on_an_answer() {
        let mut monitor = Monitor::new(&["a".into(), "b".into()], 3);
        assert_eq!(monitor.answered(0, 0.02), Change::Joined);
        monitor.answered(1, 0.02);
        assert_eq!(monitor.missed(0), Change::None);
        assert_eq!(monitor.missed(0), Change::None);
        assert!(monitor.fdns[0].up);
        assert_eq!(monitor.missed(0), Change::WentDown);
        assert!(!monitor.fdns[0].up);
        assert_eq!(monitor.missed(0), Change::None);
        assert!(monitor.fdns[1].up, "the other FDN is untouched");
        assert_eq!(monitor.answered(0, 0.03), Change::CameBack);
        assert!(monitor.fdns[0].up);
        assert_eq!(monitor.fdns[0].missed, 0);
        assert_eq!(monitor.fdns[0].rtt.count(), 2);
    }

    #[test]
    fn an_answer_between_misses_resets_the_count() {
        let mut monitor = Monitor::new(&["a".into()], 2);
        monitor.answered(0, 0.01);
        monitor.missed(0);
        monitor.answered(0, 0.01);
        assert_eq!(monitor.missed(0), Change::None);
        assert!(monitor.fdns[0].up);
    }
}
