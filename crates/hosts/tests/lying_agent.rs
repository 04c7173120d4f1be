//! A lying agent against the real coordinator, in-process: an honest agent (the real
//! one, engine null) and a fake one speaking the real protocol over TCP, which answers
//! hundreds of random and boundary-valued seconds, then one lie. After every run the
//! results file opens with the normal reader, the honest host's seconds are all there,
//! the liar is named lost (or its lie failed the run by max_errors or its status), and
//! the run's status is what docs/exit-codes.md says.

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use ioscope_hosts::agent::{Agent, AgentConfig};
use ioscope_hosts::messages::*;
use ioscope_metrics::{Histogram, Op, OpInterval, OpSeries, Snapshot};
use ioscope_proto::Token;
use ioscope_store::Status;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TOKEN: &str = "a-token-for-this-test-0123456789";

/// A small xorshift: no dependency, and a seed printed for a failure to be replayed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn boundary(&mut self) -> u64 {
        [0, 1, 2, 1 << 52, (1 << 52) + 1, u32::MAX as u64, i64::MAX as u64, u64::MAX - 1, u64::MAX]
            [self.below(9) as usize]
    }
}

/// The lies, each ending the liar's run (lost, or failed by its status or max_errors).
const LIES: [&str; 24] = [
    "count_2_52",
    "sum_u128_max",
    "min0_max_u64",
    "hist_count_differs",
    "interval_0",
    "step_2_32",
    "worker_cpu_max",
    "skipped_max",
    "errors_by_kind_huge",
    "full_histogram",
    "duplicate_second",
    "out_of_order",
    "future_second",
    "huge_strings_escapes",
    "done_bad_status",
    "done_running",
    "started_i64_min",
    "started_far",
    "first_io_i64_min",
    "too_many_seconds",
    "too_many_kinds",
    "eio_half",
    "done_completed",
    "random_boundaries",
];

struct Liar {
    rng: Rng,
    /// Answers to give before the lie.
    honest_answers: usize,
    lie: &'static str,
    start_unix_ns: Option<i64>,
    next_second: u32,
    /// Answers given up to and including the lie (later ones are not counted: the
    /// coordinator has stopped listening).
    counted: Arc<AtomicUsize>,
    lied: bool,
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64
}

/// A valid second: a few reads, their latencies and sizes agreeing with their counts.
fn valid_second(rng: &mut Rng, second: u32) -> Snapshot {
    let mut s = Snapshot::new(second, 1_000_000_000, "liar");
    let mut d = OpInterval::empty();
    for _ in 0..rng.below(50) {
        let (lat, size) = (1 + rng.below(1 << 30), 4096 * (1 + rng.below(16)));
        d.latency_ns.record(lat);
        d.service_ns.record(lat);
        d.size_bytes.record(size);
        d.offset_bytes.record(rng.below(1 << 40));
        d.counts.ops += 1;
        d.counts.bytes += size;
    }
    s.ops.push(OpSeries { workload: String::new(), op: Op::Read, data: d });
    s
}

fn lie(l: &mut Liar) -> SecondsAnswer {
    let t0 = l.start_unix_ns;
    let mut a = SecondsAnswer { seconds: Vec::new(), started_unix_ns: t0, done: None };
    let second = l.next_second;
    let mut s = valid_second(&mut l.rng, second);
    let d = &mut s.ops[0].data;
    let done = |status: &str| Done {
        status: status.into(),
        detail: Some("fake\n\x1b[31mred".into()),
        first_errors: vec!["x\x1b[2J".into()],
        engine: None,
        first_io_unix_ns: None,
        nic_counters: None,
    };
    match l.lie {
        "count_2_52" => d.counts.ops = 1 << 52,
        "sum_u128_max" => d.latency_ns = Histogram::from_sparse([(5, 1)], u128::MAX, 5, 5),
        "min0_max_u64" => d.latency_ns = Histogram::from_sparse([(1000, 3)], 3000, 0, u64::MAX),
        "hist_count_differs" => d.counts.ops += 1,
        "interval_0" => s.interval_ns = 0,
        "step_2_32" => s.step = u32::MAX,
        "worker_cpu_max" => s.worker_cpu.push(ioscope_metrics::WorkerCpu { worker: 0, cpu_ns: u64::MAX, wait_ns: 0 }),
        "skipped_max" => {
            d.skipped = u64::MAX;
            a.seconds.push(s.clone());
            s.second += 1;
        }
        "errors_by_kind_huge" => {
            d.errors_by_kind = (0..600).map(|k| (format!("E{k}"), u64::MAX / 600)).collect();
            d.counts.errors = u64::MAX;
        }
        "full_histogram" => {
            let cells: Vec<(usize, u64)> = (0..ioscope_metrics::histogram::BUCKETS).map(|i| (i, 1)).collect();
            d.latency_ns = Histogram::from_sparse(cells, 1, 1000, 1000);
            d.counts.ops = d.latency_ns.count();
        }
        "duplicate_second" | "out_of_order" => {
            s.second = second.saturating_sub(if l.lie == "out_of_order" { 1 } else { 0 });
            if second == 0 {
                a.seconds.push(s.clone());
            }
        }
        "future_second" => s.second = second + 1 + l.rng.below(2) as u32,
        "huge_strings_escapes" => {
            s.files.push(ioscope_metrics::FileCounts {
                file: format!("f\x1b[31m{}", "x".repeat(l.rng.below(100_000) as usize)),
                op: Op::Read,
                counts: Default::default(),
            });
        }
        "done_bad_status" => a.done = Some(done("exploded")),
        "done_running" => a.done = Some(done("running")),
        "started_i64_min" => a.started_unix_ns = Some(i64::MIN),
        "started_far" => a.started_unix_ns = Some(i64::MAX),
        "first_io_i64_min" => a.done = Some(Done { first_io_unix_ns: Some(i64::MIN), ..done("completed") }),
        "too_many_seconds" => {
            a.seconds = (0..40).map(|n| valid_second(&mut l.rng, second + n)).collect();
            return a;
        }
        "too_many_kinds" => {
            d.errors_by_kind = (0..513).map(|k| (format!("E{k}"), 1)).collect();
            d.counts.errors = 513;
        }
        "eio_half" => {
            d.counts.errors = d.counts.ops.max(1000);
            d.errors_by_kind = vec![("EIO".into(), d.counts.errors)];
        }
        "done_completed" => {
            a.done = Some(Done { detail: None, first_errors: Vec::new(), ..done("completed") });
            return a;
        }
        _ => {
            // Any counter, sum or bound at a boundary value.
            match l.rng.below(5) {
                0 => d.counts.bytes = l.rng.boundary(),
                1 => d.counts.ops = l.rng.boundary(),
                2 => s.not_broken_down = l.rng.boundary().max(i64::MAX as u64 + 1),
                3 => s.interval_ns = l.rng.boundary().max(u32::MAX as u64 * 1_000_000_000),
                _ => {
                    d.latency_ns = Histogram::from_sparse(
                        [(l.rng.below(7424) as usize, l.rng.boundary().max(1))],
                        u128::MAX,
                        0,
                        u64::MAX,
                    )
                }
            }
        }
    }
    if !matches!(l.lie, "done_bad_status" | "done_running" | "started_i64_min" | "started_far" | "first_io_i64_min") {
        a.seconds.push(s);
    }
    a
}

async fn seconds(State(l): State<Arc<Mutex<Liar>>>, Json(_): Json<Seconds>) -> Json<SecondsAnswer> {
    let mut l = l.lock().unwrap();
    if l.lied {
        return Json(SecondsAnswer { seconds: Vec::new(), started_unix_ns: l.start_unix_ns, done: None });
    }
    l.counted.fetch_add(1, Relaxed);
    // A second is sent once it could have ended, whatever the lie is.
    let ripe = l.start_unix_ns.is_some_and(|t0| now() >= t0 + (l.next_second as i64 + 1) * 1_000_000_000 + 50_000_000);
    if l.honest_answers == 0 && (ripe || !l.lie.contains("second") && l.lie != "eio_half") {
        l.lied = true;
        return Json(lie(&mut l));
    }
    l.honest_answers = l.honest_answers.saturating_sub(1);
    let mut a = SecondsAnswer { seconds: Vec::new(), started_unix_ns: l.start_unix_ns, done: None };
    if ripe && l.rng.below(4) == 0 {
        let n = l.next_second;
        a.seconds.push(valid_second(&mut l.rng, n));
        l.next_second += 1;
    }
    Json(a)
}

fn liar_router(liar: Arc<Mutex<Liar>>) -> Router {
    async fn hello(Json(_): Json<Hello>) -> Json<HelloAnswer> {
        Json(HelloAnswer {
            version: env!("CARGO_PKG_VERSION").into(),
            hostname: "fake\n\x1b[31mred".into(),
            pid: 1,
            protocol: PROTOCOL,
        })
    }
    async fn clock(Json(_): Json<Empty>) -> Json<ClockAnswer> {
        Json(ClockAnswer { unix_ns: now() })
    }
    async fn empty(Json(_): Json<serde_json::Value>) -> Json<Empty> {
        Json(Empty {})
    }
    async fn prepared(Json(_): Json<PrepareWait>) -> Json<PreparedAnswer> {
        Json(PreparedAnswer {
            done: Some(PrepareAnswer {
                plan_json: String::new(),
                config: serde_json::json!({}),
                prepared: "\x1b[31mready".into(),
            }),
        })
    }
    async fn start(State(l): State<Arc<Mutex<Liar>>>, Json(s): Json<Start>) -> Json<Empty> {
        l.lock().unwrap().start_unix_ns = Some(s.at_unix_ns);
        Json(Empty {})
    }
    Router::new()
        .route(HELLO, post(hello))
        .route(CLOCK, post(clock))
        .route(PREPARE, post(empty))
        .route(PREPARED, post(prepared))
        .route(START, post(start))
        .route(SECONDS, post(seconds))
        .route(STOP, post(empty))
        .with_state(liar)
}

/// Serves `app` on a loopback port of its own, for the life of the test process.
fn serve(rt: &tokio::runtime::Runtime, app: Router) -> u16 {
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = ioscope_proto::authorized(app, Token::from_line(TOKEN).unwrap());
    rt.spawn(ioscope_proto::serve_tcp(listener, None, app, std::future::pending()));
    port
}

/// One run: the honest agent and a liar that gives `honest_answers` answers, then `lie`.
fn one_run(rt: &tokio::runtime::Runtime, dir: &std::path::Path, n: usize, seed: u64, stop: bool) -> usize {
    let lie = LIES[n % LIES.len()];
    let counted = Arc::new(AtomicUsize::new(0));
    let mut rng = Rng(seed | 1);
    let liar = Liar {
        honest_answers: 450 + rng.below(100) as usize,
        rng,
        lie,
        start_unix_ns: None,
        next_second: 0,
        counted: counted.clone(),
        lied: false,
    };
    let honest = Agent::new(AgentConfig { root: None, coordinator_timeout: Duration::from_secs(10) });
    let honest_port = serve(rt, honest.router());
    let liar_port = serve(rt, liar_router(Arc::new(Mutex::new(liar))));
    let token_file = dir.join(format!("token{n}"));
    std::fs::write(&token_file, TOKEN).unwrap();
    let text = format!(
        "engine = \"null\"\nduration = \"2s\"\nhost_timeout = \"5s\"\non_host_loss = \"{}\"\n\
         [[host]]\nname = \"honest\"\naddress = \"agent://127.0.0.1:{honest_port}\"\ntoken_file = \"{t}\"\n\
         [[host]]\nname = \"liar\"\naddress = \"agent://127.0.0.1:{liar_port}\"\ntoken_file = \"{t}\"\n",
        if stop { "stop" } else { "continue" },
        t = token_file.display()
    );
    let source = ioscope_workload::SourceFile { path: "w.toml".into(), text };
    let plan = ioscope_workload::build_plan(Some(&source), &ioscope_workload::Flags::default()).unwrap();
    let out = dir.join(format!("r{n}.db"));
    let interrupt = AtomicBool::new(false);
    let said = Mutex::new(Vec::<String>::new());
    let say = |line: &str| said.lock().unwrap().push(line.to_string());
    let outcome = ioscope_hosts::coordinate(
        &plan,
        ioscope_hosts::Coordinate {
            out: out.clone(),
            command_line: "test".into(),
            workload_toml: ioscope_workload::to_toml(&plan),
            workload_hash: ioscope_workload::plan_hash(&plan),
            interrupt: &interrupt,
            on_second: &mut |_| {},
            say: &say,
            probes: Vec::new(),
        },
    );
    let why = format!("seed {seed} run {n} lie {lie} (stop: {stop})");
    let outcome = outcome.unwrap_or_else(|e| panic!("{why}: {e}"));
    for line in said.lock().unwrap().iter() {
        assert!(!line.chars().any(|c| c.is_control()), "{why}: a raw control character reached the terminal: {line:?}");
    }
    let r = ioscope_store::open(&out).unwrap_or_else(|e| panic!("{why}: the results file does not read: {e}"));
    let honest_seconds = r.seconds.iter().filter(|s| s.host == "honest").count();
    let liar = &r.hosts.iter().find(|(n, _)| n == "liar").unwrap().1["agent"];
    let lost = liar["status"] == "lost";
    let liar_seconds = r.seconds.iter().filter(|s| s.host == "liar").count();
    match lie {
        "eio_half" => {
            assert!(!lost, "{why}: {liar}");
            assert_eq!(outcome.status, Status::Failed, "{why}: 50% EIO is past max_errors 1%: {:?}", outcome.detail);
        }
        "done_completed" if liar_seconds == 0 => assert_eq!(outcome.status, Status::Failed, "{why}: no seconds"),
        "done_completed" => assert_eq!(outcome.status, Status::Completed, "{why}: {:?}", outcome.detail),
        _ => {
            assert!(lost, "{why}: the liar is not named lost: {liar}");
            let expected = if stop { Status::Failed } else { Status::Completed };
            assert_eq!(outcome.status, expected, "{why}: {:?}", outcome.detail);
        }
    }
    assert_eq!(r.run.status, outcome.status, "{why}");
    if !stop && outcome.detail.as_deref().is_none_or(|d| !d.contains("max_errors")) {
        assert_eq!(honest_seconds, 2, "{why}: every second of the honest host is kept");
    }
    // What was stored of the liar keeps the stated limits.
    for s in r.seconds.iter().filter(|s| s.host == "liar") {
        ioscope_store::check::peer_second(s, &[0]).unwrap_or_else(|e| panic!("{why}: stored: {e}"));
    }
    let n = counted.load(Relaxed);
    n
}

#[test]
#[ignore = "does not finish yet: a run does not end once the liar has lied (being debugged)"]
fn a_lying_agent_loses_its_host_never_the_honest_hosts_seconds_or_the_file() {
    let seed = std::env::var("LIAR_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| now() as u64);
    eprintln!("LIAR_SEED={seed}");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let answers = AtomicUsize::new(0);
    // Four runs at a time (each mostly waits for its seconds), every lie at least once.
    std::thread::scope(|scope| {
        for lane in 0..4 {
            let (rt, dir, answers) = (&rt, dir.path(), &answers);
            scope.spawn(move || {
                for n in (lane..LIES.len()).step_by(4) {
                    let stop = n % 5 == 4;
                    answers.fetch_add(one_run(rt, dir, n, seed.wrapping_add(n as u64 * 7919), stop), Relaxed);
                }
            });
        }
    });
    let answers = answers.into_inner();
    assert!(answers >= 5000, "only {answers} answers reached the coordinator");
    eprintln!("{answers} answers from the liar");
}
