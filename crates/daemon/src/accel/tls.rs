//! The daemons' side of the accelerated PEP's TLS: identities read from files, and new ones made
//! (`satpep keygen`). The verification itself (pinned certificates, TLS 1.3 only) is
//! `satpep_proto::accel::tls`, the same code the simulator runs.

use std::path::Path;

pub use satpep_proto::accel::tls::{
    client_config, fingerprint, parse_fingerprint, server_config, Identity, ALPN, SERVER_NAME,
};

/// A new self-signed certificate and key (PEM) for `name`, and the certificate's fingerprint.
pub fn generate(name: &str) -> Result<(String, String, String), String> {
    let c = rcgen::generate_simple_self_signed(vec![name.to_owned()])
        .map_err(|e| format!("certificate: {e}"))?;
    let fp = fingerprint(c.cert.der());
    Ok((c.cert.pem(), c.signing_key.serialize_pem(), fp))
}

/// Read this end's identity from `certificate` and `key` (PEM files); an error names the file.
pub fn load(certificate: &Path, key: &Path) -> Result<Identity, String> {
    let cert = std::fs::read(certificate).map_err(|e| format!("{}: {e}", certificate.display()))?;
    let k = std::fs::read(key).map_err(|e| format!("{}: {e}", key.display()))?;
    Identity::from_pem(&cert, &k).map_err(|e| match e.strip_prefix("key:") {
        Some(why) => format!("{}:{why}", key.display()),
        None => format!("{}: {e}", certificate.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_identities_load_and_fingerprint_as_printed() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key, fp) = generate("t").unwrap();
        std::fs::write(dir.path().join("c.pem"), cert).unwrap();
        std::fs::write(dir.path().join("k.pem"), key).unwrap();
        let id = load(&dir.path().join("c.pem"), &dir.path().join("k.pem")).unwrap();
        assert_eq!(id.fingerprint(), fp);
        std::fs::write(dir.path().join("bad.pem"), "junk").unwrap();
        let err = load(&dir.path().join("c.pem"), &dir.path().join("bad.pem"))
            .err()
            .unwrap();
        assert!(err.contains("bad.pem"), "{err}");
        let err = load(&dir.path().join("none.pem"), &dir.path().join("k.pem"))
            .err()
            .unwrap();
        assert!(err.contains("none.pem"), "{err}");
    }
}
