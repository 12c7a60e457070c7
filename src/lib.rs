//! cdnlab: an emulation testbed for content delivery research.
//!
//! `topology` reads scenario files; `lab` builds them out of network namespaces, veth links and
//! processes; `cli` is the `cdnlab` command.

pub mod bench;
pub mod cdn;
pub mod cdn_roles;
pub mod cli;
pub mod container;
pub mod control;
pub mod fog;
pub mod fog_roles;
pub mod has;
pub mod has_client;
pub mod icn;
pub mod icn_roles;
pub mod lab;
pub mod lru;
pub mod plot;
pub mod pricing;
pub mod probe;
#[cfg(test)]
mod props;
pub mod roles;
pub mod run;
pub mod sweep;
#[cfg(test)]
mod testing;
pub mod topology;
