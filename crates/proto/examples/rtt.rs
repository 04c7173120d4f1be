//! Round trip and CPU cost of calls over each transport: `cargo run --release -p
//! ioscope-proto --example rtt [CALLS]`. Runs an agent as a child process on its stdio (as
//! under ssh: through `ioscope_proto::stdio`, and through tokio's blocking-thread stdin and
//! stdout for comparison) and on loopback TCP with and without TLS, makes CALLS sequential calls each,
//! and prints the round trip (min, median, p99) and the agent's CPU time per call, for an
//! empty call and for a 16 KiB answer (about one second of 64 series).

use axum::routing::post;
use axum::{Json, Router};
use ioscope_proto::{authorized, serve_stream, serve_tcp, tls_server_config, Client, ClientTls, Token};
use serde_json::Value;
use std::process::Stdio;
use std::time::{Duration, Instant};

const AGENT: &str = "IOSCOPE_PROTO_RTT_AGENT";
const LIMIT: Duration = Duration::from_secs(10);

fn app() -> Router {
    Router::new()
        .route("/v1/ping", post(|| async { Json(0u8) }))
        .route("/v1/second", post(|| async { Json(vec![123_456_789u64; 1600]) }))
        .route("/v1/cpu", post(|| async { Json(cpu_seconds()) }))
}

/// This process's user + system CPU time.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: f64 = [11, 12].iter().filter_map(|i| fields.get(*i)?.parse::<f64>().ok()).sum();
    ticks / 100.0
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mode = std::env::var(AGENT).ok();
    let token = Token::from_line("0123456789abcdef0123456789abcdef").unwrap();
    if mode.as_deref() == Some("stdio") {
        let _ =
            runtime.block_on(async { serve_stream(ioscope_proto::stdio().unwrap(), authorized(app(), token)).await });
        return;
    }
    if mode.as_deref() == Some("tokio-std") {
        let io = tokio::io::join(tokio::io::stdin(), tokio::io::stdout());
        let _ = runtime.block_on(serve_stream(io, authorized(app(), token)));
        runtime.shutdown_timeout(Duration::from_millis(100));
        return;
    }
    if let Some(tls) = mode {
        let dir = std::path::PathBuf::from(std::env::var("RTT_DIR").unwrap());
        let tls = (tls == "tls").then(|| tls_server_config(&dir.join("cert.pem"), &dir.join("key.pem")).unwrap());
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            println!("{}", listener.local_addr().unwrap());
            serve_tcp(listener, tls, authorized(app(), token), std::future::pending()).await.unwrap();
        });
        return;
    }
    let calls: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(2000);
    runtime.block_on(measure(calls, token));
}

async fn measure(calls: usize, token: Token) {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    std::fs::write(dir.path().join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.path().join("key.pem"), cert.key_pair.serialize_pem()).unwrap();
    println!("{calls} sequential calls per line; agent CPU is the agent process's user+system time");
    println!(
        "{:<10} {:<8} {:>9} {:>9} {:>9} {:>16}",
        "transport", "call", "min µs", "p50 µs", "p99 µs", "agent CPU µs/call"
    );
    for transport in ["stdio", "tokio-std", "h2c", "tls"] {
        let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
            .env(AGENT, transport)
            .env("RTT_DIR", dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let client = if transport.contains("std") {
            Client::over_stream(tokio::io::join(stdout, stdin), &token).await.unwrap()
        } else {
            use tokio::io::AsyncBufReadExt;
            let mut line = String::new();
            tokio::io::BufReader::new(stdout).read_line(&mut line).await.unwrap();
            let tls = if transport == "tls" { ClientTls::Ca(dir.path().join("cert.pem")) } else { ClientTls::None };
            Client::connect(line.trim(), &tls, &token, LIMIT).await.unwrap()
        };
        for path in ["/v1/ping", "/v1/second"] {
            let _: Value = client.call(path, &(), LIMIT).await.unwrap();
            let cpu_before: f64 = client.call("/v1/cpu", &(), LIMIT).await.unwrap();
            let mut times = Vec::with_capacity(calls);
            for _ in 0..calls {
                let start = Instant::now();
                let _: Value = client.call(path, &(), LIMIT).await.unwrap();
                times.push(start.elapsed());
            }
            let cpu_after: f64 = client.call("/v1/cpu", &(), LIMIT).await.unwrap();
            times.sort();
            let us = |d: Duration| d.as_secs_f64() * 1e6;
            println!(
                "{:<10} {:<8} {:>9.0} {:>9.0} {:>9.0} {:>16.1}",
                transport,
                path.trim_start_matches("/v1/"),
                us(times[0]),
                us(times[calls / 2]),
                us(times[calls * 99 / 100]),
                (cpu_after - cpu_before) * 1e6 / calls as f64
            );
        }
        drop(client);
        let _ = child.kill().await;
    }
}
