//! `only_if`: parts of a topology that exist only for some values of a variable, so that one
//! file can describe variants (`--set policy=all` runs one client per policy, `--set
//! policy=direct-rr` only one). Evaluated right after `${var}` substitution, before anything
//! else reads the file: a node whose condition fails is removed with the links and timeline
//! events that name it, and leaves the LANs it was a member of.

use super::error::Diags;
use super::reader::{strings, Value};
use toml::de::{DeArray, DeTable, DeValue};

const KEY: &str = "only_if";

/// Removes every node, link, LAN and timeline event whose `only_if` fails, and every `only_if`.
pub(crate) fn prune(root: &mut DeTable, diags: &mut Diags) {
    let mut removed: Vec<String> = Vec::new();
    if let Some(DeValue::Table(nodes)) = root.get_mut("nodes").map(|v| v.get_mut()) {
        for (name, node) in nodes.iter_mut() {
            if !take_condition(node, diags) {
                removed.push(name.get_ref().to_string());
            }
        }
        for name in &removed {
            nodes.remove(name.as_str());
        }
    }
    for key in ["links", "lans", "timeline"] {
        let Some(DeValue::Array(items)) = root.get_mut(key).map(|v| v.get_mut()) else {
            continue;
        };
        let old = std::mem::replace(items, DeArray::new());
        *items = old
            .into_iter()
            .filter_map(|mut item| {
                if !take_condition(&mut item, diags) {
                    return None;
                }
                if let DeValue::Table(table) = item.get_mut() {
                    leave_lans(table, &removed);
                    if names_any(table, &removed) {
                        return None;
                    }
                }
                Some(item)
            })
            .collect();
    }
}

/// Evaluates and removes the `only_if` of a table: true if the table stays.
fn take_condition(value: &mut Value, diags: &mut Diags) -> bool {
    let DeValue::Table(table) = value.get_mut() else {
        return true;
    };
    let Some(condition) = table.remove(KEY) else {
        return true;
    };
    match strings(&condition, KEY, diags) {
        Some(values) if values.len() >= 2 => values[1..]
            .iter()
            .any(|v| v.get_ref() == values[0].get_ref()),
        Some(_) => {
            diags.at(
                &condition.span(),
                "`only_if` takes a value and the values it may have: only_if = [\"${policy}\", \"all\", \"direct-rr\"]",
            );
            true
        }
        None => true,
    }
}

/// Drops removed nodes from a LAN's `members` and `from`.
fn leave_lans(table: &mut DeTable, removed: &[String]) {
    if !table.contains_key("members") {
        return;
    }
    if let Some(DeValue::Table(from)) = table.get_mut("from").map(|v| v.get_mut()) {
        for name in removed {
            from.remove(name.as_str());
        }
    }
    if let Some(DeValue::Array(members)) = table.get_mut("members").map(|v| v.get_mut()) {
        let old = std::mem::replace(members, DeArray::new());
        *members = old
            .into_iter()
            .filter(|m| !matches!(m.get_ref(), DeValue::String(s) if removed.iter().any(|r| r == s.as_ref())))
            .collect();
    }
}

/// True if a link's endpoints or a timeline event's `link`, `from`, `stop`, `start` or
/// `signal` name a removed node.
fn names_any(table: &DeTable, removed: &[String]) -> bool {
    let is_removed = |value: &DeValue| matches!(value, DeValue::String(s) if removed.iter().any(|r| r == s.as_ref()));
    ["endpoints", "link", "from", "stop", "start", "signal"]
        .iter()
        .filter_map(|key| table.get(*key))
        .any(|value| match value.get_ref() {
            DeValue::Array(items) => items.iter().any(|i| is_removed(i.get_ref())),
            other => is_removed(other),
        })
}
