//! Who may call a control service. `serve` takes a service's [`Callers`] and checks the node
//! name in the caller's verified certificate on every connection, before any request is read,
//! so no service can forget the check, none can be fooled by what a message claims (who sent
//! it is never read from the body), and a node that may not call cannot make a server read or
//! hold anything.

use super::identity::PeerName;
use std::fmt;

/// The nodes allowed to call one service.
#[derive(Debug, Clone)]
pub struct Callers {
    service: String,
    /// `None`: every node of the lab.
    nodes: Option<Vec<String>>,
}

impl Callers {
    /// Only `nodes` may call `service` (the name refusals and logs give it).
    pub fn only<S: Into<String>>(
        service: impl Into<String>,
        nodes: impl IntoIterator<Item = S>,
    ) -> Callers {
        Callers {
            service: service.into(),
            nodes: Some(nodes.into_iter().map(Into::into).collect()),
        }
    }

    /// Every node of the lab may call `service`: any peer whose certificate the lab's CA
    /// issued, which it does for the lab's nodes only (a stack's directory, which every node
    /// asks).
    pub fn whole_lab(service: impl Into<String>) -> Callers {
        Callers {
            service: service.into(),
            nodes: None,
        }
    }

    /// Why `peer` may not call, if it may not.
    pub(crate) fn check(&self, peer: &PeerName) -> Result<(), String> {
        let allowed = match &self.nodes {
            None => true,
            Some(nodes) => nodes.iter().any(|n| n == peer.as_str()),
        };
        if allowed {
            Ok(())
        } else {
            Err(format!("node {peer} may not call {self}"))
        }
    }
}

impl fmt::Display for Callers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.nodes {
            Some(nodes) => write!(f, "the {} (only {})", self.service, nodes.join(", ")),
            None => write!(f, "the {} (every node of the lab)", self.service),
        }
    }
}
