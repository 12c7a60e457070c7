//! Where the replicas go: a graph G of m servers × d slots for a replication D_c.

use super::error::ParamError;
use super::system::System;
use rand::{Rng, RngExt};

/// A slot that holds nothing (when Σ D_c < m·d).
pub const EMPTY: u32 = u32::MAX;

/// The contents of every slot, server s's in `slots[s·d .. (s+1)·d]`: content c's D_c replicas
/// are laid out along the cyclic slot order (so they land on distinct servers), then 4·m·d
/// random swaps between slots of two servers, each kept only if neither server ends up with a
/// content twice, mix the layout so which contents share a server is close to random, as the
/// paper's model assumes.
pub fn place(
    system: &System,
    replication: &[u32],
    rng: &mut impl Rng,
) -> Result<Vec<u32>, ParamError> {
    system.check_replication(replication)?;
    let (m, d) = (system.m(), system.d());
    // Position p of the cyclic order is slot p / m of server p % m.
    let mut slots = vec![EMPTY; m * d];
    let mut p = 0;
    for (c, &count) in replication.iter().enumerate() {
        for _ in 0..count {
            slots[(p % m) * d + p / m] = c as u32;
            p += 1;
        }
    }
    if m < 2 {
        return Ok(slots);
    }
    for _ in 0..4 * m * d {
        let (a, b) = (rng.random_range(0..m * d), rng.random_range(0..m * d));
        let (sa, sb) = (a / d, b / d);
        if sa == sb || slots[a] == slots[b] {
            continue;
        }
        let holds = |s: usize, c: u32| c != EMPTY && slots[s * d..(s + 1) * d].contains(&c);
        if !holds(sb, slots[a]) && !holds(sa, slots[b]) {
            slots.swap(a, b);
        }
    }
    Ok(slots)
}
