//! The HTTP server: the embedded UI at `/`, its files at `/assets/NAME`, the JSON API at
//! `/api/v1/`. Binds where it is told (127.0.0.1 by default); on any other address every
//! request must carry the access token (`?token=` once, then a cookie).
//!
//! Plain HTTP/1.1 on std::net: one thread per connection, one request per connection
//! (`Connection: close`). The UI makes a few requests a second; nothing more is needed.

use crate::api::{parse_query, Api};
use crate::assets;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    /// Required on every request when the address is not a loopback address.
    pub token: Option<String>,
    stop: Arc<AtomicBool>,
    accept: JoinHandle<()>,
}

impl Server {
    /// Starts serving `api` on `listen`.
    pub fn start(listen: SocketAddr, api: Api) -> Result<Server, String> {
        let listener = TcpListener::bind(listen).map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let token = (!addr.ip().is_loopback()).then(new_token);
        let (api, stop) = (Arc::new(api), Arc::new(AtomicBool::new(false)));
        let accept = {
            let (token, stop) = (token.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let (api, token) = (Arc::clone(&api), token.clone());
                    std::thread::spawn(move || {
                        let _ = serve(conn, &api, token.as_deref());
                    });
                }
            })
        };
        Ok(Server { addr, token, stop, accept })
    }

    /// The address to open in a browser (with the token when one is needed).
    pub fn url(&self) -> String {
        match &self.token {
            Some(t) => format!("http://{}/?token={t}", self.addr),
            None => format!("http://{}/", self.addr),
        }
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

fn new_token() -> String {
    let mut bytes = [0u8; 16];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes)).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        bytes.copy_from_slice(&t.as_nanos().to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
fn serve(conn: TcpStream, api: &Api, token: Option<&str>) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    conn.set_write_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new(&conn);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut cookies = Vec::new();
    let mut header_bytes = 0;
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line)?;
        header_bytes += n;
        if n == 0 || line == "\r\n" || line == "\n" || header_bytes > 64 * 1024 {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("cookie") {
                cookies.extend(value.split(';').map(|c| c.trim().to_string()));
            }
        }
    }
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    let reply = answer(method, target, &cookies, api, token);
    let reason = match reply.status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
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
    let mut out = &conn;
    out.write_all(head.as_bytes())?;
    if method != "HEAD" {
        out.write_all(&reply.body)?;
    }
    out.flush()
}

fn answer(method: &str, target: &str, cookies: &[String], api: &Api, token: Option<&str>) -> Reply {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut cookie = None;
    if let Some(token) = token {
        let given = parse_query(query).into_iter().find(|(k, _)| k == "token").map(|(_, v)| v);
        if given.as_deref() == Some(token) {
            cookie = Some(format!("ioscope_token={token}; HttpOnly; SameSite=Strict; Path=/"));
        } else if !cookies.iter().any(|c| *c == format!("ioscope_token={token}")) {
            return Reply::text(401, "a token is required: open the address ioscope printed\n");
        }
    }
    if method != "GET" && method != "HEAD" {
        return Reply::text(405, "only GET\n");
    }
    let mut reply = if path == "/api/v1" || path.starts_with("/api/v1/") {
        let a = api.get(path, query);
        Reply { status: a.status, mime: "application/json", body: a.body.into_bytes(), cookie: None }
    } else {
        let name = if path == "/" { Some("index.html") } else { path.strip_prefix("/assets/") };
        match name.and_then(assets::get) {
            Some((mime, bytes)) => Reply { status: 200, mime, body: bytes.to_vec(), cookie: None },
            None => Reply::text(404, &format!("no such page {path:?}\n")),
        }
    };
    reply.cookie = cookie;
    reply
}
