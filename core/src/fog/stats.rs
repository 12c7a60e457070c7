//! What an FDN learns about a network path from its own transfers: running mean and variance
//! (Welford's method) of the time to the first byte and of the time per byte after it, giving
//! the transfer-latency distribution N^τ of a segment of any size (Section IV-A: a segment's
//! transfer latency is normal, set by its size and the path's throughput).

use super::normal::Normal;

/// Running mean and variance of a series of observations.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunningStats {
    count: u64,
    mean: f64,
    m2: f64,
}

impl RunningStats {
    /// Stats that stand for `count` (≥ 2) observations of this mean and sample sd, as another
    /// party measured and reported them.
    pub fn from_summary(count: u64, mean: f64, sd: f64) -> RunningStats {
        let count = count.max(2);
        RunningStats {
            count,
            mean,
            m2: sd * sd * (count - 1) as f64,
        }
    }

    pub fn push(&mut self, x: f64) {
        self.count += 1;
        let delta = x - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (x - self.mean);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The sample variance (0 with fewer than two observations).
    pub fn variance(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            self.m2 / (self.count - 1) as f64
        }
    }

    pub fn sd(&self) -> f64 {
        self.variance().sqrt()
    }
}

/// One path's learned latency model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PathModel {
    /// Seconds from sending the request to the first byte of the answer.
    pub first_byte: RunningStats,
    /// Seconds per byte after the first.
    pub per_byte: RunningStats,
}

impl PathModel {
    /// Records one transfer of `bytes` that took `first_byte_s` to start and `total_s` in all.
    pub fn observe(&mut self, bytes: u64, first_byte_s: f64, total_s: f64) {
        self.first_byte.push(first_byte_s);
        if bytes > 0 {
            self.per_byte
                .push((total_s - first_byte_s).max(0.0) / bytes as f64);
        }
    }

    /// Has the path been measured at all?
    pub fn known(&self) -> bool {
        self.first_byte.count() > 0
    }

    /// N^τ for a transfer of `bytes`: N(L̄ + s·b̄, √(σ_L² + s²·σ_b²)).
    pub fn transfer(&self, bytes: u64) -> Normal {
        let s = bytes as f64;
        Normal::new(
            self.first_byte.mean() + s * self.per_byte.mean(),
            (self.first_byte.variance() + s * s * self.per_byte.variance()).sqrt(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_stats_match_the_batch_formulas() {
        let mut stats = RunningStats::default();
        for x in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            stats.push(x);
        }
        assert_eq!(stats.count(), 8);
        assert!((stats.mean() - 5.0).abs() < 1e-12);
        // Σ(x - 5)² = 32; sample variance 32 / 7.
        assert!((stats.variance() - 32.0 / 7.0).abs() < 1e-12);
        let reported = RunningStats::from_summary(8, stats.mean(), stats.sd());
        assert!((reported.variance() - stats.variance()).abs() < 1e-12);
    }

    #[test]
    fn a_path_predicts_a_transfer_from_what_it_measured() {
        let mut path = PathModel::default();
        assert!(!path.known());
        // 10 ms to the first byte, then 1 µs per byte (8 Mbit/s), measured twice the same.
        path.observe(100_000, 0.010, 0.110);
        path.observe(200_000, 0.010, 0.210);
        let t = path.transfer(50_000);
        assert!((t.mean - 0.060).abs() < 1e-9, "{t:?}");
        assert!(t.sd < 1e-9, "{t:?}");
        path.observe(100_000, 0.030, 0.130);
        assert!(path.transfer(50_000).sd > 0.0);
    }
}
