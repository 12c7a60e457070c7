//! From a topology file's text to a `Topology`: syntax, variables, nodes, segments and
//! timeline (all their problems reported together), then connectivity and addresses, then
//! routes. Nothing is returned unless everything checks out.

use super::addressing::{assign_subnets, place_segments};
use super::conditions::prune;
use super::error::{Diags, Problem, TopologyError};
use super::graph::check_connected;
use super::model::{Node, Program, Topology};
use super::names::{check_lab_name, NodeNames};
use super::nodes::read_nodes;
use super::reader::{self, check_keys};
use super::routes::compute_routes;
use super::segments::{check_unique_names, read_lans, read_links};
use super::timeline::read_timeline;
use super::vars::{program_only_vars, read_vars, substitute};
use std::collections::BTreeSet;
use std::path::Path;
use toml::de::DeTable;

/// What the command line adds to a file.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions<'a> {
    /// `--name`: the lab name, instead of the file's `name`.
    pub name: Option<&'a str>,
    /// `--set NAME=VALUE` overrides of `[vars]`, in command-line order.
    pub set: &'a [(String, String)],
}

const TOP_KEYS: [&str; 6] = ["name", "vars", "nodes", "links", "lans", "timeline"];

/// Reads and parses a topology file; errors name the file as `path` is written.
pub fn load(path: &Path, opts: &LoadOptions) -> Result<Topology, TopologyError> {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|error| TopologyError::file(&source, format!("cannot read the file: {error}")))?;
    parse(&text, &source, opts)
}

/// Parses a topology; `source` is the file name errors show.
pub fn parse(text: &str, source: &str, opts: &LoadOptions) -> Result<Topology, TopologyError> {
    parse_with(text, source, opts, false).map(|(topology, _)| topology)
}

/// Parses a topology leaving the variables that only nodes' `config` and `command` use as
/// marked references in them (`vars::DEFERRED_OPEN name DEFERRED_CLOSE`), and returns those
/// variables' names: a compose file hands them to the environment, with the file's values as
/// defaults. Everything else is substituted as `parse` does.
pub fn parse_deferring_program_vars(
    text: &str,
    source: &str,
    opts: &LoadOptions,
) -> Result<(Topology, BTreeSet<String>), TopologyError> {
    parse_with(text, source, opts, true)
}

fn parse_with(
    text: &str,
    source: &str,
    opts: &LoadOptions,
    defer_program_vars: bool,
) -> Result<(Topology, BTreeSet<String>), TopologyError> {
    let mut root = DeTable::parse(text)
        .map_err(|error| syntax_error(text, source, &error))?
        .into_inner();
    let mut diags = Diags::new(text);
    check_keys(&root, &TOP_KEYS, "the file", &mut diags);
    let vars = read_vars(&root, opts.set, &mut diags);
    let deferred = if defer_program_vars {
        program_only_vars(&root)
            .into_iter()
            .filter(|name| vars.contains_key(name))
            .collect()
    } else {
        BTreeSet::new()
    };
    substitute(&mut root, &vars, &deferred, &mut diags);
    prune(&mut root, &mut diags);
    let name = read_lab_name(&root, opts.name, &mut diags);
    let nodes = read_nodes(&root, &mut diags);
    let names = NodeNames::new(nodes.iter().map(|(name, _)| name.clone()).collect());
    let programs: Vec<Option<&Program>> = nodes
        .iter()
        .map(|(_, node)| node.as_ref().map(|n| &n.program))
        .collect();
    let mut raw_segments = read_links(&root, &names, &mut diags);
    raw_segments.extend(read_lans(&root, &names, &mut diags));
    check_unique_names(&raw_segments, &mut diags);
    let timeline = read_timeline(&root, &names, &programs, &raw_segments, &mut diags);
    if !diags.is_empty() {
        return Err(diags.into_error(source));
    }
    // With no problems reported, every node was read and a lab name found.
    let mut nodes: Vec<Node> = nodes.into_iter().filter_map(|(_, node)| node).collect();
    check_connected(&names, &raw_segments, &mut diags);
    let subnets = assign_subnets(&raw_segments, &mut diags);
    let Some(name) = name.filter(|_| diags.is_empty()) else {
        return Err(diags.into_error(source));
    };
    let segments = place_segments(raw_segments, &subnets, &mut nodes);
    compute_routes(&mut nodes, &segments);
    let topology = Topology {
        name,
        vars,
        nodes,
        segments,
        timeline,
    };
    Ok((topology, deferred))
}

fn syntax_error(text: &str, source: &str, error: &toml::de::Error) -> TopologyError {
    TopologyError {
        problems: vec![Problem {
            source: source.to_string(),
            line_col: error
                .span()
                .map(|span| super::error::line_col(text, span.start)),
            message: format!("invalid TOML: {}", error.message()),
        }],
    }
}

/// `--name`, else the file's `name`.
fn read_lab_name(root: &DeTable, flag: Option<&str>, diags: &mut Diags) -> Option<String> {
    if let Some(name) = flag {
        return match check_lab_name(name) {
            Ok(()) => Some(name.to_string()),
            Err(message) => {
                diags.option("--name", message);
                None
            }
        };
    }
    let Some(value) = root.get("name") else {
        diags.file("no lab name: add `name = \"...\"` at the top, or pass --name");
        return None;
    };
    let name = reader::string(value, "name", diags)?;
    match check_lab_name(name.get_ref()) {
        Ok(()) => Some(name.into_inner()),
        Err(message) => {
            diags.at(&name.span(), message);
            None
        }
    }
}
