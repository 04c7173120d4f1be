//! Flow workloads (Filebench's flowops): each thread runs its workload's steps in order,
//! over and over, on the files of the dataset tree, one operation at a time, closed loop.
//! Every step is recorded as the operation it performs, timed by the core from the moment
//! the step was due (the previous one's completion): `create` (the file created
//! exclusively, then opened for writing: one create, timed over both), `open`, `close`,
//! `delete`, `stat` (getattr), `fsync`, and each transfer of a read or write step as its
//! own read or write of the step's size (a whole-file read of 1 MiB in 64 KiB steps is 16
//! reads), as the server sees them.
//!
//! A file's size as the flows left it is kept in the shared [`Tree`] (a whole-file read
//! reads what is there now, an append writes at its end). A file is held by the thread
//! that has it open (or stats or deletes it) until it is done: no other thread opens or
//! deletes a file in use, so no operation fails for another's. When an open or create fails
//! or finds no file, the steps on that file are passed over, to the next step that opens
//! one or needs none: the failure itself is counted (an error by kind, or a skip).
//!
//! A step may name a file set (`in NAME`): an open, create, delete or stat picks its file
//! there; a transfer or fsync that names one works on a file of that set the thread opens
//! when it starts and keeps open to the end (one open and one close each, recorded), not
//! claimed, so threads share it as Filebench's do (webserver's log): appends to a shared
//! file each take their own range at its end. The engine's handles are a stack: the held
//! files are opened first, below the file the flow opens and closes.

use crate::clock::{now_ns, wait_until};
use crate::tree::{file_no, req, Tree, TreeTask, ABSENT, PRESENT};
use crate::worker::{Schedule, Worker};
use ioscope_engine::{Engine, FileReq, Io, Op};
use ioscope_workload::flow::SetName;
use ioscope_workload::{FlowOp, FlowStep, Plan, Workload};
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

/// A waiting thread's side of a name: posts that came and were not taken yet, and the
/// room blocking posts have left (Filebench's low and high water semaphores).
struct Waiter {
    posts: AtomicI64,
    room: AtomicI64,
}

/// The run's waits and posts, shared by all workers: for each name waited on, one
/// [`Waiter`] per thread whose flow waits on it.
#[derive(Default)]
pub struct Semaphores {
    names: Vec<Named>,
}

/// A name waited on: who waits (workload, thread), and each one's side.
type Named = (SetName, Vec<(usize, u32)>, Vec<Waiter>);

/// How often a blocked wait or post looks again.
const SEM_POLL: std::time::Duration = std::time::Duration::from_micros(50);

impl Semaphores {
    pub fn new(plan: &Plan) -> Self {
        let mut names: Vec<Named> = Vec::new();
        for (wi, (w, threads)) in plan.workloads.iter().zip(plan.max_threads()).enumerate() {
            for s in w.flow.iter().filter(|s| s.op == FlowOp::Wait) {
                let Some(name) = s.sem else { continue };
                let k = match names.iter().position(|(n, ..)| *n == name) {
                    Some(k) => k,
                    None => {
                        names.push((name, Vec::new(), Vec::new()));
                        names.len() - 1
                    }
                };
                if names[k].1.iter().any(|(i, _)| *i == wi) {
                    continue;
                }
                let room = if s.ahead > 0 { i64::from(s.ahead) } else { i64::MAX / 4 };
                for local in 0..threads {
                    names[k].1.push((wi, local));
                    names[k].2.push(Waiter { posts: AtomicI64::new(0), room: AtomicI64::new(room) });
                }
            }
        }
        Semaphores { names }
    }

    fn waiters(&self, name: SetName) -> &[Waiter] {
        self.names.iter().find(|(n, ..)| *n == name).map_or(&[], |(_, _, w)| w.as_slice())
    }

    fn waiter(&self, name: SetName, workload: usize, local: u32) -> Option<&Waiter> {
        let (_, who, waiters) = self.names.iter().find(|(n, ..)| *n == name)?;
        who.iter().position(|w| *w == (workload, local)).and_then(|i| waiters.get(i))
    }
}

/// Takes `n` from `c` once it holds that many; false if `give_up` said so first.
fn take(c: &AtomicI64, n: i64, give_up: &dyn Fn() -> bool) -> bool {
    loop {
        let now = c.load(Relaxed);
        if now >= n {
            if c.compare_exchange(now, now - n, Relaxed, Relaxed).is_ok() {
                return true;
            }
            continue;
        }
        if give_up() {
            return false;
        }
        std::thread::sleep(SEM_POLL);
    }
}

/// A file a flow works on: its number in the tree, where its next sequential transfer
/// goes, and its engine handle.
#[derive(Clone, Copy)]
struct FlowFile {
    i: u64,
    cursor: u64,
    handle: u32,
}

/// One worker's place in its flow.
pub struct FlowTask {
    /// File picks, random numbers and back-off per set (0: the dataset; k: file set k).
    picks: Vec<TreeTask>,
    steps: Vec<FlowStep>,
    /// Each step's set (an index into `picks`).
    set_of: Vec<usize>,
    /// The step to run next.
    next: usize,
    /// The file the flow opened.
    open: Option<FlowFile>,
    /// With a `flow_rate`: how often this thread starts a round, and when its first is due
    /// after the schedule's start (threads spread over the interval).
    round_ns: Option<(u64, u64)>,
    /// The workload and thread this is (for its side of the names it waits on).
    workload: usize,
    local: u32,
    /// The sets whose files the thread holds (each named by a transfer or fsync), and
    /// the file held (None: none was found or it did not open); opened at the start.
    held: Vec<(usize, Option<FlowFile>)>,
}

impl FlowTask {
    pub fn new(tree: &Tree, eff: Workload, workload: usize, local: u32, seed: u64) -> Self {
        let steps = eff.flow.clone();
        // A set the reader checked exists; one that does not is the dataset.
        let set_of: Vec<usize> =
            steps.iter().map(|s| s.set.and_then(|n| tree.set_index(n.as_str())).unwrap_or(0)).collect();
        let picks = (0..tree.set_count())
            .map(|k| TreeTask::in_set(tree, k, eff.clone(), local, seed.wrapping_add(k as u64)))
            .collect();
        let mut held: Vec<(usize, Option<FlowFile>)> = Vec::new();
        for (s, k) in steps.iter().zip(&set_of) {
            if s.holds() && !held.iter().any(|(h, _)| h == k) {
                held.push((*k, None));
            }
        }
        let threads = u64::from(eff.threads.max(1));
        let round_ns = eff.flow_rate.map(|r| {
            let every = (1_000_000_000u128 * u128::from(threads) / u128::from(r.max(1))) as u64;
            (every.max(1), every / threads * u64::from(local))
        });
        FlowTask { picks, steps, set_of, next: 0, open: None, round_ns, workload, local, held }
    }

    /// Passes over the steps on the file that did not open, up to the next one that opens
    /// a file, needs none, or works on a held file.
    fn pass_over_file_steps(&mut self) {
        for _ in 0..self.steps.len() {
            let s = &self.steps[self.next];
            if !s.op.needs_open() || s.holds() {
                return;
            }
            self.next = (self.next + 1) % self.steps.len();
        }
    }

    /// The engine handle the flow's own file gets: above the held ones.
    fn open_handle(&self) -> u32 {
        self.held.iter().filter(|(_, f)| f.is_some()).count() as u32
    }
}

impl<'a, E: Engine> Worker<'a, E> {
    /// Runs a flow until the deadline (or stop), one step after another.
    pub fn run_flow(&mut self, tree: &Tree, task: &mut FlowTask, s: &Schedule) {
        task.picks.iter_mut().for_each(|p| p.deadline_ns = s.deadline_ns);
        // With a flow_rate, each round of the flow is due at its own time (its first step
        // timed from then); without, each step is due when the one before completed.
        let rounds = task.round_ns.map(|(every, phase)| Schedule {
            interval_ns: Some(every),
            phase_ns: phase,
            arrivals: crate::access::Arrivals::uniform(),
            ..*s
        });
        let mut next_intended = s.start_ns + rounds.as_ref().map_or(0, |r| r.phase_ns);
        let mut t = if rounds.is_some() { wait_until(next_intended, self.stop) } else { now_ns() };
        t = self.open_held(tree, task, t);
        // The round under way: when it was due, and the failures before it.
        let mut round = (t, self.failures);
        while t < s.deadline_ns && !self.stop.load(Relaxed) && self.engine.lost().is_none() && !task.steps.is_empty() {
            if let (0, Some(r)) = (task.next, &rounds) {
                let Some(due) = self.pace(r, &mut next_intended, &mut t) else { break };
                t = due;
                round.0 = due;
            }
            let k = task.next;
            task.next = (task.next + 1) % task.steps.len();
            t = self.flow_step(tree, task, k, t, s.deadline_ns);
            if task.next <= k {
                // The last step is done (or passed over): the round is over, the next is due.
                self.record_round(round, t, s.deadline_ns);
                round = (t, self.failures);
            }
        }
        if let Some(f) = task.open.take() {
            self.close_flow_file(tree, f, now_ns());
        }
        for (_, f) in task.held.iter_mut().rev() {
            if let Some(f) = f.take() {
                let path = tree.file_path(f.i);
                let r = FileReq { op: Op::Close, file: f.handle, ..req(&path) };
                self.file_op(Op::Close, &r, now_ns(), file_no(f.i));
            }
        }
    }

    /// Records a round of the flow that was due at `round.0` and ended at `done`: its whole
    /// time, or a skip when one of its operations failed or found no file (`round.1` is the
    /// failures before it). A round the run's end cut off is not a round.
    fn record_round(&mut self, round: (u64, u64), done: u64, deadline: u64) {
        let slot = self.recorder.at(done);
        let rec = slot.op(Op::Flow as usize);
        match (self.failures > round.1, done >= deadline || self.stop.load(Relaxed)) {
            (_, true) => {}
            (true, false) => rec.record_skip(),
            (false, false) => {
                let time = done.saturating_sub(round.0);
                rec.record(time, time, 0, 0);
            }
        }
    }

    /// Opens a file of each held set (for writing if a step writes to it); returns when done.
    fn open_held(&mut self, tree: &Tree, task: &mut FlowTask, mut t: u64) -> u64 {
        for h in 0..task.held.len() {
            let k = task.held[h].0;
            let Some(i) = task.picks[k].pick(tree, PRESENT, false) else {
                t = self.no_target(Op::Open, &mut task.picks[k]);
                continue;
            };
            let write = task.steps.iter().zip(&task.set_of).any(|(s, set)| *set == k && s.holds() && s.op.writes());
            let path = tree.file_path(i);
            let handle = task.open_handle();
            let size = tree.sizes.get(i as usize).map_or(0, |s| s.load(Relaxed));
            let (r, done) = self.file_op(
                Op::Open,
                &FileReq { op: Op::Open, write, size, file: handle, ..req(&path) },
                t,
                file_no(i),
            );
            t = done;
            if r >= 0 {
                task.held[h].1 = Some(FlowFile { i, cursor: 0, handle });
            }
        }
        t
    }

    /// Closes the flow's own file, which other threads may then pick again.
    fn close_flow_file(&mut self, tree: &Tree, f: FlowFile, intended: u64) -> u64 {
        let path = tree.file_path(f.i);
        let r = FileReq { op: Op::Close, file: f.handle, ..req(&path) };
        let done = self.file_op(Op::Close, &r, intended, file_no(f.i)).1;
        tree.set(f.i, PRESENT);
        done
    }

    /// Runs step `k` due at `intended`; returns when it completed.
    fn flow_step(&mut self, tree: &Tree, task: &mut FlowTask, k: usize, intended: u64, deadline: u64) -> u64 {
        let (step, set) = (task.steps[k], task.set_of[k]);
        let handle = task.open_handle();
        match step.op {
            FlowOp::Create => {
                let Some(i) = task.picks[set].pick(tree, ABSENT, true) else {
                    task.pass_over_file_steps();
                    return self.no_target(Op::Create, &mut task.picks[set]);
                };
                let path = tree.file_path(i);
                let issue = now_ns();
                let mut result = self.engine.file_op(&FileReq { op: Op::Create, ..req(&path) }, &mut self.buffers);
                let created = result >= 0;
                if created {
                    tree.sizes[i as usize].store(0, Relaxed);
                    let open = FileReq { op: Op::Open, write: true, file: handle, ..req(&path) };
                    result = self.engine.file_op(&open, &mut self.buffers);
                }
                let done = now_ns();
                let io = Io { op: Op::Create, file: file_no(i), offset: 0, len: 0, slot: 0 };
                self.record(&io, result, done, done - intended, done - issue);
                // Held (busy) while it is open: no other thread deletes or opens it meanwhile.
                match result >= 0 {
                    true => task.open = Some(FlowFile { i, cursor: 0, handle }),
                    false => {
                        tree.set(i, if created { PRESENT } else { ABSENT });
                        task.pass_over_file_steps();
                    }
                }
                done
            }
            FlowOp::Open => {
                let Some(i) = task.picks[set].pick(tree, PRESENT, true) else {
                    task.pass_over_file_steps();
                    return self.no_target(Op::Open, &mut task.picks[set]);
                };
                let path = tree.file_path(i);
                let size = tree.sizes[i as usize].load(Relaxed);
                let write = task.picks[set].eff.writes();
                let r = FileReq { op: Op::Open, write, size, file: handle, ..req(&path) };
                let (result, done) = self.file_op(Op::Open, &r, intended, file_no(i));
                match result >= 0 {
                    true => task.open = Some(FlowFile { i, cursor: 0, handle }),
                    false => {
                        tree.set(i, PRESENT);
                        task.pass_over_file_steps();
                    }
                }
                done
            }
            FlowOp::Close => match task.open.take() {
                Some(f) => self.close_flow_file(tree, f, intended),
                None => intended,
            },
            FlowOp::Delay => wait_until(intended.saturating_add(step.wait_ns).min(deadline), self.stop),
            FlowOp::Wait | FlowOp::Post => {
                let Some(name) = step.sem else { return intended };
                let stop = self.stop;
                let give_up = || stop.load(Relaxed) || now_ns() >= deadline;
                if step.op == FlowOp::Wait {
                    if let Some(w) = tree.sems.waiter(name, task.workload, task.local) {
                        // Room for as many posts as it takes, then the posts themselves.
                        w.room.fetch_add(i64::from(step.count), Relaxed);
                        take(&w.posts, i64::from(step.count), &give_up);
                    }
                } else {
                    for w in tree.sems.waiters(name) {
                        if step.count > 0 && !take(&w.room, 1, &give_up) {
                            break;
                        }
                        w.posts.fetch_add(1, Relaxed);
                    }
                }
                now_ns()
            }
            FlowOp::Delete | FlowOp::Stat => {
                // Claimed for the operation: a stat never races a delete of the same file.
                let op = if step.op == FlowOp::Delete { Op::Delete } else { Op::Getattr };
                let Some(i) = task.picks[set].pick(tree, PRESENT, true) else {
                    return self.no_target(op, &mut task.picks[set]);
                };
                let path = tree.file_path(i);
                let (r, done) = self.file_op(op, &FileReq { op, ..req(&path) }, intended, file_no(i));
                tree.set(i, if r >= 0 && op == Op::Delete { ABSENT } else { PRESENT });
                done
            }
            _ => {
                let held = task.held.iter().position(|(h, _)| *h == set).filter(|_| step.holds());
                let file = match held {
                    Some(h) => task.held[h].1,
                    None => task.open,
                };
                let Some(f) = file else {
                    return match held {
                        // The held file was not found or did not open: a skip each time.
                        Some(_) => self.no_target(op_of(step.op).unwrap_or(Op::Open), &mut task.picks[set]),
                        None => intended,
                    };
                };
                let (done, f) = match step.op {
                    FlowOp::Fsync => (self.flow_io(Op::Fsync, f, 0, 0, intended).1, f),
                    _ => self.flow_transfer(tree, &mut task.picks[set], f, step, intended, deadline),
                };
                match held {
                    Some(h) => task.held[h].1 = Some(f),
                    None => task.open = Some(f),
                }
                done
            }
        }
    }

    /// One I/O on the flow's file `f` (its engine handle), counted on its tree file.
    fn flow_io(&mut self, op: Op, f: FlowFile, offset: u64, len: u64, intended: u64) -> (i64, u64) {
        self.tree_file = Some(file_no(f.i));
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        let got = self.submit_sync(&Io { op, file: f.handle, offset, len, slot: 0 }, intended);
        self.tree_file = None;
        got
    }

    /// A read, write, whole-file read or write, or append on file `f`; returns when it
    /// completed, and the file with its cursor moved.
    fn flow_transfer(
        &mut self,
        tree: &Tree,
        pick: &mut TreeTask,
        f: FlowFile,
        step: FlowStep,
        intended: u64,
        deadline: u64,
    ) -> (u64, FlowFile) {
        let i = f.i;
        let size = &tree.sizes[i as usize];
        let now = size.load(Relaxed);
        let bytes = step.bytes.max(1);
        match step.op {
            FlowOp::ReadWhole | FlowOp::WriteWhole => {
                let (op, end) = match step.op {
                    FlowOp::ReadWhole => (Op::Read, now),
                    _ => (Op::Write, tree.file_size(i)),
                };
                let (mut at, mut t) = (0, intended);
                while at < end && t < deadline && !self.stop.load(Relaxed) {
                    let len = bytes.min(end - at);
                    let (r, done) = self.flow_io(op, f, at, len, t);
                    t = done;
                    if r < 0 || (r as u64) < len {
                        break;
                    }
                    at += len;
                    if op == Op::Write {
                        size.fetch_max(at, Relaxed);
                    }
                }
                (t, f)
            }
            FlowOp::Append => {
                let len = if step.random { 1 + pick.below(bytes) } else { bytes };
                // The range at the end is this append's alone, whoever else appends.
                let at = size.fetch_add(len, Relaxed);
                let (r, done) = self.flow_io(Op::Write, f, at, len, intended);
                if r < 0 || (r as u64) < len {
                    // Given back if no other append came after it.
                    let _ = size.compare_exchange(at + len, at + r.max(0) as u64, Relaxed, Relaxed);
                }
                (done, f)
            }
            _ => {
                let write = step.op == FlowOp::Write;
                // A write's file is as long as the dataset says at least; a read's as it is now.
                let room = if write { now.max(tree.file_size(i)) } else { now };
                if room == 0 {
                    // Nothing to read in an empty file: no I/O.
                    return (intended, f);
                }
                let len = bytes.min(room);
                let at = match step.random {
                    true => pick.below(room / len) * len,
                    false if f.cursor + len > room => 0,
                    false => f.cursor,
                };
                let op = if write { Op::Write } else { Op::Read };
                let (r, done) = self.flow_io(op, f, at, len, intended);
                if write && r >= 0 {
                    size.fetch_max(at + len, Relaxed);
                }
                (done, FlowFile { cursor: at + len, ..f })
            }
        }
    }
}

/// The operation a flow step records (a delay, wait or post none).
fn op_of(op: FlowOp) -> Option<Op> {
    Some(match op {
        FlowOp::Create => Op::Create,
        FlowOp::Open => Op::Open,
        FlowOp::Close => Op::Close,
        FlowOp::Read | FlowOp::ReadWhole => Op::Read,
        FlowOp::Write | FlowOp::WriteWhole | FlowOp::Append => Op::Write,
        FlowOp::Fsync => Op::Fsync,
        FlowOp::Delete => Op::Delete,
        FlowOp::Stat => Op::Getattr,
        FlowOp::Delay | FlowOp::Wait | FlowOp::Post => return None,
    })
}

/// The operations a flow records (for its workers' recorders).
pub fn ops_of_flow(steps: &[FlowStep]) -> Vec<Op> {
    let mut ops: Vec<Op> = Vec::new();
    for s in steps {
        let Some(op) = op_of(s.op) else { continue };
        if !ops.contains(&op) {
            ops.push(op);
        }
    }
    // Each round of the flow is recorded too.
    if !steps.is_empty() {
        ops.push(Op::Flow);
    }
    // A held file is opened at the start and closed at the end; a file left open when the
    // run ends is closed then.
    if steps.iter().any(FlowStep::holds) && !ops.contains(&Op::Open) {
        ops.push(Op::Open);
    }
    let opens = ops.contains(&Op::Open) || ops.contains(&Op::Create);
    if opens && !ops.contains(&Op::Close) {
        ops.push(Op::Close);
    }
    ops.sort();
    ops
}
