//! Topology files: parsing, validation, addressing and routing.
//!
//! `load`/`parse` turn a file (see `topologies/README.md`) into a `model::Topology`, or into a
//! `TopologyError` listing every problem with its `FILE:LINE:COL`. `ChangeFlags` (and
//! `change_from_flags` beneath it) is the same impairment conversion for the command line.

mod addressing;
mod aggregate;
mod conditions;
mod describe;
mod error;
mod flags;
mod graph;
mod impairments;
pub mod model;
mod names;
mod nodes;
mod parse;
mod reader;
mod routes;
pub(crate) use routes::compute_routes;
mod segments;
mod timeline;
mod vars;

#[cfg(test)]
mod tests;

pub use describe::{describe, describe_action};
pub use error::{Problem, Span, TopologyError};
pub use flags::ChangeFlags;
pub use impairments::{
    change_entries, change_from_flags, parse_change, ImpairmentFields, IMPAIRMENT_KEYS,
};
pub use model::*;
pub use names::check_lab_name;
pub(crate) use names::check_node_name;
pub use parse::{load, parse, parse_deferring_program_vars, LoadOptions};
pub use vars::{is_var_name, parse_set};
pub use vars::{DEFERRED_CLOSE, DEFERRED_OPEN};
