//! The exchange's I/O: calling a peer's control service with retries while it starts up, the
//! uRR's offer, and the dRR's and dCS's control services. Message types and the sans-IO steps
//! are in `exchange`.

use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::{watch, Mutex};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::config::Peer;
use super::exchange::{
    build_locations, check_locations, Assignment, DcsRequest, DcsResponse, DrrRequest, DrrResponse,
    OffloadRequest,
};
use crate::cdn::{Assign, BaseUrl, ChunkLocations};
use crate::control::{Callers, Client, Identity};

/// First wait between attempts; it doubles up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// How one answer is taken: a result, a reason to try again, or a reason to stop.
pub enum Attempt {
    Retry(String),
    Fatal(String),
}

/// Calls `peer`'s control service with `request` until `judge` accepts an answer, retrying
/// (with backoff, a fresh connection each time) while the peer is unreachable or `judge` says
/// retry, until `deadline`. A peer that refuses this node is not asked again: that is for good.
pub async fn call_until<Req, Resp, T>(
    peer: &Peer,
    identity: &Identity,
    request: &Req,
    deadline: Instant,
    judge: impl Fn(Resp) -> Result<T, Attempt>,
) -> Result<T, String>
where
    Req: Serialize,
    Resp: DeserializeOwned,
{
    let mut backoff = FIRST_BACKOFF;
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let remaining = deadline.saturating_duration_since(Instant::now());
        let outcome =
            match tokio::time::timeout(remaining, call_once(peer, identity, request, remaining))
                .await
            {
                Err(_) => Err(Attempt::Retry("no answer before the deadline".to_string())),
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    Err(Attempt::Fatal(e.to_string()))
                }
                Ok(Err(e)) => Err(Attempt::Retry(e.to_string())),
                Ok(Ok(response)) => judge(response),
            };
        match outcome {
            Ok(value) => return Ok(value),
            Err(Attempt::Fatal(why)) => {
                return Err(format!("node {} ({}): {why}", peer.node, peer.control))
            }
            Err(Attempt::Retry(why)) => {
                if Instant::now() + backoff >= deadline {
                    return Err(format!(
                        "node {} ({}): no usable answer after {attempts} attempts; the last: {why}",
                        peer.node, peer.control
                    ));
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        }
    }
}

async fn call_once<Req: Serialize, Resp: DeserializeOwned>(
    peer: &Peer,
    identity: &Identity,
    request: &Req,
    timeout: Duration,
) -> std::io::Result<Resp> {
    let addr = tokio::net::lookup_host(peer.control.as_str())
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("resolving {}: {e}", peer.control)))?
        .next()
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{} resolves to no address", peer.control),
            )
        })?;
    let client = Client::connect(addr, &peer.node, identity)
        .await?
        .with_timeout(timeout);
    let answer = client.call(request).await;
    client.close().await;
    answer
}

/// The uRR's side: offers `request` to the dRR until it answers with locations that match the
/// offer (checked), or `deadline` passes.
pub async fn offer(
    request: &OffloadRequest,
    drr: &Peer,
    identity: &Identity,
    deadline: Instant,
) -> Result<ChunkLocations, String> {
    let message = DrrRequest::Offload(request.clone());
    call_until(
        drr,
        identity,
        &message,
        deadline,
        |response| match response {
            DrrResponse::Locations(table) => match check_locations(request, &table) {
                Ok(()) => Ok(table),
                Err(e) => Err(Attempt::Fatal(format!(
                    "its locations do not match the offer: {e}"
                ))),
            },
            DrrResponse::Failed(why) => Err(Attempt::Retry(why)),
        },
    )
    .await
}

/// The dRR's control service.
pub struct DrrControl {
    urr_node: String,
    dcs: Vec<Peer>,
    assign: Assign,
    exchange_timeout: Duration,
    identity: Arc<Identity>,
    published: watch::Sender<Option<Arc<ChunkLocations>>>,
    /// One offer at a time: a retried offer waits for the first instead of racing it.
    busy: Mutex<()>,
}

impl DrrControl {
    pub fn new(
        urr_node: String,
        dcs: Vec<Peer>,
        assign: Assign,
        exchange_timeout: Duration,
        identity: Arc<Identity>,
        published: watch::Sender<Option<Arc<ChunkLocations>>>,
    ) -> DrrControl {
        DrrControl {
            urr_node,
            dcs,
            assign,
            exchange_timeout,
            identity,
            published,
            busy: Mutex::new(()),
        }
    }

    /// Only the configured uRR offers its placement.
    pub fn callers(&self) -> Callers {
        Callers::only("dRR's chunk-location exchange", [self.urr_node.clone()])
    }

    /// Answers `request`, which `serve` let through from one of `callers`.
    pub async fn handle(self: Arc<Self>, request: DrrRequest) -> DrrResponse {
        let DrrRequest::Offload(offer) = request;
        let _one_at_a_time = self.busy.lock().await;
        let urls: Vec<BaseUrl> = self.dcs.iter().map(|p| p.url.clone()).collect();
        let table = match build_locations(&offer, &urls, &self.assign) {
            Ok(table) => Arc::new(table),
            Err(e) => return DrrResponse::Failed(format!("the offer cannot be placed: {e}")),
        };
        let deadline = Instant::now() + self.exchange_timeout;
        let mut calls = JoinSet::new();
        for (server, peer) in self.dcs.iter().enumerate() {
            let assignment = DcsRequest::Hold(Assignment {
                locations: (*table).clone(),
                // Server lists are far below u32::MAX (each entry is a configured URL).
                server: server as u32,
            });
            let peer = peer.clone();
            let identity = self.identity.clone();
            calls.spawn(async move {
                let held = call_until(&peer, &identity, &assignment, deadline, |r| match r {
                    DcsResponse::Holding { chunks } => Ok(chunks),
                    DcsResponse::Failed(why) => Err(Attempt::Fatal(why)),
                })
                .await;
                (peer.node, held)
            });
        }
        let mut held = Vec::new();
        let mut failures = Vec::new();
        while let Some(joined) = calls.join_next().await {
            match joined {
                Ok((node, Ok(chunks))) => held.push(format!("{node} {chunks}")),
                Ok((_, Err(e))) => failures.push(e),
                Err(e) => failures.push(format!("a dCS call stopped: {e}")),
            }
        }
        if !failures.is_empty() {
            tracing::warn!("drr: could not assign chunks: {}", failures.join("; "));
            return DrrResponse::Failed(failures.join("; "));
        }
        held.sort();
        tracing::info!("drr: locations ready; chunks per dCS: {}", held.join(", "));
        self.published.send_replace(Some(table.clone()));
        DrrResponse::Locations((*table).clone())
    }
}

/// A dCS's control service.
pub struct DcsControl {
    drr_node: String,
    published: watch::Sender<Option<Arc<Assignment>>>,
}

impl DcsControl {
    pub fn new(drr_node: String, published: watch::Sender<Option<Arc<Assignment>>>) -> DcsControl {
        DcsControl {
            drr_node,
            published,
        }
    }

    /// Only the configured dRR assigns chunks.
    pub fn callers(&self) -> Callers {
        Callers::only("dCS's assignment service", [self.drr_node.clone()])
    }

    /// Answers `request`, which `serve` let through from one of `callers`.
    pub fn handle(&self, request: DcsRequest) -> DcsResponse {
        let DcsRequest::Hold(assignment) = request;
        let servers = assignment.locations.downstream_servers().len();
        if assignment.server as usize >= servers {
            return DcsResponse::Failed(format!(
                "server index {} but the table lists {servers} downstream servers",
                assignment.server
            ));
        }
        let chunks = assignment.chunks();
        tracing::info!(
            "dcs: assigned {chunks} chunks as downstream server {} ({})",
            assignment.server,
            assignment.locations.downstream_servers()[assignment.server as usize]
        );
        self.published.send_replace(Some(Arc::new(assignment)));
        DcsResponse::Holding { chunks }
    }
}
