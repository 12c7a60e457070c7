//! Zipf popularity, shared by the families whose papers draw requests from it.

/// Zipf weights over ranks 1..=n: i^(−α) / Σ_{j≤n} j^(−α), rank 1 first; they sum to 1.
pub fn weights(n: usize, alpha: f64) -> Vec<f64> {
    let raw: Vec<f64> = (1..=n).map(|i| (i as f64).powf(-alpha)).collect();
    let total: f64 = raw.iter().sum();
    raw.iter().map(|w| w / total).collect()
}
