//! Per-worker recorders: cumulative counters and histograms written by exactly one
//! worker thread and read once a second by the collector.
//!
//! Each cell is an atomic updated with a relaxed load and store (single writer), which
//! compiles to a plain add: no lock, no locked instruction, no allocation per I/O. The
//! collector reads the cumulative values and subtracts the previous read, so a late or
//! missed read loses nothing (the rezolus model).
//!
//! One definition of a second: an I/O counts in the second its completion time falls in
//! (second N = completions in [t0 + N s, t0 + (N+1) s) of the run's clock). Each recorder
//! has two [`Slot`]s, chosen by the parity of the completion second: the worker compares
//! its completion time with its next boundary (one compare per I/O) and moves to the other
//! slot when it passes it. The collector reads slot N % 2 a short grace after boundary
//! N + 1, while the worker writes second N + 1 into the other slot. A record that races the
//! read (an I/O stamped in second N, recorded after the read) is in that slot's next read,
//! two seconds later: never lost, never counted twice. Completions at or after the run's
//! planned end (the I/O still in flight at the deadline) count in its last second.
//!
//! One I/O, one second: [`WorkerRecorder::at`] picks the slot once per I/O and hands out a
//! [`SlotWriter`] that every statistic of that I/O is recorded through. Each slot has a
//! sequence number (a seqlock's), odd while a writer is alive: the worker sets it with two
//! plain stores per I/O (no locked instruction; on x86 the fences are compiler barriers).
//! [`WorkerReader::read_slot`] reads a slot only while its number is even and keeps a read
//! only if the number did not move during it; otherwise it waits and reads the slot again,
//! adding the second read to the first (reads are deltas, so the sum is the slot's state at
//! the end of the clean read). A worker preempted in the middle of one I/O's record, at
//! the moment its slot is read, therefore never splits that I/O between two seconds (its
//! count and latency in one, its size or offset in the next).
//!
//! Bucket counters are 32 bits and wrap: a delta is exact as long as a bucket gets fewer
//! than 2^32 increments between two reads of its slot (two seconds apart), and the smaller
//! cells keep more of the histograms in cache next to the kernel's own work. Operation and
//! byte counts are not kept separately: they are the latency histogram's count and the
//! size histogram's sum. Only operations that have a size ([`Op::has_size`]) or an offset
//! ([`Op::has_offset`]) have those histograms: a sync, open, close or metadata operation
//! records no size or offset sample (and moves 0 bytes).
//!
//! Failed I/Os are counted by kind, in a fixed table of [`ERROR_KINDS`] small cells per
//! operation (the caller maps an errno or protocol status to a cell; see
//! `ioscope_exec::errors`), so recording an error is one array index and one add. The
//! error count is the sum of the kinds (so the two always agree), and the reader names the
//! kinds once a second with the naming function it was given.

use crate::histogram::{bucket_index, bucket_range, Histogram, BUCKETS};
use crate::Op;
use std::sync::atomic::{
    fence, AtomicU32, AtomicU64, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};

/// One second of the run's clock, in ns.
pub const SECOND_NS: u64 = 1_000_000_000;

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
}

/// Number of error kinds counted apart per operation; kind 0 is "other" and takes every
/// kind out of range.
pub const ERROR_KINDS: usize = 512;

/// Names an error kind of an operation: (op index, kind) -> name.
pub type KindNamer = fn(usize, u16) -> String;

fn kind_number(_op: usize, kind: u16) -> String {
    format!("kind {kind}")
}

/// What one worker records for one operation in one slot.
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
    /// Bytes moved, for operations that have a size; None for the others.
    pub size_bytes: Option<AtomicHistogram>,
    /// Offset in the file, for reads and writes; None for the others.
    pub offset_bytes: Option<AtomicHistogram>,
}

impl Default for OpRecorder {
    /// A recorder with every quantity (as for a read or write).
    fn default() -> Self {
        Self::with_quantities(true, true)
    }
}

impl OpRecorder {
    /// A recorder with the quantities `op` has.
    pub fn for_op(op: Op) -> Self {
        Self::with_quantities(op.has_size(), op.has_offset())
    }

    fn with_quantities(size: bool, offset: bool) -> Self {
        Self {
            error_kinds: (0..ERROR_KINDS).map(|_| AtomicU32::new(0)).collect(),
            skipped: AtomicU64::new(0),
            latency_ns: Default::default(),
            service_ns: Default::default(),
            size_bytes: size.then(AtomicHistogram::default),
            offset_bytes: offset.then(AtomicHistogram::default),
        }
    }

    /// Records one completed I/O. `latency_ns` is measured from the intended start; `size`
    /// and `offset` are dropped for an operation without them.
    #[inline(always)]
    pub fn record(&self, latency_ns: u64, service_ns: u64, size: u64, offset: u64) {
        self.latency_ns.record(latency_ns);
        self.service_ns.record(service_ns);
        if let Some(h) = &self.size_bytes {
            h.record(size);
        }
        if let Some(h) = &self.offset_bytes {
            h.record(offset);
        }
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

/// What one worker records in the seconds of one parity: one recorder per operation kind
/// it performs (indexed by the op number); kinds it never performs take no memory.
pub struct Slot {
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

impl Slot {
    fn with_ops(op_kinds: usize, used: &[usize]) -> Self {
        let ops = (0..op_kinds)
            .map(|i| {
                used.contains(&i).then(|| Op::ALL.get(i).map_or_else(OpRecorder::default, |op| OpRecorder::for_op(*op)))
            })
            .collect();
        Self { ops, files: Vec::new() }
    }

    /// The recorder of `op`. Panics for a kind the recorder was not made for (a bug).
    #[inline(always)]
    pub fn op(&self, op: usize) -> &OpRecorder {
        self.ops[op].as_ref().expect("operation kind without a recorder")
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

/// The worker's own place on the run's clock (written by the worker alone).
struct SecondClock {
    t0_ns: AtomicU64,
    /// The first completion time that belongs to a later second (u64::MAX: none).
    next_ns: AtomicU64,
    /// The slot of the current second.
    slot: AtomicUsize,
    /// The run's last planned second: later completions count in it.
    last: AtomicU64,
    /// Per slot: twice the number of I/Os recorded into it, plus one while one is being
    /// recorded (see [`SlotWriter`]).
    seq: [AtomicU64; 2],
}

/// The slot of one I/O, chosen once: every statistic of that I/O is recorded through it
/// (dereferences to the [`Slot`]). While it lives, the slot's sequence number is odd and
/// the collector does not take a read of the slot; dropping it ends the I/O's record.
/// One at a time per worker: an I/O's record never nests in another's.
pub struct SlotWriter<'a> {
    slot: &'a Slot,
    seq: &'a AtomicU64,
    /// The sequence number once this record ends (even).
    done: u64,
    slot_index: u8,
}

impl SlotWriter<'_> {
    /// Which slot (0 or 1) this I/O goes into.
    #[inline(always)]
    pub fn slot_index(&self) -> u8 {
        self.slot_index
    }

    /// The slot's sequence number before this record began (even): a read of the slot taken
    /// at a greater number has this I/O ([`WorkerReader::read_through`]).
    #[inline(always)]
    pub fn seq(&self) -> u64 {
        self.done - 2
    }
}

impl std::ops::Deref for SlotWriter<'_> {
    type Target = Slot;
    #[inline(always)]
    fn deref(&self) -> &Slot {
        self.slot
    }
}

impl Drop for SlotWriter<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        // Release: a reader that sees the even number sees every cell of this record.
        self.seq.store(self.done, Release);
    }
}

/// One worker's recorders: two [`Slot`]s, for the even and the odd seconds of the run.
pub struct WorkerRecorder {
    slots: [Slot; 2],
    clock: SecondClock,
}

impl WorkerRecorder {
    /// Recorders for every kind.
    pub fn new(op_kinds: usize) -> Self {
        Self::with_ops(op_kinds, &(0..op_kinds).collect::<Vec<_>>())
    }
    /// Recorders for the kinds in `used` only.
    pub fn with_ops(op_kinds: usize, used: &[usize]) -> Self {
        Self {
            slots: [Slot::with_ops(op_kinds, used), Slot::with_ops(op_kinds, used)],
            // Until started, every record goes to slot 0.
            clock: SecondClock {
                t0_ns: AtomicU64::new(0),
                next_ns: AtomicU64::new(u64::MAX),
                slot: AtomicUsize::new(0),
                last: AtomicU64::new(u64::MAX),
                seq: [AtomicU64::new(0), AtomicU64::new(0)],
            },
        }
    }
    pub fn op_kinds(&self) -> usize {
        self.slots[0].ops.len()
    }

    /// Whether the worker is recording an I/O into `slot` right now (a read of the slot
    /// would wait for it: [`WorkerReader::read_slot`]).
    pub fn recording(&self, slot: usize) -> bool {
        self.clock.seq[slot & 1].load(Acquire) & 1 == 1
    }

    /// Also counts each recorded op per file, for files `0..files`.
    pub fn with_files(mut self, files: usize) -> Self {
        for slot in &mut self.slots {
            slot.files = slot
                .ops
                .iter()
                .map(|o| o.as_ref().map(|_| (0..files).map(|_| FileCell::default()).collect()))
                .collect();
        }
        self
    }

    /// Puts the recorder on the run's clock: second 0 starts at `t0_ns`, the run is planned
    /// to end at `end_ns`. Called by the worker before its first record.
    pub fn start(&self, t0_ns: u64, end_ns: u64) {
        let c = &self.clock;
        c.t0_ns.store(t0_ns, Relaxed);
        c.last.store(end_ns.saturating_sub(t0_ns).saturating_sub(1) / SECOND_NS, Relaxed);
        c.slot.store(0, Relaxed);
        c.next_ns.store(0, Relaxed);
        self.turn(t0_ns);
    }

    /// The slot of an I/O completed (or failed, or skipped) at `done_ns` on the run's clock,
    /// for every statistic of that I/O: record them all through the one writer, then drop it.
    /// Must only be called from the owning worker thread, one writer at a time.
    #[inline(always)]
    pub fn at(&self, done_ns: u64) -> SlotWriter<'_> {
        let c = &self.clock;
        if done_ns >= c.next_ns.load(Relaxed) {
            self.turn(done_ns);
        }
        let i = c.slot.load(Relaxed) & 1;
        let seq = &c.seq[i];
        let begun = seq.load(Relaxed);
        debug_assert!(begun & 1 == 0, "one I/O's record inside another's");
        seq.store(begun | 1, Relaxed);
        // Release fence: a reader that sees any cell of this record also sees the odd number
        // when it checks the number again after its read (and so drops that read).
        fence(Release);
        SlotWriter { slot: &self.slots[i], seq, done: (begun | 1) + 1, slot_index: i as u8 }
    }

    /// Moves to the second of `done_ns` (past the current second's end).
    #[cold]
    fn turn(&self, done_ns: u64) {
        let c = &self.clock;
        let t0 = c.t0_ns.load(Relaxed);
        let last = c.last.load(Relaxed);
        let second = (done_ns.saturating_sub(t0) / SECOND_NS).min(last);
        c.slot.store((second & 1) as usize, Relaxed);
        let next = if second >= last { u64::MAX } else { t0.saturating_add((second + 1).saturating_mul(SECOND_NS)) };
        c.next_ns.store(next, Relaxed);
    }

    /// Slot 0 or 1 (for readers and tests).
    pub fn slot(&self, slot: usize) -> &Slot {
        &self.slots[slot & 1]
    }
}

/// Turns successive cumulative reads of one [`AtomicHistogram`] into per-interval
/// histograms. The previous read is allocated on the first read (so histograms never
/// read cost nothing).
#[derive(Default)]
struct HistogramDelta {
    prev: Vec<u32>,
    sum: u64,
}

impl HistogramDelta {
    /// Reads `h` and returns what was recorded since the previous call.
    fn take(&mut self, h: &AtomicHistogram) -> Histogram {
        if self.prev.is_empty() {
            self.prev = vec![0; BUCKETS];
        }
        let mut cells = Vec::new();
        for (i, (p, src)) in self.prev.iter_mut().zip(h.buckets.iter()).enumerate() {
            let now = src.load(Relaxed);
            let d = now.wrapping_sub(*p);
            *p = now;
            if d > 0 {
                cells.push((i as u32, d as u64));
            }
        }
        let sum_now = h.sum.load(Relaxed);
        let sum = sum_now.wrapping_sub(self.sum) as u128;
        self.sum = sum_now;
        let max_now = h.max.swap(0, Relaxed);
        let (Some(first), Some(top)) = (cells.first(), cells.last()) else {
            // No bucket moved, yet a sum or max may have: the end of a record whose bucket
            // an earlier pass of the same read counted (see `WorkerReader::read_slot`). Kept,
            // so that the passes add up to whole I/Os.
            return Histogram::partial(sum, max_now);
        };
        let min = bucket_range(first.0 as usize).0;
        // The exact max was reset by the read; if a value raced in after the bucket read it
        // shows up next interval, so clamp to the highest bucket seen here.
        let max = max_now.min(bucket_range(top.0 as usize).1).max(min);
        Histogram::from_cells(cells, sum, min, max)
    }
}

/// Per-interval counters of one operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
}

/// Per-interval results of one operation of one worker.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OpInterval {
    pub counts: Counts,
    /// Failed I/Os by kind ("ENOSPC", "short read", ...), non-zero only; they add up to
    /// `counts.errors` (files written before error kinds were stored have none).
    pub errors_by_kind: Vec<(String, u64)>,
    /// Operations that found no file in the state they need (file-tree workloads).
    pub skipped: u64,
    pub latency_ns: Histogram,
    pub service_ns: Histogram,
    /// Empty for an operation without a size.
    pub size_bytes: Histogram,
    /// Empty for an operation without an offset.
    pub offset_bytes: Histogram,
}

/// The previous read of one slot.
#[derive(Default)]
struct SlotRead {
    skipped: Vec<u64>,
    /// Per op kind: error kind cells (allocated on first read).
    kinds: Vec<Vec<u32>>,
    hists: Vec<[HistogramDelta; 4]>,
    /// Per (op kind, file): counters.
    files: Vec<Vec<Counts>>,
}

impl SlotRead {
    fn new(op_kinds: usize) -> Self {
        Self {
            skipped: vec![0; op_kinds],
            kinds: vec![Vec::new(); op_kinds],
            hists: (0..op_kinds).map(|_| Default::default()).collect(),
            files: vec![Vec::new(); op_kinds],
        }
    }
}

/// Reads one worker's recorders each interval and yields deltas.
pub struct WorkerReader {
    namer: KindNamer,
    reads: [SlotRead; 2],
    /// Per slot, its sequence number at the last clean read ([`Self::read_slot`]).
    read_through: [u64; 2],
}

impl WorkerReader {
    pub fn new(op_kinds: usize) -> Self {
        Self { namer: kind_number, reads: [SlotRead::new(op_kinds), SlotRead::new(op_kinds)], read_through: [0; 2] }
    }

    /// Names error kinds with `namer` (by default "kind N").
    pub fn naming(mut self, namer: KindNamer) -> Self {
        self.namer = namer;
        self
    }

    /// Per-file counts of both slots since the previous reads: (op kind, file, counts),
    /// non-zero only.
    pub fn take_files(&mut self, w: &WorkerRecorder) -> Vec<(usize, u32, Counts)> {
        let mut out = self.take_files_slot(w, 0);
        for (op, f, c) in self.take_files_slot(w, 1) {
            match out.iter_mut().find(|(o, g, _)| (*o, *g) == (op, f)) {
                Some((_, _, d)) => d.add(&c),
                None => out.push((op, f, c)),
            }
        }
        out.sort_by_key(|(op, f, _)| (*op, *f));
        out
    }

    /// Per-file counts of one slot since its previous read: (op kind, file, counts),
    /// non-zero only. Not consistent with [`Self::take_slot`] while the worker records into
    /// the slot: the collector reads through [`Self::read_slot`].
    fn take_files_slot(&mut self, w: &WorkerRecorder, slot: usize) -> Vec<(usize, u32, Counts)> {
        let mut out = Vec::new();
        let read = &mut self.reads[slot & 1];
        for (op, cells) in w.slot(slot).files.iter().enumerate() {
            let Some(cells) = cells else { continue };
            let prev = &mut read.files[op];
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

    /// What `w` recorded in both slots since the previous reads, per op.
    pub fn take(&mut self, w: &WorkerRecorder) -> Vec<OpInterval> {
        let mut out = self.take_slot(w, 0);
        for (o, d) in out.iter_mut().zip(self.take_slot(w, 1)) {
            o.merge(&d);
        }
        out
    }

    /// Per slot, its sequence number at the last clean read of [`Self::read_slot`]: the
    /// I/Os whose record began below it ([`SlotWriter::seq`]) are in that read or an
    /// earlier one, the others in a later one.
    pub fn read_through(&self) -> [u64; 2] {
        self.read_through
    }

    /// What `w` recorded in one slot since its previous read: per op, and per (op kind,
    /// file) as [`Self::take_files`] gives them, counting whole I/Os only. While the worker
    /// is recording an I/O into the slot, or when it recorded one during the read, `wait` is
    /// called and the slot is read again (the reads add up): an I/O is in this read with
    /// every one of its statistics, or wholly in the slot's next read. A worker's record is
    /// a few stores (no wait, no lock), so the wait ends when it gets the CPU again; it
    /// lasts longer only if this read is so late that the worker records this slot's next
    /// second meanwhile (the read then ends once that second is over).
    pub fn read_slot(
        &mut self,
        w: &WorkerRecorder,
        slot: usize,
        mut wait: impl FnMut(),
    ) -> (Vec<OpInterval>, Vec<(usize, u32, Counts)>) {
        let seq = &w.clock.seq[slot & 1];
        let (mut ops, mut files): (Vec<OpInterval>, Vec<(usize, u32, Counts)>) = (Vec::new(), Vec::new());
        loop {
            let before = seq.load(Acquire);
            if before & 1 == 1 {
                wait();
                continue;
            }
            let fresh = self.take_files_slot(w, slot);
            if files.is_empty() {
                files = fresh;
            } else {
                // A read again (rare): added through an index, a slot may hold many files.
                let mut at: std::collections::HashMap<(usize, u32), usize> =
                    files.iter().enumerate().map(|(i, (o, f, _))| ((*o, *f), i)).collect();
                for (op, f, c) in fresh {
                    match at.get(&(op, f)) {
                        Some(&i) => files[i].2.add(&c),
                        None => {
                            at.insert((op, f), files.len());
                            files.push((op, f, c));
                        }
                    }
                }
            }
            let read = self.take_slot(w, slot);
            match ops.is_empty() {
                true => ops = read,
                false => ops.iter_mut().zip(&read).for_each(|(a, b)| a.merge(b)),
            }
            // Acquire fence: if a cell read above holds a record begun after `before`, the
            // number loaded below is that record's (odd) or later.
            fence(Acquire);
            if seq.load(Relaxed) == before {
                self.read_through[slot & 1] = before;
                files.sort_by_key(|(op, f, _)| (*op, *f));
                return (ops, files);
            }
            wait();
        }
    }

    /// What `w` recorded in one slot since its previous read, per op (a single pass: an I/O
    /// being recorded meanwhile may be in it in part; see [`Self::read_slot`]).
    fn take_slot(&mut self, w: &WorkerRecorder, slot: usize) -> Vec<OpInterval> {
        let mut out = Vec::with_capacity(w.op_kinds());
        let read = &mut self.reads[slot & 1];
        for (i, rec) in w.slot(slot).ops.iter().enumerate() {
            let Some(rec) = rec else {
                out.push(OpInterval::empty());
                continue;
            };
            let skipped = rec.skipped.load(Relaxed);
            let prev_skipped = std::mem::replace(&mut read.skipped[i], skipped);
            let (mut errors_by_kind, mut errors) = (Vec::new(), 0);
            let prev_kinds = &mut read.kinds[i];
            prev_kinds.resize(ERROR_KINDS, 0);
            for (kind, (cell, prev)) in rec.error_kinds.iter().zip(prev_kinds.iter_mut()).enumerate() {
                let now = cell.load(Relaxed);
                let d = now.wrapping_sub(*prev);
                *prev = now;
                if d > 0 {
                    errors += d as u64;
                    errors_by_kind.push(((self.namer)(i, kind as u16), d as u64));
                }
            }
            let [lat, svc, size, off] = &mut read.hists[i];
            let latency_ns = lat.take(&rec.latency_ns);
            let size_bytes = rec.size_bytes.as_ref().map_or_else(Histogram::new, |h| size.take(h));
            out.push(OpInterval {
                counts: Counts { ops: latency_ns.count(), bytes: size_bytes.sum() as u64, errors },
                errors_by_kind,
                skipped: skipped.wrapping_sub(prev_skipped),
                latency_ns,
                service_ns: svc.take(&rec.service_ns),
                size_bytes,
                offset_bytes: rec.offset_bytes.as_ref().map_or_else(Histogram::new, |h| off.take(h)),
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
            w.at(0).op(0).record(v * 1000, v * 900, 4096, v * 4096);
        }
        w.at(0).op(1).record_error(0);
        let first = r.take(&w);
        assert_eq!(first[0].counts, Counts { ops: 1000, bytes: 4_096_000, errors: 0 });
        assert_eq!(first[0].latency_ns.max(), Some(1_000_000));
        assert_eq!(first[1].counts.errors, 1);
        for v in 1..=10u64 {
            w.at(0).op(0).record(v, v, 512, 0);
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
            w.at(0).op(1).record_error(28);
        }
        w.at(0).op(1).record_error(5);
        w.at(0).op(1).record_error(u16::MAX); // out of the table: "other"
        w.at(0).op(0).record_skip();
        let first = r.take(&w);
        assert_eq!(first[1].counts.errors, 5);
        assert_eq!(first[1].errors_by_kind, [("1:0".to_string(), 1), ("1:5".to_string(), 1), ("1:28".to_string(), 3)]);
        assert_eq!((first[0].skipped, first[0].counts), (1, Counts::default()));
        w.at(0).op(1).record_error(28);
        let second = r.take(&w);
        assert_eq!(second[1].errors_by_kind, [("1:28".to_string(), 1)]);
        assert_eq!(second[0].skipped, 0);
    }

    #[test]
    fn per_file_counts_are_deltas_and_skip_files_out_of_range() {
        let w = WorkerRecorder::with_ops(3, &[0, 2]).with_files(2);
        let mut r = WorkerReader::new(3);
        w.at(0).record_file(0, 1, Some(4096));
        w.at(0).record_file(0, 1, Some(4096));
        w.at(0).record_file(2, 0, None);
        w.at(0).record_file(0, 7, Some(1)); // no such file: ignored
        w.at(0).record_file(1, 0, Some(1)); // op without a recorder: ignored
        let first = r.take_files(&w);
        assert_eq!(
            first,
            [(0, 1, Counts { ops: 2, bytes: 8192, errors: 0 }), (2, 0, Counts { ops: 0, bytes: 0, errors: 1 })]
        );
        w.at(0).record_file(0, 0, Some(512));
        assert_eq!(r.take_files(&w), [(0, 0, Counts { ops: 1, bytes: 512, errors: 0 })]);
        assert!(r.take_files(&w).is_empty());
    }

    #[test]
    fn an_io_counts_in_the_second_its_completion_time_falls_in() {
        let t0 = 5 * SECOND_NS;
        let w = WorkerRecorder::new(1);
        let mut r = WorkerReader::new(1);
        w.start(t0, t0 + 10 * SECOND_NS);
        let io = |done: u64, latency: u64| w.at(done).op(0).record(latency, latency, 4096, 0);
        // Second 0: the first and the last nanosecond; second 1 starts exactly on its boundary.
        io(t0, 100);
        io(t0 + SECOND_NS - 1, 200);
        io(t0 + SECOND_NS, 300);
        io(t0 + SECOND_NS + 400_000_000, 400);
        // Second 0 is read while second 1 is written: only its own two I/Os.
        let s0 = r.take_slot(&w, 0).remove(0);
        assert_eq!((s0.counts.ops, s0.latency_ns.sum(), s0.size_bytes.count()), (2, 300, 2));
        // Second 2 goes to slot 0 again, after a worker blocked in one I/O over second 3
        // completes in second 4 (slot 0) without visiting slot 1.
        io(t0 + 2 * SECOND_NS + 1, 500);
        let s1 = r.take_slot(&w, 1).remove(0);
        assert_eq!((s1.counts.ops, s1.latency_ns.sum()), (2, 700));
        let s2 = r.take_slot(&w, 0).remove(0);
        assert_eq!((s2.counts.ops, s2.latency_ns.sum()), (1, 500));
        io(t0 + 4 * SECOND_NS + 7, 2 * SECOND_NS);
        assert!(r.take_slot(&w, 1)[0].is_empty(), "second 3 has nothing");
        assert_eq!(r.take_slot(&w, 0)[0].latency_ns.max(), Some(2 * SECOND_NS));
        // A record that raced the read of its slot is in the next read, once.
        io(t0 + 6 * SECOND_NS, 600);
        let s6 = r.take_slot(&w, 0).remove(0);
        io(t0 + 6 * SECOND_NS + 1, 700); // stamped in second 6, recorded after its read
        io(t0 + 7 * SECOND_NS, 800);
        assert_eq!(r.take_slot(&w, 1)[0].latency_ns.sum(), 800);
        io(t0 + 8 * SECOND_NS, 900);
        assert_eq!((s6.counts.ops, r.take_slot(&w, 0)[0].latency_ns.sum()), (1, 1600));
    }

    /// Every statistic of one read of a slot, as (ops, errors, latency, service time, size
    /// and offset samples, bytes, size sum, per-file ops, per-file bytes, per-file errors).
    fn views(ops: &[OpInterval], files: &[(usize, u32, Counts)]) -> [u64; 10] {
        let o = &ops[0];
        let f = files.iter().fold(Counts::default(), |mut a, (_, _, c)| {
            a.add(c);
            a
        });
        [
            o.counts.ops,
            o.counts.errors,
            o.latency_ns.count(),
            o.service_ns.count(),
            o.size_bytes.count(),
            o.offset_bytes.count(),
            o.counts.bytes,
            o.size_bytes.sum() as u64,
            f.ops,
            f.bytes,
        ]
    }

    #[test]
    fn an_io_recorded_while_its_slot_is_read_counts_whole_in_one_second() {
        let w = WorkerRecorder::new(1).with_files(1);
        let mut r = WorkerReader::new(1);
        w.start(0, 10 * SECOND_NS);
        let whole = |done: u64| {
            let slot = w.at(done);
            slot.record_file(0, 0, Some(4096));
            slot.op(0).record(10, 9, 4096, 8192);
        };
        whole(1);
        // The worker stamped an I/O in second 0 and lost its CPU in the middle of its
        // record (its count, latency and service time in, its size and offset not yet) when
        // the collector, a grace after second 0, reads slot 0.
        let io = w.at(SECOND_NS - 1);
        io.record_file(0, 0, Some(4096));
        io.op(0).latency_ns.record(20);
        io.op(0).service_ns.record(19);
        let mut rest = Some(io);
        let mut waits = 0;
        let (ops, files) = r.read_slot(&w, 0, || {
            waits += 1;
            // The worker gets the CPU back and ends its record.
            if let Some(io) = rest.take() {
                let rec = io.op(0);
                rec.size_bytes.as_ref().unwrap().record(4096);
                rec.offset_bytes.as_ref().unwrap().record(12_288);
            }
        });
        assert!(waits >= 1, "the read waited for the record in flight");
        assert_eq!(views(&ops, &files), [2, 0, 2, 2, 2, 2, 8192, 8192, 2, 8192], "both I/Os, whole, in second 0");
        assert_eq!(ops[0].offset_bytes.sum(), 8192 + 12_288);
        // Nothing of it is left for the slot's next read (second 2).
        whole(2 * SECOND_NS);
        let (ops, files) = r.read_slot(&w, 0, || panic!("no record in flight"));
        assert_eq!(views(&ops, &files), [1, 0, 1, 1, 1, 1, 4096, 4096, 1, 4096], "second 2: its own I/O only");
    }

    #[test]
    fn every_read_of_a_slot_a_worker_is_recording_into_counts_whole_ios() {
        // The worker records into the slot being read, as fast as it can, the whole time:
        // each read is taken between two records, never across one.
        const IOS: u64 = 200_000;
        let w = WorkerRecorder::new(1).with_files(1);
        let done = AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..IOS {
                    let slot = w.at(0);
                    slot.record_file(0, 0, Some(512));
                    slot.op(0).record(i, i, 512, i * 512);
                }
                done.store(1, Release);
            });
            let mut r = WorkerReader::new(1);
            let mut total = 0;
            loop {
                let finished = done.load(Acquire) == 1;
                let (ops, files) = r.read_slot(&w, 0, std::thread::yield_now);
                let v = views(&ops, &files);
                let n = v[0];
                assert_eq!(v, [n, 0, n, n, n, n, n * 512, n * 512, n, n * 512], "one read, whole I/Os");
                total += n;
                if finished {
                    break;
                }
            }
            assert_eq!(total, IOS, "every I/O read once");
        });
    }

    #[test]
    fn completions_after_the_planned_end_count_in_the_last_second() {
        let w = WorkerRecorder::new(1);
        let mut r = WorkerReader::new(1);
        // 2.5 s: the last second is second 2 (slot 0), half a second long.
        w.start(0, 2 * SECOND_NS + SECOND_NS / 2);
        w.at(SECOND_NS).op(0).record(1, 1, 1, 0);
        w.at(2 * SECOND_NS).op(0).record(2, 2, 1, 0);
        w.at(9 * SECOND_NS).op(0).record(3, 3, 1, 0);
        assert_eq!(r.take_slot(&w, 1)[0].latency_ns.sum(), 1);
        assert_eq!(r.take_slot(&w, 0)[0].latency_ns.sum(), 5);
    }

    #[test]
    fn an_operation_without_a_size_records_no_size_or_offset_sample() {
        use crate::Op;
        let used = [Op::Read, Op::Fsync, Op::Open, Op::Create, Op::Getattr].map(|o| o as usize);
        let w = WorkerRecorder::with_ops(crate::OP_KINDS, &used);
        let mut r = WorkerReader::new(crate::OP_KINDS);
        for op in used {
            w.at(0).op(op).record(1000, 900, if op == Op::Create as usize { 65_536 } else { 0 }, 0);
        }
        w.at(0).op(Op::Read as usize).record(1000, 900, 4096, 8192);
        let got = r.take(&w);
        for op in [Op::Fsync, Op::Open, Op::Getattr] {
            let d = &got[op as usize];
            assert_eq!((d.counts.ops, d.latency_ns.count(), d.service_ns.count()), (1, 1, 1), "{op}");
            assert!(d.size_bytes.is_empty() && d.offset_bytes.is_empty(), "{op}: no size or offset sample");
            assert_eq!(d.counts.bytes, 0, "{op}");
        }
        let create = &got[Op::Create as usize];
        assert_eq!((create.size_bytes.count(), create.counts.bytes), (1, 65_536), "create moves its file's bytes");
        assert!(create.offset_bytes.is_empty());
        let read = &got[Op::Read as usize];
        assert_eq!((read.size_bytes.count(), read.offset_bytes.count(), read.counts.bytes), (2, 2, 4096));
    }
}
