//! A results file of four hosts written with the real store writer, for the tests of the
//! host breakdown (crates/web tests and ui-tests/browser/hosts.test.mjs, through
//! `examples/hosts_run.rs`): hosts h1..h4 read and write four files each for 20 seconds
//! with two workers; h3 is the client behind the bad cable: a fifth of the others'
//! throughput at five times their latency. Every agent completed; h2's clock is known
//! only to ±2.5 ms. The numbers are fixed (a small deterministic wobble per second), so
//! the same file comes out every time.

use ioscope_metrics::{
    Counts, FileCounts, FileDists, Histogram, Op, OpInterval, OpSeries, Snapshot, WorkerCounts, WorkerDists,
};
use ioscope_store::{RunInfo, Status, Writer};
use std::path::Path;

/// The hosts, in order.
pub const HOSTS: [&str; 4] = ["h1", "h2", "h3", "h4"];
/// The slow host.
pub const SLOW: &str = "h3";
/// Seconds written per host.
pub const SECONDS: u32 = 20;
const FILES: [&str; 4] = ["f0", "f1", "f2", "f3"];

/// `n` I/Os of `size` bytes with latencies from `base_ns` up to 3x (service time: half).
fn interval(n: u64, base_ns: u64, size: u64, offset_base: u64) -> OpInterval {
    let (mut lat, mut svc, mut sz, mut off) = (Histogram::new(), Histogram::new(), Histogram::new(), Histogram::new());
    // Ten latency levels, most I/Os at the low end: a tail of a few slow ones.
    const SHARES: [u64; 10] = [30, 20, 15, 10, 8, 6, 5, 3, 2, 1];
    let mut left = n;
    for (i, share) in SHARES.iter().enumerate() {
        let k = if i == SHARES.len() - 1 { left } else { (n * share / 100).min(left) };
        left -= k;
        let v = base_ns + base_ns * 2 * i as u64 / 9;
        lat.record_n(v, k);
        svc.record_n(v / 2, k);
        off.record_n(offset_base + i as u64 * (1 << 20), k);
    }
    sz.record_n(size, n);
    OpInterval {
        counts: Counts { ops: n, bytes: n * size, errors: 0 },
        errors_by_kind: Vec::new(),
        skipped: 0,
        latency_ns: lat,
        service_ns: svc,
        size_bytes: sz,
        offset_bytes: off,
    }
}

/// One second of host `h` (index into [`HOSTS`]).
pub fn second_of(h: usize, second: u32) -> Snapshot {
    let slow = HOSTS[h] == SLOW;
    // A deterministic wobble of up to ±6% per second and host.
    let wobble = (u64::from(second) * 7 + h as u64 * 5) % 13;
    let reads_per_file = if slow { 40 } else { 200 } + wobble * if slow { 1 } else { 2 };
    let writes_per_file = reads_per_file / 4;
    let (read_ns, write_ns) = if slow { (1_000_000, 2_500_000) } else { (200_000, 500_000) };
    let mut files = Vec::new();
    let mut file_dists = Vec::new();
    let mut workers: Vec<WorkerCounts> = Vec::new();
    let mut worker_dists: Vec<WorkerDists> = Vec::new();
    let mut ops: Vec<OpSeries> = Vec::new();
    for (op, per_file, base_ns, size) in
        [(Op::Read, reads_per_file, read_ns, 4096), (Op::Write, writes_per_file, write_ns, 65536)]
    {
        let mut whole = OpInterval::empty();
        for (i, f) in FILES.iter().enumerate() {
            // Later files get fewer I/Os: f0 is the busiest.
            let n = per_file * (4 - i as u64) / 4 + 1;
            let d = interval(n, base_ns + i as u64 * 10_000, size, i as u64 * (64 << 20));
            files.push(FileCounts { file: f.to_string(), op, counts: d.counts });
            // Worker 0 does f0 and f1, worker 1 f2 and f3.
            let worker = (i / 2) as u32;
            match worker_dists.iter_mut().find(|w| w.worker == Some(worker) && w.op == op) {
                Some(w) => w.data.merge(&d),
                None => worker_dists.push(WorkerDists { worker: Some(worker), op, data: d.clone() }),
            }
            whole.merge(&d);
            file_dists.push(FileDists { file: f.to_string(), op, data: d });
        }
        for w in worker_dists.iter().filter(|w| w.op == op) {
            workers.push(WorkerCounts { worker: w.worker.unwrap_or(0), op, counts: w.data.counts });
        }
        ops.push(OpSeries { workload: "mixed".into(), op, data: whole });
    }
    Snapshot {
        second,
        interval_ns: 1_000_000_000,
        step: 0,
        warmup: false,
        host: HOSTS[h].to_string(),
        ops,
        workers,
        files,
        worker_dists,
        file_dists,
        not_broken_down: 0,
        worker_cpu: Vec::new(),
    }
}

/// The configuration of host `h`, with the `agent` object the coordinator stores.
fn config(h: usize) -> serde_json::Value {
    let uncertainty_ns: u64 = if HOSTS[h] == "h2" { 2_500_000 } else { 40_000 + h as u64 * 5_000 };
    serde_json::json!({
        "cpus": 2,
        "memory_bytes": 4u64 << 30,
        "kernel": "6.18.0",
        "agent": {
            "index": h,
            "address": format!("10.99.0.{}", 11 + h),
            "transport": "ssh",
            "status": "completed",
            "detail": null,
            "clock_offset_ns": (h as i64 - 2) * 1_234_567,
            "clock_uncertainty_ns": uncertainty_ns,
            "rtt_ns": uncertainty_ns * 2,
            "lost_at_second": null,
            "plan_json": "{}",
        },
    })
}

/// Writes the four-host results file at `path`.
pub fn write_hosts_results(path: &Path) -> Result<(), ioscope_store::StoreError> {
    let info = RunInfo {
        ioscope_version: "test".into(),
        host: "coordinator".into(),
        pid: 1,
        command_line: "ioscope run mixed.toml --hosts h1,h2,h3,h4".into(),
        started_unix_ms: 1_700_000_000_000,
        planned_duration_ns: u64::from(SECONDS) * 1_000_000_000,
        plan_json: "{}".into(),
        workload_toml: String::new(),
        workload_hash: "hosts4".into(),
    };
    let hosts: Vec<(String, serde_json::Value)> = (0..HOSTS.len()).map(|h| (HOSTS[h].to_string(), config(h))).collect();
    let mut w = Writer::create(path, &info, &hosts)?;
    for second in 0..SECONDS {
        for h in 0..HOSTS.len() {
            w.write_second(&second_of(h, second))?;
        }
    }
    w.finish(Status::Completed, None, 1_700_000_000_000 + i64::from(SECONDS) * 1000)?;
    Ok(())
}
