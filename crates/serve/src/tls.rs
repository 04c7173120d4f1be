//! The certificate and key files of a server that speaks TLS (the UI, an agent), and the
//! one check that its certificate can serve: every server reads them so.
//!
//! The files are PEM, read through [`ioscope_readfile`]: regular files only (a FIFO is
//! refused, never waited on), at most [`MAX_PEM_BYTES`] each. A certificate chain whose
//! first certificate is a CA's (basicConstraints CA:TRUE, what `openssl req -x509` makes)
//! is what every client refuses as a server's (`CaUsedAsEndEntity`): [`is_a_ca`] tells
//! it, so the server refuses it when it starts, saying what to make instead.

use std::path::Path;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The largest certificate, chain or key file read (a chain of a few certificates is a
/// few KiB).
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// The certificates of the PEM file at `path`, in order; else why not (the caller names
/// the file).
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem).collect::<Result<Vec<_>, _>>().map_err(|e| pem_reason(&e))?;
    if certs.is_empty() {
        return Err("no CERTIFICATE block found".into());
    }
    Ok(certs)
}

/// The private key of the PEM file at `path` (PKCS#8, PKCS#1 or SEC1); else why not.
pub fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_slice(&read(path)?).map_err(|e| pem_reason(&e))
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    ioscope_readfile::read(path, MAX_PEM_BYTES).map_err(|e| match e {
        ioscope_readfile::FileError::Io(io) => io.to_string(),
        other => other.to_string(),
    })
}

fn pem_reason(e: &rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => io.to_string(),
        rustls::pki_types::pem::Error::NoItemsFound => "no matching PEM block found".into(),
        other => format!("not valid PEM ({other:?})"),
    }
}

/// Whether the first certificate of the chain is a CA's: webpki, which rustls clients
/// use, checks its basic constraints before anything else of the chain, so verifying it
/// against itself as the only anchor fails with `CaUsedAsEndEntity` exactly then.
pub fn is_a_ca(chain: &[CertificateDer<'static>]) -> bool {
    let Some(leaf) = chain.first() else { return false };
    let Ok(end_entity) = webpki::EndEntityCert::try_from(leaf) else { return false };
    let Ok(anchor) = webpki::anchor_from_trusted_cert(leaf) else { return false };
    let anchors = [anchor];
    let verified = end_entity.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &anchors,
        &chain[1..],
        rustls::pki_types::UnixTime::now(),
        webpki::KeyUsage::server_auth(),
        None,
        None,
    );
    matches!(verified, Err(webpki::Error::CaUsedAsEndEntity))
}
