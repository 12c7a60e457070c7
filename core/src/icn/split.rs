//! Smooth weighted splitting of a request stream: which of k targets gets the next request so
//! that every target's share follows its weight as closely as whole requests allow, at every
//! point of the stream — what a border router needs to send application n's misses from region
//! l to CDN site m in the proportions α_nlm of PARM (papers/000, Section 4.2).
//!
//! The request comes from nginx's smooth weighted round-robin, which credits every target its
//! weight per request and gives the request to the target with the most credit. That is smooth
//! but not within one request: with weights such as (0.05, 4.3, 0.04, 0.74, 0.06, 4.3) a
//! target falls 1.19 requests behind its share. So the choice here is earliest-deadline-first
//! over the same credits: among the targets owed a request (credit > 0), the one whose credit
//! would reach a whole request soonest, `(1 − credit) / share`. Scheduling each target's j-th
//! request within the window its share allows is a set of unit jobs with release times and
//! deadlines, which is always feasible here and which EDF meets whenever it is feasible; so
//! after any n requests every target i has been chosen floor or ceil of n·w_i/Σw times: within
//! one request of its share, strictly (Tijdeman's chairman assignment bound is the same idea).

/// A deterministic, smooth split over fixed weights; `set_weights` changes them on the fly.
#[derive(Debug, Clone)]
pub struct SmoothSplit {
    weights: Vec<f64>,
    /// Each weight over their sum.
    shares: Vec<f64>,
    /// Requests each target is owed: n·share − chosen so far (minus what it was ahead when the
    /// weights last changed). They sum to 0 between calls.
    credit: Vec<f64>,
}

impl SmoothSplit {
    /// A split over `weights` (any scale: `[1, 3]` is `[0.25, 0.75]`). Refused: no weights, a
    /// negative, infinite or NaN weight, or all weights zero.
    pub fn new(weights: &[f64]) -> Result<SmoothSplit, String> {
        let shares = shares(weights)?;
        Ok(SmoothSplit {
            weights: weights.to_vec(),
            credit: vec![0.0; shares.len()],
            shares,
        })
    }

    /// The target of the next request: an index into the weights. A target of weight zero is
    /// never chosen.
    #[allow(
        clippy::should_implement_trait,
        reason = "there is always a next target: an Iterator's Option would only be unwrapped"
    )]
    pub fn next(&mut self) -> usize {
        for (credit, share) in self.credit.iter_mut().zip(&self.shares) {
            *credit += share;
        }
        // Credits sum to 1 now, so some target of positive share is owed a request; the
        // fallback (most credit) only guards against rounding.
        let owed = (0..self.shares.len())
            .filter(|&i| self.shares[i] > 0.0 && self.credit[i] > 0.0)
            .min_by(|&a, &b| self.deadline(a).total_cmp(&self.deadline(b)));
        let chosen = owed.unwrap_or_else(|| {
            (0..self.shares.len())
                .filter(|&i| self.shares[i] > 0.0)
                .max_by(|&a, &b| self.credit[a].total_cmp(&self.credit[b]).then(b.cmp(&a)))
                .unwrap_or(0)
        });
        self.credit[chosen] -= 1.0;
        chosen
    }

    /// Requests until target `i`'s credit reaches a whole request.
    fn deadline(&self, i: usize) -> f64 {
        (1.0 - self.credit[i]) / self.shares[i]
    }

    /// The weights as given.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// Replaces the weights (as many as before) without restarting the sequence: every target
    /// keeps what it is owed or ahead, so a change to the same weights changes nothing, and
    /// weights replaced more often than requests arrive still spread them (a restart would give
    /// each request to the first heavy target). Within one request of the shares holds for
    /// fixed weights; a change can add to the lag each target carried into it (well under
    /// two requests in all), which the new shares then work off.
    pub fn set_weights(&mut self, weights: &[f64]) -> Result<(), String> {
        if weights.len() != self.weights.len() {
            return Err(format!(
                "{} weights given for {} targets",
                weights.len(),
                self.weights.len()
            ));
        }
        self.shares = shares(weights)?;
        self.weights = weights.to_vec();
        Ok(())
    }
}

/// `weights` over their sum, or why they cannot split anything.
fn shares(weights: &[f64]) -> Result<Vec<f64>, String> {
    if weights.is_empty() {
        return Err("no weights: a split needs at least one target".into());
    }
    for (i, &w) in weights.iter().enumerate() {
        if !w.is_finite() || w < 0.0 {
            return Err(format!("weight {i} is {w}: weights must be finite and ≥ 0"));
        }
    }
    let total: f64 = weights.iter().sum();
    if total <= 0.0 || !total.is_finite() {
        return Err(format!(
            "the weights sum to {total}: at least one must be positive (and the sum finite)"
        ));
    }
    Ok(weights.iter().map(|w| w / total).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{RngExt, SeedableRng};

    /// The largest |chosen − target| of any target over the next `requests` choices, where
    /// `lag` holds chosen − target so far and the target grows by the split's current shares.
    fn worst_lag(split: &mut SmoothSplit, lag: &mut [f64], requests: usize) -> f64 {
        let total: f64 = split.weights().iter().sum();
        let shares: Vec<f64> = split.weights().iter().map(|w| w / total).collect();
        let mut worst: f64 = 0.0;
        for _ in 0..requests {
            lag[split.next()] += 1.0;
            for (lag, share) in lag.iter_mut().zip(&shares) {
                *lag -= share;
                worst = worst.max(lag.abs());
            }
        }
        worst
    }

    fn random_weights(rng: &mut StdRng) -> Vec<f64> {
        let k = rng.random_range(2..=7);
        let mut weights: Vec<f64> = (0..k)
            .map(|_| rng.random::<f64>().powi(3) * [1.0, 10.0, 100.0][rng.random_range(0..3)])
            .collect();
        if rng.random_bool(0.3) {
            weights[rng.random_range(0..k)] = 0.0;
        }
        if weights.iter().all(|&w| w == 0.0) {
            weights[0] = 1.0;
        }
        weights
    }

    #[test]
    fn proportions_are_exact_at_the_end_of_each_cycle() {
        let mut split = SmoothSplit::new(&[5.0, 1.0, 1.0]).unwrap();
        let sequence: Vec<usize> = (0..14).map(|_| split.next()).collect();
        for cycle in sequence.chunks(7) {
            let count = |i| cycle.iter().filter(|&&t| t == i).count();
            assert_eq!((count(0), count(1), count(2)), (5, 1, 1), "{sequence:?}");
        }
        // Smooth: the light targets are not sent back to back, nor the heavy one five times.
        assert!(
            !sequence.windows(2).any(|w| w[0] != 0 && w[1] != 0),
            "{sequence:?}"
        );
        assert!(
            !sequence.windows(5).any(|w| w.iter().all(|&t| t == 0)),
            "{sequence:?}"
        );
    }

    #[test]
    fn every_prefix_is_within_one_request_of_the_shares() {
        // nginx's own algorithm falls 1.19 requests behind on these weights.
        let mut split =
            SmoothSplit::new(&[0.0487, 4.3151, 0.0433, 0.7446, 0.0580, 4.3164]).unwrap();
        assert!(worst_lag(&mut split, &mut [0.0; 6], 2000) < 1.0);
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..2000 {
            let weights = random_weights(&mut rng);
            let mut split = SmoothSplit::new(&weights).unwrap();
            let lag = worst_lag(&mut split, &mut vec![0.0; weights.len()], 300);
            assert!(lag < 1.0 + 1e-9, "{weights:?}: lag {lag}");
        }
    }

    #[test]
    fn zero_weights_are_never_chosen_and_runs_are_deterministic() {
        let mut split = SmoothSplit::new(&[0.0, 2.0, 0.0, 1.0]).unwrap();
        let first: Vec<usize> = (0..30).map(|_| split.next()).collect();
        assert!(first.iter().all(|&t| t == 1 || t == 3), "{first:?}");
        let mut again = SmoothSplit::new(&[0.0, 2.0, 0.0, 1.0]).unwrap();
        let second: Vec<usize> = (0..30).map(|_| again.next()).collect();
        assert_eq!(first, second);
        let mut single = SmoothSplit::new(&[0.3]).unwrap();
        assert!((0..10).all(|_| single.next() == 0));
    }

    #[test]
    fn changing_weights_keeps_the_sequence_going() {
        // Setting the same weights again changes nothing, even before every request.
        let mut steady = SmoothSplit::new(&[1.0, 1.0]).unwrap();
        let mut reset = steady.clone();
        let expected: Vec<usize> = (0..10).map(|_| steady.next()).collect();
        let got: Vec<usize> = (0..10)
            .map(|_| {
                reset.set_weights(&[1.0, 1.0]).unwrap();
                reset.next()
            })
            .collect();
        assert_eq!(got, expected);
        assert_eq!(got, [0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
        // Across a change, what each target got stays near the target that grows by the old
        // shares until the change and by the new ones after it.
        let mut rng = StdRng::seed_from_u64(11);
        let mut worst: f64 = 0.0;
        for _ in 0..500 {
            let mut split = SmoothSplit::new(&random_weights(&mut rng)).unwrap();
            let k = split.weights().len();
            let mut lag = vec![0.0; k];
            let before = rng.random_range(0..200);
            assert!(worst_lag(&mut split, &mut lag, before) < 1.0 + 1e-9);
            let mut weights = random_weights(&mut rng);
            weights.resize(k, 0.5);
            split.set_weights(&weights).unwrap();
            assert_eq!(split.weights(), weights.as_slice());
            worst = worst.max(worst_lag(&mut split, &mut lag, 400));
        }
        assert!(worst < 2.0, "lag {worst}");
    }

    #[test]
    fn bad_weights_are_refused_with_the_reason() {
        let refused = |weights: &[f64]| SmoothSplit::new(weights).expect_err("refused");
        assert_eq!(
            refused(&[]),
            "no weights: a split needs at least one target"
        );
        assert_eq!(
            refused(&[1.0, -0.5]),
            "weight 1 is -0.5: weights must be finite and ≥ 0"
        );
        assert_eq!(
            refused(&[f64::NAN]),
            "weight 0 is NaN: weights must be finite and ≥ 0"
        );
        assert!(refused(&[1.0, f64::INFINITY]).contains("weight 1 is inf"));
        assert!(refused(&[0.0, 0.0]).starts_with("the weights sum to 0"));
        assert!(refused(&[f64::MAX, f64::MAX]).contains("sum finite"));
        let mut split = SmoothSplit::new(&[1.0, 1.0]).unwrap();
        assert_eq!(
            split.set_weights(&[1.0]).unwrap_err(),
            "1 weights given for 2 targets"
        );
        assert!(split.set_weights(&[0.0, 0.0]).is_err());
        assert_eq!(
            split.weights(),
            [1.0, 1.0],
            "a refused change changes nothing"
        );
    }
}
