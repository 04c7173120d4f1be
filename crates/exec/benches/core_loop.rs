//! The worker's core loop against the null engine, in ns per I/O: generating the I/O,
//! two clock reads, the engine call and the four histogram updates, with no device
//! behind it. This is the ceiling of any run and the overhead added to every real I/O.
//!
//! One criterion iteration is one I/O. A run cannot be stopped after exactly `iters`
//! I/Os, so each sample runs the worker for a deadline proportional to `iters` (about
//! `iters` I/Os at the expected speed, at least 1 ms), counts what it did from the
//! recorder with `WorkerReader::take`, and returns `elapsed * iters / ops`: the sample's
//! measured time per I/O times `iters`, which is what criterion divides back out. Only
//! `Worker::run` is timed; building the worker is not.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ioscope_engine::null::NullEngine;
use ioscope_engine::{Engine, IoBuffers, OpenSpec, OP_KINDS};
use ioscope_exec::clock::{self, now_ns};
use ioscope_exec::iogen::IoGen;
use ioscope_exec::worker::{Schedule, Worker};
use ioscope_metrics::{WorkerReader, WorkerRecorder};
use ioscope_workload::{build_plan, render_diagnostics, Plan, SourceFile};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Expected cost of one I/O, only used to size each sample's run.
const EXPECTED_NS_PER_IO: u64 = 30;
const MIN_RUN_NS: u64 = 1_000_000;

fn plan(toml: &str) -> Plan {
    let src = SourceFile { path: "bench.toml".into(), text: toml.to_string() };
    build_plan(Some(&src), &Default::default()).unwrap_or_else(|d| panic!("{}", render_diagnostics(&d)))
}

/// Runs one worker for about `iters` I/Os and returns the time scaled to exactly `iters` I/Os.
fn run(p: &Plan, rec: &WorkerRecorder, reader: &mut WorkerReader, iters: u64) -> Duration {
    let stop = AtomicBool::new(false);
    let buffers = IoBuffers::new(p.iodepth as usize, p.max_block_bytes() as usize, 1);
    let mut engine = NullEngine::default();
    engine.open(&OpenSpec { queue_depth: p.iodepth, ..Default::default() }, &buffers).unwrap();
    let mut w = Worker::new(engine, buffers, IoGen::for_plan(p, 42), rec, &stop, p.sync, p.iodepth);
    let run_ns = iters.saturating_mul(EXPECTED_NS_PER_IO).max(MIN_RUN_NS);

    let t = Instant::now();
    let start_ns = now_ns();
    w.run(&Schedule {
        start_ns,
        deadline_ns: start_ns + run_ns,
        interval_ns: None,
        phase_ns: 0,
        arrivals: ioscope_exec::access::Arrivals::uniform(),
    });
    let elapsed = t.elapsed();

    let ops: u64 = reader.take(rec).iter().map(|op| op.counts.ops).sum();
    assert!(ops > 0, "the worker did no I/O in {run_ns} ns");
    Duration::from_nanos((elapsed.as_nanos() * iters as u128 / ops as u128) as u64)
}

fn core_loop(c: &mut Criterion) {
    clock::init();
    let cases = [
        ("randread_4k/qd1", "engine = 'null'\nrw = 'randread'"),
        ("randrw_4k70_64k30/qd1", "engine = 'null'\nrw = 'randrw'\nbs = '4k:70,64k:30'"),
        ("randread_4k/qd32", "engine = 'null'\nrw = 'randread'\niodepth = 32"),
    ];
    let mut g = c.benchmark_group("null_engine");
    g.throughput(Throughput::Elements(1));
    for (name, toml) in cases {
        let p = plan(toml);
        let rec = WorkerRecorder::new(OP_KINDS);
        let mut reader = WorkerReader::new(OP_KINDS);
        g.bench_function(name, |b| b.iter_custom(|iters| run(&p, &rec, &mut reader, iters)));
    }
    g.finish();
}

criterion_group!(benches, core_loop);
criterion_main!(benches);
