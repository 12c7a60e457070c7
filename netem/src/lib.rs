//! Link emulation with tc-netem's meaning.
//!
//! `params` and `units` are the shared vocabulary; `kernel` writes tc-netem commands for kernels
//! that have `sch_netem`; `shaper` is the sans-IO model of one netem queue that the userspace
//! backend (`nfqueue` + `daemon`, the `cdnlab-shaper` binary) drives on kernels that lack it.

pub mod daemon;
mod daemon_config;
mod daemon_control;
mod daemon_deferral;
mod daemon_keeper;
mod daemon_schedule;
mod daemon_sys;
pub mod distribution;
pub mod kernel;
mod kernel_probe;
pub mod logs;
pub mod nfqueue;
pub mod params;
pub mod shaper;
mod shaper_random;
pub mod units;

#[cfg(test)]
mod props;

pub use params::{Distribution, Impairments, ImpairmentsChange, DEFAULT_LIMIT, MAX_LIMIT};
