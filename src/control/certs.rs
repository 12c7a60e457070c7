//! Issuing a lab's certificates: one CA per lab and one certificate per node, so that only the
//! lab's own processes can talk on its control plane. The CA's key is never written: nothing
//! needs to sign after `cdnlab up`, and a key that does not exist cannot leak.

use super::key_dir::KeyDir;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::io;
use std::path::Path;

/// Issues a fresh CA for `lab` and one certificate per node (its SAN is the node name, good for
/// both server and client authentication), written under `dir` (mode 0700) as PEM: `ca.pem`,
/// `NODE.pem`, `NODE.key` (mode 0600). Re-issuing replaces every file, and certificates from an
/// earlier CA stop being accepted.
pub fn issue_lab_certs(dir: &Path, lab: &str, nodes: &[&str]) -> io::Result<()> {
    issue(dir, lab, nodes, false)
}

/// `issue_lab_certs` with a directory per node: `dir/NODE/` (mode 0700) holds `ca.pem`,
/// `NODE.pem` and `NODE.key`, so a node given only its own directory (a container mounting
/// one volume) holds no other node's key.
pub fn issue_lab_certs_per_node(dir: &Path, lab: &str, nodes: &[&str]) -> io::Result<()> {
    issue(dir, lab, nodes, true)
}

fn issue(dir: &Path, lab: &str, nodes: &[&str], per_node: bool) -> io::Result<()> {
    for node in nodes {
        check_node_name(node)?;
    }
    let top = KeyDir::open(dir)?;

    let ca_key = KeyPair::generate().map_err(|e| rcgen_error("generating the lab CA key", e))?;
    let mut ca_params = CertificateParams::default();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("cdnlab lab {lab} CA"));
    // The CA signs node certificates only, never another CA.
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params
        .self_signed(&ca_key)
        .map_err(|e| rcgen_error("signing the lab CA certificate", e))?;
    let issuer = Issuer::new(ca_params, ca_key);

    for node in nodes {
        let own;
        let dir = if per_node {
            own = top.child(node)?;
            &own
        } else {
            &top
        };
        dir.write("ca.pem", ca_cert.pem().as_bytes(), 0o644)?;
        let what = format!("the certificate of node `{node}`");
        let key = KeyPair::generate().map_err(|e| rcgen_error(&what, e))?;
        let mut params =
            CertificateParams::new(vec![node.to_string()]).map_err(|e| rcgen_error(&what, e))?;
        params.distinguished_name.push(DnType::CommonName, *node);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        // Every node may both serve and call.
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(|e| rcgen_error(&what, e))?;
        dir.write(&format!("{node}.pem"), cert.pem().as_bytes(), 0o644)?;
        dir.write(
            &format!("{node}.key"),
            key.serialize_pem().as_bytes(),
            0o600,
        )?;
    }
    Ok(())
}

/// Node names become file names and certificate DNS names, so they are held to a hostname
/// label (the topology's own rule), which keeps them from escaping `dir` too; `ca` is taken by
/// the CA's certificate.
fn check_node_name(node: &str) -> io::Result<()> {
    if node == "ca" {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a node named `ca` would have its certificate in `ca.pem`, the lab CA's file: rename the node",
        ));
    }
    let well_formed = !node.is_empty()
        && node.len() <= 63
        && node.starts_with(|c: char| c.is_ascii_lowercase())
        && !node.ends_with('-')
        && node
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if well_formed {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad node name `{node}` for a certificate: use lowercase letters, digits and `-`, starting with a letter"),
        ))
    }
}

fn rcgen_error(what: &str, e: rcgen::Error) -> io::Error {
    io::Error::other(format!("issuing {what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// A symbolic link handed in as the directory, or planted as a node's directory, is
    /// refused: what it points at keeps its mode and gets no key.
    #[test]
    fn a_linked_directory_is_refused_not_followed() {
        let scratch = TempDir::new("certs-link");
        let elsewhere = scratch.0.join("elsewhere");
        fs::create_dir_all(&elsewhere).unwrap();
        fs::set_permissions(&elsewhere, fs::Permissions::from_mode(0o755)).unwrap();

        let handed = scratch.0.join("handed");
        std::os::unix::fs::symlink(&elsewhere, &handed).unwrap();
        let refused = issue_lab_certs(&handed, "l", &["urr"]).unwrap_err();
        assert!(refused.to_string().contains("symbolic link"), "{refused}");

        let certs = scratch.0.join("certs");
        fs::create_dir_all(&certs).unwrap();
        std::os::unix::fs::symlink(&elsewhere, certs.join("drr")).unwrap();
        let refused = issue_lab_certs_per_node(&certs, "l", &["drr"]).unwrap_err();
        assert!(refused.to_string().contains("symbolic link"), "{refused}");

        assert_eq!(mode(&elsewhere), 0o755);
        assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
        issue_lab_certs_per_node(&certs.join("real"), "l", &["drr"]).unwrap();
        assert_eq!(mode(&certs.join("real/drr")), 0o700);
    }

    #[test]
    fn a_node_named_like_the_ca_file_is_refused() {
        let scratch = TempDir::new("certs-ca-name");
        let refused = issue_lab_certs(&scratch.0, "l", &["urr", "ca"]).unwrap_err();
        assert!(refused.to_string().contains("`ca`"), "{refused}");
        assert!(!scratch.0.exists(), "nothing is written");
    }

    /// A link planted where a key goes is replaced by the key, never written through.
    #[test]
    fn a_linked_key_file_is_replaced_not_written_through() {
        let scratch = TempDir::new("certs-key-link");
        let certs = scratch.0.join("certs");
        fs::create_dir_all(&certs).unwrap();
        let target = scratch.0.join("precious");
        fs::write(&target, "precious").unwrap();
        std::os::unix::fs::symlink(&target, certs.join("urr.key")).unwrap();
        issue_lab_certs(&certs, "l", &["urr"]).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "precious");
        let key = fs::symlink_metadata(certs.join("urr.key")).unwrap();
        assert!(key.file_type().is_file());
        assert_eq!(key.permissions().mode() & 0o777, 0o600);
    }
}
