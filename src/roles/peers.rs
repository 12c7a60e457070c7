//! A role's peers on the control plane: one kept connection to each, made again after a
//! failure, and calls to many of them at once (the ICN controller's sites and borders, the
//! farm dispatcher's servers).

use crate::control::{Client, Identity};
use std::sync::Arc;
use std::time::Duration;

/// A kept control-plane connection to one node, made again after a failure.
pub struct Peer {
    pub name: String,
    client: Option<Client>,
}

impl Peer {
    /// Not connected yet: the first call connects.
    pub fn new(name: &str) -> Peer {
        Peer {
            name: name.to_string(),
            client: None,
        }
    }

    /// One call, the connection (made again if it failed) and the answer each awaited up to
    /// `limit`.
    pub async fn call<Req, Resp>(
        &mut self,
        port: u16,
        id: &Identity,
        request: &Req,
        limit: Duration,
    ) -> Option<Resp>
    where
        Req: serde::Serialize,
        Resp: serde::de::DeserializeOwned,
    {
        if self.client.is_none() {
            let addr = format!("{}:{port}", self.name);
            let connect = crate::roles::control::connect(&addr, &self.name, id);
            self.client = tokio::time::timeout(limit, connect).await.ok()?.ok();
        }
        let answer = tokio::time::timeout(limit, self.client.as_ref()?.call(request)).await;
        match answer {
            Ok(Ok(response)) => Some(response),
            Ok(Err(_)) => {
                self.client = None;
                None
            }
            Err(_) => None,
        }
    }
}

/// Calls every peer at once with its request: one slow peer (a congested site's link carries
/// its control traffic too) must not hold up the others. Answers come back in `peers` order.
pub async fn call_all<Req, Resp>(
    peers: &mut Vec<Peer>,
    port: u16,
    id: &Arc<Identity>,
    requests: Vec<Req>,
    limit: Duration,
) -> Vec<Option<Resp>>
where
    Req: serde::Serialize + Send + Sync + 'static,
    Resp: serde::de::DeserializeOwned + Send + 'static,
{
    let mut calls = tokio::task::JoinSet::new();
    for (i, (mut peer, request)) in std::mem::take(peers).into_iter().zip(requests).enumerate() {
        let id = id.clone();
        calls.spawn(async move {
            let answer = peer.call(port, &id, &request, limit).await;
            (i, peer, answer)
        });
    }
    let mut done = calls.join_all().await;
    done.sort_by_key(|(i, ..)| *i);
    done.into_iter()
        .map(|(_, peer, answer)| {
            peers.push(peer);
            answer
        })
        .collect()
}
