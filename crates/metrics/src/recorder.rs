//! Per-worker recorders: cumulative counters and histograms written by exactly one
//! worker thread and read once a second by the collector.
//!
//! Each cell is an atomic updated with a relaxed load and store (single writer), which
//! compiles to a plain add: no lock, no locked instruction, no allocation per I/O. The
//! collector reads the cumulative values and subtracts the previous read, so a late or
//! missed tick loses nothing (the rezolus model).
//!
//! Bucket counters are 32 bits and wrap: a delta is exact as long as a bucket gets fewer
//! than 2^32 increments between two reads (one second apart), and the smaller cells keep
//! more of the histograms in cache next to the kernel's own work. Operation and byte
//! counts are not kept separately: they are the latency histogram's count and the size
//! histogram's sum.
//!
//! Failed I/Os are counted by kind, in a fixed table of [`ERROR_KINDS`] small cells per
//! operation (the caller maps an errno or protocol status to a cell; see
//! `ioscope_exec::errors`), so recording an error is one array index and one add. The
//! error count is the sum of the kinds (so the two always agree), and the reader names the
//! kinds once a second with the naming function it was given.

use crate::histogram::{bucket_index, Histogram, BUCKETS};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

#[inline(always)]
fn bump(cell: &AtomicU64, n: u64) {
    cell.store(cell.load(Relaxed).wrapping_add(n), Relaxed);
}

/// A histogram with one writer and concurrent readers.
pub struct AtomicHistogram {
    buckets: Box<[AtomicU32]>,
    sum: AtomicU64,
    max: AtomicU64,
}

impl Default for AtomicHistogram {
    fn default() -> Self {
        Self {
            buckets: (0..BUCKETS).map(|_| AtomicU32::new(0)).collect(),
            sum: AtomicU64::new(0),
            max: AtomicU64::new(0),
        }
    }
}

impl AtomicHistogram {
    /// Records a value. Must only be called from the owning worker thread.
    #[inline(always)]
    pub fn record(&self, value: u64) {
        let cell = &self.buckets[bucket_index(value)];
        cell.store(cell.load(Relaxed).wrapping_add(1), Relaxed);
        bump(&self.sum, value);
        if value > self.max.load(Relaxed) {
            self.max.store(value, Relaxed);
        }
    }

    /// Reads the cumulative state into `into` (reusing its allocation).
    fn read(&self, into: &mut Cumulative) {
        for (dst, src) in into.buckets.iter_mut().zip(self.buckets.iter()) {
            *dst = src.load(Relaxed);
        }
        into.sum = self.sum.load(Relaxed);
        into.max = self.max.swap(0, Relaxed);
    }
}

/// Number of error kinds counted apart per operation; kind 0 is "other" and takes every
/// kind out of range.
pub const ERROR_KINDS: usize = 512;

/// Names an error kind of an operation: (op index, kind) -> name.
pub type KindNamer = fn(usize, u16) -> String;

fn kind_number(_op: usize, kind: u16) -> String {
    format!("kind {kind}")
}

/// What one worker records for one operation.
pub struct OpRecorder {
    /// Failed I/Os per kind (32-bit cells that wrap, read as deltas like the buckets).
    error_kinds: Box<[AtomicU32]>,
    /// Operations that found nothing to act on (no file in the state they need): neither
    /// an I/O nor an error.
    pub skipped: AtomicU64,
    /// Response time: from the intended start (rate schedule) to completion.
    pub latency_ns: AtomicHistogram,
    /// Service time: from issue to completion.
    pub service_ns: AtomicHistogram,
    pub size_bytes: AtomicHistogram,
    pub offset_bytes: AtomicHistogram,
}

impl Default for OpRecorder {
    fn default() -> Self {
        Self {
            error_kinds: (0..ERROR_KINDS).map(|_| AtomicU32::new(0)).collect(),
            skipped: AtomicU64::new(0),
            latency_ns: Default::default(),
            service_ns: Default::default(),
            size_bytes: Default::default(),
            offset_bytes: Default::default(),
        }
    }
}

impl OpRecorder {
    /// Records one completed I/O. `latency_ns` is measured from the intended start.
    #[inline(always)]
    pub fn record(&self, latency_ns: u64, service_ns: u64, size: u64, offset: u64) {
        self.latency_ns.record(latency_ns);
        self.service_ns.record(service_ns);
        self.size_bytes.record(size);
        self.offset_bytes.record(offset);
    }

    /// Records a failed I/O of `kind`: counted as an error, not as an operation.
    #[inline(always)]
    pub fn record_error(&self, kind: u16) {
        let cell = self.error_kinds.get(kind as usize).unwrap_or(&self.error_kinds[0]);
        cell.store(cell.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// Records an operation that found nothing to act on.
    #[inline(always)]
    pub fn record_skip(&self) {
        bump(&self.skipped, 1);
    }
}

/// One worker's recorders, one per operation kind it performs (indexed by the caller's op
/// number); kinds it never performs take no memory.
pub struct WorkerRecorder {
    ops: Vec<Option<OpRecorder>>,
    /// Per op kind (where recorded), per file: completed ops, bytes, errors.
    files: Vec<Option<Box<[FileCell]>>>,
}

/// Counters of one operation on one file.
#[derive(Default)]
pub struct FileCell {
    ops: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
}

impl WorkerRecorder {
    /// Recorders for every kind.
    pub fn new(op_kinds: usize) -> Self {
        Self { ops: (0..op_kinds).map(|_| Some(OpRecorder::default())).collect(), files: Vec::new() }
    }
    /// Recorders for the kinds in `used` only.
    pub fn with_ops(op_kinds: usize, used: &[usize]) -> Self {
        Self { ops: (0..op_kinds).map(|i| used.contains(&i).then(OpRecorder::default)).collect(), files: Vec::new() }
    }
    /// The recorder of `op`. Panics for a kind the recorder was not made for (a bug).
    #[inline(always)]
    pub fn op(&self, op: usize) -> &OpRecorder {
        self.ops[op].as_ref().expect("operation kind without a recorder")
    }
    pub fn op_kinds(&self) -> usize {
        self.ops.len()
    }

    /// Also counts each recorded op per file, for files `0..files`.
    pub fn with_files(mut self, files: usize) -> Self {
        self.files =
            self.ops.iter().map(|o| o.as_ref().map(|_| (0..files).map(|_| FileCell::default()).collect())).collect();
        self
    }

    /// Counts one completed op (`bytes` transferred) or one error on `file`, when
    /// per-file counting is on and the file is in range.
    #[inline(always)]
    pub fn record_file(&self, op: usize, file: u32, bytes: Option<u64>) {
        let Some(Some(cells)) = self.files.get(op) else { return };
        let Some(cell) = cells.get(file as usize) else { return };
        match bytes {
            Some(b) => {
                bump(&cell.ops, 1);
                bump(&cell.bytes, b);
            }
            None => bump(&cell.errors, 1),
        }
    }
}

/// Cumulative values of one histogram at the previous read.
#[derive(Clone)]
struct Cumulative {
    buckets: Vec<u32>,
    sum: u64,
    max: u64,
}

impl Default for Cumulative {
    fn default() -> Self {
        Self { buckets: vec![0; BUCKETS], sum: 0, max: 0 }
    }
}

/// Turns successive cumulative reads of one [`AtomicHistogram`] into per-interval histograms.
#[derive(Default)]
pub struct HistogramDelta {
    prev: Cumulative,
    cur: Cumulative,
}

impl HistogramDelta {
    /// Reads `h` and returns what was recorded since the previous call.
    pub fn take(&mut self, h: &AtomicHistogram) -> Histogram {
        h.read(&mut self.cur);
        let buckets: Vec<u64> =
            self.cur.buckets.iter().zip(&self.prev.buckets).map(|(c, p)| c.wrapping_sub(*p) as u64).collect();
        let sum = self.cur.sum.wrapping_sub(self.prev.sum) as u128;
        let count: u64 = buckets.iter().sum();
        let min = buckets.iter().position(|c| *c > 0).map_or(0, |i| crate::histogram::bucket_range(i).0);
        // The exact max was reset by the read; if a value raced in after the bucket read it
        // shows up next interval, so clamp to the highest bucket seen here.
        let top = buckets.iter().rposition(|c| *c > 0).map_or(0, |i| crate::histogram::bucket_range(i).1);
        let max = if count == 0 { 0 } else { self.cur.max.min(top).max(min) };
        std::mem::swap(&mut self.prev, &mut self.cur);
        Histogram::from_parts(buckets, sum, min, max)
    }
}

/// Per-interval counters of one operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
}

/// Per-interval results of one operation of one worker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpInterval {
    pub counts: Counts,
    /// Failed I/Os by kind ("ENOSPC", "short read", ...), non-zero only; they add up to
    /// `counts.errors` (files written before error kinds were stored have none).
    pub errors_by_kind: Vec<(String, u64)>,
    /// Operations that found no file in the state they need (file-tree workloads).
    pub skipped: u64,
    pub latency_ns: Histogram,
    pub service_ns: Histogram,
    pub size_bytes: Histogram,
    pub offset_bytes: Histogram,
}

/// Reads one worker's recorders each interval and yields deltas.
pub struct WorkerReader {
    prev_skipped: Vec<u64>,
    /// Per op kind: error kind cells at the previous read.
    prev_kinds: Vec<Vec<u32>>,
    namer: KindNamer,
    hists: Vec<[HistogramDelta; 4]>,
    /// Per (op kind, file): counters at the previous read.
    prev_files: Vec<Vec<Counts>>,
}

impl WorkerReader {
    pub fn new(op_kinds: usize) -> Self {
        Self {
            prev_skipped: vec![0; op_kinds],
            prev_kinds: vec![vec![0; ERROR_KINDS]; op_kinds],
            namer: kind_number,
            hists: (0..op_kinds).map(|_| Default::default()).collect(),
            prev_files: vec![Vec::new(); op_kinds],
        }
    }

    /// Names error kinds with `namer` (by default "kind N").
    pub fn naming(mut self, namer: KindNamer) -> Self {
        self.namer = namer;
        self
    }

    /// Per-file counts since the previous call: (op kind, file, counts), non-zero only.
    pub fn take_files(&mut self, w: &WorkerRecorder) -> Vec<(usize, u32, Counts)> {
        let mut out = Vec::new();
        for (op, cells) in w.files.iter().enumerate() {
            let Some(cells) = cells else { continue };
            let prev = &mut self.prev_files[op];
            prev.resize(cells.len(), Counts::default());
            for (f, (cell, p)) in cells.iter().zip(prev.iter_mut()).enumerate() {
                let now = Counts {
                    ops: cell.ops.load(Relaxed),
                    bytes: cell.bytes.load(Relaxed),
                    errors: cell.errors.load(Relaxed),
                };
                let d = Counts {
                    ops: now.ops.wrapping_sub(p.ops),
                    bytes: now.bytes.wrapping_sub(p.bytes),
                    errors: now.errors.wrapping_sub(p.errors),
                };
                *p = now;
                if d != Counts::default() {
                    out.push((op, f as u32, d));
                }
            }
        }
        out
    }

    /// What `w` recorded since the previous call, per op.
    pub fn take(&mut self, w: &WorkerRecorder) -> Vec<OpInterval> {
        let mut out = Vec::with_capacity(w.op_kinds());
        for (i, rec) in w.ops.iter().enumerate() {
            let Some(rec) = rec else {
                out.push(OpInterval::empty());
                continue;
            };
            let skipped = rec.skipped.load(Relaxed);
            let prev_skipped = std::mem::replace(&mut self.prev_skipped[i], skipped);
            let (mut errors_by_kind, mut errors) = (Vec::new(), 0);
            for (kind, (cell, prev)) in rec.error_kinds.iter().zip(self.prev_kinds[i].iter_mut()).enumerate() {
                let now = cell.load(Relaxed);
                let d = now.wrapping_sub(*prev);
                *prev = now;
                if d > 0 {
                    errors += d as u64;
                    errors_by_kind.push(((self.namer)(i, kind as u16), d as u64));
                }
            }
            let [lat, svc, size, off] = &mut self.hists[i];
            let latency_ns = lat.take(&rec.latency_ns);
            let size_bytes = size.take(&rec.size_bytes);
            out.push(OpInterval {
                counts: Counts { ops: latency_ns.count(), bytes: size_bytes.sum() as u64, errors },
                errors_by_kind,
                skipped: skipped.wrapping_sub(prev_skipped),
                latency_ns,
                service_ns: svc.take(&rec.service_ns),
                size_bytes,
                offset_bytes: off.take(&rec.offset_bytes),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_per_interval_add_up_to_the_total() {
        let w = WorkerRecorder::new(2);
        let mut r = WorkerReader::new(2);
        for v in 1..=1000u64 {
            w.op(0).record(v * 1000, v * 900, 4096, v * 4096);
        }
        w.op(1).record_error(0);
        let first = r.take(&w);
        assert_eq!(first[0].counts, Counts { ops: 1000, bytes: 4_096_000, errors: 0 });
        assert_eq!(first[0].latency_ns.max(), Some(1_000_000));
        assert_eq!(first[1].counts.errors, 1);
        for v in 1..=10u64 {
            w.op(0).record(v, v, 512, 0);
        }
        let second = r.take(&w);
        assert_eq!(second[0].counts, Counts { ops: 10, bytes: 5120, errors: 0 });
        assert_eq!(second[0].latency_ns.max(), Some(10));
        assert_eq!(second[0].latency_ns.sum(), 55);
        assert_eq!(second[1].counts, Counts::default());
        let third = r.take(&w);
        assert!(third[0].latency_ns.is_empty());
    }

    #[test]
    fn errors_are_counted_by_kind_and_skips_apart() {
        let w = WorkerRecorder::new(2);
        let mut r = WorkerReader::new(2).naming(|op, kind| format!("{op}:{kind}"));
        for _ in 0..3 {
            w.op(1).record_error(28);
        }
        w.op(1).record_error(5);
        w.op(1).record_error(u16::MAX); // out of the table: "other"
        w.op(0).record_skip();
        let first = r.take(&w);
        assert_eq!(first[1].counts.errors, 5);
        assert_eq!(first[1].errors_by_kind, [("1:0".to_string(), 1), ("1:5".to_string(), 1), ("1:28".to_string(), 3)]);
        assert_eq!((first[0].skipped, first[0].counts), (1, Counts::default()));
        w.op(1).record_error(28);
        let second = r.take(&w);
        assert_eq!(second[1].errors_by_kind, [("1:28".to_string(), 1)]);
        assert_eq!(second[0].skipped, 0);
    }

    #[test]
    fn per_file_counts_are_deltas_and_skip_files_out_of_range() {
        let w = WorkerRecorder::with_ops(3, &[0, 2]).with_files(2);
        let mut r = WorkerReader::new(3);
        w.record_file(0, 1, Some(4096));
        w.record_file(0, 1, Some(4096));
        w.record_file(2, 0, None);
        w.record_file(0, 7, Some(1)); // no such file: ignored
        w.record_file(1, 0, Some(1)); // op without a recorder: ignored
        let first = r.take_files(&w);
        assert_eq!(
            first,
            [(0, 1, Counts { ops: 2, bytes: 8192, errors: 0 }), (2, 0, Counts { ops: 0, bytes: 0, errors: 1 })]
        );
        w.record_file(0, 0, Some(512));
        assert_eq!(r.take_files(&w), [(0, 0, Counts { ops: 1, bytes: 512, errors: 0 })]);
        assert!(r.take_files(&w).is_empty());
    }
}
