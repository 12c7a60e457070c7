//! Summary statistics of measured samples (RTTs in milliseconds, mostly).
//!
//! Plain functions on slices, so they are tested on crafted samples and reused by anyone who has
//! numbers to summarise. Percentiles interpolate linearly between the two closest ranks
//! (Hyndman and Fan's type 7, numpy's and R's default): `p` of `n` sorted samples sits at the
//! zero-based rank `p·(n−1)`. Unlike nearest-rank, this gives a p99 that moves smoothly with the
//! tail instead of jumping from sample to sample on short runs.

use serde::{Deserialize, Serialize};

/// min, mean, percentiles, max and standard deviation of a set of samples, in their unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    /// Sample standard deviation (divides by n−1); 0 for a single sample.
    pub stdev: f64,
}

impl Summary {
    /// Summarises `samples` (any order); `None` when there are none or one is not finite.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Some(Summary {
            min: *sorted.first()?,
            mean: mean(&sorted)?,
            p50: percentile(&sorted, 50.0)?,
            p90: percentile(&sorted, 90.0)?,
            p99: percentile(&sorted, 99.0)?,
            max: *sorted.last()?,
            stdev: stdev(&sorted)?,
        })
    }
}

/// The `p`-th percentile (0 to 100) of samples sorted ascending, interpolating linearly between
/// the closest ranks (type 7, see the module notes). `None` for no samples or `p` outside 0..=100.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let below = rank.floor() as usize;
    let above = rank.ceil() as usize;
    let fraction = rank - below as f64;
    Some(sorted[below] + (sorted[above] - sorted[below]) * fraction)
}

/// Arithmetic mean; `None` for no samples.
pub fn mean(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    Some(samples.iter().sum::<f64>() / samples.len() as f64)
}

/// Sample standard deviation (Bessel's n−1, since the samples estimate a link's spread rather
/// than being the whole population); 0 for one sample, `None` for none.
pub fn stdev(samples: &[f64]) -> Option<f64> {
    let m = mean(samples)?;
    if samples.len() == 1 {
        return Some(0.0);
    }
    let squares: f64 = samples.iter().map(|x| (x - m) * (x - m)).sum();
    Some((squares / (samples.len() - 1) as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn percentiles_interpolate_between_ranks() {
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&sorted, 0.0), Some(1.0));
        assert_eq!(percentile(&sorted, 100.0), Some(4.0));
        // rank 0.5·3 = 1.5: halfway between 2 and 3.
        assert_eq!(percentile(&sorted, 50.0), Some(2.5));
        // rank 0.9·3 = 2.7: 3 + 0.7·(4 − 3).
        assert!(close(percentile(&sorted, 90.0).unwrap(), 3.7));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&sorted, 101.0), None);
        assert_eq!(percentile(&sorted, -1.0), None);
    }

    #[test]
    fn p99_of_one_to_hundred_matches_numpy() {
        let sorted: Vec<f64> = (1..=100).map(f64::from).collect();
        // numpy.percentile(range(1, 101), [50, 90, 99]) == [50.5, 90.1, 99.01]
        assert!(close(percentile(&sorted, 50.0).unwrap(), 50.5));
        assert!(close(percentile(&sorted, 90.0).unwrap(), 90.1));
        assert!(close(percentile(&sorted, 99.0).unwrap(), 99.01));
    }

    #[test]
    fn mean_and_sample_stdev() {
        let samples = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&samples), Some(5.0));
        // Squared deviations sum to 32; 32 / 7 is the sample variance.
        assert!(close(stdev(&samples).unwrap(), (32.0f64 / 7.0).sqrt()));
        assert_eq!(stdev(&[3.0]), Some(0.0));
        assert_eq!(stdev(&[]), None);
        assert_eq!(mean(&[]), None);
    }

    #[test]
    fn summary_sorts_its_input() {
        let s = Summary::of(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 5.0);
        assert_eq!(s.p50, 3.0);
        assert_eq!(s.mean, 3.0);
        assert!(close(s.p90, 4.6));
        assert!(close(s.p99, 4.96));
        assert!(close(s.stdev, 2.5f64.sqrt()));
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
    }
}
