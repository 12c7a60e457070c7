//! tc-netem's delay distributions: the tables `tc` loads into the kernel, and the kernel's lookup.
//!
//! A table is 4096 signed 16-bit samples of the inverse cumulative distribution function of a
//! zero-mean, unit-scale distribution, scaled by [`NETEM_DIST_SCALE`]. `tc ... distribution normal`
//! reads it from `/usr/lib/<triplet>/tc/normal.dist`; iproute2 builds those files with the
//! programs `netem/normal.c`, `netem/pareto.c` and `netem/paretonormal.c`. We generate the same
//! tables with the same arithmetic here instead of shipping the files, so the userspace shaper
//! does not depend on iproute2 being installed. The unit tests compare the result with the
//! installed files (on this machine, iproute2 6.1: identical, see `generated_tables_match_iproute2`).
//!
//! `Uniform` has no table: the kernel's default (no table loaded) is uniform, and iproute2
//! ships no `uniform.dist`.

use crate::params::Distribution;
use std::f64::consts::PI;
use std::sync::OnceLock;

/// The kernel's fixed-point scale of table values (`NETEM_DIST_SCALE` in `pkt_sched.h`).
pub const NETEM_DIST_SCALE: i64 = 8192;

/// Entries in each of iproute2's tables (`TABLESIZE / 4` in its generators).
pub const TABLE_SIZE: usize = 4096;

/// The generators sample the CDF at this many points and keep every fourth.
const CDF_POINTS: usize = 16384;

/// The table the kernel would hold for `distribution` (`None` for uniform, which has none).
/// Tables are generated once per process.
pub fn table(distribution: Distribution) -> Option<&'static [i16]> {
    static NORMAL: OnceLock<Vec<i16>> = OnceLock::new();
    static PARETO: OnceLock<Vec<i16>> = OnceLock::new();
    static PARETONORMAL: OnceLock<Vec<i16>> = OnceLock::new();
    match distribution {
        Distribution::Uniform => None,
        Distribution::Normal => Some(NORMAL.get_or_init(normal_table)),
        Distribution::Pareto => Some(PARETO.get_or_init(pareto_table)),
        Distribution::Paretonormal => Some(PARETONORMAL.get_or_init(paretonormal_table)),
    }
}

/// A delay with mean `mu` and scale `sigma` (nanoseconds), exactly as the kernel's `tabledist()`
/// in `net/sched/sch_netem.c` computes it: uniform on `[mu - sigma, mu + sigma)` without a
/// table, else `mu + sigma * table[rnd % size] / NETEM_DIST_SCALE` in fixed point, rounded half
/// away from zero on the fractional part. `rnd` is called only when `sigma != 0`, as the kernel
/// draws its correlated random number (`get_crandom`) only then; this keeps the random sequence,
/// and so every later decision, the same as the kernel's. The result may be negative when
/// `sigma > mu`; netem then schedules the packet in the past, i.e. sends it at once.
pub fn tabledist(mu: i64, sigma: i32, rnd: impl FnOnce() -> u32, table: Option<&[i16]>) -> i64 {
    if sigma == 0 {
        return mu;
    }
    let rnd = rnd();
    let sigma = i64::from(sigma);
    let Some(table) = table.filter(|t| !t.is_empty()) else {
        // The kernel's `(rnd % (2 * (u32)sigma)) + mu - sigma`; sigma is capped to INT_MAX by
        // netem_change, so 2 * sigma fits in u32.
        // Saturating: a delay near the largest the units allow must not wrap to a negative one.
        let span = 2 * sigma as u64;
        return ((u64::from(rnd) % span) as i64 - sigma).saturating_add(mu);
    };
    let t = i64::from(table[rnd as usize % table.len()]);
    let mut x = (sigma % NETEM_DIST_SCALE) * t;
    if x >= 0 {
        x += NETEM_DIST_SCALE / 2;
    } else {
        x -= NETEM_DIST_SCALE / 2;
    }
    (x / NETEM_DIST_SCALE + (sigma / NETEM_DIST_SCALE) * t).saturating_add(mu)
}

/// The standard normal CDF the generators use: `.5 + .5 * erf(x / sqrt(2))`.
fn normal_cdf(x: f64) -> f64 {
    0.5 + 0.5 * erf(x / (2.0f64.sqrt() * 1.0))
}

/// The inverse normal CDF at `CDF_POINTS + 1` points, found as iproute2's `normal.c` finds it:
/// step x from -10 by 0.00005 and remember, for each rounded CDF index, the last x that hit it.
/// The floating-point accumulation of `x` is part of the result, so it is kept as is.
fn inverse_normal_cdf() -> Vec<f64> {
    let mut inverse = vec![0.0; CDF_POINTS + 1];
    let mut x = -10.0f64;
    while x < 10.05 {
        let index = (CDF_POINTS as f64 * normal_cdf(x)).round_ties_even() as usize;
        inverse[index.min(CDF_POINTS)] = x;
        x += 0.00005;
    }
    inverse
}

fn clamp_i16(value: i64) -> i16 {
    value.clamp(i64::from(i16::MIN), i64::from(i16::MAX)) as i16
}

/// iproute2's `netem/normal.c`: the scaled inverse normal CDF, clamped to 16 bits.
fn normal_table() -> Vec<i16> {
    let inverse = inverse_normal_cdf();
    (0..CDF_POINTS)
        .step_by(4)
        .map(|i| clamp_i16((inverse[i] * NETEM_DIST_SCALE as f64).round_ties_even() as i64))
        .collect()
}

/// One entry of iproute2's Pareto table (shape a = 3, shifted by its mean 1.5 and scaled by
/// 4/3), for the CDF position `i / 65536` (`netem/pareto.c`, `paretovalue()` in
/// `netem/paretonormal.c`).
fn pareto_value(i: u32) -> i64 {
    const SHAPE: f64 = 3.0;
    let mut value = f64::from(i) / 65536.0;
    value = 1.0 / value.powf(1.0 / SHAPE);
    value -= 1.5;
    value *= (4.0 / 3.0) * NETEM_DIST_SCALE as f64;
    if value > 32767.0 {
        value = 32767.0;
    }
    value.round_ties_even() as i64
}

/// iproute2's `netem/pareto.c`: positions 65536, 65520, ... 16 of 65536.
fn pareto_table() -> Vec<i16> {
    (0..TABLE_SIZE as u32)
        .map(|k| clamp_i16(pareto_value(65536 - 16 * k)))
        .collect()
}

/// iproute2's `netem/paretonormal.c`: `(normal + 3 * pareto) / 4` with C's truncating division.
fn paretonormal_table() -> Vec<i16> {
    let inverse = inverse_normal_cdf();
    (0..CDF_POINTS)
        .step_by(4)
        .map(|i| {
            let normal = (inverse[i] * NETEM_DIST_SCALE as f64).round_ties_even() as i64;
            let pareto = pareto_value(65536 - 4 * i as u32);
            clamp_i16((normal + 3 * pareto) / 4)
        })
        .collect()
}

/// The error function, accurate to a few units in the last place, which is all the table
/// generators need (a CDF index only moves if `16384 * cdf` lands within that error of a
/// rounding boundary). Rust's std has no `erf`; C's comes from libm.
fn erf(x: f64) -> f64 {
    let a = x.abs();
    let value = if a < 2.5 {
        // erf(a) = 2/sqrt(pi) * exp(-a^2) * sum_n (2a^2)^n * a / (1 * 3 * ... * (2n + 1)):
        // all terms positive, so no cancellation.
        let a2 = a * a;
        let mut term = a;
        let mut sum = a;
        let mut n = 1.0;
        while term > sum * 1e-18 {
            term *= 2.0 * a2 / (2.0 * n + 1.0);
            sum += term;
            n += 1.0;
        }
        2.0 / PI.sqrt() * (-a2).exp() * sum
    } else if a < 6.0 {
        // erfc(a) = exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...)))), evaluated
        // from the tail; 120 levels converge to double precision for a >= 2.5.
        let mut fraction = a;
        for k in (1..=120).rev() {
            fraction = a + (f64::from(k) / 2.0) / fraction;
        }
        1.0 - (-a * a).exp() / PI.sqrt() / fraction
    } else {
        1.0
    };
    value.copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn erf_matches_reference_values() {
        let reference = [
            (0.1, 0.112_462_916_018_284_9),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (2.5, 0.999_593_047_982_555),
            (3.0, 0.999_977_909_503_001_4),
            (4.0, 0.999_999_984_582_742_1),
        ];
        for (x, want) in reference {
            assert!(
                (erf(x) - want).abs() < 4e-16,
                "erf({x}) = {} not {want}",
                erf(x)
            );
            assert!((erf(-x) + want).abs() < 4e-16);
        }
        // Both branches agree where they meet: the step across 2.5 is the derivative's.
        let h = 1e-9;
        let slope = 2.0 / PI.sqrt() * (-6.25f64).exp();
        assert!((erf(2.5) - erf(2.5 - h) - slope * h).abs() < 1e-15);
    }

    #[test]
    fn tabledist_is_the_kernels_arithmetic() {
        let never = || -> u32 { panic!("no random number is drawn when sigma is 0") };
        assert_eq!(tabledist(1000, 0, never, None), 1000);
        // Uniform: (rnd % 2sigma) + mu - sigma.
        assert_eq!(tabledist(1000, 100, || 0, None), 900);
        assert_eq!(tabledist(1000, 100, || 199, None), 1099);
        assert_eq!(tabledist(1000, 100, || 200, None), 900);
        // Table: sigma * t / 8192 with the fraction rounded half away from zero.
        let table = [8192i16, -8192, 1, -1];
        assert_eq!(tabledist(0, 10_000, || 0, Some(&table)), 10_000);
        assert_eq!(tabledist(0, 10_000, || 1, Some(&table)), -10_000);
        assert_eq!(tabledist(5, 4096, || 2, Some(&table)), 6);
        assert_eq!(tabledist(5, 4096, || 3, Some(&table)), 4);
        assert_eq!(tabledist(5, 4095, || 2, Some(&table)), 5);
        // rnd is reduced modulo the table size.
        assert_eq!(tabledist(0, 10_000, || 5, Some(&table)), -10_000);
        // The largest delays saturate rather than wrap to a negative (at once) one.
        assert_eq!(tabledist(i64::MAX - 5, 100, || 199, None), i64::MAX);
        assert_eq!(
            tabledist(i64::MAX - 5, 10_000, || 0, Some(&table)),
            i64::MAX
        );
    }

    #[test]
    fn tables_have_iproute2s_shape() {
        for distribution in [
            Distribution::Normal,
            Distribution::Pareto,
            Distribution::Paretonormal,
        ] {
            let t = table(distribution).expect("a table");
            assert_eq!(t.len(), TABLE_SIZE, "{distribution:?}");
            assert!(
                t.windows(2).all(|w| w[0] <= w[1]),
                "{distribution:?} is an inverse CDF"
            );
        }
        assert!(table(Distribution::Uniform).is_none());
        let normal = table(Distribution::Normal).expect("normal");
        assert_eq!(
            normal[0],
            i16::MIN,
            "the first CDF point is -10 sigma, clamped"
        );
        assert!(normal[2048].abs() < 8, "the median is 0");
        let pareto = table(Distribution::Pareto).expect("pareto");
        assert_eq!(pareto[0], -5461, "(1 - 1.5) * 4/3 * 8192");
        assert_eq!(pareto[TABLE_SIZE - 1], 32767, "the tail is clamped");
    }

    /// Reads a `.dist` file the way tc's `get_distribution()` does: `#` lines are comments,
    /// everything else is whitespace-separated integers.
    fn read_dist(path: &Path) -> Vec<i16> {
        let text = std::fs::read_to_string(path).expect("readable .dist file");
        text.lines()
            .filter(|line| !line.starts_with('#'))
            .flat_map(str::split_whitespace)
            .map(|word| {
                word.parse()
                    .unwrap_or_else(|e| panic!("{}: `{word}`: {e}", path.display()))
            })
            .collect()
    }

    /// Against iproute2's tables where they are installed; without them the comparison is
    /// reported as skipped, and under CI (which installs iproute2) it fails.
    #[test]
    fn generated_tables_match_iproute2() {
        let multiarch = format!("/usr/lib/{}-linux-gnu/tc", std::env::consts::ARCH);
        let dirs = [
            multiarch.as_str(),
            "/usr/lib/tc",
            "/usr/lib64/tc",
            "/lib/tc",
        ];
        let mut compared = 0;
        for distribution in [
            Distribution::Normal,
            Distribution::Pareto,
            Distribution::Paretonormal,
        ] {
            let Some(path) = dirs
                .iter()
                .map(|dir| Path::new(dir).join(format!("{}.dist", distribution.name())))
                .find(|path| path.exists())
            else {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "no installed {}.dist in {dirs:?}: iproute2's tables are needed under CI",
                    distribution.name()
                );
                println!(
                    "SKIPPED: no installed {}.dist in {dirs:?}",
                    distribution.name()
                );
                continue;
            };
            let installed = read_dist(&path);
            let generated = table(distribution).expect("a table");
            assert_eq!(installed.len(), generated.len(), "{}", path.display());
            let differing: Vec<usize> = (0..generated.len())
                .filter(|&i| installed[i] != generated[i])
                .collect();
            let max_diff = differing
                .iter()
                .map(|&i| (i32::from(installed[i]) - i32::from(generated[i])).abs())
                .max()
                .unwrap_or(0);
            println!(
                "{}: {} of {} entries differ, by at most {max_diff}",
                path.display(),
                differing.len(),
                generated.len()
            );
            assert!(
                differing.is_empty(),
                "{}: entries {differing:?} differ",
                path.display()
            );
            compared += 1;
        }
        println!("compared {compared} tables with the installed ones");
    }
}
