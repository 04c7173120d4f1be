//! Dataset workloads (vdbench fwd on an fsd): each scheduled operation picks a file or
//! directory of the tree and acts on it through the engine. Reads and writes open a file,
//! transfer it (`fileio` sequential: start to end; random: as many random blocks as it
//! holds) and close it; `open` and `close` are recorded as their own operations around
//! the transfers. The core times everything, as in the flat loops.
//!
//! Which files exist is shared by all workers (one state byte per file and per leaf
//! directory), and a worker claims a file before it creates, deletes, copies or moves
//! it, so two workers never race for the same name.

use crate::clock::{now_ns, wait_until};
use crate::dataset::Layout;
use crate::worker::{Schedule, Worker};
use ioscope_engine::buffers::wyrand;
use ioscope_engine::{Engine, FileReq, Io, Op};
use ioscope_metrics::breakdown::NO_FILE;
use ioscope_workload::{FileIo, FileSelect, Operation, Workload};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

pub(crate) const ABSENT: u8 = 0;
pub(crate) const PRESENT: u8 = 1;
/// Claimed by a worker for a create, delete, copy or move in progress.
const BUSY: u8 = 2;
/// Picks tried before an operation gives up for want of a file in the right state.
const PICK_TRIES: u32 = 64;
/// A worker whose picks find nothing waits before trying again, from this long...
const MIN_BACKOFF_NS: u64 = 100_000;
/// ...doubling up to this, until a pick succeeds: no spinning on an exhausted tree.
const MAX_BACKOFF_NS: u64 = 10_000_000;

/// The tree and the state of its files and leaf directories, shared by all workers.
///
/// A flow's file sets (`[[fileset]]`) are trees of their own in directories of the
/// dataset's anchor; their files follow the dataset's in one numbering (set `k`'s file `j`
/// is file `bases[k] + j`), so every per-file state, size and breakdown row covers them.
pub struct Tree {
    pub layout: Layout,
    /// The file sets, and where the numbers of each one's files begin.
    sets: Vec<(Layout, u64)>,
    pub(crate) files: Vec<AtomicU8>,
    dirs: Vec<AtomicU8>,
    /// Each file's size as the run's flows left it (flows only; empty otherwise): a flow
    /// reads a whole file as long as it is now, and appends at its end.
    pub(crate) sizes: Vec<AtomicU64>,
    /// The flows' waits and posts.
    pub(crate) sems: crate::flow::Semaphores,
}

impl Tree {
    /// A freshly prepared tree: every directory and every preallocated file exists.
    pub fn new(layout: Layout) -> Self {
        Self::with_sizes(layout, false)
    }

    /// [`Tree::new`], keeping each file's size when `flows` (a run with a flow workload).
    pub fn with_sizes(layout: Layout, flows: bool) -> Self {
        Self::with_sets(layout, Vec::new(), flows)
    }

    /// [`Tree::with_sizes`] with the flows' file sets, each freshly prepared too.
    pub fn with_sets(layout: Layout, set_layouts: Vec<Layout>, flows: bool) -> Self {
        let mut sets = Vec::with_capacity(set_layouts.len());
        let mut next = layout.files();
        for l in set_layouts {
            let n = l.files();
            sets.push((l, next));
            next = next.saturating_add(n);
        }
        let mut tree =
            Self { layout, sets, files: Vec::new(), dirs: Vec::new(), sizes: Vec::new(), sems: Default::default() };
        let present: Vec<bool> = (0..next).map(|i| tree.preallocated(i)).collect();
        tree.files = present.iter().map(|p| AtomicU8::new(if *p { PRESENT } else { ABSENT })).collect();
        tree.dirs = (0..tree.layout.leaf_dirs()).map(|_| AtomicU8::new(PRESENT)).collect();
        if flows {
            let size = |i: u64| if present[i as usize] { tree.file_size(i) } else { 0 };
            tree.sizes = (0..next).map(|i| AtomicU64::new(size(i))).collect();
        }
        tree
    }

    /// With the flows' waits and posts.
    pub fn with_semaphores(self, sems: crate::flow::Semaphores) -> Self {
        Self { sems, ..self }
    }

    /// The layout file `i` is in, and its number there.
    fn part(&self, i: u64) -> (&Layout, u64) {
        match self.sets.iter().rev().find(|(_, base)| i >= *base) {
            Some((l, base)) => (l, i - base),
            None => (&self.layout, i),
        }
    }
    /// File `i`'s path (of the dataset or of a file set).
    pub fn file_path(&self, i: u64) -> std::path::PathBuf {
        let (l, j) = self.part(i);
        l.file_path(j)
    }
    /// File `i`'s size as prepared.
    pub fn file_size(&self, i: u64) -> u64 {
        let (l, j) = self.part(i);
        l.file_size(j)
    }
    fn preallocated(&self, i: u64) -> bool {
        let (l, j) = self.part(i);
        l.preallocated(j)
    }
    /// The set a flow step names: 0 for the dataset's `name`, k for the k-th file set.
    pub(crate) fn set_index(&self, name: &str) -> Option<usize> {
        let named = |l: &Layout| l.spec().name.as_deref() == Some(name);
        match named(&self.layout) {
            true => Some(0),
            false => self.sets.iter().position(|(l, _)| named(l)).map(|k| k + 1),
        }
    }
    /// How many sets: the dataset and its file sets.
    pub(crate) fn set_count(&self) -> usize {
        1 + self.sets.len()
    }
    /// Set `k`'s files a workload uses (the first of them, up to its working set), and
    /// the number of the first; k = 0 is the dataset, k = 1.. the file sets in order.
    pub(crate) fn range_of(&self, k: usize) -> (u64, u64) {
        match k.checked_sub(1).and_then(|s| self.sets.get(s)) {
            Some((l, base)) => (*base, l.working_files().max(1)),
            None => (0, self.layout.working_files().max(1)),
        }
    }
    /// Claims a file in state `from` (to BUSY); false if another worker got there first.
    pub(crate) fn claim(&self, i: u64, from: u8) -> bool {
        self.files[i as usize].compare_exchange(from, BUSY, Relaxed, Relaxed).is_ok()
    }
    pub(crate) fn set(&self, i: u64, state: u8) {
        self.files[i as usize].store(state, Relaxed);
    }
}

/// One worker's position in a dataset workload.
pub struct TreeTask {
    pub(crate) eff: Workload,
    rng: u64,
    /// Files the workload uses (the working set: files `base..base + files`), and the
    /// sequential cursor.
    base: u64,
    files: u64,
    cursor: u64,
    /// The file being transferred: (index, size, next offset, transfers left).
    open: Option<(u64, u64, u64, u64)>,
    /// The open file's verification epoch when it was opened (see
    /// [`crate::verify::Verifier::epoch`]; 0 without verification).
    open_epoch: u32,
    total_weight: u64,
    /// How long to wait after the next pick that finds nothing (0: none failed lately).
    backoff_ns: u64,
    /// The end of the current schedule (backing off never goes past it).
    pub(crate) deadline_ns: u64,
}

impl TreeTask {
    pub fn new(tree: &Tree, eff: Workload, local: u32, seed: u64) -> Self {
        Self::in_set(tree, 0, eff, local, seed)
    }

    /// A task picking files of set `k` (0: the dataset; see [`Tree::range_of`]).
    pub fn in_set(tree: &Tree, k: usize, eff: Workload, local: u32, seed: u64) -> Self {
        let (base, files) = tree.range_of(k);
        let cursor = files / eff.threads.max(1) as u64 * local as u64;
        let total_weight = eff.block_sizes.iter().map(|b| b.weight as u64).sum::<u64>().max(1);
        Self {
            eff,
            rng: seed,
            base,
            files,
            cursor,
            open: None,
            open_epoch: 0,
            total_weight,
            backoff_ns: 0,
            deadline_ns: u64::MAX,
        }
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((wyrand(&mut self.rng) as u128 * n as u128) >> 64) as u64
    }

    /// A file index by `fileselect`.
    fn select(&mut self) -> u64 {
        self.base + self.select_in_set()
    }

    fn select_in_set(&mut self) -> u64 {
        match self.eff.fileselect {
            FileSelect::Random => self.below(self.files),
            FileSelect::Sequential => {
                self.cursor = (self.cursor + 1) % self.files;
                self.cursor
            }
            FileSelect::Zipf(theta) => {
                // Inverse of the continuous Zipf CDF over 1..=n: file 0 is the hottest.
                let u = (wyrand(&mut self.rng) >> 11) as f64 / (1u64 << 53) as f64;
                let n = self.files as f64;
                let x = if (theta - 1.0).abs() < 1e-9 {
                    n.powf(u)
                } else {
                    let a = 1.0 - theta;
                    ((n.powf(a) - 1.0) * u + 1.0).powf(1.0 / a)
                };
                (x as u64).clamp(1, self.files) - 1
            }
        }
    }

    /// A file in state `want`; claimed (BUSY) when `claim`. None after [`PICK_TRIES`].
    pub(crate) fn pick(&mut self, tree: &Tree, want: u8, claim: bool) -> Option<u64> {
        for _ in 0..PICK_TRIES {
            let i = self.select();
            if claim {
                if tree.claim(i, want) {
                    self.backoff_ns = 0;
                    return Some(i);
                }
            } else if tree.files[i as usize].load(Relaxed) == want {
                self.backoff_ns = 0;
                return Some(i);
            }
        }
        None
    }

    /// A leaf directory for mkdir (absent) or rmdir (present, with none of its files).
    fn pick_dir(&mut self, tree: &Tree, want: u8) -> Option<u64> {
        let leaves = tree.layout.leaf_dirs();
        for _ in 0..PICK_TRIES {
            let d = self.below(leaves);
            let empty = || tree.layout.files_in_leaf(d).all(|i| tree.files[i as usize].load(Relaxed) == ABSENT);
            if tree.dirs[d as usize].load(Relaxed) == want
                && (want == ABSENT || empty())
                && tree.dirs[d as usize].compare_exchange(want, BUSY, Relaxed, Relaxed).is_ok()
            {
                self.backoff_ns = 0;
                return Some(d);
            }
        }
        None
    }

    fn transfer_len(&mut self) -> u32 {
        if self.eff.block_sizes.len() == 1 {
            return self.eff.block_sizes[0].bytes as u32;
        }
        let mut w = self.below(self.total_weight);
        for b in &self.eff.block_sizes {
            if w < b.weight as u64 {
                return b.bytes as u32;
            }
            w -= b.weight as u64;
        }
        self.eff.block_sizes[0].bytes as u32
    }
}

impl<'a, E: Engine> Worker<'a, E> {
    /// Runs a dataset workload until the deadline (or stop), one operation at a time.
    pub fn run_tree(&mut self, tree: &Tree, task: &mut TreeTask, s: &Schedule) {
        let mut next_intended = s.start_ns + s.phase_ns;
        let mut t = if s.interval_ns.is_some() { wait_until(next_intended, self.stop) } else { now_ns() };
        task.deadline_ns = s.deadline_ns;
        while t < s.deadline_ns && !self.stop.load(Relaxed) && self.engine.lost().is_none() {
            let Some(intended) = self.pace(s, &mut next_intended, &mut t) else { break };
            t = self.tree_op(tree, task, intended);
        }
        if let Some((i, ..)) = task.open.take() {
            self.file_op(Op::Close, &FileReq { op: Op::Close, ..req(tree.layout.anchor()) }, now_ns(), file_no(i));
        }
    }

    /// Performs and records one path operation on file `file` of the tree (its number, for
    /// the per-file breakdown; [`NO_FILE`] for a directory); returns its result and
    /// completion time.
    pub(crate) fn file_op(&mut self, op: Op, r: &FileReq<'_>, intended: u64, file: u32) -> (i64, u64) {
        let issue = now_ns();
        let result = self.engine.file_op(r, &mut self.buffers);
        let done = now_ns();
        let io = Io { op, file, offset: 0, len: 0, slot: 0 };
        self.record(&io, result, done, done - intended, done - issue);
        (result, done)
    }

    /// The run's verifier (None: verification off).
    fn verifier(&self) -> Option<&'a crate::verify::Verifier> {
        self.verify.as_ref().map(|v| v.verifier())
    }

    /// Verification: tree files about to be replaced whole, held until the guards drop
    /// (see [`crate::verify::Verifier::replacing`]).
    fn verify_replacing(&self, files: &[u64]) -> Vec<std::sync::RwLockWriteGuard<'a, u32>> {
        let Some(v) = self.verifier() else { return Vec::new() };
        let ids: Vec<u32> = files.iter().filter_map(|i| u32::try_from(*i).ok()).collect();
        v.replacing(&ids)
    }

    /// No file was in the state the operation needs (every pick failed): that is no I/O
    /// and no error, so it is counted apart as a skip; then the worker backs off (longer
    /// each time in a row) rather than spin on a tree that has nothing for it.
    pub(crate) fn no_target(&mut self, op: Op, task: &mut TreeTask) -> u64 {
        self.failures += 1;
        self.recorder.at(now_ns()).op(op as usize).record_skip();
        task.backoff_ns = (task.backoff_ns * 2).clamp(MIN_BACKOFF_NS, MAX_BACKOFF_NS);
        wait_until(now_ns().saturating_add(task.backoff_ns).min(task.deadline_ns), self.stop)
    }

    fn tree_op(&mut self, tree: &Tree, task: &mut TreeTask, intended: u64) -> u64 {
        let layout = &tree.layout;
        match task.eff.operation {
            Operation::Read | Operation::Write => self.transfer(tree, task, intended),
            Operation::Create => {
                let Some(i) = task.pick(tree, ABSENT, true) else { return self.no_target(Op::Create, task) };
                let path = layout.file_path(i);
                let held = self.verify_replacing(&[i]);
                let (r, t) = self.file_op(
                    Op::Create,
                    &FileReq { op: Op::Create, size: layout.file_size(i), ..req(&path) },
                    intended,
                    file_no(i),
                );
                drop(held);
                tree.set(i, if r >= 0 { PRESENT } else { ABSENT });
                t
            }
            Operation::Delete => {
                let Some(i) = task.pick(tree, PRESENT, true) else { return self.no_target(Op::Delete, task) };
                let path = layout.file_path(i);
                let held = self.verify_replacing(&[i]);
                let (r, t) = self.file_op(Op::Delete, &FileReq { op: Op::Delete, ..req(&path) }, intended, file_no(i));
                drop(held);
                tree.set(i, if r >= 0 { ABSENT } else { PRESENT });
                t
            }
            Operation::Mkdir | Operation::Rmdir => {
                let (op, want, after) = match task.eff.operation {
                    Operation::Mkdir => (Op::Mkdir, ABSENT, PRESENT),
                    _ => (Op::Rmdir, PRESENT, ABSENT),
                };
                let Some(d) = task.pick_dir(tree, want) else { return self.no_target(op, task) };
                let path = layout.leaf_path(d);
                let (r, t) = self.file_op(op, &FileReq { op, ..req(&path) }, intended, NO_FILE);
                tree.dirs[d as usize].store(if r >= 0 { after } else { want }, Relaxed);
                t
            }
            Operation::Open | Operation::Close => {
                let Some(i) = task.pick(tree, PRESENT, false) else { return self.no_target(Op::Open, task) };
                let path = layout.file_path(i);
                let (r, t) = self.file_op(Op::Open, &FileReq { op: Op::Open, ..req(&path) }, intended, file_no(i));
                if r < 0 {
                    return t;
                }
                self.file_op(Op::Close, &FileReq { op: Op::Close, ..req(&path) }, t, file_no(i)).1
            }
            Operation::List => {
                // Any leaf directory, whatever its state: listing an empty or missing one
                // is a listing too (the server says which).
                let d = task.below(tree.layout.leaf_dirs().max(1));
                let path = layout.leaf_path(d);
                self.file_op(Op::List, &FileReq { op: Op::List, ..req(&path) }, intended, NO_FILE).1
            }
            Operation::Getattr | Operation::Setattr => {
                let op = if task.eff.operation == Operation::Getattr { Op::Getattr } else { Op::Setattr };
                let Some(i) = task.pick(tree, PRESENT, false) else { return self.no_target(op, task) };
                let path = layout.file_path(i);
                self.file_op(op, &FileReq { op, ..req(&path) }, intended, file_no(i)).1
            }
            Operation::Copy | Operation::Move => {
                let op = if task.eff.operation == Operation::Copy { Op::Copy } else { Op::Move };
                let Some(src) = task.pick(tree, PRESENT, true) else { return self.no_target(op, task) };
                let Some(dst) = task.pick(tree, ABSENT, true) else {
                    tree.set(src, PRESENT);
                    return self.no_target(op, task);
                };
                let (from, to) = (layout.file_path(src), layout.file_path(dst));
                // The destination gets another file's content (its headers name the source);
                // a move takes the source away.
                // The destination gets another file's content (its headers name the source);
                // a move takes the source away.
                let held = match op {
                    Op::Move => self.verify_replacing(&[src, dst]),
                    _ => self.verify_replacing(&[dst]),
                };
                // Counted on the source file.
                let (r, t) = self.file_op(op, &FileReq { op, to: Some(&to), ..req(&from) }, intended, file_no(src));
                drop(held);
                let ok = r >= 0;
                tree.set(src, if ok && op == Op::Move { ABSENT } else { PRESENT });
                tree.set(dst, if ok { PRESENT } else { ABSENT });
                t
            }
        }
    }

    /// One read or write of the open file, opening the next file first when needed.
    fn transfer(&mut self, tree: &Tree, task: &mut TreeTask, intended: u64) -> u64 {
        let write = task.eff.read_pct < 100;
        // Verification: the file is held through its open and each transfer (no whole-file
        // operation replaces it meanwhile), and a handle of a file replaced since it was
        // opened (deleted, or moved away: it may name the file now under another name) is
        // closed, and a file picked again.
        let v = self.verifier();
        let mut held = None;
        if let (Some((i, ..)), Some(v)) = (task.open, v) {
            let g = u32::try_from(i).ok().and_then(|f| v.hold(f));
            if g.as_deref().is_some_and(|e| *e != task.open_epoch) {
                drop(g);
                task.open = None;
                let path = tree.layout.file_path(i);
                self.file_op(Op::Close, &FileReq { op: Op::Close, ..req(&path) }, intended, file_no(i));
            } else {
                held = g;
            }
        }
        if task.open.is_none() {
            let Some(i) = task.pick(tree, PRESENT, false) else { return self.no_target(Op::Open, task) };
            let path = tree.layout.file_path(i);
            held = v.and_then(|v| u32::try_from(i).ok().and_then(|f| v.hold(f)));
            task.open_epoch = held.as_deref().copied().unwrap_or(0);
            let size = tree.layout.file_size(i);
            let (r, done) =
                self.file_op(Op::Open, &FileReq { op: Op::Open, write, size, ..req(&path) }, intended, file_no(i));
            if r < 0 {
                return done;
            }
            let block = task.eff.block_sizes.iter().map(|b| b.bytes).min().unwrap_or(1).max(1);
            task.open = Some((i, size, 0, size.div_ceil(block).max(1)));
        }
        let (i, size, offset, left) = task.open.expect("a file is open");
        // Never past the end of the file: a sequential pass ends with what is left of it.
        let room = match task.eff.fileio {
            FileIo::Sequential => size.saturating_sub(offset),
            FileIo::Random => size,
        };
        let len = (task.transfer_len() as u64).min(room.max(1)) as u32;
        let op = if task.eff.read_pct == 100 || (task.eff.read_pct > 0 && task.below(100) < task.eff.read_pct as u64) {
            Op::Read
        } else {
            Op::Write
        };
        let at = match task.eff.fileio {
            FileIo::Sequential => offset,
            FileIo::Random => task.below(size.saturating_sub(len as u64) / len.max(1) as u64 + 1) * len as u64,
        };
        // The engine's file is its one open file (0); the breakdown's is the tree's number.
        self.tree_file = Some(file_no(i));
        let (result, done) = self.submit_sync(&Io { op, file: 0, offset: at, len, slot: 0 }, intended);
        self.tree_file = None;
        drop(held);
        let next = at + len as u64;
        let finished = left <= 1 || (task.eff.fileio == FileIo::Sequential && next >= size) || result < 0;
        if finished {
            task.open = None;
            let path = tree.layout.file_path(i);
            return self.file_op(Op::Close, &FileReq { op: Op::Close, ..req(&path) }, done, file_no(i)).1;
        }
        task.open = Some((i, size, next, left - 1));
        done
    }
}

/// A tree file's number for the per-file breakdown (trees beyond 2^32 - 1 files: the rest
/// are not broken down).
pub(crate) fn file_no(i: u64) -> u32 {
    u32::try_from(i).unwrap_or(NO_FILE)
}

/// A request for `path` with every other field at its default.
pub(crate) fn req(path: &std::path::Path) -> FileReq<'_> {
    FileReq { op: Op::Getattr, path, to: None, file: 0, write: false, size: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iogen::IoGen;
    use ioscope_engine::{IoBuffers, OpenSpec, Submission, Submitted};
    use ioscope_metrics::{WorkerReader, WorkerRecorder};
    use std::sync::atomic::AtomicBool;

    /// A file system that is full: every create fails with ENOSPC, the rest succeeds.
    struct Full;

    impl Engine for Full {
        fn name(&self) -> &'static str {
            "full"
        }
        fn submission(&self) -> Submission {
            Submission { queued: false, batched_submit: false }
        }
        fn open(&mut self, _: &OpenSpec, _: &IoBuffers) -> std::io::Result<()> {
            Ok(())
        }
        fn submit(&mut self, io: &Io, _: &mut IoBuffers) -> Submitted {
            Submitted::Done(io.len as i64)
        }
        fn file_op(&mut self, req: &FileReq<'_>, _: &mut IoBuffers) -> i64 {
            match req.op {
                Op::Create => -(libc::ENOSPC as i64),
                _ => 0,
            }
        }
    }

    /// Runs one create worker for 100 ms on a tree of 4 files, the first `absent` of them
    /// missing; returns what it recorded for create and its first error.
    fn create_on_full_disk(absent: u64) -> (ioscope_metrics::OpInterval, Vec<crate::worker::FirstError>) {
        crate::clock::init();
        let p = crate::test_plan(
            "engine = 'posix'\n[dataset]\ndir = '/nonexistent'\ndepth = 1\nwidth = 1\nfiles = 4\nsizes = '4k'\n\
             [[workload]]\noperation = 'create'\nthreads = 1\n",
        );
        let tree = Tree::new(crate::dataset::Layout::new(p.dataset.as_ref().unwrap()));
        (0..absent).for_each(|i| tree.set(i, ABSENT));
        let eff = crate::in_step(&p.workloads[0], &p.steps()[0]);
        let rec = WorkerRecorder::new(ioscope_engine::OP_KINDS);
        let stop = AtomicBool::new(false);
        let gen = IoGen::new(0, 0, &eff, 0, 1, 0);
        let mut w = Worker::new(Full, IoBuffers::new(1, 4096, 1), gen, &rec, &stop, p.sync, 1);
        let mut task = TreeTask::new(&tree, eff, 0, 7);
        let start = now_ns();
        w.run_tree(
            &tree,
            &mut task,
            &Schedule {
                start_ns: start,
                deadline_ns: start + 100_000_000,
                interval_ns: None,
                phase_ns: 0,
                arrivals: crate::access::Arrivals::uniform(),
            },
        );
        let got = WorkerReader::new(ioscope_engine::OP_KINDS).naming(crate::errors::kind_name).take(&rec);
        (got[Op::Create as usize].clone(), w.errors.0)
    }

    #[test]
    fn enospc_while_creating_shows_as_enospc_not_as_a_missing_file() {
        let (create, first) = create_on_full_disk(2);
        assert!(create.counts.errors > 0);
        assert_eq!(create.errors_by_kind, [("ENOSPC".to_string(), create.counts.errors)]);
        assert!(first[0].text.starts_with("ENOSPC: No space left"), "{first:?}");
    }

    #[test]
    fn a_pick_that_finds_no_file_is_a_skip_not_an_error_and_the_worker_backs_off() {
        // Every name is taken: nothing to create. Not one I/O, not one error, and no spinning
        // (with back-off, a handful of tries in 100 ms, where a spinning loop makes millions).
        let (create, first) = create_on_full_disk(0);
        assert_eq!(create.counts, ioscope_metrics::Counts::default());
        assert!(first.is_empty(), "{first:?}");
        assert!((1..=100).contains(&create.skipped), "{} skips", create.skipped);
    }
}
