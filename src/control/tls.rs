//! The TLS side of the control plane: both ends present their node certificate and accept only
//! certificates from the lab CA, so a process outside the lab — no certificate, or one from
//! another lab — fails the handshake before any message is read.

use super::identity::Identity;
use quinn::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::crypto::CryptoProvider;
use rustls::server::WebPkiClientVerifier;
use std::io;
use std::sync::Arc;
use std::time::Duration;

/// The ALPN protocol both ends insist on, so a QUIC peer speaking something else (HTTP/3, an
/// older version of these frames) is turned away at the handshake. Version 2: a response
/// frame is the response alone (version 1 wrapped it in a refusal, which now closes the
/// connection instead).
pub const ALPN: &[u8] = b"cdnlab-control/2";

/// How often a client pings an idle connection. Control connections sit idle between reports
/// for longer than QUIC's idle timeout (30 s by default); pings keep them open.
const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// ring only: the crate is built without aws-lc, so the process-wide default provider may not
/// exist, and naming the provider keeps it out of the question.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server that requires every client to present a certificate from the lab CA.
pub(crate) fn server_config(id: &Identity) -> io::Result<quinn::ServerConfig> {
    let provider = provider();
    let verifier = WebPkiClientVerifier::builder_with_provider(id.roots.clone(), provider.clone())
        .build()
        .map_err(|e| tls_error(id, "building the client certificate verifier", e))?;
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| tls_error(id, "choosing TLS 1.3", e))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(id.chain.clone(), id.key.clone_key())
        .map_err(|e| tls_error(id, "loading the node certificate", e))?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let quic = QuicServerConfig::try_from(tls)
        .map_err(|e| tls_error(id, "making the TLS config fit for QUIC", e))?;
    Ok(quinn::ServerConfig::with_crypto(Arc::new(quic)))
}

/// A client that presents `id`'s certificate and accepts only a server certificate from the
/// lab CA naming the node it dials.
pub(crate) fn client_config(id: &Identity) -> io::Result<quinn::ClientConfig> {
    let mut tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| tls_error(id, "choosing TLS 1.3", e))?
        .with_root_certificates(id.roots.clone())
        .with_client_auth_cert(id.chain.clone(), id.key.clone_key())
        .map_err(|e| tls_error(id, "loading the node certificate", e))?;
    tls.alpn_protocols = vec![ALPN.to_vec()];
    client_config_from(tls)
}

/// Wraps a finished rustls client config for QUIC, with keep-alives.
pub(crate) fn client_config_from(tls: rustls::ClientConfig) -> io::Result<quinn::ClientConfig> {
    let quic = QuicClientConfig::try_from(tls)
        .map_err(|e| io::Error::other(format!("making the TLS config fit for QUIC: {e}")))?;
    let mut config = quinn::ClientConfig::new(Arc::new(quic));
    let mut transport = quinn::TransportConfig::default();
    transport.keep_alive_interval(Some(KEEP_ALIVE));
    config.transport_config(Arc::new(transport));
    Ok(config)
}

fn tls_error(id: &Identity, what: &str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!(
        "control plane TLS for node `{}`: {what}: {e}",
        id.node
    ))
}
