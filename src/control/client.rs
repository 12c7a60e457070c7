//! The asking side: one authenticated QUIC connection to one node, and `call`, which sends a
//! request on a fresh stream and waits (bounded) for the response. Calls may run concurrently
//! on one client.

use super::codec;
use super::identity::Identity;
use super::server::{BAD_REQUEST, BAD_RESPONSE, REFUSED};
use super::tls;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// A connection to one node's control plane server.
#[derive(Debug)]
pub struct Client {
    endpoint: quinn::Endpoint,
    connection: quinn::Connection,
    server: String,
    addr: SocketAddr,
    timeout: Duration,
}

impl Client {
    /// How long `connect` and each `call` may take unless `with_timeout` says otherwise: long
    /// enough for a handshake over an impaired lab link, short enough that a dead peer shows.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// Connects as node `id` to `server_name`'s server at `addr`. The server must present a
    /// certificate from `id`'s lab CA naming `server_name`.
    ///
    /// TLS 1.3 finishes the client's side of the handshake before the server has checked the
    /// client's certificate, so a server that refuses this client shows it on the first call.
    pub async fn connect(addr: SocketAddr, server_name: &str, id: &Identity) -> io::Result<Client> {
        let config = tls::client_config(id)?;
        Client::connect_with(addr, server_name, config).await
    }

    /// `connect` with a ready QUIC client config.
    pub(crate) async fn connect_with(
        addr: SocketAddr,
        server_name: &str,
        config: quinn::ClientConfig,
    ) -> io::Result<Client> {
        let context = |e: &dyn std::fmt::Display| {
            format!("control plane connection to node `{server_name}` at {addr}: {e}")
        };
        let local: SocketAddr = match addr {
            SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
            SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
        };
        let endpoint =
            quinn::Endpoint::client(local).map_err(|e| io::Error::new(e.kind(), context(&e)))?;
        let connecting = endpoint
            .connect_with(config, addr, server_name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, context(&e)))?;
        let connection = within(Client::DEFAULT_TIMEOUT, connecting)
            .await
            .map_err(|e| io::Error::new(e.kind(), context(&e)))?
            .map_err(|e| io::Error::new(io::ErrorKind::ConnectionRefused, context(&e)))?;
        Ok(Client {
            endpoint,
            connection,
            server: server_name.to_string(),
            addr,
            timeout: Client::DEFAULT_TIMEOUT,
        })
    }

    /// The same client with another bound on each call.
    pub fn with_timeout(mut self, timeout: Duration) -> Client {
        self.timeout = timeout;
        self
    }

    /// Sends `request` and returns the server's response. Errors name the server and say
    /// whether the server refused this node (`PermissionDenied`: it may not call the service,
    /// and the connection is closed for good), the connection failed, or time ran out.
    pub async fn call<Req, Resp>(&self, request: &Req) -> io::Result<Resp>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
    {
        let frame = codec::encode(request).map_err(|e| self.context(e))?;
        let exchange = async {
            let (mut send, mut recv) = self.connection.open_bi().await.map_err(io::Error::from)?;
            send.write_all(&frame).await.map_err(explain_write)?;
            send.finish()
                .map_err(|e| io::Error::new(io::ErrorKind::BrokenPipe, e))?;
            codec::read_frame::<Resp, _>(&mut recv)
                .await
                .map_err(explain_read)
        };
        within(self.timeout, exchange)
            .await
            .map_err(|e| self.context(e))?
            .map_err(|e| self.context(e))
    }

    /// Closes the connection and waits until the server has been told.
    pub async fn close(self) {
        self.connection.close(0u32.into(), b"client closing");
        self.endpoint.wait_idle().await;
    }

    /// Names the server, and why the connection closed if it did: quinn's stream errors say
    /// only "connection lost", which hides a refused certificate or caller.
    fn context(&self, e: io::Error) -> io::Error {
        if let Some(why) = self.refusal() {
            return io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "control call to node `{}` at {}: refused: {why}",
                    self.server, self.addr
                ),
            );
        }
        let why = match self.connection.close_reason() {
            Some(reason) if !e.to_string().contains(&reason.to_string()) => format!(" ({reason})"),
            _ => String::new(),
        };
        io::Error::new(
            e.kind(),
            format!(
                "control call to node `{}` at {}: {e}{why}",
                self.server, self.addr
            ),
        )
    }

    /// The server's reason, if it closed the connection because this node may not call it.
    fn refusal(&self) -> Option<String> {
        match self.connection.close_reason()? {
            quinn::ConnectionError::ApplicationClosed(close)
                if close.error_code == REFUSED.into() =>
            {
                Some(String::from_utf8_lossy(&close.reason).into_owned())
            }
            _ => None,
        }
    }
}

/// `future`'s output, or a `TimedOut` error after `limit`.
async fn within<T>(limit: Duration, future: impl Future<Output = T>) -> io::Result<T> {
    tokio::time::timeout(limit, future).await.map_err(|_| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no answer within {:.1} s", limit.as_secs_f64()),
        )
    })
}

/// Turns the server's stream error codes back into what they mean.
fn explain_code(code: quinn::VarInt) -> Option<&'static str> {
    match u32::try_from(code.into_inner()) {
        Ok(BAD_REQUEST) => Some("the server refused the request (too large, cut short, not the message type it expects, or not all there within its time limit)"),
        Ok(BAD_RESPONSE) => Some("the server could not send its response (over the frame limit, or not taken within its time limit)"),
        _ => None,
    }
}

fn explain_write(e: quinn::WriteError) -> io::Error {
    match &e {
        quinn::WriteError::Stopped(code) => match explain_code(*code) {
            Some(meaning) => io::Error::new(io::ErrorKind::InvalidData, meaning),
            None => io::Error::from(e),
        },
        _ => io::Error::from(e),
    }
}

/// Read errors arrive as `io::Error`s wrapping quinn's `ReadError`.
fn explain_read(e: io::Error) -> io::Error {
    let code = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<quinn::ReadError>())
        .and_then(|read| match read {
            quinn::ReadError::Reset(code) => Some(*code),
            _ => None,
        });
    match code.and_then(explain_code) {
        Some(meaning) => io::Error::new(io::ErrorKind::InvalidData, meaning),
        None => e,
    }
}
