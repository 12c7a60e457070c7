//! What a peer plays in a slot (Lemma 3's process): nothing with probability π_0 (it is idle,
//! offline), chunk j with probability π_j, independently of the slots before. The simulation
//! and the real peers draw from the same law.

use super::error::P2pError;
use rand::Rng;
use rand_distr::weighted::WeightedAliasIndex;
use rand_distr::Distribution;

#[derive(Debug, Clone)]
pub struct Plays {
    alias: WeightedAliasIndex<f64>,
}

impl Plays {
    /// From π_0 and π_1..π_J (they need not sum to 1: the law is normalised).
    pub fn new(idle: f64, playing: &[f64]) -> Result<Plays, P2pError> {
        let mut weights = Vec::with_capacity(playing.len() + 1);
        weights.push(idle);
        weights.extend_from_slice(playing);
        let alias = WeightedAliasIndex::new(weights)
            .map_err(|e| P2pError::invalid("popularity", e.to_string()))?;
        Ok(Plays { alias })
    }

    /// None: idle this slot; Some(j): plays chunk j (0-based).
    pub fn draw(&self, rng: &mut impl Rng) -> Option<u32> {
        match self.alias.sample(rng) {
            0 => None,
            drawn => Some((drawn - 1) as u32),
        }
    }
}
