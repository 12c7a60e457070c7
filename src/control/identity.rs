//! A node's identity on the control plane — its certificate, key and the lab CA it trusts — and
//! the name a verified peer certificate gives its holder.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::RootCertStore;
use std::fmt;
use std::io;
use std::path::Path;
use std::sync::Arc;

/// What one node presents and trusts, as `issue_lab_certs` wrote it.
#[derive(Debug)]
pub struct Identity {
    pub(crate) node: String,
    pub(crate) chain: Vec<CertificateDer<'static>>,
    pub(crate) key: PrivateKeyDer<'static>,
    pub(crate) roots: Arc<RootCertStore>,
}

impl Identity {
    /// Loads `dir/ca.pem`, `dir/NODE.pem` and `dir/NODE.key`, and checks that the certificate
    /// names `node`, so a mixed-up file is caught here rather than as a puzzling peer name.
    pub fn load(dir: &Path, node: &str) -> io::Result<Identity> {
        let ca_path = dir.join("ca.pem");
        let mut roots = RootCertStore::empty();
        for cert in read_certs(&ca_path)? {
            roots.add(cert).map_err(|e| {
                invalid(format!(
                    "{}: not a usable CA certificate: {e}",
                    ca_path.display()
                ))
            })?;
        }

        let cert_path = dir.join(format!("{node}.pem"));
        let chain = read_certs(&cert_path)?;
        let named = PeerName::from_cert(&chain[0])
            .map_err(|e| invalid(format!("{}: {e}", cert_path.display())))?;
        if named.as_str() != node {
            return Err(invalid(format!(
                "{}: the certificate names node `{named}`, not `{node}`",
                cert_path.display()
            )));
        }

        let key_path = dir.join(format!("{node}.key"));
        let key = PrivateKeyDer::from_pem_file(&key_path).map_err(|e| pem_error(&key_path, e))?;

        Ok(Identity {
            node: node.to_string(),
            chain,
            key,
            roots: Arc::new(roots),
        })
    }

    /// The node this identity belongs to.
    pub fn node(&self) -> &str {
        &self.node
    }
}

/// The node name of an authenticated peer: the first DNS name in its certificate's subject
/// alternative names, which the lab CA set to the node name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerName(String);

impl PeerName {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Reads the name from a certificate. Only call this on a certificate TLS has verified:
    /// parsing alone proves nothing about who holds it.
    pub(crate) fn from_cert(cert: &CertificateDer<'_>) -> io::Result<PeerName> {
        let parsed = webpki::EndEntityCert::try_from(cert)
            .map_err(|e| invalid(format!("unparsable certificate: {e}")))?;
        let name = parsed.valid_dns_names().next().ok_or_else(|| {
            invalid("the certificate has no DNS name to identify its node".into())
        })?;
        Ok(PeerName(name.to_string()))
    }
}

impl fmt::Display for PeerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Every certificate in a PEM file; an empty file is an error, not an empty trust list.
fn read_certs(path: &Path) -> io::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_error(path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(path, e))?;
    if certs.is_empty() {
        return Err(invalid(format!("{}: no certificate in it", path.display())));
    }
    Ok(certs)
}

fn pem_error(path: &Path, e: rustls::pki_types::pem::Error) -> io::Error {
    match e {
        rustls::pki_types::pem::Error::Io(io) => {
            io::Error::new(io.kind(), format!("reading {}: {io}", path.display()))
        }
        other => invalid(format!("{}: {other}", path.display())),
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}
