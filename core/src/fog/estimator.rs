//! The segment cost estimator (Section IV, Figure 3) and the delivery methods of Table II.

use super::normal::{robustness, Normal};

/// The six delivery methods of Table II.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Every segment from the central cloud.
    CentralCloud,
    /// Whole videos cached at the local site (75% of them), the rest from the cloud.
    Cdn,
    /// Partial caching, federated: the local cache, else the neighbour or the cloud most likely
    /// to meet the deadline. No processing.
    FCdn,
    /// Caching and on-demand processing, not federated: the local cache, else processing or
    /// the cloud, whichever is more likely to meet the deadline.
    IFdn,
    /// Caching, processing and federation, deciding on expected times only.
    DeterministicFfdn,
    /// Caching, processing and federation, deciding on robustness (Figure 3).
    RobustFfdn,
}

impl Method {
    pub const ALL: [Method; 6] = [
        Method::CentralCloud,
        Method::Cdn,
        Method::FCdn,
        Method::IFdn,
        Method::DeterministicFfdn,
        Method::RobustFfdn,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::CentralCloud => "central-cloud",
            Method::Cdn => "cdn",
            Method::FCdn => "f-cdn",
            Method::IFdn => "i-fdn",
            Method::DeterministicFfdn => "deterministic-ffdn",
            Method::RobustFfdn => "robust-ffdn",
        }
    }

    pub fn parse(name: &str) -> Result<Method, String> {
        Method::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Method::ALL.iter().map(|m| m.name()).collect();
                format!("no method `{name}` (methods: {})", names.join(", "))
            })
    }

    /// Can the local node process segments on demand?
    pub fn processes(self) -> bool {
        matches!(
            self,
            Method::IFdn | Method::DeterministicFfdn | Method::RobustFfdn
        )
    }

    /// Does the local node fetch from neighbours?
    pub fn federated(self) -> bool {
        matches!(
            self,
            Method::FCdn | Method::DeterministicFfdn | Method::RobustFfdn
        )
    }
}

/// Where a segment comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "fdn")]
pub enum Source {
    LocalCache,
    Process,
    Neighbor(usize),
    Cloud,
}

/// What the estimator knows about one segment when it decides.
#[derive(Debug, Clone)]
pub struct SegmentOptions<'a> {
    /// The local FDN holds the segment pre-processed (for the CDN method: holds its video).
    pub cached_locally: bool,
    /// Neighbours holding the segment (up, per the metadata), each with N^τ from it to here.
    pub neighbors: &'a [(usize, Normal)],
    /// N^τ from the cloud's repository to here.
    pub cloud: Normal,
    /// N^E: this segment's processing time here, its wait for a worker included.
    pub processing: Normal,
    /// N^τ from here to the viewer.
    pub viewer: Normal,
    /// δ_i: seconds from now to the segment's deadline.
    pub deadline_s: f64,
}

/// The choice and how it was judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    pub source: Source,
    /// N^C of the choice: its end-to-end latency.
    pub delivery: Normal,
    /// r_i of the choice (Equation 4).
    pub robustness: f64,
}

/// The segment cost estimator of Figure 3 under `method`: the local cache if it holds the
/// segment (step 1); otherwise each allowed remote source's delivery distribution N^C — a
/// neighbour's or the cloud's transfer convolved with the transfer to the viewer (Equation 3),
/// on-demand processing convolved with it (Equation 2) — and the one with the highest
/// robustness r_i = P(X ≤ δ_i) (Equation 4; steps 2–9), or, for Deterministic F-FDN, the lowest
/// expected latency. Ties go to the lower expected latency.
pub fn decide(method: Method, options: &SegmentOptions) -> Decision {
    let judge = |source: Source, delivery: Normal| Decision {
        source,
        delivery,
        robustness: robustness(delivery, options.deadline_s),
    };
    // Equation 1.
    let local = judge(Source::LocalCache, options.viewer);
    match method {
        Method::CentralCloud => {
            return judge(Source::Cloud, options.cloud.convolve(options.viewer))
        }
        Method::Cdn => {
            return if options.cached_locally {
                local
            } else {
                judge(Source::Cloud, options.cloud.convolve(options.viewer))
            }
        }
        _ if options.cached_locally => return local,
        _ => {}
    }
    let mut candidates = vec![judge(Source::Cloud, options.cloud.convolve(options.viewer))];
    if method.federated() {
        candidates.extend(
            options.neighbors.iter().map(|&(k, transfer)| {
                judge(Source::Neighbor(k), transfer.convolve(options.viewer))
            }),
        );
    }
    if method.processes() {
        candidates.push(judge(
            Source::Process,
            options.processing.convolve(options.viewer),
        ));
    }
    let by_mean = |a: &Decision, b: &Decision| a.delivery.mean.total_cmp(&b.delivery.mean);
    let best = if method == Method::DeterministicFfdn {
        candidates.into_iter().min_by(by_mean)
    } else {
        candidates.into_iter().min_by(|a, b| {
            b.robustness
                .total_cmp(&a.robustness)
                .then_with(|| by_mean(a, b))
        })
    };
    best.expect("the cloud is always a candidate")
}

/// The on-demand processing engine's backlog, for N^E: tasks waiting and running on `workers`
/// workers. A new task waits for the work ahead of it spread over the workers: the sum of the
/// waiting tasks' times and the running ones' remaining times, divided by the worker count
/// (means add; variances add and scale by 1/w²), when every worker is busy.
#[derive(Debug, Clone, PartialEq)]
pub struct Backlog {
    workers: usize,
    waiting: Vec<Normal>,
    /// (distribution, start time in seconds).
    running: Vec<(u64, Normal, f64)>,
}

impl Backlog {
    pub fn new(workers: usize) -> Backlog {
        Backlog {
            workers: workers.max(1),
            waiting: Vec::new(),
            running: Vec::new(),
        }
    }

    /// N^E of a task of processing time `task` queued now (at `now_s`).
    pub fn processing(&self, task: Normal, now_s: f64) -> Normal {
        if self.running.len() + self.waiting.len() < self.workers {
            return task;
        }
        let w = self.workers as f64;
        let mut mean = 0.0;
        let mut var = 0.0;
        for t in &self.waiting {
            mean += t.mean;
            var += t.sd * t.sd;
        }
        for (_, t, start) in &self.running {
            mean += (t.mean - (now_s - start)).max(0.0);
            var += t.sd * t.sd;
        }
        Normal::new(mean / w, var.sqrt() / w).convolve(task)
    }

    pub fn enqueue(&mut self, task: Normal) {
        self.waiting.push(task);
    }

    /// A worker took the oldest waiting task (id `id`) at `now_s`.
    pub fn start(&mut self, id: u64, now_s: f64) {
        if !self.waiting.is_empty() {
            let task = self.waiting.remove(0);
            self.running.push((id, task, now_s));
        }
    }

    pub fn finish(&mut self, id: u64) {
        self.running.retain(|(i, _, _)| *i != id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options<'a>(neighbors: &'a [(usize, Normal)], deadline_s: f64) -> SegmentOptions<'a> {
        SegmentOptions {
            cached_locally: false,
            neighbors,
            cloud: Normal::new(0.8, 0.1),
            processing: Normal::new(0.5, 0.05),
            viewer: Normal::new(0.02, 0.005),
            deadline_s,
        }
    }

    #[test]
    fn the_local_cache_wins_whenever_it_holds_the_segment() {
        let none = [];
        let o = SegmentOptions {
            cached_locally: true,
            ..options(&none, 1.0)
        };
        for method in Method::ALL {
            let d = decide(method, &o);
            let want = if method == Method::CentralCloud {
                Source::Cloud
            } else {
                Source::LocalCache
            };
            assert_eq!(d.source, want, "{method:?}");
        }
    }

    #[test]
    fn each_method_chooses_among_its_own_sources() {
        // A neighbour at 0.3 ± 0.02 s beats processing (0.5) and the cloud (0.8).
        let near = [(2, Normal::new(0.3, 0.02))];
        let o = options(&near, 0.6);
        assert_eq!(decide(Method::CentralCloud, &o).source, Source::Cloud);
        assert_eq!(decide(Method::Cdn, &o).source, Source::Cloud);
        assert_eq!(decide(Method::FCdn, &o).source, Source::Neighbor(2));
        assert_eq!(decide(Method::IFdn, &o).source, Source::Process);
        assert_eq!(
            decide(Method::DeterministicFfdn, &o).source,
            Source::Neighbor(2)
        );
        assert_eq!(decide(Method::RobustFfdn, &o).source, Source::Neighbor(2));
    }

    #[test]
    fn robust_and_deterministic_part_ways_on_an_uncertain_neighbour() {
        // The neighbour is faster on average (0.40 s) but uncertain (sd 0.2); processing takes
        // 0.45 ± 0.01 s. With δ = 0.5 s: deterministic takes the neighbour (lower mean), robust
        // processes: P(0.47 ± 0.011 ≤ 0.5) ≈ 1 against P(0.42 ± 0.2 ≤ 0.5) ≈ 0.66.
        let shaky = [(1, Normal::new(0.40, 0.2))];
        let o = SegmentOptions {
            processing: Normal::new(0.45, 0.01),
            ..options(&shaky, 0.5)
        };
        assert_eq!(
            decide(Method::DeterministicFfdn, &o).source,
            Source::Neighbor(1)
        );
        let robust = decide(Method::RobustFfdn, &o);
        assert_eq!(robust.source, Source::Process);
        assert!(robust.robustness > 0.99, "{robust:?}");
        let neighbour = robustness(Normal::new(0.40, 0.2).convolve(o.viewer), 0.5);
        assert!((neighbour - 0.66).abs() < 0.01, "{neighbour}");
    }

    #[test]
    fn the_best_neighbour_by_robustness_is_chosen() {
        let two = [(1, Normal::new(0.35, 0.2)), (2, Normal::new(0.38, 0.01))];
        let o = SegmentOptions {
            processing: Normal::new(5.0, 0.1),
            ..options(&two, 0.45)
        };
        assert_eq!(decide(Method::FCdn, &o).source, Source::Neighbor(2));
        assert_eq!(
            decide(Method::DeterministicFfdn, &o).source,
            Source::Neighbor(1)
        );
    }

    #[test]
    fn a_busy_engine_adds_the_work_ahead() {
        let mut backlog = Backlog::new(2);
        let task = Normal::new(0.4, 0.04);
        assert_eq!(
            backlog.processing(task, 0.0),
            task,
            "a free worker starts at once"
        );
        backlog.enqueue(task);
        backlog.start(1, 0.0);
        backlog.enqueue(task);
        backlog.start(2, 0.0);
        backlog.enqueue(Normal::new(0.6, 0.03));
        // At 0.1 s: running remainders 0.3 + 0.3, waiting 0.6 → 1.2 s over 2 workers = 0.6,
        // variance (0.04² + 0.04² + 0.03²)/4; then the task itself.
        let n = backlog.processing(task, 0.1);
        assert!((n.mean - 1.0).abs() < 1e-9, "{n:?}");
        let wait_var = (0.0016 + 0.0016 + 0.0009) / 4.0;
        assert!((n.sd - (wait_var + 0.0016f64).sqrt()).abs() < 1e-9, "{n:?}");
        backlog.finish(1);
        backlog.finish(2);
        backlog.start(3, 0.5);
        assert_eq!(backlog.processing(task, 0.5), task);
    }
}
