//! Locality-aware streaming in a hybrid P2P-cloud CDN ("Locality-aware streaming in hybrid
//! P2P-cloud CDN systems"): peers in M ISPs stream video-on-demand chunks to each other from
//! LRU caches, a tracker dispatches each chunk request to the peers of some ISP, and a cloud
//! CDN serves what peers cannot. The cloud's bandwidth is what peers miss; inter-ISP traffic is
//! what peers serve across ISPs.
//!
//! - `system`: the checked parameters (N_m, U_m, B, π_0, π_j); `error` names a bad one.
//! - `flow`: Theorem 1, concurrently served requests as a max flow from chunks to cache states.
//! - `cache`: Lemma 2's optimal cache distribution ρ_j = B·π_j and Lemma 3's LRU peer cache.
//! - `dispatch`: the policies (local, proportional, Theorem 2's optimal), I_m, T*, and what a
//!   dispatch costs under Lemma 1's miss rate.
//! - `lp`: the cloud-bandwidth-against-inter-ISP-cap trade-off as an LP.
//! - `play`: what a peer plays each slot (Lemma 3's process).
//! - `sim`: the seeded peer-level simulation of all of it.
//! - `tracker`: the real tracker's decisions (dispatch, upload tokens, measured r_l and C_m).

pub mod cache;
pub mod dispatch;
pub mod error;
pub mod flow;
pub mod lp;
pub mod play;
pub mod sim;
pub mod system;
pub mod tracker;

#[cfg(test)]
mod tests;

pub use dispatch::{evaluate, imbalance, minimum_inter_isp, Outcome, Policy};
pub use error::P2pError;
pub use system::{Isp, System};
