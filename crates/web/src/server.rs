//! The HTTP server: the embedded UI at `/`, its files at `/assets/NAME`, the JSON API at
//! `/api/v1/`. Binds where it is told (127.0.0.1 by default); on any other address every
//! request must carry the access token (`?token=` once, then a cookie).

use crate::api::{parse_query, Api};
use crate::assets;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use tiny_http::{Header, Method, Request, Response};

/// A running server.
pub struct Server {
    pub addr: SocketAddr,
    /// Required on every request when the address is not a loopback address.
    pub token: Option<String>,
    http: Arc<tiny_http::Server>,
    threads: Vec<JoinHandle<()>>,
}

impl Server {
    /// Starts serving `api` on `listen` with a few request threads.
    pub fn start(listen: SocketAddr, api: Api) -> Result<Server, String> {
        let http = Arc::new(tiny_http::Server::http(listen).map_err(|e| format!("cannot listen on {listen}: {e}"))?);
        let addr = http.server_addr().to_ip().ok_or("the server has no IP address")?;
        let token = (!addr.ip().is_loopback()).then(new_token);
        let api = Arc::new(api);
        let threads = (0..4)
            .map(|_| {
                let (http, api, token) = (Arc::clone(&http), Arc::clone(&api), token.clone());
                std::thread::spawn(move || {
                    while let Ok(req) = http.recv() {
                        handle(req, &api, token.as_deref());
                    }
                })
            })
            .collect();
        Ok(Server { addr, token, http, threads })
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
        for t in self.threads {
            let _ = t.join();
        }
    }

    pub fn stop(self) {
        self.http.unblock();
        for _ in 1..self.threads.len() {
            self.http.unblock();
        }
    }
}

fn new_token() -> String {
    let mut bytes = [0u8; 16];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes)).is_err() {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        bytes[..16].copy_from_slice(&t.as_nanos().to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("valid header")
}

fn handle(req: Request, api: &Api, token: Option<&str>) {
    let url = req.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    let mut set_cookie = None;
    if let Some(token) = token {
        let given = parse_query(query).into_iter().find(|(k, _)| k == "token").map(|(_, v)| v);
        let cookie = req
            .headers()
            .iter()
            .filter(|h| h.field.equiv("Cookie"))
            .flat_map(|h| h.value.as_str().split(';').map(|c| c.trim().to_string()).collect::<Vec<_>>())
            .any(|c| c == format!("ioscope_token={token}"));
        if given.as_deref() == Some(token) {
            set_cookie = Some(format!("ioscope_token={token}; HttpOnly; SameSite=Strict; Path=/"));
        } else if !cookie {
            let _ = req.respond(
                Response::from_string("a token is required: open the address ioscope printed\n").with_status_code(401),
            );
            return;
        }
    }
    if req.method() != &Method::Get && req.method() != &Method::Head {
        let _ = req.respond(Response::from_string("only GET\n").with_status_code(405));
        return;
    }
    let (status, mime, body): (u16, &str, Vec<u8>) = if path.starts_with("/api/v1/") || path == "/api/v1" {
        let answer = api.get(path, query);
        (answer.status, "application/json", answer.body.to_string().into_bytes())
    } else {
        let name = if path == "/" { "index.html" } else { path.trim_start_matches("/assets/") };
        match assets::get(name).filter(|_| path == "/" || path.starts_with("/assets/")) {
            Some((mime, bytes)) => (200, mime, bytes.to_vec()),
            None => (404, "text/plain; charset=utf-8", format!("no such page {path:?}\n").into_bytes()),
        }
    };
    let mut resp = Response::from_data(body)
        .with_status_code(status)
        .with_header(header("Content-Type", mime))
        .with_header(header("Cache-Control", "no-store"))
        .with_header(header("X-Content-Type-Options", "nosniff"));
    if let Some(c) = set_cookie {
        resp = resp.with_header(header("Set-Cookie", &c));
    }
    let _ = req.respond(resp);
}
