//! cdnlab: an emulation testbed for content delivery research.
//!
//! - The algorithms (`cdn`, `has`, `icn`, `fog`, `lru`, `stats`, `pricing`, `replication`,
//!   `p2p`) are the sans-IO core crate's, `cdnlab_core`, re-exported here; `pricing`,
//!   `replication` and `p2p` add the files and figures of their reproductions.
//! - The role runtime, `roles` (one `main`, environment, config, HTTP, control-plane identity,
//!   links, client summaries, logs), the `control` plane it uses, and `role_configs`, every
//!   role's config reader by name, so a lab checks its nodes' configs before it starts.
//! - The scenario families, side by side on the runtime, none importing another: `cdn_roles`
//!   and `has_client` (interconnected CDNs), `icn_roles` (ICN telco CDN), `fog_roles` (F-FDN),
//!   `farm_roles` (the adaptive-replication farm), `p2p_roles` (the hybrid P2P-cloud CDN).
//! - The lab: `topology` reads scenario files; `lab` builds them out of network namespaces, veth
//!   links and processes (`container`: the same as docker containers); `probe` measures links.
//! - The tools: `cli` is the `cdnlab` command; `run` plays a scenario's timeline, `sweep` runs
//!   parameter grids, `bench` measures the emulation; `plot` and `table` draw the figures and
//!   tables they report; `parallel` runs offline experiments on every core; `stdout` prints
//!   for people and keeps quiet when the reader has gone.

// The algorithms live in the core crate so the compiler keeps I/O out of them; re-exported so
// `crate::cdn::…` and the like name them as before.
pub use cdnlab_core::{cdn, fog, has, icn, lru, stats};

mod atomic_write;
pub mod bench;
pub mod capture;
pub mod cdn_roles;
pub mod cli;
pub mod compose;
pub mod container;
pub mod control;
pub mod farm_roles;
pub mod fog_roles;
pub mod has_client;
pub mod icn_roles;
pub mod lab;
mod line_tail;
mod newest;
pub mod p2p;
pub mod p2p_roles;
pub mod parallel;
pub mod picture;
pub mod plot;
pub mod pricing;
pub mod probe;
#[cfg(test)]
mod props;
mod regular_file;
pub mod replication;
pub mod role_configs;
pub mod roles;
pub mod run;
pub mod stdout;
pub mod sweep;
pub mod table;
#[cfg(test)]
mod testing;
pub mod topology;
pub mod wall_clock;
pub mod web;
