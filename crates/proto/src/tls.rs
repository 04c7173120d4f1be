//! TLS configurations (rustls with ring, ALPN `h2`): the agent's from its certificate and
//! key files, the client's from the certificate or CA it trusts.

use crate::ProtoError;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

const ALPN_H2: &[u8] = b"h2";

/// The agent's TLS configuration from PEM files (certificate chain, private key); errors
/// name the file.
pub fn tls_server_config(cert_pem: &Path, key_pem: &Path) -> Result<Arc<rustls::ServerConfig>, ProtoError> {
    let certs = read_certs(cert_pem).map_err(|why| ProtoError::Cert { path: cert_pem.to_path_buf(), why })?;
    let key = PrivateKeyDer::from_pem_file(key_pem)
        .map_err(|e| ProtoError::Key { path: key_pem.to_path_buf(), why: pem_reason(&e) })?;
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
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![ALPN_H2.to_vec()];
    Ok(Arc::new(config))
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_reason(&e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_reason(&e))?;
    if certs.is_empty() {
        return Err("no CERTIFICATE block found".into());
    }
    Ok(certs)
}

fn pem_reason(e: &rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => io.to_string(),
        rustls::pki_types::pem::Error::NoItemsFound => "no matching PEM block found".into(),
        other => format!("not valid PEM ({other:?})"),
    }
}
