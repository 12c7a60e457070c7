//! A running lab: network namespaces joined by emulated links, with processes in them.

pub mod build;
pub mod control;
pub mod counters;
pub mod directions;
pub mod events;
pub mod file_lock;
pub mod interrupt;
pub mod links;
pub mod process;
pub mod qdisc_stats;
pub mod rtnetlink;
pub mod shaper;
pub mod state;
pub mod sys;
pub mod teardown;

pub use build::{up, UpOptions};
pub use state::{Backend, BackendChoice, LabState};
pub use sys::{Error, Result};
pub use teardown::{clean, down};
