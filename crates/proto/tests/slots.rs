//! Strangers cannot keep the coordinator out of an agent: connections that finished the TLS
//! handshake (or opened h2c) and say nothing, or trickle the HTTP/2 preface, are closed when
//! the coordinator needs their slot, and in any case after the first-call time.

use axum::routing::post;
use axum::{Json, Router};
use ioscope_proto::rustls;
use ioscope_proto::{
    authorized, serve_tcp, serve_tcp_within, tls_server_config, Client, ClientTls, Token, MAX_TCP_CONNECTIONS,
    TCP_LIMITS,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Long enough never to be reached by a working test; it only turns a hang into a failure.
const GUARD: Duration = Duration::from_secs(60);
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

fn token() -> Token {
    Token::from_line("0123456789abcdef0123456789abcdef").unwrap()
}

fn app() -> Router {
    authorized(Router::new().route("/v1/echo", post(|Json(n): Json<u32>| async move { Json(n) })), token())
}

/// A self-signed end-entity certificate for 127.0.0.1 and localhost, as PEM files.
fn certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let (cert_path, key_path) = (dir.join("agent.pem"), dir.join("agent.key"));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.key_pair.serialize_pem()).unwrap();
    (cert_path, key_path)
}

/// An agent on a loopback port within `limits` (the agent's own with [`serve_tcp`]), serving
/// until the test ends.
async fn agent(tls: Option<Arc<rustls::ServerConfig>>, limits: Option<ioscope_serve::Limits>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    match limits {
        None => tokio::spawn(serve_tcp(listener, tls, app(), std::future::pending())),
        Some(limits) => tokio::spawn(serve_tcp_within(listener, tls, app(), limits, std::future::pending())),
    };
    addr
}

/// A TLS client config that trusts `cert` (ALPN h2, as the coordinator's).
fn trusting(cert: &Path) -> tokio_rustls::TlsConnector {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(cert).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// A stranger that finished the TLS handshake and says nothing.
async fn silent_tls(addr: &str, connector: &tokio_rustls::TlsConnector) -> tokio_rustls::client::TlsStream<TcpStream> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    tokio::time::timeout(GUARD, connector.connect(name, tcp)).await.unwrap().unwrap()
}

/// Sends the HTTP/2 preface a byte at a time, one each `every`, until the agent closes.
fn trickle_preface<S: AsyncWrite + Unpin + Send + 'static>(
    mut stream: S,
    every: Duration,
) -> tokio::task::JoinHandle<S> {
    tokio::spawn(async move {
        for b in PREFACE.iter().cycle().take(PREFACE.len() * 100) {
            if stream.write_all(&[*b]).await.is_err() || stream.flush().await.is_err() {
                break;
            }
            tokio::time::sleep(every).await;
        }
        stream
    })
}

/// Waits until the agent closes the stream (EOF or an error), reading what it sends.
async fn closed<S: AsyncRead + Unpin>(stream: &mut S) {
    tokio::time::timeout(GUARD, async {
        let mut buf = [0u8; 1024];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    })
    .await
    .expect("the agent closes a stranger's connection");
}

async fn coordinator_call(addr: &str, tls: &ClientTls) -> u32 {
    let client = tokio::time::timeout(GUARD, Client::connect(addr, tls, &token(), GUARD))
        .await
        .expect("the coordinator connects")
        .expect("the coordinator connects");
    client.call::<_, u32>("/v1/echo", &7, GUARD).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_that_finished_the_tls_handshake_do_not_keep_the_coordinator_out() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let addr = agent(Some(tls_server_config(&cert, &key).unwrap()), None).await;
    let connector = trusting(&cert);
    let mut strangers = Vec::new();
    for _ in 0..MAX_TCP_CONNECTIONS - 1 {
        strangers.push(silent_tls(&addr, &connector).await);
    }
    let slow = trickle_preface(silent_tls(&addr, &connector).await, Duration::from_secs(1));
    // Every slot is a stranger's, for far less than the first-call time: the coordinator
    // gets in all the same.
    assert_eq!(coordinator_call(&addr, &ClientTls::Ca(cert.clone())).await, 7);
    assert_eq!(coordinator_call(&addr, &ClientTls::CaNamed { ca: cert, server_name: "localhost".into() }).await, 7);
    closed(&mut strangers[0]).await;
    slow.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_h2c_connections_and_a_slow_preface_do_not_keep_the_coordinator_out() {
    let addr = agent(None, None).await;
    let mut strangers = Vec::new();
    for _ in 0..MAX_TCP_CONNECTIONS - 1 {
        strangers.push(TcpStream::connect(&addr).await.unwrap());
    }
    let slow = trickle_preface(TcpStream::connect(&addr).await.unwrap(), Duration::from_secs(1));
    assert_eq!(coordinator_call(&addr, &ClientTls::None).await, 7);
    closed(&mut strangers[0]).await;
    slow.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_without_a_call_is_closed_after_the_first_call_time_but_the_coordinators_stays() {
    let limits = ioscope_serve::Limits { first_request_time: Duration::from_millis(300), ..TCP_LIMITS };
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let tls_addr = agent(Some(tls_server_config(&cert, &key).unwrap()), Some(limits)).await;
    let h2c_addr = agent(None, Some(limits)).await;
    let connector = trusting(&cert);
    // Silent after the handshake, a 1 B/s preface over TLS and over h2c, a silent h2c peer.
    let mut silent = silent_tls(&tls_addr, &connector).await;
    let slow_tls = trickle_preface(silent_tls(&tls_addr, &connector).await, Duration::from_millis(100));
    let slow_h2c = trickle_preface(TcpStream::connect(&h2c_addr).await.unwrap(), Duration::from_millis(100));
    let mut silent_h2c = TcpStream::connect(&h2c_addr).await.unwrap();
    closed(&mut silent).await;
    closed(&mut silent_h2c).await;
    for slow in [slow_tls.await.map(|_| ()), slow_h2c.await.map(|_| ())] {
        // The trickle ended: the agent closed the connection long before 100 passes of it.
        slow.unwrap();
    }
    // A call with the token admits the coordinator's connection: idle for longer than the
    // first-call time, it stays.
    let client = Client::connect(&h2c_addr, &ClientTls::None, &token(), GUARD).await.unwrap();
    assert_eq!(client.call::<_, u32>("/v1/echo", &1, GUARD).await.unwrap(), 1);
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(client.call::<_, u32>("/v1/echo", &2, GUARD).await.unwrap(), 2);
}
