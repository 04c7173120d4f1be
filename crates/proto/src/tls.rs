//! TLS configurations (rustls with ring, ALPN `h2`): the agent's from its certificate and
//! key files, the client's from the certificate or CA it trusts.
//!
//! The agent's certificate must be an end-entity one: a CA certificate (basicConstraints
//! CA:TRUE, what `openssl req -x509` makes by default) is refused by every client
//! (`CaUsedAsEndEntity`), so the agent refuses it when it starts, saying what to make
//! instead (docs/security.md, "Certificates"); a coordinator that meets one (an agent of an
//! older version) says the same rather than `CaUsedAsEndEntity`.
//!
//! The files are read, and a CA certificate told, as by every ioscope server
//! ([`ioscope_serve::tls`]: bounded regular files, never a FIFO).

use crate::ProtoError;
use ioscope_serve::tls::{is_a_ca, read_certs, read_key};
use rustls::pki_types::CertificateDer;
use std::path::Path;
use std::sync::Arc;

const ALPN_H2: &[u8] = b"h2";

/// The agent's TLS configuration from PEM files (certificate chain, private key); errors
/// name the file.
pub fn tls_server_config(cert_pem: &Path, key_pem: &Path) -> Result<Arc<rustls::ServerConfig>, ProtoError> {
    let certs = read_certs(cert_pem).map_err(|why| ProtoError::Cert { path: cert_pem.to_path_buf(), why })?;
    if is_a_ca(&certs) {
        return Err(ProtoError::Cert { path: cert_pem.to_path_buf(), why: CA_AS_AGENT.into() });
    }
    let key = read_key(key_pem).map_err(|why| ProtoError::Key { path: key_pem.to_path_buf(), why })?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| ProtoError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ProtoError::Tls(e.to_string()))?;
    config.alpn_protocols = vec![ALPN_H2.to_vec()];
    Ok(Arc::new(config))
}

/// A client configuration that trusts the certificates in `ca_pem` (a CA, or the agent's
/// own self-signed certificate) and nothing else.
pub(crate) fn client_config(ca_pem: &Path) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in read_certs(ca_pem).map_err(|why| format!("TLS CA file {}: {why}", ca_pem.display()))? {
        roots.add(cert).map_err(|e| format!("TLS CA file {}: not a usable certificate: {e}", ca_pem.display()))?;
    }
    let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(|e| format!("TLS CA file {}: {e}", ca_pem.display()))?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Explained(webpki)))
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN_H2.to_vec()];
    Ok(Arc::new(config))
}

const CA_AS_AGENT: &str = "this is a CA certificate (basicConstraints CA:TRUE), which clients refuse as a \
    server's (CaUsedAsEndEntity); make a CA and, signed by it, a certificate for the agent with \
    CA:FALSE, extendedKeyUsage serverAuth and a subjectAltName naming the agent's addresses \
    (the openssl commands are in docs/security.md, \"Certificates\"); give the agent that \
    certificate and its key, and the coordinator the CA (--tls-ca or `ca`)";

const CA_AT_AGENT: &str = "the agent's certificate is a CA certificate (basicConstraints CA:TRUE), \
    which is refused as a server's (CaUsedAsEndEntity): give the agent a certificate signed by \
    the CA, with CA:FALSE, extendedKeyUsage serverAuth and a subjectAltName naming its addresses \
    (docs/security.md, \"Certificates\")";

/// webpki's verification, unchanged, but for the message when the agent's certificate is a
/// CA's (the certificate every `openssl req -x509` makes): it says what to make instead.
#[derive(Debug)]
struct Explained(Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for Explained {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now).map_err(|e| match &e {
            rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other))
                if matches!(other.0.downcast_ref::<webpki::Error>(), Some(webpki::Error::CaUsedAsEndEntity)) =>
            {
                rustls::Error::Other(rustls::OtherError(Arc::new(std::io::Error::other(CA_AT_AGENT))))
            }
            _ => e,
        })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_ca_certificate_given_to_the_agent_is_refused_saying_what_to_make_instead() {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = params.self_signed(&key).unwrap();
        let (cert_path, key_path) =
            (write(dir.path(), "ca.pem", &ca.pem()), write(dir.path(), "ca.key", &key.serialize_pem()));
        let err = tls_server_config(&cert_path, &key_path).unwrap_err().to_string();
        assert!(err.contains("ca.pem") && err.contains("this is a CA certificate (basicConstraints CA:TRUE)"), "{err}");
        assert!(err.contains("CA:FALSE") && err.contains("docs/security.md") && err.contains("--tls-ca"), "{err}");

        // The certificate the CA signs for the agent is taken, alone or followed by the CA.
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let mut leaf = rcgen::CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let leaf = leaf.signed_by(&leaf_key, &ca, &key).unwrap();
        let leaf_key_path = write(dir.path(), "agent.key", &leaf_key.serialize_pem());
        for chain in [leaf.pem(), format!("{}{}", leaf.pem(), ca.pem())] {
            let leaf_path = write(dir.path(), "agent.pem", &chain);
            tls_server_config(&leaf_path, &leaf_key_path).unwrap();
        }
    }

    #[tokio::test]
    async fn a_coordinator_that_meets_an_agent_with_a_ca_certificate_says_what_to_make_instead() {
        let dir = tempfile::tempdir().unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca = params.self_signed(&key).unwrap();
        let ca_path = write(dir.path(), "ca.pem", &ca.pem());
        // An agent of an older version, which took the CA certificate as its own.
        let der = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
        let mut server = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![ca.der().clone()], der)
            .unwrap();
        server.alpn_protocols = vec![ALPN_H2.to_vec()];
        let (near, far) = tokio::io::duplex(1 << 16);
        let agent = tokio::spawn(async move { tokio_rustls::TlsAcceptor::from(Arc::new(server)).accept(far).await });
        let connector = tokio_rustls::TlsConnector::from(client_config(&ca_path).unwrap());
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let err = connector.connect(name, near).await.expect_err("refused").to_string();
        assert!(err.contains("the agent's certificate is a CA certificate (basicConstraints CA:TRUE)"), "{err}");
        assert!(err.contains("CA:FALSE") && err.contains("docs/security.md"), "{err}");
        let _ = agent.await;
    }
}
