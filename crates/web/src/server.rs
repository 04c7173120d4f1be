//! The HTTP server: the embedded UI at `/`, its files at `/assets/NAME`, the JSON API at
//! `/api/v1/`, live updates as Server-Sent Events (`events.rs`). Binds where it is
//! told (127.0.0.1 by default); there it answers only requests addressed to a loopback
//! name (the `Host` check against DNS rebinding); on any other address every request must
//! carry the access token (`?token=` once, then a cookie). With a certificate and key it
//! speaks HTTPS ([`crate::tls`]). See docs/security.md.
//!
//! axum on hyper (HTTP/1.1, keep-alive) on a tokio runtime of its own: one thread runs
//! every connection, and API answers are computed on a small blocking pool, so the
//! threads that measure a run never see tokio. Answers are gzip-compressed when the client
//! accepts it. The accept loop, the Host check and the connection limits are crates/serve's,
//! shared by every ioscope server: at most [`Limits::max_connections`] connections are
//! served at once (when strangers that sent nothing hold every slot, the oldest is closed for
//! a newcomer; otherwise more are answered 503 and closed, `busy.rs`), a connection with no
//! request for [`request::Limits::request_time`] is closed. Request heads are read with size
//! and time limits ([`crate::request`]), answers written with a stall limit (`stall.rs`).
//! A panic while answering is caught and answered 500; the server, and a run it serves, go
//! on.

use crate::access;
use crate::api::{parse_query, Api};
use crate::assets;
use crate::busy::Refuser;
use crate::events;
use crate::query::echo;
use crate::request;
use crate::stall::WriteDeadline;
use crate::tls::{self, TlsFiles};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::cell::Cell;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tower_http::compression::{CompressionLayer, CompressionLevel};

/// Bounds on what clients can make the server do.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub request: request::Limits,
    /// Connections served at once; more are answered 503 and closed.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { request: request::Limits::default(), max_connections: 64 }
    }
}

/// How to serve.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub limits: Limits,
    /// Serve HTTPS with this certificate and key.
    pub tls: Option<TlsFiles>,
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error("cannot make an access token: /dev/urandom: {0}")]
    Token(std::io::Error),
    #[error("cannot start the UI server: {0}")]
    Runtime(std::io::Error),
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
}

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    /// Required on every request when the address is not a loopback address.
    pub token: Option<String>,
    /// Whether it speaks HTTPS.
    pub tls: bool,
    stop: tokio::sync::oneshot::Sender<()>,
    connections: ioscope_serve::Connections,
    thread: JoinHandle<()>,
}

/// What every request shares.
pub(crate) struct Shared {
    pub(crate) api: Api,
    addr: SocketAddr,
    token: Option<String>,
    limits: Limits,
}

thread_local! {
    static UI_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Marks the current thread as one of the server's.
pub(crate) fn mark_ui_thread() {
    UI_THREAD.with(|t| t.set(true));
}

/// Whether the current thread is one of the server's. The program's panic hook lets a
/// panic there unwind (the server catches it) while it ends the process anywhere else.
pub fn on_ui_thread() -> bool {
    UI_THREAD.with(Cell::get)
}

/// Threads of the blocking pool that compute API answers (they end when idle).
const ANSWER_THREADS: usize = 4;

impl Server {
    /// Starts serving `api` on `listen`.
    pub fn start(listen: SocketAddr, api: Api) -> Result<Server, StartError> {
        Server::start_opts(listen, api, Options::default())
    }

    pub fn start_with(listen: SocketAddr, api: Api, limits: Limits) -> Result<Server, StartError> {
        Server::start_opts(listen, api, Options { limits, tls: None })
    }

    pub fn start_opts(listen: SocketAddr, api: Api, options: Options) -> Result<Server, StartError> {
        // The certificate is read first: a bad file is reported before anything starts.
        let acceptor = options.tls.as_ref().map(tls::acceptor).transpose()?;
        let listener = TcpListener::bind(listen).map_err(|source| StartError::Listen { addr: listen, source })?;
        let addr = listener.local_addr().map_err(|source| StartError::Listen { addr: listen, source })?;
        listener.set_nonblocking(true).map_err(|source| StartError::Listen { addr: listen, source })?;
        let token = if addr.ip().is_loopback() { None } else { Some(new_token().map_err(StartError::Token)?) };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .max_blocking_threads(ANSWER_THREADS)
            .thread_name("ioscope-ui")
            .on_thread_start(mark_ui_thread)
            .build()
            .map_err(StartError::Runtime)?;
        let shared = Arc::new(Shared { api, addr, token: token.clone(), limits: options.limits });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let connections = ioscope_serve::Connections::default();
        let thread = {
            let connections = connections.clone();
            std::thread::Builder::new()
                .name("ioscope-ui".into())
                .spawn(move || {
                    mark_ui_thread();
                    runtime.block_on(accept_loop(listener, shared, acceptor, connections, stopped));
                    runtime.shutdown_timeout(Duration::from_secs(1));
                })
                .map_err(StartError::Runtime)?
        };
        Ok(Server { addr, token, tls: options.tls.is_some(), stop, connections, thread })
    }

    /// The address to open in a browser (with the token when one is needed).
    pub fn url(&self) -> String {
        self.urls().swap_remove(0)
    }

    /// Every address to open in a browser, the most useful first; several when listening
    /// on all interfaces (0.0.0.0 or [::]).
    pub fn urls(&self) -> Vec<String> {
        let urls = access::urls(self.addr, self.token.as_deref());
        if self.tls {
            urls.into_iter().map(|u| u.replacen("http://", "https://", 1)).collect()
        } else {
            urls
        }
    }

    /// Connections being served now.
    pub fn active_connections(&self) -> usize {
        self.connections.active()
    }

    /// Serves until the process ends.
    pub fn wait(self) {
        let _ = self.thread.join();
    }

    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    connections: ioscope_serve::Connections,
    stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
    let app = router(Arc::clone(&shared));
    let request = shared.limits.request;
    let limits = ioscope_serve::Limits {
        max_connections: shared.limits.max_connections,
        // The handshake, and the first request head, each within the request's deadline.
        handshake_time: request.request_time,
        first_request_time: request.request_time,
        idle_time: Some(request.request_time),
    };
    let refuser = Refuser::new();
    let serve_one = move |conn: ioscope_serve::Conn| {
        let app = app.clone();
        async move { serve_connection(conn, app, &request).await }
    };
    // Only `stop` ends the server: a Server dropped without it serves on.
    let shutdown = async move {
        if stopped.await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    ioscope_serve::serve(
        listener,
        acceptor,
        limits,
        connections,
        move |conn| refuser.refuse(conn),
        serve_one,
        shutdown,
    )
    .await;
}

/// Serves the requests of one connection (kept alive between them) until it closes.
async fn serve_connection(conn: ioscope_serve::Conn, app: Router, limits: &request::Limits) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.request_time)
        .max_buf_size(limits.head_buffer_bytes())
        .keep_alive(true)
        // As HTTP/1.1 clients have always seen them from ioscope (Content-Length, Set-Cookie).
        .title_case_headers(true);
    let io = TokioIo::new(WriteDeadline::new(conn.io));
    let _ = http.serve_connection(io, conn.tracker.service(TowerToHyperService::new(app))).await;
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/api/v1/runs/{id}/events", axum::routing::get(events::stream))
        .fallback(answer)
        // The fastest level: an hour-long heat map compresses in a fraction of the time of
        // the default level, for about 15 % more bytes (docs/performance.md).
        .layer(CompressionLayer::new().quality(CompressionLevel::Fastest))
        .layer(middleware::from_fn_with_state(Arc::clone(&shared), guard))
        .with_state(shared)
}

/// 128 random bits as 32 hex digits. Without a source of randomness there is no token,
/// and no server beyond loopback (a token from the clock could be guessed).
fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

pub(crate) fn text(status: StatusCode, body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response().with_status(status)
}

trait WithStatus {
    fn with_status(self, status: StatusCode) -> Self;
}

impl WithStatus for Response {
    fn with_status(mut self, status: StatusCode) -> Self {
        *self.status_mut() = status;
        self
    }
}

/// Every request passes here first: size limits, then who may ask (Host or token), then
/// the method; every answer leaves with the same safety headers.
async fn guard(State(shared): State<Arc<Shared>>, req: Request, next: Next) -> Response {
    let mut response = match admit(&shared, &req) {
        Err((status, why)) => text(status, why),
        Ok(cookie) => {
            let mut response = next.run(req).await;
            // The Host or the token was right: this connection is a client's, not a stranger's.
            response.extensions_mut().insert(ioscope_serve::Admitted);
            if let Some(c) = cookie.and_then(|c| HeaderValue::from_str(&c).ok()) {
                response.headers_mut().insert(header::SET_COOKIE, c);
            }
            response
        }
    };
    let h = response.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

/// Whether the request may be answered; Ok carries the cookie to set (the token was
/// given in the query).
fn admit(shared: &Shared, req: &Request) -> Result<Option<String>, (StatusCode, String)> {
    request::check(req.method(), req.uri(), req.headers(), &shared.limits.request)
        .map_err(|e| (e.status(), format!("{e}\n")))?;
    let query = req.uri().query().unwrap_or("");
    let mut cookie = None;
    match &shared.token {
        // Loopback: no token, so the page must have been loaded from a loopback name.
        None => {
            ioscope_serve::check_host(req.headers(), shared.addr)
                .map_err(|why| (StatusCode::MISDIRECTED_REQUEST, format!("{why}\n")))?;
        }
        Some(token) => {
            let given = parse_query(query)
                .into_iter()
                .filter(|(k, _)| k == "token")
                .any(|(_, v)| access::same_token(&v, token));
            if given {
                cookie = Some(format!("{}={token}; HttpOnly; SameSite=Strict; Path=/", access::TOKEN_COOKIE));
            } else {
                let cookies: Vec<String> = req
                    .headers()
                    .get_all(header::COOKIE)
                    .iter()
                    .flat_map(|v| {
                        String::from_utf8_lossy(v.as_bytes())
                            .split(';')
                            .map(|c| c.trim().to_string())
                            .collect::<Vec<_>>()
                    })
                    .collect();
                if !access::cookie_has_token(&cookies, token) {
                    return Err((
                        StatusCode::UNAUTHORIZED,
                        "a token is required: open the address ioscope printed\n".into(),
                    ));
                }
            }
        }
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Err((StatusCode::METHOD_NOT_ALLOWED, "only GET\n".into()));
    }
    Ok(cookie)
}

/// Whether the client takes gzip (`Accept-Encoding: gzip`, not with `q=0`).
fn accepts_gzip(headers: &axum::http::HeaderMap) -> bool {
    headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(
        |c| {
            let mut parts = c.split(';').map(str::trim);
            parts.next().is_some_and(|name| name.eq_ignore_ascii_case("gzip"))
                && !parts
                    .any(|p| p.replace(' ', "").starts_with("q=0") && !p.contains(|d: char| ('1'..='9').contains(&d)))
        },
    )
}

/// The API (computed on the blocking pool, where a panic is caught) and the UI's files.
async fn answer(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let path = req.uri().path().to_string();
    if path == "/api/v1" || path.starts_with("/api/v1/") {
        let query = req.uri().query().unwrap_or("").to_string();
        let gzip = accepts_gzip(req.headers());
        let worker = Arc::clone(&shared);
        return match tokio::task::spawn_blocking(move || worker.api.get_with(&path, &query, gzip)).await {
            Ok(a) => {
                let status = StatusCode::from_u16(a.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                match a.gzipped {
                    // Compressed once when it was first asked for; the compression layer
                    // leaves an answer that already has an encoding alone.
                    Some(gz) => (
                        [
                            (header::CONTENT_TYPE, "application/json"),
                            (header::CONTENT_ENCODING, "gzip"),
                            (header::VARY, "accept-encoding"),
                        ],
                        Body::from(gz.as_ref().clone()),
                    )
                        .into_response()
                        .with_status(status),
                    None => ([(header::CONTENT_TYPE, "application/json")], a.body).into_response().with_status(status),
                }
            }
            Err(_) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error: this request could not be answered (the server goes on)\n".into(),
            ),
        };
    }
    let name = if path == "/" { Some("index.html") } else { path.strip_prefix("/assets/") };
    match name.and_then(assets::get) {
        Some((mime, bytes)) => ([(header::CONTENT_TYPE, mime)], Body::from(bytes)).into_response(),
        None => text(StatusCode::NOT_FOUND, format!("no such page {}\n", echo(&path))),
    }
}
