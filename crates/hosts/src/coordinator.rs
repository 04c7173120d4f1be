//! The coordinator: `ioscope run` with hosts. It reaches every host (ssh or a listening
//! agent), has each validate and prepare its part of the plan, measures each clock's
//! offset, starts every host at one instant, and writes each host's finished seconds into
//! one results file as they arrive. A host that stops answering is lost: by default the
//! run then ends (failed, every second received kept); with `on_host_loss = "continue"`
//! the others go on and the lost host's series end where it was lost.

use crate::clock::{estimate, unix_ns, Exchange, Offset};
use crate::messages::*;
use crate::ssh::{self, Login};
use ioscope_exec::Progress;
use ioscope_metrics::Snapshot;
use ioscope_proto::{CallError, Client, ClientTls, Token};
use ioscope_store::{RunInfo, Status, Writer};
use ioscope_workload::{HostKind, HostSpec, OnHostLoss, Plan};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;
use tokio::process::Child;
use tokio::sync::mpsc;

const SECOND_NS: u64 = 1_000_000_000;
/// Exchanges per host for the clock offset (the shortest round trip is kept).
const CLOCK_EXCHANGES: usize = 16;
/// Time between the start call and the common start instant, beyond the round trips:
/// room for every host to open its engines (an NFS mount per worker) before it.
const START_LEAD_NS: i64 = 1_000_000_000;
/// The largest clock offset of a host: past it, its clock is wrong, not merely unsynchronized.
const MAX_CLOCK_OFFSET_NS: u64 = 30 * 86_400 * SECOND_NS;
/// How long one long poll for seconds waits on the agent's side.
const POLL_WAIT_MS: u64 = 1000;

/// What the caller tells a run over hosts besides the plan.
pub struct Coordinate<'a> {
    pub out: PathBuf,
    pub command_line: String,
    pub workload_toml: String,
    pub workload_hash: String,
    /// Set from outside (Ctrl-C, SIGTERM): every host is stopped and the run ends interrupted.
    pub interrupt: &'a AtomicBool,
    /// Called after each second that every live host has delivered (merged over hosts).
    pub on_second: &'a mut dyn FnMut(&Progress),
    /// Progress messages ("host h1: copying ioscope ..."), one line each.
    pub say: &'a dyn Fn(&str),
    /// Target-side samplers (`--probe`), started at the run's time zero.
    pub probes: Vec<Box<dyn ioscope_exec::TargetFeed>>,
}

/// How a run over hosts ended.
#[derive(Debug)]
pub struct Outcome {
    pub status: Status,
    pub detail: Option<String>,
    pub first_errors: Vec<String>,
    pub seconds_written: u32,
}

/// Why a run over hosts could not start or be recorded (nothing was measured, or the
/// results file failed).
#[derive(Debug, thiserror::Error)]
pub enum CoordError {
    #[error("host {name} ({address}): {why}")]
    Host { name: String, address: String, why: String },
    #[error("results file {path}: {source}")]
    Store { path: PathBuf, source: ioscope_store::StoreError },
    #[error("{0}")]
    Setup(String),
    #[error("interrupted before the run started; nothing was measured")]
    Interrupted,
}

/// One host as the run knows it.
pub(crate) struct Host {
    index: usize,
    pub(crate) name: String,
    address: String,
    transport: &'static str,
    pub(crate) client: Client,
    /// The ssh session the agent runs in (None for a listening agent).
    pub(crate) child: Option<Child>,
    config: serde_json::Value,
    plan_json: String,
    pub(crate) offset: Offset,
    /// The host's time zero on the coordinator's clock, and the instant it was asked for.
    started_unix_ns: Option<i64>,
    planned_start_unix_ns: Option<i64>,
    last_second: Option<u32>,
    done: Option<Done>,
    lost: Option<(u32, String)>,
    /// From each second's end (on the coordinator's clock) to its storage: sum, count, max.
    store_delay_ns: (u64, u64, u64),
    /// The task asking it for seconds (ended once the host is lost: its answers cost nothing more).
    poller: Option<tokio::task::AbortHandle>,
}

impl Host {
    fn fail(&self, why: impl std::fmt::Display) -> CoordError {
        CoordError::Host { name: self.name.clone(), address: self.address.clone(), why: text(&why.to_string()) }
    }
}

/// Runs `plan` on its hosts and writes the results file.
pub fn coordinate(plan: &Plan, c: Coordinate<'_>) -> Result<Outcome, CoordError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CoordError::Setup(format!("cannot start the coordinator's runtime: {e}")))?;
    let interrupt = c.interrupt;
    let started = AtomicBool::new(false);
    // Before the start, Ctrl-C ends everything at once (the ssh sessions end, and with them
    // the agents); after it, the run stops every host and keeps what was measured.
    let before_start = async {
        while !interrupt.load(Relaxed) || started.load(Relaxed) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    rt.block_on(async {
        tokio::select! {
            r = run(plan, c, &started) => r,
            _ = before_start => Err(CoordError::Interrupted),
        }
    })
}

async fn run(plan: &Plan, mut c: Coordinate<'_>, started: &AtomicBool) -> Result<Outcome, CoordError> {
    let began_unix_ns = unix_ns();
    let timeout = plan.host_timeout;
    // Reach every host at once; the first failure ends the run before anything started.
    let mut hosts = Vec::new();
    let mut reaching = tokio::task::JoinSet::new();
    for (index, spec) in plan.hosts.iter().enumerate() {
        let (spec, timeout) = (spec.clone(), timeout);
        reaching.spawn(async move { (index, reach(index, &spec, timeout).await) });
    }
    let mut reached: Vec<Option<Host>> = (0..plan.hosts.len()).map(|_| None).collect();
    let mut first_failure = None;
    while let Some(r) = reaching.join_next().await {
        match r {
            Ok((i, Ok((host, said)))) => {
                (c.say)(&format!("host {}: {said}", host.name));
                reached[i] = Some(host);
            }
            Ok((_, Err(e))) => {
                first_failure.get_or_insert(e);
            }
            Err(e) => {
                first_failure.get_or_insert(CoordError::Setup(e.to_string()));
            }
        }
    }
    if let Some(e) = first_failure {
        return Err(e);
    }
    hosts.extend(reached.into_iter().flatten());

    // Each host validates the workload and prepares its working set, for this run alone.
    let run_id = Token::generate().as_str().chars().take(16).collect::<String>();
    let results = std::path::absolute(&c.out).unwrap_or_else(|_| c.out.clone()).display().to_string();
    let mut preparing = tokio::task::JoinSet::new();
    for (index, h) in hosts.iter().enumerate() {
        let req = Prepare {
            run: run_id.clone(),
            workload_toml: c.workload_toml.clone(),
            workload_hash: c.workload_hash.clone(),
            index,
            name: h.name.clone(),
            results: results.clone(),
        };
        let client = h.client.clone();
        preparing.spawn(async move { (index, prepare_host(&client, &req, timeout).await) });
    }
    while let Some(r) = preparing.join_next().await {
        let (i, answer) = r.map_err(|e| CoordError::Setup(e.to_string()))?;
        let h = &mut hosts[i];
        let a = answer.map_err(|e| h.fail(format!("preparing: {e}")))?;
        (c.say)(&format!("host {}: {}", h.name, text(&a.prepared)));
        h.config = a.config;
        h.plan_json = a.plan_json;
    }

    // Clocks: offsets and their uncertainty, then one start instant for every host.
    for h in hosts.iter_mut() {
        h.offset = measure_clock(&h.client).await.map_err(|e| h.fail(e))?;
        crate::clock::alignable(&h.offset).map_err(|why| h.fail(why))?;
        if h.offset.offset_ns.unsigned_abs() > MAX_CLOCK_OFFSET_NS {
            return Err(h.fail(format!(
                "its clock is {:+} s away from this host's (at most {} days are allowed): set its clock",
                h.offset.offset_ns / SECOND_NS as i64,
                MAX_CLOCK_OFFSET_NS / SECOND_NS / 86_400
            )));
        }
    }
    let steps = plan.steps();
    let planned_ns: u64 = steps.iter().map(|s| (s.warmup + s.duration).as_nanos() as u64).sum();
    let info = RunInfo {
        ioscope_version: env!("CARGO_PKG_VERSION").to_string(),
        host: ioscope_exec::host::hostname(),
        pid: std::process::id(),
        command_line: c.command_line.clone(),
        started_unix_ms: began_unix_ns / 1_000_000,
        planned_duration_ns: planned_ns,
        plan_json: serde_json::to_string(plan).unwrap_or_default(),
        workload_toml: c.workload_toml.clone(),
        workload_hash: c.workload_hash.clone(),
    };
    let store_err = |source| CoordError::Store { path: c.out.clone(), source };
    // From here on the results file exists: Ctrl-C stops the hosts and the file is closed.
    started.store(true, Relaxed);
    let mut configs: Vec<(String, serde_json::Value)> =
        hosts.iter().map(|h| (h.name.clone(), host_config(h))).collect();
    let mut probes = std::mem::take(&mut c.probes);
    for (name, config) in probes.iter().map(|p| p.host()) {
        match configs.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => c["probe"] = config["probe"].clone(),
            None => configs.push((name, config)),
        }
    }
    let mut writer = Writer::create(&c.out, &info, &configs).map_err(store_err)?;
    writer.write_steps(&ioscope_exec::step_rows(&steps)).map_err(store_err)?;
    writer.set_meta("breakdown", &ioscope_exec::breakdown::meta(plan)).map_err(store_err)?;

    let rtt_max = hosts.iter().map(|h| h.offset.rtt_ns).max().unwrap_or(0) as i64;
    let at = unix_ns() + START_LEAD_NS + 4 * rtt_max;
    hosts.iter_mut().for_each(|h| h.planned_start_unix_ns = Some(at));
    let t0_monotonic = ioscope_probe::driver::monotonic_ns() as i64 + (at - unix_ns());
    probes.iter_mut().for_each(|p| p.start(t0_monotonic.max(0) as u64));
    // All at once: a slow answer from one host must not make the others' start late.
    let mut starting = tokio::task::JoinSet::new();
    for (i, h) in hosts.iter().enumerate() {
        let (client, start) = (h.client.clone(), Start { run: run_id.clone(), at_unix_ns: at + h.offset.offset_ns });
        starting.spawn(async move { (i, client.call::<_, Empty>(START, &start, timeout).await) });
    }
    let mut not_started = None;
    while let Some(r) = starting.join_next().await {
        match r {
            Ok((_, Ok(_))) => {}
            Ok((i, Err(e))) => {
                not_started.get_or_insert(hosts[i].fail(format!("starting: {e}")));
            }
            Err(e) => {
                not_started.get_or_insert(CoordError::Setup(e.to_string()));
            }
        }
    }
    if let Some(e) = not_started {
        // The hosts that did start stop with their session; the file says why.
        let _ = writer.finish(Status::Failed, Some(&e.to_string()), ioscope_exec::clock::unix_ms());
        stop_all(&hosts).await;
        end_sessions(&mut hosts).await;
        return Err(e);
    }

    // Seconds as they come, from one poller per host; each answer is checked before
    // anything of it is stored (see `check_answer`).
    let (tx, mut rx) = mpsc::channel::<(usize, Result<SecondsAnswer, String>)>(256);
    for (i, h) in hosts.iter_mut().enumerate() {
        let poller = tokio::spawn(poll(i, h.client.clone().answer_limit(MAX_ANSWER_BYTES), timeout, tx.clone()));
        h.poller = Some(poller.abort_handle());
    }
    drop(tx);
    let last_planned = (planned_ns.saturating_sub(1) / SECOND_NS) as u32;
    let rules = Rules {
        last_planned,
        steps: steps.iter().map(|s| s.index).collect(),
        // Each host's sums stay within its share: all of them together fit the file's.
        share: u64::MAX as u128 / hosts.len().max(1) as u128,
        start_unix_ns: at,
    };
    let place = ioscope_exec::limit::place_of(plan);
    let mut judges: Vec<Judge> =
        hosts.iter().map(|_| Judge { totals: Default::default(), kinds: Default::default() }).collect();
    let mut limits: Vec<_> =
        hosts.iter().map(|_| ioscope_exec::limit::ErrorLimit::new(plan.max_errors, place.clone())).collect();
    let mut seconds_written = 0u32;
    let mut pending: std::collections::BTreeMap<u32, Vec<Option<Snapshot>>> = Default::default();
    let mut stopping: Option<String> = None;
    let mut interrupted = false;
    let mut store_failure = None;
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    // Every host must say its run is over by its planned end, or by the stop it was sent,
    // plus this allowance; one that keeps answering without ending is lost then.
    let allowance_ns = end_allowance_ns(timeout, plan.cleanup);
    let mut end_by = at.saturating_add(planned_ns as i64).saturating_add(allowance_ns);
    let mut stop_sent = false;
    // The stop calls to lost hosts, each bounded (2 s), awaited before the run ends.
    let mut stops = tokio::task::JoinSet::new();
    loop {
        if c.interrupt.load(Relaxed) && !interrupted {
            interrupted = true;
            stop_all(&hosts).await;
        }
        if (interrupted || stopping.is_some()) && !stop_sent {
            stop_sent = true;
            end_by = end_by.min(unix_ns().saturating_add(allowance_ns));
        }
        if unix_ns() > end_by {
            let late: Vec<usize> =
                (0..hosts.len()).filter(|&i| hosts[i].done.is_none() && hosts[i].lost.is_none()).collect();
            let after = if stop_sent { "it was asked to stop" } else { "the run's planned end" };
            let cleanup = if plan.cleanup { ", and ten minutes to remove its files" } else { "" };
            for i in late {
                let why = format!(
                    "it had not ended its run {} s after {after} (twice host_timeout: time for its I/Os in flight \
                     to end and its last seconds to arrive{cleanup})",
                    allowance_ns / SECOND_NS as i64
                );
                lose_host(&mut hosts, i, why, plan.on_host_loss, &mut stopping, &mut stops, c.say).await;
            }
        }
        if hosts.iter().all(|h| h.done.is_some() || h.lost.is_some()) {
            break;
        }
        let event = tokio::select! {
            e = rx.recv() => e,
            _ = ticker.tick() => continue,
        };
        let Some((i, answer)) = event else { break };
        let h = &mut hosts[i];
        if h.done.is_some() || h.lost.is_some() {
            continue;
        }
        let checked = answer.and_then(|a| check_answer(a, h, &judges[i], &rules, unix_ns()));
        let mut failed_host = None;
        let loss = match checked {
            Err(why) => Some(why),
            Ok((answer, judge)) => {
                judges[i] = judge;
                if let (None, Some(s)) = (h.started_unix_ns, answer.started_unix_ns) {
                    h.started_unix_ns = s.checked_sub(h.offset.offset_ns);
                }
                let mut loss = None;
                for mut snap in answer.seconds {
                    snap.host = h.name.clone();
                    if let Err(e) = writer.write_second(&snap) {
                        if e.is_refused_data() {
                            loss = Some(format!("its second {} could not be stored ({e})", snap.second));
                            break;
                        }
                        store_failure.get_or_insert(e);
                        break;
                    }
                    h.last_second = Some(snap.second);
                    for t in probes.iter_mut().flat_map(|p| p.take()) {
                        if let Err(e) = writer.write_target(&t) {
                            store_failure.get_or_insert(e);
                        }
                    }
                    seconds_written += 1;
                    if let Some(why) = limits[i].add(&snap) {
                        failed_host.get_or_insert(why);
                    }
                    if let Some(t0) = h.started_unix_ns {
                        let end = t0.saturating_add((snap.second as i64 + 1) * SECOND_NS as i64);
                        let delay = unix_ns().saturating_sub(end).max(0) as u64;
                        let d = &mut h.store_delay_ns;
                        *d = (d.0.saturating_add(delay), d.1 + 1, d.2.max(delay));
                    }
                    let slot = pending.entry(snap.second).or_insert_with(|| vec![None; plan.hosts.len()]);
                    if let Some(s) = slot.get_mut(i) {
                        *s = Some(snap);
                    }
                }
                if loss.is_none() {
                    if let Some(d) = answer.done {
                        h.done = Some(d);
                    }
                }
                loss
            }
        };
        if let Some(why) = loss {
            lose_host(&mut hosts, i, why, plan.on_host_loss, &mut stopping, &mut stops, c.say).await;
        }
        // max_errors holds over each host's seconds as over a local run's.
        if let Some(why) = failed_host {
            if stopping.is_none() {
                stopping = Some(format!("host {}: {why}", hosts[i].name));
                stop_all(&hosts).await;
            }
        }
        if store_failure.is_some() && stopping.is_none() {
            stopping = Some("the results file could not be written".to_string());
            stop_all(&hosts).await;
        }
        // Progress: each second once every host still running has delivered it.
        while let Some((&second, slot)) = pending.iter().next() {
            let complete = slot.iter().zip(&hosts).all(|(s, h)| {
                s.is_some() || h.lost.is_some() || (h.done.is_some() && h.last_second.is_none_or(|l| l < second))
            });
            if !complete {
                break;
            }
            let merged = merge(slot.iter().flatten());
            if let Some(m) = merged {
                let elapsed = (second as u64 + 1) * SECOND_NS;
                let mut p = ioscope_exec::run::progress(&m, elapsed, planned_ns, plan, &steps);
                // Threads over every host running the step.
                let active = steps.get(p.step as usize).and_then(|st| st.hosts).map_or(hosts.len(), |n| n as usize);
                p.threads *= active.min(hosts.len()) as u32;
                (c.on_second)(&p);
            }
            pending.remove(&second);
        }
    }

    // The end: every host's record, then the run's status.
    let mut first_errors = Vec::new();
    let mut failed = None;
    for (h, limit) in hosts.iter().zip(&limits) {
        if let Err(e) = writer.update_host(&h.name, &host_config(h)) {
            store_failure.get_or_insert(e);
        }
        if let (Some(d), None) = (&h.done, &h.lost) {
            first_errors.extend(d.first_errors.iter().map(|e| format!("host {}: {e}", h.name)));
            if d.status == "failed" && failed.is_none() {
                failed = Some(format!("host {}: {}", h.name, d.detail.clone().unwrap_or_else(|| "failed".into())));
            }
            // Its seconds judged as a local run's at its end: not one I/O succeeded (an
            // interrupted run is interrupted, as a local one).
            if let (Some(why), None, false) = (limit.at_end(), &failed, interrupted) {
                failed = Some(format!("host {}: {why}", h.name));
            }
            // A host that says it completed what was planned without one second of it did not.
            if d.status == "completed" && h.last_second.is_none() && planned_ns > 0 && failed.is_none() {
                failed = Some(format!("host {} said its run completed but sent none of its seconds", h.name));
            }
        }
    }
    while stops.join_next().await.is_some() {}
    let lost: Vec<String> = hosts
        .iter()
        .filter_map(|h| h.lost.as_ref().map(|(at, why)| format!("host {} was lost at second {at}: {why}", h.name)))
        .collect();
    end_sessions(&mut hosts).await;
    let (status, detail) = if let Some(why) = stopping {
        (Status::Failed, Some(why))
    } else if let Some(why) = failed {
        (Status::Failed, Some(why))
    } else if interrupted {
        (Status::Interrupted, Some("interrupted by signal".to_string()))
    } else if !lost.is_empty() {
        // on_host_loss = "continue": the run completed on the other hosts.
        (Status::Completed, Some(lost.join("; ")))
    } else {
        (Status::Completed, None)
    };
    // The target's seconds up to the last second any host delivered.
    let last = hosts.iter().filter_map(|h| h.last_second).max().map(u64::from);
    let rest: Vec<_> = tokio::task::block_in_place(|| probes.into_iter().flat_map(|p| p.finish(last)).collect());
    for t in rest {
        if let Err(e) = writer.write_target(&t) {
            store_failure.get_or_insert(e);
        }
    }
    if let Some(e) = store_failure {
        let _ = writer.finish(Status::Failed, Some(&e.to_string()), ioscope_exec::clock::unix_ms());
        return Err(store_err(e));
    }
    writer.finish(status, detail.as_deref(), ioscope_exec::clock::unix_ms()).map_err(store_err)?;
    Ok(Outcome { status, detail, first_errors, seconds_written })
}

/// Closes every connection; an ssh session's agent then sees its stdin end and exits
/// (one that has not within 5 s is ended with its session).
pub(crate) async fn end_sessions(hosts: &mut Vec<Host>) {
    let children: Vec<Child> = hosts.iter_mut().filter_map(|h| h.child.take()).collect();
    hosts.clear(); // the clients: the connections close
    let mut waiting = tokio::task::JoinSet::new();
    for mut child in children {
        waiting.spawn(async move {
            if tokio::time::timeout(Duration::from_secs(5), child.wait()).await.is_err() {
                let _ = child.kill().await;
            }
        });
    }
    while waiting.join_next().await.is_some() {}
}

/// Reaches one host: over ssh (copying this binary when needed, then starting the agent)
/// or to its listening agent; says hello and checks the version.
pub(crate) async fn reach(index: usize, spec: &HostSpec, timeout: Duration) -> Result<(Host, String), CoordError> {
    let name = spec.name.clone();
    let address = spec.kind.address();
    let fail = |why: String| CoordError::Host { name: name.clone(), address: address.clone(), why: text(&why) };
    let tail: Tail = Default::default();
    let (client, mut child, transport, mut said) = match &spec.kind {
        HostKind::Ssh { user, host, port } => {
            let bin_path = spec.bin.as_ref().map(|b| b.to_string_lossy().into_owned());
            let login = Login { user: user.clone(), host: host.clone(), port: *port, identity: spec.identity.clone() };
            let (bin, copied) =
                ssh::install(&login, bin_path.as_deref(), timeout).await.map_err(|e| fail(e.to_string()))?;
            let token = Token::generate();
            let mut child = ssh::start_agent(&login, &bin, &token, timeout).await.map_err(|e| fail(e.to_string()))?;
            if let Some(err) = child.stderr.take() {
                tokio::spawn(keep_tail(err, tail.clone()));
            }
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err(fail("the ssh session has no stdin or stdout".into()));
            };
            let client = Client::over_stream(tokio::io::join(stdout, stdin), &token)
                .await
                .map_err(|e| fail(format!("the agent did not answer over ssh: {e}")))?;
            let said = if copied { format!("copied ioscope to {bin}") } else { format!("using {bin}") };
            (client, Some(child), "ssh", said)
        }
        HostKind::Agent { host, port } => {
            let token_file =
                spec.token_file.as_ref().ok_or_else(|| fail("an agent:// host needs a token file".into()))?;
            let token = Token::from_file(token_file).map_err(|e| fail(e.to_string()))?;
            let tls = match &spec.ca {
                Some(ca) => ClientTls::Ca(ca.clone()),
                None => ClientTls::None,
            };
            let addr = format!("{host}:{port}");
            let client = Client::connect(&addr, &tls, &token, timeout).await.map_err(|e| fail(e.to_string()))?;
            (client, None, "listen", format!("agent at {addr}"))
        }
    };
    let hello = Hello { version: env!("CARGO_PKG_VERSION").to_string() };
    let answer = match client.call::<_, HelloAnswer>(HELLO, &hello, timeout).await {
        Ok(a) => a,
        Err(e) => return Err(fail(agent_failure(e, child.as_mut(), &tail).await)),
    };
    if answer.version != env!("CARGO_PKG_VERSION") || answer.protocol != PROTOCOL {
        return Err(fail(format!(
            "the agent is ioscope {} (protocol {}), this coordinator is {} (protocol {PROTOCOL}): use the same version",
            text(&answer.version),
            answer.protocol,
            env!("CARGO_PKG_VERSION")
        )));
    }
    said.push_str(&format!(", agent pid {} on {}", answer.pid, text(&answer.hostname)));
    let host = Host {
        index,
        name: spec.name.clone(),
        address: spec.kind.address(),
        transport,
        client,
        child,
        config: serde_json::Value::Null,
        plan_json: String::new(),
        offset: Offset { offset_ns: 0, uncertainty_ns: 0, rtt_ns: 0 },
        started_unix_ns: None,
        planned_start_unix_ns: None,
        last_second: None,
        done: None,
        lost: None,
        store_delay_ns: (0, 0, 0),
        poller: None,
    };
    Ok((host, said))
}

/// The last lines an agent wrote to its stderr (the ssh session's), for messages.
type Tail = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// Reads the session's stderr to its end (a full pipe would stall the agent), keeping the
/// last few lines.
async fn keep_tail(stderr: tokio::process::ChildStderr, tail: Tail) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut t = tail.lock().unwrap();
        if t.len() == 8 {
            t.remove(0);
        }
        t.push(line.chars().take(500).collect());
    }
}

/// A call that failed on a fresh agent: with what the agent said on stderr, if anything.
async fn agent_failure(e: CallError, child: Option<&mut Child>, tail: &Tail) -> String {
    if let Some(child) = child {
        let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let said = tail.lock().unwrap().join(" / ");
    match said.trim() {
        "" => e.to_string(),
        said => format!("{e}; the agent said: {said}"),
    }
}

pub(crate) async fn measure_clock(client: &Client) -> Result<Offset, String> {
    let mut exchanges = Vec::new();
    for _ in 0..CLOCK_EXCHANGES {
        let sent = unix_ns();
        let a: ClockAnswer = client.call(CLOCK, &Empty {}, Duration::from_secs(5)).await.map_err(|e| e.to_string())?;
        let received = unix_ns();
        exchanges.push(Exchange { sent_unix_ns: sent, agent_unix_ns: a.unix_ns, received_unix_ns: received });
    }
    estimate(&exchanges).ok_or_else(|| "the clock went backwards during every exchange".to_string())
}

/// Has one agent prepare its part: the prepare call is answered at once, then the
/// coordinator asks whether it has ended, each call bounded by `timeout` (a preparation
/// may take hours while the agent keeps answering; an agent that stops answering is lost
/// after `timeout`).
pub(crate) async fn prepare_host(
    client: &Client,
    req: &Prepare,
    timeout: Duration,
) -> Result<PrepareAnswer, CallError> {
    client.call::<_, Empty>(PREPARE, req, timeout).await?;
    let wait = PrepareWait { run: req.run.clone(), wait_ms: POLL_WAIT_MS };
    loop {
        let a: PreparedAnswer = client.call(PREPARED, &wait, Duration::from_millis(POLL_WAIT_MS) + timeout).await?;
        if let Some(done) = a.done {
            return Ok(done);
        }
    }
}

/// Text from an agent as the coordinator keeps and shows it: escaped for terminals, cut
/// to [`MAX_TEXT_BYTES`].
pub(crate) fn text(s: &str) -> String {
    let mut end = s.len().min(MAX_TEXT_BYTES);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let cut = if end < s.len() { "…" } else { "" };
    format!("{}{cut}", ioscope_store::printable(&s[..end]))
}

/// Asks one agent for its seconds until its run is done; a host that does not answer for
/// `timeout`, whose connection is gone or whose answer cannot be read is reported lost.
async fn poll(i: usize, client: Client, timeout: Duration, tx: mpsc::Sender<(usize, Result<SecondsAnswer, String>)>) {
    let mut after = None;
    let mut last_answer = tokio::time::Instant::now();
    loop {
        let req = Seconds { after, wait_ms: POLL_WAIT_MS };
        let call_timeout = Duration::from_millis(POLL_WAIT_MS) + timeout;
        match client.call::<_, SecondsAnswer>(SECONDS, &req, call_timeout).await {
            Ok(a) => {
                last_answer = tokio::time::Instant::now();
                if let Some(last) = a.seconds.last() {
                    after = Some(last.second);
                }
                let done = a.done.is_some();
                if tx.send((i, Ok(a))).await.is_err() || done {
                    return;
                }
            }
            Err(e) => {
                let closed = client.is_closed() || matches!(e, CallError::Closed(_));
                // An answer too large or not the JSON of the protocol is a lie, not a delay.
                let refused = matches!(e, CallError::BadAnswer(_));
                if closed || refused || last_answer.elapsed() >= timeout {
                    let why = if refused {
                        format!("its answer was refused ({e})")
                    } else if closed {
                        format!("its connection ended ({e})")
                    } else {
                        format!("no answer for {} s ({e})", timeout.as_secs())
                    };
                    let _ = tx.send((i, Err(why))).await;
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// What every host's answers are held to in this run.
struct Rules {
    last_planned: u32,
    /// The run's step indexes.
    steps: Vec<u32>,
    /// The most each of a host's sums over the run may reach (see `Totals::within`).
    share: u128,
    /// The start instant every host was given, on the coordinator's clock.
    start_unix_ns: i64,
}

/// What the coordinator keeps of one host's answers to judge the next.
#[derive(Clone)]
struct Judge {
    totals: ioscope_store::check::Totals,
    /// (op, kind) named so far.
    kinds: std::collections::HashSet<(ioscope_metrics::Op, String)>,
}

/// How far ahead of the coordinator's clock a host's second may end (clocks are aligned
/// to within `clock::MAX_UNCERTAINTY_NS`; this leaves room for it).
const AHEAD_NS: i64 = 2 * SECOND_NS as i64;
/// How far a host's time zero may lie before the start instant it was given.
const EARLY_START_NS: i64 = 5 * SECOND_NS as i64;
/// Most distinct (op, error kind) pairs of one host over a run.
const MAX_KINDS_PER_HOST: usize = 4096;

/// Checks one answer before anything of it is stored: at most [`MAX_SECONDS_PER_ANSWER`]
/// seconds, each after the last one received, within the plan, not ending before its
/// time (a second N is over N+1 s after the start, not sooner), with the results file's
/// own rules and the limits of a peer's second (`ioscope_store::check::peer_second`),
/// sums that stay within the host's share, a time zero near the start instant (the same
/// in every answer), and a `done` whose status is one the file knows. Returns the answer
/// (its texts made safe to show) and the host's judge once it is stored.
fn check_answer(
    mut a: SecondsAnswer,
    h: &Host,
    judge: &Judge,
    rules: &Rules,
    now_unix_ns: i64,
) -> Result<(SecondsAnswer, Judge), String> {
    if a.seconds.len() > MAX_SECONDS_PER_ANSWER {
        return Err(format!("it sent {} seconds in one answer (at most {MAX_SECONDS_PER_ANSWER})", a.seconds.len()));
    }
    if let Some(t0) = a.started_unix_ns {
        let ours = t0.checked_sub(h.offset.offset_ns);
        let early = rules.start_unix_ns.saturating_sub(EARLY_START_NS);
        if h.started_unix_ns.is_some_and(|t| ours != Some(t)) {
            return Err(format!("it said its run started at {t0} ns, not when it said before"));
        }
        if !ours.is_some_and(|t| t >= early && t <= now_unix_ns.saturating_add(AHEAD_NS)) {
            return Err(format!("it said its run started at {t0} ns, far from the start instant it was given"));
        }
    }
    let mut judge = judge.clone();
    let mut prev = h.last_second;
    for s in &a.seconds {
        let second = s.second;
        if prev.is_some_and(|p| second <= p) || second > rules.last_planned {
            return Err(format!("it sent second {second} out of order, twice or past the plan's end"));
        }
        // A second may follow a gap only as long as its interval covers (a collector's gap).
        let next = prev.map_or(0, |p| p as u64 + 1);
        if second as u64 > next + s.interval_ns / SECOND_NS + 1 {
            return Err(format!(
                "it sent second {second} after second {prev:?} with an interval that does not cover the gap"
            ));
        }
        let ends = rules.start_unix_ns.saturating_add((second as i64 + 1).saturating_mul(SECOND_NS as i64));
        if ends > now_unix_ns.saturating_add(AHEAD_NS) {
            return Err(format!("it sent second {second} before that second could have ended"));
        }
        if s.interval_ns > (rules.last_planned as u64 + 2) * SECOND_NS {
            return Err(format!(
                "it sent second {second} with an interval of {} ns, longer than the run",
                s.interval_ns
            ));
        }
        ioscope_store::check::peer_second(s, &rules.steps)
            .map_err(|why| format!("its second {second} is not valid: {why}"))?;
        for o in &s.ops {
            for (k, _) in &o.data.errors_by_kind {
                if judge.kinds.len() < MAX_KINDS_PER_HOST || judge.kinds.contains(&(o.op, k.clone())) {
                    judge.kinds.insert((o.op, k.clone()));
                } else {
                    return Err(format!("it named more than {MAX_KINDS_PER_HOST} kinds of failure"));
                }
            }
        }
        judge.totals.add(s);
        judge.totals.within(rules.share).map_err(|why| format!("its second {second}: {why} for one host"))?;
        prev = Some(second);
    }
    if let Some(d) = &mut a.done {
        match d.status.parse::<Status>() {
            Ok(Status::Completed | Status::Failed | Status::Interrupted) => {}
            _ => return Err(format!("it ended with status {:?}, not one a run can end with", text(&d.status))),
        }
        if let Some(t) = d.first_io_unix_ns {
            let ours = t.checked_sub(h.offset.offset_ns);
            let early = rules.start_unix_ns.saturating_sub(EARLY_START_NS);
            if !ours.is_some_and(|t| t >= early && t <= now_unix_ns.saturating_add(AHEAD_NS)) {
                return Err(format!("it said its first I/O was at {t} ns, outside its run"));
            }
        }
        d.detail = d.detail.as_deref().map(text);
        d.first_errors.truncate(MAX_FIRST_ERRORS);
        d.first_errors.iter_mut().for_each(|e| *e = text(e));
        d.engine = d.engine.as_deref().map(text);
    }
    Ok((a, judge))
}

/// One second merged over hosts (for the progress line): ops of the same workload add up.
fn merge<'a>(snaps: impl Iterator<Item = &'a Snapshot>) -> Option<Snapshot> {
    let mut out: Option<Snapshot> = None;
    for s in snaps {
        match &mut out {
            None => out = Some(Snapshot { ops: s.ops.clone(), ..Snapshot::new(s.second, s.interval_ns, "") }),
            Some(m) => {
                m.interval_ns = m.interval_ns.max(s.interval_ns);
                for o in &s.ops {
                    match m.ops.iter_mut().find(|x| x.workload == o.workload && x.op == o.op) {
                        Some(x) => x.data.merge(&o.data),
                        None => m.ops.push(o.clone()),
                    }
                }
            }
        }
        if let Some(m) = &mut out {
            (m.step, m.warmup) = (s.step, s.warmup);
        }
    }
    out
}

/// Marks host `i` lost (its series end at its last second), says so, stops asking it for
/// seconds and asks it to stop; with `on_host_loss = "stop"` the first loss stops every
/// other host.
async fn lose_host(
    hosts: &mut [Host],
    i: usize,
    why: String,
    on_loss: OnHostLoss,
    stopping: &mut Option<String>,
    stops: &mut tokio::task::JoinSet<()>,
    say: &dyn Fn(&str),
) {
    let h = &mut hosts[i];
    let at = h.last_second.map_or(0, |s| s + 1);
    say(&format!("host {} ({}) lost at second {at}: {why}", h.name, h.address));
    h.lost = Some((at, why.clone()));
    // Nothing more is read from it, and its load (if it still runs) stops: it must not
    // weigh on a target the other hosts measure. A host out of reach does not delay this.
    if let Some(p) = h.poller.take() {
        p.abort();
    }
    let client = h.client.clone();
    stops.spawn(async move {
        let _ = client.call::<_, Empty>(STOP, &Empty {}, Duration::from_secs(2)).await;
    });
    if on_loss == OnHostLoss::Stop && stopping.is_none() {
        *stopping = Some(format!(
            "host {} ({}) was lost at second {at}: {why}; the other hosts were stopped and every second \
             received is kept",
            h.name, h.address
        ));
        stop_all(hosts).await;
    }
}

/// How long after its planned end (or a stop) a host has to say its run is over: twice
/// `host_timeout` (its I/Os in flight end by their own timeouts, its last seconds are
/// sent), and ten minutes more when it removes its files afterwards (`cleanup`).
fn end_allowance_ns(host_timeout: Duration, cleanup: bool) -> i64 {
    let cleanup_ns = if cleanup { 600 * SECOND_NS } else { 0 };
    (host_timeout.as_nanos().min(u64::MAX as u128 / 8) as u64 * 2).saturating_add(cleanup_ns) as i64
}

/// Asks every host still running to stop, all at once (a host out of reach costs 2 s, not
/// 2 s for each such host).
async fn stop_all(hosts: &[Host]) {
    let mut calls = tokio::task::JoinSet::new();
    for h in hosts.iter().filter(|h| h.done.is_none() && h.lost.is_none()) {
        let client = h.client.clone();
        calls.spawn(async move { client.call::<_, Empty>(STOP, &Empty {}, Duration::from_secs(2)).await });
    }
    while calls.join_next().await.is_some() {}
}

/// The host's configuration with how it took part ("agent", see docs/hosts.md).
fn host_config(h: &Host) -> serde_json::Value {
    let mut config = match &h.config {
        serde_json::Value::Object(_) => h.config.clone(),
        _ => serde_json::json!({}),
    };
    if let Some(engine) = h.done.as_ref().and_then(|d| d.engine.as_deref()) {
        ioscope_exec::system::add_engine_setup(&mut config, engine);
    }
    if let Some(counters) = h.done.as_ref().and_then(|d| d.nic_counters.clone()) {
        config["nic_counters"] = counters;
    }
    let status = match (&h.lost, &h.done) {
        (Some(_), _) => "lost".to_string(),
        (None, Some(d)) => d.status.clone(),
        (None, None) => "running".to_string(),
    };
    let detail = h.lost.as_ref().map(|l| l.1.clone()).or_else(|| h.done.as_ref().and_then(|d| d.detail.clone()));
    config["agent"] = serde_json::json!({
        "index": h.index,
        "address": h.address,
        "transport": h.transport,
        "status": status,
        "detail": detail,
        "clock_offset_ns": h.offset.offset_ns,
        "clock_uncertainty_ns": h.offset.uncertainty_ns,
        "rtt_ns": h.offset.rtt_ns,
        "started_unix_ns": h.started_unix_ns,
        "planned_start_unix_ns": h.planned_start_unix_ns,
        "first_io_unix_ns": h.done.as_ref().and_then(|d| d.first_io_unix_ns).and_then(|t| t.checked_sub(h.offset.offset_ns)),
        "lost_at_second": h.lost.as_ref().map(|l| l.0),
        "store_delay_ns": {"mean": h.store_delay_ns.0.checked_div(h.store_delay_ns.1), "max": h.store_delay_ns.2},
        "plan_json": h.plan_json,
    });
    config
}
