//! The answering side: accepts lab peers, checks once per connection, right after the
//! handshake, that the caller's node may call this service, and then on each bidirectional
//! stream reads one request, passes it with the caller's node name to the handler, and writes
//! back the response.
//!
//! A caller the service does not allow gets its connection closed with [`REFUSED`] and the
//! reason, which the client turns into a `PermissionDenied` error; not one byte of its requests
//! is read. What allowed callers can make a server hold is bounded too: each node's
//! connections ([`Limits::connections_per_node`]), the calls open on each
//! ([`Limits::calls_per_connection`]), the time each request and response may take on the
//! wire ([`Limits::transfer`]), the bytes of requests held at once, by each caller
//! ([`Limits::request_bytes_per_node`]) and over all callers ([`Limits::request_bytes`]),
//! and what QUIC buffers for a connection before it is read ([`CONNECTION_WINDOW`]).
//!

use super::callers::Callers;
use super::codec;
use super::connections::Connections;
use super::identity::{Identity, PeerName};
use super::tls;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

/// The stream error code a server resets a call with when it cannot read the request (too
/// large, undecodable, cut short, or not sent in time), so the caller gets an answer instead
/// of a timeout.
pub(crate) const BAD_REQUEST: u32 = 1;

/// The stream error code for a response the server could not send: over the frame limit, or
/// not taken by the caller within [`Limits::transfer`].
pub(crate) const BAD_RESPONSE: u32 = 2;

/// The connection close code for a caller the service does not allow; the close reason says
/// why.
pub(crate) const REFUSED: u32 = 3;

/// What QUIC takes of one connection's streams before the server reads it (quinn's default
/// has no bound per connection, only 1.25 MB per stream): with it, a node's connections
/// (`Limits::connections_per_node`) can park at most 64 MiB in a server beside the byte
/// budget, and one connection still carries a 16 MiB message at full speed on a lab's links.
/// Each stream gets an equal part of it, so streams waiting for room in the budget can never
/// fill the window that the request holding the room needs for the rest of its payload.
const CONNECTION_WINDOW: u32 = 8 << 20;

/// What one server lets an allowed caller make it hold.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// How long a caller may take to send one request, and the server to send one response.
    /// Control messages are small; a stream that takes longer is a stalled or hostile peer.
    pub transfer: Duration,
    /// Calls open at once on one connection; a client's further calls wait for a free one.
    pub calls_per_connection: u32,
    /// Connections one node may hold; a newer one closes its oldest.
    pub connections_per_node: usize,
    /// Bytes of requests the server holds at once, from every caller together: a request
    /// takes its announced length from this budget (after its caller's share,
    /// [`Limits::request_bytes_per_node`]) before its payload is read, and gives it back
    /// once answered. A request that waits for room waits within [`Limits::transfer`].
    pub request_bytes: usize,
    /// Bytes of requests one caller may have the server hold at once; a request announcing
    /// more is refused before its payload is read. A caller that announces much and sends
    /// little holds up its own requests and this much of `request_bytes`, not all of it.
    pub request_bytes_per_node: usize,
}

impl Limits {
    /// Far above what a lab's roles use (one kept connection per peer, a few calls at once,
    /// messages of bytes to a few MB), far below what would let callers exhaust a server:
    /// one request of the largest size (`MAX_FRAME`) per node and four in all fit at once,
    /// where `connections_per_node × calls_per_connection` streams alone would let each node
    /// make it read 128 of them (2 GiB).
    pub(crate) const DEFAULT: Limits = Limits {
        transfer: Duration::from_secs(30),
        calls_per_connection: 16,
        connections_per_node: 8,
        request_bytes: 4 * codec::MAX_FRAME,
        request_bytes_per_node: codec::MAX_FRAME,
    };
}

/// A running server. Dropping it stops accepting and closes every connection.
#[derive(Debug)]
pub struct ServerHandle {
    endpoint: quinn::Endpoint,
    accept: JoinHandle<()>,
    local_addr: SocketAddr,
    #[cfg(test)]
    pub(crate) connections: Arc<Connections>,
    /// What is left of the byte budget, for tests that wait until a request holds its part.
    #[cfg(test)]
    pub(crate) request_bytes: Arc<Semaphore>,
}

impl ServerHandle {
    /// The address the server listens on (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Closes every connection and waits until the peers have been told.
    pub async fn close(self) {
        self.endpoint.close(0u32.into(), b"server closing");
        self.endpoint.wait_idle().await;
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.accept.abort();
        self.endpoint.close(0u32.into(), b"server closing");
    }
}

/// Serves calls on `bind` (UDP) as node `id` until the handle is dropped. Each call runs in
/// its own task, so a slow handler holds up only its own caller. Only peers with a certificate
/// from `id`'s lab CA get through the handshake, and only `callers` get past the check to the
/// handler, which learns which node called; any other node's call is refused (and logged).
pub async fn serve<Req, Resp, F, Fut>(
    bind: SocketAddr,
    id: &Identity,
    callers: Callers,
    handler: F,
) -> io::Result<ServerHandle>
where
    Req: DeserializeOwned + Send + 'static,
    Resp: Serialize + Send + 'static,
    F: Fn(PeerName, Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Resp> + Send + 'static,
{
    serve_with(bind, id, callers, handler, Limits::DEFAULT).await
}

/// `serve` with other limits (tests use short ones).
pub(crate) async fn serve_with<Req, Resp, F, Fut>(
    bind: SocketAddr,
    id: &Identity,
    callers: Callers,
    handler: F,
    limits: Limits,
) -> io::Result<ServerHandle>
where
    Req: DeserializeOwned + Send + 'static,
    Resp: Serialize + Send + 'static,
    F: Fn(PeerName, Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Resp> + Send + 'static,
{
    let mut config = tls::server_config(id)?;
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_concurrent_bidi_streams(limits.calls_per_connection.into())
        .max_concurrent_uni_streams(0u8.into())
        .receive_window(CONNECTION_WINDOW.into())
        .stream_receive_window((CONNECTION_WINDOW / limits.calls_per_connection.max(1)).into());
    config.transport_config(Arc::new(transport));
    let endpoint = quinn::Endpoint::server(config, bind).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "control plane server of node `{}` on {bind}: {e}",
                id.node()
            ),
        )
    })?;
    let local_addr = endpoint.local_addr()?;
    let service = Arc::new(Service {
        node: id.node().to_string(),
        callers,
        handler,
        limits,
        connections: Arc::default(),
        request_bytes: Arc::new(Semaphore::new(limits.request_bytes)),
        node_shares: Mutex::default(),
    });
    #[cfg(test)]
    let (connections, request_bytes) = (service.connections.clone(), service.request_bytes.clone());
    let accepting = endpoint.clone();
    let accept = tokio::spawn(async move {
        while let Some(incoming) = accepting.accept().await {
            tokio::spawn(serve_connection(incoming, service.clone()));
        }
    });
    Ok(ServerHandle {
        endpoint,
        accept,
        local_addr,
        #[cfg(test)]
        connections,
        #[cfg(test)]
        request_bytes,
    })
}

/// What every call of one server needs: who serves, who may call, the handler, and the
/// limits on what callers make it hold.
struct Service<F> {
    node: String,
    callers: Callers,
    handler: F,
    limits: Limits,
    connections: Arc<Connections>,
    /// What is left of [`Limits::request_bytes`], one permit a byte.
    request_bytes: Arc<Semaphore>,
    /// What is left of each caller's [`Limits::request_bytes_per_node`], by node (only
    /// callers the service allows get one).
    node_shares: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl<F> Service<F> {
    /// What is left of `peer`'s share of the byte budget.
    fn node_share(&self, peer: &PeerName) -> Arc<Semaphore> {
        let mut shares = self.node_shares.lock().unwrap_or_else(|e| e.into_inner());
        (shares.entry(peer.as_str().to_string()))
            .or_insert_with(|| Arc::new(Semaphore::new(self.limits.request_bytes_per_node)))
            .clone()
    }
}

/// Completes the handshake (where strangers are refused), checks the caller (closing the
/// connection of one the service does not allow), and serves the connection's calls until
/// the peer goes away.
async fn serve_connection<Req, Resp, F, Fut>(incoming: quinn::Incoming, service: Arc<Service<F>>)
where
    Req: DeserializeOwned + Send + 'static,
    Resp: Serialize + Send + 'static,
    F: Fn(PeerName, Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Resp> + Send + 'static,
{
    // A failed handshake is the refusal itself; the peer has been told why.
    let Ok(connection) = incoming.await else {
        return;
    };
    let Some(peer) = peer_name(&connection) else {
        connection.close(
            BAD_REQUEST.into(),
            b"no node name in the client certificate",
        );
        return;
    };
    if let Err(why) = service.callers.check(&peer) {
        tracing::warn!(node = %service.node, peer = %peer, "control connection refused: {why}");
        connection.close(REFUSED.into(), why.as_bytes());
        return;
    }
    let _registration =
        service
            .connections
            .register(&peer, &connection, service.limits.connections_per_node);
    while let Ok((send, recv)) = connection.accept_bi().await {
        tokio::spawn(serve_call(send, recv, peer.clone(), service.clone()));
    }
}

async fn serve_call<Req, Resp, F, Fut>(
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    peer: PeerName,
    service: Arc<Service<F>>,
) where
    Req: DeserializeOwned + Send + 'static,
    Resp: Serialize + Send + 'static,
    F: Fn(PeerName, Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Resp> + Send + 'static,
{
    let transfer = service.limits.transfer;
    let read = tokio::time::timeout(transfer, read_request::<Req, F>(&mut recv, &service, &peer));
    let read = read.await;
    let Ok(Ok((request, _held))) = read else {
        // Errors on an already closed stream change nothing: the caller is gone.
        let _ = recv.stop(BAD_REQUEST.into());
        let _ = send.reset(BAD_REQUEST.into());
        return;
    };
    let answer = (service.handler)(peer, request).await;
    match codec::encode(&answer) {
        Ok(frame) => match tokio::time::timeout(transfer, send.write_all(&frame)).await {
            Ok(Ok(())) => {
                let _ = send.finish();
            }
            // A caller that stopped reading: give up the stream rather than wait on it.
            Ok(Err(_)) | Err(_) => {
                let _ = send.reset(BAD_RESPONSE.into());
            }
        },
        Err(_) => {
            // A response too large to send: the caller sees the reset, not a hang.
            let _ = send.reset(BAD_RESPONSE.into());
        }
    }
}

/// Reads one request from `peer`, its announced length first taken from the caller's own
/// share and then from the server's byte budget (both held, in the permits returned, until
/// the call is answered): a caller that announces much and sends little holds up only its
/// own later requests and a share of the budget, never all of it.
async fn read_request<Req: DeserializeOwned, F>(
    recv: &mut quinn::RecvStream,
    service: &Service<F>,
    peer: &PeerName,
) -> io::Result<(Req, [OwnedSemaphorePermit; 2])> {
    let len = codec::read_header(recv).await?;
    let limit = (service.limits.request_bytes_per_node).min(service.limits.request_bytes);
    if len > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a request of {len} bytes is more than the {limit} bytes one node may have this server hold"),
        ));
    }
    // At most `MAX_FRAME` (`read_header` refuses more), below 2^32.
    let permits = len as u32;
    let closing = |_| io::Error::other("server closing");
    let own = service
        .node_share(peer)
        .acquire_many_owned(permits)
        .await
        .map_err(closing)?;
    let all = (service.request_bytes.clone())
        .acquire_many_owned(permits)
        .await
        .map_err(closing)?;
    let request = codec::read_payload(recv, len).await?;
    Ok((request, [own, all]))
}

/// The node name in the peer's verified certificate.
fn peer_name(connection: &quinn::Connection) -> Option<PeerName> {
    let identity = connection.peer_identity()?;
    let chain = identity
        .downcast::<Vec<rustls::pki_types::CertificateDer<'static>>>()
        .ok()?;
    PeerName::from_cert(chain.first()?).ok()
}
