//! The transport as the coordinator and the agent see it: calls answered, refused tokens,
//! TLS, concurrency, hostile peers and limits. Over tokio duplex pairs and loopback TCP.

use axum::routing::post;
use axum::{Json, Router};
use ioscope_proto::{
    authorized, serve_stream, serve_tcp, tls_server_config, ApiError, CallError, Client, ClientTls, ProtoError, Token,
    MAX_REQUEST_BYTES,
};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Long enough never to be reached by a working test; it only turns a hang into a failure.
const GUARD: Duration = Duration::from_secs(20);

fn token() -> Token {
    Token::from_line("0123456789abcdef0123456789abcdef").unwrap()
}

/// Handlers that count how often they ran.
fn app(runs: Arc<AtomicUsize>) -> Router {
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let counted = move |runs: Arc<AtomicUsize>| {
        move |Json(v): Json<Value>| async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Json(v)
        }
    };
    Router::new()
        .route("/v1/echo", post(counted(Arc::clone(&runs))))
        .route("/v1/refuse", post(|| async { Err::<Json<Value>, _>(ApiError::conflict("a run is already going")) }))
        .route("/v1/typed", post(|Json(v): Json<std::collections::BTreeMap<String, u32>>| async move { Json(v.len()) }))
        .route(
            // Answers only when two calls are in it at once.
            "/v1/meet",
            post(move |Json(n): Json<u32>| {
                let barrier = Arc::clone(&barrier);
                async move {
                    barrier.wait().await;
                    Json(n * 2)
                }
            }),
        )
}

/// A client and an agent joined by an in-memory byte stream.
fn serve_pair(
    agent_token: Token,
    runs: Arc<AtomicUsize>,
) -> (tokio::io::DuplexStream, tokio::task::JoinHandle<Result<(), ProtoError>>) {
    let (near, far) = tokio::io::duplex(1 << 20);
    let agent = tokio::spawn(serve_stream(far, authorized(app(runs), agent_token)));
    (near, agent)
}

async fn pair(
    client_token: &Token,
    agent_token: Token,
) -> (Client, Arc<AtomicUsize>, tokio::task::JoinHandle<Result<(), ProtoError>>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let (near, agent) = serve_pair(agent_token, Arc::clone(&runs));
    let client = Client::over_stream(near, client_token).await.unwrap();
    (client, runs, agent)
}

#[tokio::test]
async fn a_call_with_the_right_token_is_answered() {
    let (client, runs, _agent) = pair(&token(), token()).await;
    let answer: Value = client.call("/v1/echo", &json!({"host": 3, "name": "h3"}), GUARD).await.unwrap();
    assert_eq!(answer, json!({"host": 3, "name": "h3"}));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(!client.is_closed());
}

#[tokio::test]
async fn a_wrong_token_is_refused_with_401_and_the_handler_never_runs() {
    let wrong = Token::from_line("fedcba9876543210fedcba9876543210").unwrap();
    let (client, runs, _agent) = pair(&wrong, token()).await;
    let err = client.call::<_, Value>("/v1/echo", &json!(1), GUARD).await.unwrap_err();
    assert!(matches!(err, CallError::Unauthorized), "{err:?}");
    assert_eq!(err.to_string(), "the agent refused the token (401): is it the agent's --token-file?");
    // A path that does not exist says nothing more to a caller without the token.
    let err = client.call::<_, Value>("/nothing/here", &json!(1), GUARD).await.unwrap_err();
    assert!(matches!(err, CallError::Unauthorized), "{err:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_call_without_a_token_is_refused_with_401_and_the_handler_never_runs() {
    use http_body_util::{BodyExt, Full};
    let runs = Arc::new(AtomicUsize::new(0));
    let (near, _agent) = serve_pair(token(), Arc::clone(&runs));
    let (mut sender, conn) = hyper::client::conn::http2::handshake::<_, _, Full<bytes::Bytes>>(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(near),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    for authorization in
        [None, Some("Basic dXNlcjpwYXNz"), Some("Bearer "), Some("Bearer 0123456789abcdef0123456789abcdeX")]
    {
        let mut request = hyper::Request::post("http://agent/v1/echo").header("content-type", "application/json");
        if let Some(a) = authorization {
            request = request.header("authorization", a);
        }
        let answer = sender.send_request(request.body(Full::from("{}")).unwrap()).await.unwrap();
        assert_eq!(answer.status(), 401, "{authorization:?}");
        assert_eq!(answer.headers()["www-authenticate"], "Bearer");
        let body: Value = serde_json::from_slice(&answer.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert!(body["error"].as_str().unwrap().contains("token"), "{body}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_refusal_carries_the_handlers_status_and_message() {
    let (client, _, _agent) = pair(&token(), token()).await;
    let err = client.call::<_, Value>("/v1/refuse", &json!({}), GUARD).await.unwrap_err();
    assert!(
        matches!(&err, CallError::Refused { status: 409, message } if message == "a run is already going"),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "the agent refused the call (409): a run is already going");
    // A body the handler cannot decode: refused with axum's reason, the connection goes on.
    let err = client.call::<_, Value>("/v1/typed", &json!({"a": "not a number"}), GUARD).await.unwrap_err();
    assert!(matches!(&err, CallError::Refused { status: 422, message } if message.contains("invalid type")), "{err:?}");
    // An answer that is not the JSON the caller expects.
    let err = client.call::<_, Vec<String>>("/v1/echo", &json!({"a": 1}), GUARD).await.unwrap_err();
    assert!(matches!(&err, CallError::BadAnswer(m) if m.contains("/v1/echo")), "{err:?}");
    let answer: usize = client.call("/v1/typed", &json!({"a": 1, "b": 2}), GUARD).await.unwrap();
    assert_eq!(answer, 2);
}

#[tokio::test]
async fn calls_on_one_client_run_concurrently() {
    let (client, _, _agent) = pair(&token(), token()).await;
    // /v1/meet answers only when both calls are inside it at the same time.
    let other = client.clone();
    let (a, b) =
        tokio::join!(client.call::<_, u32>("/v1/meet", &1, GUARD), other.call::<_, u32>("/v1/meet", &2, GUARD));
    assert_eq!((a.unwrap(), b.unwrap()), (2, 4));
}

#[tokio::test]
async fn a_call_that_gets_no_answer_in_time_is_a_timeout_and_the_connection_goes_on() {
    let (client, _, _agent) = pair(&token(), token()).await;
    // Alone in /v1/meet: never answered.
    let err = client.call::<_, u32>("/v1/meet", &1, Duration::from_millis(100)).await.unwrap_err();
    assert!(matches!(err, CallError::Timeout), "{err:?}");
    let answer: u32 = client.call("/v1/echo", &7, GUARD).await.unwrap();
    assert_eq!(answer, 7);
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_with_413_before_the_handler() {
    let (client, runs, _agent) = pair(&token(), token()).await;
    // Raw: serializing a 64 MiB string in a debug build takes seconds.
    let huge = serde_json::value::RawValue::from_string(format!("\"{}\"", "x".repeat(MAX_REQUEST_BYTES))).unwrap();
    let err = client.call::<_, Value>("/v1/echo", &huge, GUARD).await.unwrap_err();
    assert!(matches!(&err, CallError::Refused { status: 413, message } if message.contains("64 MiB")), "{err:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let answer: u32 = client.call("/v1/echo", &1, GUARD).await.unwrap();
    assert_eq!(answer, 1);
}

#[tokio::test]
async fn a_body_over_the_limit_without_a_declared_length_is_refused_with_413() {
    use http_body_util::{BodyExt, StreamBody};
    let runs = Arc::new(AtomicUsize::new(0));
    let (near, _agent) = serve_pair(token(), Arc::clone(&runs));
    type Frames = StreamBody<chunks::Chunks>;
    let (mut sender, conn) = hyper::client::conn::http2::handshake::<_, _, Frames>(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(near),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    // A JSON string of 65 one-MiB chunks, sent with no content-length.
    let request = hyper::Request::post("http://agent/v1/echo")
        .header("authorization", format!("Bearer {}", token().as_str()))
        .header("content-type", "application/json")
        .body(StreamBody::new(chunks::Chunks::new(65)))
        .unwrap();
    let answer = sender.send_request(request).await.unwrap();
    assert_eq!(answer.status(), 413);
    let _ = answer.into_body().collect().await;
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

/// A body that yields a JSON string in one-MiB chunks.
mod chunks {
    use bytes::Bytes;
    use hyper::body::Frame;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    pub struct Chunks {
        left: usize,
        started: bool,
    }

    impl Chunks {
        pub fn new(mib: usize) -> Chunks {
            Chunks { left: mib, started: false }
        }
    }

    impl futures_core::Stream for Chunks {
        type Item = Result<Frame<Bytes>, std::convert::Infallible>;
        fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
            if !self.started {
                self.started = true;
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"\"")))));
            }
            if self.left == 0 {
                return Poll::Ready(None);
            }
            self.left -= 1;
            Poll::Ready(Some(Ok(Frame::data(Bytes::from(vec![b'x'; 1 << 20])))))
        }
    }
}

#[tokio::test]
async fn garbage_instead_of_http2_ends_the_agents_connection_with_an_error() {
    let runs = Arc::new(AtomicUsize::new(0));
    let (mut near, agent) = serve_pair(token(), Arc::clone(&runs));
    near.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n\x00\xff\x00\xff garbage garbage garbage").await.unwrap();
    let ended = tokio::time::timeout(GUARD, agent).await.unwrap().unwrap();
    assert!(matches!(ended, Err(ProtoError::Connection(_))), "{ended:?}");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn garbage_from_the_agent_fails_the_call_and_closes_the_client() {
    let (near, mut far) = tokio::io::duplex(1 << 16);
    let liar = tokio::spawn(async move {
        let mut preface = [0u8; 24];
        let _ = far.read_exact(&mut preface).await;
        let _ = far.write_all(&[0xff; 4096]).await;
        let mut rest = Vec::new();
        let _ = far.read_to_end(&mut rest).await;
    });
    let client = Client::over_stream(near, &token()).await.unwrap();
    let err = client.call::<_, Value>("/v1/echo", &json!(1), GUARD).await.unwrap_err();
    assert!(matches!(err, CallError::Closed(_) | CallError::BadAnswer(_)), "{err:?}");
    tokio::time::timeout(GUARD, async {
        while !client.is_closed() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    let err = client.call::<_, Value>("/v1/echo", &json!(1), GUARD).await.unwrap_err();
    assert!(matches!(err, CallError::Closed(_)), "{err:?}");
    liar.abort();
}

#[tokio::test]
async fn a_client_sees_the_agent_go_and_its_calls_say_closed() {
    let (client, _, agent) = pair(&token(), token()).await;
    let answer: u32 = client.call("/v1/echo", &5, GUARD).await.unwrap();
    assert_eq!(answer, 5);
    agent.abort();
    tokio::time::timeout(GUARD, async {
        while !client.is_closed() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    let err = client.call::<_, Value>("/v1/echo", &json!(1), GUARD).await.unwrap_err();
    assert!(matches!(err, CallError::Closed(_)), "{err:?}");
    assert!(err.to_string().starts_with("the connection to the agent is gone: "), "{err}");
}

/// A self-signed certificate for 127.0.0.1 and localhost, written as PEM files.
fn certificate(dir: &std::path::Path, name: &str) -> (PathBuf, PathBuf) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let (cert_path, key_path) = (dir.join(format!("{name}.pem")), dir.join(format!("{name}.key")));
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.key_pair.serialize_pem()).unwrap();
    (cert_path, key_path)
}

/// An agent on a loopback port; stops when the sender is dropped or sent to.
async fn tcp_agent(
    tls: Option<Arc<ioscope_proto::rustls::ServerConfig>>,
) -> (String, tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<std::io::Result<()>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let app = authorized(app(Arc::new(AtomicUsize::new(0))), token());
    let server = tokio::spawn(serve_tcp(listener, tls, app, async move {
        let _ = stopped.await;
    }));
    (addr, stop, server)
}

#[tokio::test]
async fn tls_round_trip_with_a_client_that_trusts_the_agents_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path(), "agent");
    let (addr, stop, server) = tcp_agent(Some(tls_server_config(&cert, &key).unwrap())).await;
    for tls in [ClientTls::Ca(cert.clone()), ClientTls::CaNamed { ca: cert.clone(), server_name: "localhost".into() }] {
        let client = Client::connect(&addr, &tls, &token(), GUARD).await.unwrap();
        let answer: Value = client.call("/v1/echo", &json!({"tls": true}), GUARD).await.unwrap();
        assert_eq!(answer, json!({"tls": true}));
    }
    stop.send(()).unwrap();
    tokio::time::timeout(GUARD, server).await.unwrap().unwrap().unwrap();
}

#[tokio::test]
async fn a_client_that_does_not_trust_the_agents_certificate_cannot_connect() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path(), "agent");
    let (other, _) = certificate(dir.path(), "other");
    let (addr, _stop, _server) = tcp_agent(Some(tls_server_config(&cert, &key).unwrap())).await;
    let err = Client::connect(&addr, &ClientTls::Ca(other), &token(), GUARD).await.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CallError::Connect(_)), "{err:?}");
    assert!(text.starts_with(&format!("TLS handshake with {addr} failed: ")) && text.contains("certificate"), "{text}");
    // Without TLS at all, no call goes through either.
    let plain = Client::connect(&addr, &ClientTls::None, &token(), GUARD).await;
    if let Ok(client) = plain {
        let err = client.call::<_, Value>("/v1/echo", &json!(1), GUARD).await.unwrap_err();
        assert!(matches!(err, CallError::Closed(_) | CallError::BadAnswer(_)), "{err:?}");
    }
}

#[tokio::test]
async fn loopback_h2c_round_trip_and_shutdown_ends_the_server() {
    let (addr, stop, server) = tcp_agent(None).await;
    let client = Client::connect(&addr, &ClientTls::None, &token(), GUARD).await.unwrap();
    let answer: u32 = client.call("/v1/echo", &42, GUARD).await.unwrap();
    assert_eq!(answer, 42);
    stop.send(()).unwrap();
    tokio::time::timeout(GUARD, server).await.unwrap().unwrap().unwrap();
    // The open connection is told to go away once idle.
    tokio::time::timeout(GUARD, async {
        while !client.is_closed() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn connecting_to_a_port_where_nothing_listens_names_the_address() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let err = Client::connect(&addr, &ClientTls::None, &token(), GUARD).await.unwrap_err();
    assert!(matches!(err, CallError::Connect(_)), "{err:?}");
    assert!(err.to_string().starts_with(&format!("cannot connect to {addr}: ")), "{err}");
}

#[test]
fn tls_files_that_cannot_be_used_are_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path(), "agent");
    let missing = dir.path().join("missing.pem");
    let err = tls_server_config(&missing, &key).unwrap_err().to_string();
    assert!(err.starts_with("TLS certificate ") && err.contains("missing.pem"), "{err}");
    let err = tls_server_config(&cert, &cert).unwrap_err().to_string();
    assert!(err.starts_with("TLS key ") && err.contains("agent.pem"), "{err}");
    let err = tls_server_config(&key, &key).unwrap_err().to_string();
    assert!(err.starts_with("TLS certificate ") && err.contains("agent.key"), "{err}");
}

#[tokio::test]
async fn a_client_never_sends_the_token_in_clear_text_beyond_loopback() {
    // TEST-NET-1: refused before any packet leaves.
    let err = Client::connect("192.0.2.1:7070", &ClientTls::None, &token(), GUARD).await.unwrap_err();
    assert!(matches!(err, CallError::Connect(_)), "{err:?}");
    assert!(err.to_string().contains("192.0.2.1:7070 (192.0.2.1) is not a loopback address"), "{err}");
    let err = Client::connect("no-port-here", &ClientTls::None, &token(), GUARD).await.unwrap_err();
    assert!(err.to_string().starts_with("cannot look up no-port-here (expected host:port)"), "{err}");
}

#[tokio::test]
async fn an_answer_over_the_clients_limit_is_a_bad_answer() {
    let (client, _, _agent) = pair(&token(), token()).await;
    let client = client.answer_limit(100);
    let answer: String = client.call("/v1/echo", &"x".repeat(50), GUARD).await.unwrap();
    assert_eq!(answer.len(), 50);
    let err = client.call::<_, String>("/v1/echo", &"x".repeat(200), GUARD).await.unwrap_err();
    assert!(matches!(&err, CallError::BadAnswer(m) if m.contains("larger than the limit of 100 bytes")), "{err:?}");
    let err = client.call::<_, Value>("v1/echo", &1, GUARD).await.unwrap_err();
    assert!(err.to_string().contains("\"v1/echo\" is not a path to call"), "{err}");
}

#[tokio::test]
async fn connections_beyond_the_cap_are_closed_and_a_slot_frees_when_one_ends() {
    use ioscope_proto::MAX_TCP_CONNECTIONS;
    let (addr, _stop, _server) = tcp_agent(None).await;
    // Connections that carried the token hold every slot (strangers would make room: the
    // oldest idle one is closed for a newcomer, tests/slots.rs)...
    let mut held = Vec::new();
    for _ in 0..MAX_TCP_CONNECTIONS {
        let client = Client::connect(&addr, &ClientTls::None, &token(), GUARD).await.unwrap();
        assert_eq!(client.call::<_, u32>("/v1/echo", &1, GUARD).await.unwrap(), 1);
        held.push(client);
    }
    // ...so one over the cap reads EOF.
    let mut extra = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(GUARD, extra.read(&mut byte)).await.unwrap();
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    held.clear();
    tokio::time::timeout(GUARD, async {
        loop {
            if let Ok(client) = Client::connect(&addr, &ClientTls::None, &token(), GUARD).await {
                if let Ok(answer) = client.call::<_, u32>("/v1/echo", &3, GUARD).await {
                    assert_eq!(answer, 3);
                    break;
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn a_handler_can_answer_a_bad_body_as_an_api_error() {
    use axum::extract::rejection::JsonRejection;
    let app = Router::new()
        .route("/v1/typed", post(|body: Result<Json<u32>, JsonRejection>| async move { body.map_err(ApiError::from) }));
    let (near, far) = tokio::io::duplex(1 << 16);
    tokio::spawn(serve_stream(far, authorized(app, token())));
    let client = Client::over_stream(near, &token()).await.unwrap();
    let err = client.call::<_, u32>("/v1/typed", &"seven", GUARD).await.unwrap_err();
    assert!(
        matches!(&err, CallError::Refused { status: 422, message } if message.contains("invalid type: string")),
        "{err:?}"
    );
}
