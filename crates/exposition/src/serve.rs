//! `GET /metrics` over HTTP/1.1 (what Prometheus scrapes with), on a thread of its own.
//! It binds where it is told (127.0.0.1 by default, the caller's choice); beyond loopback
//! every request must carry `Authorization: Bearer <token>` (crates/proto's check, the
//! same rule as the agent's and the UI's), so a token is required there. At most
//! [`MAX_CONNECTIONS`] connections at once (more are closed at once), and a request head
//! must arrive within [`HEAD_TIME`]: a stranger can hold a few sockets, nothing more.

use crate::openmetrics::{Exposition, CONTENT_TYPE};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
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
/// A request head that takes longer is dropped (a peer that connects and says nothing).
pub const HEAD_TIME: Duration = Duration::from_secs(10);
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
    let mut app = Router::new().route("/metrics", get(move || answer(Arc::clone(&state))));
    if let Some(token) = token {
        app = ioscope_proto::authorized(app, token);
    }
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

async fn accept_loop(listener: TcpListener, app: Router, mut stopped: tokio::sync::oneshot::Receiver<()>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => accepted,
        };
        let conn = match accepted {
            Ok((conn, _)) => conn,
            Err(_) => {
                // Out of file descriptors, for one: let connections end rather than spin.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            drop(conn);
            continue;
        };
        let app = app.clone();
        tokio::spawn(async move {
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new()).header_read_timeout(HEAD_TIME).max_buf_size(MAX_HEAD_BYTES).keep_alive(true);
            let _ = http.serve_connection(TokioIo::new(conn), TowerToHyperService::new(app)).await;
            drop(slot);
        });
    }
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
        let mut conn = std::net::TcpStream::connect(addr).unwrap();
        let auth = auth.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        write!(conn, "GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n").unwrap();
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
        // Peers that connect and say nothing hold every slot...
        let held: Vec<std::net::TcpStream> =
            (0..MAX_CONNECTIONS).map(|_| std::net::TcpStream::connect(server.addr).unwrap()).collect();
        std::thread::sleep(std::time::Duration::from_millis(200));
        // ...so the next connection is closed without an answer,
        let mut extra = std::net::TcpStream::connect(server.addr).unwrap();
        extra.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let _ = write!(extra, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        let mut answer = Vec::new();
        let read = extra.read_to_end(&mut answer);
        assert!(read.is_err() || answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
        // and once they are gone a scrape is answered again.
        drop(held);
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(get(server.addr, "/metrics", None).starts_with("HTTP/1.1 200"));
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
