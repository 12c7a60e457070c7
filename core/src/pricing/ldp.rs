//! Location-dependent pricing (LDP): one price for every site when their congestion is even,
//! per-site prices against a population-weighted reference when it is not (papers/000, §4.1).

use super::cabp::{cabp, Band, PriceRange};
use super::measure::{mean, population_variance};
use serde::{Deserialize, Serialize};

/// LDP's parameters: the variance threshold δ, the band of the uniform case (σ11, σ12), the band
/// of the location-dependent case (σ21, σ22) and the price range.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LdpParams {
    pub delta: f64,
    /// σ11, σ12: used with the mean congestion and reference 1 (Algorithm 2, line 5).
    pub same: Band,
    /// σ21, σ22: used with each site's congestion and the weighted reference (line 8).
    pub location: Band,
    pub range: PriceRange,
}

impl LdpParams {
    /// Table 3 of the paper: δ = 0.03, σ11 = 0.3, σ12 = 0.7, σ21 = 0.4, σ22 = 1.2,
    /// P_min = 0.2, P_max = 0.5.
    pub fn paper() -> LdpParams {
        LdpParams {
            delta: 0.03,
            same: Band {
                sigma1: 0.3,
                sigma2: 0.7,
            },
            location: Band {
                sigma1: 0.4,
                sigma2: 1.2,
            },
            range: PriceRange {
                p_min: 0.2,
                p_max: 0.5,
            },
        }
    }

    /// `Err` naming the first malformed parameter.
    pub fn check(&self) -> Result<(), String> {
        if !(self.delta.is_finite() && self.delta >= 0.0) {
            return Err(format!(
                "δ (variance threshold) must be finite and ≥ 0, got {}",
                self.delta
            ));
        }
        self.same.check("uniform-case band (σ11, σ12)")?;
        self.location.check("location band (σ21, σ22)")?;
        self.range.check()
    }
}

/// LDP's decision for one T_LDP period.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    /// p_m, one per site, in the order of `theta`.
    pub prices: Vec<f64>,
    /// Whether var(Θ) ≥ δ, so each site got its own price (line 6's branch).
    pub location_dependent: bool,
    /// θ̂: 1 in the uniform case (line 4), the population-weighted mean otherwise (line 7).
    pub reference: f64,
    /// var(Θ) as compared with δ: the population variance (divided by M).
    pub variance: f64,
}

/// LDP, Algorithm 2 of the LDP/PARM paper (papers/000). `theta[m]` is site m's congestion level
/// θ_m = d_m / C_m (Eq. 2), `users[m]` its user number U_m (the population weights γ_m =
/// U_m / ΣU_i of line 7).
///
/// var(Θ) is the population variance: the paper does not say which; the sample variance
/// (÷ (M − 1)) is 10/9 of it for M = 10 and would move a set of sites near the threshold (the
/// paper's Traffic Pattern 2 has 0.030 one way and 0.034 the other, against δ = 0.03).
pub fn ldp(theta: &[f64], users: &[f64], params: &LdpParams) -> Result<Prices, String> {
    params.check()?;
    if theta.is_empty() {
        return Err("LDP: no sites (θ is empty)".into());
    }
    if users.len() != theta.len() {
        return Err(format!(
            "LDP: {} congestion levels but {} user numbers; need one of each per site",
            theta.len(),
            users.len()
        ));
    }
    if let Some((m, t)) = theta
        .iter()
        .enumerate()
        .find(|(_, t)| !(t.is_finite() && **t >= 0.0))
    {
        return Err(format!(
            "LDP: congestion level θ of site {m} must be finite and ≥ 0, got {t}"
        ));
    }
    if let Some((m, u)) = users
        .iter()
        .enumerate()
        .find(|(_, u)| !(u.is_finite() && **u >= 0.0))
    {
        return Err(format!(
            "LDP: user number U of site {m} must be finite and ≥ 0, got {u}"
        ));
    }
    let variance = population_variance(theta);
    if variance < params.delta {
        // Lines 3–5: every site pays what the mean congestion costs against reference 1.
        let reference = 1.0;
        let price = cabp(mean(theta), reference, params.same, params.range);
        return Ok(Prices {
            prices: vec![price; theta.len()],
            location_dependent: false,
            reference,
            variance,
        });
    }
    let total_users: f64 = users.iter().sum();
    if total_users <= 0.0 {
        return Err(
            "LDP: the user numbers sum to 0, so the population weights γ are undefined".into(),
        );
    }
    // Lines 7–8: the reference is the population-weighted mean; each site is priced against it.
    let reference = theta
        .iter()
        .zip(users)
        .map(|(t, u)| u / total_users * t)
        .sum::<f64>();
    Ok(Prices {
        prices: theta
            .iter()
            .map(|&t| cabp(t, reference, params.location, params.range))
            .collect(),
        location_dependent: true,
        reference,
        variance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Congestion as in our Traffic Pattern 1 under BASE: region m's users over 550 (C is 1.1 ×
    /// the largest region's usage, 500 users).
    fn tp1() -> (Vec<f64>, Vec<f64>) {
        let users = vec![
            110.0, 150.0, 90.0, 230.0, 320.0, 190.0, 430.0, 380.0, 450.0, 500.0,
        ];
        (users.iter().map(|u| u / 550.0).collect(), users)
    }

    #[test]
    fn even_congestion_gets_one_price_from_the_mean() {
        // TP3-like: every site near 0.4, variance far below δ.
        let theta = [0.38, 0.41, 0.40, 0.42, 0.39, 0.40, 0.41, 0.39, 0.40, 0.40];
        let users = [1.0; 10];
        let p = ldp(&theta, &users, &LdpParams::paper()).unwrap();
        assert!(!p.location_dependent);
        assert_eq!(p.reference, 1.0);
        let mean = theta.iter().sum::<f64>() / 10.0;
        let expected = cabp(mean, 1.0, LdpParams::paper().same, LdpParams::paper().range);
        // 0.2 + 0.3/0.4 · (0.4 − 0.3) = 0.275.
        assert!((expected - 0.275).abs() < 1e-12);
        assert!(p.prices.iter().all(|&x| x == expected), "{:?}", p.prices);
        // TP4-like: higher mean congestion, one higher price.
        let busier: Vec<f64> = theta.iter().map(|t| t + 0.17).collect();
        let q = ldp(&busier, &users, &LdpParams::paper()).unwrap();
        assert!(!q.location_dependent);
        assert!((q.prices[0] - 0.4025).abs() < 1e-12, "{:?}", q.prices);
    }

    #[test]
    fn uneven_congestion_gets_location_dependent_prices() {
        let (theta, users) = tp1();
        let p = ldp(&theta, &users, &LdpParams::paper()).unwrap();
        assert!(p.location_dependent);
        assert!(p.variance >= 0.03, "{}", p.variance);
        // θ̂ = ΣU_m θ_m / ΣU = ΣU² / (550 ΣU) = 1,015,900 / 1,567,500.
        assert!((p.reference - 1_015_900.0 / 1_567_500.0).abs() < 1e-12);
        // Prices rise with congestion: sort sites by θ, prices must not fall.
        let mut order: Vec<usize> = (0..theta.len()).collect();
        order.sort_by(|&a, &b| theta[a].total_cmp(&theta[b]));
        for pair in order.windows(2) {
            assert!(p.prices[pair[0]] <= p.prices[pair[1]], "{:?}", p.prices);
        }
        // The least congested site is below σ21θ̂ (0.26) and pays P_min; the most congested is
        // above σ22θ̂ (0.78) and pays P_max; site 8 (θ = 0.69) is priced on the linear piece.
        assert_eq!(p.prices[2], 0.2);
        assert_eq!(p.prices[9], 0.5);
        let r = p.reference;
        let site8 = 0.2 + 0.3 / (0.8 * r) * (theta[7] - 0.4 * r);
        assert!((p.prices[7] - site8).abs() < 1e-12);
    }

    #[test]
    fn weights_follow_the_population() {
        // Same congestion, different populations: the reference moves toward the populous site.
        let theta = [0.1, 0.9];
        let p = ldp(&theta, &[1.0, 3.0], &LdpParams::paper()).unwrap();
        assert!(p.location_dependent);
        assert!((p.reference - 0.7).abs() < 1e-12);
        let q = ldp(&theta, &[3.0, 1.0], &LdpParams::paper()).unwrap();
        assert!((q.reference - 0.3).abs() < 1e-12);
    }

    #[test]
    fn the_variance_is_the_population_variance() {
        // Two sites at 0 and 2x: population variance x², sample variance 2x².
        let p = ldp(&[0.0, 0.3], &[1.0, 1.0], &LdpParams::paper()).unwrap();
        assert!((p.variance - 0.0225).abs() < 1e-12);
        assert!(
            !p.location_dependent,
            "0.0225 < δ = 0.03 (the sample variance, 0.045, is not)"
        );
    }

    #[test]
    fn bad_input_is_named() {
        let params = LdpParams::paper();
        assert!(ldp(&[], &[], &params).unwrap_err().contains("no sites"));
        assert!(ldp(&[0.1], &[1.0, 2.0], &params)
            .unwrap_err()
            .contains("user numbers"));
        assert!(ldp(&[0.1, f64::NAN], &[1.0, 2.0], &params)
            .unwrap_err()
            .contains("site 1"));
        assert!(ldp(&[0.1, 0.2], &[1.0, -2.0], &params)
            .unwrap_err()
            .contains("user number"));
        assert!(ldp(&[0.0, 1.0], &[0.0, 0.0], &params)
            .unwrap_err()
            .contains("sum to 0"));
        let mut bad = params;
        bad.delta = -1.0;
        assert!(ldp(&[0.1], &[1.0], &bad).unwrap_err().contains("δ"));
        bad = params;
        bad.location.sigma2 = 0.1;
        assert!(ldp(&[0.1], &[1.0], &bad).unwrap_err().contains("σ21"));
    }
}
