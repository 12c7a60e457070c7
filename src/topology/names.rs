//! Name rules and node-name lookup. Lab names end up in kernel object names (which the kernel
//! limits to 15 characters, prefix included), node names in every node's hosts file, so both
//! are held to what those places accept.

use super::error::{Diags, Span};
use super::model::NodeId;
use std::collections::HashMap;
use toml::Spanned;

/// Lowercase letters, digits and `-`, starting with a letter, 1 to 20 characters. Every lab
/// name — a topology's, `--name`, or the LAB argument of any verb — passes this check before it
/// names a file or a kernel object, so a name can never be a path (`/`, `..`, `a/b`).
pub fn check_lab_name(name: &str) -> Result<(), String> {
    let well_formed = name.len() <= 20 && starts_with_letter(name) && only_name_chars(name);
    if well_formed {
        Ok(())
    } else {
        Err(format!(
            "bad lab name `{name}`: use 1 to 20 lowercase letters, digits and `-`, starting with a letter"
        ))
    }
}

/// A hostname label: lowercase letters, digits and `-`, starting with a letter, not ending
/// with `-`, 1 to 63 characters. `what` is "node" or "LAN".
pub(crate) fn check_node_name(name: &str, what: &str) -> Result<(), String> {
    let well_formed = name.len() <= 63
        && starts_with_letter(name)
        && only_name_chars(name)
        && !name.ends_with('-');
    if well_formed {
        Ok(())
    } else {
        Err(format!(
            "bad {what} name `{name}`: use 1 to 63 lowercase letters, digits and `-`, starting with a letter and not ending with `-`"
        ))
    }
}

fn starts_with_letter(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
}

fn only_name_chars(name: &str) -> bool {
    name.chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// The nodes' names in declaration order, for resolving the names links, LANs and timeline
/// events use.
pub(crate) struct NodeNames {
    pub(crate) names: Vec<Spanned<String>>,
    by_name: HashMap<String, NodeId>,
}

impl NodeNames {
    pub(crate) fn new(names: Vec<Spanned<String>>) -> NodeNames {
        let by_name = names
            .iter()
            .enumerate()
            .map(|(id, name)| (name.get_ref().clone(), id))
            .collect();
        NodeNames { names, by_name }
    }

    pub(crate) fn get(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    pub(crate) fn name(&self, id: NodeId) -> &str {
        self.names[id].get_ref()
    }

    pub(crate) fn span(&self, id: NodeId) -> Span {
        self.names[id].span()
    }

    /// The node a name refers to, or an error at the name listing the nodes there are.
    pub(crate) fn resolve(&self, name: &Spanned<String>, diags: &mut Diags) -> Option<NodeId> {
        let found = self.get(name.get_ref());
        if found.is_none() {
            diags.at(
                &name.span(),
                format!("unknown node `{}`; {}", name.get_ref(), self.list()),
            );
        }
        found
    }

    /// "the nodes are: a, b, c" (the first ten, for big topologies).
    fn list(&self) -> String {
        const SHOWN: usize = 10;
        let names: Vec<&str> = self
            .names
            .iter()
            .take(SHOWN)
            .map(|n| n.get_ref().as_str())
            .collect();
        let more = if self.names.len() > SHOWN {
            format!(", … ({} in all)", self.names.len())
        } else {
            String::new()
        };
        format!("the nodes are: {}{more}", names.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_names() {
        assert!(check_lab_name("chain").is_ok());
        assert!(check_lab_name("a-1").is_ok());
        assert!(check_lab_name("abcdefghijklmnopqrst").is_ok());
        for bad in ["", "1lab", "Lab", "my_lab", "abcdefghijklmnopqrstu", "-x"] {
            assert!(check_lab_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn node_names_are_hostname_labels() {
        assert!(check_node_name("edge-1", "node").is_ok());
        assert!(check_node_name(&"a".repeat(63), "node").is_ok());
        for bad in ["", "edge-", "Edge", "9x", "a.b", "a_b"] {
            assert!(check_node_name(bad, "node").is_err(), "{bad}");
        }
        assert!(check_node_name(&"a".repeat(64), "node").is_err());
    }
}
