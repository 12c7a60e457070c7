//! `[nodes.NAME]` tables: what runs in each node and how `up` knows it is ready.

use super::error::Diags;
use super::model::{Node, Program, Ready};
use super::names::check_node_name;
use super::reader::{self, check_keys, Value};
use crate::roles::ROLES;
use netem::units::parse_duration_ns;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::de::DeTable;
use toml::Spanned;

const NODE_KEYS: [&str; 9] = [
    "role",
    "config",
    "command",
    "ready",
    "ready_timeout",
    "env",
    "client",
    "transit",
    "host",
];

/// How long `up` waits for a node's `ready` check unless the node says otherwise.
const DEFAULT_READY_TIMEOUT_NS: u64 = 10_000_000_000;

/// Every node, in the order the file declares them, with its name's position; `None` for a
/// node with errors (reported), whose name still resolves so that links to it raise nothing
/// more. Nodes have no interfaces and routes yet: those come from the segments.
pub(crate) fn read_nodes(
    root: &DeTable,
    diags: &mut Diags,
) -> Vec<(Spanned<String>, Option<Node>)> {
    let Some(value) = root.get("nodes") else {
        diags.file("no nodes: declare at least one, e.g. [nodes.client]");
        return Vec::new();
    };
    let Some(table) = reader::table(value, "nodes", diags) else {
        return Vec::new();
    };
    // The tree sorts keys by name; their spans give the declaration order.
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    let mut nodes = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let name = Spanned::new(key.span(), key.get_ref().to_string());
        if let Err(message) = check_node_name(name.get_ref(), "node") {
            diags.at(&name.span(), message);
        }
        let node = read_node(name.get_ref(), value, diags);
        nodes.push((name, node));
    }
    if nodes.is_empty() {
        diags.file("no nodes: declare at least one, e.g. [nodes.client]");
    }
    nodes
}

/// A node's settings; `None` if any is in error (each reported, independently of the others).
fn read_node(name: &str, value: &Value, diags: &mut Diags) -> Option<Node> {
    let table = reader::table(value, name, diags)?;
    check_keys(table, &NODE_KEYS, &format!("node `{name}`"), diags);
    let program = read_program(table, diags);
    let plain = program == Some(Program::None);
    // Settings that only mean something when a process runs in the node.
    let nothing_runs = |key: &str, what: &str, diags: &mut Diags| {
        if let (true, Some(value)) = (plain, table.get(key)) {
            diags.at(
                &value.span(),
                format!("`{key}` on a plain host: nothing runs in it {what}; give the node a `role` or a `command`"),
            );
        }
    };
    nothing_runs("ready", "to wait for", diags);
    nothing_runs("env", "to read it", diags);
    let ready = table.get("ready").and_then(|v| read_ready(v, diags));
    let ready_timeout_ns = match table.get("ready_timeout") {
        None => Some(DEFAULT_READY_TIMEOUT_NS),
        Some(value) => {
            if table.get("ready").is_none() {
                diags.at(
                    &value.span(),
                    "`ready_timeout` without `ready`: nothing to wait for",
                );
            }
            read_timeout(value, diags)
        }
    };
    let env = match table.get("env") {
        Some(value) => read_env(value, diags),
        None => Some(BTreeMap::new()),
    };
    let client = match table.get("client") {
        Some(value) => {
            let client = reader::boolean(value, "client", diags);
            if client == Some(true) && plain {
                diags.at(
                    &value.span(),
                    "a client must run something: give the node a `role` or a `command`",
                );
            }
            client
        }
        None => Some(false),
    };
    let transit = match table.get("transit") {
        Some(value) => reader::boolean(value, "transit", diags),
        None => Some(true),
    };
    let host = match table.get("host") {
        Some(value) => Some(read_host(value, diags)?),
        None => None,
    };
    Some(Node {
        name: name.to_string(),
        host,
        program: program?,
        env: env?,
        ready,
        ready_timeout_ns: ready_timeout_ns?,
        client: client?,
        transit: transit?,
        interfaces: Vec::new(),
        routes: Vec::new(),
        hosts: Vec::new(),
    })
}

/// `host = "h1"`: the class of Swarm hosts the node runs on (a node label's value: letters,
/// digits, `-`, `_`, `.`, at most 63, starting with a letter or digit).
fn read_host(value: &Value, diags: &mut Diags) -> Option<String> {
    let host = reader::string(value, "host", diags)?;
    let text = host.get_ref();
    let well_formed = text.len() <= 63
        && text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !well_formed {
        diags.at(
            &host.span(),
            format!(
                "bad host `{text}`: a Swarm node label's value (letters, digits, `-`, `_`, `.`, \
                 at most 63, starting with a letter or digit)"
            ),
        );
        return None;
    }
    Some(text.clone())
}

fn read_program(table: &DeTable, diags: &mut Diags) -> Option<Program> {
    let role = match table.get("role") {
        Some(value) => Some(reader::string(value, "role", diags)?),
        None => None,
    };
    let command = match table.get("command") {
        Some(value) => Some(argv(value, diags)?),
        None => None,
    };
    if let Some(config) = table.get("config") {
        if role.is_none() {
            diags.at(
                &config.span(),
                "`config` holds a role's settings, and this node has no `role`",
            );
        }
    }
    match (role, command) {
        (Some(_), Some(_)) => {
            if let Some(command) = table.get("command") {
                diags.at(
                    &command.span(),
                    "a node runs a `role` or a `command`, not both",
                );
            }
            None
        }
        (Some(role), None) => {
            if !ROLES.contains(&role.get_ref().as_str()) {
                diags.at(
                    &role.span(),
                    format!(
                        "unknown role `{}`; the roles are: {}",
                        role.get_ref(),
                        ROLES.join(", ")
                    ),
                );
                return None;
            }
            let config = match table.get("config") {
                Some(value) => read_config(value, diags)?,
                None => toml::Table::new(),
            };
            Some(Program::Role {
                role: role.into_inner(),
                config,
            })
        }
        (None, Some(argv)) => Some(Program::Command { argv }),
        (None, None) => Some(Program::None),
    }
}

/// A role's config: any TOML table, passed through as written (after `${var}` substitution).
fn read_config(value: &Value, diags: &mut Diags) -> Option<toml::Table> {
    let table = reader::table(value, "config", diags)?;
    let document = toml::de::Deserializer::from(Spanned::new(value.span(), table.clone()));
    match toml::Table::deserialize(document) {
        Ok(config) => Some(config),
        Err(error) => {
            diags.at(&value.span(), format!("`config`: {}", error.message()));
            None
        }
    }
}

fn read_ready(value: &Value, diags: &mut Diags) -> Option<Ready> {
    let table = reader::table(value, "ready", diags)?;
    check_keys(table, &["tcp", "command"], "`ready`", diags);
    match (table.get("tcp"), table.get("command")) {
        (Some(port), None) => {
            let number = reader::integer(port, "tcp", diags)?;
            match u16::try_from(number) {
                Ok(port) if port > 0 => Some(Ready::Tcp(port)),
                _ => {
                    diags.at(
                        &port.span(),
                        format!("`tcp` must be a port from 1 to 65535, not {number}"),
                    );
                    None
                }
            }
        }
        (None, Some(command)) => Some(Ready::Command(argv(command, diags)?)),
        (Some(_), Some(command)) => {
            diags.at(
                &command.span(),
                "`ready` takes `tcp` or `command`, not both",
            );
            None
        }
        (None, None) => {
            diags.at(
                &value.span(),
                "`ready` needs `tcp = PORT` or `command = [\"PROGRAM\", ...]`",
            );
            None
        }
    }
}

/// A `command`: a program that is not empty, and no NUL byte anywhere (no argument can hold
/// one, so it would only fail once the lab is built).
fn argv(value: &Value, diags: &mut Diags) -> Option<Vec<String>> {
    let argv = reader::strings(value, "command", diags)?;
    if argv[0].get_ref().trim().is_empty() {
        diags.at(&argv[0].span(), "the program to run is empty");
        return None;
    }
    if let Some(nul) = argv.iter().find(|a| a.get_ref().contains('\0')) {
        diags.at(&nul.span(), "a command's argument cannot hold a NUL byte");
        return None;
    }
    Some(argv.into_iter().map(Spanned::into_inner).collect())
}

fn read_timeout(value: &Value, diags: &mut Diags) -> Option<u64> {
    let text = reader::string(value, "ready_timeout", diags)?;
    match parse_duration_ns(text.get_ref()) {
        Ok(0) => {
            diags.at(&text.span(), "ready_timeout: must be above 0");
            None
        }
        Ok(ns) => Some(ns),
        Err(error) => {
            diags.at(&text.span(), format!("ready_timeout: {error}"));
            None
        }
    }
}

fn read_env(value: &Value, diags: &mut Diags) -> Option<BTreeMap<String, String>> {
    let table = reader::table(value, "env", diags)?;
    let mut env = BTreeMap::new();
    let mut complete = true;
    for (key, value) in table.iter() {
        let name = key.get_ref();
        if name.is_empty() || name.contains(['=', '\0']) {
            diags.at(
                &key.span(),
                format!("`{name}` cannot be an environment variable's name"),
            );
            complete = false;
        }
        match reader::string(value, name, diags) {
            Some(text) if text.get_ref().contains('\0') => {
                diags.at(&text.span(), "an environment value cannot hold a NUL byte");
                complete = false;
            }
            Some(text) => {
                env.insert(name.to_string(), text.into_inner());
            }
            None => complete = false,
        }
    }
    complete.then_some(env)
}
