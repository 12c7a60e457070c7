//! cdnlab: an emulation testbed for content delivery research.
//!
//! `topology` reads scenario files; `lab` builds them out of network namespaces, veth links and
//! processes; `cli` is the `cdnlab` command.

pub mod roles;
pub mod topology;
