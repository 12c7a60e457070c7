//! HTTP for every role: the server (hyper, HTTP/1.1 and h2c on one port, graceful shutdown),
//! response bodies that never hold a whole segment, the HTTP semantics answers follow, and how
//! a client's errors read.

mod activity;
mod answer_bytes;
pub mod body;
mod congestion;
mod error_causes;
mod head_only;
mod large_folios;
pub mod paced;
mod running;
pub mod sealed;
pub mod semantics;
mod serve;
#[cfg(test)]
mod test_clients;
mod writes;

pub use body::Body;
pub use congestion::congestion_control;
pub use error_causes::describe;
pub use head_only::HeadHandler;
pub use running::{serve_until_stopped, spawn_head_only, spawn_http, Running};
pub use serve::{serve_head_only, serve_http, ServeOptions, KEEP_ALIVE_TIMEOUT, SHUTDOWN_GRACE};

/// `0.0.0.0:port`: every role listens on all of its node's addresses.
pub fn any_address(port: u16) -> std::net::SocketAddr {
    std::net::SocketAddr::from(([0, 0, 0, 0], port))
}
