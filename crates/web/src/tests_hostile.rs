//! What a hostile or broken client can send: out-of-range queries, overlong and slow
//! requests, floods of connections, foreign Host headers, wrong tokens, and a handler
//! that panics. The server answers 4xx (or 503 when full) and goes on.

use crate::access;
use crate::api::Api;
use crate::request;
use crate::server::{Limits, Server};
use crate::tests::write_results;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

fn api() -> (tempfile::TempDir, Api) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_results(dir.path());
    (dir, Api::new(&[path]))
}

/// Sends `raw` and reads the whole answer: (status, text); status 0 when the server
/// closed without answering.
fn exchange(addr: SocketAddr, raw: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(raw).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).expect("the answer arrives whole, the connection is not reset");
    let text = String::from_utf8_lossy(&out).into_owned();
    (text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0), text)
}

fn get(addr: SocketAddr, target: &str) -> (u16, String) {
    exchange(addr, format!("GET {target} HTTP/1.1\r\nConnection: close\r\nHost: {addr}\r\n\r\n").as_bytes())
}

fn loopback(api: Api, limits: Limits) -> Server {
    Server::start_with("127.0.0.1:0".parse().unwrap(), api, limits).unwrap()
}

#[test]
fn a_second_range_beyond_the_run_is_clamped_or_refused_never_a_panic() {
    let (_d, api) = api();
    // The run has seconds 0..=4.
    for kind in ["series?stat=ops", "heatmap?stat=latency"] {
        for to in ["4294967295", "50000000", "5"] {
            let a = api.get(
                &format!("/api/v1/runs/0/{}", kind.split('?').next().unwrap()),
                &format!("{}&to={to}", kind.split_once('?').unwrap().1),
            );
            assert_eq!(a.status, 200, "{kind}&to={to}: {}", a.body);
            assert_eq!(a.json()["to"], 4, "to is clamped to the run's last second");
            assert_eq!(a.json()["seconds"].as_array().unwrap().len(), 5);
        }
    }
    let one = api.get("/api/v1/runs/0/series", "stat=ops&from=4&to=4294967295");
    assert_eq!(one.json()["seconds"], serde_json::json!([4]));
    let refused = [
        ("from=3&to=1", "expected from <= to"),
        ("from=4294967295", "expected a second in 0..=4"),
        ("from=9", "after the run's last second"),
        ("from=-1", "expected a second of the run, a whole number"),
        ("to=-4294967296", "whole number"),
        ("to=4294967296", "whole number"),
        ("to=1e9", "whole number"),
        ("from=%20", "whole number"),
    ];
    for (params, why) in refused {
        for path in ["/api/v1/runs/0/series", "/api/v1/runs/0/heatmap"] {
            let a = api.get(path, &format!("stat=latency&{params}"));
            assert_eq!(a.status, 400, "{path}?{params}: {}", a.body);
            let message = a.json()["error"].as_str().unwrap_or_default().to_string();
            assert!(message.contains(why), "{params}: {message}");
        }
    }
}

#[test]
fn where_terms_are_bounded_and_repeats_count_once() {
    let (_d, api) = api();
    let many: Vec<String> = (0..300).map(|i| format!("file:f{i}")).collect();
    let a = api.get("/api/v1/runs/0/series", &format!("stat=ops&where={}", many.join(";")));
    assert_eq!(a.status, 400);
    assert!(a.json()["error"].as_str().unwrap().contains("at most 256"), "{}", a.body);
    let same = vec!["op:write"; 5000].join(";");
    let a = api.get("/api/v1/runs/0/series", &format!("stat=ops&where={same}"));
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["where"], "op:write");
}

#[test]
fn error_messages_quote_only_the_start_of_an_overlong_value() {
    let (_d, api) = api();
    let long = "x".repeat(100_000);
    for (path, query) in [
        ("/api/v1/runs/0/series", format!("stat={long}")),
        ("/api/v1/runs/0/series", format!("stat=ops&by={long}")),
        ("/api/v1/runs/0/series", format!("stat=ops&from={long}")),
        ("/api/v1/runs/0/series", format!("stat=ops&where={long}")),
        (&*format!("/api/v1/runs/{long}"), String::new()),
    ] {
        let a = api.get(path, &query);
        assert!((400..500).contains(&a.status));
        assert!(a.body.len() < 1000, "{} bytes of error for {} bytes sent", a.body.len(), query.len() + path.len());
    }
}

#[test]
fn an_overlong_request_line_or_header_block_is_refused_with_414_or_431() {
    let (_d, api) = api();
    let server = loopback(api, Limits::default());
    let addr = server.addr;
    let long_target = format!("/api/v1/runs?x={}", "a".repeat(9 * 1024));
    let (status, text) = get(addr, &long_target);
    assert_eq!(status, 414, "{text}");
    // A 100 MiB line is not read into memory: refused once the head buffer is full (the
    // line is then too long to tell from an overlong header block: 414 or 431).
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let _ = s.write_all(b"GET /");
    let chunk = vec![b'a'; 1 << 20];
    let mut answer = Vec::new();
    for _ in 0..100 {
        if s.write_all(&chunk).is_err() {
            break;
        }
    }
    let _ = s.read_to_end(&mut answer);
    assert!(
        answer.is_empty() || answer.starts_with(b"HTTP/1.1 414") || answer.starts_with(b"HTTP/1.1 431"),
        "{}",
        String::from_utf8_lossy(&answer)
    );

    let header = format!("X-Junk: {}\r\n", "b".repeat(1000));
    let raw = format!("GET /api/v1/runs HTTP/1.1\r\nConnection: close\r\nHost: {addr}\r\n{}\r\n", header.repeat(70));
    let (status, text) = exchange(addr, raw.as_bytes());
    assert_eq!(status, 431, "{text}");
    let raw = format!("GET /api/v1/runs HTTP/1.1\r\nConnection: close\r\nHost: {addr}\r\n{}\r\n", header.repeat(10));
    assert_eq!(exchange(addr, raw.as_bytes()).0, 200, "10 KB of headers is fine");
    assert_eq!(exchange(addr, b"NOT A REQUEST\r\n\r\n").0, 400, "no request line");
    server.stop();
}

#[test]
fn an_idle_or_trickling_client_is_dropped_at_the_request_deadline() {
    let (_d, api) = api();
    let limits = Limits {
        request: request::Limits { request_time: Duration::from_millis(300), ..request::Limits::default() },
        ..Limits::default()
    };
    let server = loopback(api, limits);
    let addr = server.addr;
    // Idle: connects and sends nothing.
    let (status, text) = exchange(addr, b"");
    assert_eq!((status, text.as_str()), (0, ""), "closed without an answer");
    // Slowloris: a header line every 50 ms, never the end of the headers.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut writer = s.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(format!("GET / HTTP/1.1\r\nConnection: close\r\nHost: {addr}\r\n").as_bytes());
        for i in 0..400 {
            if writer.write_all(format!("X-{i}: y\r\n").as_bytes()).is_err() {
                return i;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        400
    });
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    assert!(out.is_empty(), "no answer to an unfinished request");
    let sent = sender.join().unwrap();
    assert!(sent < 400, "the server closed the connection while the client was still trickling");
    assert_eq!(get(addr, "/api/v1/runs").0, 200);
    server.stop();
}

#[test]
fn connections_beyond_the_cap_are_answered_503_and_closed_without_a_thread() {
    let (_d, api) = api();
    let server = loopback(api, Limits { max_connections: 4, ..Limits::default() });
    let addr = server.addr;
    // Clients that asked once and keep their connections (strangers that sent nothing would
    // make room: the oldest is closed for a newcomer, see the test below).
    let idle: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            write!(s, "GET /api/v1/runs HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
            let mut first = [0u8; 12];
            s.read_exact(&mut first).unwrap();
            assert_eq!(&first, b"HTTP/1.1 200");
            s
        })
        .collect();
    for _ in 0..3000 {
        if server.active_connections() == 4 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(server.active_connections(), 4);
    for _ in 0..20 {
        let (status, text) = get(addr, "/api/v1/runs");
        assert_eq!(status, 503, "{text}");
        assert_eq!(server.active_connections(), 4, "no connection beyond the cap is served");
    }
    drop(idle);
    for _ in 0..3000 {
        if server.active_connections() == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(get(addr, "/api/v1/runs").0, 200, "served again once the idle clients left");
    server.stop();
}

#[test]
fn silent_connections_holding_every_slot_do_not_keep_a_client_out() {
    let (_d, api) = api();
    let server = loopback(api, Limits { max_connections: 4, ..Limits::default() });
    let addr = server.addr;
    let _silent: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(addr).unwrap()).collect();
    for _ in 0..3000 {
        if server.active_connections() == 4 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for _ in 0..8 {
        assert_eq!(get(addr, "/api/v1/runs").0, 200, "the oldest silent connection made room");
    }
    server.stop();
}

#[test]
fn the_loopback_server_answers_only_requests_for_loopback_names() {
    let (_d, api) = api();
    let server = loopback(api, Limits::default());
    let (addr, port) = (server.addr, server.addr.port());
    let with_host = |hosts: &[String]| {
        let lines: String = hosts.iter().map(|h| format!("Host: {h}\r\n")).collect();
        exchange(addr, format!("GET /api/v1/runs HTTP/1.1\r\nConnection: close\r\n{lines}\r\n").as_bytes())
    };
    for ok in
        [format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("LocalHost:{port}"), format!("[::1]:{port}")]
    {
        assert_eq!(with_host(std::slice::from_ref(&ok)).0, 200, "{ok}");
    }
    // DNS rebinding: a page at attacker.example whose name now resolves to 127.0.0.1.
    for bad in [
        vec![format!("attacker.example:{port}")],
        vec!["attacker.example".to_string()],
        vec![format!("127.0.0.1:{}", port.wrapping_add(1))],
        vec!["127.0.0.1".to_string()],
        vec![],
        vec![format!("127.0.0.1:{port}"), format!("attacker.example:{port}")],
    ] {
        let (status, text) = with_host(&bad);
        assert_eq!(status, 421, "{bad:?}: {text}");
        assert!(text.contains(&format!("localhost:{port}")), "the refusal names what is accepted: {text}");
    }
    for target in ["/", "/assets/app.js", "/api/v1/runs/0"] {
        let raw = format!("GET {target} HTTP/1.1\r\nConnection: close\r\nHost: evil.example:{port}\r\n\r\n");
        assert_eq!(exchange(addr, raw.as_bytes()).0, 421, "{target}");
    }
    server.stop();
    assert!(access::host_allowed("127.0.0.2:80", "127.0.0.2:80".parse().unwrap()));
    assert!(access::host_allowed("localhost", "127.0.0.1:80".parse().unwrap()), "port 80 may be left out");
    assert!(!access::host_allowed("localhost", "127.0.0.1:8080".parse().unwrap()));
}

#[test]
fn the_token_matches_only_whole_and_exact() {
    let token = "0123456789abcdef0123456789abcdef";
    assert!(access::same_token(token, token));
    for wrong in ["", "0123456789abcdef", &format!("{token}0"), "0123456789abcdef0123456789abcdeF", "x"] {
        assert!(!access::same_token(wrong, token), "{wrong}");
    }
    let cookies = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(access::cookie_has_token(&cookies(&["a=b", &format!("ioscope_token={token}")]), token));
    assert!(!access::cookie_has_token(&cookies(&["ioscope_token=0123"]), token));
    assert!(!access::cookie_has_token(&cookies(&[&format!("other={token}")]), token));

    let (_d, api) = api();
    let server = Server::start("0.0.0.0:0".parse().unwrap(), api).unwrap();
    let local: SocketAddr = format!("127.0.0.1:{}", server.addr.port()).parse().unwrap();
    let token = server.token.clone().unwrap();
    assert_eq!(get(local, &format!("/api/v1/runs?token={}", &token[..31])).0, 401, "a prefix is not the token");
    assert_eq!(get(local, &format!("/api/v1/runs?token={token}")).0, 200);
    server.stop();
}

#[test]
fn a_url_for_all_interfaces_names_this_hosts_reachable_addresses_with_the_token() {
    for listen in ["0.0.0.0:7878", "[::]:7878"] {
        let urls = access::urls(listen.parse().unwrap(), Some("abc"));
        assert!(!urls.is_empty());
        for url in &urls {
            assert!(url.starts_with("http://") && url.ends_with(":7878/?token=abc"), "{url}");
            assert!(!url.contains("0.0.0.0") && !url.contains("[::]"), "{url}: not an address to open");
        }
    }
    assert_eq!(access::urls("10.1.2.3:80".parse().unwrap(), Some("t")), ["http://10.1.2.3:80/?token=t"]);
    assert_eq!(access::urls("[::1]:7878".parse().unwrap(), None), ["http://[::1]:7878/"]);
}

#[cfg(debug_assertions)]
#[test]
fn a_panicking_handler_is_answered_500_and_the_server_keeps_serving() {
    let (_d, mut api) = api();
    api.debug_panic = true;
    let server = loopback(api, Limits::default());
    for _ in 0..3 {
        let (status, text) = get(server.addr, "/api/v1/debug/panic");
        assert_eq!(status, 500, "{text}");
        let (status, body) = get(server.addr, "/api/v1/runs");
        assert_eq!(status, 200);
        let v: Value = serde_json::from_str(body.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(v["runs"][0]["last_second"], 4);
    }
    server.stop();
}
