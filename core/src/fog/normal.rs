//! Normal distributions of latency and their robustness (Section IV of the F-FDN paper).

/// A normal distribution N(mean, sd), in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Normal {
    pub mean: f64,
    pub sd: f64,
}

impl Normal {
    pub fn new(mean: f64, sd: f64) -> Normal {
        Normal {
            mean,
            sd: sd.max(0.0),
        }
    }

    /// A certain value (sd 0).
    pub fn point(value: f64) -> Normal {
        Normal::new(value, 0.0)
    }

    /// The distribution of the sum of two independent latencies: the convolution of their
    /// densities, which for normals is N(μ1 + μ2, √(σ1² + σ2²)). Equations 2 and 3.
    pub fn convolve(self, other: Normal) -> Normal {
        Normal::new(
            self.mean + other.mean,
            (self.sd * self.sd + other.sd * other.sd).sqrt(),
        )
    }

    /// P(X ≤ x). With sd 0, a step at the mean.
    pub fn cdf(self, x: f64) -> f64 {
        if self.sd <= 0.0 {
            return if x >= self.mean { 1.0 } else { 0.0 };
        }
        0.5 * (1.0 + erf((x - self.mean) / (self.sd * std::f64::consts::SQRT_2)))
    }
}

/// Robustness of delivering a segment whose end-to-end latency is `delivery` before its
/// deadline `delta` (seconds from now): r_i = P(X ≤ δ_i). Equation 4.
pub fn robustness(delivery: Normal, delta: f64) -> f64 {
    delivery.cdf(delta)
}

/// The error function, from Numerical Recipes' Chebyshev fit of erfc (fractional error below
/// 1.2e-7 everywhere: far below the uncertainty of any latency estimate it is applied to).
fn erf(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 {
        1.0 - erfc
    } else {
        erfc - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn the_cdf_matches_the_standard_normal_table() {
        let z = Normal::new(0.0, 1.0);
        for (x, p) in [
            (0.0, 0.5),
            (1.0, 0.841_344_7),
            (-1.0, 0.158_655_3),
            (1.96, 0.975_002_1),
            (2.5, 0.993_790_3),
            (-3.0, 0.001_349_9),
        ] {
            assert!(close(z.cdf(x), p, 2e-7), "Φ({x}) = {} not {p}", z.cdf(x));
        }
    }

    #[test]
    fn convolution_adds_means_and_variances() {
        // Processing N(0.3, 0.04) then a transfer N(0.1, 0.03): N(0.4, 0.05).
        let c = Normal::new(0.3, 0.04).convolve(Normal::new(0.1, 0.03));
        assert!(
            close(c.mean, 0.4, 1e-12) && close(c.sd, 0.05, 1e-12),
            "{c:?}"
        );
    }

    #[test]
    fn robustness_is_the_probability_of_meeting_the_deadline() {
        let c = Normal::new(0.4, 0.05);
        // δ one standard deviation past the mean: Φ(1); at the mean: one half.
        assert!(close(robustness(c, 0.45), 0.841_344_7, 2e-7));
        assert!(close(robustness(c, 0.4), 0.5, 2e-7));
        // A certain latency meets a deadline at or after it and misses one before it.
        assert_eq!(robustness(Normal::point(1.0), 1.0), 1.0);
        assert_eq!(robustness(Normal::point(1.0), 0.99), 0.0);
    }
}
