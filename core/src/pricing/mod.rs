//! Location-dependent pricing and price-aware request mapping (papers/000: "Joint
//! Location-Dependent Pricing and Request Mapping in ICN-Based Telco CDNs For 5G").
//!
//! `cabp` (Algorithm 1), `ldp` (Algorithm 2), `parm` (problem (4a)–(4f), an LP) and `cost`
//! (Eq. 7), with `measure` for what a mapping does to the sites and `feasibility` for why a PARM
//! problem has no solution. `traffic` and `experiment` are Section 5's model and simulation; the
//! main crate's `pricing` writes its tables and draws its figures.

pub mod cabp;
pub mod cost;
pub mod experiment;
pub mod feasibility;
pub mod ldp;
pub mod measure;
pub mod parm;
pub mod traffic;

#[cfg(test)]
mod tests;

pub use cabp::{cabp, Band, PriceRange};
pub use cost::bandwidth_cost;
pub use ldp::{ldp, LdpParams, Prices};
pub use parm::{solve, Mapping, ParmError, ParmInput};
