//! Which HTTP/S3 stack should ioscope's `s3` engine use? This binary answers with a
//! measurement instead of an opinion: against a running S3 server (scripts/s3-server.sh)
//! it does N small GETs and N small PUTs with each candidate stack and reports requests
//! per second and the client's CPU time per request.
//!
//! The two stacks:
//! - `hyper`: hyper 1.x's low-level HTTP/1.1 client (`hyper::client::conn::http1`) over
//!   tokio `TcpStream`s, D connections each with one request in flight, requests signed
//!   with the `aws-sigv4` crate. This is what an engine that owns its connections (as
//!   engine-nfs owns its sockets) would build on.
//! - `sdk`: `aws-sdk-s3` with its default features and default HTTPS-capable HTTP client,
//!   pointed at the plain-http endpoint with path-style addressing, D tasks sharing one
//!   `Client` (so its pool opens D connections).
//!
//! Both run on one current-thread tokio runtime, one stack at a time, alternating stacks
//! round by round so that drift on a shared machine hits both alike. CPU time is
//! `getrusage(RUSAGE_SELF)` (user + system, all threads of the process) over the timed
//! loop, because a stack may do work off the runtime's thread (a DNS lookup on the
//! blocking pool, for instance); RUSAGE_THREAD is printed beside it so the difference is
//! visible. With `--server-pid`, the server's CPU per request (from /proc/PID/stat) is
//! shown too, as a yardstick for what the client costs relative to the server.
//!
//! Configuration comes from the environment that `scripts/s3-server.sh` writes to
//! STATE_DIR/env: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
//! IOSCOPE_S3_ENDPOINT (http://127.0.0.1:PORT), IOSCOPE_S3_BUCKET.

use std::error::Error;
use std::time::{Duration, Instant, SystemTime};

use aws_sdk_s3::primitives::ByteStream;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use tokio::net::TcpStream;

type BoxError = Box<dyn Error + Send + Sync>;

const USAGE: &str = "usage: s3client-bench [--requests N] [--depth D] [--rounds R] \
[--size BYTES] [--keys K] [--stacks hyper,sdk] [--server-pid PID]";

/// Command-line options, with the defaults run.sh documents.
struct Options {
    /// Requests per operation (GET, PUT) per stack per round.
    requests: usize,
    /// Connections (hyper) or concurrent tasks (sdk), one request in flight each.
    depth: usize,
    rounds: usize,
    size: usize,
    /// Distinct object keys; PUTs cycle through them and GETs read them back.
    keys: usize,
    stacks: Vec<Stack>,
    server_pid: Option<u32>,
}

impl Options {
    fn parse() -> Result<Options, String> {
        let mut o = Options {
            requests: 20_000,
            depth: 4,
            rounds: 3,
            size: 4096,
            keys: 256,
            stacks: vec![Stack::Hyper, Stack::Sdk],
            server_pid: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(flag) = args.next() {
            if flag == "-h" || flag == "--help" {
                println!("{USAGE}");
                std::process::exit(0);
            }
            let value = args.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
            let num = || {
                value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("{flag} {value:?}: expected a positive integer"))
            };
            match flag.as_str() {
                "--requests" => o.requests = num()?,
                "--depth" => o.depth = num()?,
                "--rounds" => o.rounds = num()?,
                "--size" => o.size = num()?,
                "--keys" => o.keys = num()?,
                "--server-pid" => o.server_pid = Some(num()? as u32),
                "--stacks" => {
                    o.stacks = value
                        .split(',')
                        .map(|s| match s {
                            "hyper" => Ok(Stack::Hyper),
                            "sdk" => Ok(Stack::Sdk),
                            _ => Err(format!("--stacks {s:?}: expected hyper or sdk")),
                        })
                        .collect::<Result<_, _>>()?
                }
                _ => return Err(format!("unknown option {flag:?}\n{USAGE}")),
            }
        }
        Ok(o)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Stack {
    Hyper,
    Sdk,
}

impl Stack {
    fn name(self) -> &'static str {
        match self {
            Stack::Hyper => "hyper 1.x http1 + aws-sigv4",
            Stack::Sdk => "aws-sdk-s3 (default client)",
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Get,
    Put,
}

/// Where the server is and who we are, from the env file's variables.
struct Target {
    access_key: String,
    secret_key: String,
    region: String,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    endpoint: String,
    /// `127.0.0.1:PORT`, for the TCP connect and the Host header.
    authority: String,
    bucket: String,
}

impl Target {
    fn from_env() -> Result<Target, String> {
        let var = |name: &str| {
            std::env::var(name)
                .map_err(|_| format!("{name} is not set: source the env file of scripts/s3-server.sh start"))
        };
        let endpoint = var("IOSCOPE_S3_ENDPOINT")?.trim_end_matches('/').to_string();
        let authority = endpoint
            .strip_prefix("http://")
            .ok_or_else(|| format!("IOSCOPE_S3_ENDPOINT {endpoint:?}: expected http://HOST:PORT"))?
            .to_string();
        Ok(Target {
            access_key: var("AWS_ACCESS_KEY_ID")?,
            secret_key: var("AWS_SECRET_ACCESS_KEY")?,
            region: std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into()),
            endpoint,
            authority,
            bucket: var("IOSCOPE_S3_BUCKET")?,
        })
    }

    fn key(&self, i: usize, keys: usize) -> String {
        format!("s3client-bench/obj-{:05}", i % keys)
    }
}

/// CPU seconds (user + system) of the process and of the calling thread.
fn cpu_seconds() -> (f64, f64) {
    fn get(who: libc::c_int) -> f64 {
        // SAFETY: getrusage only writes into the zeroed struct we pass.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(who, &mut ru) };
        assert_eq!(rc, 0, "getrusage");
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(ru.ru_utime) + tv(ru.ru_stime)
    }
    (get(libc::RUSAGE_SELF), get(libc::RUSAGE_THREAD))
}

/// CPU seconds (utime + stime) of another process, from /proc/PID/stat.
fn proc_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after "(comm)": state is the 1st, utime the 12th, stime the 13th.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some(ticks / hz)
}

/// Opens one HTTP/1.1 connection; a task on the local set drives it.
async fn connect_one(authority: &str) -> Result<http1::SendRequest<Full<Bytes>>, BoxError> {
    let tcp = TcpStream::connect(authority).await?;
    tcp.set_nodelay(true)?;
    let (sender, conn) = http1::handshake(TokioIo(tcp)).await?;
    tokio::task::spawn_local(async move {
        if let Err(e) = conn.await {
            eprintln!("s3client-bench: hyper connection: {e}");
        }
    });
    Ok(sender)
}

/// The hyper stack: D HTTP/1.1 connections, each driven by its own task, and a signer.
struct HyperStack {
    senders: Vec<http1::SendRequest<Full<Bytes>>>,
    identity: Identity,
}

impl HyperStack {
    async fn connect(t: &Target, depth: usize) -> Result<HyperStack, BoxError> {
        let mut senders = Vec::with_capacity(depth);
        for _ in 0..depth {
            senders.push(connect_one(&t.authority).await?);
        }
        let identity = aws_credential_types::Credentials::new(&t.access_key, &t.secret_key, None, None, "env").into();
        Ok(HyperStack { senders, identity })
    }

    /// One signed request on connection `conn`; returns the response body's length.
    async fn request(&mut self, t: &Target, conn: usize, op: Op, key: &str, body: &Bytes) -> Result<usize, BoxError> {
        let path = format!("/{}/{}", t.bucket, key);
        let url = format!("{}{}", t.endpoint, path);
        let (method, payload) = match op {
            Op::Get => ("GET", Bytes::new()),
            Op::Put => ("PUT", body.clone()),
        };
        // S3's SigV4 flavour: the path is signed as sent (no normalisation, no double
        // encoding) and the payload hash goes in x-amz-content-sha256, which S3 requires.
        let mut settings = SigningSettings::default();
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        let params = v4::SigningParams::builder()
            .identity(&self.identity)
            .region(&t.region)
            .name("s3")
            .time(SystemTime::now())
            .settings(settings)
            .build()?
            .into();
        let signable = SignableRequest::new(
            method,
            url.as_str(),
            [("host", t.authority.as_str())].into_iter(),
            SignableBody::Bytes(&payload),
        )?;
        let (instructions, _signature) = sign(signable, &params)?.into_parts();
        let mut req = http::Request::builder()
            .method(method)
            .uri(path.as_str())
            .header(http::header::HOST, t.authority.as_str())
            .body(Full::new(payload))?;
        instructions.apply_to_request_http1x(&mut req);

        // MinIO closes connections idle for 30 s (its --idle-timeout), which happens
        // between rounds; like the SDK's pool, reconnect then, and resend a request the
        // closing connection did not take.
        if self.senders[conn].is_closed() || self.senders[conn].ready().await.is_err() {
            self.senders[conn] = connect_one(&t.authority).await?;
        }
        let resp = match self.senders[conn].try_send_request(req).await {
            Ok(resp) => resp,
            Err(mut e) => match e.take_message() {
                Some(req) => {
                    self.senders[conn] = connect_one(&t.authority).await?;
                    self.senders[conn].ready().await?;
                    self.senders[conn].send_request(req).await?
                }
                None => return Err(e.into_error().into()),
            },
        };
        let status = resp.status();
        let bytes = resp.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            return Err(format!(
                "{method} {path}: HTTP {status}: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
            )
            .into());
        }
        Ok(bytes.len())
    }
}

/// tokio's `TcpStream` seen through hyper 1.x's own I/O traits. (hyper-util has this
/// adapter; it is a dozen lines, and writing it keeps the stack at hyper + tokio.)
struct TokioIo(TcpStream);

impl hyper::rt::Read for TokioIo {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use tokio::io::AsyncRead;
        // SAFETY: ReadBuf only writes initialised bytes into the uninitialised tail, and
        // we advance the cursor by exactly what it filled.
        let n = unsafe {
            let mut tbuf = tokio::io::ReadBuf::uninit(buf.as_mut());
            match std::pin::Pin::new(&mut self.0).poll_read(cx, &mut tbuf) {
                std::task::Poll::Ready(Ok(())) => tbuf.filled().len(),
                other => return other,
            }
        };
        unsafe { buf.advance(n) };
        std::task::Poll::Ready(Ok(()))
    }
}

impl hyper::rt::Write for TokioIo {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        use tokio::io::AsyncWrite;
        std::pin::Pin::new(&mut self.0).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use tokio::io::AsyncWrite;
        std::pin::Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use tokio::io::AsyncWrite;
        std::pin::Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

fn sdk_client(t: &Target) -> aws_sdk_s3::Client {
    let conf = aws_sdk_s3::Config::builder()
        .region(aws_sdk_s3::config::Region::new(t.region.clone()))
        .endpoint_url(&t.endpoint)
        .credentials_provider(aws_sdk_s3::config::Credentials::new(&t.access_key, &t.secret_key, None, None, "env"))
        .force_path_style(true)
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

async fn sdk_request(
    client: &aws_sdk_s3::Client,
    t: &Target,
    op: Op,
    key: &str,
    body: &Bytes,
) -> Result<usize, BoxError> {
    match op {
        Op::Put => {
            client.put_object().bucket(&t.bucket).key(key).body(ByteStream::from(body.clone())).send().await?;
            Ok(0)
        }
        Op::Get => {
            let out = client.get_object().bucket(&t.bucket).key(key).send().await?;
            Ok(out.body.collect().await?.into_bytes().len())
        }
    }
}

/// One timed batch: `n` requests of `op`, spread over `depth` workers.
struct Sample {
    requests: usize,
    wall: Duration,
    cpu_process_s: f64,
    cpu_thread_s: f64,
    cpu_server_s: Option<f64>,
}

/// Runs `n` requests of `op` with `depth` in flight on the given stack and measures them.
async fn batch(
    stack: &mut StackState,
    t: &Target,
    o: &Options,
    op: Op,
    n: usize,
    body: &Bytes,
) -> Result<Sample, BoxError> {
    let server0 = o.server_pid.and_then(proc_cpu_seconds);
    let (p0, th0) = cpu_seconds();
    let start = Instant::now();
    let depth = o.depth;
    // Worker w does requests w, w + depth, w + 2*depth, ... so each key is touched
    // by one worker at a time and the total is exactly n.
    let mut bytes = 0usize;
    match stack {
        StackState::Hyper(h) => {
            // Each worker owns one connection; the senders are moved out and back so the
            // workers can run concurrently on the local task set.
            let senders = std::mem::take(&mut h.senders);
            let identity = h.identity.clone();
            let mut workers = Vec::with_capacity(depth);
            for (w, sender) in senders.into_iter().enumerate() {
                let mut one = HyperStack { senders: vec![sender], identity: identity.clone() };
                let t = t.clone_ref();
                let body = body.clone();
                let keys = o.keys;
                workers.push(tokio::task::spawn_local(async move {
                    let mut got = 0usize;
                    let mut i = w;
                    while i < n {
                        got += one.request(&t, 0, op, &t.key(i, keys), &body).await?;
                        i += depth;
                    }
                    Ok::<_, BoxError>((one.senders.pop().expect("sender"), got))
                }));
            }
            for wk in workers {
                let (sender, got) = wk.await??;
                h.senders.push(sender);
                bytes += got;
            }
        }
        StackState::Sdk(client) => {
            let mut workers = Vec::with_capacity(depth);
            for w in 0..depth {
                let client = client.clone();
                let t = t.clone_ref();
                let body = body.clone();
                let keys = o.keys;
                workers.push(tokio::task::spawn_local(async move {
                    let mut got = 0usize;
                    let mut i = w;
                    while i < n {
                        got += sdk_request(&client, &t, op, &t.key(i, keys), &body).await?;
                        i += depth;
                    }
                    Ok::<_, BoxError>(got)
                }));
            }
            for wk in workers {
                bytes += wk.await??;
            }
        }
    }
    let wall = start.elapsed();
    let (p1, th1) = cpu_seconds();
    let server1 = o.server_pid.and_then(proc_cpu_seconds);
    if op == Op::Get && bytes != n * o.size {
        return Err(format!("GET read {bytes} bytes, expected {}", n * o.size).into());
    }
    Ok(Sample {
        requests: n,
        wall,
        cpu_process_s: p1 - p0,
        cpu_thread_s: th1 - th0,
        cpu_server_s: server0.zip(server1).map(|(a, b)| b - a),
    })
}

impl Target {
    fn clone_ref(&self) -> std::rc::Rc<Target> {
        std::rc::Rc::new(Target {
            access_key: self.access_key.clone(),
            secret_key: self.secret_key.clone(),
            region: self.region.clone(),
            endpoint: self.endpoint.clone(),
            authority: self.authority.clone(),
            bucket: self.bucket.clone(),
        })
    }
}

enum StackState {
    Hyper(HyperStack),
    Sdk(aws_sdk_s3::Client),
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

async fn run(o: Options) -> Result<(), BoxError> {
    let t = Target::from_env()?;
    // Incompressible-looking payload, the same for every PUT.
    let body = Bytes::from((0..o.size).map(|i| (i as u32).wrapping_mul(2654435761) as u8 >> 1).collect::<Vec<u8>>());
    let mut stacks = Vec::new();
    for &s in &o.stacks {
        let state = match s {
            Stack::Hyper => StackState::Hyper(HyperStack::connect(&t, o.depth).await?),
            Stack::Sdk => StackState::Sdk(sdk_client(&t)),
        };
        stacks.push((s, state));
    }
    println!(
        "endpoint {} bucket {}: {} B objects, {} keys, depth {}, {} requests per op per round, {} rounds",
        t.endpoint, t.bucket, o.size, o.keys, o.depth, o.requests, o.rounds
    );
    // Warm-up, untimed: every stack writes all keys once (so GETs find them) and reads
    // them once, which also opens the SDK's pooled connections.
    for (_, st) in stacks.iter_mut() {
        batch(st, &t, &o, Op::Put, o.keys.max(o.depth), &body).await?;
        batch(st, &t, &o, Op::Get, o.keys.max(o.depth), &body).await?;
    }
    println!();
    println!("| round | stack | op | requests | wall s | req/s | client CPU µs/req (process) | client CPU µs/req (runtime thread) | server CPU µs/req |");
    println!("|---|---|---|---|---|---|---|---|---|");
    // results[stack][op] = samples
    let mut results: Vec<[Vec<Sample>; 2]> = o.stacks.iter().map(|_| [Vec::new(), Vec::new()]).collect();
    for round in 1..=o.rounds {
        // Alternate the order of the stacks from round to round.
        let order: Vec<usize> =
            if round % 2 == 1 { (0..stacks.len()).collect() } else { (0..stacks.len()).rev().collect() };
        for si in order {
            for (oi, op) in [(0, Op::Get), (1, Op::Put)] {
                let (s, st) = &mut stacks[si];
                let sample = batch(st, &t, &o, op, o.requests, &body).await?;
                print_row(&round.to_string(), *s, op, &sample);
                results[si][oi].push(sample);
            }
        }
    }
    println!();
    println!("Medians over {} rounds:", o.rounds);
    println!();
    println!(
        "| stack | op | req/s | client CPU µs/req (process) | client CPU µs/req (runtime thread) | server CPU µs/req |"
    );
    println!("|---|---|---|---|---|---|");
    for (si, (s, _)) in stacks.iter().enumerate() {
        for (oi, op) in [(0, Op::Get), (1, Op::Put)] {
            let v = &results[si][oi];
            let rps = median(v.iter().map(|x| x.requests as f64 / x.wall.as_secs_f64()).collect());
            let cpu = median(v.iter().map(|x| x.cpu_process_s * 1e6 / x.requests as f64).collect());
            let cpu_t = median(v.iter().map(|x| x.cpu_thread_s * 1e6 / x.requests as f64).collect());
            let srv = if v.iter().all(|x| x.cpu_server_s.is_some()) {
                format!("{:.1}", median(v.iter().map(|x| x.cpu_server_s.unwrap() * 1e6 / x.requests as f64).collect()))
            } else {
                "-".into()
            };
            println!("| {} | {} | {:.0} | {:.1} | {:.1} | {} |", s.name(), op_name(op), rps, cpu, cpu_t, srv);
        }
    }
    Ok(())
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Get => "GET",
        Op::Put => "PUT",
    }
}

fn print_row(round: &str, s: Stack, op: Op, x: &Sample) {
    let per = |sec: f64| sec * 1e6 / x.requests as f64;
    println!(
        "| {} | {} | {} | {} | {:.2} | {:.0} | {:.1} | {:.1} | {} |",
        round,
        s.name(),
        op_name(op),
        x.requests,
        x.wall.as_secs_f64(),
        x.requests as f64 / x.wall.as_secs_f64(),
        per(x.cpu_process_s),
        per(x.cpu_thread_s),
        x.cpu_server_s.map(|c| format!("{:.1}", per(c))).unwrap_or_else(|| "-".into()),
    );
}

fn main() {
    let o = match Options::parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("s3client-bench: {e}");
            std::process::exit(2);
        }
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let local = tokio::task::LocalSet::new();
    if let Err(e) = local.block_on(&rt, run(o)) {
        eprintln!("s3client-bench: error: {e}");
        std::process::exit(1);
    }
}
