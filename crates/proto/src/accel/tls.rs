//! Who may talk to whom: each end has a self-signed certificate, and trusts exactly the
//! certificates its configuration pins (`sha256:` of the DER). No certificate authority, no
//! name check, no way to skip verification: the TLS 1.3 handshake still proves that the peer
//! holds the pinned certificate's private key (its CertificateVerify signature is checked with
//! the provider's algorithms), so a third host can neither connect nor impersonate an end.
//!
//! The daemons read the certificates from files; the simulator and the emulator use
//! [`SIMULATION`]'s built-in pair. The same TLS and verification run in all three.

use std::sync::Arc;

use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};
use sha2::{Digest, Sha256};

/// The ALPN of the accelerated PEP's connection.
pub const ALPN: &[u8] = b"satpep-accel/1";
/// The server name terminals send (no check depends on it).
pub const SERVER_NAME: &str = "satpep-gateway";

/// `sha256:<64 hex digits>` as the 32 bytes it names.
pub fn parse_fingerprint(s: &str) -> Option<[u8; 32]> {
    let hex = s.strip_prefix("sha256:")?;
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The fingerprint of a certificate, as the configuration writes it.
pub fn fingerprint(cert: &[u8]) -> String {
    let d = Sha256::digest(cert);
    let mut s = String::from("sha256:");
    for b in d {
        s += &format!("{b:02x}");
    }
    s
}

/// This end's identity: its certificate chain and private key.
pub struct Identity {
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

impl Identity {
    /// An identity from PEM text: the certificate(s), then the private key. The error says
    /// which of the two is wrong.
    pub fn from_pem(certificate: &[u8], key: &[u8]) -> Result<Self, String> {
        let chain = CertificateDer::pem_slice_iter(certificate)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("certificate: {e}"))?;
        if chain.is_empty() {
            return Err("certificate: no certificate in it".into());
        }
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| format!("key: {e}"))?;
        Ok(Self { chain, key })
    }

    /// The fingerprint of this end's certificate (what the other end pins).
    pub fn fingerprint(&self) -> String {
        fingerprint(&self.chain[0])
    }
}

/// The simulator's and emulator's identities: a fixed Ed25519 pair (made once with
/// `openssl req -x509 -newkey ed25519`), public and therefore worthless outside a simulation.
/// Ed25519 because its signatures have one length: every handshake then has the same packet
/// sizes, so a simulated run stays the same run whatever random numbers rustls draws.
pub struct Simulation {
    /// The gateway's certificate and key (PEM).
    pub gateway: (&'static str, &'static str),
    /// The terminals' certificate and key (PEM; all simulated terminals share it).
    pub terminal: (&'static str, &'static str),
}

/// See [`Simulation`].
pub const SIMULATION: Simulation = Simulation {
    gateway: (
        include_str!("sim_keys/gateway.crt"),
        include_str!("sim_keys/gateway.key"),
    ),
    terminal: (
        include_str!("sim_keys/terminal.crt"),
        include_str!("sim_keys/terminal.key"),
    ),
};

/// rustls with *ring*: its key exchange lacks the post-quantum hybrid (hence the deprecation
/// notice), but it builds from crates.io alone, where aws-lc-rs needs cmake and a C toolchain
/// at build time; both ends are ours, so the exchange is X25519 either way.
#[allow(deprecated)]
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The terminal's side: it presents `id` and accepts only a gateway whose certificate is one of
/// `pins`.
pub fn client_config(id: Identity, pins: &[[u8; 32]]) -> Result<QuicClientConfig, String> {
    let verifier = Arc::new(Pinned {
        pins: pins.to_vec(),
        provider: provider(),
    });
    let mut c = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_auth_cert(id.chain, id.key)
        .map_err(|e| format!("client certificate: {e}"))?;
    c.alpn_protocols = vec![ALPN.to_vec()];
    QuicClientConfig::try_from(c).map_err(|e| e.to_string())
}

/// The gateway's side: it presents `id` and accepts only terminals whose certificate is one of
/// `pins` (a client certificate is mandatory).
pub fn server_config(id: Identity, pins: &[[u8; 32]]) -> Result<QuicServerConfig, String> {
    let verifier = Arc::new(Pinned {
        pins: pins.to_vec(),
        provider: provider(),
    });
    let mut c = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_single_cert(id.chain, id.key)
        .map_err(|e| format!("certificate: {e}"))?;
    c.alpn_protocols = vec![ALPN.to_vec()];
    QuicServerConfig::try_from(c).map_err(|e| e.to_string())
}

/// Trusts exactly the pinned certificates, and checks the handshake's signatures as usual.
#[derive(Debug)]
struct Pinned {
    pins: Vec<[u8; 32]>,
    provider: Arc<CryptoProvider>,
}

impl Pinned {
    fn check(&self, end_entity: &CertificateDer<'_>) -> Result<(), rustls::Error> {
        let d: [u8; 32] = Sha256::digest(end_entity.as_ref()).into();
        if self.pins.contains(&d) {
            Ok(())
        } else {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn tls12(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn tls13(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.check(end_entity)
            .map(|()| ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.tls12(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.tls13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes()
    }
}

impl ClientCertVerifier for Pinned {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.check(end_entity)
            .map(|()| ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.tls12(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.tls13(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_parse_only_in_their_written_form() {
        let (pem, _) = SIMULATION.gateway;
        let der = CertificateDer::from_pem_slice(pem.as_bytes()).unwrap();
        let fp = fingerprint(&der);
        assert_eq!(fp.len(), 7 + 64);
        let bytes = parse_fingerprint(&fp).unwrap();
        assert_eq!(bytes, <[u8; 32]>::from(Sha256::digest(der.as_ref())));
        assert!(parse_fingerprint(&fp[..70]).is_none());
        assert!(parse_fingerprint(&fp.replace("sha256:", "sha1:")).is_none());
        assert!(parse_fingerprint(&format!("{}zz", &fp[..69])).is_none());
        assert!(parse_fingerprint("sha256:é").is_none());
    }

    #[test]
    fn the_simulation_identities_load_and_differ() {
        let (gc, gk) = SIMULATION.gateway;
        let (tc, tk) = SIMULATION.terminal;
        let g = Identity::from_pem(gc.as_bytes(), gk.as_bytes()).unwrap();
        let t = Identity::from_pem(tc.as_bytes(), tk.as_bytes()).unwrap();
        assert_ne!(g.fingerprint(), t.fingerprint());
        let pin = parse_fingerprint(&g.fingerprint()).unwrap();
        assert!(client_config(t, &[pin]).is_ok());
        let err = Identity::from_pem(b"", gk.as_bytes()).err().unwrap();
        assert!(err.starts_with("certificate:"), "{err}");
        let err = Identity::from_pem(gc.as_bytes(), b"junk").err().unwrap();
        assert!(err.starts_with("key:"), "{err}");
    }
}
