//! Topology files: parsing, validation, addressing and routing.

pub mod model;

pub use model::*;
