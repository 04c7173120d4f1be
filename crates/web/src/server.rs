//! The HTTP server: the embedded UI at `/`, its files at `/assets/NAME`, the JSON API at
//! `/api/v1/`. Binds where it is told (127.0.0.1 by default); there it answers only
//! requests addressed to a loopback name (the `Host` check against DNS rebinding); on any
//! other address every request must carry the access token (`?token=` once, then a
//! cookie). See docs/security.md.
//!
//! Plain HTTP/1.1 on std::net: one thread per connection, one request per connection
//! (`Connection: close`), at most [`Limits::max_connections`] at once: beyond that a
//! connection is answered 503 by one thread for all ([`crate::busy`]) and closed, so no
//! client can make the server start threads without bound. Requests are read with size and time limits
//! ([`request`]). A panic while answering is caught and answered 500; the server, and a
//! run it serves, go on.

use crate::access;
use crate::api::{parse_query, Api};
use crate::assets;
use crate::busy::Refuser;
use crate::query::echo;
use crate::request::{self, Failure, Request};
use std::cell::Cell;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

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

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    /// Required on every request when the address is not a loopback address.
    pub token: Option<String>,
    stop: Arc<AtomicBool>,
    active: Arc<AtomicUsize>,
    accept: JoinHandle<()>,
}

/// What every connection's thread shares.
struct Shared {
    api: Api,
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

impl Server {
    /// Starts serving `api` on `listen`.
    pub fn start(listen: SocketAddr, api: Api) -> Result<Server, String> {
        Server::start_with(listen, api, Limits::default())
    }

    pub fn start_with(listen: SocketAddr, api: Api, limits: Limits) -> Result<Server, String> {
        let listener = TcpListener::bind(listen).map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let token = if addr.ip().is_loopback() { None } else { Some(new_token()?) };
        let shared = Arc::new(Shared { api, addr, token: token.clone(), limits });
        let (stop, active) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicUsize::new(0)));
        let accept = {
            let (stop, active) = (Arc::clone(&stop), Arc::clone(&active));
            std::thread::Builder::new()
                .name("ioscope-ui".into())
                .spawn(move || {
                    mark_ui_thread();
                    accept_loop(&listener, &shared, &stop, &active);
                })
                .map_err(|e| format!("cannot start the UI server: {e}"))?
        };
        Ok(Server { addr, token, stop, active, accept })
    }

    /// The address to open in a browser (with the token when one is needed).
    pub fn url(&self) -> String {
        self.urls().swap_remove(0)
    }

    /// Every address to open in a browser, the most useful first; several when listening
    /// on all interfaces (0.0.0.0 or [::]).
    pub fn urls(&self) -> Vec<String> {
        access::urls(self.addr, self.token.as_deref())
    }

    /// Connections being served now.
    pub fn active_connections(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Serves until the process ends.
    pub fn wait(self) {
        let _ = self.accept.join();
    }

    pub fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        let _ = self.accept.join();
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>, stop: &AtomicBool, active: &Arc<AtomicUsize>) {
    let refuser = Refuser::start();
    for conn in listener.incoming() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let conn = match conn {
            Ok(c) => c,
            Err(_) => {
                // Out of file descriptors, for one: wait for connections to end, do not spin.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let Some(slot) = Slot::take(active, shared.limits.max_connections) else {
            refuser.refuse(conn);
            continue;
        };
        let shared = Arc::clone(shared);
        // A thread that cannot be started drops the connection (and its slot).
        let _ = std::thread::Builder::new().name("ioscope-ui".into()).spawn(move || {
            mark_ui_thread();
            serve(&conn, &shared);
            drop(slot);
        });
    }
}

/// One of the connections allowed at once; given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(active: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
        if active.fetch_add(1, Ordering::AcqRel) >= max {
            active.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Slot(Arc::clone(active)))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// 128 random bits as 32 hex digits. Without a source of randomness there is no token,
/// and no server beyond loopback (a token from the clock could be guessed).
fn new_token() -> Result<String, String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(|e| format!("cannot make an access token: /dev/urandom: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// An HTTP response before it is written.
struct Reply {
    status: u16,
    mime: &'static str,
    body: Vec<u8>,
    cookie: Option<String>,
}

impl Reply {
    fn text(status: u16, body: &str) -> Reply {
        Reply { status, mime: "text/plain; charset=utf-8", body: body.as_bytes().to_vec(), cookie: None }
    }
}

/// Reads one request from `conn`, answers it, closes.
fn serve(conn: &TcpStream, shared: &Shared) {
    let _ = conn.set_write_timeout(Some(Duration::from_secs(30)));
    let (reply, head_only) = match request::read(conn, &shared.limits.request) {
        Ok(req) => {
            let reply = catch_unwind(AssertUnwindSafe(|| answer(&req, shared))).unwrap_or_else(|_| {
                Reply::text(500, "internal error: this request could not be answered (the server goes on)\n")
            });
            (reply, req.method == "HEAD")
        }
        Err(Failure::Refuse(status, message)) => (Reply::text(status, &format!("{message}\n")), false),
        Err(Failure::Gone) => return,
    };
    if write_reply(conn, &reply, head_only).is_ok() {
        request::linger(conn);
    }
}

fn write_reply(conn: &TcpStream, reply: &Reply, head_only: bool) -> std::io::Result<()> {
    let reason = match reply.status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        414 => "URI Too Long",
        421 => "Misdirected Request",
        431 => "Request Header Fields Too Large",
        _ => "Internal Server Error",
    };
    let mut head = format!(
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n\
         X-Content-Type-Options: nosniff\r\nConnection: close\r\n",
        reply.status,
        reply.mime,
        reply.body.len()
    );
    if let Some(c) = &reply.cookie {
        head.push_str(&format!("Set-Cookie: {c}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = conn;
    out.write_all(head.as_bytes())?;
    if !head_only {
        out.write_all(&reply.body)?;
    }
    out.flush()
}

fn answer(req: &Request, shared: &Shared) -> Reply {
    let (path, query) = req.target.split_once('?').unwrap_or((&req.target, ""));
    let mut cookie = None;
    match &shared.token {
        // Loopback: no token, so the page must have been loaded from a loopback name.
        None => {
            let allowed = match req.hosts.as_slice() {
                [host] => access::host_allowed(host, shared.addr),
                _ => false,
            };
            if !allowed {
                let port = shared.addr.port();
                let mut names = format!("127.0.0.1:{port}, localhost:{port}, [::1]:{port}");
                if !matches!(shared.addr.ip().to_string().as_str(), "127.0.0.1" | "::1") {
                    names.push_str(&format!(", {}", shared.addr));
                }
                let given = match req.hosts.as_slice() {
                    [] => "none".to_string(),
                    [host] => echo(host),
                    _ => "several".to_string(),
                };
                return Reply::text(
                    421,
                    &format!("this server answers only requests for {names} (Host header: {given})\n"),
                );
            }
        }
        Some(token) => {
            let given = parse_query(query)
                .into_iter()
                .filter(|(k, _)| k == "token")
                .any(|(_, v)| access::same_token(&v, token));
            if given {
                cookie = Some(format!("{}={token}; HttpOnly; SameSite=Strict; Path=/", access::TOKEN_COOKIE));
            } else if !access::cookie_has_token(&req.cookies, token) {
                return Reply::text(401, "a token is required: open the address ioscope printed\n");
            }
        }
    }
    if req.method != "GET" && req.method != "HEAD" {
        return Reply::text(405, "only GET\n");
    }
    let mut reply = if path == "/api/v1" || path.starts_with("/api/v1/") {
        let a = shared.api.get(path, query);
        Reply { status: a.status, mime: "application/json", body: a.body.into_bytes(), cookie: None }
    } else {
        let name = if path == "/" { Some("index.html") } else { path.strip_prefix("/assets/") };
        match name.and_then(assets::get) {
            Some((mime, bytes)) => Reply { status: 200, mime, body: bytes.to_vec(), cookie: None },
            None => Reply::text(404, &format!("no such page {}\n", echo(path))),
        }
    };
    reply.cookie = cookie;
    reply
}
