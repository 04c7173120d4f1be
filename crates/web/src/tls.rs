//! TLS for the UI server (rustls, ring): the certificate chain and private key the user
//! gives as PEM files (`--tls-cert`, `--tls-key`). See docs/security.md.

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// The PEM files of a server certificate (chain first: the server's own, then any
/// intermediates) and its private key.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("--tls-cert {}: {why} (expected a PEM file with the server certificate first, then any intermediates)", .path.display())]
    Cert { path: PathBuf, why: String },
    #[error("--tls-key {}: {why} (expected a PEM file with the certificate's private key: PKCS#8, PKCS#1 or SEC1)", .path.display())]
    Key { path: PathBuf, why: String },
    #[error("--tls-cert and --tls-key do not make a usable certificate: {0}")]
    Config(rustls::Error),
}

/// Reads the files and makes the acceptor (HTTP/1.1 only, TLS 1.2 and 1.3).
pub fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, TlsError> {
    let certs = read_certs(&files.cert)?;
    let key = PrivateKeyDer::from_pem_file(&files.key)
        .map_err(|e| TlsError::Key { path: files.key.clone(), why: pem_reason(&e) })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Config)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(TlsError::Config)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let err = |why: String| TlsError::Cert { path: path.to_path_buf(), why };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| err(pem_reason(&e)))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(pem_reason(&e)))?;
    if certs.is_empty() {
        return Err(err("no CERTIFICATE block found".into()));
    }
    Ok(certs)
}

fn pem_reason(e: &rustls_pki_types::pem::Error) -> String {
    match e {
        rustls_pki_types::pem::Error::Io(io) => io.to_string(),
        rustls_pki_types::pem::Error::NoItemsFound => "no matching PEM block found".into(),
        other => format!("not valid PEM ({other:?})"),
    }
}
