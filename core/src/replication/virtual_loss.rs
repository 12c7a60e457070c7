//! Virtual losses (Section V-B): at a request for c that finds Z_c available replicas, a loss
//! event with probability p_c(Z_c), so that virtual losses come at a rate proportional to γ_c
//! with the same factor for every content, and adaptation no longer waits for real losses.

/// z*_c = (D_c − λ_c)/θ_eff: above it π(Z_c = z) < π(Z_c = 0) may hold, so those z are not
/// subsampled.
pub fn z_star(replicas: u32, lambda: f64, theta: f64) -> f64 {
    (replicas as f64 - lambda) / theta
}

/// q_c(z) = Π_{i=1..z} (λ_c + i θ_eff)/(D_c − i + 1) = π(Z_c = 0)/π(Z_c = z) by Equation (1):
/// subsampling requests that see Z_c = z with it yields events at rate γ_c.
pub fn q(z: u32, replicas: u32, lambda: f64, theta: f64) -> f64 {
    (1..=z.min(replicas))
        .map(|i| (lambda + i as f64 * theta) / (replicas - i + 1) as f64)
        .product()
}

/// p_c(Z_c) = (min_c' z*_c' / z*_c) · 1(Z_c ≤ z*_c) · q_c(Z_c), clamped to [0, 1] (the
/// on-the-fly estimates can push q above 1 or min z* above z*_c); 0 where θ_eff or z*_c is not
/// positive and finite (an idle or a saturated farm, or D_c ≤ λ_c).
pub fn probability(z: u32, replicas: u32, lambda: f64, theta: f64, z_min: f64) -> f64 {
    if !(theta > 0.0 && theta.is_finite() && z_min > 0.0) {
        return 0.0;
    }
    let star = z_star(replicas, lambda, theta);
    // z* is NaN for D_c = λ_c = 0, and no z ≥ 1 is admissible when z* ≤ 0.
    if star.is_nan() || star <= 0.0 || z as f64 > star {
        return 0.0;
    }
    (z_min / star * q(z, replicas, lambda, theta)).clamp(0.0, 1.0)
}

/// θ_eff estimated on the fly: ρ_eff as the share of busy servers.
pub fn theta_now(busy: usize, m: usize, d: usize) -> f64 {
    let rho = busy as f64 / m as f64;
    super::model::theta_eff(rho, d)
}

/// The estimate of min_c z*_c that the paper recommends: an average of z*_c over the least
/// popular contents, updated whenever a service of one of them ends. Which contents are least
/// popular is re-ranked every `window` time units from that window's request counts (so the
/// estimate follows a popularity change); λ_c in z*_c is the number of requests for c in
/// service (Little's law, mean service time 1).
#[derive(Debug, Clone)]
pub struct MinZStar {
    /// The EWMA (NaN until the first update: no virtual losses before it).
    value: f64,
    weight: f64,
    share: f64,
    window: f64,
    next_rank: f64,
    counts: Vec<u32>,
    least_popular: Vec<bool>,
}

impl MinZStar {
    /// Ranks the `share` least requested contents (at least one) every `window` time units;
    /// each update moves the average by `weight` of the difference.
    pub fn new(n: usize, share: f64, window: f64, weight: f64) -> MinZStar {
        MinZStar {
            value: f64::NAN,
            weight,
            share,
            window,
            next_rank: window,
            counts: vec![0; n],
            least_popular: vec![false; n],
        }
    }

    pub fn value(&self) -> f64 {
        self.value
    }

    /// A request for `c` at `t`; at the end of a window, re-ranks.
    pub fn on_request(&mut self, c: u32, t: f64) {
        if t >= self.next_rank {
            self.rank();
            while self.next_rank <= t {
                self.next_rank += self.window;
            }
        }
        self.counts[c as usize] += 1;
    }

    fn rank(&mut self) {
        let n = self.counts.len();
        let keep = ((n as f64 * self.share).round() as usize).clamp(1, n);
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&c| (self.counts[c], c));
        self.least_popular.iter_mut().for_each(|l| *l = false);
        for &c in &order[..keep] {
            self.least_popular[c] = true;
        }
        self.counts.iter_mut().for_each(|c| *c = 0);
    }

    /// A service of `c` ended, leaving `in_service` requests for c being served, with
    /// `replicas` replicas and θ_eff now `theta`.
    pub fn on_service_end(&mut self, c: u32, replicas: u32, in_service: u32, theta: f64) {
        if !self.least_popular[c as usize] {
            return;
        }
        let star = z_star(replicas, in_service as f64, theta);
        if !star.is_finite() {
            return;
        }
        self.value = if self.value.is_nan() {
            star
        } else {
            self.value + self.weight * (star - self.value)
        };
    }
}
