//! The shaper daemon's configuration file (`cdnlab-shaper --config FILE`), as JSON:
//! the control socket, and every queue (link direction) with its namespace and impairments.

use crate::params::Impairments;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};

/// The daemon's configuration file (`cdnlab-shaper --config FILE`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    /// Created once every queue is bound, so a connectable socket means the daemon is ready.
    pub control_socket: PathBuf,
    pub queues: Vec<QueueSpec>,
    /// A wake-up also releases the packets due within this many ns after it, so packets whose
    /// departures are close share one wake-up. Each wake-up costs CPU (in a VM, a bare timed
    /// wake-up alone costs ~20 µs) and arrives some tens of µs late; the window trades a
    /// packet leaving up to this much early for fewer wake-ups. 0: every departure time gets
    /// its own wake-up.
    #[serde(default = "default_release_window_ns")]
    pub release_window_ns: u64,
    /// The daemon's SCHED_FIFO priority (1–99), 0 for normal scheduling. tc-netem releases
    /// packets from softirq context, ahead of every process; at normal priority the daemon would
    /// share the CPU with the lab's own busy processes, and with two CPU-bound processes on two
    /// cores its verdicts came up to 15 ms late (75 000 of 590 000 over 1 ms); at FIFO priority
    /// 10 the worst was 5.7 ms and 290 over 1 ms. The kernel's RT throttling still leaves the
    /// other processes 5% of each CPU should the daemon ever spin.
    #[serde(default = "default_fifo_priority")]
    pub fifo_priority: u8,
    /// When the timer will wait longer than this for a departure, a thread at SCHED_IDLE
    /// priority wakes on the daemon's CPU this long before it, so the CPU is not halted long
    /// when the timer fires (see `daemon_keeper`: on an idle VM a vCPU halted for milliseconds
    /// took its timer 50–60 µs late at the median, 0.12–0.36 ms at the 99th percentile).
    /// 0: never.
    #[serde(default = "default_keep_awake_ns")]
    pub keep_awake_ns: u64,
    /// The most CPU the keeper may use, in percent of one CPU in each 100 ms period (0–100;
    /// 0: no keeper). While it is spent the keeper sleeps to the period's end, and wake-ups
    /// falling due meanwhile are skipped.
    #[serde(default = "default_keep_awake_budget_percent")]
    pub keep_awake_budget_percent: u8,
}

fn default_keep_awake_ns() -> u64 {
    DEFAULT_KEEP_AWAKE_NS
}

/// See [`DaemonConfig::keep_awake_ns`].
pub const DEFAULT_KEEP_AWAKE_NS: u64 = 300_000;

fn default_keep_awake_budget_percent() -> u8 {
    DEFAULT_KEEP_AWAKE_BUDGET_PERCENT
}

/// A longer window would leave the CPU halted long again between the keeper and the timer.
const MAX_KEEP_AWAKE_NS: u64 = 10_000_000;

/// See [`DaemonConfig::keep_awake_budget_percent`].
pub const DEFAULT_KEEP_AWAKE_BUDGET_PERCENT: u8 = 1;

fn default_fifo_priority() -> u8 {
    DEFAULT_FIFO_PRIORITY
}

/// See [`DaemonConfig::fifo_priority`].
pub const DEFAULT_FIFO_PRIORITY: u8 = 10;

fn default_release_window_ns() -> u64 {
    DEFAULT_RELEASE_WINDOW_NS
}

/// See [`DaemonConfig::release_window_ns`].
pub const DEFAULT_RELEASE_WINDOW_NS: u64 = 50_000;

/// One link direction: an NFQUEUE in a namespace, and its impairments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    /// The name the control protocol uses, e.g. `router/eth0`.
    pub id: String,
    /// The namespace (e.g. `/run/netns/cl-LAB-router`); none is the daemon's own.
    #[serde(default)]
    pub netns: Option<PathBuf>,
    pub queue_num: u16,
    #[serde(default)]
    pub impairments: Impairments,
    /// Seeds the shaper's random decisions (loss, jitter), so a run is reproducible.
    #[serde(default)]
    pub seed: u64,
    /// No packet comes to the queue while it is unimpaired (its NFQUEUE rule is then removed,
    /// as a lab does), so its zero delay need not make its socket's arrivals be read at once.
    #[serde(default)]
    pub no_rule_when_unimpaired: bool,
}

impl DaemonConfig {
    /// A configuration with these queues and the default release window and priority.
    pub fn new(control_socket: PathBuf, queues: Vec<QueueSpec>) -> DaemonConfig {
        DaemonConfig {
            control_socket,
            queues,
            release_window_ns: DEFAULT_RELEASE_WINDOW_NS,
            fifo_priority: DEFAULT_FIFO_PRIORITY,
            keep_awake_ns: DEFAULT_KEEP_AWAKE_NS,
            keep_awake_budget_percent: DEFAULT_KEEP_AWAKE_BUDGET_PERCENT,
        }
    }

    /// Parses and checks a configuration; the error names the problem.
    pub fn parse(text: &str) -> Result<DaemonConfig, String> {
        let config: DaemonConfig = serde_json::from_str(text).map_err(|e| e.to_string())?;
        config.check()?;
        Ok(config)
    }

    /// Reads, parses and checks a configuration file; the error names the file.
    pub fn from_file(path: &Path) -> io::Result<DaemonConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))
        })?;
        DaemonConfig::parse(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        if self.fifo_priority > 99 {
            return Err(format!(
                "fifo_priority {} is outside 0..=99",
                self.fifo_priority
            ));
        }
        if self.keep_awake_budget_percent > 100 {
            return Err(format!(
                "keep_awake_budget_percent {} is outside 0..=100",
                self.keep_awake_budget_percent
            ));
        }
        if self.keep_awake_ns > MAX_KEEP_AWAKE_NS {
            return Err(format!(
                "keep_awake_ns {} is above {MAX_KEEP_AWAKE_NS} (10 ms)",
                self.keep_awake_ns
            ));
        }
        for (i, queue) in self.queues.iter().enumerate() {
            let earlier = &self.queues[..i];
            if earlier.iter().any(|q| q.id == queue.id) {
                return Err(format!("queue id `{}` appears twice", queue.id));
            }
            if let Some(other) = earlier
                .iter()
                .find(|q| q.netns == queue.netns && q.queue_num == queue.queue_num)
            {
                return Err(format!(
                    "queues `{}` and `{}` both use queue number {} in the same namespace",
                    other.id, queue.id, queue.queue_num
                ));
            }
            queue
                .impairments
                .check()
                .map_err(|e| format!("queue `{}`: impairments: {e}", queue.id))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_config() {
        let config = DaemonConfig::parse(
            r#"{ "control_socket": "/run/cdnlab/LAB/shaper.sock",
                 "queues": [ { "id": "router/eth0", "netns": "/run/netns/cl-LAB-router",
                               "queue_num": 0, "impairments": { "delay_ns": 20000000 },
                               "seed": 7 } ] }"#,
        )
        .unwrap();
        assert_eq!(
            config.control_socket,
            Path::new("/run/cdnlab/LAB/shaper.sock")
        );
        let q = &config.queues[0];
        assert_eq!(q.id, "router/eth0");
        assert_eq!(
            q.netns.as_deref(),
            Some(Path::new("/run/netns/cl-LAB-router"))
        );
        assert_eq!(
            (q.queue_num, q.seed, q.impairments.delay_ns),
            (0, 7, 20_000_000)
        );
    }

    #[test]
    fn config_errors_name_the_problem() {
        let queue = |id: &str, num: u16| {
            format!(r#"{{"id":"{id}","netns":"/run/netns/x","queue_num":{num}}}"#)
        };
        let config = |queues: &[String]| {
            format!(
                r#"{{"control_socket":"/s","queues":[{}]}}"#,
                queues.join(",")
            )
        };
        let err = DaemonConfig::parse(&config(&[queue("a", 0), queue("a", 1)])).unwrap_err();
        assert!(err.contains("`a` appears twice"), "{err}");
        let err = DaemonConfig::parse(&config(&[queue("a", 3), queue("b", 3)])).unwrap_err();
        assert!(err.contains("`a` and `b` both use queue number 3"), "{err}");
        assert!(DaemonConfig::parse(&config(&[queue("a", 3), queue("b", 4)])).is_ok());
        let err =
            DaemonConfig::parse(r#"{"control_socket":"/s","queues":[],"extra":1}"#).unwrap_err();
        assert!(err.contains("unknown field `extra`"), "{err}");
        let err = DaemonConfig::parse(
            r#"{"control_socket":"/s","queues":[{"id":"a","queue_num":1,"impairments":{"loss":2}}]}"#,
        )
        .unwrap_err();
        assert!(err.contains("queue `a`: impairments: loss 2"), "{err}");
        let err = DaemonConfig::parse(
            r#"{"control_socket":"/s","queues":[],"keep_awake_budget_percent":101}"#,
        )
        .unwrap_err();
        assert!(err.contains("keep_awake_budget_percent 101"), "{err}");
        let err =
            DaemonConfig::parse(r#"{"control_socket":"/s","queues":[],"keep_awake_ns":10000001}"#)
                .unwrap_err();
        assert!(err.contains("keep_awake_ns 10000001 is above"), "{err}");
        let config = DaemonConfig::parse(r#"{"control_socket":"/s","queues":[]}"#).unwrap();
        assert_eq!(
            (config.keep_awake_ns, config.keep_awake_budget_percent),
            (DEFAULT_KEEP_AWAKE_NS, DEFAULT_KEEP_AWAKE_BUDGET_PERCENT),
            "the keeper is on unless a config turns it off"
        );
    }
}
