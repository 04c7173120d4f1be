//! TLS for the UI server (rustls, ring): the certificate chain and private key the user
//! gives as PEM files (`--tls-cert`, `--tls-key`). See docs/security.md.
//!
//! Read as by every ioscope server ([`ioscope_serve::tls`]: bounded regular files, never a
//! FIFO); a CA certificate given as the UI's is refused, saying what to make instead, as
//! an agent refuses it: browsers refuse it as a server's certificate.

use ioscope_serve::tls::{is_a_ca, read_certs, read_key};
use std::path::PathBuf;
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
    let cert_err = |why: String| TlsError::Cert { path: files.cert.clone(), why };
    let certs = read_certs(&files.cert).map_err(cert_err)?;
    if is_a_ca(&certs) {
        return Err(cert_err(CA_AS_UI.into()));
    }
    let key = read_key(&files.key).map_err(|why| TlsError::Key { path: files.key.clone(), why })?;
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

const CA_AS_UI: &str = "this is a CA certificate (basicConstraints CA:TRUE), which browsers and other clients \
    refuse as a server's (CaUsedAsEndEntity); make a CA and, signed by it, a certificate for the UI with \
    CA:FALSE, extendedKeyUsage serverAuth and a subjectAltName naming the addresses the browser uses (the \
    openssl commands are in docs/security.md, \"Certificates\"); give the UI that certificate and its key, and \
    have the browser trust the CA";
