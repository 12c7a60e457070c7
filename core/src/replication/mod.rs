//! Adaptive replication in a server farm ("Adaptive Replication in Distributed Content
//! Delivery Networks"): m servers of d slots each serve one request at a time (service times
//! i.i.d., mean 1); a request for content c that finds no idle server storing c is lost.
//!
//! - `system`: the checked parameters (n, m, d, λ_c); `error` names a bad one.
//! - `model`: Equation (1) (Z_c's distribution), Equation (2) and the exact product form of
//!   γ_c, and the fixed point in γ̄ (`gamma` holds ln Γ for Equation 2).
//! - `allocation`: proportional replication (capped at 95% of the servers) and Equation (5)'s
//!   optimized replication; `placement` lays replicas on servers.
//! - `scheme`, `eviction`, `virtual_loss`: Section V's adaptive schemes — RANDOM, LRL and LFL
//!   eviction on real and virtual losses, p_c(Z_c) estimated on the fly.
//! - `coordinator`: the coordinating entity that dispatches requests and adapts; the simulator
//!   and the real farm's dispatcher both decide through it.
//! - `farm`, `sim`: the seeded discrete-event simulator; `popularity`: Section IV-C's farms.

pub mod allocation;
pub mod coordinator;
pub mod error;
pub mod eviction;
pub mod farm;
mod gamma;
pub mod model;
pub mod placement;
pub mod popularity;
pub mod scheme;
pub mod sim;
pub mod system;
pub mod virtual_loss;

#[cfg(test)]
mod tests;

pub use error::ParamError;
pub use model::{fixed_point, FixedPoint, LossForm};
pub use scheme::{Replication, Rule, Scheme};
pub use sim::{simulate, PopularityChange, SimConfig, SimResult};
pub use system::System;

/// D_c at the start of a run: the static replication named, or proportional replication for
/// an adaptive scheme (Section V-C starts them there).
pub fn initial(system: &System, replication: Replication) -> Result<Vec<u32>, ParamError> {
    match replication {
        Replication::Optimized => allocation::optimized(system),
        Replication::Proportional | Replication::Adaptive(_) => {
            Ok(allocation::proportional(system))
        }
    }
}

/// The adaptive scheme of a replication, if any.
pub fn scheme_of(replication: Replication) -> Option<Scheme> {
    match replication {
        Replication::Adaptive(scheme) => Some(scheme),
        _ => None,
    }
}
