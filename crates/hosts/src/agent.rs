//! `ioscope agent`: the process on a client host. It validates the workload it is sent,
//! prepares its own working set, starts the same executor as a local run at the instant
//! the coordinator names, and hands out each finished second until the coordinator has
//! it. It never summarizes. Without word from the coordinator for its timeout it ends
//! its load.

use crate::messages::*;
use crate::plan::{check_root, host_plan, under_root};
use axum::extract::{FromRequest, State};
use axum::routing::post;
use axum::{Json, Router};
use ioscope_exec::{dataset, workset, Measure, Sink};
use ioscope_metrics::Snapshot;
use ioscope_proto::ApiError;
use ioscope_store::{ProbeRow, Status};
use ioscope_workload::{build_plan, plan_hash, render_diagnostics, Flags, Plan, SourceFile};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// How an agent was started.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// Every local path a plan names must lie under this directory (None: anywhere the
    /// agent's user may write, for an agent started over ssh by that user).
    pub root: Option<PathBuf>,
    /// Without a call from the coordinator for this long, a running load is stopped.
    pub coordinator_timeout: Duration,
}

/// A run prepared on this host, waiting for its start.
struct Prepared {
    /// The coordinator's id of the run (only it may start it).
    run: String,
    plan: Plan,
    name: String,
    files: Vec<PathBuf>,
    dataset: Option<dataset::Layout>,
    lock: Option<ioscope_exec::workdir::DirLock>,
    /// The interface on the route to the target, whose byte counters the run reads.
    nic: Option<String>,
}

#[derive(Default)]
struct Run {
    /// Finished seconds the coordinator has not acknowledged yet.
    seconds: Vec<Snapshot>,
    started_unix_ns: Option<i64>,
    engine: Option<String>,
    /// The route interface's byte counters at the start (`nic`, `start`).
    nic_counters: Option<serde_json::Value>,
    done: Option<Done>,
}

#[derive(Default)]
struct Inner {
    /// The run whose prepare is in progress (another is refused: both would prepare at once).
    preparing: Option<String>,
    /// How the last prepare ended, for `/v1/prepared`: its run, and its answer or refusal.
    prepare_outcome: Option<(String, Result<PrepareAnswer, ApiError>)>,
    prepared: Option<Prepared>,
    running: bool,
    run: Run,
}

/// The agent's state, shared by the calls, the run thread and the watchdog.
#[derive(Clone)]
pub struct Agent {
    config: AgentConfig,
    inner: Arc<Mutex<Inner>>,
    /// Woken when a second is added or the run ends.
    changed: Arc<Notify>,
    interrupt: Arc<AtomicBool>,
    /// Why the run was stopped from here (the coordinator's word, or its silence).
    stop_reason: Arc<Mutex<Option<String>>>,
    last_heard: Arc<Mutex<Instant>>,
    /// How long a running load may go without word from the coordinator: the run's
    /// `host_timeout` once a run is prepared (the coordinator waits as long for the agent).
    silence_allowed: Arc<Mutex<Duration>>,
    /// Target-side samplers (`--probe ssh://`).
    pub(crate) probe: Arc<Mutex<crate::probe_calls::ProbeSlot>>,
}

impl Agent {
    pub fn new(config: AgentConfig) -> Self {
        Agent {
            inner: Default::default(),
            changed: Default::default(),
            interrupt: Default::default(),
            stop_reason: Default::default(),
            last_heard: Arc::new(Mutex::new(Instant::now())),
            silence_allowed: Arc::new(Mutex::new(config.coordinator_timeout)),
            probe: Default::default(),
            config,
        }
    }

    /// The calls (to be wrapped by [`ioscope_proto::authorized`]).
    pub fn router(&self) -> Router {
        Router::new()
            .route(HELLO, post(hello))
            .route(CLOCK, post(clock))
            .route(PREPARE, post(prepare))
            .route(PREPARED, post(prepared))
            .route(START, post(start))
            .route(SECONDS, post(seconds))
            .route(STOP, post(stop))
            .route(PROBE_PREPARE, post(crate::probe_calls::prepare))
            .route(PROBE_START, post(crate::probe_calls::start))
            .route(PROBE_SECONDS, post(crate::probe_calls::seconds))
            .route(PROBE_STOP, post(crate::probe_calls::stop))
            .with_state(self.clone())
    }

    pub(crate) fn heard(&self) {
        *self.last_heard.lock().unwrap() = Instant::now();
    }

    /// Stops a running load and the samplers (the coordinator is gone): `why` becomes the
    /// run's detail.
    pub fn stop_load(&self, why: &str) {
        self.stop_reason.lock().unwrap().get_or_insert_with(|| why.to_string());
        self.interrupt.store(true, Relaxed);
        self.probe.lock().unwrap().stop();
    }

    /// Whether a run or the samplers are in progress.
    pub fn running(&self) -> bool {
        self.inner.lock().unwrap().running || self.probe.lock().unwrap().active()
    }

    /// Watches for the coordinator's silence while a run goes on; runs until the process ends.
    pub async fn watchdog(self) {
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let quiet = self.last_heard.lock().unwrap().elapsed();
            let allowed = *self.silence_allowed.lock().unwrap();
            if self.running() && quiet > allowed {
                self.stop_load(&format!(
                    "no word from the coordinator for {} s: the load was stopped",
                    allowed.as_secs()
                ));
            }
        }
    }

    /// Waits for a running load to end (the process is about to exit).
    pub async fn wait_idle(&self) {
        while self.running() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A call's JSON body; one the agent cannot read is refused as `{"error": ...}` like every
/// other refusal (axum's own answer would be plain text).
pub(crate) struct Body<T>(pub(crate) T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;
    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        Json::<T>::from_request(req, state).await.map(|Json(t)| Body(t)).map_err(ApiError::from)
    }
}

async fn hello(State(a): State<Agent>, Body(_): Body<Hello>) -> Json<HelloAnswer> {
    a.heard();
    Json(HelloAnswer {
        version: env!("CARGO_PKG_VERSION").to_string(),
        hostname: ioscope_exec::host::hostname(),
        pid: std::process::id(),
        protocol: PROTOCOL,
    })
}

async fn clock(State(a): State<Agent>, Body(_): Body<Empty>) -> Json<ClockAnswer> {
    a.heard();
    Json(ClockAnswer { unix_ns: crate::clock::unix_ns() })
}

/// Starts preparing and answers at once: the coordinator follows with `/v1/prepared`, each
/// call bounded by its host_timeout, however long a working set takes to write.
async fn prepare(State(a): State<Agent>, Body(req): Body<Prepare>) -> Result<Json<Empty>, ApiError> {
    a.heard();
    {
        let mut inner = a.inner.lock().unwrap();
        if inner.running || inner.preparing.is_some() {
            return Err(ApiError::conflict("this agent is preparing or running another load".to_string()));
        }
        // A new run replaces one prepared and never started (its lock is released); the
        // coordinator of that one is refused when it asks to start it.
        inner.preparing = Some(req.run.clone());
        inner.prepared = None;
        inner.prepare_outcome = None;
    }
    let agent = a.clone();
    tokio::spawn(async move {
        let run = req.run.clone();
        let answer = prepare_run(&agent, req).await;
        let mut inner = agent.inner.lock().unwrap();
        inner.preparing = None;
        let outcome = match answer {
            Ok((prepared, answer)) => {
                inner.prepared = Some(prepared);
                Ok(answer)
            }
            Err(e) => Err(e),
        };
        inner.prepare_outcome = Some((run, outcome));
        drop(inner);
        agent.heard();
        agent.changed.notify_waiters();
    });
    Ok(Json(Empty {}))
}

/// How the prepare of `run` ended, waiting up to `wait_ms` (at most 10 s) for its end.
async fn prepared(State(a): State<Agent>, Body(req): Body<PrepareWait>) -> Result<Json<PreparedAnswer>, ApiError> {
    a.heard();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(req.wait_ms.min(10_000));
    loop {
        let notified = a.changed.notified();
        {
            let inner = a.inner.lock().unwrap();
            match &inner.prepare_outcome {
                Some((run, outcome)) if *run == req.run => {
                    return outcome.clone().map(|p| Json(PreparedAnswer { done: Some(p) }))
                }
                _ if inner.preparing.as_deref() != Some(req.run.as_str()) => {
                    return Err(ApiError::conflict("this agent is not preparing that run".to_string()))
                }
                _ if tokio::time::Instant::now() >= deadline => return Ok(Json(PreparedAnswer { done: None })),
                _ => {}
            }
        }
        let _ = tokio::time::timeout_at(deadline, notified).await;
    }
}

/// Validates the workload, takes this host's part and prepares its files.
async fn prepare_run(a: &Agent, req: Prepare) -> Result<(Prepared, PrepareAnswer), ApiError> {
    let source = SourceFile { path: PathBuf::from("(workload from the coordinator)"), text: req.workload_toml };
    let plan = build_plan(Some(&source), &Flags::default())
        .map_err(|d| ApiError::bad_request(format!("the workload is not valid here:\n{}", render_diagnostics(&d))))?;
    if plan_hash(&plan) != req.workload_hash {
        return Err(ApiError::conflict(format!(
            "this agent (ioscope {}) reads the workload differently from the coordinator: use the same version on both",
            env!("CARGO_PKG_VERSION")
        )));
    }
    // A block device is a target for runs on one host (`ioscope run --dir /dev/X --force`
    // there): nothing here claims it, sizes a working set by it or refuses it without force.
    let host_dir = plan.hosts.get(req.index).and_then(|h| h.dir.clone()).unwrap_or_else(|| plan.dir.clone());
    if plan.engine.spec().caps.does_io && ioscope_exec::blockdev::is_block_device(&host_dir) {
        return Err(ApiError::bad_request(format!(
            "{}: a block device; a run with hosts cannot use one (run ioscope on that host with --dir {} --force)",
            host_dir.display(),
            host_dir.display()
        )));
    }
    // Whether this host's files go into a directory of its own under the run's.
    let own_subdir = plan.hosts.get(req.index).is_some_and(|h| h.dir.is_none() && h.target.is_none());
    let mut plan = host_plan(&plan, req.index, &req.name).map_err(ApiError::bad_request)?;
    if let Some(root) = &a.config.root {
        under_root(&mut plan, root);
        check_root(&plan, root).map_err(ApiError::forbidden)?;
    }
    *a.silence_allowed.lock().unwrap() = plan.host_timeout.max(Duration::from_secs(1));
    let (name, run, results) = (req.name.clone(), req.run.clone(), PathBuf::from(&req.results));
    let prepared = tokio::task::spawn_blocking(move || prepare_files(run, plan, name, &results, own_subdir))
        .await
        .map_err(|e| ApiError::internal(format!("preparing stopped: {e}")))??;
    let answer = PrepareAnswer {
        plan_json: serde_json::to_string(&prepared.0.plan).unwrap_or_default(),
        config: prepared.1,
        prepared: prepared.2,
    };
    Ok((prepared.0, answer))
}

/// Checks and prepares the working set or dataset as a local run does (files ioscope did
/// not create are refused unless the plan says force).
fn prepare_files(
    run: String,
    plan: Plan,
    name: String,
    results: &std::path::Path,
    own_subdir: bool,
) -> Result<(Prepared, serde_json::Value, String), ApiError> {
    if own_subdir && plan.engine.spec().caps.does_io {
        make_run_dir(&plan).map_err(|e| ApiError::internal(format!("creating the run's directory: {e}")))?;
    }
    let mut config = ioscope_exec::host::describe_run(&plan);
    let lock = ioscope_exec::workdir::local_dir(&plan)
        .map(|d| ioscope_exec::workdir::lock(&d, results))
        .transpose()
        .map_err(|e| ApiError::conflict(e.to_string()))?;
    let created_dir = lock.as_ref().is_some_and(|l| l.created_dir());
    let threads: u32 = plan.max_threads().iter().sum();
    let (files, dataset, said) = if let Some(d) = &plan.dataset {
        let (fs, _) = ioscope_exec::storage(&plan).map_err(|e| ApiError::internal(e.to_string()))?;
        dataset::check(&*fs, d, plan.force).map_err(|e| ApiError::conflict(e.to_string()))?;
        // With --force, a marker refused is said, as a local run says it.
        let refused = dataset::refused_marker(&*fs, d).filter(|_| plan.force).map(|r| {
            format!("; note: {r}; with --force the directory is taken as not ioscope's and the marker is replaced")
        });
        let p = dataset::prepare(&*fs, d, plan.force, created_dir, 16, &|_, _, _| {})
            .map_err(|e| ApiError::internal(format!("preparing the dataset: {e}")))?;
        let what = if p.reused { "reused" } else { "created" };
        let said = format!("{what} a dataset of {} files{}", p.layout.files(), refused.unwrap_or_default());
        (Vec::new(), Some(p.layout), said)
    } else if !plan.engine.spec().caps.does_io {
        (Vec::new(), None, "no files (the engine does no I/O)".to_string())
    } else {
        let (fs, dir) = ioscope_exec::storage(&plan).map_err(|e| ApiError::internal(e.to_string()))?;
        let mut layout = workset::check(&*fs, &dir, &plan).map_err(|e| ApiError::conflict(e.to_string()))?;
        if created_dir {
            layout.set_created_dir();
        }
        let filled = layout.to_fill.len();
        let refused = layout.refused_note().map(|n| format!("; {n}"));
        workset::prepare(&*fs, &mut layout, threads.clamp(1, 8) as usize, &|_, _| {})
            .map_err(|e| ApiError::internal(format!("preparing the working set: {e}")))?;
        let said = format!(
            "{} file(s) in {}, {filled} filled{}",
            layout.files.len(),
            dir.display(),
            refused.unwrap_or_default()
        );
        (layout.files, None, said)
    };
    // The page cache as the plan chose, for this host's own files (docs/cache.md).
    config["cache"] = ioscope_exec::cache::apply(&plan, &files, dataset.as_ref()).to_json();
    let nic = ioscope_exec::system::route_nic(&config);
    Ok((Prepared { run, plan, name, files, dataset, lock, nic }, config, said))
}

/// Creates the run's directory that holds every host's own (`<dir>` of `<dir>/<host>`)
/// when it is missing and its parent exists: each host creates only what is its run's,
/// and a mistyped parent still fails.
fn make_run_dir(plan: &Plan) -> std::io::Result<()> {
    let (fs, dir) = ioscope_exec::storage(plan).map_err(|e| std::io::Error::other(e.to_string()))?;
    let dir = plan.dataset.as_ref().map_or(dir, |d| d.dir.clone());
    let Some(run_dir) = dir.parent() else { return Ok(()) };
    let mut c = fs.connect()?;
    if c.stat(run_dir)?.is_some() {
        return Ok(());
    }
    match run_dir.parent() {
        Some(parent) if c.stat(parent)?.is_some() => c.create_dir_all(run_dir),
        _ => Ok(()),
    }
}

async fn start(State(a): State<Agent>, Body(req): Body<Start>) -> Result<Json<Empty>, ApiError> {
    a.heard();
    let prepared = {
        let mut inner = a.inner.lock().unwrap();
        if inner.running {
            return Err(ApiError::conflict("this agent is running a load already".to_string()));
        }
        if inner.prepared.as_ref().is_some_and(|p| p.run != req.run) {
            return Err(ApiError::conflict("the run prepared on this agent is another coordinator's".to_string()));
        }
        let p = inner.prepared.take().ok_or_else(|| ApiError::conflict("nothing prepared to start".to_string()))?;
        inner.running = true;
        inner.run = Run::default();
        p
    };
    a.interrupt.store(false, Relaxed);
    *a.stop_reason.lock().unwrap() = None;
    let start_at = crate::clock::unix_to_monotonic(req.at_unix_ns);
    let agent = a.clone();
    std::thread::Builder::new()
        .name("run".into())
        .spawn(move || run_load(agent, prepared, start_at))
        .map_err(|e| ApiError::internal(format!("cannot start the run: {e}")))?;
    Ok(Json(Empty {}))
}

/// The run thread: the executor, its seconds into the agent's buffer.
fn run_load(a: Agent, p: Prepared, start_at_ns: u64) {
    let mut sink = Buffer { agent: &a, nic: p.nic.clone() };
    let mut on_second = |_: &ioscope_exec::Progress| {};
    let m = ioscope_exec::measure(
        &p.plan,
        &p.files,
        &mut sink,
        Measure {
            host: p.name.clone(),
            interrupt: &a.interrupt,
            on_second: &mut on_second,
            dataset: p.dataset,
            start_at_ns: Some(start_at_ns),
            whole_seconds_after_ns: None,
            // Refused with hosts: each host would know only its own writes.
            verifier: None,
            worker_budget_bytes: None,
        },
    );
    let detail = match (m.status, a.stop_reason.lock().unwrap().clone()) {
        (Status::Interrupted, Some(why)) => Some(why),
        _ => m.detail,
    };
    if p.plan.cleanup {
        match ioscope_exec::prep::cleanup(&p.plan) {
            Ok(r) => {
                if let Some(m) = ioscope_exec::prep::left_message(&r.left) {
                    eprintln!("agent: {m}");
                }
            }
            Err(e) => eprintln!("agent: cleanup failed: {e}"),
        }
    }
    drop(p.lock);
    let mut inner = a.inner.lock().unwrap();
    let status = match m.sink_error {
        Some(never) => match never {},
        None => m.status,
    };
    let mut nic_counters = inner.run.nic_counters.take();
    if let Some(c) = nic_counters.as_mut() {
        c["end"] = ioscope_exec::system::nic_counters(c["nic"].as_str().unwrap_or_default());
    }
    inner.run.done = Some(Done {
        status: status.as_str().to_string(),
        detail,
        first_errors: m.first_errors,
        engine: inner.run.engine.clone(),
        first_io_unix_ns: m.first_io_ns.map(mono_to_unix),
        nic_counters,
    });
    inner.running = false;
    drop(inner);
    a.changed.notify_waiters();
}

/// The agent's sink: finished seconds wait in memory until the coordinator has them.
struct Buffer<'a> {
    agent: &'a Agent,
    nic: Option<String>,
}

impl Sink for Buffer<'_> {
    type Error = std::convert::Infallible;
    fn started(&mut self, t0_ns: u64, engine_setup: Option<&str>) -> Result<(), Self::Error> {
        let started = mono_to_unix(t0_ns);
        let mut inner = self.agent.inner.lock().unwrap();
        inner.run.started_unix_ns = Some(started);
        inner.run.engine = engine_setup.map(str::to_string);
        inner.run.nic_counters = self
            .nic
            .as_deref()
            .map(|n| serde_json::json!({ "nic": n, "start": ioscope_exec::system::nic_counters(n) }));
        Ok(())
    }
    fn step_rate(&mut self, _step: u32, _rate_iops: u64) -> Result<(), Self::Error> {
        Ok(())
    }
    fn probe(&mut self, _row: &ProbeRow) -> Result<(), Self::Error> {
        Ok(())
    }
    fn second(&mut self, snap: &Snapshot) -> Result<(), Self::Error> {
        self.agent.inner.lock().unwrap().run.seconds.push(snap.clone());
        self.agent.changed.notify_waiters();
        Ok(())
    }
}

/// An instant of [`ioscope_exec::clock::now_ns`]'s time line on the wall clock (it may lie
/// ahead: the difference is signed).
fn mono_to_unix(t: u64) -> i64 {
    let ahead = t as i64 - ioscope_exec::clock::now_ns() as i64;
    crate::clock::unix_ns().saturating_add(ahead)
}

async fn seconds(State(a): State<Agent>, Body(req): Body<Seconds>) -> Json<SecondsAnswer> {
    a.heard();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(req.wait_ms.min(10_000));
    loop {
        let notified = a.changed.notified();
        {
            let mut inner = a.inner.lock().unwrap();
            // Seconds up to `after` have arrived: they are not needed again; the rest are new.
            if let Some(after) = req.after {
                inner.run.seconds.retain(|s| s.second > after);
            }
            let fresh: Vec<Snapshot> = inner.run.seconds.iter().take(MAX_SECONDS_PER_ANSWER).cloned().collect();
            let all_sent = fresh.len() == inner.run.seconds.len();
            let done = inner.run.done.clone().filter(|_| all_sent);
            if !fresh.is_empty() || done.is_some() || tokio::time::Instant::now() >= deadline {
                a.heard();
                return Json(SecondsAnswer { seconds: fresh, started_unix_ns: inner.run.started_unix_ns, done });
            }
        }
        let _ = tokio::time::timeout_at(deadline, notified).await;
    }
}

async fn stop(State(a): State<Agent>, Body(_): Body<Empty>) -> Json<Empty> {
    a.heard();
    a.stop_load("stopped by the coordinator");
    Json(Empty {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use ioscope_proto::{CallError, Client, Token};

    #[tokio::test]
    async fn a_call_the_agent_cannot_read_is_refused_as_a_json_error() {
        let agent = Agent::new(AgentConfig { root: None, coordinator_timeout: Duration::from_secs(10) });
        let token = Token::from_line("a-token-for-this-test-0123").unwrap();
        let app = ioscope_proto::authorized(agent.router(), token.clone());
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        tokio::spawn(ioscope_proto::serve_stream(theirs, app));
        let client = Client::over_stream(ours, &token).await.unwrap();
        let wrong = serde_json::json!({"version": 5});
        match client.call::<_, HelloAnswer>(HELLO, &wrong, Duration::from_secs(5)).await {
            Err(CallError::Refused { status, message }) => {
                assert_eq!(status, 422);
                assert!(message.contains("version"), "{message}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        let fine = client.call::<_, HelloAnswer>(HELLO, &Hello { version: "x".into() }, Duration::from_secs(5)).await;
        assert_eq!(fine.unwrap().version, env!("CARGO_PKG_VERSION"));
    }

    #[tokio::test]
    async fn only_the_coordinator_whose_run_is_prepared_may_start_it() {
        let agent = Agent::new(AgentConfig { root: None, coordinator_timeout: Duration::from_secs(10) });
        let token = Token::from_line("a-token-for-this-test-0123").unwrap();
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        tokio::spawn(ioscope_proto::serve_stream(theirs, ioscope_proto::authorized(agent.router(), token.clone())));
        let client = Client::over_stream(ours, &token).await.unwrap();
        let text = "engine = \"null\"\nduration = \"1s\"\n[[host]]\naddress = \"agent://127.0.0.1:7311\"\ntoken_file = \"/t\"\n";
        let source = SourceFile { path: PathBuf::from("t.toml"), text: text.to_string() };
        let plan = build_plan(Some(&source), &Flags::default()).unwrap();
        let prepare = |run: &str| Prepare {
            run: run.to_string(),
            workload_toml: ioscope_workload::to_toml(&plan),
            workload_hash: plan_hash(&plan),
            index: 0,
            name: "h1".to_string(),
            results: "/tmp/r.db".to_string(),
        };
        let wait = Duration::from_secs(30);
        // Coordinator A prepares, then B prepares over it: A may not start B's run.
        crate::coordinator::prepare_host(&client, &prepare("run-a"), wait).await.unwrap();
        crate::coordinator::prepare_host(&client, &prepare("run-b"), wait).await.unwrap();
        match client.call::<_, Empty>(START, &Start { run: "run-a".into(), at_unix_ns: 0 }, wait).await {
            Err(CallError::Refused { status: 409, message }) => assert!(message.contains("another"), "{message}"),
            other => panic!("expected 409, got {other:?}"),
        }
        assert!(!agent.running());
    }

    #[tokio::test]
    async fn a_block_device_as_a_hosts_directory_is_refused_before_anything_touches_it() {
        // Any block device node of this machine (only looked at: the refusal comes first).
        let Some(dev) = std::fs::read_dir("/dev")
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| ioscope_exec::blockdev::is_block_device(p))
        else {
            return;
        };
        let agent = Agent::new(AgentConfig { root: None, coordinator_timeout: Duration::from_secs(10) });
        let token = Token::from_line("a-token-for-this-test-0123").unwrap();
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        tokio::spawn(ioscope_proto::serve_stream(theirs, ioscope_proto::authorized(agent.router(), token.clone())));
        let client = Client::over_stream(ours, &token).await.unwrap();
        let text = format!(
            "engine = \"posix\"\nrw = \"randwrite\"\nduration = \"1s\"\nforce = true\n[[host]]\naddress = \"agent://127.0.0.1:7311\"\ntoken_file = \"/t\"\ndir = \"{}\"\n",
            dev.display()
        );
        let source = SourceFile { path: PathBuf::from("t.toml"), text };
        let plan = build_plan(Some(&source), &Flags::default()).unwrap();
        let prepare = Prepare {
            run: "run-a".to_string(),
            workload_toml: ioscope_workload::to_toml(&plan),
            workload_hash: plan_hash(&plan),
            index: 0,
            name: "h1".to_string(),
            results: "/tmp/r.db".to_string(),
        };
        match crate::coordinator::prepare_host(&client, &prepare, Duration::from_secs(30)).await {
            Err(CallError::Refused { status: 400, message }) => {
                assert!(message.contains("a block device") && message.contains("--force"), "{message}")
            }
            other => panic!("expected 400, got {other:?}"),
        }
    }
}
