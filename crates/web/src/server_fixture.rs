//! A results file of a run with target series, written with the real store writer, for
//! the tests of the server worksheet (crates/web tests, ui-tests/fixtures/generated and
//! ui-tests/browser/server.test.mjs, through `examples/server_run.rs`): one local client
//! reads and writes an NFS export for 30 seconds while the probe of host "server" records
//! its CPU, memory, eth0, the loop3 device the export lives on (diskstats and eBPF block
//! histograms), and the CPU and system calls of ganesha.nfsd.
//!
//! The story the charts tell: from second 20 the server's page cache is full and writes
//! go to the disk; loop3 runs at 100% busy, its block latency and queue grow, ganesha
//! waits in fsync, and the client's write latency follows. The numbers are fixed (a small
//! deterministic wobble per second), so the same file comes out every time.

use ioscope_metrics::stat::{Dim, StatId};
use ioscope_metrics::{Counts, Histogram, Op, OpInterval, OpSeries, Snapshot, TargetSecond, TargetSeries, TargetValue};
use ioscope_store::{RunInfo, Status, Writer};
use std::path::Path;

/// The client host (the local run's).
pub const CLIENT: &str = "loadgen";
/// The probed server.
pub const SERVER: &str = "server";
/// The server's block device under the export.
pub const DISK: &str = "loop3";
/// The NFS server process.
pub const PROCESS: &str = "ganesha.nfsd";
/// Seconds written.
pub const SECONDS: u32 = 30;
/// The first second of the disk-bound phase.
pub const SATURATED_FROM: u32 = 20;
const CPUS: [&str; 2] = ["cpu0", "cpu1"];
const GIB: u64 = 1 << 30;

fn wobble(second: u32, salt: u64) -> u64 {
    (u64::from(second) * 7 + salt * 5) % 13
}

fn saturated(second: u32) -> bool {
    second >= SATURATED_FROM
}

/// `n` values from 0.7x `base` up to 4x in 40 steps: a peak just above `base` and a tail
/// of a few slow ones (the band a heat map shows, not ten thin lines).
fn spread(n: u64, base: u64) -> Histogram {
    const LEVELS: usize = 40;
    let weight = |i: usize| if i < 6 { (i + 1) as f64 } else { 6.0 * (-((i - 6) as f64) / 7.0).exp() };
    let total: f64 = (0..LEVELS).map(weight).sum();
    let counts: Vec<u64> = (0..LEVELS).map(|i| (n as f64 * weight(i) / total) as u64).collect();
    // What rounding down left goes to the peak, not to the slowest level.
    let peak_extra = n.saturating_sub(counts.iter().sum());
    let mut h = Histogram::new();
    for (i, k) in counts.into_iter().enumerate() {
        let v = base as f64 * 0.7 * (4.0f64 / 0.7).powf(i as f64 / (LEVELS - 1) as f64);
        h.record_n(v as u64, if i == 5 { k + peak_extra } else { k });
    }
    h
}

/// `n` values evenly over [0, span) in ten steps (offsets).
fn across(n: u64, span: u64) -> Histogram {
    let mut h = Histogram::new();
    for i in 0..10 {
        h.record_n(span / 10 * i, n / 10 + u64::from(i < n % 10));
    }
    h
}

/// The client's reads and writes in second `second`.
fn client_ops(second: u32) -> (u64, u64) {
    let w = wobble(second, 1);
    if saturated(second) {
        (1_600 + w * 10, 400 + w * 3)
    } else {
        (2_400 + w * 20, 900 + w * 8)
    }
}

fn client_interval(n: u64, base_ns: u64, size: u64) -> OpInterval {
    let mut sz = Histogram::new();
    sz.record_n(size, n);
    OpInterval {
        counts: Counts { ops: n, bytes: n * size, errors: 0 },
        errors_by_kind: Vec::new(),
        skipped: 0,
        latency_ns: spread(n, base_ns),
        service_ns: spread(n, base_ns / 2),
        size_bytes: sz,
        offset_bytes: across(n, 256 << 20),
    }
}

/// One second of the client.
pub fn client_second(second: u32) -> Snapshot {
    let (reads, writes) = client_ops(second);
    let (read_ns, write_ns) = if saturated(second) { (600_000, 4_000_000) } else { (250_000, 600_000) };
    Snapshot {
        second,
        interval_ns: 1_000_000_000,
        step: 0,
        warmup: false,
        host: CLIENT.to_string(),
        ops: vec![
            OpSeries { workload: "nfs".into(), op: Op::Read, data: client_interval(reads, read_ns, 4096) },
            OpSeries { workload: "nfs".into(), op: Op::Write, data: client_interval(writes, write_ns, 65536) },
        ],
        workers: Vec::new(),
        files: Vec::new(),
        worker_dists: Vec::new(),
        file_dists: Vec::new(),
        not_broken_down: 0,
        worker_cpu: Vec::new(),
    }
}

fn count(stat: StatId, labels: &[(Dim, &str)], n: u64) -> TargetSeries {
    TargetSeries::new(stat, labels, TargetValue::Count(n))
}

/// One second of the server's probe.
pub fn server_second(second: u32) -> TargetSecond {
    let (reads, writes) = client_ops(second);
    let sat = saturated(second);
    let w = wobble(second, 2);
    let mut series = Vec::new();
    // CPU: each CPU's modes add up to the second; iowait grows when the disk is the limit.
    for (i, cpu) in CPUS.iter().enumerate() {
        let user = 120_000_000 + w * 2_000_000 + i as u64 * 10_000_000;
        let system = if sat { 180_000_000 } else { 260_000_000 } + w * 1_000_000;
        let iowait = if sat { 450_000_000 } else { 20_000_000 };
        let softirq = 40_000_000;
        let idle = 1_000_000_000 - user - system - iowait - softirq;
        for (mode, ns) in [("user", user), ("system", system), ("iowait", iowait), ("softirq", softirq), ("idle", idle)]
        {
            series.push(count(StatId::CpuTime, &[(Dim::Cpu, cpu), (Dim::Mode, mode)], ns));
        }
    }
    // ganesha.nfsd: about half a CPU, less while it waits on the disk.
    let (p_user, p_system) = if sat { (90_000_000, 210_000_000) } else { (140_000_000, 330_000_000) };
    for (mode, ns) in [("user", p_user + w * 1_000_000), ("system", p_system + w * 2_000_000)] {
        series.push(count(StatId::ProcessCpu, &[(Dim::Process, PROCESS), (Dim::Mode, mode)], ns));
    }
    // Memory: the page cache fills up to 3 GiB by second 20 and stays full.
    let cache = GIB + 2 * GIB * u64::from(second.min(SATURATED_FROM)) / u64::from(SATURATED_FROM);
    let dirty = if sat { 600 << 20 } else { (64 << 20) + u64::from(second) * (4 << 20) };
    series.push(TargetSeries::new(StatId::MemPageCache, &[], TargetValue::Gauge(cache)));
    series.push(TargetSeries::new(StatId::MemDirty, &[], TargetValue::Gauge(dirty)));
    series.push(TargetSeries::new(StatId::MemAvailable, &[], TargetValue::Gauge(4 * GIB - cache)));
    // eth0: what the client sent (its writes) and received (its reads), plus headers.
    let nic = [(Dim::Nic, "eth0")];
    let rx = writes * 65536 + reads * 200;
    let tx = reads * 4096 + writes * 200;
    series.push(count(StatId::NetRxBytes, &nic, rx));
    series.push(count(StatId::NetTxBytes, &nic, tx));
    series.push(count(StatId::NetRxPackets, &nic, rx / 1448 + 1));
    series.push(count(StatId::NetTxPackets, &nic, tx / 1448 + 1));
    series.push(count(StatId::NetDrops, &nic, u64::from(sat && second % 3 == 0)));
    // loop3: reads that miss the page cache, writes written back in 128 KiB requests.
    let disk_reads = if sat { reads / 2 } else { reads / 10 } + w;
    let disk_writes = if sat { 900 } else { 300 } + w * 5;
    let (read_lat, write_lat) = if sat { (1_500_000, 6_000_000) } else { (150_000, 400_000) };
    for (op, n, size, lat) in [("read", disk_reads, 4096u64, read_lat), ("write", disk_writes, 131_072, write_lat)] {
        let labels = [(Dim::Disk, DISK), (Dim::Op, op)];
        series.push(count(StatId::DiskOps, &labels, n));
        series.push(count(StatId::DiskBytes, &labels, n * size));
        series.push(TargetSeries::new(StatId::BlockLatency, &labels, TargetValue::Dist(spread(n, lat))));
        let mut sz = Histogram::new();
        sz.record_n(size, n);
        series.push(TargetSeries::new(StatId::BlockSize, &labels, TargetValue::Dist(sz)));
        series.push(TargetSeries::new(StatId::BlockOffset, &labels, TargetValue::Dist(across(n, 8 * GIB))));
    }
    series.push(count(StatId::DiskOps, &[(Dim::Disk, DISK), (Dim::Op, "flush")], if sat { 20 } else { 5 }));
    let disk = [(Dim::Disk, DISK)];
    series.push(count(StatId::DiskBusy, &disk, if sat { 1_000_000_000 } else { 350_000_000 + w * 10_000_000 }));
    series.push(count(StatId::DiskQueueTime, &disk, if sat { 24_000_000_000 } else { 600_000_000 + w * 20_000_000 }));
    // ganesha's system calls: a pwrite64 per client write, an fsync per 16 of them.
    let (pwrite_ns, fsync_ns) = if sat { (300_000, 25_000_000) } else { (40_000, 2_000_000) };
    for (syscall, n, base) in [("pwrite64", writes, pwrite_ns), ("fsync", writes / 16 + 1, fsync_ns)] {
        let labels = [(Dim::Process, PROCESS), (Dim::Syscall, syscall)];
        series.push(TargetSeries::new(StatId::SyscallLatency, &labels, TargetValue::Dist(spread(n, base))));
    }
    TargetSecond { host: SERVER.to_string(), second: u64::from(second), interval_ns: 1_000_000_000, series }
}

/// Writes the results file at `path`.
pub fn write_server_results(path: &Path) -> Result<(), ioscope_store::StoreError> {
    let info = RunInfo {
        ioscope_version: "test".into(),
        host: CLIENT.into(),
        pid: 1,
        command_line: "ioscope run nfs.toml --probe ssh://server".into(),
        started_unix_ms: 1_700_000_000_000,
        planned_duration_ns: u64::from(SECONDS) * 1_000_000_000,
        plan_json: "{}".into(),
        workload_toml: String::new(),
        workload_hash: "server".into(),
    };
    let config = serde_json::json!({ "cpus": 4, "memory_bytes": 8u64 << 30, "kernel": "6.18.0" });
    let mut w = Writer::create(path, &info, &[(CLIENT.to_string(), config)])?;
    for second in 0..SECONDS {
        w.write_second(&client_second(second))?;
        w.write_target(&server_second(second))?;
    }
    w.finish(Status::Completed, None, 1_700_000_000_000 + i64::from(SECONDS) * 1000)?;
    Ok(())
}
