//! Location-dependent pricing and price-aware request mapping (papers/000). The algorithms,
//! Section 5's model and its simulation are sans-IO, in the core crate (re-exported here so
//! `crate::pricing::…` names them); this module adds what writes: `reproduce` writes the
//! tables and `plot` draws the figures.

pub use cdnlab_core::pricing::*;

pub mod plot;
pub mod reproduce;

#[cfg(test)]
mod tests;
