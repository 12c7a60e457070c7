//! `probe`: cdnlab's own link-measurement tool, so nobody installs ping or iperf in a lab.
//!
//! A `probe serve` answers UDP echoes and TCP goodput flows on one port; the client side
//! measures round-trip time (`measure_rtt`), goodput (`measure_goodput`) and loss and delay
//! variation under a paced stream (`measure_stream`). The orchestrator runs the `probe` binary
//! in namespaces and parses the JSON reports it prints, or calls these functions directly.
//!
//! Sans-IO parts (`crate::stats`, `packet`, `echo_log`, `meter`, `protocol`, `config`) hold every
//! decision; `echo`, `tcp`, `sockopt`, `server` and the `measure_*` functions only move bytes
//! and read the clock.

pub mod client;
pub mod config;
pub mod echo;
pub mod echo_log;
pub mod goodput;
pub mod meter;
pub mod packet;
pub mod protocol;
pub mod rtt;
pub mod server;
pub mod sockopt;
pub mod stamped;
pub mod stream;
pub mod target;
pub mod tcp;

#[cfg(test)]
mod tests;

pub use crate::stats::{mean, percentile, stdev, Summary};
pub use client::{run_client, ProbeSummary};
pub use config::{parse_role_config, ClientRole, RoleConfig, ServerRole};
pub use echo::wait_for_echo;
pub use goodput::{measure_goodput, Direction, GoodputOptions, GoodputReport};
pub use rtt::{measure_rtt, RttOptions, RttReport};
pub use server::{serve, RunningServer, ServeOptions, ServeStats, Server};
pub use stream::{measure_stream, DelayVariation, StreamOptions, StreamReport};
pub use target::{resolve_target, split_target, DEFAULT_PORT};
