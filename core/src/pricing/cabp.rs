//! Congestion-aware bandwidth pricing (CABP): a site's unit price as a piecewise-linear,
//! non-decreasing function of its congestion relative to a reference level (papers/000, §4.1,
//! Figure 3).

use serde::{Deserialize, Serialize};

/// The two congestion thresholds σ1 < σ2 of Algorithm 1, as multiples of the reference level:
/// below σ1·θ̂ a site pays the lowest price, from σ2·θ̂ on the highest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub sigma1: f64,
    pub sigma2: f64,
}

/// The lowest and highest unit price, P_min ≤ P_max.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PriceRange {
    pub p_min: f64,
    pub p_max: f64,
}

impl Band {
    /// `Err` naming the problem unless 0 ≤ σ1 < σ2, both finite: with σ1 ≥ σ2 the linear piece
    /// of Algorithm 1 would be empty or reversed.
    pub fn check(&self, name: &str) -> Result<(), String> {
        let Band { sigma1, sigma2 } = *self;
        if !(sigma1.is_finite() && sigma2.is_finite() && sigma1 >= 0.0 && sigma1 < sigma2) {
            return Err(format!(
                "{name}: the thresholds must satisfy 0 ≤ σ1 < σ2 (got σ1 = {sigma1}, σ2 = {sigma2})"
            ));
        }
        Ok(())
    }
}

impl PriceRange {
    /// `Err` naming the problem unless 0 ≤ P_min ≤ P_max, both finite.
    pub fn check(&self) -> Result<(), String> {
        let PriceRange { p_min, p_max } = *self;
        if !(p_min.is_finite() && p_max.is_finite() && p_min >= 0.0 && p_min <= p_max) {
            return Err(format!(
                "price range: must satisfy 0 ≤ P_min ≤ P_max (got P_min = {p_min}, P_max = {p_max})"
            ));
        }
        Ok(())
    }
}

/// CABP, Algorithm 1 of the LDP/PARM paper (papers/000): the unit price of a site with
/// congestion `theta` (θ_m) against the reference level `reference` (θ̂).
///
/// Lines 1–2: θ < σ1θ̂ → P_min. Lines 3–4: σ1θ̂ ≤ θ < σ2θ̂ → linear from P_min to P_max.
/// Lines 5–6: θ ≥ σ2θ̂ → P_max. The pieces meet, so the price is continuous in θ. With θ̂ = 0
/// both thresholds are 0 and every θ ≥ 0 pays P_max: the linear piece is empty, so its division
/// by σ2θ̂ − σ1θ̂ never happens. Inputs are not checked here (`ldp` checks them); a NaN θ gives
/// P_max, as none of the comparisons of lines 1 and 3 holds.
pub fn cabp(theta: f64, reference: f64, band: Band, range: PriceRange) -> f64 {
    let low = band.sigma1 * reference;
    let high = band.sigma2 * reference;
    if theta < low {
        range.p_min
    } else if theta < high {
        range.p_min + (range.p_max - range.p_min) / (high - low) * (theta - low)
    } else {
        range.p_max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The location-dependent band of Table 3 (σ21, σ22) and the default price range.
    const BAND: Band = Band {
        sigma1: 0.4,
        sigma2: 1.2,
    };
    const RANGE: PriceRange = PriceRange {
        p_min: 0.2,
        p_max: 0.5,
    };

    #[test]
    fn below_the_lower_threshold_pays_the_lowest_price() {
        // θ̂ = 0.5: σ1θ̂ = 0.2 (exact in binary), σ2θ̂ = 0.6.
        assert_eq!(cabp(0.0, 0.5, BAND, RANGE), 0.2);
        assert_eq!(cabp(0.199_999, 0.5, BAND, RANGE), 0.2);
    }

    #[test]
    fn between_the_thresholds_the_price_is_linear() {
        // Line 4: P_min + (P_max − P_min)/(σ2θ̂ − σ1θ̂)·(θ − σ1θ̂) = 0.2 + 0.3/0.4·(θ − 0.2).
        assert!((cabp(0.4, 0.5, BAND, RANGE) - 0.35).abs() < 1e-12);
        assert!((cabp(0.3, 0.5, BAND, RANGE) - 0.275).abs() < 1e-12);
        // The lower boundary σ1θ̂ belongs to line 4, which gives P_min there.
        assert!((cabp(0.2, 0.5, BAND, RANGE) - 0.2).abs() < 1e-12);
        // Just below the upper boundary the price approaches P_max.
        assert!((cabp(0.6 - 1e-9, 0.5, BAND, RANGE) - 0.5).abs() < 1e-8);
        assert!(cabp(0.6 - 1e-3, 0.5, BAND, RANGE) < 0.5);
    }

    #[test]
    fn from_the_upper_threshold_on_the_price_is_the_highest() {
        // σ2θ̂ = 1.2 · 0.5 as the algorithm computes it: the boundary itself takes line 6.
        assert_eq!(cabp(1.2 * 0.5, 0.5, BAND, RANGE), 0.5);
        assert_eq!(cabp(0.9, 0.5, BAND, RANGE), 0.5);
        assert_eq!(cabp(5.0, 0.5, BAND, RANGE), 0.5);
    }

    #[test]
    fn the_uniform_case_uses_reference_one() {
        // LDP's line 5: CABP(θ_avg, 1, σ11 = 0.3, σ12 = 0.7).
        let same = Band {
            sigma1: 0.3,
            sigma2: 0.7,
        };
        assert!((cabp(0.4, 1.0, same, RANGE) - 0.275).abs() < 1e-12);
        assert_eq!(cabp(0.29, 1.0, same, RANGE), 0.2);
        assert_eq!(cabp(0.7, 1.0, same, RANGE), 0.5);
    }

    #[test]
    fn a_zero_reference_prices_everything_at_the_top() {
        assert_eq!(cabp(0.0, 0.0, BAND, RANGE), 0.5);
        assert_eq!(cabp(0.3, 0.0, BAND, RANGE), 0.5);
    }

    #[test]
    fn bands_and_ranges_are_checked() {
        assert!(BAND.check("σ2x").is_ok());
        let reversed = Band {
            sigma1: 1.2,
            sigma2: 0.4,
        };
        assert!(reversed
            .check("location band")
            .unwrap_err()
            .contains("location band"));
        assert!(RANGE.check().is_ok());
        let bad = PriceRange {
            p_min: 0.5,
            p_max: 0.2,
        };
        assert!(bad.check().unwrap_err().contains("P_min"));
        let nan = PriceRange {
            p_min: f64::NAN,
            p_max: 0.2,
        };
        assert!(nan.check().is_err());
    }
}
