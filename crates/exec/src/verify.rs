//! Data validation in the core loop (`--verify`, docs/verify.md). The run's [`Verifier`]
//! holds what it knows of every block (ioscope_verify::BlockStates); each worker's
//! [`WorkerVerify`] stamps a header into every block of a write before it is submitted,
//! takes what a read may find when it is issued, and checks the blocks read at its
//! completion. Every engine goes through the same two calls, so one implementation
//! covers posix, uring and nfs.
//!
//! The time spent stamping and checking is the verification's cost: checking is recorded
//! per block as the latency of op `verify`; stamping is summed per run.

use crate::clock::now_ns;
use crate::errors;
use ioscope_engine::{Io, Op};
use ioscope_metrics::Slot;
use ioscope_verify::{check, BlockStates, Expect, Header, Kind, Mismatch, Outcome, Sink, Snapshot};
use ioscope_workload::{Plan, SyncMode};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Mismatches kept with their details per run; the count stays exact past it.
pub const MISMATCHES_KEPT: usize = 1000;

/// One block that failed its check.
#[derive(Clone, Debug, PartialEq)]
pub struct MismatchRecord {
    /// When the read completed (monotonic clock, ns).
    pub done_ns: u64,
    pub file: u32,
    pub offset: u64,
    pub kind: Kind,
    /// The generations the block could hold: from the floor at the read's issue to the
    /// newest issued at its completion.
    pub expected_min_generation: u64,
    pub expected_max_generation: u64,
    pub found: Option<Header>,
    /// A checksum that failed: which eighths of the block changed (see [`Mismatch`]).
    pub bad_segments: Option<u8>,
}

/// What the run verifies and what it found, shared by the workers of a host.
pub struct Verifier {
    pub states: Arc<BlockStates>,
    /// Random per run: every block the run writes carries it.
    pub run_id: u64,
    pub block_len: u32,
    /// Where floors go as they move (the journal); None without one.
    pub sink: Option<Arc<dyn Sink>>,
    /// An O_DSYNC write is durable when it completes.
    dsync: bool,
    /// Per dataset file: its epoch, how many times a whole-file operation replaced it
    /// (empty for a flat working set). A transfer holds it shared, a whole-file operation
    /// exclusively: the two never overlap on one file, so a handle's epoch says for sure
    /// whether it still names the file now under that path.
    epochs: Vec<RwLock<u32>>,
    mismatches: Mutex<Vec<MismatchRecord>>,
    /// Distinct bad blocks (a block that fails again and again is one).
    mismatch_total: AtomicU64,
    /// Reads of blocks already found bad (each failed its check again).
    bad_rereads: AtomicU64,
    stamped_blocks: AtomicU64,
    stamp_ns: AtomicU64,
}

/// The sizes of the files the run verifies: the flat working set's `files` files, or the
/// working files of the plan's dataset (the tree's first 2^32 - 1 files at most).
fn file_sizes(plan: &Plan, files: usize) -> Vec<u64> {
    match &plan.dataset {
        Some(d) => dataset_sizes(&crate::dataset::Layout::new(d)),
        None => vec![plan.file_size_bytes(); files],
    }
}

fn dataset_sizes(layout: &crate::dataset::Layout) -> Vec<u64> {
    (0..layout.working_files().min(u64::from(u32::MAX))).map(|i| layout.file_size(i)).collect()
}

/// What the state of the working set (or dataset) would need, and the most the run may use.
pub fn memory_check(plan: &Plan, files: usize) -> Result<(), String> {
    let sizes = file_sizes(plan, files);
    let block = plan.verify_block_bytes();
    let need = BlockStates::bytes_needed(&sizes, block);
    let mem = crate::host::memory_bytes().unwrap_or(u64::MAX);
    let bound = mem / 4;
    if need > bound {
        let blocks: u64 = sizes.iter().map(|s| s / u64::from(block.max(1))).sum();
        let what =
            if plan.dataset.is_some() { "dataset (its file sizes or working_set)" } else { "working set (size)" };
        return Err(format!(
            "verify: the state of {} blocks of {} needs {}, more than a quarter of this host's memory ({}); \
             set a bigger verify_block (one that still divides every block size) or a smaller {what}",
            blocks,
            ioscope_workload::format_size(u64::from(block)),
            ioscope_workload::format_size(need),
            ioscope_workload::format_size(bound),
        ));
    }
    Ok(())
}

impl Verifier {
    /// The verifier of a flat working set of `files` files of the plan's size; the blocks
    /// of the files preparation laid out with headers (`laid_out`) carry generation 0.
    pub fn for_plan(plan: &Plan, files: usize, laid_out: Option<&LaidOut>) -> Self {
        let sizes = vec![plan.file_size_bytes(); files];
        let block_len = plan.verify_block_bytes();
        let states = BlockStates::new(&sizes, block_len);
        for &f in laid_out.map_or(&[][..], |l| &l.files) {
            for b in 0..states.blocks_of(f) {
                states.laid_out_with_header(f, b);
            }
        }
        let run_id = laid_out.map_or_else(random_u64, |l| l.run_id);
        Self::new(states, run_id, plan.sync == SyncMode::Dsync)
    }

    /// The verifier of a dataset: its working files (file id = the tree's file index),
    /// each of its size. Only the files preparation created with headers in this run
    /// (`laid_out`) are checked before the run writes them: any other file of a tree may
    /// hold what an earlier run's copy or move put there (headers of another file).
    pub fn for_dataset(plan: &Plan, layout: &crate::dataset::Layout, laid_out: Option<&LaidOut>) -> Self {
        let states = BlockStates::new(&dataset_sizes(layout), plan.verify_block_bytes());
        let mut stamped = vec![false; states.files() as usize];
        for &f in laid_out.map_or(&[][..], |l| &l.files) {
            if let Some(s) = stamped.get_mut(f as usize) {
                *s = true;
                for b in 0..states.blocks_of(f) {
                    states.laid_out_with_header(f, b);
                }
            }
        }
        for (f, _) in stamped.iter().enumerate().filter(|(_, s)| !**s) {
            states.replaced(f as u32);
        }
        let run_id = laid_out.map_or_else(random_u64, |l| l.run_id);
        let mut v = Self::new(states, run_id, plan.sync == SyncMode::Dsync);
        v.epochs = (0..v.states.files()).map(|_| RwLock::new(0)).collect();
        v
    }

    pub fn new(states: BlockStates, run_id: u64, dsync: bool) -> Self {
        Self {
            block_len: states.block_len(),
            states: Arc::new(states),
            run_id,
            sink: None,
            dsync,
            epochs: Vec::new(),
            mismatches: Mutex::new(Vec::new()),
            mismatch_total: AtomicU64::new(0),
            bad_rereads: AtomicU64::new(0),
            stamped_blocks: AtomicU64::new(0),
            stamp_ns: AtomicU64::new(0),
        }
    }

    /// Holds dataset file `file` for a transfer (open, read or write): no whole-file
    /// operation replaces it until the guard is dropped; the guard reads its epoch (how many
    /// times it was replaced; never take it twice in one thread: a waiting writer would
    /// block the second).
    pub fn hold(&self, file: u32) -> Option<RwLockReadGuard<'_, u32>> {
        self.epochs.get(file as usize).map(|e| e.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// A whole-file operation (delete, create, copy or move) is about to change these
    /// dataset files: once every transfer on them has ended, their epochs move (a handle
    /// opened before is no longer checked: it may name a deleted file, or one now under
    /// another name) and their blocks are untracked until written again. The files stay
    /// held until the guards are dropped, after the operation.
    pub fn replacing(&self, files: &[u32]) -> Vec<RwLockWriteGuard<'_, u32>> {
        let mut sorted: Vec<u32> = files.iter().copied().filter(|f| (*f as usize) < self.epochs.len()).collect();
        // Always in the same order: two operations never wait for each other.
        sorted.sort_unstable();
        sorted.dedup();
        sorted
            .into_iter()
            .map(|f| {
                let mut g = self.epochs[f as usize].write().unwrap_or_else(|p| p.into_inner());
                *g = g.wrapping_add(1);
                self.states.replaced(f);
                g
            })
            .collect()
    }

    /// The first [`MISMATCHES_KEPT`] mismatches, in the order found.
    pub fn mismatches(&self) -> Vec<MismatchRecord> {
        self.mismatches.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// Every bad block found (distinct file and block).
    pub fn mismatch_total(&self) -> u64 {
        self.mismatch_total.load(Relaxed)
    }

    /// Reads of a block already found bad that failed again (not counted as mismatches).
    pub fn bad_rereads(&self) -> u64 {
        self.bad_rereads.load(Relaxed)
    }

    /// Blocks stamped and the time spent stamping them (ns).
    pub fn stamped(&self) -> (u64, u64) {
        (self.stamped_blocks.load(Relaxed), self.stamp_ns.load(Relaxed))
    }

    #[cold]
    fn found(&self, m: MismatchRecord) {
        self.mismatch_total.fetch_add(1, Relaxed);
        if let Ok(mut kept) = self.mismatches.lock() {
            if kept.len() < MISMATCHES_KEPT {
                kept.push(m);
            }
        }
    }
}

/// What preparation laid out for a verified run: the run id (the one preparation stamped
/// into the headers, generation 0, if it filled files in this run) and the files every
/// whole block of which carries a header of the run's verify block length: filled now, or
/// by an earlier run as the working set's marker records (prep/workset.rs).
#[derive(Clone, Debug, Default)]
pub struct LaidOut {
    pub run_id: u64,
    pub files: Vec<u32>,
}

/// Stamps a header of generation 0 into every whole verify block of `chunk`, which starts
/// at byte `offset` of file `file_id` (preparation, always: every prepared block carries one).
pub fn stamp_laid_out(chunk: &mut [u8], run_id: u64, file_id: u32, block_len: u32, offset: u64) {
    let bl = block_len.max(1) as usize;
    let time_unix_ns = unix_ns();
    for (j, block) in chunk.chunks_exact_mut(bl).enumerate() {
        let h = Header { run_id, file_id, block_len, offset: offset + (j * bl) as u64, generation: 0, time_unix_ns };
        h.stamp(block);
    }
}

/// A new run id (random).
pub fn new_run_id() -> u64 {
    random_u64()
}

/// A random run id: the standard library's per-process random hash keys, with the time.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(now_ns());
    h.write_u32(std::process::id());
    h.finish()
}

/// What a read took from one block at its issue.
#[derive(Clone, Copy, Default)]
struct ReadBlock {
    /// None: a block the state does not cover (nothing reserved, nothing checked).
    snap: Option<Snapshot>,
}

/// One worker's side: per-slot storage allocated once (no allocation per I/O).
pub struct WorkerVerify<'a> {
    v: &'a Verifier,
    block_len: usize,
    /// Blocks of the largest I/O.
    per_slot: usize,
    reads: Vec<ReadBlock>,
    /// Generation stamped into each block of a slot's last write (0: not covered).
    gens: Vec<u64>,
    /// Each slot's last write (file, offset, len): an fsync or COMMIT after it makes it durable.
    last_write: Vec<(u32, u64, u32)>,
    stamped: u64,
    stamp_ns: u64,
    /// This worker's writes are durable when they complete (its workload's sync is dsync).
    dsync: bool,
}

impl<'a> WorkerVerify<'a> {
    pub fn new(v: &'a Verifier, slots: usize, max_io_bytes: usize) -> Self {
        let block_len = v.block_len.max(1) as usize;
        let per_slot = max_io_bytes.div_ceil(block_len).max(1);
        Self {
            v,
            block_len,
            per_slot,
            reads: vec![ReadBlock::default(); slots * per_slot],
            gens: vec![0; slots * per_slot],
            last_write: vec![(0, 0, 0); slots],
            stamped: 0,
            stamp_ns: 0,
            dsync: v.dsync,
        }
    }

    /// Its workload's own O_DSYNC, in place of the run's.
    pub fn with_dsync(self, dsync: bool) -> Self {
        Self { dsync, ..self }
    }

    /// The run's verifier.
    pub fn verifier(&self) -> &'a Verifier {
        self.v
    }

    /// Before a dataset transfer on tree file `file`: as [`Self::issue`] with the tree's
    /// file index as the file id. The transfer holds the file ([`Verifier::hold`]) and
    /// its handle is of the file's current epoch (the tree loop closes older ones).
    #[must_use]
    pub fn issue_tree(&mut self, io: &Io, file: u32, buf: &mut [u8]) -> bool {
        self.issue(&Io { file, ..*io }, buf)
    }

    /// A dataset transfer not submitted after all: as [`Self::release`] with the tree's file index.
    pub fn release_tree(&mut self, io: &Io, file: u32) {
        self.release(&Io { file, ..*io }, usize::MAX);
    }

    /// At a dataset transfer's completion: as [`Self::complete`] with the tree's file index.
    pub fn complete_tree(&mut self, io: &Io, file: u32, result: i64, buf: &[u8], slot: &Slot, done_ns: u64) {
        self.complete(&Io { file, ..*io }, result, buf, slot, done_ns);
    }

    /// The blocks an I/O covers whole: (first block, count), at most a slot's worth.
    #[inline(always)]
    fn blocks(&self, io: &Io) -> (u64, usize) {
        let bl = self.block_len as u64;
        let first = io.offset.div_ceil(bl);
        let end = (io.offset + u64::from(io.len)) / bl;
        (first, (end.saturating_sub(first) as usize).min(self.per_slot))
    }

    /// Before submission: a write gets a header in each block of `buf`; a read notes what
    /// each block may hold. False, with nothing changed, while another I/O of one of its
    /// blocks is in flight that it may not overlap (a read and a write, or two writes, of
    /// one block: see ioscope_verify::state): the caller issues it later.
    #[must_use]
    pub fn issue(&mut self, io: &Io, buf: &mut [u8]) -> bool {
        let (first, n) = self.blocks(io);
        let base = io.slot as usize * self.per_slot;
        let states = &*self.v.states;
        match io.op {
            Op::Write => {
                let t = now_ns();
                for i in 0..n {
                    match states.try_begin_write(io.file, first + i as u64) {
                        Ok(g) => self.gens[base + i] = g.unwrap_or(0),
                        Err(()) => {
                            self.release(io, i);
                            return false;
                        }
                    }
                }
                let time_unix_ns = unix_ns();
                let bl = self.block_len;
                let skip = (first * bl as u64 - io.offset) as usize;
                for i in 0..n {
                    let block = first + i as u64;
                    let generation = self.gens[base + i];
                    if generation == 0 {
                        continue;
                    }
                    if let Some(b) = buf.get_mut(skip + i * bl..skip + (i + 1) * bl) {
                        let header = Header {
                            run_id: self.v.run_id,
                            file_id: io.file,
                            block_len: bl as u32,
                            offset: block * bl as u64,
                            generation,
                            time_unix_ns,
                        };
                        header.stamp(b);
                    }
                }
                if let Some(w) = self.last_write.get_mut(io.slot as usize) {
                    *w = (io.file, io.offset, io.len);
                }
                self.stamped += n as u64;
                self.stamp_ns += now_ns() - t;
            }
            Op::Read => {
                for i in 0..n {
                    self.reads[base + i] = match states.try_begin_read(io.file, first + i as u64) {
                        Ok(snap) => ReadBlock { snap },
                        Err(()) => {
                            self.release(io, i);
                            return false;
                        }
                    };
                }
            }
            _ => {}
        }
        true
    }

    /// Undoes what [`Self::issue`] reserved for the first `upto` blocks of `io` (all of
    /// them: `usize::MAX`) when it is not submitted after all (the engine refused it).
    pub fn release(&mut self, io: &Io, upto: usize) {
        let (first, n) = self.blocks(io);
        let base = io.slot as usize * self.per_slot;
        let states = &*self.v.states;
        for i in 0..n.min(upto) {
            match io.op {
                Op::Write if self.gens[base + i] != 0 => states.cancel_write(io.file, first + i as u64),
                Op::Read if self.reads[base + i].snap.is_some() => states.end_read(io.file, first + i as u64),
                _ => {}
            }
            self.gens[base + i] = 0;
            self.reads[base + i] = ReadBlock::default();
        }
    }

    /// At completion (`result`: bytes or a negative error): a write's blocks move their
    /// floors; a sync after it (or an O_DSYNC write) makes them durable; a read's blocks
    /// are checked and counted in op `verify` of `slot`.
    pub fn complete(&mut self, io: &Io, result: i64, buf: &[u8], slot: &Slot, done_ns: u64) {
        match io.op {
            Op::Write => {
                let ok = result == i64::from(io.len);
                let (first, n) = self.blocks(io);
                let base = io.slot as usize * self.per_slot;
                let states = &*self.v.states;
                for i in 0..n {
                    if self.gens[base + i] == 0 {
                        continue;
                    }
                    let block = first + i as u64;
                    if let Some(floor) = states.end_write(io.file, block, ok) {
                        if let Some(sink) = &self.v.sink {
                            sink.floor(io.file, block, floor);
                        }
                    }
                }
                if ok && self.dsync {
                    self.durable(io.slot, io.file, first, n);
                }
            }
            Op::Fsync | Op::Fdatasync if result >= 0 => {
                if let Some(&(file, offset, len)) = self.last_write.get(io.slot as usize) {
                    let (first, n) = self.blocks(&Io { offset, len, ..*io });
                    self.durable(io.slot, file, first, n);
                }
            }
            Op::Read => {
                if result >= 0 {
                    self.check_read(io, result as usize, buf, slot, done_ns);
                }
                self.release(io, usize::MAX);
            }
            _ => {}
        }
    }

    /// The blocks of a slot's last write are durable: their durable floors move, and the
    /// journal keeps them before the durability point counts as done.
    fn durable(&mut self, slot: u32, file: u32, first: u64, n: usize) {
        let base = slot as usize * self.per_slot;
        let states = &*self.v.states;
        let mut moved = false;
        for i in 0..n {
            let g = self.gens[base + i];
            if g == 0 {
                continue;
            }
            if let Some(d) = states.made_durable(file, first + i as u64, g) {
                moved = true;
                if let Some(sink) = &self.v.sink {
                    sink.durable(file, first + i as u64, d);
                }
            }
        }
        if let (true, Some(sink)) = (moved, &self.v.sink) {
            sink.barrier();
        }
    }

    fn check_read(&mut self, io: &Io, got: usize, buf: &[u8], slot: &Slot, done_ns: u64) {
        let t = now_ns();
        let (first, n) = self.blocks(io);
        let base = io.slot as usize * self.per_slot;
        let bl = self.block_len;
        let skip = (first * bl as u64 - io.offset) as usize;
        let rec = slot.op(Op::Verify as usize);
        let states = &*self.v.states;
        let mut checked = 0u64;
        for i in 0..n {
            let r = self.reads[base + i];
            let Some(snap) = r.snap else { continue };
            let block = first + i as u64;
            if !snap.tracked {
                rec.record_skip();
                continue;
            }
            let max_generation = states.issued(io.file, block);
            let expect = Expect {
                run_id: self.v.run_id,
                file_id: io.file,
                offset: block * bl as u64,
                block_len: bl as u32,
                min_generation: snap.floor,
                max_generation,
                has_header: snap.has_header,
            };
            let outcome = match buf.get(skip + i * bl..skip + (i + 1) * bl) {
                Some(b) if skip + (i + 1) * bl <= got => check(b, &expect),
                // Missing from a short read: past the end of the file.
                _ if snap.has_header => {
                    Outcome::Mismatch(Mismatch { kind: Kind::Truncated, found: None, bad_segments: None })
                }
                _ => Outcome::Unverified,
            };
            match outcome {
                Outcome::Verified(_) => checked += 1,
                Outcome::Unverified => rec.record_skip(),
                // The same bad block read again: one mismatch, however often it is read.
                Outcome::Mismatch(_) if !states.mark_bad(io.file, block) => {
                    self.v.bad_rereads.fetch_add(1, Relaxed);
                }
                Outcome::Mismatch(m) => {
                    rec.record_error(errors::verify_kind(m.kind));
                    self.v.found(MismatchRecord {
                        done_ns,
                        file: io.file,
                        offset: block * bl as u64,
                        kind: m.kind,
                        expected_min_generation: snap.floor,
                        expected_max_generation: max_generation,
                        found: m.found,
                        bad_segments: m.bad_segments,
                    });
                }
            }
        }
        if let Some(per_block) = (now_ns() - t).checked_div(checked) {
            for i in 0..checked {
                rec.record(per_block, per_block, bl as u64, (first + i) * bl as u64);
            }
        }
    }

    /// Adds this worker's stamping cost to the run's.
    pub fn finish(&mut self) {
        self.v.stamped_blocks.fetch_add(std::mem::take(&mut self.stamped), Relaxed);
        self.v.stamp_ns.fetch_add(std::mem::take(&mut self.stamp_ns), Relaxed);
    }
}

fn unix_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// What the run's verification found, as the results file keeps it (seconds from `t0_ns`;
/// `path_of` names a file by its id).
pub fn rows(
    v: &Verifier,
    host: &str,
    path_of: &dyn Fn(u32) -> String,
    t0_ns: u64,
) -> (ioscope_store::VerifyRun, Vec<ioscope_store::MismatchRow>) {
    let (stamped_blocks, stamp_ns) = v.stamped();
    let run = ioscope_store::VerifyRun {
        host: host.to_string(),
        run_id: format!("{:016x}", v.run_id),
        block_len: v.block_len,
        stamped_blocks,
        stamp_ns,
        mismatches: v.mismatch_total(),
    };
    let rows = v
        .mismatches()
        .into_iter()
        .map(|m| ioscope_store::MismatchRow {
            host: host.to_string(),
            second: (m.done_ns.saturating_sub(t0_ns) / 1_000_000_000).min(u64::from(u32::MAX)) as u32,
            file: m.file,
            path: path_of(m.file),
            offset: m.offset,
            kind: m.kind.name().to_string(),
            expected_generation: match (m.expected_min_generation, m.expected_max_generation) {
                (a, b) if a >= b => a.to_string(),
                (a, b) => format!("{a}..{b}"),
            },
            found_header_json: m.found.map(|h| found_json(&h, v.run_id, &m).to_string()),
        })
        .collect();
    (run, rows)
}

/// The header found in a bad block, as the results file keeps it: [`header_json`], and for
/// a checksum that fails, where in the block the first changed byte lies.
fn found_json(h: &Header, run_id: u64, m: &MismatchRecord) -> serde_json::Value {
    let mut j = header_json(h, run_id);
    if matches!(m.kind, Kind::Checksum | Kind::Torn) {
        j["checksum_ok"] = false.into();
        let mm = Mismatch { kind: m.kind, found: m.found, bad_segments: m.bad_segments };
        if let (Some(mask), Some((from, to))) = (m.bad_segments, mm.first_bad_bytes(h.block_len)) {
            j["first_changed_byte_in"] = serde_json::json!([from, to]);
            j["changed_segments"] = (0..8).filter(|k| mask & 1 << k != 0).collect::<Vec<u32>>().into();
            j["segment_bytes"] = ioscope_verify::header::segment_len(h.block_len as usize).into();
        }
    }
    j
}

/// A header as JSON; `this_run` tells whether it is this run's.
pub fn header_json(h: &Header, run_id: u64) -> serde_json::Value {
    serde_json::json!({
        "run_id": format!("{:016x}", h.run_id),
        "this_run": h.run_id == run_id,
        "file": h.file_id,
        "offset": h.offset,
        "block_len": h.block_len,
        "generation": h.generation,
        "time_unix_ns": h.time_unix_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ioscope_metrics::{WorkerReader, WorkerRecorder};

    const BL: usize = 4096;

    fn io(op: Op, slot: u32) -> Io {
        Io { op, file: 0, offset: 2 * BL as u64, len: BL as u32, slot }
    }

    /// (verified, mismatches, unverified) recorded so far.
    fn counts(rec: &WorkerRecorder) -> (u64, u64, u64) {
        let t = &WorkerReader::new(ioscope_engine::OP_KINDS).take(rec)[Op::Verify as usize];
        (t.counts.ops, t.counts.errors, t.skipped)
    }

    #[test]
    fn a_dataset_verifier_covers_each_working_file_at_its_size_and_a_replaced_file_is_untracked() {
        let p = crate::test_plan(
            "engine = 'posix'\nverify = 'fail'\n[dataset]\ndir = '/nonexistent'\ndepth = 1\nwidth = 1\nfiles = 3\n\
             sizes = [{size = '8k', weight = 1}, {size = '16k', weight = 1}]\n[[workload]]\nrw = 'randrw'\nbs = '4k'\n",
        );
        let layout = crate::dataset::Layout::new(p.dataset.as_ref().unwrap());
        let laid_out = LaidOut { run_id: 7, files: (0..3).collect() };
        let v = Verifier::for_dataset(&p, &layout, Some(&laid_out));
        assert_eq!(v.run_id, 7, "the run id preparation stamped");
        for f in 0..3u32 {
            assert_eq!(v.states.blocks_of(f), layout.file_size(u64::from(f)) / BL as u64, "file {f}");
            assert!(v.states.snapshot(f, 0).unwrap().has_header, "laid out with headers: file {f}");
        }
        assert!(memory_check(&p, 0).is_ok());
        let before = *v.hold(1).unwrap();
        drop(v.replacing(&[1]));
        assert_eq!(*v.hold(1).unwrap(), before + 1, "handles opened before are stale");
        let snap = v.states.snapshot(1, 0).unwrap();
        assert!(!snap.tracked && !snap.has_header, "untracked until written: {snap:?}");
        assert!(v.states.snapshot(0, 0).unwrap().tracked, "other files keep their state");
        // Without laid-out files (a reused tree), nothing is checked before it is written.
        let reused = Verifier::for_dataset(&p, &layout, None);
        assert!(!reused.states.snapshot(2, 0).unwrap().tracked);
    }

    #[test]
    fn a_read_and_a_write_of_one_block_are_never_in_flight_together_so_no_read_is_left_unverified() {
        let v = Verifier::new(BlockStates::new(&[8 * BL as u64], BL as u32), 42, false);
        let rec = WorkerRecorder::with_ops(ioscope_engine::OP_KINDS, &[Op::Verify as usize]);
        rec.start(0, u64::MAX);
        let slot = &*rec.at(0);
        let mut w = WorkerVerify::new(&v, 4, 2 * BL);
        let (mut a, mut b) = (vec![0x11u8; BL], vec![0x22u8; BL]);
        assert!(w.issue(&io(Op::Write, 0), &mut a));
        // While write a is in flight, neither a read nor a second write of block 2 is
        // issued (what a read then returns may be half of each: unverifiable).
        let mut buf = vec![0u8; 2 * BL];
        let two = Io { offset: BL as u64, len: 2 * BL as u32, ..io(Op::Read, 2) };
        assert!(!w.issue(&two, &mut buf), "blocks 1 and 2: block 2 is being written");
        assert!(!w.issue(&io(Op::Write, 1), &mut b));
        assert!(w.issue(&Io { offset: BL as u64, ..io(Op::Read, 3) }, &mut buf), "block 1 alone is free");
        w.complete(&Io { offset: BL as u64, ..io(Op::Read, 3) }, BL as i64, &vec![7u8; BL], slot, 1);
        w.complete(&io(Op::Write, 0), BL as i64, &a, slot, 2);
        // Now the read goes, and a write waits for it.
        assert!(w.issue(&two, &mut buf));
        assert!(!w.issue(&io(Op::Write, 1), &mut b), "a write waits for the read of its block");
        let mut got = vec![7u8; BL];
        got.extend_from_slice(&a);
        w.complete(&two, 2 * BL as i64, &got, slot, 3);
        assert!(w.issue(&io(Op::Write, 1), &mut b));
        // The engine refused it: nothing of it remains, the block is free again.
        w.release(&io(Op::Write, 1), usize::MAX);
        assert_eq!((v.states.issued(0, 2), v.states.in_flight(0, 2)), (1, false));
        let mut again = vec![0u8; BL];
        assert!(w.issue(&io(Op::Read, 2), &mut again));
        w.complete(&io(Op::Read, 2), BL as i64, &a, slot, 4);
        assert_eq!(counts(&rec), (2, 0, 2), "block 2 verified twice; block 1 (never written) unverified twice");
        assert_eq!(v.mismatch_total(), 0);
        // A later write sets the floor: the older data is stale now.
        let mut c = vec![0x33u8; BL];
        assert!(w.issue(&io(Op::Write, 0), &mut c));
        w.complete(&io(Op::Write, 0), BL as i64, &c, slot, 5);
        assert!(w.issue(&io(Op::Read, 3), &mut again));
        w.complete(&io(Op::Read, 3), BL as i64, &a, slot, 6);
        assert_eq!((v.mismatches()[0].kind, v.mismatches()[0].offset), (Kind::Stale, 2 * BL as u64));
    }

    #[test]
    fn one_bad_block_read_three_times_is_one_mismatch() {
        let v = Verifier::new(BlockStates::new(&[8 * BL as u64], BL as u32), 42, false);
        let rec = WorkerRecorder::with_ops(ioscope_engine::OP_KINDS, &[Op::Verify as usize]);
        rec.start(0, u64::MAX);
        let slot = &*rec.at(0);
        let mut w = WorkerVerify::new(&v, 4, BL);
        let mut a = vec![0x11u8; BL];
        assert!(w.issue(&io(Op::Write, 0), &mut a));
        w.complete(&io(Op::Write, 0), BL as i64, &a, slot, 1);
        let mut bad = a.clone();
        bad[3000] ^= 1;
        for t in 0..3 {
            let mut buf = vec![0u8; BL];
            assert!(w.issue(&io(Op::Read, 1), &mut buf));
            w.complete(&io(Op::Read, 1), BL as i64, &bad, slot, 2 + t);
        }
        assert_eq!((v.mismatch_total(), v.bad_rereads(), counts(&rec)), (1, 2, (0, 1, 0)));
        let m = &v.mismatches()[..];
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].kind, m[0].bad_segments), (Kind::Checksum, Some(1 << 5)), "byte 3000 is in 2560..3072");
        let (run, rows) = rows(&v, "h", &|_| "f".into(), 0);
        assert_eq!(run.mismatches, 1);
        let found: serde_json::Value = serde_json::from_str(rows[0].found_header_json.as_deref().unwrap()).unwrap();
        assert_eq!(found["checksum_ok"], false, "{found}");
        assert_eq!(found["first_changed_byte_in"], serde_json::json!([2560, 3072]), "{found}");
        assert_eq!(found["generation"], 1, "{found}");
    }

    #[test]
    fn a_block_missing_from_a_short_read_is_truncated_and_one_without_its_header_is_header_destroyed() {
        let p = crate::test_plan(
            "engine = 'posix'\ndir = '/nonexistent'\nverify = 'fail'\nrw = 'randread'\nbs = '4k'\nsize = '32k'\n",
        );
        let v = Verifier::for_plan(&p, 1, Some(&LaidOut { run_id: 9, files: vec![0] }));
        let rec = WorkerRecorder::with_ops(ioscope_engine::OP_KINDS, &[Op::Verify as usize]);
        rec.start(0, u64::MAX);
        let slot = &*rec.at(0);
        let mut w = WorkerVerify::new(&v, 4, 2 * BL);
        let mut laid = vec![0x42u8; 2 * BL];
        stamp_laid_out(&mut laid, 1234, 0, BL as u32, 2 * BL as u64);
        laid[BL..BL + 4].copy_from_slice(b"\xde\xad\xbe\xef");
        let two = Io { len: 2 * BL as u32, ..io(Op::Read, 0) };
        let mut buf = vec![0u8; 2 * BL];
        assert!(w.issue(&two, &mut buf));
        w.complete(&two, 2 * BL as i64, &laid, slot, 1);
        assert_eq!(counts(&rec), (1, 1, 0), "block 2 (an earlier run's header) verified, block 3 not");
        assert_eq!((v.mismatches()[0].kind, v.mismatches()[0].offset), (Kind::HeaderDestroyed, 3 * BL as u64));
        let later = Io { offset: 4 * BL as u64, ..io(Op::Read, 1) };
        assert!(w.issue(&later, &mut buf));
        w.complete(&later, 0, &buf, slot, 2);
        assert_eq!((v.mismatches()[1].kind, v.mismatches()[1].offset), (Kind::Truncated, 4 * BL as u64));
    }
}
