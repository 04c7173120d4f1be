//! Lying agents against the real coordinator, in-process: an honest agent (the real one,
//! engine null) and a fake one speaking the real protocol over TCP. The fake answers each
//! poll at random (its seconds held back or sent in batches, valid values at their
//! boundaries), then lies once at a random instant, and afterwards behaves. After every
//! run the results file opens with the normal reader, the honest host's seconds are all
//! there, the liar is named lost (or its lie failed the run by its own rules), nothing of
//! the liar that was stored breaks a peer's limits, no raw control character reached the
//! terminal, and the run's status is what docs/exit-codes.md says.
//!
//! A failure prints its seed: `LIAR_SEED=N cargo test -p ioscope-hosts --test lying_agent`
//! replays it.

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use ioscope_hosts::agent::{Agent, AgentConfig};
use ioscope_hosts::messages::*;
use ioscope_metrics::{Histogram, Op, OpInterval, OpSeries, Snapshot};
use ioscope_proto::Token;
use ioscope_store::Status;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "a-token-for-this-test-0123456789";
/// The run's seconds: 0 to 3 (a lie of a second 3 s ahead of the clock needs four).
const DURATION_S: u32 = 4;

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

/// Lies that make the results file unreadable if stored (each seen in a reliability pass).
const DAMAGING: [&str; 12] = [
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
];
/// Lies about time and texts.
const TIMES_AND_TEXTS: [&str; 7] = [
    "future_second",
    "started_i64_min",
    "started_far",
    "first_io_i64_min",
    "file_name_escapes",
    "file_name_huge",
    "kind_escapes",
];
/// The liar's last word.
const ENDINGS: [&str; 5] = ["done_bad_status", "done_running", "done_without_seconds", "half_eio", "nothing_succeeds"];
/// Answers of no bounded cost.
const COSTLY: [&str; 5] = ["too_many_seconds", "too_many_kinds", "too_many_rows", "answer_too_large", "never_ends"];

/// What a run of the liar must end as.
#[derive(Debug, PartialEq)]
enum Expect {
    /// The liar is named lost; the run completes (on_host_loss = "continue") or fails ("stop").
    Lost,
    /// The liar's own data fails the run, the liar not lost.
    Failed(&'static str),
    /// Either: a boundary value may be one a second can hold (a count of failures past
    /// max_errors), or not.
    LostOrFailed(&'static str),
    /// Both, in this order: a second it could hold failed the run, and a later one, sent
    /// while the run was being stopped, lost it. The run keeps the first reason.
    FailedThenLost(&'static str),
    /// Interrupted midway: every host stops, none is lost.
    Interrupted,
}

fn expect(lie: &str) -> Expect {
    match lie {
        "done_without_seconds" => Expect::Failed("sent none of its seconds"),
        "half_eio" => Expect::Failed("max_errors"),
        "nothing_succeeds" => Expect::Failed("no I/O succeeded"),
        "random_boundaries" => Expect::LostOrFailed("max_errors"),
        "at_limits" => Expect::Interrupted,
        _ => Expect::Lost,
    }
}

/// Lies that end the run before it starts, with what the message says.
fn before_start(lie: &str) -> Option<&'static str> {
    match lie {
        "prepare_hangs" => Some("preparing"),
        "clock_far" => Some("its clock is"),
        _ => None,
    }
}

struct Liar {
    rng: Rng,
    lie: &'static str,
    /// The run's planned seconds.
    duration_s: u32,
    /// Seconds sent so far (for the test that interrupts a run midway).
    sent: Arc<AtomicUsize>,
    /// The second whose answer carries the lie.
    lie_second: u32,
    start_unix_ns: Option<i64>,
    next_second: u32,
    lied: bool,
    stopped: bool,
    /// Answers given up to and including the lie.
    counted: Arc<AtomicUsize>,
    /// The longest time from an answer to the coordinator's next poll, ns: what handling
    /// one answer cost it.
    slowest_ns: Arc<AtomicU64>,
    answered: Option<Instant>,
    /// Polls for seconds after the lie and the last stop that followed it: the coordinator
    /// stops asking a host it lost, then asks it to stop. (An earlier stop, such as the
    /// end of a run its errors failed, is followed by the polls that drain its seconds.)
    after_stop: usize,
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64
}

/// A valid second with random values, some at the edge of what is valid.
fn valid_second(rng: &mut Rng, second: u32) -> Snapshot {
    let mut s = Snapshot::new(second, 1_000_000_000, "liar");
    let mut d = OpInterval::empty();
    for _ in 0..rng.below(60) {
        let lat = match rng.below(4) {
            0 => 1,
            1 => 1 << 62,
            _ => 1 + rng.below(1 << 30),
        };
        let size = [0, 1, 4096, 1 << 30][rng.below(4) as usize];
        d.latency_ns.record(lat);
        d.service_ns.record(lat);
        d.size_bytes.record(size);
        d.offset_bytes.record(rng.below(1 << 62));
        d.counts.ops += 1;
        d.counts.bytes += size;
    }
    s.ops.push(OpSeries { workload: String::new(), op: Op::Read, data: d });
    for w in 0..rng.below(3) as u32 {
        s.worker_cpu.push(ioscope_metrics::WorkerCpu { worker: w, cpu_ns: rng.below(1 << 30), wait_ns: 0 });
    }
    if rng.below(3) == 0 {
        s.files.push(ioscope_metrics::FileCounts { file: "f.dat".into(), op: Op::Read, counts: Default::default() });
    }
    s
}

/// `ops` I/Os that succeeded and `errors` that failed with `kind`.
fn failed_second(second: u32, kind: &str, ops: u64, errors: u64) -> Snapshot {
    let mut s = Snapshot::new(second, 1_000_000_000, "liar");
    let mut d = OpInterval::empty();
    for _ in 0..ops {
        d.latency_ns.record(1000);
        d.service_ns.record(1000);
        d.size_bytes.record(4096);
        d.offset_bytes.record(0);
    }
    d.counts = ioscope_metrics::Counts { ops, bytes: 4096 * ops, errors };
    d.errors_by_kind = vec![(kind.into(), errors)];
    s.ops.push(OpSeries { workload: String::new(), op: Op::Read, data: d });
    s
}

/// A valid second as costly as a peer's second may be: every row and error kind limit
/// reached, names at their longest (an answer of about 2 MB).
fn second_at_limits(second: u32) -> Snapshot {
    use ioscope_store::check::{MAX_ERROR_KINDS, MAX_NAME_BYTES, MAX_ROWS_PER_SECOND};
    let kinds = MAX_ERROR_KINDS as u64;
    let mut s = failed_second(second, "E", 1000, kinds);
    s.ops[0].data.errors_by_kind = (0..kinds).map(|k| (format!("{k:0>w$}", w = MAX_NAME_BYTES), 1)).collect();
    s.worker_cpu = (0..MAX_ROWS_PER_SECOND as u32)
        .map(|w| ioscope_metrics::WorkerCpu { worker: w, cpu_ns: 1, wait_ns: 0 })
        .collect();
    s.files = (0..MAX_ROWS_PER_SECOND)
        .map(|i| ioscope_metrics::FileCounts {
            file: format!("{i:0>w$}", w = MAX_NAME_BYTES),
            op: Op::Read,
            counts: Default::default(),
        })
        .collect();
    s
}

fn empty_answer(l: &Liar) -> SecondsAnswer {
    SecondsAnswer { seconds: Vec::new(), started_unix_ns: l.start_unix_ns, done: None }
}

fn done(status: &str) -> Done {
    Done {
        status: status.into(),
        detail: Some("fake\n\x1b[31mred".into()),
        first_errors: vec!["x\x1b[2J".into()],
        engine: None,
        first_io_unix_ns: None,
        nic_counters: None,
    }
}

/// The lie, in place of the answer that would send second `l.next_second`.
fn lie(l: &mut Liar) -> SecondsAnswer {
    let mut a = empty_answer(l);
    let second = l.next_second;
    let mut s = valid_second(&mut l.rng, second);
    let d = &mut s.ops[0].data;
    match l.lie {
        "count_2_52" => d.counts.ops = 1 << 52,
        "sum_u128_max" => d.latency_ns = Histogram::from_sparse([(5, 1)], u128::MAX, 5, 5),
        "min0_max_u64" => d.latency_ns = Histogram::from_sparse([(1000, 3)], 3000, 0, u64::MAX),
        "hist_count_differs" => d.counts.ops += 1,
        "interval_0" => s.interval_ns = 0,
        "step_2_32" => s.step = u32::MAX,
        "worker_cpu_max" => s.worker_cpu.push(ioscope_metrics::WorkerCpu { worker: 9, cpu_ns: u64::MAX, wait_ns: 0 }),
        "skipped_max" => d.skipped = u64::MAX,
        "errors_by_kind_huge" => {
            d.errors_by_kind = (0..600).map(|k| (format!("E{k}"), u64::MAX / 600)).collect();
            d.counts.errors = u64::MAX;
        }
        "full_histogram" => {
            let cells: Vec<(usize, u64)> = (0..ioscope_metrics::histogram::BUCKETS).map(|i| (i, 1)).collect();
            d.latency_ns = Histogram::from_sparse(cells, 1, 1000, 1000);
            d.counts.ops = d.latency_ns.count();
        }
        // A second sent before, or one before the last one sent.
        "duplicate_second" => s.second = second - 1,
        "out_of_order" => {
            a.seconds.push(s.clone());
            s.second = second - 1;
        }
        // Seconds that end well after the coordinator's now (clocks agree to within 2 s).
        "future_second" => {
            a.seconds = (0..DURATION_S).map(|n| valid_second(&mut l.rng, n)).collect();
            l.next_second = DURATION_S;
            return a;
        }
        "started_i64_min" => a.started_unix_ns = Some(i64::MIN),
        "started_far" => a.started_unix_ns = Some(i64::MAX),
        "first_io_i64_min" => a.done = Some(Done { first_io_unix_ns: Some(i64::MIN), ..done("completed") }),
        "file_name_escapes" => s.files.push(ioscope_metrics::FileCounts {
            file: "f\x1b[31m\n".into(),
            op: Op::Read,
            counts: Default::default(),
        }),
        "file_name_huge" => s.files.push(ioscope_metrics::FileCounts {
            file: "x".repeat(257 + l.rng.below(100_000) as usize),
            op: Op::Read,
            counts: Default::default(),
        }),
        "kind_escapes" => {
            d.errors_by_kind = vec![("EIO\x1b[2J".into(), 1)];
            d.counts.errors = 1;
        }
        "done_bad_status" => a.done = Some(done("exploded")),
        "done_running" => a.done = Some(done("running")),
        "too_many_seconds" => {
            // More seconds in one answer than any agent sends (their time checked apart).
            a.seconds = (0..MAX_SECONDS_PER_ANSWER as u32 + 1).map(|n| valid_second(&mut l.rng, n)).collect();
            return a;
        }
        "too_many_kinds" => {
            d.errors_by_kind = (0..513).map(|k| (format!("E{k}"), 1)).collect();
            d.counts.errors = 513;
        }
        "too_many_rows" => {
            s.worker_cpu = (0..4097).map(|w| ioscope_metrics::WorkerCpu { worker: w, cpu_ns: 1, wait_ns: 0 }).collect();
        }
        "answer_too_large" => {
            // Valid seconds, but the answer is past MAX_ANSWER_BYTES: names make it long.
            s.files = (0..4096)
                .map(|i| ioscope_metrics::FileCounts {
                    file: format!("{i:0>250}"),
                    op: Op::Read,
                    counts: Default::default(),
                })
                .collect();
            a.seconds = vec![s; 17];
            return a;
        }
        "random_boundaries" => match l.rng.below(6) {
            0 => d.counts.bytes = l.rng.boundary().max(1 << 62),
            1 => d.counts.ops = l.rng.boundary().max(1 << 52),
            2 => s.not_broken_down = l.rng.boundary().max(i64::MAX as u64 + 1),
            3 => s.interval_ns = l.rng.boundary().max(u32::MAX as u64 * 1_000_000_000),
            4 => d.counts.errors = l.rng.boundary().max(1 << 52),
            _ => {
                d.latency_ns = Histogram::from_sparse(
                    [(l.rng.below(ioscope_metrics::histogram::BUCKETS as u64) as usize, l.rng.boundary().max(1))],
                    u128::MAX,
                    0,
                    u64::MAX,
                )
            }
        },
        other => panic!("no such lie {other}"),
    }
    if !matches!(l.lie, "done_bad_status" | "done_running" | "started_i64_min" | "started_far" | "first_io_i64_min") {
        a.seconds.push(s);
        l.next_second = a.seconds.iter().map(|s| s.second + 1).fold(l.next_second, u32::max);
    }
    a
}

/// The liar's seconds when its lie is in how it ends rather than in one answer.
fn own_second(l: &mut Liar, second: u32) -> Snapshot {
    match l.lie {
        "half_eio" => failed_second(second, "EIO", 2000, 1000),
        "nothing_succeeds" => failed_second(second, "ETIMEDOUT", 0, 2),
        "at_limits" => second_at_limits(second),
        _ => valid_second(&mut l.rng, second),
    }
}

async fn seconds(State(l): State<Arc<Mutex<Liar>>>, Json(_): Json<Seconds>) -> Json<SecondsAnswer> {
    let answer = {
        let mut guard = l.lock().unwrap();
        let l = &mut *guard;
        if let Some(at) = l.answered {
            l.slowest_ns.fetch_max(at.elapsed().as_nanos() as u64, Relaxed);
        }
        let t0 = l.start_unix_ns;
        let ripe = move |n: u32| t0.is_some_and(|t0| now() >= t0 + (n as i64 + 1) * 1_000_000_000 + 50_000_000);
        let lies_in_answer =
            !matches!(l.lie, "half_eio" | "nothing_succeeds" | "done_without_seconds" | "never_ends" | "at_limits");
        if !l.lied {
            l.counted.fetch_add(1, Relaxed);
        } else if l.stopped {
            l.after_stop += 1;
        }
        if !l.lied && lies_in_answer && l.next_second == l.lie_second && ripe(l.lie_second) {
            l.lied = true;
            lie(l)
        } else if l.lie == "done_without_seconds" && l.start_unix_ns.is_some() {
            l.lied = true;
            SecondsAnswer {
                done: Some(Done { detail: None, first_errors: Vec::new(), ..done("completed") }),
                ..empty_answer(l)
            }
        } else {
            // Honest: the ripe seconds, some held back to the next answer.
            let mut a = empty_answer(l);
            while l.next_second < l.duration_s
                && ripe(l.next_second)
                && (l.lied || !lies_in_answer || l.next_second < l.lie_second)
                && l.rng.below(3) != 0
            {
                let n = l.next_second;
                let s = own_second(l, n);
                a.seconds.push(s);
                l.next_second += 1;
                l.sent.fetch_add(1, Relaxed);
            }
            // A liar ignores the stop once it has lied: only the coordinator ends its polls.
            let over = (l.stopped && !l.lied) || l.next_second >= l.duration_s;
            if over && a.seconds.is_empty() && l.lie != "never_ends" {
                a.done = Some(done(if l.stopped { "interrupted" } else { "completed" }));
            }
            a
        }
    };
    if answer.seconds.is_empty() && answer.done.is_none() {
        // As an agent's long poll: not every answer at once.
        tokio::time::sleep(Duration::from_millis(4)).await;
    }
    l.lock().unwrap().answered = Some(Instant::now());
    Json(answer)
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
    async fn clock(State(l): State<Arc<Mutex<Liar>>>, Json(_): Json<Empty>) -> Json<ClockAnswer> {
        let far = if l.lock().unwrap().lie == "clock_far" { 365 * 86_400 * 1_000_000_000 } else { 0 };
        Json(ClockAnswer { unix_ns: now() + far })
    }
    async fn empty(Json(_): Json<serde_json::Value>) -> Json<Empty> {
        Json(Empty {})
    }
    async fn prepared(State(l): State<Arc<Mutex<Liar>>>, Json(_): Json<PrepareWait>) -> Json<PreparedAnswer> {
        if l.lock().unwrap().lie == "prepare_hangs" {
            std::future::pending::<()>().await;
        }
        Json(PreparedAnswer {
            done: Some(PrepareAnswer {
                plan_json: String::new(),
                config: serde_json::json!({"system": {"kernel": "\x1b[31m6.1\n"}}),
                prepared: "\x1b[31mready".into(),
            }),
        })
    }
    async fn start(State(l): State<Arc<Mutex<Liar>>>, Json(s): Json<Start>) -> Json<Empty> {
        l.lock().unwrap().start_unix_ns = Some(s.at_unix_ns);
        Json(Empty {})
    }
    async fn stop(State(l): State<Arc<Mutex<Liar>>>, Json(_): Json<Empty>) -> Json<Empty> {
        let mut l = l.lock().unwrap();
        l.stopped = true;
        l.after_stop = 0;
        Json(Empty {})
    }
    Router::new()
        .route(HELLO, post(hello))
        .route(CLOCK, post(clock))
        .route(PREPARE, post(empty))
        .route(PREPARED, post(prepared))
        .route(START, post(start))
        .route(SECONDS, post(seconds))
        .route(STOP, post(stop))
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

/// What one run showed.
struct Ran {
    answers: usize,
    slowest_ns: u64,
    /// From the interrupt to the run's end, when it was interrupted.
    interrupt_to_end: Option<Duration>,
}

/// One run of the honest agent and a liar telling `lie`; checks everything the module
/// says, and panics naming the seed to replay.
fn one_run(rt: &tokio::runtime::Runtime, dir: &std::path::Path, lie: &'static str, seed: u64, stop: bool) -> Ran {
    let counted = Arc::new(AtomicUsize::new(0));
    let slowest = Arc::new(AtomicU64::new(0));
    let mut rng = Rng(seed | 1);
    let lie_second = match lie {
        "duplicate_second" | "out_of_order" => 1 + rng.below(DURATION_S as u64 - 1) as u32,
        "future_second" => 0,
        _ => rng.below(DURATION_S as u64) as u32,
    };
    // A run interrupted midway is long, and its failures (every kind of them) are not judged.
    let interrupted = lie == "at_limits";
    let duration_s = if interrupted { 60 } else { DURATION_S };
    let sent = Arc::new(AtomicUsize::new(0));
    let liar = Liar {
        rng,
        lie,
        duration_s,
        sent: sent.clone(),
        lie_second,
        start_unix_ns: None,
        next_second: 0,
        lied: false,
        stopped: false,
        counted: counted.clone(),
        slowest_ns: slowest.clone(),
        answered: None,
        after_stop: 0,
    };
    let honest = Agent::new(AgentConfig { root: None, coordinator_timeout: Duration::from_secs(10) });
    let honest_port = serve(rt, honest.router());
    let liar_state = Arc::new(Mutex::new(liar));
    let liar_port = serve(rt, liar_router(liar_state.clone()));
    let token_file = dir.join(format!("token-{seed}"));
    std::fs::write(&token_file, TOKEN).unwrap();
    let text = format!(
        "engine = \"null\"\nduration = \"{duration_s}s\"\nhost_timeout = \"3s\"\non_host_loss = \"{}\"\n{}\
         [[host]]\nname = \"honest\"\naddress = \"agent://127.0.0.1:{honest_port}\"\ntoken_file = \"{t}\"\n\
         [[host]]\nname = \"liar\"\naddress = \"agent://127.0.0.1:{liar_port}\"\ntoken_file = \"{t}\"\n",
        if stop { "stop" } else { "continue" },
        if interrupted { "max_errors = \"off\"\n" } else { "" },
        t = token_file.display()
    );
    let source = ioscope_workload::SourceFile { path: "w.toml".into(), text };
    let plan = ioscope_workload::build_plan(Some(&source), &ioscope_workload::Flags::default()).unwrap();
    let out = dir.join(format!("r-{seed}.db"));
    let interrupt = AtomicBool::new(false);
    let said = Mutex::new(Vec::<String>::new());
    let say = |line: &str| said.lock().unwrap().push(line.to_string());
    // The interrupt (Ctrl-C, SIGTERM) once the liar has sent two seconds, and how long the
    // run then took to end.
    let mut interrupt_to_end = None;
    let outcome = std::thread::scope(|scope| {
        let (interrupt, sent) = (&interrupt, &sent);
        let watcher = scope.spawn(move || {
            while interrupted && sent.load(Relaxed) < 2 {
                std::thread::sleep(Duration::from_millis(10));
            }
            interrupted.then(|| {
                interrupt.store(true, Relaxed);
                Instant::now()
            })
        });
        let outcome = ioscope_hosts::coordinate(
            &plan,
            ioscope_hosts::Coordinate {
                out: out.clone(),
                command_line: "test".into(),
                workload_toml: ioscope_workload::to_toml(&plan),
                workload_hash: ioscope_workload::plan_hash(&plan),
                interrupt,
                on_second: &mut |_| {},
                say: &say,
                probes: Vec::new(),
            },
        );
        interrupt_to_end = watcher.join().unwrap().map(|at| at.elapsed());
        outcome
    });
    let why = format!("LIAR_SEED={seed}: lie {lie} in second {lie_second} (on_host_loss stop: {stop})");
    if let Some(because) = before_start(lie) {
        // Nothing was measured: the run ends naming the host.
        let e = outcome.err().unwrap_or_else(|| panic!("{why}: the run went on"));
        assert!(e.to_string().contains("host liar") && e.to_string().contains(because), "{why}: {e}");
        assert!(!out.exists(), "{why}: a results file of nothing");
        return Ran { answers: 0, slowest_ns: 0, interrupt_to_end: None };
    }
    let outcome = outcome.unwrap_or_else(|e| panic!("{why}: {e}"));
    for line in said.lock().unwrap().iter() {
        assert!(!line.chars().any(|c| c.is_control()), "{why}: a raw control character reached the terminal: {line:?}");
    }
    let r = ioscope_store::open(&out).unwrap_or_else(|e| panic!("{why}: the results file does not read: {e}"));
    let honest_seconds = r.seconds.iter().filter(|s| s.host == "honest").count();
    let liar = &r.hosts.iter().find(|(n, _)| n == "liar").unwrap().1["agent"];
    let lost = liar["status"] == "lost";
    let failed_by = |because: &str| {
        outcome.status == Status::Failed && outcome.detail.as_deref().is_some_and(|d| d.contains(because))
    };
    let expected = match expect(lie) {
        Expect::LostOrFailed(because) if lost && failed_by(because) => Expect::FailedThenLost(because),
        Expect::LostOrFailed(_) if lost => Expect::Lost,
        Expect::LostOrFailed(because) => Expect::Failed(because),
        e => e,
    };
    match expected {
        Expect::LostOrFailed(_) => unreachable!(),
        Expect::Interrupted => {
            assert!(!lost, "{why}: {liar}");
            let stored = r.seconds.iter().filter(|s| s.host == "liar").count();
            assert!(stored >= 2, "{why}: the liar's seconds at the limits are stored, not refused ({stored})");
            assert_eq!(outcome.status, Status::Interrupted, "{why}: {:?}", outcome.detail);
        }
        Expect::Failed(because) => {
            assert!(!lost, "{why}: its own data should fail the run, not lose it: {liar}");
            assert_eq!(outcome.status, Status::Failed, "{why}: {:?}", outcome.detail);
            let detail = outcome.detail.clone().unwrap_or_default();
            assert!(detail.contains("host liar") && detail.contains(because), "{why}: {detail}");
        }
        Expect::FailedThenLost(because) => {
            let l = liar_state.lock().unwrap();
            assert!(l.stopped, "{why}: the lost host was not asked to stop");
            assert!(l.after_stop <= 1, "{why}: polled {} times after it was lost and stopped", l.after_stop);
            let detail = outcome.detail.clone().unwrap_or_default();
            assert!(detail.contains("host liar") && detail.contains(because), "{why}: {detail}");
        }
        Expect::Lost => {
            assert!(lost, "{why}: the liar is not named lost: {liar}");
            // Once lost, it is asked to stop and no longer asked for seconds.
            let l = liar_state.lock().unwrap();
            assert!(l.stopped, "{why}: the lost host was not asked to stop");
            // (One poll may have been on its way when the coordinator stopped asking.)
            assert!(l.after_stop <= 1, "{why}: polled {} times after it was lost and stopped", l.after_stop);
            let expected = if stop { Status::Failed } else { Status::Completed };
            assert_eq!(outcome.status, expected, "{why}: {:?}", outcome.detail);
            assert!(outcome.detail.as_deref().is_some_and(|d| d.contains("host liar")), "{why}: {:?}", outcome.detail);
        }
    }
    assert_eq!(r.run.status, outcome.status, "{why}");
    if !stop && expected == Expect::Lost {
        assert_eq!(honest_seconds, DURATION_S as usize, "{why}: every second of the honest host is kept");
    }
    // What was stored of the liar keeps the limits of a peer's second.
    for s in r.seconds.iter().filter(|s| s.host == "liar") {
        ioscope_store::check::peer_second(s, &[0]).unwrap_or_else(|e| panic!("{why}: stored: {e}"));
    }
    Ran { answers: counted.load(Relaxed), slowest_ns: slowest.load(Relaxed), interrupt_to_end }
}

fn seed() -> u64 {
    std::env::var("LIAR_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| now() as u64)
}

/// Runs every lie of `lies` (four runs at a time: each mostly waits for its seconds),
/// `rounds` times; returns the answers given and the slowest one's cost.
fn runs(lies: &[&'static str], rounds: usize) -> (usize, u64) {
    let seed = seed();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (answers, slowest) = (AtomicUsize::new(0), AtomicU64::new(0));
    let total = lies.len() * rounds;
    std::thread::scope(|scope| {
        for lane in 0..4.min(total) {
            let (rt, dir, answers, slowest) = (&rt, dir.path(), &answers, &slowest);
            scope.spawn(move || {
                for n in (lane..total).step_by(4) {
                    let run_seed = seed.wrapping_add(n as u64 * 7919);
                    let ran = one_run(rt, dir, lies[n % lies.len()], run_seed, n % 5 == 4);
                    answers.fetch_add(ran.answers, Relaxed);
                    slowest.fetch_max(ran.slowest_ns, Relaxed);
                }
            });
        }
    });
    (answers.into_inner(), slowest.into_inner())
}

#[test]
fn a_second_the_results_reader_would_refuse_loses_its_host_never_the_file_or_the_honest_hosts_seconds() {
    runs(&DAMAGING, 1);
}

#[test]
fn lies_about_time_and_texts_with_control_characters_lose_the_host_and_never_reach_the_terminal() {
    runs(&TIMES_AND_TEXTS, 1);
}

#[test]
fn the_coordinator_judges_a_hosts_end_by_its_own_rules_not_by_the_agents_word() {
    runs(&ENDINGS, 1);
}

#[test]
fn answers_past_their_stated_limits_lose_the_host_and_a_host_that_never_ends_is_lost_after_its_allowance() {
    runs(&COSTLY, 1);
}

#[test]
fn thousands_of_random_and_boundary_valued_answers_never_cost_the_honest_host_or_the_file() {
    // Boundary values at random in a random second, and four lies of the lists above at
    // random: with the valid answers around them, thousands of answers.
    let all: Vec<&'static str> =
        DAMAGING.iter().chain(&TIMES_AND_TEXTS).chain(&ENDINGS).chain(&COSTLY).copied().collect();
    let mut rng = Rng(seed() | 1);
    let mut lies = vec!["random_boundaries"; 20];
    lies.extend((0..4).map(|_| all[rng.below(all.len() as u64) as usize]));
    let (answers, slowest_ns) = runs(&lies, 1);
    eprintln!("{answers} answers from the liars; the slowest took the coordinator {} ms", slowest_ns / 1_000_000);
    assert!(answers >= 5000, "only {answers} answers reached the coordinator");
    // A wait bound, not a speed test: an answer within the limits costs milliseconds.
    assert!(slowest_ns < 10_000_000_000, "one answer took the coordinator {} ms", slowest_ns / 1_000_000);
}

#[test]
fn an_interrupt_ends_a_run_within_seconds_while_an_agent_sends_the_costliest_answers_allowed() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ran = one_run(&rt, dir.path(), "at_limits", seed(), false);
    let took = ran.interrupt_to_end.expect("interrupted");
    eprintln!("the run ended {} ms after its interrupt", took.as_millis());
    // A wait bound (the issue saw 248 s): stopping takes a round trip and the last answers.
    assert!(took < Duration::from_secs(30), "the run ended {} ms after its interrupt", took.as_millis());
}

#[test]
fn a_prepare_that_never_answers_ends_the_run_after_host_timeout_naming_the_host() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let began = Instant::now();
    one_run(&rt, dir.path(), "prepare_hangs", seed(), false);
    // host_timeout is 3 s (the issue saw 24 hours); a wait bound, generous for a busy machine.
    assert!(began.elapsed() < Duration::from_secs(30), "took {} ms", began.elapsed().as_millis());
}

#[test]
fn a_clock_a_year_off_ends_the_run_before_it_starts_naming_the_host() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    one_run(&rt, dir.path(), "clock_far", seed(), false);
}
