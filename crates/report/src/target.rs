//! The summary's target section: per probed host, what its CPUs, memory, network
//! interfaces, disks and named processes did over the run's measured seconds (warm-up
//! left out), from the same target series the UI draws; and the methodology notes they
//! support (a saturated disk or CPU on the target; reads served from its page cache).

use crate::verdict::{Verdict, VerdictId};
use crate::{format, Distribution};
use ioscope_metrics::stat::{Dim, StatId};
use ioscope_metrics::{Histogram, TargetValue};
use ioscope_store::{Results, StoredTarget};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A per-second quantity's mean and maximum over the seconds it was recorded in.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MeanMax {
    pub mean: f64,
    pub max: f64,
}

impl MeanMax {
    fn of(values: &BTreeMap<u32, f64>) -> Option<MeanMax> {
        if values.is_empty() {
            return None;
        }
        let mean = values.values().sum::<f64>() / values.len() as f64;
        Some(MeanMax { mean: round3(mean), max: round3(values.values().copied().fold(f64::MIN, f64::max)) })
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetSummary {
    /// Why the kernel (eBPF) samplers did not run (null when they did, or when unknown).
    pub ebpf: Option<String>,
    /// CPUs whose time was recorded.
    pub cpus: u32,
    /// Busy CPU time over all CPUs (every mode but idle and iowait): 100 = one CPU.
    pub cpu_percent: Option<MeanMax>,
    /// page_cache, dirty, available.
    pub memory_bytes: BTreeMap<String, MeanMax>,
    pub nics: BTreeMap<String, NicSummary>,
    pub disks: BTreeMap<String, DiskSummary>,
    pub processes: BTreeMap<String, ProcessSummary>,
    /// What the probe's sampling thread cost (100 = one CPU).
    pub probe_cpu_percent: Option<MeanMax>,
    /// Events the eBPF samplers could not count (a full kernel map, or late).
    pub probe_dropped: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NicSummary {
    pub rx_bytes_per_sec: Option<MeanMax>,
    pub tx_bytes_per_sec: Option<MeanMax>,
    /// Packets dropped (received and sent) over the run.
    pub drops: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskSummary {
    /// Requests completed per second, every kind (diskstats).
    pub iops: Option<MeanMax>,
    pub bytes_per_sec: Option<MeanMax>,
    /// Time with a request in flight: 100 = busy the whole second.
    pub util_percent: Option<MeanMax>,
    /// Mean requests in flight.
    pub queue_depth: Option<MeanMax>,
    /// Block I/O latency, request start to completion, every kind (eBPF; null without it).
    pub latency_ns: Option<Distribution>,
    /// Reads completed over the run (diskstats).
    pub reads: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessSummary {
    pub cpu_percent: Option<MeanMax>,
    pub syscalls: BTreeMap<String, SyscallSummary>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SyscallSummary {
    pub count: u64,
    pub latency_ns: Option<Distribution>,
}

/// The seconds a target section leaves out: client warm-up, and those not kept.
struct Skip<'a> {
    warmup: &'a BTreeSet<u32>,
    keep: &'a dyn Fn(u32) -> bool,
}

impl Skip<'_> {
    fn contains(&self, second: &u32) -> bool {
        self.warmup.contains(second) || !(self.keep)(*second)
    }
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Per host, the target section (empty without target series).
pub fn target_summaries(r: &Results) -> BTreeMap<String, TargetSummary> {
    target_summaries_where(r, &|_| true)
}

/// Per host, the target section over the measured seconds `keep` takes (one step's).
pub(crate) fn target_summaries_where(r: &Results, keep: &dyn Fn(u32) -> bool) -> BTreeMap<String, TargetSummary> {
    // Seconds of warm-up on the client side are left out here too.
    let warmup_seconds: BTreeSet<u32> = r.seconds.iter().filter(|s| s.warmup).map(|s| s.second).collect();
    let warmup = Skip { warmup: &warmup_seconds, keep };
    let mut out: BTreeMap<String, TargetSummary> = BTreeMap::new();
    let hosts: BTreeSet<&str> = r.target.iter().map(|t| t.host.as_str()).collect();
    for host in hosts {
        let series: Vec<&StoredTarget> = r.target.iter().filter(|t| t.host == host).collect();
        let of = |id: StatId| series.iter().copied().filter(move |t| t.stat.id == id);
        // Per second, the sum over `ts` of each sample's rate (per second of its interval).
        let rates = |ts: &mut dyn Iterator<Item = &StoredTarget>, scale: f64| {
            let mut per: BTreeMap<u32, f64> = BTreeMap::new();
            for t in ts {
                for x in t.samples.iter().filter(|x| !warmup.contains(&x.second)) {
                    if let TargetValue::Count(n) = x.value {
                        *per.entry(x.second).or_default() += n as f64 * 1e9 / x.interval_ns.max(1) as f64 / scale;
                    }
                }
            }
            per
        };
        let total = |ts: &mut dyn Iterator<Item = &StoredTarget>| -> u64 {
            ts.flat_map(|t| &t.samples)
                .filter(|x| !warmup.contains(&x.second))
                .map(|x| match x.value {
                    TargetValue::Count(n) => n,
                    _ => 0,
                })
                .fold(0, u64::saturating_add)
        };
        let merged = |ts: &mut dyn Iterator<Item = &StoredTarget>| {
            let mut h = Histogram::new();
            for x in ts.flat_map(|t| &t.samples).filter(|x| !warmup.contains(&x.second)) {
                if let TargetValue::Dist(d) = &x.value {
                    h.merge(d);
                }
            }
            Distribution::of(&h)
        };
        let mut s = TargetSummary {
            ebpf: r
                .hosts
                .iter()
                .find(|(n, _)| n == host)
                .and_then(|(_, c)| c.get("probe")?.get("kernel_unavailable")?.as_str().map(str::to_string)),
            ..Default::default()
        };
        let busy = |t: &&StoredTarget| !matches!(t.label(Dim::Mode), "idle" | "iowait");
        s.cpu_percent = MeanMax::of(&rates(&mut of(StatId::CpuTime).filter(busy), 1e7));
        s.probe_cpu_percent = MeanMax::of(&rates(&mut of(StatId::ProbeCpu), 1e7));
        s.probe_dropped = total(&mut of(StatId::ProbeDropped));
        s.cpus = of(StatId::CpuTime).map(|t| t.label(Dim::Cpu)).collect::<BTreeSet<_>>().len() as u32;
        for (name, id) in
            [("page_cache", StatId::MemPageCache), ("dirty", StatId::MemDirty), ("available", StatId::MemAvailable)]
        {
            let mut per: BTreeMap<u32, f64> = BTreeMap::new();
            for x in of(id).flat_map(|t| &t.samples).filter(|x| !warmup.contains(&x.second)) {
                if let TargetValue::Gauge(v) = x.value {
                    *per.entry(x.second).or_default() += v as f64;
                }
            }
            if let Some(m) = MeanMax::of(&per) {
                s.memory_bytes.insert(name.to_string(), m);
            }
        }
        let values = |id: StatId, dim: Dim| of(id).map(move |t| t.label(dim).to_string()).collect::<BTreeSet<_>>();
        for nic in values(StatId::NetRxBytes, Dim::Nic) {
            let on = |t: &&StoredTarget| t.label(Dim::Nic) == nic;
            s.nics.insert(
                nic.clone(),
                NicSummary {
                    rx_bytes_per_sec: MeanMax::of(&rates(&mut of(StatId::NetRxBytes).filter(on), 1.0)),
                    tx_bytes_per_sec: MeanMax::of(&rates(&mut of(StatId::NetTxBytes).filter(on), 1.0)),
                    drops: total(&mut of(StatId::NetDrops).filter(on)),
                },
            );
        }
        let mut disks = values(StatId::DiskOps, Dim::Disk);
        disks.extend(values(StatId::BlockLatency, Dim::Disk));
        for disk in disks {
            let on = |t: &&StoredTarget| t.label(Dim::Disk) == disk;
            let reads = |t: &&StoredTarget| t.label(Dim::Op) == "read";
            s.disks.insert(
                disk.clone(),
                DiskSummary {
                    iops: MeanMax::of(&rates(&mut of(StatId::DiskOps).filter(on), 1.0)),
                    bytes_per_sec: MeanMax::of(&rates(&mut of(StatId::DiskBytes).filter(on), 1.0)),
                    util_percent: MeanMax::of(&rates(&mut of(StatId::DiskBusy).filter(on), 1e7)),
                    queue_depth: MeanMax::of(&rates(&mut of(StatId::DiskQueueTime).filter(on), 1e9)),
                    latency_ns: merged(&mut of(StatId::BlockLatency).filter(on)),
                    reads: total(&mut of(StatId::DiskOps).filter(on).filter(reads)),
                },
            );
        }
        let mut processes = values(StatId::ProcessCpu, Dim::Process);
        processes.extend(values(StatId::SyscallLatency, Dim::Process));
        for process in processes {
            let on = |t: &&StoredTarget| t.label(Dim::Process) == process;
            let mut p = ProcessSummary {
                cpu_percent: MeanMax::of(&rates(&mut of(StatId::ProcessCpu).filter(on), 1e7)),
                ..Default::default()
            };
            let calls: BTreeSet<String> =
                of(StatId::SyscallLatency).filter(on).map(|t| t.label(Dim::Syscall).into()).collect();
            for call in calls {
                let these = || of(StatId::SyscallLatency).filter(on).filter(|t| t.label(Dim::Syscall) == call);
                let count = these()
                    .flat_map(|t| &t.samples)
                    .filter(|x| !warmup.contains(&x.second))
                    .map(|x| if let TargetValue::Dist(h) = &x.value { h.count() } else { 0 })
                    .fold(0, u64::saturating_add);
                p.syscalls.insert(call.clone(), SyscallSummary { count, latency_ns: merged(&mut these()) });
            }
            s.processes.insert(process, p);
        }
        out.insert(host.to_string(), s);
    }
    out
}

/// What the target side says about the client side's numbers.
pub fn target_notes(
    target: &BTreeMap<String, TargetSummary>,
    client_reads: u64,
    working_set_bytes: Option<u64>,
) -> Vec<Verdict> {
    let mut notes = Vec::new();
    for (host, t) in target {
        // A disk or the CPUs saturated: `target-bound` (link.rs), judged at the knee.
        if t.probe_dropped > 0 {
            notes.push(
                Verdict::new(
                    VerdictId::ProbeDropped,
                    format!(
                        "target {host}: the eBPF samplers could not count {} events (a full kernel map, or counted \
                         after their second was taken): block and system-call histograms miss them",
                        format::int(t.probe_dropped)
                    ),
                )
                .with("host", host.as_str())
                .with("events_dropped", t.probe_dropped),
            );
        }
        // Reads the client made that the target's disks never saw came from its memory.
        let disk_reads: u64 = t.disks.values().map(|d| d.reads).fold(0, u64::saturating_add);
        if client_reads >= 1000 && !t.disks.is_empty() && disk_reads.saturating_mul(10) < client_reads {
            let cache = t.memory_bytes.get("page_cache").map(|m| m.max as u64);
            let fits = match (working_set_bytes, cache) {
                (Some(ws), Some(c)) => {
                    format!(" (working set {} against a page cache of up to {})", format::bytes(ws), format::bytes(c))
                }
                _ => String::new(),
            };
            let mut v = Verdict::new(
                VerdictId::TargetCache,
                format!(
                    "target {host}: its disks completed {} reads for the client's {}: the rest were served from the \
                     target's page cache{fits}, so these are memory, not disk, numbers",
                    format::int(disk_reads),
                    format::int(client_reads)
                ),
            )
            .with("host", host.as_str())
            .with("target_disk_reads", disk_reads)
            .with("client_reads", client_reads);
            if let Some(ws) = working_set_bytes {
                v = v.with("working_set_bytes", ws);
            }
            if let Some(c) = cache {
                v = v.with("target_page_cache_max_bytes", c);
            }
            notes.push(v);
        }
    }
    notes
}
