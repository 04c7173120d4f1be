//! One second of results from one host: per-operation counters and distributions
//! merged across workers, per-worker and per-file counters, and the distributions of the
//! busiest workers and files (the rest as "(other)", see [`crate::breakdown`]). Snapshots
//! of different hosts or seconds merge by adding buckets.

use crate::recorder::{Counts, OpInterval};
use crate::Op;

/// Per-operation results for one second (or any interval), merged over workers.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OpSeries {
    /// The workload that did it (its name); empty for a run of one unnamed workload.
    pub workload: String,
    pub op: Op,
    pub data: OpInterval,
}

/// Per-worker counters of one operation for one second.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WorkerCounts {
    pub worker: u32,
    pub op: Op,
    pub counts: Counts,
}

/// How busy one worker thread was in one second: how busy ioscope itself was.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WorkerCpu {
    pub worker: u32,
    /// Time on a CPU (user and system).
    pub cpu_ns: u64,
    /// Time runnable but waiting for a CPU (0 where the kernel does not say).
    #[serde(default)]
    pub wait_ns: u64,
}

/// Per-file counters of one operation for one second, merged over workers.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileCounts {
    /// The file's name within the run's directory.
    pub file: String,
    pub op: Op,
    pub counts: Counts,
}

/// The breakdown value that stands for every worker or file without a row of its own.
pub const OTHER: &str = "(other)";

/// Distributions (and their counts) of one operation for one of the second's busiest
/// workers, or for all the others together.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WorkerDists {
    /// None: every other worker ("(other)").
    pub worker: Option<u32>,
    pub op: Op,
    pub data: OpInterval,
}

/// Distributions of one operation for one of the second's busiest files, or for all the
/// others together ([`OTHER`]).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileDists {
    pub file: String,
    pub op: Op,
    pub data: OpInterval,
}

/// One second of one host.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    /// Second since the start of the run (0 is the first second).
    pub second: u32,
    /// Duration this snapshot covers, in ns: exactly 1e9 (see docs/analytics.md "What a second is"), except a stopped run's last second and a collector's gap.
    pub interval_ns: u64,
    /// The step this second belongs to (0 for a run of one step).
    pub step: u32,
    /// Part of the step's warm-up: excluded from summaries.
    pub warmup: bool,
    pub host: String,
    pub ops: Vec<OpSeries>,
    pub workers: Vec<WorkerCounts>,
    /// Per file and op: every file of a flat workload; a file tree's busiest files and
    /// "(other)".
    pub files: Vec<FileCounts>,
    /// Per op, the distributions of the busiest workers and "(other)": together the op's
    /// distributions over every workload.
    pub worker_dists: Vec<WorkerDists>,
    /// Per op, the distributions of the busiest files and "(other)" (none in a second
    /// whose `not_broken_down` is not 0).
    pub file_dists: Vec<FileDists>,
    /// I/O of this second not broken down by file (their records were dropped: the
    /// collector fell behind); the second then has no per-file distributions.
    pub not_broken_down: u64,
    /// CPU time of each worker thread over the second (empty when not measured: results
    /// files and agents of earlier versions).
    #[serde(default)]
    pub worker_cpu: Vec<WorkerCpu>,
}

impl OpInterval {
    /// An empty interval.
    pub fn empty() -> Self {
        Self {
            counts: Counts::default(),
            errors_by_kind: Vec::new(),
            skipped: 0,
            latency_ns: Default::default(),
            service_ns: Default::default(),
            size_bytes: Default::default(),
            offset_bytes: Default::default(),
        }
    }

    /// Adds another interval (another worker, host or second) into this one.
    pub fn merge(&mut self, other: &OpInterval) {
        self.counts.add(&other.counts);
        merge_kinds(&mut self.errors_by_kind, &other.errors_by_kind);
        self.skipped += other.skipped;
        self.latency_ns.merge(&other.latency_ns);
        self.service_ns.merge(&other.service_ns);
        self.size_bytes.merge(&other.size_bytes);
        self.offset_bytes.merge(&other.offset_bytes);
    }

    /// Nothing completed, failed or was skipped.
    pub fn is_empty(&self) -> bool {
        self.counts == Counts::default() && self.skipped == 0
    }
}

/// Adds the error counts of `from` into `into`, kind by kind: a kind already in `into`
/// keeps its place, new ones follow in `from`'s order. Linear in both lengths (one hash
/// map of `from`'s kinds), not a search of `into` per kind: a results file may hold
/// thousands of kinds a second, and merging them must not cost their square.
pub fn merge_kinds(into: &mut Vec<(String, u64)>, from: &[(String, u64)]) {
    if from.is_empty() {
        return;
    }
    let mut pending: std::collections::HashMap<&str, u64> = std::collections::HashMap::with_capacity(from.len());
    for (kind, n) in from {
        let sum = pending.entry(kind.as_str()).or_default();
        *sum = sum.saturating_add(*n);
    }
    // The first entry of a kind takes its sum, as a search would have found it first.
    for (kind, m) in into.iter_mut() {
        if let Some(n) = pending.remove(kind.as_str()) {
            *m = m.saturating_add(n);
        }
    }
    for (kind, _) in from {
        if let Some(n) = pending.remove(kind.as_str()) {
            into.push((kind.clone(), n));
        }
    }
}

/// Operations that serve others ([`Op::serves_others`]): reported in their own rows, not
/// counted in total IOPS.
pub fn is_sync_op(op: Op) -> bool {
    op.serves_others()
}

impl Counts {
    /// Adds `other` (another worker, file, slot or second) into these counts.
    pub fn add(&mut self, other: &Counts) {
        self.ops += other.ops;
        self.bytes += other.bytes;
        self.errors += other.errors;
    }

    /// Adds `other` as part of a total: see [`is_sync_op`].
    pub fn add_to_total(&mut self, op: Op, other: &Counts) {
        if !is_sync_op(op) {
            self.ops += other.ops;
            self.bytes += other.bytes;
        }
        self.errors += other.errors;
    }
}

impl Snapshot {
    /// A second with nothing recorded yet.
    pub fn new(second: u32, interval_ns: u64, host: &str) -> Self {
        Snapshot {
            second,
            interval_ns,
            step: 0,
            warmup: false,
            host: host.to_string(),
            ops: Vec::new(),
            workers: Vec::new(),
            files: Vec::new(),
            worker_dists: Vec::new(),
            file_dists: Vec::new(),
            not_broken_down: 0,
            worker_cpu: Vec::new(),
        }
    }

    /// Totals over all operations (see [`is_sync_op`]).
    pub fn total(&self) -> Counts {
        let mut t = Counts::default();
        for s in &self.ops {
            t.add_to_total(s.op, &s.data.counts);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_kinds(kinds: &[(&str, u64)]) -> OpInterval {
        let mut d = OpInterval::empty();
        d.errors_by_kind = kinds.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        d.counts.errors = kinds.iter().map(|(_, n)| n).sum();
        d
    }

    #[test]
    fn merging_error_kinds_adds_shared_kinds_in_place_and_appends_new_ones_in_order() {
        let mut a = with_kinds(&[("EIO", 3), ("ENOSPC", 1), ("ETIMEDOUT", 2)]);
        a.merge(&with_kinds(&[("ETIMEDOUT", 5), ("short read", 7), ("EIO", 1), ("EACCES", 4)]));
        let want = [("EIO", 4), ("ENOSPC", 1), ("ETIMEDOUT", 7), ("short read", 7), ("EACCES", 4)];
        let got: Vec<(&str, u64)> = a.errors_by_kind.iter().map(|(k, n)| (k.as_str(), *n)).collect();
        assert_eq!(got, want);
        assert_eq!(a.counts.errors, 23);
        // Into nothing, from nothing, and a kind twice in one list (summed into the first).
        let mut e = OpInterval::empty();
        e.merge(&with_kinds(&[("EIO", 1), ("EIO", 2), ("EBADF", 1)]));
        assert_eq!(e.errors_by_kind, [("EIO".to_string(), 3), ("EBADF".to_string(), 1)]);
        e.merge(&OpInterval::empty());
        assert_eq!(e.errors_by_kind, [("EIO".to_string(), 3), ("EBADF".to_string(), 1)]);
        // A count at the top of u64 stays there (a file's counts are data, not trusted).
        let mut top = OpInterval::empty();
        top.errors_by_kind = vec![("EIO".to_string(), u64::MAX)];
        e.merge(&top);
        assert_eq!(e.errors_by_kind[0], ("EIO".to_string(), u64::MAX));
        // Many kinds: the same sums and order as one search per kind would give.
        let (mut x, mut y) = (OpInterval::empty(), OpInterval::empty());
        x.errors_by_kind = (0..3000).map(|i| (format!("k{i}"), i)).collect();
        y.errors_by_kind = (1500..4500).rev().map(|i| (format!("k{i}"), 1)).collect();
        x.merge(&y);
        assert_eq!(x.errors_by_kind.len(), 4500);
        assert_eq!(x.errors_by_kind[1499], ("k1499".to_string(), 1499));
        assert_eq!(x.errors_by_kind[1500], ("k1500".to_string(), 1501));
        assert_eq!(x.errors_by_kind[3000], ("k4499".to_string(), 1));
        assert_eq!(x.errors_by_kind[4499], ("k3000".to_string(), 1));
    }
}
