//! Who may call a control service. `serve` takes a service's [`Callers`] and checks the node
//! name in the caller's verified certificate on every call before the handler runs, so no
//! service can forget the check, and none can be fooled by what a message claims: who sent it
//! is never read from the body.

use super::identity::PeerName;
use std::fmt;

/// The nodes allowed to call one service.
#[derive(Debug, Clone)]
pub struct Callers {
    service: String,
    nodes: Vec<String>,
}

impl Callers {
    /// Only `nodes` may call `service` (the name refusals and logs give it).
    pub fn only<S: Into<String>>(
        service: impl Into<String>,
        nodes: impl IntoIterator<Item = S>,
    ) -> Callers {
        Callers {
            service: service.into(),
            nodes: nodes.into_iter().map(Into::into).collect(),
        }
    }

    /// Why `peer` may not call, if it may not.
    pub(crate) fn check(&self, peer: &PeerName) -> Result<(), String> {
        if self.nodes.iter().any(|n| n == peer.as_str()) {
            Ok(())
        } else {
            Err(format!("node {peer} may not call {self}"))
        }
    }
}

impl fmt::Display for Callers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the {} (only {})", self.service, self.nodes.join(", "))
    }
}
