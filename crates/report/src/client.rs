//! Verdicts on the client side of a run: reads answered by the client's page cache
//! (`client-cache`), ioscope's own threads out of CPU (`client-bound`), and a worker
//! thread or file far from its peers (`imbalance`). Each is worked out from what the
//! results file stores: latency histograms, the worker threads' CPU time
//! (`worker_cpu`), per-worker and per-file counters.

use crate::format;
use crate::hosts::HostSeconds;
use crate::peers::{outliers, Peers};
use crate::stats::{round2, DEVICE_BYTES_PER_NS, READ_FLOOR_NS};
use crate::verdict::{Verdict, VerdictId};
use crate::Summary;
use ioscope_metrics::histogram::bucket_range;
use ioscope_metrics::{Histogram, Op};
use ioscope_store::Results;
use ioscope_workload::plan::{EngineKind, FileSelect, Plan};
use std::collections::BTreeMap;

/// `client-cache` when at least this share of the reads completed below the floor.
pub const CACHED_SHARE: f64 = 0.5;
/// `client-bound` when the busiest worker thread was on a CPU or waiting for one at least
/// this share of the time (it hardly ever waited for its storage), or the worker threads
/// together kept this share of the host's CPUs busy.
pub const BUSY_SHARE: f64 = 0.9;
/// Runs shorter than this (measured seconds with CPU figures) are not judged client-bound.
const BUSY_MIN_SECONDS: u64 = 1;

/// Reads that completed faster than any device could answer them: buffered reads of a
/// local engine, answered from the client's page cache.
pub(crate) fn client_cache(s: &Summary, r: &Results, p: &Plan) -> Option<Verdict> {
    if p.direct || !matches!(p.engine, EngineKind::Posix | EngineKind::Uring) {
        return None;
    }
    let mut latency = Histogram::new();
    let mut size = Histogram::new();
    for o in r.seconds.iter().filter(|x| !x.warmup).flat_map(|x| &x.ops).filter(|o| o.op == Op::Read) {
        latency.merge(&o.data.latency_ns);
        size.merge(&o.data.size_bytes);
    }
    let reads = latency.count();
    if reads == 0 {
        return None;
    }
    let mean_size = size.mean().unwrap_or(0.0) as u64;
    let floor = READ_FLOOR_NS.saturating_add(mean_size / DEVICE_BYTES_PER_NS);
    // Whole buckets below the floor only: never more than truly were.
    let below: u64 = latency.nonzero().filter(|(i, _)| bucket_range(*i).1 < floor).map(|(_, n)| n).sum();
    let share = below as f64 / reads as f64;
    if share < CACHED_SHARE {
        return None;
    }
    let p50 = latency.quantile(0.5).unwrap_or(0);
    let read = s.ops.get("read");
    Some(
        Verdict::new(
            VerdictId::ClientCache,
            format!(
                "{} of the reads completed in less than {}, faster than any device or network answers a read of \
                 {} (read p50 {}): they were served from this client's page cache (buffered I/O), so these are \
                 memory, not storage, numbers; use --direct or a working set several times the client's memory",
                format::pct(share),
                format::ns(floor),
                format::bytes(mean_size),
                format::ns(p50)
            ),
        )
        .with("read_latency_p50_ns", p50)
        .with("floor_ns", floor)
        .with("reads_below_floor_pct", round2(share * 100.0))
        .with("reads", reads)
        .with("read_size_mean_bytes", mean_size)
        .with("read_bytes_per_sec", round2(read.map_or(0.0, |o| o.bytes_per_sec)))
        .with("direct", false),
    )
}

/// Per host: each worker thread's time on a CPU and waiting for one, over the measured
/// seconds that carry CPU figures.
struct HostCpu {
    /// (on a CPU, waiting for one) ns per worker.
    per_worker: BTreeMap<u32, (u64, u64)>,
    /// Measured ns of the seconds with CPU figures.
    measured_ns: u64,
    seconds: u64,
}

/// ioscope's worker threads near 100% of their CPUs: the client, not the target, set
/// the pace.
pub(crate) fn client_bound(s: &Summary, r: &Results, p: Option<&Plan>) -> Vec<Verdict> {
    let mut hosts: BTreeMap<&str, HostCpu> = BTreeMap::new();
    for x in r.seconds.iter().filter(|x| !x.warmup && !x.worker_cpu.is_empty()) {
        let h = hosts.entry(x.host.as_str()).or_insert_with(|| HostCpu {
            per_worker: BTreeMap::new(),
            measured_ns: 0,
            seconds: 0,
        });
        h.measured_ns = h.measured_ns.saturating_add(x.interval_ns);
        h.seconds += 1;
        for w in &x.worker_cpu {
            let e = h.per_worker.entry(w.worker).or_default();
            *e = (e.0.saturating_add(w.cpu_ns), e.1.saturating_add(w.wait_ns));
        }
    }
    let mut out = Vec::new();
    for (host, h) in hosts {
        if h.seconds < BUSY_MIN_SECONDS || h.measured_ns == 0 {
            continue;
        }
        let busy = |(cpu, wait): (u64, u64)| cpu.saturating_add(wait);
        let Some((&worker, &(on_cpu_ns, wait_ns))) =
            h.per_worker.iter().max_by_key(|(w, t)| (busy(**t), std::cmp::Reverse(**w)))
        else {
            continue;
        };
        let threads = h.per_worker.len() as u64;
        let all_ns: u64 = h.per_worker.values().fold(0, |a, b| a.saturating_add(b.0));
        let cpus = s.system.get(host).and_then(|c| c["cpus"].as_u64()).filter(|c| *c > 0);
        let busiest = busy((on_cpu_ns, wait_ns)) as f64 / h.measured_ns as f64;
        let on_cpu = on_cpu_ns as f64 / h.measured_ns as f64;
        // The workers' share of every CPU of the host (more threads than CPUs).
        let of_host = cpus.map(|c| all_ns as f64 / (h.measured_ns as f64 * c as f64));
        let thread_bound = busiest >= BUSY_SHARE;
        let host_bound = of_host.is_some_and(|x| x >= BUSY_SHARE);
        if !thread_bound && !host_bound {
            continue;
        }
        let who = if s.system.len() > 1 { format!(" on host {host}") } else { String::new() };
        let what = if thread_bound {
            format!(
                "worker thread {worker}{who} was on a CPU or waiting for one {} of the time ({} on a CPU), \
                 hardly ever waiting for its storage",
                format::pct(busiest.min(1.0)),
                format::pct(on_cpu.min(1.0))
            )
        } else {
            format!(
                "ioscope's {threads} worker threads{who} kept its {} CPUs {} busy",
                cpus.unwrap_or(0),
                format::pct(of_host.unwrap_or(0.0).min(1.0))
            )
        };
        let asked = p.and_then(|p| p.rate_iops);
        let attempted = s.total.ops.saturating_add(s.total.errors) as f64 / s.duration_s.max(1e-9);
        let missed = asked.filter(|a| s.duration_s > 0.0 && attempted < crate::schedule::RATE_SHORTFALL * *a as f64);
        let rate = match missed {
            Some(a) => format!(
                ", and the asked rate of {} IOPS was not reached ({} IOPS) because ioscope could not issue faster",
                format::int(a),
                format::iops(s.total.iops)
            ),
            None => String::new(),
        };
        let mut v = Verdict::new(
            VerdictId::ClientBound,
            format!(
                "{what}{rate}: the client, not the storage, may have set these numbers (more threads, a queueing \
                 engine, or more client hosts would tell)"
            ),
        )
        .with("host", host)
        .with("busiest_worker", worker)
        .with("busiest_thread_busy_pct", round2(busiest * 100.0))
        .with("busiest_thread_on_cpu_pct", round2(on_cpu * 100.0))
        .with("busiest_thread_waiting_for_cpu_pct", round2(wait_ns as f64 / h.measured_ns as f64 * 100.0))
        .with("threads", threads)
        .with("seconds", h.seconds)
        .with("achieved_iops", round2(s.total.iops));
        if let Some(c) = cpus {
            v = v.with("cpus", c);
        }
        if let Some(x) = of_host {
            v = v.with("workers_cpu_of_host_pct", round2(x * 100.0));
        }
        if let Some(a) = asked {
            v = v.with("asked_iops", a);
        }
        out.push(v);
    }
    out
}

const WORKERS: Peers = Peers {
    one: "worker thread",
    many: "worker threads",
    key: "worker",
    advice: "threads of one workload do the same work: one starved of CPU (more threads than CPUs, another \
             process), or waiting on a slower file, looks like this",
};

const FILES: Peers = Peers {
    one: "file",
    many: "files",
    key: "file",
    advice: "with random file selection every file gets the same share: a file on a slower device, or \
             fragmented, looks like this",
};

/// A worker thread, or a file, far from its peers in throughput: for runs of one
/// workload and one step (threads of different workloads or steps differ by design).
pub(crate) fn imbalance(s: &Summary, r: &Results, p: &Plan) -> Vec<Verdict> {
    if r.steps.len() > 1 || crate::several_workloads(r) || p.workloads.iter().any(|w| w.pattern.is_some()) {
        return Vec::new();
    }
    let bytes = s.total.bytes > 0;
    let amount = |op: Op, c: &ioscope_metrics::Counts| match (ioscope_metrics::is_sync_op(op), bytes) {
        (true, _) => 0,
        (false, true) => c.bytes,
        (false, false) => c.ops,
    };
    let mut out = Vec::new();
    let mut host_names: Vec<&str> = r.seconds.iter().map(|x| x.host.as_str()).collect();
    host_names.sort_unstable();
    host_names.dedup();
    for host in host_names {
        let measured: Vec<_> = r.seconds.iter().filter(|x| x.host == host && !x.warmup && x.interval_ns > 0).collect();
        // Workers: every worker has a row each second.
        let mut workers: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
        let mut files: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for (i, x) in measured.iter().enumerate() {
            let secs = x.interval_ns as f64 / 1e9;
            let mut per_worker: BTreeMap<u32, u64> = BTreeMap::new();
            for w in &x.workers {
                *per_worker.entry(w.worker).or_default() += amount(w.op, &w.counts);
            }
            for (w, n) in per_worker {
                let v = workers.entry(w).or_default();
                v.resize(i, 0.0);
                v.push(n as f64 / secs);
            }
            let mut per_file: BTreeMap<&str, u64> = BTreeMap::new();
            for f in x.files.iter().filter(|f| f.file != ioscope_metrics::OTHER) {
                *per_file.entry(f.file.as_str()).or_default() += amount(f.op, &f.counts);
            }
            for (f, n) in per_file {
                let v = files.entry(f).or_default();
                v.resize(i, 0.0);
                v.push(n as f64 / secs);
            }
        }
        let rows = |m: Vec<(String, Vec<f64>)>| -> Vec<HostSeconds> {
            m.into_iter()
                .map(|(name, mut v)| {
                    v.resize(measured.len(), 0.0);
                    HostSeconds { host: name, per_thread: v, latency: Histogram::new() }
                })
                .collect()
        };
        let several = s.system.len() > 1 || s.hosts.len() > 1;
        let on = |mut v: Verdict| {
            if several {
                v.message = format!("host {host}: {}", v.message);
                v = v.with("host", host);
            }
            v
        };
        let w = rows(workers.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        out.extend(outliers(&WORKERS, &w, bytes, false).into_iter().map(on));
        let random = p.workloads.iter().all(|w| w.fileselect == FileSelect::Random);
        if p.dataset.is_none() && random {
            let f = rows(files.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
            out.extend(outliers(&FILES, &f, bytes, false).into_iter().map(on));
        }
    }
    out
}

/// The working set against a probed target's memory: reads of a working set that fits in
/// the server's memory can come from its page cache whatever the client does (O_DIRECT
/// bypasses only the client's cache). Targets that also ran load are judged by the
/// client-memory verdict instead.
pub(crate) fn target_memory(s: &Summary, r: &Results, p: &Plan) -> Vec<Verdict> {
    let reads = s.ops.get("read").map_or(0, |o| o.ops);
    if reads == 0 || p.dataset.is_some() {
        return Vec::new();
    }
    let load: std::collections::BTreeSet<&str> =
        r.seconds.iter().filter(|x| !x.ops.is_empty()).map(|x| x.host.as_str()).collect();
    // Every host of a many-host run has its own working set on the target (docs/hosts.md):
    // the server holds all of them.
    let hosts = p.hosts.len().max(1) as u64;
    let working_set = p.size_bytes.saturating_mul(hosts);
    let of_hosts =
        if hosts > 1 { format!(" ({hosts} hosts x {})", format::bytes(p.size_bytes)) } else { String::new() };
    let mut out = Vec::new();
    for (host, t) in s.target.iter().filter(|(h, _)| !load.contains(h.as_str())) {
        // MemAvailable counts the page cache that could be reclaimed: the room a cache has.
        let Some(available) = t.memory_bytes.get("available").map(|m| m.max as u64).filter(|a| *a > 0) else {
            continue;
        };
        if working_set > available || crate::cache::target_disks_served(t, reads) {
            continue;
        }
        let cache = t.memory_bytes.get("page_cache").map(|m| m.max as u64);
        let mut v = Verdict::new(
            VerdictId::WorkingSetCached,
            format!(
                "working set {}{of_hosts} fits in target {host}'s memory ({} available{}): reads may be served \
                 from the server's page cache, not its disks, whatever the client's caching",
                format::bytes(working_set),
                format::bytes(available),
                cache.map_or(String::new(), |c| format!(", page cache up to {}", format::bytes(c)))
            ),
        )
        .with("target", host.as_str())
        .with("working_set_bytes", working_set)
        .with("target_available_bytes_max", available)
        .with("working_set_of_target_available_pct", round2(working_set as f64 / available as f64 * 100.0));
        if let Some(c) = cache {
            v = v.with("target_page_cache_bytes_max", c);
        }
        out.push(v);
    }
    out
}
