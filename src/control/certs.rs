//! Issuing a lab's certificates: one CA per lab and one certificate per node, so that only the
//! lab's own processes can talk on its control plane. The CA's key is never written: nothing
//! needs to sign after `cdnlab up`, and a key that does not exist cannot leak.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Issues a fresh CA for `lab` and one certificate per node (its SAN is the node name, good for
/// both server and client authentication), written under `dir` (mode 0700) as PEM: `ca.pem`,
/// `NODE.pem`, `NODE.key` (mode 0600). Re-issuing replaces every file, and certificates from an
/// earlier CA stop being accepted.
pub fn issue_lab_certs(dir: &Path, lab: &str, nodes: &[&str]) -> io::Result<()> {
    issue(dir, lab, nodes, |_| dir.to_path_buf())
}

/// `issue_lab_certs` with a directory per node: `dir/NODE/` (mode 0700) holds `ca.pem`,
/// `NODE.pem` and `NODE.key`, so a node given only its own directory (a container mounting
/// one volume) holds no other node's key.
pub fn issue_lab_certs_per_node(dir: &Path, lab: &str, nodes: &[&str]) -> io::Result<()> {
    issue(dir, lab, nodes, |node| dir.join(node))
}

fn issue(
    dir: &Path,
    lab: &str,
    nodes: &[&str],
    node_dir: impl Fn(&str) -> PathBuf,
) -> io::Result<()> {
    for node in nodes {
        check_node_name(node)?;
    }
    private_dir(dir)?;

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
        let dir = node_dir(node);
        private_dir(&dir)?;
        write_pem(&dir.join("ca.pem"), &ca_cert.pem(), 0o644)?;
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
        write_pem(&dir.join(format!("{node}.pem")), &cert.pem(), 0o644)?;
        write_pem(
            &dir.join(format!("{node}.key")),
            &key.serialize_pem(),
            0o600,
        )?;
    }
    Ok(())
}

/// Node names become file names and certificate DNS names, so they are held to a hostname
/// label (the topology's own rule), which keeps them from escaping `dir` too.
fn check_node_name(node: &str) -> io::Result<()> {
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

/// Creates `dir` if needed, readable by its owner only: the keys in it are the nodes' identities.
/// A symbolic link there is refused, not followed: the directory may have been handed in
/// (`--certs DIR`), and root must not make private, or write keys into, whatever it points at.
fn private_dir(dir: &Path) -> io::Result<()> {
    let context =
        |e: io::Error| io::Error::new(e.kind(), format!("creating {}: {e}", dir.display()));
    if fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is a symbolic link: give the directory itself for the lab's keys",
                dir.display()
            ),
        ));
    }
    fs::create_dir_all(dir).map_err(context)?;
    // Opened without following a link (one swapped in since the check fails here), and made
    // private through the handle, so the mode goes to this directory and nothing else.
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(dir)
        .map_err(context)?
        .set_permissions(fs::Permissions::from_mode(0o700))
        .map_err(context)
}

/// Writes a fresh file with `mode`: removing any old one first means a key file never keeps
/// looser permissions from an earlier life.
fn write_pem(path: &Path, pem: &str, mode: u32) -> io::Result<()> {
    let context =
        |e: io::Error| io::Error::new(e.kind(), format!("writing {}: {e}", path.display()));
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(context(e)),
        _ => {}
    }
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(context)?;
    file.write_all(pem.as_bytes()).map_err(context)
}

fn rcgen_error(what: &str, e: rcgen::Error) -> io::Error {
    io::Error::other(format!("issuing {what}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TempDir;

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
}
