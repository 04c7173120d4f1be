//! Distributions per worker and per file: each second, the N busiest workers and files of
//! each operation get their own latency, service time, size and offset histograms, and
//! everyone else is merged into one "(other)" row, so the parts always add up to the
//! operation's whole and memory stays bounded whatever the thread and file count.
//!
//! Per worker this is cheap: the collector already reads every worker's histograms each
//! second ([`WorkerTop`] keeps the N with the most operations, merging the rest).
//!
//! Per file the recorder cannot keep histograms (512 threads x 100,000 files would not
//! fit), so each worker pushes a fixed-size [`IoRecord`] per finished I/O into its own
//! single-producer ring ([`FileRing`]: two plain stores and no allocation per I/O, no
//! locked instruction), and the collector drains the rings often into per-second
//! per-file histograms ([`FileBreakdown`]). Each second, up to 2N files of an operation
//! have a histogram of their own (the busiest of the previous second first, then the first
//! seen); the N busiest of them are kept and the rest go to "(other)". A full ring drops
//! the record and counts it: a second with dropped records stores no per-file
//! distributions (they would be wrong) and says how many I/O were not broken down.

use crate::recorder::{Counts, OpInterval};
use crate::snapshot::{FileCounts, FileDists, WorkerDists, OTHER};
use crate::Op;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};

const SECOND_NS: u64 = 1_000_000_000;

/// A file index that names no file (a directory operation): not broken down by file.
pub const NO_FILE: u32 = u32::MAX;

/// One finished I/O as the per-file breakdown needs it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoRecord {
    /// Completion time (the run's clock, ns): which second the I/O belongs to.
    pub done_ns: u64,
    pub file: u32,
    /// The recorder's operation index (`Op as usize`).
    pub op: u8,
    /// Completed (false: failed, counted as an error of the file).
    pub ok: bool,
    pub latency_ns: u64,
    pub service_ns: u64,
    /// Bytes moved and where: only for operations with a size ([`Op::has_size`]: transfers,
    /// a file tree's creates and copies); the offset counts for those with one
    /// ([`Op::has_offset`]). Sync and metadata operations have neither.
    pub place: Option<(u64, u64)>,
    /// The recorder slot the I/O's statistics went into, and that slot's sequence number
    /// when its record began ([`crate::SlotWriter::slot_index`] and
    /// [`crate::SlotWriter::seq`]): the collector puts the record in the second whose read
    /// of that slot has the I/O ([`FileBreakdown::drain`]), so the per-file distributions of
    /// a second count the same I/Os as its counters.
    pub slot: u8,
    pub seq: u64,
}

impl IoRecord {
    fn pack(&self) -> [u64; 7] {
        let (size, offset) = self.place.unwrap_or((0, 0));
        let flags = self.ok as u64 | (self.place.is_some() as u64) << 1 | ((self.slot & 1) as u64) << 2;
        let tag = self.file as u64 | (self.op as u64) << 32 | flags << 40;
        [self.done_ns, self.latency_ns, self.service_ns, size, offset, tag, self.seq]
    }

    fn unpack(w: [u64; 7]) -> Self {
        let tag = w[5];
        let flags = tag >> 40;
        IoRecord {
            done_ns: w[0],
            latency_ns: w[1],
            service_ns: w[2],
            place: (flags & 2 != 0).then_some((w[3], w[4])),
            file: tag as u32,
            op: (tag >> 32) as u8,
            ok: flags & 1 != 0,
            slot: (flags >> 2 & 1) as u8,
            seq: w[6],
        }
    }
}

/// A counter on a cache line of its own (producer and consumer write different lines).
#[repr(align(64))]
#[derive(Default)]
struct Line(AtomicU64);

/// A single-producer single-consumer ring of [`IoRecord`]s: one worker pushes, the
/// collector drains. Pushing is a few plain stores (relaxed and release atomics compile to
/// plain moves on x86 and arm64); a full ring drops the record and counts it by the parity
/// of its second, so the collector knows which second lost it.
pub struct FileRing {
    slots: Box<[[AtomicU64; 7]]>,
    mask: u64,
    /// Next position the producer writes.
    head: Line,
    /// The producer's last look at `tail` (read again only when the ring looks full).
    seen_tail: Line,
    /// Next position the consumer reads.
    tail: Line,
    /// Dropped records by the parity of their second.
    dropped: [Line; 2],
    /// The run's time zero, for the seconds of dropped records.
    start_ns: Line,
    /// The producer's last second of a dropped record: its start (ns) and parity, so a
    /// run of drops (a collector far behind) costs no division each.
    drop_second: [AtomicU64; 2],
}

impl FileRing {
    /// A ring of `capacity` records (rounded up to a power of two, at least 2).
    pub fn new(capacity: usize) -> Self {
        let cap = capacity.max(2).next_power_of_two();
        Self {
            slots: (0..cap).map(|_| Default::default()).collect(),
            mask: cap as u64 - 1,
            head: Line::default(),
            seen_tail: Line::default(),
            tail: Line::default(),
            dropped: Default::default(),
            start_ns: Line::default(),
            drop_second: [AtomicU64::new(u64::MAX), AtomicU64::new(0)],
        }
    }

    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Sets the run's time zero (before the workers start).
    pub fn set_start(&self, start_ns: u64) {
        self.start_ns.0.store(start_ns, Relaxed);
    }

    /// Adds a record; only the owning worker calls this.
    #[inline(always)]
    pub fn push(&self, r: &IoRecord) {
        let head = self.head.0.load(Relaxed);
        let cap = self.mask + 1;
        if head.wrapping_sub(self.seen_tail.0.load(Relaxed)) >= cap {
            let tail = self.tail.0.load(Acquire);
            self.seen_tail.0.store(tail, Relaxed);
            if head.wrapping_sub(tail) >= cap {
                self.drop_record(r.done_ns);
                return;
            }
        }
        let slot = &self.slots[(head & self.mask) as usize];
        for (cell, v) in slot.iter().zip(r.pack()) {
            cell.store(v, Relaxed);
        }
        self.head.0.store(head.wrapping_add(1), Release);
    }

    #[cold]
    fn drop_record(&self, done_ns: u64) {
        let (mut from, mut parity) = (self.drop_second[0].load(Relaxed), self.drop_second[1].load(Relaxed));
        if !(from..from.saturating_add(SECOND_NS)).contains(&done_ns) {
            let start = self.start_ns.0.load(Relaxed);
            let second = done_ns.saturating_sub(start) / SECOND_NS;
            (from, parity) = (start.saturating_add(second * SECOND_NS), second & 1);
            self.drop_second[0].store(from, Relaxed);
            self.drop_second[1].store(parity, Relaxed);
        }
        let cell = &self.dropped[parity as usize].0;
        cell.store(cell.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// Hands every record pushed so far to `each`; only the collector calls this.
    pub fn drain(&self, mut each: impl FnMut(IoRecord)) {
        let tail = self.tail.0.load(Relaxed);
        let head = self.head.0.load(Acquire);
        let mut at = tail;
        while at != head {
            let slot = &self.slots[(at & self.mask) as usize];
            each(IoRecord::unpack(std::array::from_fn(|i| slot[i].load(Relaxed))));
            at = at.wrapping_add(1);
        }
        // Release: the slots were read before the producer may write them again.
        self.tail.0.store(head, Release);
    }

    /// Records dropped so far, by the parity of their second (cumulative).
    pub fn dropped(&self) -> [u64; 2] {
        [self.dropped[0].0.load(Relaxed), self.dropped[1].0.load(Relaxed)]
    }
}

/// The ring capacity per worker: a total budget of about 64 MiB of records shared by the
/// workers, from 1,024 to 16,384 records each: drained every 5 ms, that holds 3 million
/// I/O per second per worker, and a smaller ring stays in cache.
pub fn ring_capacity(workers: usize) -> usize {
    const BUDGET_BYTES: usize = 64 << 20;
    const RECORD_BYTES: usize = 56;
    (BUDGET_BYTES / RECORD_BYTES / workers.max(1)).clamp(1024, 16384)
}

/// Keeps, per operation, the distributions of the `top` workers with the most operations
/// of the second and merges the others into "(other)" as they come (bounded: top + 1
/// intervals per operation).
pub struct WorkerTop {
    top: usize,
    /// Per op index: (worker, interval) kept, at most `top`.
    kept: Vec<Vec<(u32, OpInterval)>>,
    other: Vec<Option<OpInterval>>,
}

impl WorkerTop {
    pub fn new(top: usize, op_kinds: usize) -> Self {
        Self { top, kept: (0..op_kinds).map(|_| Vec::new()).collect(), other: vec![None; op_kinds] }
    }

    /// Offers one worker's interval of operation `op` (an index into [`Op::ALL`]).
    pub fn offer(&mut self, worker: u32, op: usize, data: OpInterval) {
        // (With top 0 the breakdown is off: no row at all, not one "(other)".)
        if data.counts.ops == 0 || op >= self.kept.len() || self.top == 0 {
            return;
        }
        let kept = &mut self.kept[op];
        // The same worker again (a second read in one tick after a gap): one row.
        if let Some((_, d)) = kept.iter_mut().find(|(w, _)| *w == worker) {
            d.merge(&data);
            return;
        }
        let evicted = if kept.len() < self.top {
            kept.push((worker, data));
            return;
        } else {
            // The least busy kept worker (the higher number on a tie) makes room if this one is busier.
            let (i, least) = kept
                .iter()
                .enumerate()
                .min_by_key(|(_, (w, d))| (d.counts.ops, std::cmp::Reverse(*w)))
                .map(|(i, (_, d))| (i, d.counts.ops))
                .expect("top > 0 workers kept");
            if data.counts.ops > least {
                std::mem::replace(&mut kept[i], (worker, data)).1
            } else {
                data
            }
        };
        self.other[op].get_or_insert_with(OpInterval::empty).merge(&evicted);
    }

    /// The second's per-worker distributions (by worker number, then "(other)"); starts over.
    pub fn finish(&mut self) -> Vec<WorkerDists> {
        let mut out = Vec::new();
        for (i, (kept, other)) in self.kept.iter_mut().zip(self.other.iter_mut()).enumerate() {
            let Some(&op) = Op::ALL.get(i) else { continue };
            kept.sort_by_key(|(w, _)| *w);
            out.extend(kept.drain(..).map(|(w, data)| WorkerDists { worker: Some(w), op, data }));
            if let Some(data) = other.take() {
                out.push(WorkerDists { worker: None, op, data });
            }
        }
        out
    }
}

/// What one file did this second in one operation.
#[derive(Clone, Copy, Default)]
struct FileCell {
    counts: Counts,
    /// Its own histograms (an index into `OpFiles::slots`), or none: "(other)".
    slot: Option<u32>,
}

/// One operation's per-file state for the second being collected.
#[derive(Default)]
struct OpFiles {
    seen: HashMap<u32, FileCell>,
    slots: Vec<(u32, OpInterval)>,
    other: Option<OpInterval>,
    /// Files that get a slot from the start of the next second (the busiest of this one).
    next: Vec<u32>,
}

/// The second's per-file results of [`FileBreakdown::close`].
#[derive(Debug, Default)]
pub struct FileSecond {
    /// The N busiest files of each op and "(other)"; empty when records were dropped.
    pub dists: Vec<FileDists>,
    /// File trees: the counters of the N busiest files of each op and "(other)".
    pub counts: Vec<FileCounts>,
    /// I/O whose record was dropped (a full ring): not broken down by file.
    pub not_broken_down: u64,
}

/// Turns drained [`IoRecord`]s into each second's per-file distributions (and, for file
/// trees, counters) for the `top` busiest files plus "(other)".
pub struct FileBreakdown {
    top: usize,
    /// Also produce per-file counters (file trees; flat workloads count every file in the
    /// recorder).
    counters: bool,
    ops: Vec<OpFiles>,
    /// Records drained that belong to a later second (with their ring's index).
    later: Vec<(usize, IoRecord)>,
    /// Dropped records seen so far, per ring and parity (cumulative).
    prev_dropped: Vec<[u64; 2]>,
    dropped_now: u64,
    dropped_next: u64,
}

impl FileBreakdown {
    pub fn new(top: usize, counters: bool, op_kinds: usize, rings: usize) -> Self {
        Self {
            top,
            counters,
            ops: (0..op_kinds).map(|_| OpFiles::default()).collect(),
            later: Vec::new(),
            prev_dropped: vec![[0; 2]; rings],
            dropped_now: 0,
            dropped_next: 0,
        }
    }

    fn slots_per_op(&self) -> usize {
        self.top.saturating_mul(2)
    }

    /// Drains every ring into the second being collected, `second`. `closing`: this drain
    /// ends the second, after its reads of the recorders (drops of the other parity are then
    /// the next second's).
    ///
    /// A record is this second's when its I/O is in this second's reads of the recorder
    /// slots: `read[w]` is, per slot, the sequence number worker `w`'s last clean read of it
    /// was taken at ([`crate::WorkerReader::read_through`]). A record begun before it is in
    /// that read; any other record is in the slot's next read (the read waits for a record
    /// in flight), which before the closing drain is this second's for the slot of
    /// `second`'s parity, and otherwise a later second's. So a straggler (an I/O stamped in
    /// second N and recorded after that second's read) is in second N + 2 here as in the
    /// counters. Without `read` for a ring (tests), every record is taken as read. Records
    /// that completed at or after `end_ns` wait for a later second too.
    pub fn drain(&mut self, rings: &[FileRing], read: &[[u64; 2]], second: u32, end_ns: u64, closing: bool) {
        let mut batch = Vec::new();
        let mut later = Vec::new();
        let parity = (second & 1) as u8;
        let mut place = |w: usize, r: IoRecord| {
            let slot = (r.slot & 1) as usize;
            let read_now = read.get(w).is_none_or(|s| r.seq < s[slot]) || (!closing && r.slot & 1 == parity);
            if read_now && r.done_ns < end_ns {
                batch.push(r)
            } else {
                later.push((w, r))
            }
        };
        for (w, r) in std::mem::take(&mut self.later) {
            place(w, r);
        }
        for (w, (ring, prev)) in rings.iter().zip(self.prev_dropped.iter_mut()).enumerate() {
            ring.drain(|r| place(w, r));
            let now = ring.dropped();
            let parity = (second & 1) as usize;
            let this = now[parity].wrapping_sub(prev[parity]);
            let that = now[1 - parity].wrapping_sub(prev[1 - parity]);
            *prev = now;
            self.dropped_now += this;
            // The other parity: a late record of the previous second (counted here), or
            // when closing, one of the next second.
            if closing {
                self.dropped_next += that;
            } else {
                self.dropped_now += that;
            }
        }
        // A second that lost records stores no per-file distributions: its records are
        // not worth the collector's time (it is behind already).
        if self.dropped_now == 0 {
            for r in &batch {
                self.add(r);
            }
        }
        batch.clear();
        self.later = later;
    }

    fn add(&mut self, r: &IoRecord) {
        if r.file == NO_FILE {
            return;
        }
        let cap = self.slots_per_op();
        let Some(op) = self.ops.get_mut(r.op as usize) else { return };
        let cell = op.seen.entry(r.file).or_insert_with(|| FileCell {
            counts: Counts::default(),
            slot: (op.slots.len() < cap).then(|| {
                op.slots.push((r.file, OpInterval::empty()));
                (op.slots.len() - 1) as u32
            }),
        });
        let data = match cell.slot {
            Some(i) => &mut op.slots[i as usize].1,
            None => op.other.get_or_insert_with(OpInterval::empty),
        };
        if r.ok {
            let bytes = r.place.map_or(0, |p| p.0);
            cell.counts.ops += 1;
            cell.counts.bytes += bytes;
            data.counts.ops += 1;
            data.counts.bytes += bytes;
            data.latency_ns.record(r.latency_ns);
            data.service_ns.record(r.service_ns);
            if let Some((size, offset)) = r.place {
                data.size_bytes.record(size);
                if Op::ALL.get(r.op as usize).is_some_and(|o| o.has_offset()) {
                    data.offset_bytes.record(offset);
                }
            }
        } else {
            cell.counts.errors += 1;
            data.counts.errors += 1;
        }
    }

    /// Ends the second: its per-file results, files named by `name`. The next second
    /// starts with the records that were already its own.
    pub fn close(&mut self, name: impl Fn(u32) -> String) -> FileSecond {
        let (top, cap, counters) = (self.top, self.slots_per_op(), self.counters);
        let not_broken_down = std::mem::replace(&mut self.dropped_now, std::mem::take(&mut self.dropped_next));
        let complete = not_broken_down == 0;
        let mut out = FileSecond { not_broken_down, ..Default::default() };
        for (i, of) in self.ops.iter_mut().enumerate() {
            let Some(&op) = Op::ALL.get(i) else { continue };
            if of.seen.is_empty() {
                of.next.clear();
                continue;
            }
            // Distributions: the busiest `top` files with a slot; the rest is "(other)".
            let mut slots = std::mem::take(&mut of.slots);
            slots.sort_by_key(|(f, d)| (std::cmp::Reverse(d.counts.ops), *f));
            let mut other = of.other.take().unwrap_or_else(OpInterval::empty);
            for (k, (file, data)) in slots.into_iter().enumerate() {
                if k < top && data.counts.ops > 0 {
                    if complete {
                        out.dists.push(FileDists { file: name(file), op, data });
                    }
                } else {
                    other.merge(&data);
                }
            }
            if complete && other.counts.ops > 0 {
                out.dists.push(FileDists { file: OTHER.to_string(), op, data: other });
            }
            // Ranked by operations, then errors, then file number (a stable order).
            let mut ranked: Vec<(u32, Counts)> = of.seen.drain().map(|(f, c)| (f, c.counts)).collect();
            let rank = |a: &(u32, Counts)| (std::cmp::Reverse(a.1.ops), std::cmp::Reverse(a.1.errors), a.0);
            if ranked.len() > cap {
                ranked.select_nth_unstable_by_key(cap, rank);
            }
            let mut head: Vec<(u32, Counts)> = ranked.iter().take(cap).copied().collect();
            head.sort_by_key(rank);
            if counters && complete {
                let busiest: Vec<&(u32, Counts)> =
                    head.iter().filter(|(_, c)| *c != Counts::default()).take(top).collect();
                let mut rest = Counts::default();
                for (_, c) in ranked.iter().filter(|(f, _)| !busiest.iter().any(|(b, _)| b == f)) {
                    rest.add(c);
                }
                out.counts.extend(busiest.iter().map(|(f, c)| FileCounts { file: name(*f), op, counts: *c }));
                if rest != Counts::default() {
                    out.counts.push(FileCounts { file: OTHER.to_string(), op, counts: rest });
                }
            }
            of.next = head.iter().filter(|(_, c)| c.ops > 0).map(|(f, _)| *f).collect();
        }
        // The next second: slots for the busiest files of this one (its records come with
        // its drains, the ones drained already among them).
        for of in &mut self.ops {
            for f in std::mem::take(&mut of.next) {
                of.slots.push((f, OpInterval::empty()));
                of.seen.insert(f, FileCell { counts: Counts::default(), slot: Some((of.slots.len() - 1) as u32) });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
