//! Who may use the server, and where it can be reached (docs/security.md).
//!
//! On a loopback address no token is asked, so the `Host` header is checked instead: a
//! page whose name was made to resolve to 127.0.0.1 (DNS rebinding) sends its own name
//! and is refused. On any other address every request carries the token, compared in
//! constant time.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The cookie that carries the token after the first request.
pub const TOKEN_COOKIE: &str = "ioscope_token";

/// The Host check is crates/serve's, the same for every ioscope server.
pub use ioscope_serve::host_allowed;

/// Whether `given` is the token, in time that does not depend on where they differ (the
/// length is not secret: every token is 32 hex digits).
pub fn same_token(given: &str, token: &str) -> bool {
    let (given, token) = (given.as_bytes(), token.as_bytes());
    if given.len() != token.len() {
        return false;
    }
    let difference = given.iter().zip(token).fold(0u8, |acc, (a, b)| acc | (a ^ b));
    std::hint::black_box(difference) == 0
}

/// Whether one of the request's `name=value` cookies carries the token.
pub fn cookie_has_token(cookies: &[String], token: &str) -> bool {
    cookies.iter().filter_map(|c| c.split_once('=')).any(|(name, value)| {
        // Every cookie is compared, so the time does not tell which one matched.
        (name.trim() == TOKEN_COOKIE) & same_token(value.trim(), token)
    })
}

/// The addresses to open in a browser, the most useful first. For a specific address,
/// that address. For an unspecified one (0.0.0.0, [::]), which listens on every
/// interface: this host's addresses that another host can use (neither loopback nor
/// link-local; IPv4 only for 0.0.0.0), then its name; loopback when it has nothing else.
pub fn urls(listen: SocketAddr, token: Option<&str>) -> Vec<String> {
    let port = listen.port();
    let url = |host: &str| match token {
        Some(t) => format!("http://{host}:{port}/?token={t}"),
        None => format!("http://{host}:{port}/"),
    };
    if !listen.ip().is_unspecified() {
        return vec![url(&host_part(listen.ip()))];
    }
    let v6 = listen.is_ipv6();
    let mut hosts: Vec<String> = interface_addresses()
        .into_iter()
        .filter(|ip| reachable_from_elsewhere(*ip) && (v6 || ip.is_ipv4()))
        .map(host_part)
        .collect();
    let mut seen = std::collections::HashSet::new();
    hosts.retain(|h| seen.insert(h.clone()));
    if let Some(name) = host_name().filter(|n| !n.is_empty() && n != "localhost") {
        hosts.push(name);
    }
    if hosts.is_empty() {
        hosts.push(if v6 { "[::1]" } else { "127.0.0.1" }.to_string());
    }
    hosts.iter().map(|h| url(h)).collect()
}

fn host_part(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(ip) => ip.to_string(),
        IpAddr::V6(ip) => format!("[{ip}]"),
    }
}

fn reachable_from_elsewhere(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => !ip.is_loopback() && !ip.is_link_local() && !ip.is_unspecified(),
        // fe80::/10 needs a zone (%eth0) that URLs cannot carry portably.
        IpAddr::V6(ip) => !ip.is_loopback() && !ip.is_unspecified() && (ip.segments()[0] & 0xffc0) != 0xfe80,
    }
}

/// The addresses of the interfaces that are up.
fn interface_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list that is only read, and released
    // once by freeifaddrs below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet freed; its
        // address, when not null, is a sockaddr_in or sockaddr_in6 as its family says.
        unsafe {
            let ifa = &*cur;
            if !ifa.ifa_addr.is_null() && (ifa.ifa_flags & libc::IFF_UP as u32) != 0 {
                match i32::from((*ifa.ifa_addr).sa_family) {
                    libc::AF_INET => {
                        let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                        out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))));
                    }
                    libc::AF_INET6 => {
                        let sin6 = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                        out.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
                    }
                    _ => {}
                }
            }
            cur = ifa.ifa_next;
        }
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    // IPv4 first: the shorter, more familiar URL.
    out.sort_by_key(|ip| ip.is_ipv6());
    out
}

fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is writable for its length; the name is NUL-terminated within it
    // or gethostname fails.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0)?;
    std::str::from_utf8(&buf[..end]).ok().map(str::to_string)
}
