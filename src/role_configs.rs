//! Every role's config reader, by role name: `cdnlab up` and `cdnlab run` read each node's
//! `config` table with the reader its binary uses before anything is created, so a farm with
//! too few slots or a misspelt key is refused at once instead of as one node's dead process.

use toml::Table;

use crate::cdn_roles::config::{DcsConfig, DrrConfig, UcsConfig, UrrConfig};
use crate::topology::{Program, Topology};
use crate::{farm_roles, fog_roles, has_client, icn_roles, p2p_roles, probe, roles::ROLES};

/// Reads a node's config table as its role binary will: `(table, node name)`.
pub type Reader = fn(&Table, &str) -> Result<(), String>;

/// The reader of every role in `ROLES`.
pub const READERS: &[(&str, Reader)] = &[
    ("probe", |t, _| probe::parse_role_config(t).map(drop)),
    ("has-client", |t, _| {
        has_client::config::parse_config(t).map(drop)
    }),
    ("ucs", |t, node| UcsConfig::parse(t, node).map(drop)),
    ("dcs", |t, _| DcsConfig::parse(t).map(drop)),
    ("urr", |t, node| UrrConfig::parse(t, node).map(drop)),
    ("drr", |t, _| DrrConfig::parse(t).map(drop)),
    ("cloud", |t, _| fog_roles::config::cloud(t).map(drop)),
    ("fdn", |t, _| fog_roles::config::fdn(t).map(drop)),
    ("fog-viewers", |t, _| {
        fog_roles::config::viewers(t).map(drop)
    }),
    ("icn-router", |t, _| icn_roles::router::config(t).map(drop)),
    ("icn-border", |t, _| icn_roles::border::config(t).map(drop)),
    ("cdn-site", |t, _| icn_roles::site::config(t).map(drop)),
    ("controller", |t, _| {
        icn_roles::controller::config(t).map(drop)
    }),
    ("icn-load", |t, _| icn_roles::load::config(t).map(drop)),
    ("farm-server", |t, _| {
        farm_roles::config::server(t).map(drop)
    }),
    ("farm-dispatcher", |t, _| {
        farm_roles::config::dispatcher(t).map(drop)
    }),
    ("farm-datacenter", |t, _| {
        farm_roles::config::datacenter(t).map(drop)
    }),
    ("farm-load", |t, _| farm_roles::config::load(t).map(drop)),
    ("p2p-tracker", |t, _| {
        p2p_roles::config::tracker(t).map(drop)
    }),
    ("p2p-peer", |t, _| p2p_roles::config::peer(t).map(drop)),
    ("p2p-cloud", |t, _| p2p_roles::config::cloud(t).map(drop)),
];

/// Reads `config` as role `role` on node `node` will; an unknown role is an error.
pub fn check(role: &str, node: &str, config: &Table) -> Result<(), String> {
    match READERS.iter().find(|(name, _)| *name == role) {
        Some((_, read)) => read(config, node),
        None => Err(format!(
            "unknown role `{role}`; the roles are: {}",
            ROLES.join(", ")
        )),
    }
}

/// Every node's config read as its role will ([`check`]), then what roles on different nodes
/// must agree on (the P2P family's catalogue): one message per problem, naming its node.
pub fn check_topology(topology: &Topology) -> Vec<String> {
    let mut problems = Vec::new();
    for node in &topology.nodes {
        if let Program::Role { role, config } = &node.program {
            if let Err(e) = check(role, &node.name, config) {
                problems.push(format!("node {} (role {role}): {e}", node.name));
            }
        }
    }
    problems.extend(p2p_roles::config::disagreements(topology));
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_has_a_reader() {
        for role in ROLES {
            assert!(
                READERS.iter().any(|(name, _)| name == role),
                "role {role} has no config reader"
            );
        }
        assert_eq!(
            READERS.len(),
            ROLES.len(),
            "a reader for a role not in ROLES"
        );
    }

    #[test]
    fn a_bad_table_is_refused_with_its_key() {
        let table: Table = "no_such_key = 1".parse().unwrap();
        let error = check("farm-dispatcher", "d", &table).unwrap_err();
        assert!(error.contains("no_such_key"), "{error}");
        assert!(check("nope", "d", &Table::new())
            .unwrap_err()
            .contains("unknown role `nope`"));
    }
}
