//! Whole-file tests: every validation error with its exact position, and the addresses and
//! routes computed for small and large topologies.

mod conditions;
mod describe;
mod errors;
mod format;
mod routing;

use super::{parse, LoadOptions, Topology};

/// Parses `text` as `t.toml` without command-line options.
fn topology(text: &str) -> Topology {
    match parse(text, "t.toml", &LoadOptions::default()) {
        Ok(topology) => topology,
        Err(error) => panic!("unexpected errors:\n{error}"),
    }
}

/// The errors for `text`, one per line, as the CLI would print them.
fn errors(text: &str) -> String {
    errors_with(text, &LoadOptions::default())
}

fn errors_with(text: &str, opts: &LoadOptions) -> String {
    match parse(text, "t.toml", opts) {
        Ok(_) => panic!("no error for:\n{text}"),
        Err(error) => error.to_string(),
    }
}
