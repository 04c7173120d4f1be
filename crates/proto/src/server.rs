//! The agent's side: the token check in front of every route, and serving HTTP/2 on a TCP
//! listener (TLS or h2c; the accept loop, cap and time limits are crates/serve's, shared by
//! every ioscope server) or on one byte stream.

use crate::{ApiError, ProtoError, Token, MAX_REQUEST_BYTES};
use axum::extract::{DefaultBodyLimit, Request};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};

/// A TLS handshake that takes longer is dropped (a peer that connects and says nothing).
const TLS_HANDSHAKE_TIME: Duration = Duration::from_secs(10);
/// After the handshake, a connection whose first call with the token is not answered
/// within this (a silent peer, a 1 B/s preface, calls without the token) is closed.
const FIRST_CALL_TIME: Duration = Duration::from_secs(10);
/// HTTP/2 pings find a peer that is gone without closing (a link down).
const PING_INTERVAL: Duration = Duration::from_secs(10);
const PING_TIMEOUT: Duration = Duration::from_secs(20);
const MAX_HEADER_LIST_BYTES: u32 = 64 << 10;
const MAX_CONCURRENT_STREAMS: u32 = 256;
/// Connections served at once on a TCP listener. An agent serves one coordinator: this only
/// bounds what strangers can hold open. When strangers hold every slot the oldest of them is
/// closed for a newcomer; when connections that carried the token hold every slot, a
/// newcomer is closed at once.
pub const MAX_TCP_CONNECTIONS: usize = 256;

/// The agent's limits on a TCP listener ([`serve_tcp`]). A connection that carried the token
/// has no idle limit: the coordinator may wait hours between calls (while other hosts
/// prepare), and HTTP/2 pings find a coordinator that is gone.
pub const TCP_LIMITS: ioscope_serve::Limits = ioscope_serve::Limits {
    max_connections: MAX_TCP_CONNECTIONS,
    handshake_time: TLS_HANDSHAKE_TIME,
    first_request_time: FIRST_CALL_TIME,
    idle_time: None,
};

/// Wraps an axum Router so that every route (and the fallback) needs
/// `Authorization: Bearer <token>`, compared in constant time; other requests get
/// 401 `{"error": ...}` and no handler runs; an answered call admits its connection
/// ([`ioscope_serve::Admitted`]: it is the coordinator's, not a stranger's). Request bodies
/// are limited to [`MAX_REQUEST_BYTES`]: a larger declared length is refused with 413 before
/// the handler, and extractors stop reading at the limit.
pub fn authorized(app: axum::Router, token: Token) -> axum::Router {
    let token = Arc::new(token);
    app.layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES)).layer(axum::middleware::from_fn(
        move |req: Request, next: Next| {
            let token = Arc::clone(&token);
            async move { admit(&token, req, next).await }
        },
    ))
}

async fn admit(token: &Token, req: Request, next: Next) -> Response {
    let presented = req.headers().get(header::AUTHORIZATION).map(|v| v.as_bytes());
    let refusal = match presented.and_then(bearer) {
        None => Some("this call needs the header `Authorization: Bearer <token>`"),
        Some(given) if !token.matches(given) => Some("the bearer token is not this agent's token"),
        Some(_) => None,
    };
    if let Some(why) = refusal {
        let mut response = ApiError::unauthorized(why).into_response();
        response.headers_mut().insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        return response;
    }
    let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_REQUEST_BYTES as u64) {
        return ApiError::too_large(format!("the request body is larger than {} MiB", MAX_REQUEST_BYTES >> 20))
            .into_response();
    }
    // Also a bound for handlers that read the body themselves (no Content-Length in HTTP/2).
    let mut response =
        next.run(req.map(|body| axum::body::Body::new(http_body_util::Limited::new(body, MAX_REQUEST_BYTES)))).await;
    response.extensions_mut().insert(ioscope_serve::Admitted);
    response
}

/// The credentials of `Bearer <credentials>` (the scheme's case does not matter).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    scheme.eq_ignore_ascii_case(b"bearer ").then_some(rest)
}

/// Whether serving on this address needs TLS: anything but loopback (an unspecified
/// address such as 0.0.0.0 listens beyond loopback too).
pub fn needs_tls(addr: &SocketAddr) -> bool {
    !addr.ip().to_canonical().is_loopback()
}

fn http2() -> hyper::server::conn::http2::Builder<TokioExecutor> {
    let mut http = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    http.timer(TokioTimer::new())
        .keep_alive_interval(PING_INTERVAL)
        .keep_alive_timeout(PING_TIMEOUT)
        .max_header_list_size(MAX_HEADER_LIST_BYTES)
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .adaptive_window(true);
    http
}

/// Serves one HTTP/2 connection over a byte stream (an ssh session's stdin and stdout joined
/// with `tokio::io::join`); returns Ok when the peer closes it (also abruptly: a broken
/// pipe), or an error when the peer breaks the protocol.
///
/// For an agent under ssh, give it [`crate::stdio`]. With `tokio::io::stdin()` instead, a
/// read may still wait on a blocking thread after this returns: end the process, or shut the
/// runtime down with `shutdown_timeout`, rather than dropping it.
pub async fn serve_stream<IO>(io: IO, app: axum::Router) -> Result<(), ProtoError>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = TowerToHyperService::new(app);
    match http2().serve_connection(TokioIo::new(io), service).await {
        Ok(()) => Ok(()),
        // The peer went away without a goodbye (its end of the pipe closed as we wrote).
        Err(e) if peer_gone(&e) => Ok(()),
        Err(e) => Err(ProtoError::Connection(crate::error::chain(&e))),
    }
}

fn peer_gone(e: &(dyn std::error::Error + 'static)) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionReset, UnexpectedEof};
    let mut source = Some(e);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return matches!(io.kind(), BrokenPipe | ConnectionReset | UnexpectedEof);
        }
        source = cause.source();
    }
    false
}

/// Serves HTTP/2 only on a TCP listener: TLS (ALPN h2) when `tls` is Some, prior-knowledge
/// h2c without it, within [`TCP_LIMITS`]. Returns when `shutdown` resolves; the open
/// connections are then told to close (GOAWAY) once their calls are answered.
pub async fn serve_tcp(
    listener: tokio::net::TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    app: axum::Router,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    serve_tcp_within(listener, tls, app, TCP_LIMITS, shutdown).await
}

/// [`serve_tcp`] within other limits (shorter ones in tests).
pub async fn serve_tcp_within(
    listener: tokio::net::TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    app: axum::Router,
    limits: ioscope_serve::Limits,
    shutdown: impl Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let connections = ioscope_serve::Connections::default();
    // No slot: closed at once (an HTTP/2 client sees the connection end).
    ioscope_serve::serve(
        listener,
        acceptor,
        limits,
        connections,
        drop,
        move |conn| serve_until_stopped(conn, app.clone()),
        shutdown,
    )
    .await;
    Ok(())
}

/// One TCP connection's HTTP/2 service; a failed connection only ends itself.
async fn serve_until_stopped(conn: ioscope_serve::Conn, app: axum::Router) {
    let ioscope_serve::Conn { io, tracker, mut stopping } = conn;
    let http = http2();
    let conn = http.serve_connection(TokioIo::new(io), tracker.service(TowerToHyperService::new(app)));
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        () = stopping.wait() => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_serve_without_tls() {
        for (addr, tls) in [
            ("127.0.0.1:7070", false),
            ("127.0.0.2:7070", false),
            ("[::1]:7070", false),
            ("[::ffff:127.0.0.1]:7070", false),
            ("0.0.0.0:7070", true),
            ("[::]:7070", true),
            ("10.99.0.11:7070", true),
        ] {
            assert_eq!(needs_tls(&addr.parse().unwrap()), tls, "{addr}");
        }
    }

    #[test]
    fn the_bearer_scheme_is_read_in_any_case() {
        assert_eq!(bearer(b"Bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"bearer abc"), Some(&b"abc"[..]));
        assert_eq!(bearer(b"Basic abcdef"), None);
        assert_eq!(bearer(b"Bear"), None);
    }
}
