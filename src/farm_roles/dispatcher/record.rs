//! What the dispatcher saw, sample by sample, kept for `farm.json`, `samples.csv` and the
//! plots: per content, totals over the run; per sample, the farm's counts and those of the
//! first and last 10% of the contents. The files are replaced whole (never seen half written)
//! every few seconds and at the end. A long run's samples are thinned (neighbours merged) so
//! neither memory nor the files grow with the run's length or the catalogue's size times it.

use super::{Dispatcher, DispatcherConfig};
use crate::farm_roles::messages::DataCenterUsage;
use crate::replication::coordinator::{Decision, Step, Trigger};
use serde::Serialize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Counts since the last sample: per content, and for the whole farm.
#[derive(Debug, Clone, Default)]
pub struct Interval {
    pub requests: Vec<u32>,
    pub losses: Vec<u32>,
    pub counts: Counts,
}

/// What a sample counts for the whole farm beyond requests and losses.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Counts {
    pub virtual_losses: u64,
    pub copies_after_loss: u64,
    pub copies_after_virtual: u64,
    /// Replacements a server did not take (it did not answer, or refused).
    pub replace_failed: u64,
    /// End reports from servers the dispatcher did not think busy.
    pub late_reports: u64,
    /// Servers counted idle again because their client never came.
    pub expired_leases: u64,
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        self.virtual_losses += other.virtual_losses;
        self.copies_after_loss += other.copies_after_loss;
        self.copies_after_virtual += other.copies_after_virtual;
        self.replace_failed += other.replace_failed;
        self.late_reports += other.late_reports;
        self.expired_leases += other.expired_leases;
    }
}

impl Interval {
    pub fn new(n: usize) -> Interval {
        Interval {
            requests: vec![0; n],
            losses: vec![0; n],
            counts: Counts::default(),
        }
    }

    pub fn request(&mut self, content: u32, step: &Step) {
        let c = content as usize;
        self.requests[c] += 1;
        if step.decision == Decision::Lost {
            self.losses[c] += 1;
        }
        self.counts.virtual_losses += u64::from(step.virtual_loss);
        match step.copy.map(|copy| copy.trigger) {
            Some(Trigger::Loss) => self.counts.copies_after_loss += 1,
            Some(Trigger::Virtual) => self.counts.copies_after_virtual += 1,
            None => {}
        }
    }
}

/// A group of contents in a sample: the first or last 10% in the initial popularity order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Group {
    pub requests: u64,
    pub losses: u64,
    /// The group's mean replicas at the sample (over the samples merged into this one).
    pub mean_replicas: f64,
}

/// The first and last 10% of the contents (at least one each), by initial popularity.
pub fn groups(n: usize) -> [std::ops::Range<usize>; 2] {
    let k = (n / 10).max(1).min(n);
    [0..k, n - k..n]
}

/// The farm at one sample. Its size does not grow with the catalogue: per-content counts are
/// the recorder's totals.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Seconds since the farm was filled, and the same in mean service times.
    pub t_s: f64,
    pub t_units: f64,
    /// The counts since the sample before.
    pub requests: u64,
    pub losses: u64,
    pub interval: Counts,
    /// The first and the last 10% of the contents, in that order.
    pub groups: [Group; 2],
    pub busy_servers: usize,
    /// The data center's counts over all its runs, as last answered (None: it has not
    /// answered yet).
    pub datacenter: Option<DataCenterUsage>,
    /// How many samples were merged into this one (1 until a long run is thinned).
    pub merged: u32,
}

impl Sample {
    /// `self` and the sample after it as one: counts added, the means weighted by how many
    /// samples each holds, the state (busy servers, the data center's totals) the later one's.
    fn merge(&mut self, later: Sample) {
        let (a, b) = (f64::from(self.merged), f64::from(later.merged));
        self.t_s = later.t_s;
        self.t_units = later.t_units;
        self.requests += later.requests;
        self.losses += later.losses;
        self.interval.add(&later.interval);
        for (group, next) in self.groups.iter_mut().zip(later.groups) {
            group.requests += next.requests;
            group.losses += next.losses;
            group.mean_replicas = (group.mean_replicas * a + next.mean_replicas * b) / (a + b);
        }
        self.busy_servers = later.busy_servers;
        self.datacenter = later.datacenter.or(self.datacenter.take());
        self.merged += later.merged;
    }
}

/// The most samples kept: past it, neighbouring samples are merged two into one, so a run of
/// any length keeps its whole span, at a coarser step, in bounded memory and files.
const MAX_SAMPLES: usize = 4096;

/// Files are rewritten at most this often (and at the end): each rewrite is the whole run.
const SAVE_EVERY: Duration = Duration::from_secs(5);

/// Per content, over the whole run.
#[derive(Debug, Clone, Serialize)]
struct PerContent {
    requests: Vec<u64>,
    losses: Vec<u64>,
    /// The replicas at each sample, averaged over the samples.
    mean_replicas: Vec<f64>,
    /// The replicas at the last sample.
    replicas: Vec<u32>,
}

pub struct Recorder {
    out: PathBuf,
    settings: serde_json::Value,
    samples: Vec<Sample>,
    /// Samples taken, before any merging.
    taken: u64,
    totals: Counts,
    requests: Vec<u64>,
    losses: Vec<u64>,
    replica_sums: Vec<u64>,
    replicas: Vec<u32>,
    datacenter: Option<DataCenterUsage>,
    saved: Option<Instant>,
}

impl Recorder {
    pub fn new(out: PathBuf, config: &DispatcherConfig, initial: &[u32]) -> Recorder {
        let settings = serde_json::json!({
            "scheme": config.replication.to_string(),
            "servers": config.servers.len(),
            "slots": config.system.d(),
            "contents": config.system.n(),
            "alpha": config.model.alpha,
            "rho": config.model.rho,
            "service_s": config.model.service.as_secs_f64(),
            "object_size": config.model.object_size,
            "lambdas": config.system.lambdas(),
            "initial_replicas": initial,
            "sample_every_s": config.sample_every.as_secs_f64(),
            "seed": config.seed,
        });
        Recorder::with_settings(out, settings, initial)
    }

    fn with_settings(out: PathBuf, settings: serde_json::Value, initial: &[u32]) -> Recorder {
        let n = initial.len();
        Recorder {
            out,
            settings,
            samples: Vec::new(),
            taken: 0,
            totals: Counts::default(),
            requests: vec![0; n],
            losses: vec![0; n],
            replica_sums: vec![0; n],
            replicas: initial.to_vec(),
            datacenter: None,
            saved: None,
        }
    }

    /// Takes the interval's counts and the replication now.
    pub fn sample(&mut self, dispatcher: &Dispatcher, datacenter: Option<DataCenterUsage>) {
        let n = dispatcher.config.system.n();
        let t_s = dispatcher.origin.elapsed().as_secs_f64();
        let mut state = dispatcher.lock();
        let interval = std::mem::replace(&mut state.interval, Interval::new(n));
        let farm = state.coordinator.farm();
        let busy_servers = farm.busy_count();
        self.replicas.clear();
        self.replicas.extend_from_slice(farm.replicas());
        drop(state);
        let t_units = t_s / dispatcher.config.model.service.as_secs_f64();
        self.add(t_s, t_units, interval, busy_servers, datacenter);
    }

    /// Adds one sample; `self.replicas` is the replication at it.
    fn add(
        &mut self,
        t_s: f64,
        t_units: f64,
        interval: Interval,
        busy_servers: usize,
        datacenter: Option<DataCenterUsage>,
    ) {
        let sum = |v: &[u32]| v.iter().map(|&x| u64::from(x)).sum::<u64>();
        let groups = groups(self.replicas.len()).map(|range| Group {
            requests: sum(&interval.requests[range.clone()]),
            losses: sum(&interval.losses[range.clone()]),
            mean_replicas: sum(&self.replicas[range.clone()]) as f64 / range.len() as f64,
        });
        let per_content = (self.requests.iter_mut())
            .zip(&interval.requests)
            .chain(self.losses.iter_mut().zip(&interval.losses))
            .chain(self.replica_sums.iter_mut().zip(&self.replicas));
        for (total, &count) in per_content {
            *total += u64::from(count);
        }
        self.totals.add(&interval.counts);
        self.datacenter = datacenter.or(self.datacenter.take());
        self.taken += 1;
        self.samples.push(Sample {
            t_s,
            t_units,
            requests: sum(&interval.requests),
            losses: sum(&interval.losses),
            interval: interval.counts,
            groups,
            busy_servers,
            datacenter: self.datacenter.clone(),
            merged: 1,
        });
        if self.samples.len() > MAX_SAMPLES {
            self.samples = thin(std::mem::take(&mut self.samples));
        }
    }

    fn totals(&self) -> serde_json::Value {
        let requests: u64 = self.requests.iter().sum();
        let losses: u64 = self.losses.iter().sum();
        let taken = self.taken.max(1) as f64;
        let mut totals = serde_json::json!({
            "samples_taken": self.taken,
            "requests": requests,
            "losses": losses,
            "inefficiency": losses as f64 / requests.max(1) as f64,
            "datacenter": self.datacenter,
            "per_content": PerContent {
                requests: self.requests.clone(),
                losses: self.losses.clone(),
                mean_replicas: self.replica_sums.iter().map(|&s| s as f64 / taken).collect(),
                replicas: self.replicas.clone(),
            },
        });
        // The farm's other counts beside requests and losses, as each sample has them.
        if let (Some(totals), Ok(serde_json::Value::Object(counts))) =
            (totals.as_object_mut(), serde_json::to_value(&self.totals))
        {
            totals.extend(counts);
        }
        totals
    }

    /// Rewrites the files if the last rewrite is `SAVE_EVERY` old (`now`), or always at the end
    /// (`now` None).
    pub fn save(&mut self, now: Option<Instant>) -> Result<(), String> {
        if let (Some(now), Some(saved)) = (now, self.saved) {
            if now.duration_since(saved) < SAVE_EVERY {
                return Ok(());
            }
        }
        self.saved = now;
        let write = |name: &str, text: String| {
            let path = self.out.join(name);
            crate::atomic_write::write_atomically(&path, text.as_bytes())
                .map_err(|e| format!("{}: {e}", path.display()))
        };
        std::fs::create_dir_all(&self.out).map_err(|e| format!("{}: {e}", self.out.display()))?;
        let value = serde_json::json!({
            "settings": self.settings,
            "totals": self.totals(),
            "samples": self.samples,
        });
        write("farm.json", value.to_string())?;
        let mut csv = String::from(
            "t_s,t_units,requests,losses,virtual_losses,copies_after_loss,copies_after_virtual,busy_servers,dc_user_bytes,dc_copy_bytes,merged\n",
        );
        for s in &self.samples {
            let dc = s.datacenter.clone().unwrap_or_default();
            csv += &format!(
                "{:.3},{:.2},{},{},{},{},{},{},{},{},{}\n",
                s.t_s,
                s.t_units,
                s.requests,
                s.losses,
                s.interval.virtual_losses,
                s.interval.copies_after_loss,
                s.interval.copies_after_virtual,
                s.busy_servers,
                dc.user_bytes,
                dc.copy_bytes,
                s.merged
            );
        }
        write("samples.csv", csv)?;
        super::plots::draw(&self.out, &self.samples)
    }
}

/// Neighbouring samples merged two into one (an odd last one kept as it is).
fn thin(samples: Vec<Sample>) -> Vec<Sample> {
    let mut out = Vec::with_capacity(samples.len() / 2 + 1);
    let mut samples = samples.into_iter();
    while let Some(mut first) = samples.next() {
        if let Some(second) = samples.next() {
            first.merge(second);
        }
        out.push(first);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run longer than `MAX_SAMPLES` keeps its whole span and every count, in fewer samples.
    #[test]
    fn a_long_run_is_thinned_without_losing_a_count() {
        let dir = crate::testing::TempDir::new("farm-record");
        let n = 20;
        let mut recorder = Recorder::with_settings(dir.0.clone(), serde_json::json!({}), &[1; 20]);
        let taken = MAX_SAMPLES + 1;
        for i in 0..taken {
            let mut interval = Interval::new(n);
            interval.requests[0] = 1;
            interval.losses[0] = 1;
            interval.requests[19] = 2;
            interval.counts.virtual_losses = 1;
            recorder.replicas[19] = (i % 2) as u32;
            recorder.add(i as f64, i as f64, interval, 3, None);
        }
        let samples = &recorder.samples;
        assert!(samples.len() <= MAX_SAMPLES, "{}", samples.len());
        let sum = |f: &dyn Fn(&Sample) -> u64| samples.iter().map(f).sum::<u64>();
        let taken = taken as u64;
        assert_eq!(sum(&|s| u64::from(s.merged)), taken);
        assert_eq!(sum(&|s| s.requests), 3 * taken);
        assert_eq!(sum(&|s| s.losses), taken);
        assert_eq!(sum(&|s| s.interval.virtual_losses), taken);
        assert_eq!(sum(&|s| s.groups[0].requests), taken);
        assert_eq!(sum(&|s| s.groups[1].requests), 2 * taken);
        assert_eq!(samples.last().unwrap().t_s, (taken - 1) as f64);
        // Contents 18 and 19 are the last 10%: 19 alternates between 0 and 1 replicas.
        let merged_pair = &samples[0];
        assert_eq!(merged_pair.merged, 2);
        assert_eq!(merged_pair.groups[1].mean_replicas, 0.75);

        let kept = samples.len();
        recorder.save(None).unwrap();
        let text = std::fs::read_to_string(dir.0.join("farm.json")).unwrap();
        let farm: serde_json::Value = serde_json::from_str(&text).unwrap();
        let totals = &farm["totals"];
        assert_eq!(totals["samples_taken"], taken);
        assert_eq!(totals["requests"], 3 * taken);
        assert_eq!(totals["virtual_losses"], taken);
        assert_eq!(totals["per_content"]["requests"][19], 2 * taken);
        assert_eq!(totals["per_content"]["losses"][0], taken);
        assert_eq!(totals["per_content"]["mean_replicas"][0], 1.0);
        let half = (taken / 2) as f64 / taken as f64;
        assert_eq!(totals["per_content"]["mean_replicas"][19], half);
        assert_eq!(farm["samples"].as_array().unwrap().len(), kept);
        let csv = std::fs::read_to_string(dir.0.join("samples.csv")).unwrap();
        assert_eq!(csv.lines().count(), kept + 1);
    }

    #[test]
    fn files_are_rewritten_at_most_every_few_seconds_but_always_at_the_end() {
        let dir = crate::testing::TempDir::new("farm-record-save");
        let mut recorder = Recorder::with_settings(dir.0.clone(), serde_json::json!({}), &[1; 3]);
        let farm = dir.0.join("farm.json");
        let now = Instant::now();
        recorder.add(0.0, 0.0, Interval::new(3), 0, None);
        recorder.save(Some(now)).unwrap();
        assert!(farm.is_file());
        std::fs::remove_file(&farm).unwrap();
        recorder.save(Some(now + SAVE_EVERY / 2)).unwrap();
        assert!(!farm.exists(), "rewritten too soon");
        recorder.save(Some(now + SAVE_EVERY)).unwrap();
        assert!(farm.is_file());
        std::fs::remove_file(&farm).unwrap();
        recorder.save(None).unwrap();
        assert!(farm.is_file(), "not written at the end");
    }
}
