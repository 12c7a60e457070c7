//! The control plane: typed request/response messages between a lab's nodes over QUIC, with
//! both ends authenticated by certificates the lab's own CA issued.
//!
//! `cdnlab up` calls [`issue_lab_certs`] once per lab (testbed containers: one directory per
//! node, [`issue_lab_certs_per_node`]); each node process loads its [`Identity`] from there. A
//! node that answers requests runs [`serve`] with the [`Callers`] it allows and a handler that
//! sees the caller's node name; a node that asks holds a [`Client`] and calls it. Each call is
//! one QUIC bidirectional stream carrying one length-prefixed bincode frame each way, so
//! concurrent calls on one connection never wait for each other.
//!
//! The message types are the caller's: any serde type works, so the chunk-location exchange,
//! ICN messages, fog metadata and replication commands all ride the same library.

mod callers;
mod certs;
mod client;
mod codec;
mod connections;
mod identity;
mod key_dir;
mod server;
mod tls;

pub use callers::Callers;
pub use certs::{issue_lab_certs, issue_lab_certs_per_node};
pub use client::Client;
pub use codec::MAX_FRAME;
pub use identity::{Identity, PeerName};
pub use server::{serve, ServerHandle};
pub use tls::ALPN;

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
