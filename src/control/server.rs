//! The answering side: accepts lab peers, and on each bidirectional stream reads one request,
//! checks that the caller's node may call this service, passes the request with the caller's
//! node name to the handler, and writes back the response — or the refusal.
//!
//! A response frame is a `Result<Resp, String>`: `Err` is the refusal of a caller the service
//! does not allow, which the client turns into a `PermissionDenied` error naming the reason.

use super::callers::Callers;
use super::codec;
use super::identity::{Identity, PeerName};
use super::tls;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// The stream error code a server resets a call with when it cannot read the request (too
/// large, undecodable, cut short), so the caller gets an answer instead of a timeout.
pub(crate) const BAD_REQUEST: u32 = 1;

/// The stream error code for a response the server could not encode (over the frame limit).
pub(crate) const BAD_RESPONSE: u32 = 2;

/// A running server. Dropping it stops accepting and closes every connection.
#[derive(Debug)]
pub struct ServerHandle {
    endpoint: quinn::Endpoint,
    accept: JoinHandle<()>,
    local_addr: SocketAddr,
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
    let config = tls::server_config(id)?;
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
    });
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
    })
}

/// What every call of one server needs: who serves, who may call, and the handler.
struct Service<F> {
    node: String,
    callers: Callers,
    handler: F,
}

/// Completes the handshake (where strangers are refused) and serves the connection's calls
/// until the peer goes away.
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
    let request = match codec::read_frame::<Req, _>(&mut recv).await {
        Ok(request) => request,
        Err(_) => {
            // Errors on an already closed stream change nothing: the caller is gone.
            let _ = recv.stop(BAD_REQUEST.into());
            let _ = send.reset(BAD_REQUEST.into());
            return;
        }
    };
    let answer = match service.callers.check(&peer) {
        Ok(()) => Ok((service.handler)(peer, request).await),
        Err(why) => {
            tracing::warn!(node = %service.node, peer = %peer, "control call refused: {why}");
            Err(why)
        }
    };
    match codec::encode::<Result<Resp, String>>(&answer) {
        Ok(frame) => {
            if send.write_all(&frame).await.is_ok() {
                let _ = send.finish();
            }
        }
        Err(_) => {
            // A response too large to send: the caller sees the reset, not a hang.
            let _ = send.reset(BAD_RESPONSE.into());
        }
    }
}

/// The node name in the peer's verified certificate.
fn peer_name(connection: &quinn::Connection) -> Option<PeerName> {
    let identity = connection.peer_identity()?;
    let chain = identity
        .downcast::<Vec<rustls::pki_types::CertificateDer<'static>>>()
        .ok()?;
    PeerName::from_cert(chain.first()?).ok()
}
