//! The HTTP stack as a browser meets it: connections kept alive, answers compressed when
//! asked, live updates as a stream of events, and HTTPS with the user's certificate.

use crate::api::Api;
use crate::server::{Options, Server};
use crate::tests::write_results;
use crate::tls::TlsFiles;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

fn served() -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_results(dir.path());
    let server = Server::start("127.0.0.1:0".parse().unwrap(), Api::new(&[path])).unwrap();
    (dir, server)
}

/// Reads one answer with a Content-Length from `r`: (head, body).
fn read_answer(r: &mut impl BufRead) -> (String, Vec<u8>) {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        assert!(r.read_line(&mut line).unwrap() > 0, "the connection closed before the answer: {head}");
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Content-Length: {head}"));
    let mut body = vec![0; length];
    r.read_exact(&mut body).unwrap();
    (head, body)
}

#[test]
fn one_connection_carries_several_requests_and_large_answers_are_gzipped() {
    let (_d, server) = served();
    let addr = server.addr;
    let conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut plain_size = 0;
    for target in ["/api/v1/runs", "/api/v1/runs/0/heatmap?stat=latency", "/assets/app.js"] {
        write!(&conn, "GET {target} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        let (head, body) = read_answer(&mut reader);
        assert!(head.starts_with("HTTP/1.1 200"), "{target}: {head}");
        assert!(!head.contains("Connection: close"), "{target}: the connection is kept: {head}");
        plain_size = body.len();
    }
    // The same file, compressed: the answer is marked gzip and much smaller.
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(conn, "GET /assets/app.js HTTP/1.1\r\nHost: {addr}\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw).unwrap();
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    assert!(head.contains("content-encoding: gzip"), "{head}");
    assert!(raw.len() - end < plain_size / 2, "{} bytes compressed, {plain_size} plain", raw.len() - end);
    server.stop();
}

#[test]
fn a_finished_run_streams_its_entry_once_then_the_event_stream_ends() {
    let (_d, server) = served();
    let addr = server.addr;
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(conn, "GET /api/v1/runs/0/events HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = String::new();
    conn.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.to_ascii_lowercase().contains("content-type: text/event-stream"), "{raw}");
    let data: Vec<&str> = raw.lines().filter_map(|l| l.strip_prefix("data: ")).collect();
    assert_eq!(data.len(), 1, "{raw}");
    let entry: serde_json::Value = serde_json::from_str(data[0]).unwrap();
    assert_eq!(
        (entry["status"].as_str(), entry["live"].as_bool(), entry["last_second"].as_u64()),
        (Some("completed"), Some(false), Some(4))
    );

    let mut conn = TcpStream::connect(addr).unwrap();
    write!(conn, "GET /api/v1/runs/7/events HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = String::new();
    conn.read_to_string(&mut raw).unwrap();
    assert!(raw.starts_with("HTTP/1.1 404") && raw.contains(r#"no run \"7\""#), "{raw}");
    server.stop();
}

#[test]
fn with_a_certificate_the_server_speaks_https_and_refuses_plain_http() {
    use tokio_rustls::rustls;
    let dir = tempfile::tempdir().unwrap();
    let results = write_results(dir.path());
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let files = TlsFiles { cert: dir.path().join("cert.pem"), key: dir.path().join("key.pem") };
    std::fs::write(&files.cert, cert.cert.pem()).unwrap();
    std::fs::write(&files.key, cert.key_pair.serialize_pem()).unwrap();
    let options = Options { tls: Some(files.clone()), ..Options::default() };
    let server = Server::start_opts("127.0.0.1:0".parse().unwrap(), Api::new(&[results]), options).unwrap();
    assert!(server.url().starts_with("https://127.0.0.1:"), "{}", server.url());
    let port = server.addr.port();

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut client = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut sock = TcpStream::connect(("127.0.0.1", port)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut tls = rustls::Stream::new(&mut client, &mut sock);
    write!(tls, "GET /api/v1/runs HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = tls.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("\"api_version\":1"), "{answer}");

    // Plain HTTP to the HTTPS port gets no answer.
    let mut plain = TcpStream::connect(("127.0.0.1", port)).unwrap();
    plain.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    // The server may drop the connection before the request is written (a broken pipe).
    let _ = write!(plain, "GET /api/v1/runs HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n");
    let mut raw = Vec::new();
    let _ = plain.read_to_end(&mut raw);
    assert!(!String::from_utf8_lossy(&raw).contains("api_version"), "answered in plain text");
    server.stop();

    // A missing or wrong file is named with its flag before anything listens.
    let bad = TlsFiles { cert: dir.path().join("missing.pem"), key: files.key.clone() };
    let err = Server::start_opts(
        "127.0.0.1:0".parse().unwrap(),
        Api::new(&[]),
        Options { tls: Some(bad), ..Options::default() },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.starts_with("--tls-cert ") && err.contains("missing.pem"), "{err}");
    let swapped = TlsFiles { cert: files.key.clone(), key: files.cert.clone() };
    let err = Server::start_opts(
        "127.0.0.1:0".parse().unwrap(),
        Api::new(&[]),
        Options { tls: Some(swapped), ..Options::default() },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(err.starts_with("--tls-cert "), "{err}");
}

/// A CA certificate (what `openssl req -x509` makes) is refused as the UI's own, before
/// anything listens, saying what to make instead (as an agent refuses it); a FIFO given as
/// the certificate or the key is refused at once, never waited on.
#[test]
fn the_ui_refuses_a_ca_certificate_as_its_own_saying_what_to_make_instead() {
    let dir = tempfile::tempdir().unwrap();
    let start = |files: TlsFiles| {
        Server::start_opts(
            "127.0.0.1:0".parse().unwrap(),
            Api::new(&[]),
            Options { tls: Some(files), ..Options::default() },
        )
        .err()
        .expect("refused")
        .to_string()
    };
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = params.self_signed(&key).unwrap();
    let files = TlsFiles { cert: dir.path().join("ca.pem"), key: dir.path().join("ca.key") };
    std::fs::write(&files.cert, ca.pem()).unwrap();
    std::fs::write(&files.key, key.serialize_pem()).unwrap();
    let err = start(files.clone());
    assert!(err.starts_with("--tls-cert ") && err.contains("ca.pem"), "{err}");
    assert!(err.contains("this is a CA certificate (basicConstraints CA:TRUE)"), "{err}");
    assert!(err.contains("CA:FALSE") && err.contains("docs/security.md") && err.contains("trust the CA"), "{err}");

    // The certificate the CA signs for the UI is taken.
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let mut leaf = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    leaf.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let leaf = leaf.signed_by(&leaf_key, &ca, &key).unwrap();
    let signed = TlsFiles { cert: dir.path().join("ui.pem"), key: dir.path().join("ui.key") };
    std::fs::write(&signed.cert, leaf.pem()).unwrap();
    std::fs::write(&signed.key, leaf_key.serialize_pem()).unwrap();
    let options = Options { tls: Some(signed.clone()), ..Options::default() };
    Server::start_opts("127.0.0.1:0".parse().unwrap(), Api::new(&[]), options).unwrap().stop();

    let fifo = dir.path().join("fifo.pem");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let err = start(TlsFiles { cert: fifo.clone(), key: signed.key.clone() });
    assert!(err.starts_with("--tls-cert ") && err.contains("not a regular file (a FIFO)"), "{err}");
    let err = start(TlsFiles { cert: signed.cert.clone(), key: fifo });
    assert!(err.starts_with("--tls-key ") && err.contains("not a regular file (a FIFO)"), "{err}");
}
