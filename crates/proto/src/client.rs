//! The coordinator's side: one HTTP/2 connection to an agent, over which JSON calls run
//! concurrently (one stream each).

use crate::{tls, CallError, Token, MAX_ANSWER_BYTES};
use axum::http::{header, HeaderValue, Method, Request, StatusCode};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// HTTP/2 pings find an agent that is gone without closing (a link down): the connection
/// then counts as closed.
const PING_INTERVAL: Duration = Duration::from_secs(10);
const PING_TIMEOUT: Duration = Duration::from_secs(20);
/// How much of a refusal's body becomes its message.
const MAX_REFUSAL_CHARS: usize = 2000;

/// How to reach an agent over TCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientTls {
    /// Prior-knowledge h2c: for loopback addresses only.
    None,
    /// TLS, trusting the certificate(s) in this PEM file (a CA, or the agent's own
    /// self-signed certificate); the server name is the address's host.
    Ca(PathBuf),
    /// TLS as `Ca`, with the server name the agent's certificate is checked against.
    CaNamed { ca: PathBuf, server_name: String },
}

/// One HTTP/2 connection to an agent. Cheap to clone; calls may run concurrently.
#[derive(Clone)]
pub struct Client {
    sender: SendRequest<Full<Bytes>>,
    /// `scheme://authority` put before every path.
    base: Arc<str>,
    authorization: HeaderValue,
    /// Why the connection ended, once it has.
    ended: Arc<Mutex<Option<String>>>,
    answer_limit_bytes: usize,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("base", &self.base).field("closed", &self.is_closed()).finish()
    }
}

impl Client {
    /// A client over one byte stream (an ssh child's stdout and stdin joined with
    /// `tokio::io::join`). Spawns the connection's task on the current runtime.
    pub async fn over_stream<IO>(io: IO, token: &Token) -> Result<Client, CallError>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        Client::handshake(io, "http://agent", token).await
    }

    /// Connects to an agent's `host:port` over TCP, with TLS as `tls` says; `timeout`
    /// bounds the name lookup and the TCP and TLS handshakes. Without TLS only loopback
    /// addresses are reached: the token never crosses a network in clear text.
    pub async fn connect(addr: &str, tls: &ClientTls, token: &Token, timeout: Duration) -> Result<Client, CallError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let within = |what: &str| CallError::Connect(format!("{what} {addr}: no answer within {} s", seconds(timeout)));
        let resolved: Vec<std::net::SocketAddr> = tokio::time::timeout_at(deadline, tokio::net::lookup_host(addr))
            .await
            .map_err(|_| within("cannot look up"))?
            .map_err(|e| CallError::Connect(format!("cannot look up {addr} (expected host:port): {e}")))?
            .collect();
        if resolved.is_empty() {
            return Err(CallError::Connect(format!("cannot look up {addr}: no address found")));
        }
        if *tls == ClientTls::None {
            if let Some(far) = resolved.iter().find(|a| crate::needs_tls(a)) {
                return Err(CallError::Connect(format!(
                    "{addr} ({}) is not a loopback address: the agent is reached over TLS only (give its certificate or CA)",
                    far.ip()
                )));
            }
        }
        let tcp = tokio::time::timeout_at(deadline, tokio::net::TcpStream::connect(&resolved[..]))
            .await
            .map_err(|_| within("cannot connect to"))?
            .map_err(|e| CallError::Connect(format!("cannot connect to {addr}: {e}")))?;
        let _ = tcp.set_nodelay(true);
        let (ca, name) = match tls {
            ClientTls::None => return Client::handshake(tcp, &format!("http://{addr}"), token).await,
            ClientTls::Ca(ca) => (ca, host_of(addr)),
            ClientTls::CaNamed { ca, server_name } => (ca, server_name.as_str()),
        };
        let config = tls::client_config(ca).map_err(CallError::Connect)?;
        let server_name = rustls::pki_types::ServerName::try_from(name.to_string()).map_err(|_| {
            CallError::Connect(format!("{name:?} is not a server name to check {addr}'s certificate against"))
        })?;
        let connector = tokio_rustls::TlsConnector::from(config);
        let stream = tokio::time::timeout_at(deadline, connector.connect(server_name, tcp))
            .await
            .map_err(|_| within("no TLS handshake with"))?
            .map_err(|e| {
                CallError::Connect(format!(
                    "TLS handshake with {addr} failed: {e} (does the CA file trust the agent's certificate, issued for {name}?)"
                ))
            })?;
        Client::handshake(stream, &format!("https://{addr}"), token).await
    }

    async fn handshake<IO>(io: IO, base: &str, token: &Token) -> Result<Client, CallError>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let mut authorization = HeaderValue::from_str(&format!("Bearer {}", token.as_str()))
            .map_err(|_| CallError::Connect("the token cannot be sent in an HTTP header".into()))?;
        // Never in HPACK's table, never in a debug print.
        authorization.set_sensitive(true);
        let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .keep_alive_interval(PING_INTERVAL)
            .keep_alive_timeout(PING_TIMEOUT)
            .keep_alive_while_idle(true)
            .adaptive_window(true)
            .handshake::<_, Full<Bytes>>(TokioIo::new(io))
            .await
            .map_err(|e| CallError::Connect(format!("no HTTP/2 connection: {}", crate::error::chain(&e))))?;
        let ended = Arc::new(Mutex::new(None));
        let ended_by_task = Arc::clone(&ended);
        tokio::spawn(async move {
            let why = match conn.await {
                Ok(()) => "the agent closed it".to_string(),
                Err(e) => crate::error::chain(&e),
            };
            if let Ok(mut ended) = ended_by_task.lock() {
                *ended = Some(why);
            }
        });
        Ok(Client { sender, base: base.into(), authorization, ended, answer_limit_bytes: MAX_ANSWER_BYTES })
    }

    /// The same client with a lower limit on answers (at most [`MAX_ANSWER_BYTES`]): for
    /// calls whose answers are known to be small.
    pub fn answer_limit(mut self, bytes: usize) -> Client {
        self.answer_limit_bytes = bytes.min(MAX_ANSWER_BYTES);
        self
    }

    /// POSTs `body` as JSON to `path` (e.g. "/v1/start") and decodes the JSON answer. The
    /// whole call, answer included, must end within `timeout`. Answers are read up to
    /// [`MAX_ANSWER_BYTES`] (or [`Client::answer_limit`]).
    pub async fn call<Q: Serialize, A: DeserializeOwned>(
        &self,
        path: &str,
        body: &Q,
        timeout: Duration,
    ) -> Result<A, CallError> {
        if !path.starts_with('/') {
            return Err(CallError::BadAnswer(format!("{path:?} is not a path to call (expected /...)")));
        }
        let body = serde_json::to_vec(body)
            .map_err(|e| CallError::BadAnswer(format!("the request to {path} cannot be encoded as JSON: {e}")))?;
        let request = Request::builder()
            .method(Method::POST)
            .uri(format!("{}{path}", self.base))
            .header(header::AUTHORIZATION, self.authorization.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::CONTENT_LENGTH, body.len())
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| CallError::BadAnswer(format!("{path:?} is not a path to call: {e}")))?;
        let exchange = async {
            let answer = self.sender.clone().send_request(request).await.map_err(|e| self.failed(&e))?;
            let status = answer.status();
            let bytes = Limited::new(answer.into_body(), self.answer_limit_bytes)
                .collect()
                .await
                .map_err(|e| self.answer_broken(path, e.as_ref()))?
                .to_bytes();
            Ok::<_, CallError>((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(timeout, exchange).await.map_err(|_| CallError::Timeout)??;
        if status == StatusCode::UNAUTHORIZED {
            return Err(CallError::Unauthorized);
        }
        if !status.is_success() {
            return Err(CallError::Refused { status: status.as_u16(), message: refusal(&bytes) });
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| CallError::BadAnswer(format!("the answer to {path} is not the JSON expected: {e}")))
    }

    /// Whether the connection is gone (the peer closed it or it failed).
    pub fn is_closed(&self) -> bool {
        self.sender.is_closed() || self.ended.lock().map(|e| e.is_some()).unwrap_or(true)
    }

    /// A failed request: `Closed` when the connection is gone, else the stream's error.
    fn failed(&self, e: &hyper::Error) -> CallError {
        if self.is_closed() || e.is_closed() || e.is_canceled() {
            let why = self.ended.lock().ok().and_then(|e| e.clone());
            return CallError::Closed(why.unwrap_or_else(|| crate::error::chain(e)));
        }
        CallError::BadAnswer(crate::error::chain(e))
    }

    fn answer_broken(&self, path: &str, e: &(dyn std::error::Error + Send + Sync + 'static)) -> CallError {
        if e.is::<http_body_util::LengthLimitError>() {
            let limit = self.answer_limit_bytes;
            return CallError::BadAnswer(format!("the answer to {path} is larger than the limit of {limit} bytes"));
        }
        if self.is_closed() {
            let why = self.ended.lock().ok().and_then(|e| e.clone());
            return CallError::Closed(why.unwrap_or_else(|| crate::error::chain(e)));
        }
        CallError::BadAnswer(format!("the answer to {path} broke off: {}", crate::error::chain(e)))
    }
}

/// A refusal's message: the `error` of `{"error": ...}`, else the body's text, shortened.
fn refusal(bytes: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Refusal {
        error: String,
    }
    let text = match serde_json::from_slice::<Refusal>(bytes) {
        Ok(r) => r.error,
        Err(_) => String::from_utf8_lossy(bytes).trim().to_string(),
    };
    match text.char_indices().nth(MAX_REFUSAL_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None if text.is_empty() => "(no message)".to_string(),
        None => text,
    }
}

/// The host of `host:port` (without the brackets of an IPv6 address).
fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
    host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host)
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_name_is_the_host_of_the_address() {
        assert_eq!(host_of("agent1.lab:7070"), "agent1.lab");
        assert_eq!(host_of("10.99.0.11:7070"), "10.99.0.11");
        assert_eq!(host_of("[::1]:7070"), "::1");
        assert_eq!(host_of("agent1"), "agent1");
    }

    #[test]
    fn a_refusal_shows_the_error_message_or_the_text() {
        assert_eq!(refusal(br#"{"error": "no such run"}"#), "no such run");
        assert_eq!(refusal(b"Failed to parse the request body as JSON\n"), "Failed to parse the request body as JSON");
        assert_eq!(refusal(b""), "(no message)");
        assert_eq!(refusal("x".repeat(5000).as_bytes()).chars().count(), MAX_REFUSAL_CHARS + 1);
    }
}
