//! A run: start the workers together, collect their recorders every second into a
//! snapshot, write each second to the results file as it finishes, and close the file
//! with the run's status.

use crate::clock::{now_ns, tighten_timer_slack, unix_ms};
use crate::iogen::IoGen;
use crate::worker::{FirstErrors, Schedule, Worker};
use ioscope_engine::null::NullEngine;
use ioscope_engine::posix::PosixEngine;
use ioscope_engine::uring::UringEngine;
use ioscope_engine::{error_name, Engine, IoBuffers, Op, OpenSpec, OP_KINDS};
use ioscope_metrics::{OpInterval, OpSeries, Snapshot, WorkerCounts, WorkerReader, WorkerRecorder};
use ioscope_store::{RunInfo, Status, Writer};
use ioscope_workload::{EngineKind, Plan, SyncMode};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
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
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("results file {path}: {source}")]
    Store { path: PathBuf, source: ioscope_store::StoreError },
}

/// The ops a plan can produce; each gets a series every second, zero or not.
pub fn ops_of(plan: &Plan) -> Vec<Op> {
    let mut ops = Vec::new();
    if plan.read_pct > 0 {
        ops.push(Op::Read);
    }
    if plan.read_pct < 100 {
        ops.push(Op::Write);
        match plan.sync {
            SyncMode::Fsync => ops.push(Op::Fsync),
            SyncMode::Fdatasync => ops.push(Op::Fdatasync),
            SyncMode::None | SyncMode::Dsync => {}
        }
    }
    ops
}

/// Runs the plan against `files` (already prepared) and writes the results file.
pub fn run(plan: &Plan, files: &[PathBuf], cfg: RunConfig<'_>) -> Result<Outcome, RunError> {
    let clock_source = crate::clock::init();
    let host = crate::host::hostname();
    let mut config = crate::host::describe((!plan.dir.as_os_str().is_empty()).then_some(plan.dir.as_path()));
    config["timer"] = serde_json::json!(clock_source);
    let info = RunInfo {
        ioscope_version: env!("CARGO_PKG_VERSION").to_string(),
        host: host.clone(),
        pid: std::process::id(),
        command_line: cfg.command_line.clone(),
        started_unix_ms: unix_ms(),
        planned_duration_ns: plan.duration.as_nanos() as u64,
        plan_json: serde_json::to_string(plan).expect("plan serializes"),
        workload_toml: cfg.workload_toml.clone(),
        workload_hash: cfg.workload_hash.clone(),
    };
    let store_err = |source| RunError::Store { path: cfg.out.clone(), source };
    let mut writer = Writer::create(&cfg.out, &info, &[(host.clone(), config.clone())]).map_err(store_err)?;

    let threads = plan.threads as usize;
    let recorders: Vec<WorkerRecorder> = (0..threads).map(|_| WorkerRecorder::new(OP_KINDS)).collect();
    let stop = AtomicBool::new(false);
    let ready = Barrier::new(threads + 1);
    let start_ns = AtomicU64::new(0);
    let finished = AtomicUsize::new(0);
    let open_error: Mutex<Option<String>> = Mutex::new(None);
    let engine_setup: Mutex<Option<String>> = Mutex::new(None);
    let ops = ops_of(plan);
    let spec = OpenSpec {
        files: files.to_vec(),
        write: plan.writes(),
        direct: plan.direct,
        dsync: plan.sync == SyncMode::Dsync,
        queue_depth: plan.iodepth,
    };

    let mut seconds_written = 0u32;
    let mut store_failure = None;
    let first_errors: Vec<FirstErrors> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|w| {
                let shared = Shared {
                    plan,
                    spec: &spec,
                    recorder: &recorders[w],
                    stop: &stop,
                    ready: &ready,
                    start_ns: &start_ns,
                    finished: &finished,
                    open_error: &open_error,
                    engine_setup: &engine_setup,
                };
                s.spawn(move || match plan.engine {
                    EngineKind::Posix => worker_main(PosixEngine::default(), w as u32, shared),
                    EngineKind::Uring => worker_main(UringEngine::new(plan.sqpoll), w as u32, shared),
                    EngineKind::Null => worker_main(NullEngine::default(), w as u32, shared),
                })
            })
            .collect();

        // Start everyone at the same instant, once all engines are open.
        let t0 = now_ns() + 2_000_000;
        start_ns.store(t0, Relaxed);
        ready.wait();
        if open_error.lock().unwrap().is_some() {
            stop.store(true, Relaxed);
        }
        if let Some(setup) = engine_setup.lock().unwrap().take() {
            let mut config = config.clone();
            config["engine"] = serde_json::json!(setup);
            if let Err(e) = writer.update_host(&host, &config) {
                store_failure = Some(e);
                stop.store(true, Relaxed);
            }
        }
        let deadline = t0 + plan.duration.as_nanos() as u64;
        let mut readers: Vec<WorkerReader> = (0..threads).map(|_| WorkerReader::new(OP_KINDS)).collect();
        let mut prev_tick = t0;
        let mut second = 0u32;
        loop {
            let tick = t0 + (second as u64 + 1) * SECOND_NS;
            // Sleep to the tick; at the end of the run, wait for workers to finish their last I/O.
            loop {
                if cfg.interrupt.load(Relaxed) {
                    stop.store(true, Relaxed);
                }
                let now = now_ns();
                let all_done = finished.load(Relaxed) == threads;
                if all_done || (now >= tick && tick < deadline) || now >= tick + SECOND_NS {
                    break;
                }
                let wait = if now < tick { (tick - now).min(20_000_000) } else { 1_000_000 };
                std::thread::sleep(std::time::Duration::from_nanos(wait));
            }
            let all_done = finished.load(Relaxed) == threads;
            let now = now_ns();
            let snap = collect(second, now.saturating_sub(prev_tick).max(1), &host, &ops, &recorders, &mut readers);
            prev_tick = now;
            let empty_tail = all_done && snap.ops.iter().all(|o| o.data.is_empty()) && second > 0;
            if !empty_tail {
                if let Err(e) = writer.write_second(&snap) {
                    store_failure = Some(e);
                    stop.store(true, Relaxed);
                    break;
                }
                seconds_written += 1;
                (cfg.on_second)(&progress(&snap, now - t0, plan));
            }
            if all_done {
                break;
            }
            second += 1;
        }
        stop.store(true, Relaxed);
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });

    if let Some(e) = store_failure {
        let _ = writer.finish(Status::Failed, Some(&e.to_string()), unix_ms());
        return Err(store_err(e));
    }
    let first_errors: Vec<String> = first_errors
        .iter()
        .flat_map(|f| f.0.iter())
        .fold(Vec::<(Op, i64)>::new(), |mut acc, e| {
            if !acc.iter().any(|(o, _)| *o == e.0) {
                acc.push(*e);
            }
            acc
        })
        .into_iter()
        .map(|(op, r)| format!("{}: {}", op.name(), error_name(r)))
        .collect();
    let (status, detail) = if let Some(e) = open_error.into_inner().unwrap() {
        (Status::Failed, Some(format!("could not open the target: {e}")))
    } else if cfg.interrupt.load(Relaxed) {
        (Status::Interrupted, Some("interrupted by signal".to_string()))
    } else {
        (Status::Completed, None)
    };
    writer.finish(status, detail.as_deref(), unix_ms()).map_err(store_err)?;
    Ok(Outcome { status, detail, first_errors, seconds_written })
}

/// What every worker thread shares with the run.
#[derive(Clone, Copy)]
struct Shared<'a> {
    plan: &'a Plan,
    spec: &'a OpenSpec,
    recorder: &'a WorkerRecorder,
    stop: &'a AtomicBool,
    ready: &'a Barrier,
    start_ns: &'a AtomicU64,
    finished: &'a AtomicUsize,
    open_error: &'a Mutex<Option<String>>,
    /// How worker 0's engine was set up, once open.
    engine_setup: &'a Mutex<Option<String>>,
}

fn worker_main<E: Engine>(mut engine: E, id: u32, sh: Shared<'_>) -> FirstErrors {
    tighten_timer_slack();
    let plan = sh.plan;
    let buffers = IoBuffers::new(plan.iodepth as usize, plan.max_block_bytes() as usize, 0x9e37_79b9 ^ id as u64);
    match engine.open(sh.spec, &buffers) {
        Ok(()) if id == 0 => *sh.engine_setup.lock().unwrap() = Some(engine.describe()),
        Ok(()) => {}
        Err(e) => {
            sh.open_error.lock().unwrap().get_or_insert(e.to_string());
        }
    }
    sh.ready.wait();
    let mut errors = FirstErrors::default();
    if !sh.stop.load(Relaxed) {
        let start = sh.start_ns.load(Relaxed);
        let interval_ns = plan.rate_iops.map(|r| (plan.threads as u64 * SECOND_NS) / r.max(1));
        let schedule = Schedule {
            start_ns: start,
            deadline_ns: start + plan.duration.as_nanos() as u64,
            interval_ns,
            phase_ns: interval_ns.map_or(0, |iv| iv * id as u64 / plan.threads as u64),
        };
        let gen = IoGen::new(plan, id, 0x5851_f42d_4c95_7f2d ^ ((id as u64 + 1) << 32));
        // Wait for the common start.
        crate::clock::wait_until(start, sh.stop);
        let mut w = Worker::new(engine, buffers, gen, sh.recorder, sh.stop, plan.sync, plan.iodepth);
        w.run(&schedule);
        w.engine.close();
        errors = w.errors;
    }
    sh.finished.fetch_add(1, Relaxed);
    errors
}

/// Reads every worker and builds the snapshot of one second.
fn collect(
    second: u32,
    interval_ns: u64,
    host: &str,
    ops: &[Op],
    recorders: &[WorkerRecorder],
    readers: &mut [WorkerReader],
) -> Snapshot {
    let mut merged: Vec<OpInterval> = ops.iter().map(|_| OpInterval::empty()).collect();
    let mut workers = Vec::with_capacity(recorders.len() * ops.len());
    for (w, (rec, reader)) in recorders.iter().zip(readers.iter_mut()).enumerate() {
        let per_op = reader.take(rec);
        for (m, op) in merged.iter_mut().zip(ops) {
            let d = &per_op[*op as usize];
            m.merge(d);
            workers.push(WorkerCounts { worker: w as u32, op: op.name().to_string(), counts: d.counts });
        }
    }
    Snapshot {
        second,
        interval_ns,
        host: host.to_string(),
        ops: ops.iter().zip(merged).map(|(op, data)| OpSeries { op: op.name().to_string(), data }).collect(),
        workers,
    }
}

fn progress(s: &Snapshot, elapsed_ns: u64, plan: &Plan) -> Progress {
    let secs = s.interval_ns as f64 / 1e9;
    let total = s.total();
    let mut lat = ioscope_metrics::Histogram::new();
    for o in s.ops.iter().filter(|o| !ioscope_metrics::is_sync_op(&o.op)) {
        lat.merge(&o.data.latency_ns);
    }
    Progress {
        elapsed_s: elapsed_ns as f64 / 1e9,
        total_s: plan.duration.as_secs_f64(),
        iops: total.ops as f64 / secs,
        bytes_per_sec: total.bytes as f64 / secs,
        errors: total.errors,
        p99_ns: lat.quantile(0.99),
    }
}
