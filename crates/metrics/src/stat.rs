//! The registry of statistics: each one is a single entry in [`STATS`] with its name as
//! stored, its unit, kind, the dimensions it breaks down by, the label people see and how
//! the summary reports it. The store writes and reads series by these entries, the
//! report names its fields after them, and the web API offers them to queries and the UI.
//!
//! Adding a statistic: an entry here plus where it is recorded (a field of
//! [`OpInterval`] or [`Counts`] and its arm in their accessors below).

use crate::recorder::{Counts, OpInterval};
use crate::Histogram;

/// Identifies a statistic in code (the registry entry holds everything else).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatId {
    Ops,
    Bytes,
    Errors,
    Skipped,
    Latency,
    ServiceTime,
    Size,
    Offset,
    ProbeDuration,
    // Target side (crates/probe): what the server did, per second.
    CpuTime,
    ProcessCpu,
    MemPageCache,
    MemDirty,
    MemAvailable,
    NetRxBytes,
    NetTxBytes,
    NetRxPackets,
    NetTxPackets,
    NetDrops,
    DiskOps,
    DiskBytes,
    DiskBusy,
    DiskQueueTime,
    BlockLatency,
    BlockSize,
    BlockOffset,
    SyscallLatency,
    ProbeCpu,
    ProbeDropped,
}

/// What a statistic's values are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A count per second (stored as a series of counts; queried as a rate).
    Counter,
    /// A histogram per second (stored with its exact count, sum, min and max).
    Distribution,
    /// Durations of events at the second each started (probe commands: the `probe` table).
    Event,
    /// A level sampled at the end of each second (memory in use): averaged over seconds,
    /// summed over dimension values.
    Gauge,
}

/// Which side of the test a statistic describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// What ioscope's workers did and saw (`io.*`).
    Client,
    /// What the target did, recorded by `ioscope probe` samplers (`series.side = 'target'`).
    Target,
}

impl Side {
    /// The name in `series.side` and in the API.
    pub fn name(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Target => "target",
        }
    }
}

/// How a counter is answered per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Its unit per second (`ops/s`).
    Rate,
    /// A counter of nanoseconds as a percentage of one second (CPU time, disk busy time):
    /// 100 = one CPU or one device busy all the second.
    Percent,
    /// A counter of nanoseconds spent in a queue by all requests, as the mean number in
    /// flight (diskstats' weighted time: 2.5 = two and a half requests queued on average).
    MeanInFlight,
}

impl StatId {
    /// Whether `op` has this quantity: sync, open, close and metadata operations have no
    /// size, and only reads and writes have an offset ([`Op::has_size`], [`Op::has_offset`]).
    pub fn applies_to(self, op: crate::Op) -> bool {
        match self {
            StatId::Size => op.has_size(),
            StatId::Offset => op.has_offset(),
            _ => true,
        }
    }
}

impl Kind {
    /// The name in `series.kind` and in the API.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Distribution => "distribution",
            Kind::Event => "event",
            Kind::Gauge => "gauge",
        }
    }
}

/// What a statistic can be filtered and broken down by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dim {
    Op,
    Workload,
    Host,
    Step,
    /// Per-worker series (they carry no workload): counters of every worker, distributions
    /// of the busiest workers of each second and "(other)".
    Worker,
    /// Per-file series (no workload): counters of every file of a flat workload (a file
    /// tree's busiest and "(other)"), distributions of the busiest files and "(other)".
    File,
    /// The kind of failed I/O ("ENOSPC", "short read"): `series.error`.
    Error,
    Probe,
    /// Target side: a CPU (`cpu3`).
    Cpu,
    /// Target side: a CPU mode (`user`, `system`, `iowait`...).
    Mode,
    /// Target side: a network interface.
    Nic,
    /// Target side: a block device (its kernel name, `loop3`).
    Disk,
    /// Target side: a process, by name (`ganesha.nfsd`).
    Process,
    /// Target side: a system call, named as strace names it (`pwrite64`).
    Syscall,
}

impl Dim {
    pub const ALL: [Dim; 14] = [
        Dim::Op,
        Dim::Workload,
        Dim::Host,
        Dim::Step,
        Dim::Worker,
        Dim::File,
        Dim::Error,
        Dim::Probe,
        Dim::Cpu,
        Dim::Mode,
        Dim::Nic,
        Dim::Disk,
        Dim::Process,
        Dim::Syscall,
    ];
    /// The dimensions kept in their own `series` column by target series.
    pub const TARGET: [Dim; 6] = [Dim::Cpu, Dim::Mode, Dim::Nic, Dim::Disk, Dim::Process, Dim::Syscall];

    /// The name in queries (`by=`, `where=`) and answers.
    pub fn name(self) -> &'static str {
        match self {
            Dim::Op => "op",
            Dim::Workload => "workload",
            Dim::Host => "host",
            Dim::Step => "step",
            Dim::Worker => "worker",
            Dim::File => "file",
            Dim::Error => "error",
            Dim::Probe => "probe",
            Dim::Cpu => "cpu",
            Dim::Mode => "mode",
            Dim::Nic => "nic",
            Dim::Disk => "disk",
            Dim::Process => "process",
            Dim::Syscall => "syscall",
        }
    }

    pub fn parse(s: &str) -> Option<Dim> {
        Dim::ALL.into_iter().find(|d| d.name() == s)
    }
}

/// How the summary (`schema/summary.schema.json`) reports a statistic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reported {
    /// A count per operation, under this field name.
    Count(&'static str),
    /// Mean, min, percentiles and max per operation, under this field name (null when
    /// nothing completed).
    Percentiles(&'static str),
    /// Mean, min and max per operation, under this field name (null when nothing completed).
    Range(&'static str),
    /// Every event, in this top-level list.
    Events(&'static str),
    /// Per second only (series and heat maps): a whole-run figure would say nothing.
    PerSecondOnly,
}

/// When a run offers a statistic to queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offered {
    Always,
    /// Only in runs with file-tree operations (others can never have a value).
    WithFileTreeOps,
    /// Only in runs with probes.
    WithProbes,
    /// Only in runs with target series of this statistic (`--probe`, `ioscope probe`).
    WithTargetSeries,
}

/// One statistic.
#[derive(Debug, PartialEq, Eq)]
pub struct Stat {
    pub id: StatId,
    /// The name in queries, URLs and the UI: `latency`.
    pub name: &'static str,
    /// The name in the results file (`series.stat`): `io.latency`.
    pub stored: &'static str,
    /// The unit of the stored values (`series.unit`); counters are answered per second.
    pub unit: &'static str,
    pub kind: Kind,
    /// What it can be broken down by. [`Dim::Worker`] and [`Dim::File`]: also stored per
    /// worker and per file; [`Dim::Error`]: also stored per kind of failure.
    pub dims: &'static [Dim],
    /// What the UI shows: a name, then what it measures in parentheses.
    pub label: &'static str,
    pub reported: Reported,
    /// Stored only for seconds in which it is not zero (others must be there every second).
    pub sparse: bool,
    pub offered: Offered,
    pub side: Side,
    /// How a counter is answered per second (others: [`Answer::Rate`], unused).
    pub answer: Answer,
}

impl Stat {
    /// The unit of answers: counters are rates (`ops/s`).
    pub fn answer_unit(&self) -> String {
        match (self.kind, self.answer) {
            (Kind::Counter, Answer::Rate) => format!("{}/s", self.unit),
            (Kind::Counter, Answer::Percent) => "percent".to_string(),
            (Kind::Counter, Answer::MeanInFlight) => "requests".to_string(),
            (Kind::Distribution | Kind::Event | Kind::Gauge, _) => self.unit.to_string(),
        }
    }

    /// What a counter's rate (its unit per second) is divided by to give the answer.
    pub fn answer_divisor(&self) -> f64 {
        match self.answer {
            Answer::Rate => 1.0,
            Answer::Percent => 1e7,
            Answer::MeanInFlight => 1e9,
        }
    }

    /// Stored as series (events have their own table).
    pub fn is_series(&self) -> bool {
        self.kind != Kind::Event
    }

    pub fn has(&self, dim: Dim) -> bool {
        self.dims.contains(&dim)
    }
}

const COUNTER_DIMS: &[Dim] = &[Dim::Op, Dim::Workload, Dim::Host, Dim::Step, Dim::Worker, Dim::File];
const ERROR_DIMS: &[Dim] = &[Dim::Op, Dim::Workload, Dim::Host, Dim::Step, Dim::Worker, Dim::File, Dim::Error];
const OP_DIMS: &[Dim] = &[Dim::Op, Dim::Workload, Dim::Host, Dim::Step];
/// Distributions: also per worker and per file, for the busiest of each second and
/// "(other)" (see `crate::breakdown`).
const DIST_DIMS: &[Dim] = &[Dim::Op, Dim::Workload, Dim::Host, Dim::Step, Dim::Worker, Dim::File];

/// Every statistic, in the order the store writes them and the UI lists them.
pub static STATS: &[Stat] = &[
    Stat {
        id: StatId::Ops,
        name: "ops",
        stored: "io.ops",
        unit: "ops",
        kind: Kind::Counter,
        dims: COUNTER_DIMS,
        label: "Operations",
        reported: Reported::Count("ops"),
        sparse: false,
        offered: Offered::Always,
        side: Side::Client,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::Bytes,
        name: "bytes",
        stored: "io.bytes",
        unit: "bytes",
        kind: Kind::Counter,
        dims: COUNTER_DIMS,
        label: "Bytes",
        reported: Reported::Count("bytes"),
        sparse: false,
        offered: Offered::Always,
        side: Side::Client,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::Errors,
        name: "errors",
        stored: "io.errors",
        unit: "errors",
        kind: Kind::Counter,
        dims: ERROR_DIMS,
        label: "Errors",
        reported: Reported::Count("errors"),
        sparse: false,
        offered: Offered::Always,
        side: Side::Client,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::Skipped,
        name: "skipped",
        stored: "io.skipped",
        unit: "ops",
        kind: Kind::Counter,
        dims: OP_DIMS,
        label: "Skipped (no file in the needed state)",
        reported: Reported::Count("skipped"),
        sparse: true,
        offered: Offered::WithFileTreeOps,
        side: Side::Client,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::Latency,
        name: "latency",
        stored: "io.latency",
        unit: "ns",
        kind: Kind::Distribution,
        dims: DIST_DIMS,
        label: "Latency (from intended start)",
        reported: Reported::Percentiles("latency_ns"),
        sparse: false,
        offered: Offered::Always,
        side: Side::Client,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::ServiceTime,
        name: "service_time",
        stored: "io.service_time",
        unit: "ns",
        kind: Kind::Distribution,
        dims: DIST_DIMS,
        label: "Service time (from issue)",
        reported: Reported::Percentiles("service_time_ns"),
        sparse: false,
        offered: Offered::Always,
        side: Side::Client,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::Size,
        name: "size",
        stored: "io.size",
        unit: "bytes",
        kind: Kind::Distribution,
        dims: DIST_DIMS,
        label: "I/O size",
        reported: Reported::Range("size_bytes"),
        sparse: false,
        offered: Offered::Always,
        side: Side::Client,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::Offset,
        name: "offset",
        stored: "io.offset",
        unit: "bytes",
        kind: Kind::Distribution,
        dims: DIST_DIMS,
        label: "File offset",
        reported: Reported::PerSecondOnly,
        sparse: false,
        offered: Offered::Always,
        side: Side::Client,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::ProbeDuration,
        name: "probe",
        stored: "probe.duration",
        unit: "ns",
        kind: Kind::Event,
        dims: &[Dim::Probe],
        label: "Probe duration",
        reported: Reported::Events("probes"),
        sparse: false,
        offered: Offered::WithProbes,
        side: Side::Client,
        answer: Answer::Rate,
    },
];

const HOST: &[Dim] = &[Dim::Host];
const NIC: &[Dim] = &[Dim::Host, Dim::Nic];
/// Block devices: by device and by kind of request (read, write, discard, flush).
const DISK_OP: &[Dim] = &[Dim::Host, Dim::Disk, Dim::Op];

/// The target side's statistics (docs/probe.md: each one's source), in the order the UI
/// lists them. The procfs ones are always recorded; `block.*` and `syscall.*` need eBPF.
pub static TARGET_STATS: &[Stat] = &[
    Stat {
        id: StatId::CpuTime,
        name: "cpu",
        stored: "cpu.time",
        unit: "ns",
        kind: Kind::Counter,
        dims: &[Dim::Host, Dim::Cpu, Dim::Mode],
        label: "CPU time (target; 100% = one CPU)",
        reported: Reported::Count("cpu"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Percent,
    },
    Stat {
        id: StatId::ProcessCpu,
        name: "process_cpu",
        stored: "process.cpu",
        unit: "ns",
        kind: Kind::Counter,
        dims: &[Dim::Host, Dim::Process, Dim::Mode],
        label: "Process CPU time (target; 100% = one CPU)",
        reported: Reported::Count("process_cpu"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Percent,
    },
    Stat {
        id: StatId::MemPageCache,
        name: "page_cache",
        stored: "mem.page_cache",
        unit: "bytes",
        kind: Kind::Gauge,
        dims: HOST,
        label: "Page cache (target)",
        reported: Reported::Range("page_cache_bytes"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::MemDirty,
        name: "dirty",
        stored: "mem.dirty",
        unit: "bytes",
        kind: Kind::Gauge,
        dims: HOST,
        label: "Dirty memory (target, not yet written back)",
        reported: Reported::Range("dirty_bytes"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::MemAvailable,
        name: "available",
        stored: "mem.available",
        unit: "bytes",
        kind: Kind::Gauge,
        dims: HOST,
        label: "Available memory (target)",
        reported: Reported::Range("available_bytes"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::NetRxBytes,
        name: "net_rx_bytes",
        stored: "net.rx_bytes",
        unit: "bytes",
        kind: Kind::Counter,
        dims: NIC,
        label: "Network received (target)",
        reported: Reported::Count("net_rx_bytes"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::NetTxBytes,
        name: "net_tx_bytes",
        stored: "net.tx_bytes",
        unit: "bytes",
        kind: Kind::Counter,
        dims: NIC,
        label: "Network sent (target)",
        reported: Reported::Count("net_tx_bytes"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::NetRxPackets,
        name: "net_rx_packets",
        stored: "net.rx_packets",
        unit: "packets",
        kind: Kind::Counter,
        dims: NIC,
        label: "Packets received (target)",
        reported: Reported::Count("net_rx_packets"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::NetTxPackets,
        name: "net_tx_packets",
        stored: "net.tx_packets",
        unit: "packets",
        kind: Kind::Counter,
        dims: NIC,
        label: "Packets sent (target)",
        reported: Reported::Count("net_tx_packets"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::NetDrops,
        name: "net_drops",
        stored: "net.drops",
        unit: "packets",
        kind: Kind::Counter,
        dims: NIC,
        label: "Packets dropped (target, received and sent)",
        reported: Reported::Count("net_drops"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::DiskOps,
        name: "disk_ops",
        stored: "disk.ops",
        unit: "ops",
        kind: Kind::Counter,
        dims: DISK_OP,
        label: "Disk operations (target, diskstats)",
        reported: Reported::Count("disk_ops"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::DiskBytes,
        name: "disk_bytes",
        stored: "disk.bytes",
        unit: "bytes",
        kind: Kind::Counter,
        dims: DISK_OP,
        label: "Disk bytes (target, diskstats)",
        reported: Reported::Count("disk_bytes"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::DiskBusy,
        name: "disk_busy",
        stored: "disk.busy",
        unit: "ns",
        kind: Kind::Counter,
        dims: &[Dim::Host, Dim::Disk],
        label: "Disk utilization (target; 100% = busy all the second)",
        reported: Reported::Count("disk_busy"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Percent,
    },
    Stat {
        id: StatId::DiskQueueTime,
        name: "disk_queue",
        stored: "disk.queue_time",
        unit: "ns",
        kind: Kind::Counter,
        dims: &[Dim::Host, Dim::Disk],
        label: "Disk queue depth (target; mean requests in flight)",
        reported: Reported::Count("disk_queue"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::MeanInFlight,
    },
    Stat {
        id: StatId::BlockLatency,
        name: "block_latency",
        stored: "block.latency",
        unit: "ns",
        kind: Kind::Distribution,
        dims: DISK_OP,
        label: "Block I/O latency (target, request start to completion)",
        reported: Reported::Percentiles("block_latency_ns"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::BlockSize,
        name: "block_size",
        stored: "block.size",
        unit: "bytes",
        kind: Kind::Distribution,
        dims: DISK_OP,
        label: "Block I/O size (target)",
        reported: Reported::Percentiles("block_size_bytes"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::BlockOffset,
        name: "block_offset",
        stored: "block.offset",
        unit: "bytes",
        kind: Kind::Distribution,
        dims: DISK_OP,
        label: "Block I/O offset on the device (target)",
        reported: Reported::Percentiles("block_offset_bytes"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::SyscallLatency,
        name: "syscall_latency",
        stored: "syscall.latency",
        unit: "ns",
        kind: Kind::Distribution,
        dims: &[Dim::Host, Dim::Process, Dim::Syscall],
        label: "System call latency (target, entry to return)",
        reported: Reported::Percentiles("syscall_latency_ns"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
    Stat {
        id: StatId::ProbeCpu,
        name: "probe_cpu",
        stored: "probe.cpu",
        unit: "ns",
        kind: Kind::Counter,
        dims: HOST,
        label: "The probe's own CPU time (its sampling thread; 100% = one CPU)",
        reported: Reported::Count("probe_cpu"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Percent,
    },
    Stat {
        id: StatId::ProbeDropped,
        name: "probe_dropped",
        stored: "probe.dropped",
        unit: "events",
        kind: Kind::Counter,
        dims: HOST,
        label: "Events the eBPF samplers could not count (a full kernel map, or after their second was taken)",
        reported: Reported::Count("probe_dropped"),
        sparse: false,
        offered: Offered::WithTargetSeries,
        side: Side::Target,
        answer: Answer::Rate,
    },
];

/// Every statistic of both sides: the client's, then the target's.
pub fn all() -> impl Iterator<Item = &'static Stat> {
    STATS.iter().chain(TARGET_STATS)
}

/// The entry of a statistic.
pub fn stat(id: StatId) -> &'static Stat {
    all().find(|s| s.id == id).expect("every StatId has an entry in STATS or TARGET_STATS")
}

/// The statistic queried as `name` (`latency`).
pub fn by_name(name: &str) -> Option<&'static Stat> {
    all().find(|s| s.name == name)
}

/// The statistic stored as `stored` (`io.latency`).
pub fn by_stored(stored: &str) -> Option<&'static Stat> {
    all().find(|s| s.stored == stored)
}

impl OpInterval {
    /// The value of a counter statistic (None for other statistics).
    pub fn count(&self, id: StatId) -> Option<u64> {
        match id {
            StatId::Skipped => Some(self.skipped),
            _ => self.counts.get(id),
        }
    }

    pub fn count_mut(&mut self, id: StatId) -> Option<&mut u64> {
        match id {
            StatId::Skipped => Some(&mut self.skipped),
            _ => self.counts.get_mut(id),
        }
    }

    /// The histogram of a distribution statistic (None for other statistics).
    pub fn histogram(&self, id: StatId) -> Option<&Histogram> {
        match id {
            StatId::Latency => Some(&self.latency_ns),
            StatId::ServiceTime => Some(&self.service_ns),
            StatId::Size => Some(&self.size_bytes),
            StatId::Offset => Some(&self.offset_bytes),
            _ => None,
        }
    }

    pub fn histogram_mut(&mut self, id: StatId) -> Option<&mut Histogram> {
        match id {
            StatId::Latency => Some(&mut self.latency_ns),
            StatId::ServiceTime => Some(&mut self.service_ns),
            StatId::Size => Some(&mut self.size_bytes),
            StatId::Offset => Some(&mut self.offset_bytes),
            _ => None,
        }
    }
}

impl Counts {
    /// The value of a counter kept per worker and per file (None for other statistics).
    pub fn get(&self, id: StatId) -> Option<u64> {
        match id {
            StatId::Ops => Some(self.ops),
            StatId::Bytes => Some(self.bytes),
            StatId::Errors => Some(self.errors),
            _ => None,
        }
    }

    pub fn get_mut(&mut self, id: StatId) -> Option<&mut u64> {
        match id {
            StatId::Ops => Some(&mut self.ops),
            StatId::Bytes => Some(&mut self.bytes),
            StatId::Errors => Some(&mut self.errors),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the registry promises about each entry holds where values live.
    #[test]
    fn every_statistic_has_one_entry_and_a_place_it_is_recorded() {
        let mut interval = OpInterval::empty();
        let mut counts = Counts::default();
        for s in all() {
            assert!(std::ptr::eq(stat(s.id), s), "{}: one entry per id", s.name);
            assert_eq!(by_name(s.name).map(|x| x.id), Some(s.id), "{}: one query name", s.name);
            assert_eq!(by_stored(s.stored).map(|x| x.id), Some(s.id), "{}: one stored name", s.name);
            assert!(!s.unit.is_empty() && !s.label.is_empty(), "{}: a unit and a label", s.name);
            if s.side == Side::Target {
                assert!(s.dims.contains(&Dim::Host) && !s.has(Dim::Worker), "{}: a target series is per host", s.name);
                assert!(matches!(s.kind, Kind::Counter | Kind::Gauge | Kind::Distribution), "{}", s.name);
                continue;
            }
            assert_eq!(s.answer, Answer::Rate, "{}: client counters are rates", s.name);
            match s.kind {
                Kind::Gauge => panic!("{}: the client side has no gauges", s.name),
                Kind::Counter => assert!(interval.count_mut(s.id).is_some(), "{}: a per-op counter", s.name),
                Kind::Distribution => assert!(interval.histogram_mut(s.id).is_some(), "{}: a histogram", s.name),
                Kind::Event => assert_eq!(s.dims, [Dim::Probe], "{}: events break down by probe only", s.name),
            }
            if (s.has(Dim::Worker) || s.has(Dim::File)) && s.kind == Kind::Counter {
                assert!(counts.get_mut(s.id).is_some(), "{}: kept per worker and per file", s.name);
            }
        }
    }
}
