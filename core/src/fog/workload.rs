//! Workload traces of stream requests (Section VI): arrivals sampled uniformly within a window,
//! each request streaming one video chosen uniformly, until the trace holds the target number of
//! segments. Every segment of a request arrives with it; segment i's deadline is its
//! presentation time, `startup + i × duration` after the arrival.

use super::catalog::Catalog;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// One stream request of a trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamRequest {
    /// Seconds after the trace starts.
    pub arrival_s: f64,
    pub video: usize,
}

/// A trace: requests in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub requests: Vec<StreamRequest>,
}

impl Trace {
    /// Trace number `trace` of a run seeded `seed`: requests over `window_s` seconds until they
    /// hold at least `segments` segments.
    pub fn generate(
        catalog: &Catalog,
        seed: u64,
        trace: u64,
        window_s: f64,
        segments: usize,
    ) -> Trace {
        let mut rng = StdRng::seed_from_u64(seed ^ trace.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut requests = Vec::new();
        let mut total = 0;
        while total < segments && !catalog.videos.is_empty() {
            let video = rng.random_range(0..catalog.videos.len());
            total += catalog.videos[video].segments.len();
            requests.push(StreamRequest {
                arrival_s: rng.random_range(0.0..window_s.max(f64::MIN_POSITIVE)),
                video,
            });
        }
        requests.sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s));
        Trace { requests }
    }

    pub fn segments(&self, catalog: &Catalog) -> usize {
        self.requests
            .iter()
            .map(|r| catalog.videos[r.video].segments.len())
            .sum()
    }
}

/// Segment `index`'s deadline, seconds after its request arrived: its presentation time.
pub fn deadline_s(index: usize, startup_s: f64, segment_duration_s: f64) -> f64 {
    startup_s + index as f64 * segment_duration_s
}

#[cfg(test)]
mod tests {
    use super::super::catalog::tests::spec;
    use super::*;

    #[test]
    fn a_trace_holds_its_segments_within_its_window() {
        let catalog = Catalog::generate(&spec());
        let trace = Trace::generate(&catalog, 1, 0, 60.0, 700);
        let n = trace.segments(&catalog);
        assert!((700..730).contains(&n), "{n}");
        assert!(trace
            .requests
            .windows(2)
            .all(|w| w[0].arrival_s <= w[1].arrival_s));
        assert!(trace
            .requests
            .iter()
            .all(|r| (0.0..60.0).contains(&r.arrival_s)));
        assert_eq!(trace, Trace::generate(&catalog, 1, 0, 60.0, 700));
        assert_ne!(trace, Trace::generate(&catalog, 1, 1, 60.0, 700));
    }

    #[test]
    fn deadlines_are_presentation_times() {
        assert_eq!(deadline_s(0, 1.0, 2.0), 1.0);
        assert_eq!(deadline_s(3, 1.0, 2.0), 7.0);
    }
}
