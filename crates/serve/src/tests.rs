use super::*;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A bound on waits that only a hang exceeds.
const GUARD: Duration = Duration::from_secs(30);
const LONG: Duration = Duration::from_secs(600);

/// HTTP/1.1: `/ok` is admitted, `/no` is refused (not admitted), `/slow` is admitted after 800 ms.
async fn hello(conn: Conn) {
    let service = hyper::service::service_fn(|req: Request<Incoming>| async move {
        let path = req.uri().path().to_string();
        if path == "/slow" {
            tokio::time::sleep(Duration::from_millis(800)).await;
        }
        let mut response = Response::new(Full::new(Bytes::from_static(b"hi")));
        if path != "/no" {
            response.extensions_mut().insert(Admitted);
        }
        Ok::<_, std::convert::Infallible>(response)
    });
    let http = hyper::server::conn::http1::Builder::new();
    let _ = http.serve_connection(TokioIo::new(conn.io), conn.tracker.service(service)).await;
}

struct Running {
    addr: SocketAddr,
    connections: Connections,
    refused: Arc<AtomicUsize>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn start(limits: Limits) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (connections, refused) = (Connections::default(), Arc::new(AtomicUsize::new(0)));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let counted = Arc::clone(&refused);
    tokio::spawn(serve(
        listener,
        None,
        limits,
        connections.clone(),
        move |conn| {
            counted.fetch_add(1, Ordering::Relaxed);
            drop(conn);
        },
        hello,
        async move {
            let _ = stopped.await;
        },
    ));
    Running { addr, connections, refused, _stop: stop }
}

fn limits(max: usize, first_request: Duration, idle: Option<Duration>) -> Limits {
    Limits { max_connections: max, handshake_time: first_request, first_request_time: first_request, idle_time: idle }
}

/// Sends a request for `path` on a kept-alive connection and reads its answer.
async fn ask(conn: &mut TcpStream, path: &str) -> String {
    conn.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    tokio::time::timeout(GUARD, async {
        while !answer.ends_with(b"\r\n\r\nhi") {
            let n = conn.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed before the answer: {}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("an answer");
    String::from_utf8_lossy(&answer).into_owned()
}

/// Waits until the server closes `conn`; returns what it sent first.
async fn closed(conn: &mut TcpStream) -> Vec<u8> {
    let mut all = Vec::new();
    tokio::time::timeout(GUARD, async {
        let mut buf = [0u8; 1024];
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => all.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .expect("the server closes the connection");
    all
}

async fn until(what: &str, mut done: impl FnMut() -> bool) {
    tokio::time::timeout(GUARD, async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_no_complete_request_is_closed_after_the_first_request_time() {
    let server = start(limits(8, Duration::from_millis(300), None)).await;
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    let mut trickling = TcpStream::connect(server.addr).await.unwrap();
    let trickle = tokio::spawn(async move {
        // One byte each 50 ms: a request head that is never done within the limit.
        for b in
            b"GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n"
        {
            if trickling.write_all(&[*b]).await.is_err() {
                return (trickling, true);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (trickling, false)
    });
    assert!(closed(&mut silent).await.is_empty());
    let (mut trickling, cut) = trickle.await.unwrap();
    assert!(cut || closed(&mut trickling).await.is_empty(), "the trickled request was answered");
    until("the slots are given back", || server.connections.active() == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_requests_buy_a_stranger_no_time() {
    let server = start(limits(8, Duration::from_millis(300), None)).await;
    let mut stranger = TcpStream::connect(server.addr).await.unwrap();
    let asking = tokio::spawn(async move {
        for _ in 0..1000 {
            if stranger.write_all(b"GET /no HTTP/1.1\r\nHost: x\r\n\r\n").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stranger
    });
    let mut stranger = tokio::time::timeout(GUARD, asking).await.expect("the stranger is closed").unwrap();
    closed(&mut stranger).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admitted_connection_is_kept_while_a_request_is_in_flight_and_closed_when_idle() {
    let server = start(limits(8, Duration::from_millis(300), Some(Duration::from_millis(300)))).await;
    let mut client = TcpStream::connect(server.addr).await.unwrap();
    assert!(ask(&mut client, "/ok").await.starts_with("HTTP/1.1 200"));
    // Longer than the idle limit, but in flight: answered.
    assert!(ask(&mut client, "/slow").await.starts_with("HTTP/1.1 200"));
    assert!(closed(&mut client).await.is_empty());
    until("the slot is given back", || server.connections.active() == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_silent_strangers_hold_every_slot_the_oldest_is_closed_for_a_newcomer() {
    let server = start(limits(4, LONG, None)).await;
    let mut strangers = Vec::new();
    for _ in 0..4 {
        strangers.push(TcpStream::connect(server.addr).await.unwrap());
        let n = strangers.len();
        until("the stranger is served", || server.connections.active() == n).await;
    }
    let mut newcomer = TcpStream::connect(server.addr).await.unwrap();
    assert!(ask(&mut newcomer, "/ok").await.starts_with("HTTP/1.1 200"));
    assert!(closed(&mut strangers[0]).await.is_empty(), "the oldest stranger made room");
    assert_eq!(server.connections.active(), 4);
    assert_eq!(server.refused.load(Ordering::Relaxed), 0);
    // The newcomer is admitted now: the next newcomers take the strangers' slots, never its.
    for stranger in strangers.iter_mut().skip(1) {
        let mut next = TcpStream::connect(server.addr).await.unwrap();
        assert!(ask(&mut next, "/ok").await.starts_with("HTTP/1.1 200"));
        assert!(closed(stranger).await.is_empty());
        *stranger = next;
    }
    assert!(ask(&mut newcomer, "/ok").await.starts_with("HTTP/1.1 200"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admitted_connections_are_never_closed_for_a_newcomer_who_is_refused_instead() {
    let server = start(limits(2, LONG, None)).await;
    let mut clients = Vec::new();
    for _ in 0..2 {
        let mut c = TcpStream::connect(server.addr).await.unwrap();
        assert!(ask(&mut c, "/ok").await.starts_with("HTTP/1.1 200"));
        clients.push(c);
    }
    let mut newcomer = TcpStream::connect(server.addr).await.unwrap();
    assert!(closed(&mut newcomer).await.is_empty());
    assert_eq!(server.refused.load(Ordering::Relaxed), 1);
    for c in &mut clients {
        assert!(ask(c, "/ok").await.starts_with("HTTP/1.1 200"));
    }
    drop(clients);
    until("the slots are given back", || server.connections.active() == 0).await;
    let mut c = TcpStream::connect(server.addr).await.unwrap();
    assert!(ask(&mut c, "/ok").await.starts_with("HTTP/1.1 200"));
}

#[test]
fn the_host_check_refuses_a_foreign_a_missing_and_a_doubled_host() {
    let listen: SocketAddr = "127.0.0.1:7878".parse().unwrap();
    let headers = |hosts: &[&str]| {
        let mut h = http::HeaderMap::new();
        for host in hosts {
            h.append(http::header::HOST, host.parse().unwrap());
        }
        h
    };
    for good in ["127.0.0.1:7878", "localhost:7878", "LOCALHOST:7878", "[::1]:7878"] {
        assert_eq!(check_host(&headers(&[good]), listen), Ok(()), "{good}");
    }
    for (hosts, given) in [
        (&["evil.example"][..], "\"evil.example\""),
        (&["evil.example:7878"][..], "\"evil.example:7878\""),
        (&["localhost:7879"][..], "\"localhost:7879\""),
        (&["localhost"][..], "\"localhost\""),
        (&[][..], "none"),
        (&["127.0.0.1:7878", "127.0.0.1:7878"][..], "several"),
    ] {
        let why = check_host(&headers(hosts), listen).unwrap_err();
        assert_eq!(
            why,
            format!("this server answers only requests for 127.0.0.1:7878, localhost:7878, [::1]:7878 (Host header: {given})"),
            "{hosts:?}"
        );
    }
    let other: SocketAddr = "127.0.0.2:80".parse().unwrap();
    assert!(host_allowed("127.0.0.2:80", other) && host_allowed("localhost", other), "port 80 may be left out");
    assert!(check_host(&headers(&["127.0.0.3:80"]), other).unwrap_err().contains(", 127.0.0.2:80 (Host"));
}
