//! Locality-aware streaming in a hybrid P2P-cloud CDN ("Locality-aware streaming in hybrid
//! P2P-cloud CDN systems"). The model (Theorem 1's max flow, Lemmas 1–3, Theorem 2, the
//! trade-off LP) and the peer-level simulation are sans-IO, in the core crate (re-exported
//! here); this module holds the offline reproduction's scenarios and parameters (`params`)
//! and runs it, writing its tables and figures (`reproduce`); `report` sets runs of the
//! family on real processes side by side.

pub use cdnlab_core::p2p::*;

pub mod params;
pub mod report;
pub mod reproduce;

#[cfg(test)]
mod tests;
