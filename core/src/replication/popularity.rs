//! Section IV-C's popularity models and farms.

use super::error::ParamError;
use super::system::System;

/// Zipf popularity: λ_i = i^(−α) / Σ_{j≤n} j^(−α) · n·λ̄, rank 1 first.
pub fn zipf(n: usize, alpha: f64, lambda_bar: f64) -> Vec<f64> {
    let total = n as f64 * lambda_bar;
    crate::zipf::weights(n, alpha)
        .iter()
        .map(|w| w * total)
        .collect()
}

/// One class of the class model: how many contents, each with rate `lambda`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Class {
    pub contents: usize,
    pub lambda: f64,
}

/// Our class model. The paper's Table I (its class popularities) is not in our copy; these
/// three classes follow what the text says of it: n = 1000, ρ = 0.9 with m = 3800 (so
/// Σλ_c = 3420, λ̄ = 3.42), class 3 the least popular at about one request per unit time
/// ("close to 10⁴ requests each" in 10⁴ time units) with 22–23 replicas under proportional
/// replication (D̄ = 76), and responsible for the bulk of the losses.
pub const CLASSES: [Class; 3] = [
    Class {
        contents: 100,
        lambda: 16.2,
    },
    Class {
        contents: 300,
        lambda: 4.0,
    },
    Class {
        contents: 600,
        lambda: 1.0,
    },
];

/// The class model's rates, class 1 first.
pub fn classes(classes: &[Class]) -> Vec<f64> {
    classes
        .iter()
        .flat_map(|k| std::iter::repeat_n(k.lambda, k.contents))
        .collect()
}

/// The class model's farm: m = 3800 servers of d = 20 slots.
pub fn class_farm() -> Result<System, ParamError> {
    System::new(classes(&CLASSES), 3800, 20)
}

/// The Zipf farms: n = 200, m = 2000, d = 10, ρ = 0.9 (λ̄ = ρ m / n = 9).
pub fn zipf_farm(alpha: f64) -> Result<System, ParamError> {
    let (n, m) = (200, 2000);
    System::new(zipf(n, alpha, 0.9 * m as f64 / n as f64), m, 10)
}
