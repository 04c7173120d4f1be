//! The Host check against DNS rebinding, for a server that answers without a token (on
//! loopback): a page whose name was made to resolve to 127.0.0.1 sends its own name in
//! `Host`, and is refused. A server with a token needs no such check (the page does not
//! have the token).

use http::header::HOST;
use http::HeaderMap;
use std::net::{IpAddr, SocketAddr};

/// Whether a loopback server listening on `listen` answers a request with this `Host`:
/// 127.0.0.1, localhost, [::1] or the listen address itself, with the listen port (the
/// port may be left out only when it is 80, as browsers do).
pub fn host_allowed(host: &str, listen: SocketAddr) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let port = listen.port();
    let listen_host = match listen.ip() {
        IpAddr::V4(ip) => ip.to_string(),
        IpAddr::V6(ip) => format!("[{ip}]"),
    };
    ["127.0.0.1", "localhost", "[::1]", listen_host.as_str()]
        .iter()
        .any(|name| host == format!("{name}:{port}") || (port == 80 && host == *name))
}

/// Checks that the request has exactly one `Host`, and an allowed one; Err is the reason,
/// to be answered with 421 Misdirected Request. It quotes at most 64 characters of what
/// was sent.
pub fn check_host(headers: &HeaderMap, listen: SocketAddr) -> Result<(), String> {
    let hosts: Vec<String> =
        headers.get_all(HOST).iter().map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned()).collect();
    if let [host] = hosts.as_slice() {
        if host_allowed(host, listen) {
            return Ok(());
        }
    }
    let port = listen.port();
    let mut names = format!("127.0.0.1:{port}, localhost:{port}, [::1]:{port}");
    if !matches!(listen.ip().to_string().as_str(), "127.0.0.1" | "::1") {
        names.push_str(&format!(", {listen}"));
    }
    let given = match hosts.as_slice() {
        [] => "none".to_string(),
        [host] => quote(host),
        _ => "several".to_string(),
    };
    Err(format!("this server answers only requests for {names} (Host header: {given})"))
}

/// `value` quoted and escaped, cut to 64 characters.
fn quote(value: &str) -> String {
    const MAX_CHARS: usize = 64;
    match value.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{:?}... ({} bytes)", &value[..cut], value.len()),
        None => format!("{value:?}"),
    }
}
