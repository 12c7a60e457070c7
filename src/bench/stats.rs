//! The statistics the benchmarks judge by: a binomial confidence interval for loss, the delay
//! spread netem's distribution tables imply for jitter, and the sizes rate tests depend on.

use netem::distribution::{table, NETEM_DIST_SCALE};
use netem::Distribution;

/// The normal quantile of a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Bytes of an Ethernet frame carrying a full TCP segment on a 1500-byte MTU: 1500 + 14.
/// netem's rate counts the frame (the skb includes the Ethernet header on egress).
pub const FRAME_BYTES: f64 = 1514.0;

/// TCP payload per such frame: 1500 − 20 (IP) − 20 (TCP) − 12 (timestamps option).
pub const TCP_PAYLOAD_BYTES: f64 = 1448.0;

/// The most goodput one TCP flow can have through a netem rate: payload per frame, 95.6%.
pub const TCP_CEILING: f64 = TCP_PAYLOAD_BYTES / FRAME_BYTES;

/// Wilson's score interval for a binomial proportion: `k` events in `n` trials, normal quantile
/// `z`. Chosen over the textbook p ± z·√(p(1−p)/n) because that one collapses to a zero-width
/// interval when no loss is seen and undercovers at the small rates (0.1%) measured here.
/// `None` when there were no trials.
pub fn wilson_interval(k: u64, n: u64, z: f64) -> Option<(f64, f64)> {
    if n == 0 || k > n {
        return None;
    }
    let n = n as f64;
    let p = k as f64 / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At k = 0 (or n) the bound is exactly 0 (or 1); rounding must not lift it off.
    let low = if k == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let high = if k as f64 == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Some((low, high))
}

/// Moments of the delay offset netem adds for jitter `sigma` (any unit) with a distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JitterMoments {
    /// Mean offset from the configured delay (non-zero for the skewed Pareto tables).
    pub mean: f64,
    pub stdev: f64,
    /// Fourth standardised moment; sets how much a sample stdev scatters.
    pub kurtosis: f64,
}

/// What netem's `tabledist()` implies for jitter `sigma`: uniform on [−σ, σ) without a table,
/// else σ·t/8192 for t drawn uniformly from the distribution's 4096-entry table (the random
/// index is a 32-bit number modulo 4096, so every entry is equally likely). Read from the same
/// tables the shaper and tc use, so clamping and discretisation are included.
pub fn implied_jitter(distribution: Distribution, sigma: f64) -> JitterMoments {
    let Some(entries) = table(distribution) else {
        return JitterMoments {
            mean: 0.0,
            stdev: sigma / 3f64.sqrt(),
            kurtosis: 1.8,
        };
    };
    let scale = sigma / NETEM_DIST_SCALE as f64;
    let values: Vec<f64> = entries.iter().map(|&t| f64::from(t) * scale).collect();
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let moment = |power: i32| values.iter().map(|v| (v - mean).powi(power)).sum::<f64>() / n;
    let variance = moment(2);
    JitterMoments {
        mean,
        stdev: variance.sqrt(),
        kurtosis: if variance > 0.0 {
            moment(4) / (variance * variance)
        } else {
            0.0
        },
    }
}

/// Half-width of the 95% range of a sample stdev from `n` draws, relative to the true stdev:
/// the delta method gives Var(s) ≈ σ²(κ − 1)/(4n).
pub fn stdev_sampling_halfwidth(kurtosis: f64, n: usize) -> f64 {
    if n == 0 {
        return f64::INFINITY;
    }
    Z95 * ((kurtosis - 1.0).max(0.0) / (4.0 * n as f64)).sqrt()
}

/// A bandwidth-delay product in full-size frames.
pub fn bdp_packets(rate_bps: u64, rtt_ns: u64) -> f64 {
    rate_bps as f64 * rtt_ns as f64 / 1e9 / (FRAME_BYTES * 8.0)
}

/// The median of `values` (any order); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    crate::stats::percentile(&sorted, 50.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn wilson_matches_published_values() {
        // Newcombe (1998), Statistics in Medicine 17:857, table I: 0/10 and 1/29 and 81/263.
        let (low, high) = wilson_interval(0, 10, Z95).unwrap();
        assert_eq!(low, 0.0);
        assert!(close(high, 0.2775, 5e-5), "{high}");
        let (low, high) = wilson_interval(1, 29, Z95).unwrap();
        assert!(
            close(low, 0.0061, 5e-5) && close(high, 0.1718, 5e-5),
            "{low} {high}"
        );
        let (low, high) = wilson_interval(81, 263, Z95).unwrap();
        assert!(
            close(low, 0.2553, 5e-5) && close(high, 0.3662, 5e-5),
            "{low} {high}"
        );
        // No events: the interval starts at exactly 0 whatever n, so a configured 0% is inside.
        assert_eq!(wilson_interval(0, 2000, Z95).map(|i| i.0), Some(0.0));
        assert_eq!(wilson_interval(50, 50, Z95).map(|i| i.1), Some(1.0));
        assert_eq!(wilson_interval(0, 0, Z95), None);
        assert_eq!(wilson_interval(3, 2, Z95), None);
    }

    #[test]
    fn jitter_spread_comes_from_the_tables() {
        let uniform = implied_jitter(Distribution::Uniform, 3.0);
        assert!(close(uniform.stdev, 3.0 / 3f64.sqrt(), 1e-12));
        // The normal table is the inverse CDF clamped at ±4σ: its spread is σ to a fraction of
        // a percent, its mean 0.
        let normal = implied_jitter(Distribution::Normal, 5.0);
        assert!(close(normal.stdev, 5.0, 0.02), "{normal:?}");
        assert!(close(normal.mean, 0.0, 0.01), "{normal:?}");
        assert!(close(normal.kurtosis, 3.0, 0.1), "{normal:?}");
        // The Pareto tables are clamped at +4σ, which cuts their spread well below σ.
        let pareto = implied_jitter(Distribution::Pareto, 1.0);
        assert!(close(pareto.stdev, 0.820, 0.005), "{pareto:?}");
        let paretonormal = implied_jitter(Distribution::Paretonormal, 1.0);
        assert!(close(paretonormal.stdev, 0.834, 0.005), "{paretonormal:?}");
        // Moments scale with σ.
        let wider = implied_jitter(Distribution::Pareto, 10.0);
        assert!(close(wider.stdev, 10.0 * pareto.stdev, 1e-9));
        assert!(close(wider.kurtosis, pareto.kurtosis, 1e-9));
    }

    #[test]
    fn sampling_range_and_sizes() {
        // A normal sample of 2000: s scatters by σ/√(2n) = 1.58%, so ±3.1% at 95%.
        assert!(close(stdev_sampling_halfwidth(3.0, 2000), 0.0310, 1e-4));
        // 100 Mbit/s × 40 ms = 500 kB = 330 frames of 1514 bytes.
        assert!(close(bdp_packets(100_000_000, 40_000_000), 330.25, 0.01));
        assert!(close(TCP_CEILING, 0.9564, 1e-4));
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
