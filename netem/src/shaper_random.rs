//! netem's random numbers: tc's fixed-point probabilities and the kernel's correlated generator.

/// A probability in [0, 1] as the u32 the kernel holds, as tc's `set_percent()` in
/// `tc/q_netem.c` computes it: `rint(p * 0xffffffff)`. netem compares it with a uniform u32
/// (`loss >= rnd`), so the effective probability is `(value + 1) / 2^32` when `value > 0`.
pub fn probability_to_u32(probability: f64) -> u32 {
    (probability.clamp(0.0, 1.0) * f64::from(u32::MAX)).round_ties_even() as u32
}

/// The state of one of netem's correlated random sources (`struct crndstate`): each number is
/// a weighted average of a fresh uniform number and the previous result, with weight `rho`
/// (a [`probability_to_u32`] correlation) on the previous one.
#[derive(Debug, Clone)]
pub struct Crandom {
    last: u32,
    rho: u32,
}

impl Crandom {
    /// `init_crandom()`: the correlation and a random starting point.
    pub fn new(rho: u32, first: u32) -> Self {
        Crandom { last: first, rho }
    }

    pub fn rho(&self) -> u32 {
        self.rho
    }

    /// `get_crandom()` given the next uniform number `value` (the kernel's
    /// `prandom_u32_state()`): `value` itself without correlation, else
    /// `(value * (2^32 - (rho + 1)) + last * (rho + 1)) >> 32`, which becomes `last`.
    pub fn next(&mut self, value: u32) -> u32 {
        if self.rho == 0 {
            return value;
        }
        let rho = u64::from(self.rho) + 1;
        // Both weights sum to 2^32 and both numbers are below 2^32, so the sum fits in u64.
        let answer = (u64::from(value) * ((1u64 << 32) - rho) + u64::from(self.last) * rho) >> 32;
        self.last = answer as u32;
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probabilities_scale_like_tc() {
        // The values tc 6.1 put on the wire (seen with strace): 0.05% and 25% and 100%.
        assert_eq!(probability_to_u32(0.0005), 0x0020_c49c);
        assert_eq!(probability_to_u32(0.25), 0x4000_0000);
        assert_eq!(probability_to_u32(1.0), u32::MAX);
        assert_eq!(probability_to_u32(0.0), 0);
    }

    #[test]
    fn correlation_averages_with_the_previous_value() {
        let mut independent = Crandom::new(0, 7);
        assert_eq!(independent.next(12345), 12345);
        assert_eq!(independent.next(u32::MAX), u32::MAX);

        // rho = 2^31 - 1, so the weights are exactly one half each.
        let mut half = Crandom::new(0x7fff_ffff, 1000);
        assert_eq!(half.next(3000), 2000);
        assert_eq!(half.next(0), 1000);

        // Full correlation repeats the starting point for ever.
        let mut full = Crandom::new(u32::MAX, 42);
        assert_eq!(full.next(u32::MAX), 42);
        assert_eq!(full.next(0), 42);
        assert_eq!(full.rho(), u32::MAX);
    }
}
