//! `GET /metrics` over HTTP/1.1 (what Prometheus scrapes with), on a thread of its own.
//! It binds where it is told (127.0.0.1 by default, the caller's choice); beyond loopback
//! every request must carry `Authorization: Bearer <token>` (crates/proto's check, the
//! same rule as the agent's and the UI's), so a token is required there. Without a token
//! (loopback) the `Host` must be a loopback name, as for the UI (crates/serve's check
//! against DNS rebinding: 421 otherwise). The accept loop is crates/serve's, shared by every
//! ioscope server: at most [`MAX_CONNECTIONS`] connections at once, a request head within
//! [`HEAD_TIME`] of connecting, a kept-alive connection closed after [`HEAD_TIME`] idle, and
//! strangers holding every slot make room for a newcomer: a stranger can hold a few
//! sockets for a few seconds, nothing more.

use crate::openmetrics::{Exposition, CONTENT_TYPE};
use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use ioscope_proto::Token;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Connections served at once (Prometheus keeps one per target); more are closed.
pub const MAX_CONNECTIONS: usize = 16;
/// A request head that takes longer is dropped (a peer that connects and says nothing), and
/// so is a kept-alive connection idle for longer.
pub const HEAD_TIME: Duration = Duration::from_secs(10);
/// The server's limits in crates/serve's terms.
const LIMITS: ioscope_serve::Limits = ioscope_serve::Limits {
    max_connections: MAX_CONNECTIONS,
    // No TLS here.
    handshake_time: HEAD_TIME,
    first_request_time: HEAD_TIME,
    idle_time: Some(HEAD_TIME),
};
/// The largest request head read (a scrape's is a few hundred bytes).
const MAX_HEAD_BYTES: usize = 16 << 10;

/// The totals a server answers with; the sampler adds seconds to it.
pub type Shared = Arc<Mutex<Exposition>>;

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{addr} is not a loopback address: serving metrics there needs a token (the bearer token every scrape must carry)")]
    NeedsToken { addr: SocketAddr },
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error("cannot start the metrics server: {0}")]
    Runtime(std::io::Error),
}

/// A running metrics server; stops when dropped.
pub struct MetricsServer {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// Whether serving on `addr` reaches beyond this machine (0.0.0.0 does).
pub fn needs_token(addr: &SocketAddr) -> bool {
    ioscope_proto::needs_tls(addr)
}

/// Serves `state` as OpenMetrics text at `/metrics` on `addr` until the server is dropped.
/// Refuses a non-loopback address without a token; with a token, every request needs it.
pub fn serve_metrics(addr: SocketAddr, token: Option<Token>, state: Shared) -> Result<MetricsServer, ServeError> {
    if token.is_none() && needs_token(&addr) {
        return Err(ServeError::NeedsToken { addr });
    }
    // Bound here, so a busy or unusable address is reported before anything else starts.
    let listener = TcpListener::bind(addr).map_err(|source| ServeError::Listen { addr, source })?;
    let bound = listener.local_addr().map_err(|source| ServeError::Listen { addr, source })?;
    listener.set_nonblocking(true).map_err(|source| ServeError::Listen { addr, source })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .thread_name("ioscope-metrics")
        .build()
        .map_err(ServeError::Runtime)?;
    let app = Router::new().route("/metrics", get(move || answer(Arc::clone(&state))));
    let app = match token {
        Some(token) => ioscope_proto::authorized(app, token),
        None => {
            app.layer(axum::middleware::from_fn(move |req: Request, next: Next| loopback_names_only(bound, req, next)))
        }
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("ioscope-metrics".into())
        .spawn(move || {
            runtime.block_on(accept_loop(listener, app, stopped));
            // Dropping the runtime ends every connection still open.
        })
        .map_err(ServeError::Runtime)?;
    Ok(MetricsServer { addr: bound, stop: Some(stop), thread: Some(thread) })
}

async fn accept_loop(listener: TcpListener, app: Router, stopped: tokio::sync::oneshot::Receiver<()>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
    let serve_one = move |conn: ioscope_serve::Conn| {
        let app = app.clone();
        async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new()).header_read_timeout(HEAD_TIME).max_buf_size(MAX_HEAD_BYTES).keep_alive(true);
            let service = conn.tracker.service(TowerToHyperService::new(app));
            let _ = http.serve_connection(TokioIo::new(conn.io), service).await;
        }
    };
    // No slot: closed at once.
    let connections = ioscope_serve::Connections::default();
    ioscope_serve::serve(listener, None, LIMITS, connections, drop, serve_one, async move {
        let _ = stopped.await;
    })
    .await;
}

/// Without a token: only requests for a loopback name (421 otherwise, as the UI).
async fn loopback_names_only(listen: SocketAddr, req: Request, next: Next) -> Response {
    if let Err(why) = ioscope_serve::check_host(req.headers(), listen) {
        return (
            StatusCode::MISDIRECTED_REQUEST,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{why}\n"),
        )
            .into_response();
    }
    let mut response = next.run(req).await;
    response.extensions_mut().insert(ioscope_serve::Admitted);
    response
}

async fn answer(state: Shared) -> axum::response::Response {
    // A sampler that panicked while holding the lock left totals that are still totals.
    let text = match state.lock() {
        Ok(e) => e.render(),
        Err(poisoned) => poisoned.into_inner().render(),
    };
    (StatusCode::OK, [(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response()
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(addr: SocketAddr, path: &str, auth: Option<&str>) -> String {
        with_hosts(addr, path, auth, &[&addr.to_string()])
    }

    fn with_hosts(addr: SocketAddr, path: &str, auth: Option<&str>, hosts: &[&str]) -> String {
        let mut conn = std::net::TcpStream::connect(addr).unwrap();
        let auth = auth.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let hosts: String = hosts.iter().map(|h| format!("Host: {h}\r\n")).collect();
        write!(conn, "GET {path} HTTP/1.1\r\n{hosts}{auth}Connection: close\r\n\r\n").unwrap();
        let mut answer = String::new();
        conn.read_to_string(&mut answer).unwrap();
        answer
    }

    #[test]
    fn metrics_are_served_at_slash_metrics_only_as_openmetrics_text() {
        let server = serve_metrics("127.0.0.1:0".parse().unwrap(), None, Shared::default()).unwrap();
        let answer = get(server.addr, "/metrics", None);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.to_ascii_lowercase().contains(&format!("content-type: {CONTENT_TYPE}")), "{answer}");
        assert!(answer.ends_with("# EOF\n"), "{answer}");
        assert!(get(server.addr, "/", None).starts_with("HTTP/1.1 404"));
        assert!(get(server.addr, "/metrics/x", None).starts_with("HTTP/1.1 404"));
    }

    #[test]
    fn connections_past_the_limit_are_closed_at_once_and_scrapes_go_on_when_they_end() {
        let server = serve_metrics("127.0.0.1:0".parse().unwrap(), None, Shared::default()).unwrap();
        // Scrapers that keep their connections hold every slot (strangers that say nothing
        // would make room: the oldest is closed for a newcomer, crates/serve)...
        let held: Vec<std::net::TcpStream> = (0..MAX_CONNECTIONS)
            .map(|_| {
                let mut conn = std::net::TcpStream::connect(server.addr).unwrap();
                write!(conn, "GET /metrics HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr).unwrap();
                let mut answer = Vec::new();
                let mut buf = [0u8; 4096];
                while !answer.ends_with(b"# EOF\n") {
                    let n = conn.read(&mut buf).unwrap();
                    assert!(n > 0, "{}", String::from_utf8_lossy(&answer));
                    answer.extend_from_slice(&buf[..n]);
                }
                conn
            })
            .collect();
        // ...so the next connection is closed without an answer,
        let mut extra = std::net::TcpStream::connect(server.addr).unwrap();
        extra.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let _ = write!(extra, "GET /metrics HTTP/1.1\r\nHost: {}\r\n\r\n", server.addr);
        let mut answer = Vec::new();
        let read = extra.read_to_end(&mut answer);
        assert!(read.is_err() || answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
        // and once they are gone a scrape is answered again.
        drop(held);
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(get(server.addr, "/metrics", None).starts_with("HTTP/1.1 200"));
    }

    #[test]
    fn silent_connections_holding_every_slot_do_not_keep_a_scrape_out() {
        let server = serve_metrics("127.0.0.1:0".parse().unwrap(), None, Shared::default()).unwrap();
        let _silent: Vec<std::net::TcpStream> =
            (0..MAX_CONNECTIONS).map(|_| std::net::TcpStream::connect(server.addr).unwrap()).collect();
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(get(server.addr, "/metrics", None).starts_with("HTTP/1.1 200"));
    }

    #[test]
    fn metrics_answers_421_to_a_foreign_or_missing_or_doubled_host() {
        let server = serve_metrics("127.0.0.1:0".parse().unwrap(), None, Shared::default()).unwrap();
        let (addr, port) = (server.addr, server.addr.port());
        for hosts in [
            vec!["evil.example".to_string()],
            vec![format!("evil.example:{port}")],
            vec![],
            vec![addr.to_string(), addr.to_string()],
        ] {
            let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
            let answer = with_hosts(addr, "/metrics", None, &hosts);
            assert!(answer.starts_with("HTTP/1.1 421"), "{hosts:?}: {answer}");
            assert!(answer.contains("this server answers only requests for 127.0.0.1:"), "{answer}");
            assert!(!answer.contains("# EOF"), "{answer}");
        }
        for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}"), format!("[::1]:{port}")] {
            assert!(with_hosts(addr, "/metrics", None, &[&host]).starts_with("HTTP/1.1 200"), "{host}");
        }
    }

    #[test]
    fn beyond_loopback_a_token_is_required_and_every_scrape_must_carry_it() {
        let refused = serve_metrics("0.0.0.0:0".parse().unwrap(), None, Shared::default());
        assert!(matches!(refused, Err(ServeError::NeedsToken { .. })));
        let token = Token::from_line("0123456789abcdef0123").unwrap();
        // On loopback with a token: it is checked all the same.
        let server = serve_metrics("127.0.0.1:0".parse().unwrap(), Some(token), Shared::default()).unwrap();
        assert!(get(server.addr, "/metrics", None).starts_with("HTTP/1.1 401"));
        assert!(get(server.addr, "/metrics", Some("0123456789abcdef0124")).starts_with("HTTP/1.1 401"));
        assert!(get(server.addr, "/metrics", Some("0123456789abcdef0123")).starts_with("HTTP/1.1 200"));
    }
}
