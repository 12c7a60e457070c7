//! The role runtime every scenario family stands on: what a role binary in `bins/` needs
//! besides its own logic.
//!
//! - `main`: one entry point (`ROLE --config FILE [--out DIR]`, `--help`, `--version`), the
//!   tokio runtime, the node's environment, logs and the shutdown signal.
//! - `env`: the `CDNLAB_*` variables `cdnlab up` (or a container's entrypoint) sets, read in
//!   one place.
//! - `config`: reading the node's TOML config table, errors naming the file, line and key.
//! - `http`: serving HTTP (hyper, HTTP/1.1 and h2c), response bodies, HTTP semantics.
//! - `control`: the node's control-plane identity, connecting to a peer, the default port.
//! - `fetch`: taking a body of a known size from a peer, and no more.
//! - `peers`: kept control-plane connections to peers, and calls to many at once.
//! - `links`: facts about this node's links (their rates), in a lab or a container.
//! - `rows`: a CSV a client appends to as it goes (`segments.csv`, `deadlines.csv`).
//! - `summary`: what a client writes when it ends (`summary.json`).
//! - `tokens`: tokens a role hands out and later checks it gave (sessions, tickets).
//! - `logs`: `tracing` to the node's log.
//!
//! A family (`cdn_roles`, `fog_roles`, `icn_roles`, `farm_roles`, `p2p_roles`, the clients) uses this runtime and the
//! sans-IO algorithms; no family imports another.

pub mod config;
pub mod control;
pub mod env;
pub mod fetch;
pub mod http;
pub mod links;
pub mod peers;
pub use netem::logs;
mod main;
pub mod rows;
pub mod summary;
pub mod tokens;

pub use main::{main, Kind, Role, Shutdown, Start};

/// Every role a topology may name.
pub const ROLES: &[&str] = &[
    "probe",
    "has-client",
    "ucs",
    "dcs",
    "urr",
    "drr",
    "cloud",
    "fdn",
    "fog-viewers",
    "icn-router",
    "icn-border",
    "cdn-site",
    "controller",
    "icn-load",
    "farm-server",
    "farm-dispatcher",
    "farm-datacenter",
    "farm-load",
    "p2p-tracker",
    "p2p-peer",
    "p2p-cloud",
];

/// The roles that read SIGUSR1 (a timeline `signal` event) as the cue for their next phase
/// (`farm-load` changes its popularity, `p2p-peer` leaves).
pub const SIGNALLED_ROLES: &[&str] = &["farm-load", "p2p-peer"];

#[cfg(test)]
mod tests {
    /// The container image carries every role (scripts/build-image.sh lists them by hand).
    #[test]
    fn the_image_carries_every_role() {
        let script = include_str!("../../scripts/build-image.sh");
        let line = script
            .lines()
            .find(|l| l.starts_with("binaries=("))
            .expect("build-image.sh lists its binaries");
        let listed: Vec<&str> = line
            .trim_start_matches("binaries=(")
            .trim_end_matches(')')
            .split_whitespace()
            .collect();
        for role in super::ROLES {
            assert!(listed.contains(role), "build-image.sh misses role {role}");
        }
    }
}
