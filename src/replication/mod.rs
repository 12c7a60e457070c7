//! Adaptive replication in a server farm ("Adaptive Replication in Distributed Content
//! Delivery Networks"). The model, the replications, the schemes and the simulator are sans-IO,
//! in the core crate (re-exported here); this module runs the paper's experiments across the
//! cores (`experiment`), writes their tables and figures (`reproduce`) and times the
//! simulator (`bench`).

pub use cdnlab_core::replication::*;

pub mod bench;
pub mod experiment;
pub mod reproduce;

#[cfg(test)]
mod tests;
