//! A run: start the workers together, collect their recorders every second into a
//! snapshot, write each second to the results file as it finishes, and close the file
//! with the run's status.

use crate::clock::{now_ns, tighten_timer_slack, unix_ms};
use crate::engines::{with_engine, WithEngine};
use crate::iogen::IoGen;
use crate::tree::{Tree, TreeTask};
use crate::worker::{FirstError, FirstErrors, Schedule, Worker};
use ioscope_engine::{Engine, IoBuffers, Op, OpenSpec, OP_KINDS};
use ioscope_metrics::breakdown::{FileRing, WorkerTop};
use ioscope_metrics::{Counts, FileCounts, OpInterval, OpSeries, Snapshot, WorkerCounts, WorkerReader, WorkerRecorder};
use ioscope_store::{ProbeRow, RunInfo, Status, StepRow, Writer};
use ioscope_workload::{EngineKind, Operation, Plan, Rate, Step, SyncMode, Workload};
use std::path::PathBuf;
use std::sync::atomic::{
    AtomicBool, AtomicU64, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::{Barrier, Mutex};

const SECOND_NS: u64 = 1_000_000_000;

/// What the caller tells a run besides the plan.
pub struct RunConfig<'a> {
    /// The results file to create.
    pub out: PathBuf,
    pub command_line: String,
    /// Canonical workload text and its hash, stored with the results.
    pub workload_toml: String,
    pub workload_hash: String,
    /// Set from outside (Ctrl-C, SIGTERM) to stop the run early; the run then ends "interrupted".
    pub interrupt: &'a AtomicBool,
    /// Called after every second is written.
    pub on_second: &'a mut dyn FnMut(&Progress),
    /// The prepared dataset, for a plan with one.
    pub dataset: Option<crate::dataset::Layout>,
    /// Target-side samplers (`--probe`), started at the run's time zero; their seconds go
    /// into the results file beside the client's.
    pub probes: Vec<Box<dyn TargetFeed>>,
    /// With `until_ci`: told, after each repeat, every repeat's (IOPS, bytes per second)
    /// per step so far (`[repeat][step]`, warm-up excluded), says whether they are enough.
    /// None: every repeat the plan allows runs.
    pub enough: Option<&'a mut Enough<'a>>,
    /// With verification on: the journal to create (`--journal FILE`), the run's
    /// [`ioscope_verify::Sink`]; its path was checked before any I/O.
    pub journal: Option<PathBuf>,
    /// With `--verify`: what preparation stamped with headers (None: nothing, or verify off).
    pub verify_laid_out: Option<crate::verify::LaidOut>,
}

/// `until_ci`'s rule: given every repeat's (IOPS, bytes per second) per step so far
/// (`[repeat][step]`), whether they are enough.
pub type Enough<'a> = dyn FnMut(&[Vec<(f64, f64)>]) -> bool + 'a;

/// Target-side samplers attached to a run: on this host ([`LocalProbe`]) or on another
/// through an agent (`ioscope_hosts::remote_probe`).
pub trait TargetFeed: Send {
    /// The host the series are recorded under and its configuration (with its `probe`).
    fn host(&self) -> (String, serde_json::Value);
    /// Start sampling at the run's time zero (CLOCK_MONOTONIC ns on this host).
    fn start(&mut self, t0_monotonic_ns: u64);
    /// The seconds finished since the last call.
    fn take(&mut self) -> Vec<ioscope_metrics::TargetSecond>;
    /// Stops once second `last` is in (None: at once) and returns what was not taken.
    fn finish(self: Box<Self>, last: Option<u64>) -> Vec<ioscope_metrics::TargetSecond>;
}

/// `--probe local`: the samplers in this process.
pub struct LocalProbe {
    host: String,
    config: serde_json::Value,
    ready: Option<ioscope_probe::Probe>,
    running: Option<ioscope_probe::Running>,
}

impl LocalProbe {
    pub fn new(probe: ioscope_probe::Probe) -> LocalProbe {
        let mut config = crate::host::describe(None);
        config["probe"] = probe.describe();
        LocalProbe { host: crate::host::hostname(), config, ready: Some(probe), running: None }
    }
}

impl TargetFeed for LocalProbe {
    fn host(&self) -> (String, serde_json::Value) {
        (self.host.clone(), self.config.clone())
    }
    fn start(&mut self, t0_monotonic_ns: u64) {
        if let Some(p) = self.ready.take() {
            self.running = Some(p.start(t0_monotonic_ns));
        }
    }
    fn take(&mut self) -> Vec<ioscope_metrics::TargetSecond> {
        self.running.as_ref().map(|r| r.take()).unwrap_or_default()
    }
    fn finish(self: Box<Self>, last: Option<u64>) -> Vec<ioscope_metrics::TargetSecond> {
        self.running.map(|r| r.finish(last)).unwrap_or_default()
    }
}

/// One line of live progress.
#[derive(Debug, Clone)]
pub struct Progress {
    pub elapsed_s: f64,
    pub total_s: f64,
    pub iops: f64,
    pub bytes_per_sec: f64,
    pub errors: u64,
    /// p99 response time of transfers (reads and writes) in the last second.
    pub p99_ns: Option<u64>,
    /// Mean response time of transfers in the last second.
    pub mean_ns: Option<u64>,
    /// The second just written (0-based), its step (0-based) of `steps`, the step's label
    /// ("threads=4 bs=8k"; empty for a plain step), whether it was warm-up, and the
    /// threads the step runs over all workloads.
    pub second: u32,
    pub step: u32,
    pub steps: u32,
    pub step_label: String,
    pub warmup: bool,
    pub threads: u32,
    /// The second's per-operation series (every host's, merged): `run --metrics` adds
    /// them into its totals.
    pub ops: Vec<ioscope_metrics::OpSeries>,
}

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    pub status: Status,
    /// Why it failed or stopped, if it did.
    pub detail: Option<String>,
    /// First error of each op kind, as "op: message".
    pub first_errors: Vec<String>,
    pub seconds_written: u32,
    /// Why the results are still in two files (the results file and its `-wal`), if they
    /// are: folding them at the end failed (a full disk); the next reader folds them.
    pub wal_kept: Option<String>,
    /// Blocks read back that failed their check (`--verify`); 0 without it.
    pub verify_mismatches: u64,
}

/// Where a run's seconds go: the results file (a local run, [`run`]) or the coordinator
/// (an agent's run, through [`measure`]).
pub trait Sink {
    type Error: std::fmt::Display;
    /// The run's time zero (on [`crate::clock::now_ns`]'s time line) is set, and how
    /// worker 0's engine was set up (None if no engine opened).
    fn started(&mut self, t0_ns: u64, engine_setup: Option<&str>) -> Result<(), Self::Error>;
    /// A curve step's rate, once the max step it depends on has been measured.
    fn step_rate(&mut self, step: u32, rate_iops: u64) -> Result<(), Self::Error>;
    fn probe(&mut self, row: &ProbeRow) -> Result<(), Self::Error>;
    /// A finished second (or a gap's tick, see [`Seconds`]).
    fn second(&mut self, snap: &Snapshot) -> Result<(), Self::Error>;
}

/// What a measured run needs besides the plan and its sink.
pub struct Measure<'a> {
    /// This host's name, written into every snapshot.
    pub host: String,
    /// Set from outside (Ctrl-C, SIGTERM, the coordinator) to stop the run early.
    pub interrupt: &'a AtomicBool,
    /// Called after every second is handed to the sink.
    pub on_second: &'a mut dyn FnMut(&Progress),
    /// The prepared dataset, for a plan with one.
    pub dataset: Option<crate::dataset::Layout>,
    /// When to start, on [`crate::clock::now_ns`]'s time line (None: as soon as every engine
    /// is open). A start already past when the engines are open starts at once.
    pub start_at_ns: Option<u64>,
    /// Start on a whole number of seconds after this instant (a repeat: the first repeat's
    /// time zero), so that the seconds of every repeat lie on one timeline.
    pub whole_seconds_after_ns: Option<u64>,
    /// Data validation (`--verify`): the run's verifier, kept across repeats (None: off).
    pub verifier: Option<&'a crate::verify::Verifier>,
    /// A budget of this many bytes for each worker, in place of the plan's end by amount (a
    /// precondition's: each worker its file, N times over).
    pub worker_budget_bytes: Option<u64>,
}

/// How a measured run ended.
#[derive(Debug)]
pub struct Measured<E> {
    pub status: Status,
    pub detail: Option<String>,
    /// First error of each op kind, as "op: message".
    pub first_errors: Vec<String>,
    pub seconds_written: u32,
    /// The run's time zero (0 if it never started).
    pub t0_ns: u64,
    /// When the first I/O was issued, measured (None if none was).
    pub first_io_ns: Option<u64>,
    /// The sink failed (the run stopped there).
    pub sink_error: Option<E>,
    /// Why the run ended before its planned end, if it did.
    pub ended: Option<Ended>,
}

/// What ended a run before its planned end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// It was steady (`until_steady`).
    Steady,
    /// Every workload had issued its amount (`io_size`, `number_ios`, `passes`).
    Amount,
}

impl Ended {
    /// As the results file and the summary name it.
    pub fn name(self) -> &'static str {
        match self {
            Ended::Steady => "steady",
            Ended::Amount => "amount",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("results file {source}")] // the store's errors start with the path
    Store { path: PathBuf, source: ioscope_store::StoreError },
    /// The journal (`--journal`) could not be created; nothing was run.
    #[error("journal {0}")]
    Journal(String),
    /// The precondition (`precondition`) failed or was interrupted; nothing was measured.
    #[error("precondition: {0}; nothing was measured")]
    Precondition(String),
}

/// The ops a workload can produce in a run; each gets a series every second, zero or not.
pub fn ops_of(plan: &Plan, w: &Workload) -> Vec<Op> {
    if !w.flow.is_empty() {
        return crate::flow::ops_of_flow(&w.flow);
    }
    let pcts: Vec<u8> = if plan.steps.for_read_pct.is_empty() || !w.operation.transfers() {
        vec![w.read_pct]
    } else {
        plan.steps.for_read_pct.clone()
    };
    let mut ops = Vec::new();
    match w.operation {
        Operation::Read | Operation::Write => {
            let dataset = plan.dataset.is_some();
            if dataset {
                ops.push(Op::Open);
            }
            if pcts.iter().any(|p| *p > 0) {
                ops.push(Op::Read);
                if !plan.verify.is_off() {
                    ops.push(Op::Verify);
                }
            }
            if pcts.iter().any(|p| *p < 100) {
                ops.push(Op::Write);
                match plan.sync_of(w) {
                    SyncMode::Fsync if !dataset => ops.push(Op::Fsync),
                    SyncMode::Fdatasync if !dataset => ops.push(Op::Fdatasync),
                    _ => {}
                }
            }
            if dataset {
                ops.push(Op::Close);
            }
        }
        Operation::Open | Operation::Close => ops.extend([Op::Open, Op::Close]),
        Operation::Create => ops.push(Op::Create),
        Operation::Delete => ops.push(Op::Delete),
        Operation::Mkdir => ops.push(Op::Mkdir),
        Operation::Rmdir => ops.push(Op::Rmdir),
        Operation::Getattr => ops.push(Op::Getattr),
        Operation::Setattr => ops.push(Op::Setattr),
        Operation::Copy => ops.push(Op::Copy),
        Operation::Move => ops.push(Op::Move),
        Operation::List => ops.push(Op::List),
    }
    ops
}

/// Where each step lies in the run, in ns from the start.
struct StepTimes {
    start_ns: Vec<u64>,
    warmup_ns: Vec<u64>,
    end_ns: Vec<u64>,
}

impl StepTimes {
    fn total_ns(&self) -> u64 {
        self.end_ns.last().copied().unwrap_or(0)
    }
    fn new(steps: &[Step]) -> Self {
        let (mut start_ns, mut warmup_ns, mut end_ns) = (Vec::new(), Vec::new(), Vec::new());
        let mut at = 0u64;
        for s in steps {
            start_ns.push(at);
            warmup_ns.push(s.warmup.as_nanos() as u64);
            at += (s.warmup + s.duration).as_nanos() as u64;
            end_ns.push(at);
        }
        Self { start_ns, warmup_ns, end_ns }
    }
    /// The step of the second starting at `t` (ns from the start) and whether it is warm-up.
    fn at(&self, t: u64) -> (u32, bool) {
        let k = self.end_ns.iter().position(|e| t < *e).unwrap_or(self.end_ns.len() - 1);
        (k as u32, t < self.start_ns[k] + self.warmup_ns[k])
    }
}

/// A curve base not yet measured.
const UNKNOWN: u64 = 0;

/// Runs the plan against `files` (already prepared; or the dataset in `cfg.dataset`) and
/// writes the results file.
pub fn run(plan: &Plan, files: &[PathBuf], cfg: RunConfig<'_>) -> Result<Outcome, RunError> {
    let clock_source = crate::clock::init();
    let host = crate::host::hostname();
    let mut config = crate::host::describe_run(plan);
    config["timer"] = serde_json::json!(clock_source);
    // Written before the page cache is set: a cold start drops what it wrote.
    if let Some(p) = &plan.precondition {
        config["precondition"] =
            crate::precondition::run(plan, p, files, cfg.interrupt).map_err(RunError::Precondition)?;
    }
    // The page cache as the plan chose, before anything is measured (docs/cache.md).
    config["cache"] = crate::cache::apply(plan, files, cfg.dataset.as_ref()).to_json();
    // The collector (this thread) must wake on time however many workers compete for the
    // CPUs; threads started from here on (workers, probes) keep the normal priority.
    let priority = crate::clock::raise_priority();
    config["collector_priority"] = serde_json::json!(priority);
    let result = run_measured(plan, files, cfg, host, config);
    crate::clock::normal_priority();
    result
}

fn run_measured(
    plan: &Plan,
    files: &[PathBuf],
    cfg: RunConfig<'_>,
    host: String,
    config: serde_json::Value,
) -> Result<Outcome, RunError> {
    let steps = plan.steps();
    let repeats = plan.max_repeats();
    let info = RunInfo {
        ioscope_version: env!("CARGO_PKG_VERSION").to_string(),
        host: host.clone(),
        pid: std::process::id(),
        command_line: cfg.command_line.clone(),
        started_unix_ms: unix_ms(),
        planned_duration_ns: StepTimes::new(&steps).total_ns().saturating_mul(u64::from(repeats)),
        plan_json: serde_json::to_string(plan).expect("plan serializes"),
        workload_toml: cfg.workload_toml.clone(),
        workload_hash: cfg.workload_hash.clone(),
    };
    let store_err = |source| RunError::Store { path: cfg.out.clone(), source };
    // Probe hosts: this one's configuration takes a local probe's `probe`; others get rows.
    let mut config = config;
    let mut hosts = vec![(host.clone(), serde_json::Value::Null)];
    for (name, c) in cfg.probes.iter().map(|p| p.host()) {
        match hosts.iter().position(|(h, _)| *h == name) {
            Some(0) => config["probe"] = c["probe"].clone(),
            Some(_) => {}
            None => hosts.push((name, c)),
        }
    }
    hosts[0].1 = config.clone();
    let mut verifier = (!plan.verify.is_off()).then(|| match &cfg.dataset {
        Some(d) => crate::verify::Verifier::for_dataset(plan, d, cfg.verify_laid_out.as_ref()),
        None => crate::verify::Verifier::for_plan(plan, files.len(), cfg.verify_laid_out.as_ref()),
    });
    // The journal before the results file: a run that cannot keep it does not start.
    let journal = match (&cfg.journal, verifier.as_mut()) {
        (Some(path), Some(v)) => {
            Some(crate::journal::open(path, plan, files, v, &cfg.workload_toml).map_err(RunError::Journal)?)
        }
        _ => None,
    };
    let mut writer = Writer::create(&cfg.out, &info, &hosts).map_err(store_err)?;
    writer.write_steps(&step_rows(&steps)).map_err(store_err)?;
    writer.set_meta("breakdown", &crate::breakdown::meta(plan)).map_err(store_err)?;
    let at = std::cell::Cell::new(RepeatAt::default());
    let mut sink = StoreSink::new(&mut writer, &host, config, cfg.probes, &steps, &at);
    let (on_second, total_s) = (cfg.on_second, info.planned_duration_ns as f64 / 1e9);
    // Progress over the whole run: seconds, steps and labels of every repeat.
    let mut progress = |p: &Progress| {
        let a = at.get();
        let mut p = p.clone();
        p.elapsed_s += a.offset_ns as f64 / 1e9;
        p.total_s = total_s;
        p.second += a.second;
        if repeats > 1 {
            p.step_label = match p.step_label.is_empty() {
                true => format!("repeat {}", a.repeat),
                false => format!("repeat {} {}", a.repeat, p.step_label),
            };
            p.step += a.repeat * steps.len() as u32;
            p.steps *= repeats;
        }
        on_second(&p);
    };
    let mut enough = cfg.enough;
    let mut rates: Vec<Vec<(f64, f64)>> = Vec::new();
    let (mut status, mut detail, mut first_errors, mut seconds_written, mut sink_error) =
        (Status::Completed, None, Vec::<String>::new(), 0u32, None);
    for repeat in 0..repeats {
        sink.begin_repeat(repeat);
        let whole_seconds_after_ns = sink.t0_first;
        let m = measure(
            plan,
            files,
            &mut sink,
            Measure {
                host: host.clone(),
                interrupt: cfg.interrupt,
                on_second: &mut progress,
                dataset: cfg.dataset.clone(),
                start_at_ns: None,
                whole_seconds_after_ns,
                verifier: verifier.as_ref(),
                worker_budget_bytes: None,
            },
        );
        (status, detail, sink_error) = (m.status, m.detail, m.sink_error);
        if let Some(by) = m.ended {
            // What ended each repeat that ended before its planned end, for the summary.
            let ended = &mut sink.config["ended"];
            if !ended.is_array() {
                *ended = serde_json::json!([]);
            }
            if let Some(list) = ended.as_array_mut() {
                list.push(serde_json::json!({"repeat": repeat, "by": by.name()}));
            }
        }
        if m.ended.is_some() && sink_error.is_none() {
            // The step's row keeps its real length: the planned one was its maximum.
            let step = sink.step(0);
            if let Err(e) = sink.writer.end_step_early(step, &host) {
                sink_error = Some(e);
            }
        }
        seconds_written += m.seconds_written;
        for e in m.first_errors {
            let op = e.split_once(':').map(|(op, _)| op.to_string());
            if !first_errors.iter().any(|f| f.split_once(':').map(|(o, _)| o.to_string()) == op) {
                first_errors.push(e);
            }
        }
        if status != Status::Completed || sink_error.is_some() {
            break;
        }
        rates.push(sink.rates());
        if plan.until_ci.is_some() && enough.as_mut().is_some_and(|f| f(&rates)) {
            break;
        }
    }
    let t0_first = sink.t0_first.unwrap_or(0);
    // Every write has ended: the journal is written back and marked closed. If writing it
    // back ever failed, its guarantee did not hold: the run says so and fails.
    if let Some(Err(e)) = journal.as_ref().map(|j| j.close()) {
        status = Status::Failed;
        detail = Some(format!("journal: {e}"));
    }
    // The target's seconds up to the client's last one.
    let last = sink.last_second.map(u64::from);
    let rest: Vec<_> = std::mem::take(&mut sink.probes).into_iter().flat_map(|p| p.finish(last)).collect();
    let mut config = std::mem::take(&mut sink.config);
    let written = rest.iter().try_for_each(|t| writer.write_target(t));
    crate::system::run_ended(&mut config);
    // What the local files hold now, measured (docs/workload.md, "Data content").
    if matches!(plan.engine, EngineKind::Posix | EngineKind::Uring) && cfg.dataset.is_none() && !files.is_empty() {
        config["content_measured"] = crate::content_sample::measure(plan, files);
    }
    let written = written.and_then(|()| writer.update_host(&host, &config));
    let written = match &verifier {
        Some(v) => written.and_then(|()| {
            let path_of = |f: u32| match &cfg.dataset {
                Some(d) => d.file_path(u64::from(f)).display().to_string(),
                None => files.get(f as usize).map(|p| p.display().to_string()).unwrap_or_default(),
            };
            let (run, rows) = crate::verify::rows(v, &host, &path_of, t0_first);
            writer.write_verification(&run, &rows)
        }),
        None => written,
    };
    if let Some(e) = sink_error.or(written.err()) {
        let _ = writer.finish(Status::Failed, Some(&e.to_string()), unix_ms());
        return Err(store_err(e));
    }
    let verify_mismatches = verifier.as_ref().map_or(0, |v| v.mismatch_total());
    // Any mismatch fails the run unless `--verify report`: the file says so as the exit
    // code does (status, summary, JSON and exit code tell one story).
    if plan.verify == ioscope_workload::VerifyMode::Fail && verify_mismatches > 0 && status == Status::Completed {
        status = Status::Failed;
        detail = Some(format!(
            "verify: {verify_mismatches} block(s) read back were not what the run wrote (the summary lists them; \
             --verify report counts them without failing)"
        ));
    }
    let wal_kept = match writer.finish(status, detail.as_deref(), unix_ms()).map_err(store_err)? {
        ioscope_store::Finished::OneFile => None,
        ioscope_store::Finished::WithWal(why) => Some(why),
    };
    Ok(Outcome { status, detail, first_errors, seconds_written, wal_kept, verify_mismatches })
}

/// The steps as the results file's step table has them.
pub fn step_rows(steps: &[Step]) -> Vec<StepRow> {
    let times = StepTimes::new(steps);
    steps
        .iter()
        .zip(&times.start_ns)
        .map(|(s, start)| StepRow {
            index: s.index,
            repeat: 0,
            label: s.label(),
            threads: s.threads,
            rate_iops: match s.rate {
                Rate::Fixed(r) => Some(r),
                _ => None,
            },
            curve_pct: match s.rate {
                Rate::Curve { pct, .. } => Some(pct),
                _ => None,
            },
            start_second: (start / SECOND_NS) as u32,
            warmup_ns: s.warmup.as_nanos() as u64,
            duration_ns: s.duration.as_nanos() as u64,
        })
        .collect()
}

/// Where the repeat being measured lies in the run: its number, its first second and its
/// time zero's distance from the first repeat's.
#[derive(Clone, Copy, Debug, Default)]
struct RepeatAt {
    repeat: u32,
    second: u32,
    offset_ns: u64,
}

/// A local run's sink: the results file. Each repeat ([`measure`] once per repeat) counts
/// its seconds and steps from 0; the sink moves them to the run's: seconds continue from
/// the first repeat's time zero, and each repeat's steps are rows of their own.
struct StoreSink<'a> {
    writer: &'a mut Writer,
    host: &'a str,
    config: serde_json::Value,
    /// Target samplers, started at time zero.
    probes: Vec<Box<dyn TargetFeed>>,
    steps: &'a [Step],
    at: &'a std::cell::Cell<RepeatAt>,
    /// The first repeat's time zero, once it has started.
    t0_first: Option<u64>,
    /// The last second written (the run's numbering).
    last_second: Option<u32>,
    /// This repeat's measured (ops, bytes, ns) per step, warm-up excluded.
    measured: Vec<(u64, u64, u64)>,
}

impl<'a> StoreSink<'a> {
    fn new(
        writer: &'a mut Writer,
        host: &'a str,
        config: serde_json::Value,
        probes: Vec<Box<dyn TargetFeed>>,
        steps: &'a [Step],
        at: &'a std::cell::Cell<RepeatAt>,
    ) -> Self {
        StoreSink { writer, host, config, probes, steps, at, t0_first: None, last_second: None, measured: Vec::new() }
    }

    fn begin_repeat(&mut self, repeat: u32) {
        self.at.set(RepeatAt { repeat, ..self.at.get() });
        self.measured = vec![(0, 0, 0); self.steps.len()];
    }

    /// The step of the run of this repeat's step `k`.
    fn step(&self, k: u32) -> u32 {
        k.saturating_add(self.at.get().repeat.saturating_mul(self.steps.len() as u32))
    }

    /// This repeat's (IOPS, bytes per second) per step.
    fn rates(&self) -> Vec<(f64, f64)> {
        let rate = |n: u64, ns: u64| if ns > 0 { n as f64 * 1e9 / ns as f64 } else { 0.0 };
        self.measured.iter().map(|&(ops, bytes, ns)| (rate(ops, ns), rate(bytes, ns))).collect()
    }
}

impl Sink for StoreSink<'_> {
    type Error = ioscope_store::StoreError;
    fn started(&mut self, t0_ns: u64, engine_setup: Option<&str>) -> Result<(), Self::Error> {
        let first = *self.t0_first.get_or_insert(t0_ns);
        let a = self.at.get();
        let offset_ns = t0_ns.saturating_sub(first);
        let second = u32::try_from(offset_ns / SECOND_NS).unwrap_or(u32::MAX);
        self.at.set(RepeatAt { second, offset_ns, ..a });
        if a.repeat == 0 {
            let t0 = crate::clock::to_monotonic(t0_ns);
            self.probes.iter_mut().for_each(|p| p.start(t0));
            crate::system::run_started(&mut self.config, engine_setup);
            self.writer.update_host(self.host, &self.config)
        } else {
            let rows = step_rows(self.steps).into_iter().map(|r| StepRow {
                index: self.step(r.index),
                repeat: a.repeat,
                start_second: r.start_second.saturating_add(second),
                ..r
            });
            self.writer.write_steps(&rows.collect::<Vec<_>>())
        }
    }
    fn step_rate(&mut self, step: u32, rate_iops: u64) -> Result<(), Self::Error> {
        self.writer.set_step_rate(self.step(step), rate_iops)
    }
    fn probe(&mut self, row: &ProbeRow) -> Result<(), Self::Error> {
        let at_ns = row.at_ns.saturating_add(self.at.get().offset_ns);
        self.writer.write_probe(&ProbeRow { at_ns, ..row.clone() })
    }
    fn second(&mut self, snap: &Snapshot) -> Result<(), Self::Error> {
        crate::system::second_done(&mut self.config["nic_counters"]);
        if !snap.warmup {
            if let Some(m) = self.measured.get_mut(snap.step as usize) {
                let t = snap.total();
                *m = (m.0 + t.ops, m.1 + t.bytes, m.2 + snap.interval_ns);
            }
        }
        let second = snap.second.saturating_add(self.at.get().second);
        match self.at.get().repeat {
            0 => self.writer.write_second(snap)?,
            _ => self.writer.write_second(&Snapshot { second, step: self.step(snap.step), ..snap.clone() })?,
        }
        self.last_second = Some(second);
        for t in self.probes.iter_mut().flat_map(|p| p.take()) {
            self.writer.write_target(&t)?;
        }
        Ok(())
    }
}

/// Runs the plan against `files` (already prepared; or the dataset in `m.dataset`) and
/// hands every finished second to `sink`.
pub fn measure<S: Sink>(plan: &Plan, files: &[PathBuf], sink: &mut S, m: Measure<'_>) -> Measured<S::Error> {
    let steps = plan.steps();
    let times = StepTimes::new(&steps);
    let total_ns = times.total_ns();
    let host = m.host;
    // Workers: for each workload, as many as its most threads in any step.
    let max_threads = plan.max_threads();
    let mut roles: Vec<(usize, u32)> = Vec::new();
    for (wi, n) in max_threads.iter().enumerate() {
        roles.extend((0..*n).map(|local| (wi, local)));
    }
    let threads = roles.len();
    let workload_ops: Vec<Vec<Op>> = plan.workloads.iter().map(|w| ops_of(plan, w)).collect();
    let recorders: Vec<WorkerRecorder> = roles
        .iter()
        .map(|(wi, _)| {
            let used: Vec<usize> = workload_ops[*wi].iter().map(|o| *o as usize).collect();
            WorkerRecorder::with_ops(OP_KINDS, &used).with_files(files.len())
        })
        .collect();
    // Per-file breakdown: a ring per worker, drained by the collector (none when off).
    let rings = crate::breakdown::rings(plan, threads);
    let flows = plan.workloads.iter().any(|w| !w.flow.is_empty());
    let sets = plan.filesets.iter().map(crate::dataset::Layout::new).collect();
    let tree = m.dataset.map(|l| Tree::with_sets(l, sets, flows).with_semaphores(crate::flow::Semaphores::new(plan)));
    let curve_base: Vec<AtomicU64> = steps.iter().map(|_| AtomicU64::new(UNKNOWN)).collect();
    let stop = AtomicBool::new(false);
    let ready = Barrier::new(threads + 1);
    let start_ns = AtomicU64::new(0);
    // When the first I/O was really issued (after its worker woke for it).
    let first_io_ns = AtomicU64::new(u64::MAX);
    let finished = AtomicUsize::new(0);
    let open_error: Mutex<Option<String>> = Mutex::new(None);
    // Read by every worker and the collector right after the start barrier: a flag, not the
    // mutex (a starved worker holding it would make the collector miss its first ticks).
    let open_failed = AtomicBool::new(false);
    let lost: Mutex<Option<String>> = Mutex::new(None);
    let engine_setup: Mutex<Option<String>> = Mutex::new(None);
    let spec = OpenSpec {
        files: if tree.is_some() { Vec::new() } else { files.to_vec() },
        write: plan.writes(),
        direct: plan.direct,
        dsync: plan.sync == SyncMode::Dsync,
        queue_depth: plan.iodepth,
        file_size: if tree.is_some() { 0 } else { plan.file_size_bytes() },
    };
    let (probe_tx, probe_rx) = std::sync::mpsc::channel::<ProbeRow>();
    let cpu: Vec<crate::cpu::ThreadCpu> = (0..threads).map(|_| crate::cpu::ThreadCpu::new()).collect();

    let mut seconds_written = 0u32;
    let mut sink_error = None;
    // Why failed I/Os ended the run (max_errors), if they did; asked again at the end.
    let mut too_many_errors: Option<String> = None;
    let mut error_limit = crate::limit::ErrorLimit::new(plan.max_errors, crate::limit::place_of(plan));
    let mut until_steady = crate::steady::UntilSteady::of(plan);
    let mut ended_steady = false;
    let budgets = match m.worker_budget_bytes {
        Some(bytes) => Some(crate::amount::Budgets::per_worker(threads, bytes)),
        None => crate::amount::Budgets::of(plan),
    };
    let first_errors: Vec<FirstErrors> = std::thread::scope(|s| {
        let handles: Vec<_> = roles
            .iter()
            .enumerate()
            .map(|(id, (wi, local))| {
                let shared = Shared {
                    plan,
                    steps: &steps,
                    times: &times,
                    workload: *wi,
                    local: *local,
                    spec: &spec,
                    tree: tree.as_ref(),
                    curve_base: &curve_base,
                    recorder: &recorders[id],
                    ring: rings.get(id),
                    stop: &stop,
                    ready: &ready,
                    start_ns: &start_ns,
                    finished: &finished,
                    open_error: &open_error,
                    open_failed: &open_failed,
                    lost: &lost,
                    engine_setup: &engine_setup,
                    first_io_ns: &first_io_ns,
                    cpu: &cpu[id],
                    verifier: m.verifier,
                    budgets: budgets.as_ref(),
                };
                s.spawn(move || with_engine(plan, WorkerStart { id: id as u32, shared }))
            })
            .collect();

        // Start everyone at the same instant, once all engines are open: the time zero of
        // the run is taken after the last worker is ready (opening and allocating for
        // hundreds of workers can take seconds, which must not count as measured time).
        ready.wait();
        let mut cpu_reader = crate::cpu::CpuReader::start(&cpu);
        if open_failed.load(Relaxed) {
            stop.store(true, Relaxed);
        }
        // Published without waiting for the workers: they wait for it (a barrier would make
        // this thread wait until hundreds of starved workers got round to it, after t0).
        let mut t0 = (now_ns() + 2_000_000).max(m.start_at_ns.unwrap_or(0));
        if let Some(base) = m.whole_seconds_after_ns {
            t0 = base + t0.saturating_sub(base).div_ceil(SECOND_NS) * SECOND_NS;
        }
        rings.iter().for_each(|r| r.set_start(t0));
        start_ns.store(t0, Release);
        if let Err(e) = sink.started(t0, engine_setup.lock().unwrap().take().as_deref()) {
            sink_error = Some(e);
            stop.store(true, Relaxed);
        }
        let probes = (!plan.probes.is_empty()).then(|| {
            let tx = probe_tx.clone();
            let (probes, stop) = (&plan.probes, &stop);
            s.spawn(move || crate::probe::run_probes(probes, t0, stop, &tx))
        });
        drop(probe_tx);
        let deadline = t0 + total_ns;
        let mut readers: Vec<WorkerReader> =
            (0..threads).map(|_| WorkerReader::new(OP_KINDS).naming(crate::errors::namer(plan))).collect();
        // Measured transfers and time of each step so far (for curves).
        let mut step_ops = vec![0u64; steps.len()];
        let mut step_ns = vec![0u64; steps.len()];
        let mut published = vec![false; steps.len()];
        let file_names: Vec<String> = files
            .iter()
            .map(|f| f.file_name().map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into_owned()))
            .collect();
        let c = Collect {
            host: &host,
            plan,
            workload_ops: &workload_ops,
            roles: &roles,
            file_names: &file_names,
            cpu: &cpu,
        };
        let mut breakdown = crate::breakdown::Collector::new(plan, &rings, tree.as_ref(), &file_names);
        let mut seconds = Seconds::new(t0, total_ns);
        loop {
            // Sleep to the read of the next second (a grace after its end); at the end of the
            // run, until every worker has finished its last I/O.
            let wake = seconds.wake_ns();
            loop {
                if m.interrupt.load(Relaxed) {
                    stop.store(true, Relaxed);
                }
                let now = now_ns();
                if finished.load(Relaxed) == threads || now >= wake {
                    break;
                }
                let wait = wake.saturating_sub(now).clamp(1_000_000, breakdown.drain_every_ns(20_000_000));
                std::thread::sleep(std::time::Duration::from_nanos(wait));
                breakdown.drain(seconds.next as u32, &read_through(&readers));
            }
            let all_done = finished.load(Relaxed) == threads;
            let now = now_ns();
            let ready = if all_done {
                // No worker records any more: both slots hold the rest of the run.
                let rest = c.collect(&[0, 1], &recorders, &mut readers, &mut breakdown.by_worker);
                Some(seconds.last(rest, now.min(deadline)))
            } else {
                let (second, slot) = seconds.to_read(now);
                let read = c.collect(&[slot], &recorders, &mut readers, &mut breakdown.by_worker);
                seconds.read(second, read, now_ns())
            };
            let Some(mut snap) = ready else { continue };
            cpu_reader.fill(&cpu, &mut snap);
            let (step, warmup) = times.at(snap.second as u64 * SECOND_NS);
            (snap.step, snap.warmup) = (step, warmup);
            // The per-file records of the I/Os these reads had are this second's; the others
            // wait for the read that has them (at the end, everything is the last second's).
            breakdown.fill(&mut snap, &read_through(&readers));
            if let Some(why) = error_limit.add(&snap) {
                too_many_errors.get_or_insert(why);
                stop.store(true, Relaxed);
            }
            if !warmup {
                step_ops[step as usize] += snap.total().ops;
                step_ns[step as usize] += snap.interval_ns;
            }
            if !all_done && !ended_steady && until_steady.as_mut().is_some_and(|u| u.steady_after(&snap)) {
                ended_steady = true;
                stop.store(true, Relaxed);
            }
            // A max step that has ended gives its curve steps their rate.
            for (k, st) in steps.iter().enumerate() {
                if published[k] || now < t0 + times.end_ns[k] {
                    continue;
                }
                published[k] = true;
                let base = (step_ops[k] as u128 * SECOND_NS as u128 / step_ns[k].max(1) as u128) as u64;
                curve_base[k].store(base.max(1), Relaxed);
                for later in steps.iter().skip(k + 1) {
                    if let Rate::Curve { pct, of_step } = later.rate {
                        if of_step == st.index {
                            if let Err(e) = sink.step_rate(later.index, (base * pct as u64 / 100).max(1)) {
                                sink_error = Some(e);
                            }
                        }
                    }
                }
            }
            for p in probe_rx.try_iter() {
                if let Err(e) = sink.probe(&p) {
                    sink_error = Some(e);
                }
            }
            let empty_tail = all_done
                && snap.ops.iter().all(|o| o.data.is_empty())
                && snap.file_dists.is_empty()
                && seconds_written > 0;
            if !empty_tail {
                if let Err(e) = sink.second(&snap) {
                    sink_error = Some(e);
                    stop.store(true, Relaxed);
                    break;
                }
                seconds_written += 1;
                (m.on_second)(&progress(&snap, now.saturating_sub(t0), total_ns, plan, &steps));
            }
            if all_done {
                break;
            }
        }
        stop.store(true, Relaxed);
        let errors = handles.into_iter().map(|h| h.join().unwrap_or_default()).collect();
        if let Some(p) = probes {
            let _ = p.join();
        }
        for p in probe_rx.try_iter() {
            if let Err(e) = sink.probe(&p) {
                sink_error = Some(e);
            }
        }
        errors
    });

    let first_errors: Vec<String> = first_errors
        .iter()
        .flat_map(|f| f.0.iter())
        .fold(Vec::<&FirstError>::new(), |mut acc, e| {
            if !acc.iter().any(|a| a.op == e.op) {
                acc.push(e);
            }
            acc
        })
        .into_iter()
        .map(|e| first_error_text(e, files, tree.as_ref()))
        .collect();
    let (status, detail) = if let Some(e) = open_error.into_inner().unwrap() {
        (Status::Failed, Some(format!("could not open the target: {e}")))
    } else if let Some(why) = lost.into_inner().unwrap() {
        (Status::Failed, Some(format!("the target went out of reach: {why}")))
    } else if let Some(why) = too_many_errors {
        (Status::Failed, Some(why))
    } else if m.interrupt.load(Relaxed) {
        (Status::Interrupted, Some("interrupted by signal".to_string()))
    } else if let Some(why) = error_limit.at_end() {
        // I/Os were attempted and none succeeded: a failed run, whatever the count.
        (Status::Failed, Some(why))
    } else {
        (Status::Completed, None)
    };
    let first_io_ns = Some(first_io_ns.load(Relaxed)).filter(|t| *t != u64::MAX);
    Measured {
        status,
        detail,
        first_errors,
        seconds_written,
        t0_ns: start_ns.load(Relaxed),
        first_io_ns,
        sink_error,
        ended: if ended_steady {
            Some(Ended::Steady)
        } else if status == Status::Completed && budgets.as_ref().is_some_and(|b| b.all_spent()) {
            Some(Ended::Amount)
        } else {
            None
        },
    }
}

/// "write: ENOSPC: No space left on device (os error 28), in /data/ioscope.0.dat at
/// offset 1048576": a first error with the file it was on (a working set's file, or a
/// dataset's) and where in it.
fn first_error_text(e: &FirstError, files: &[PathBuf], tree: Option<&Tree>) -> String {
    let file = match tree {
        Some(t) if e.file != ioscope_metrics::breakdown::NO_FILE => Some(t.file_path(u64::from(e.file))),
        Some(_) => None,
        None => files.get(e.file as usize).cloned(),
    };
    let mut text = format!("{}: {}", e.op.name(), e.text);
    if let Some(f) = file {
        text.push_str(&format!(", in {}", f.display()));
    }
    if let Some(at) = e.offset {
        text.push_str(&format!(" at offset {at}"));
    }
    text
}

/// What every worker thread shares with the run.
#[derive(Clone, Copy)]
struct Shared<'a> {
    plan: &'a Plan,
    steps: &'a [Step],
    times: &'a StepTimes,
    /// This worker's workload, and its number within it.
    workload: usize,
    local: u32,
    spec: &'a OpenSpec,
    tree: Option<&'a Tree>,
    /// Measured IOPS of each max step, once it has ended (for curve steps).
    curve_base: &'a [AtomicU64],
    recorder: &'a WorkerRecorder,
    /// This worker's per-file ring (None: no per-file breakdown).
    ring: Option<&'a FileRing>,
    stop: &'a AtomicBool,
    /// Every engine is open (or failed to open).
    ready: &'a Barrier,
    start_ns: &'a AtomicU64,
    finished: &'a AtomicUsize,
    open_error: &'a Mutex<Option<String>>,
    open_failed: &'a AtomicBool,
    /// Why the target went out of reach during the run (the run fails).
    lost: &'a Mutex<Option<String>>,
    /// How worker 0's engine was set up, once open.
    engine_setup: &'a Mutex<Option<String>>,
    /// The earliest instant any worker woke to issue its first I/O.
    first_io_ns: &'a AtomicU64,
    /// This worker's thread CPU clock, read by the collector.
    cpu: &'a crate::cpu::ThreadCpu,
    verifier: Option<&'a crate::verify::Verifier>,
    /// An end by amount's budgets (None: the run ends on time only).
    budgets: Option<&'a crate::amount::Budgets>,
}

impl Shared<'_> {
    /// This worker's share of a total rate (I/Os per second) in a step with `threads` threads
    /// in its workload: the workload's skew (or an even share of what skews leave), split
    /// evenly over its threads.
    fn share(&self, total: f64, threads: u32) -> f64 {
        let ws = &self.plan.workloads;
        let skewed: f64 = ws.iter().filter_map(|w| w.skew_pct).sum();
        let unskewed = ws.iter().filter(|w| w.skew_pct.is_none()).count().max(1);
        let pct = ws[self.workload].skew_pct.unwrap_or((100.0 - skewed).max(0.0) / unskewed as f64);
        total * pct / 100.0 / threads.max(1) as f64
    }
}

/// Counts a worker as finished when it returns or unwinds, so the collector never waits
/// for a worker that died.
struct CountFinished<'a>(&'a AtomicUsize);

impl Drop for CountFinished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Relaxed);
    }
}

/// A worker about to start, waiting for its engine.
struct WorkerStart<'a> {
    id: u32,
    shared: Shared<'a>,
}

impl<'a> WithEngine for WorkerStart<'a> {
    type Out = FirstErrors;
    fn with<E: Engine>(self, engine: E) -> FirstErrors {
        worker_main(engine, self.id, self.shared)
    }
}

fn worker_main<E: Engine>(mut engine: E, id: u32, sh: Shared<'_>) -> FirstErrors {
    let _finished = CountFinished(sh.finished);
    // Dropped first: the last CPU time is stored before the worker counts as finished.
    let _cpu = sh.cpu.register();
    tighten_timer_slack();
    let plan = sh.plan;
    let workload = &plan.workloads[sh.workload];
    // Each worker runs at its workload's own depth, sync and direct (its own open).
    // Opened (and its buffers sized) at its deepest step; each step keeps its own in flight.
    let (depth, sync) = (plan.most_iodepth_of(workload), plan.sync_of(workload));
    let spec = OpenSpec {
        direct: plan.direct_of(workload),
        dsync: sync == SyncMode::Dsync,
        queue_depth: depth,
        ..sh.spec.clone()
    };
    let buffers = IoBuffers::new(depth as usize, plan.max_block_bytes() as usize, 0x9e37_79b9 ^ id as u64);
    match engine.open(&spec, &buffers) {
        Ok(()) if id == 0 => *sh.engine_setup.lock().unwrap() = Some(engine.describe()),
        Ok(()) => {}
        Err(e) => {
            sh.open_error.lock().unwrap().get_or_insert(e.to_string());
            sh.open_failed.store(true, Relaxed);
        }
    }
    sh.ready.wait();
    // The run's time zero, set by the collector once every worker is ready.
    while sh.start_ns.load(Acquire) == 0 {
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    // Every worker has tried its open before the barrier lets anyone through, so a failed
    // open is known here: no worker runs with a missing file table, whenever the main
    // thread gets round to setting `stop`.
    let open_failed = sh.open_failed.load(Relaxed);
    let mut errors = FirstErrors::default();
    if !open_failed && !sh.stop.load(Relaxed) {
        let t0 = sh.start_ns.load(Acquire);
        sh.recorder.start(t0, t0 + sh.times.end_ns.last().copied().unwrap_or(0));
        let seed = |k: usize| 0x5851_f42d_4c95_7f2d ^ ((id as u64 + 1) << 32) ^ k as u64;
        let first = crate::in_step(workload, &sh.steps[0]);
        let gen = IoGen::new(plan.files, plan.file_size_bytes(), &first, sh.local, seed(0), t0);
        let mut w = Worker::new(engine, buffers, gen, sh.recorder, sh.stop, sync, depth);
        w.ring = sh.ring;
        w.budget = sh.budgets.and_then(|b| b.of_worker(id as usize, sh.workload));
        w.namer = crate::errors::namer(plan);
        // Random per run and worker: no two workers (or hosts) write the same bytes.
        let set_seed = crate::content::working_set_seed(&plan.dir);
        w.content =
            crate::content::Filler::new(&workload.content, crate::verify::new_run_id() ^ u64::from(id), set_seed);
        w.verify = sh
            .verifier
            .map(|v| crate::verify::WorkerVerify::new(v, depth as usize, plan.max_block_bytes() as usize))
            .map(|v| v.with_dsync(sync == SyncMode::Dsync));
        for (k, step) in sh.steps.iter().enumerate() {
            if sh.stop.load(Relaxed) {
                break;
            }
            let eff = crate::in_step(workload, step);
            w.queue_depth = plan.iodepth_of(&eff).clamp(1, depth);
            let (start, end) = (t0 + sh.times.start_ns[k], t0 + sh.times.end_ns[k]);
            if sh.local >= eff.threads {
                crate::clock::wait_until(end, sh.stop);
                continue;
            }
            let mut begin = start;
            let rate = match step.rate {
                Rate::Max => None,
                Rate::Fixed(r) => Some(r as f64),
                Rate::Curve { pct, of_step } => {
                    // Wait for the max step's measurement (published just after it ends).
                    let base = &sh.curve_base[of_step as usize];
                    while base.load(Relaxed) == UNKNOWN && !sh.stop.load(Relaxed) && now_ns() < end {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    begin = begin.max(now_ns());
                    Some(base.load(Relaxed).max(1) as f64 * pct as f64 / 100.0)
                }
            };
            let interval_ns = rate.map(|r| (SECOND_NS as f64 / sh.share(r, eff.threads).max(1e-3)) as u64);
            let schedule = Schedule {
                start_ns: begin,
                deadline_ns: end,
                interval_ns,
                phase_ns: interval_ns.map_or(0, |iv| iv * sh.local as u64 / eff.threads as u64),
                arrivals: crate::access::Arrivals::of(eff.access.arrivals, seed(k) ^ 0x9e37_79b9_7f4a_7c15),
            };
            crate::clock::wait_until(begin, sh.stop);
            sh.first_io_ns.fetch_min(now_ns(), Relaxed);
            match sh.tree {
                Some(tree) if !eff.flow.is_empty() => {
                    let mut task = crate::flow::FlowTask::new(tree, eff, sh.workload, sh.local, seed(k));
                    w.run_flow(tree, &mut task, &schedule);
                }
                Some(tree) => {
                    let mut task = TreeTask::new(tree, eff, sh.local, seed(k));
                    w.run_tree(tree, &mut task, &schedule);
                }
                None => {
                    w.gen = IoGen::new(plan.files, plan.file_size_bytes(), &eff, sh.local, seed(k), t0);
                    if let Some(v) = sh.verifier {
                        w.gen.align_start(u64::from(v.block_len));
                    }
                    w.run(&schedule);
                }
            }
        }
        if let Some(why) = w.engine.lost() {
            sh.lost.lock().unwrap().get_or_insert_with(|| why.to_string());
            sh.stop.store(true, Relaxed);
        }
        w.engine.close();
        if let Some(v) = w.verify.as_mut() {
            v.finish();
        }
        errors = w.errors;
    }
    errors
}

/// What the collector needs to build a second.
struct Collect<'a> {
    host: &'a str,
    plan: &'a Plan,
    workload_ops: &'a [Vec<Op>],
    /// (workload, local number) of each worker.
    roles: &'a [(usize, u32)],
    /// Names of the flat workloads' files, by index.
    file_names: &'a [String],
    /// Each worker's thread (to boost one the collector waits for).
    cpu: &'a [crate::cpu::ThreadCpu],
}

impl Collect<'_> {
    /// Reads every worker and builds the snapshot of one second: per workload and op,
    /// merged over the workload's workers.
    /// `slots` are the recorder slots to read (see [`Seconds`]); the caller sets the second,
    /// its interval and its step.
    fn collect(
        &self,
        slots: &[usize],
        recorders: &[WorkerRecorder],
        readers: &mut [WorkerReader],
        by_worker: &mut WorkerTop,
    ) -> Snapshot {
        let mut merged: Vec<Vec<OpInterval>> =
            self.workload_ops.iter().map(|ops| ops.iter().map(|_| OpInterval::empty()).collect()).collect();
        let mut workers = Vec::new();
        let mut per_file: std::collections::BTreeMap<(u32, usize), Counts> = Default::default();
        // Workers caught in the middle of an I/O's record (preempted there) are read after
        // all the others, so that the waits for them overlap; one still not done after
        // BOOST_AFTER_NS runs at real-time priority until it has been read. Under hundreds
        // of workers per CPU a preempted worker may otherwise wait most of a second for a
        // CPU, and the read with it.
        let mut reads: Vec<Option<Vec<OpInterval>>> = recorders.iter().map(|_| None).collect();
        let mut left: Vec<usize> = (0..recorders.len()).collect();
        let (started, mut boosted) = (now_ns(), Vec::new());
        while !left.is_empty() {
            let before = left.len();
            left.retain(|&w| {
                let rec = &recorders[w];
                if slots.iter().any(|s| rec.recording(*s)) {
                    return true;
                }
                let mut per_op: Vec<OpInterval> = Vec::new();
                for slot in slots {
                    // Whole I/Os only: should the worker begin a record into this slot
                    // meanwhile, the read waits for it to end and reads again.
                    let (read, files) = readers[w].read_slot(rec, *slot, wait_for_worker);
                    for (op, file, c) in files {
                        per_file.entry((file, op)).or_default().add(&c);
                    }
                    match per_op.is_empty() {
                        true => per_op = read,
                        false => per_op.iter_mut().zip(&read).for_each(|(a, b)| a.merge(b)),
                    }
                }
                reads[w] = Some(per_op);
                false
            });
            boosted.retain(|(w, _)| left.contains(w));
            if left.len() == before {
                if boosted.is_empty() && now_ns().saturating_sub(started) > BOOST_AFTER_NS {
                    boosted = left.iter().filter_map(|&w| Some((w, self.cpu.get(w)?.boost()?))).collect();
                }
                wait_for_worker();
            }
        }
        for (w, per_op) in reads.into_iter().enumerate() {
            let mut per_op = per_op.unwrap_or_default();
            let wi = self.roles[w].0;
            for (m, op) in merged[wi].iter_mut().zip(&self.workload_ops[wi]) {
                let Some(d) = per_op.get_mut(*op as usize) else { continue };
                m.merge(d);
                workers.push(WorkerCounts { worker: w as u32, op: *op, counts: d.counts });
                by_worker.offer(w as u32, *op as usize, std::mem::replace(d, OpInterval::empty()));
            }
        }
        let mut ops = Vec::new();
        for (wi, per_op) in merged.into_iter().enumerate() {
            for (op, data) in self.workload_ops[wi].iter().zip(per_op) {
                let workload = self.plan.workloads[wi].name.clone();
                ops.push(OpSeries { workload, op: *op, data });
            }
        }
        let files = per_file
            .into_iter()
            // (The recorder's op indices are Op's own: every one is in Op::ALL.)
            .filter_map(|((file, op), counts)| {
                Some(FileCounts {
                    file: self.file_names.get(file as usize).cloned().unwrap_or_else(|| file.to_string()),
                    op: *Op::ALL.get(op)?,
                    counts,
                })
            })
            .collect();
        Snapshot { ops, workers, files, ..Snapshot::new(0, 0, self.host) }
    }
}

/// Per worker, the sequence numbers its slots were last read at (for the per-file records).
fn read_through(readers: &[WorkerReader]) -> Vec<[u64; 2]> {
    readers.iter().map(|r| r.read_through()).collect()
}

/// How long the collector waits for a worker in the middle of a record before it boosts
/// it (see [`Collect::collect`]).
const BOOST_AFTER_NS: u64 = 5_000_000;

/// The collector's wait for a worker that is recording an I/O into the slot it reads: a
/// sleep (not a spin or a yield), so that the worker gets a CPU even when the collector
/// runs at SCHED_FIFO on it.
fn wait_for_worker() {
    std::thread::sleep(std::time::Duration::from_micros(50));
}

/// Adds a later read of the same workers into `into` (the same workloads, ops and workers
/// in the same order: [`Collect::collect`] builds them so).
fn absorb(into: &mut Snapshot, more: Snapshot) {
    for (a, b) in into.ops.iter_mut().zip(&more.ops) {
        a.data.merge(&b.data);
    }
    for (a, b) in into.workers.iter_mut().zip(&more.workers) {
        a.counts.add(&b.counts);
    }
    let mut files: std::collections::BTreeMap<(String, Op), Counts> =
        into.files.drain(..).map(|f| ((f.file, f.op), f.counts)).collect();
    for f in more.files {
        files.entry((f.file, f.op)).or_default().add(&f.counts);
    }
    into.files = files.into_iter().map(|((file, op), counts)| FileCounts { file, op, counts }).collect();
}

/// Grace after a second's end before its slot is read: a worker that stamped a completion
/// just before the boundary has recorded it by then (one that has not is counted two seconds
/// later, in the slot's next read).
const GRACE_NS: u64 = 50_000_000;

/// The collector's side of the one definition of a second: which slot to read when, and
/// which seconds a read completes.
///
/// Second N is read from slot N % 2 once it has ended. A collector starved past the end of
/// the next second (the process stopped, or no CPU for it) cannot tell the seconds of one
/// slot apart: it then reads the seconds it missed as they become clean and writes them as
/// one tick of their real length, numbered by its last second (a gap, never a second
/// counted twice or made up); the ticks after it are whole seconds again.
struct Seconds {
    t0: u64,
    /// The run's last planned second: later completions count in it; it is read at the end.
    last: u64,
    /// The planned end (the last second ends there).
    end_ns: u64,
    /// The next second to read.
    next: u64,
    /// The first second not written yet, and what was read of it and later ones so far.
    from: u64,
    pending: Option<Snapshot>,
    /// Per slot, the last second its read was taken after (-1 before any: second -2 and -1).
    clean: [i64; 2],
    /// The highest second a pending read may hold.
    high: i64,
}

impl Seconds {
    fn new(t0: u64, total_ns: u64) -> Self {
        let last = total_ns.saturating_sub(1) / SECOND_NS;
        Self { t0, last, end_ns: t0 + total_ns, next: 0, from: 0, pending: None, clean: [-2, -1], high: -1 }
    }

    /// When to read the next second; far away for the last one, which is read when every
    /// worker has finished.
    fn wake_ns(&self) -> u64 {
        match self.next >= self.last {
            true => u64::MAX,
            false => self.t0 + (self.next + 1) * SECOND_NS + GRACE_NS,
        }
    }

    /// The second of time `t`.
    fn second_at(&self, t: u64) -> u64 {
        t.saturating_sub(self.t0) / SECOND_NS
    }

    /// The second to read now (the last one that has ended, before the run's last) and its slot.
    fn to_read(&self, now: u64) -> (u64, usize) {
        let second = self.second_at(now).saturating_sub(1).min(self.last.saturating_sub(1)).max(self.next);
        (second, (second & 1) as usize)
    }

    fn absorb(&mut self, read: Snapshot) {
        match &mut self.pending {
            Some(p) => absorb(p, read),
            None => self.pending = Some(read),
        }
    }

    /// Takes the read of `second`'s slot, finished at `read_end`; returns the tick it
    /// completes, if it completes one.
    fn read(&mut self, second: u64, read: Snapshot, read_end: u64) -> Option<Snapshot> {
        self.absorb(read);
        let slot = (second & 1) as usize;
        self.clean[slot] = second as i64;
        // A read that ended seconds later (the collector lost its CPU in the middle of it)
        // may hold completions up to the last second of this parity before its end.
        let at_end = self.second_at(read_end);
        let high = if at_end & 1 == second & 1 { at_end } else { at_end.saturating_sub(1) };
        self.high = self.high.max(second as i64).max(high as i64);
        self.next = second + 1;
        let h = self.high;
        if self.clean[(h & 1) as usize] < h || self.clean[((h + 1) & 1) as usize] < h - 1 {
            return None;
        }
        let upto = h as u64;
        let mut snap = self.pending.take()?;
        snap.second = u32::try_from(upto).unwrap_or(u32::MAX);
        snap.interval_ns = (upto + 1 - self.from.min(upto)) * SECOND_NS;
        self.from = upto + 1;
        self.next = self.next.max(self.from);
        Some(snap)
    }

    /// The final tick: what is pending and `rest` (both slots after every worker finished),
    /// up to `end` (the planned end, or sooner if the run stopped early).
    fn last(&mut self, rest: Snapshot, end: u64) -> Snapshot {
        self.absorb(rest);
        let mut snap = self.pending.take().expect("just absorbed");
        let start = self.t0 + self.from * SECOND_NS;
        let upto = self.second_at(end.saturating_sub(1)).clamp(self.from, self.last.max(self.from));
        snap.second = u32::try_from(upto).unwrap_or(u32::MAX);
        snap.interval_ns = end.min(self.end_ns).saturating_sub(start).max(1);
        snap
    }
}

/// One line of progress for the second `s` (`elapsed_ns` into a run of `total_ns`).
pub fn progress(s: &Snapshot, elapsed_ns: u64, total_ns: u64, plan: &Plan, steps: &[Step]) -> Progress {
    let secs = s.interval_ns as f64 / 1e9;
    let total = s.total();
    let mut lat = ioscope_metrics::Histogram::new();
    for o in s.ops.iter().filter(|o| !ioscope_metrics::is_sync_op(o.op)) {
        lat.merge(&o.data.latency_ns);
    }
    Progress {
        elapsed_s: elapsed_ns as f64 / 1e9,
        total_s: total_ns as f64 / 1e9,
        iops: total.ops as f64 / secs,
        bytes_per_sec: total.bytes as f64 / secs,
        errors: total.errors,
        p99_ns: lat.quantile(0.99),
        mean_ns: lat.mean().map(|m| m as u64),
        second: s.second,
        step: s.step,
        steps: steps.len() as u32,
        step_label: steps.get(s.step as usize).map(Step::label).unwrap_or_default(),
        warmup: s.warmup,
        threads: steps.get(s.step as usize).map_or(0, |st| plan.workloads.iter().map(|w| st.threads_of(w)).sum()),
        ops: s.ops.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(ops: u64) -> Snapshot {
        let mut data = OpInterval::empty();
        data.counts.ops = ops;
        let ops = vec![OpSeries { workload: String::new(), op: Op::Read, data }];
        Snapshot { ops, ..Snapshot::new(0, 0, "") }
    }

    fn at(t0: u64, s: f64) -> u64 {
        t0 + (s * SECOND_NS as f64) as u64
    }

    #[test]
    fn seconds_on_time_are_whole_and_a_starved_collector_writes_one_tick_of_the_real_gap() {
        let t0 = 7 * SECOND_NS;
        let mut s = Seconds::new(t0, 10 * SECOND_NS);
        // On time: each read of the second that just ended is that second, 1 s long.
        for n in 0..3u64 {
            assert_eq!(s.wake_ns(), t0 + (n + 1) * SECOND_NS + GRACE_NS);
            let (second, slot) = s.to_read(at(t0, n as f64 + 1.01));
            assert_eq!((second, slot), (n, (n % 2) as usize));
            let tick = s.read(second, read(100), at(t0, n as f64 + 1.02)).expect("a whole second");
            assert_eq!((tick.second, tick.interval_ns, tick.ops[0].data.counts.ops), (n as u32, SECOND_NS, 100));
        }
        // Woken at 7.5 s instead of 4.01 s: the slot of second 6 is clean, the other one is
        // being written (second 7): nothing is written until it is read after second 7.
        let (second, slot) = s.to_read(at(t0, 7.5));
        assert_eq!((second, slot), (6, 0));
        assert!(s.read(second, read(300), at(t0, 7.5)).is_none());
        assert_eq!(s.wake_ns(), t0 + 8 * SECOND_NS + GRACE_NS);
        let (second, slot) = s.to_read(at(t0, 8.01));
        assert_eq!((second, slot), (7, 1));
        let gap = s.read(second, read(200), at(t0, 8.01)).expect("the gap");
        assert_eq!((gap.second, gap.interval_ns, gap.ops[0].data.counts.ops), (7, 5 * SECOND_NS, 500));
        // Then whole seconds again, and the last one ends at the planned end.
        let tick = s.read(8, read(100), at(t0, 9.01)).unwrap();
        assert_eq!((tick.second, tick.interval_ns), (8, SECOND_NS));
        assert_eq!(s.wake_ns(), u64::MAX, "the last second is read when every worker has finished");
        let last = s.last(read(50), at(t0, 10.0003));
        assert_eq!((last.second, last.interval_ns, last.ops[0].data.counts.ops), (9, SECOND_NS, 50));
    }

    #[test]
    fn a_read_that_ends_seconds_later_waits_for_the_seconds_it_may_hold() {
        let t0 = 0;
        let mut s = Seconds::new(t0, 20 * SECOND_NS);
        s.read(0, read(1), at(t0, 1.01)).unwrap();
        // The read of second 1 started on time but ended in second 3: it may hold some of
        // second 3, so seconds 1..=3 are written together once second 3's slot is read.
        assert!(s.read(1, read(10), at(t0, 3.2)).is_none());
        let (second, slot) = s.to_read(at(t0, 3.21));
        assert_eq!((second, slot), (2, 0));
        assert!(s.read(second, read(10), at(t0, 3.22)).is_none());
        let gap = s.read(3, read(10), at(t0, 4.01)).unwrap();
        assert_eq!((gap.second, gap.interval_ns, gap.ops[0].data.counts.ops), (3, 3 * SECOND_NS, 30));
    }

    #[test]
    fn a_run_stopped_early_ends_with_its_real_last_interval() {
        let t0 = 0;
        let mut s = Seconds::new(t0, 2_500_000_000);
        s.read(0, read(1), at(t0, 1.01)).unwrap();
        let last = s.last(read(2), at(t0, 1.25));
        assert_eq!((last.second, last.interval_ns), (1, 250_000_000));
        // A planned 2.5 s run: its last second is half a second long however late the
        // workers finish.
        let mut s = Seconds::new(t0, 2_500_000_000);
        s.read(0, read(1), at(t0, 1.01)).unwrap();
        s.read(1, read(1), at(t0, 2.01)).unwrap();
        let last = s.last(read(2), at(t0, 2.7));
        assert_eq!((last.second, last.interval_ns), (2, SECOND_NS / 2));
    }
}
