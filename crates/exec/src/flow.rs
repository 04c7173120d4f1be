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

use crate::clock::now_ns;
use crate::tree::{file_no, req, Tree, TreeTask, ABSENT, PRESENT};
use crate::worker::{Schedule, Worker};
use ioscope_engine::{Engine, FileReq, Io, Op};
use ioscope_workload::{FlowOp, FlowStep, Workload};
use std::sync::atomic::Ordering::Relaxed;

/// One worker's place in its flow.
pub struct FlowTask {
    /// File picks, random numbers and back-off, as a dataset workload's.
    pick: TreeTask,
    steps: Vec<FlowStep>,
    /// The step to run next.
    next: usize,
    /// The open file (its index in the tree) and where its next sequential transfer goes.
    open: Option<(u64, u64)>,
}

impl FlowTask {
    pub fn new(tree: &Tree, eff: Workload, local: u32, seed: u64) -> Self {
        let steps = eff.flow.clone();
        FlowTask { pick: TreeTask::new(tree, eff, local, seed), steps, next: 0, open: None }
    }

    /// Passes over the steps on the file that did not open, up to the next one that opens
    /// a file or needs none.
    fn pass_over_file_steps(&mut self) {
        for _ in 0..self.steps.len() {
            if !self.steps[self.next].op.needs_open() {
                return;
            }
            self.next = (self.next + 1) % self.steps.len();
        }
    }
}

impl<'a, E: Engine> Worker<'a, E> {
    /// Runs a flow until the deadline (or stop), one step after another.
    pub fn run_flow(&mut self, tree: &Tree, task: &mut FlowTask, s: &Schedule) {
        task.pick.deadline_ns = s.deadline_ns;
        let mut t = now_ns();
        while t < s.deadline_ns && !self.stop.load(Relaxed) && self.engine.lost().is_none() && !task.steps.is_empty() {
            let step = task.steps[task.next];
            task.next = (task.next + 1) % task.steps.len();
            t = self.flow_step(tree, task, step, t, s.deadline_ns);
        }
        if let Some((i, _)) = task.open.take() {
            self.close_flow_file(tree, i, now_ns());
        }
    }

    /// Closes the open file, which other threads may then pick again.
    fn close_flow_file(&mut self, tree: &Tree, i: u64, intended: u64) -> u64 {
        let path = tree.layout.file_path(i);
        let done = self.file_op(Op::Close, &FileReq { op: Op::Close, ..req(&path) }, intended, file_no(i)).1;
        tree.set(i, PRESENT);
        done
    }

    /// Runs one step due at `intended`; returns when it completed.
    fn flow_step(&mut self, tree: &Tree, task: &mut FlowTask, step: FlowStep, intended: u64, deadline: u64) -> u64 {
        let layout = &tree.layout;
        match step.op {
            FlowOp::Create => {
                let Some(i) = task.pick.pick(tree, ABSENT, true) else {
                    task.pass_over_file_steps();
                    return self.no_target(Op::Create, &mut task.pick);
                };
                let path = layout.file_path(i);
                let issue = now_ns();
                let mut result = self.engine.file_op(&FileReq { op: Op::Create, ..req(&path) }, &mut self.buffers);
                let created = result >= 0;
                if created {
                    tree.sizes[i as usize].store(0, Relaxed);
                    result =
                        self.engine.file_op(&FileReq { op: Op::Open, write: true, ..req(&path) }, &mut self.buffers);
                }
                let done = now_ns();
                let io = Io { op: Op::Create, file: file_no(i), offset: 0, len: 0, slot: 0 };
                self.record(&io, result, done, done - intended, done - issue);
                // Held (busy) while it is open: no other thread deletes or opens it meanwhile.
                match result >= 0 {
                    true => task.open = Some((i, 0)),
                    false => {
                        tree.set(i, if created { PRESENT } else { ABSENT });
                        task.pass_over_file_steps();
                    }
                }
                done
            }
            FlowOp::Open => {
                let Some(i) = task.pick.pick(tree, PRESENT, true) else {
                    task.pass_over_file_steps();
                    return self.no_target(Op::Open, &mut task.pick);
                };
                let path = layout.file_path(i);
                let size = tree.sizes[i as usize].load(Relaxed);
                let write = task.pick.eff.writes();
                let r = FileReq { op: Op::Open, write, size, ..req(&path) };
                let (result, done) = self.file_op(Op::Open, &r, intended, file_no(i));
                match result >= 0 {
                    true => task.open = Some((i, 0)),
                    false => {
                        tree.set(i, PRESENT);
                        task.pass_over_file_steps();
                    }
                }
                done
            }
            FlowOp::Close => match task.open.take() {
                Some((i, _)) => self.close_flow_file(tree, i, intended),
                None => intended,
            },
            FlowOp::Delete | FlowOp::Stat => {
                // Claimed for the operation: a stat never races a delete of the same file.
                let op = if step.op == FlowOp::Delete { Op::Delete } else { Op::Getattr };
                let Some(i) = task.pick.pick(tree, PRESENT, true) else { return self.no_target(op, &mut task.pick) };
                let path = layout.file_path(i);
                let (r, done) = self.file_op(op, &FileReq { op, ..req(&path) }, intended, file_no(i));
                tree.set(i, if r >= 0 && op == Op::Delete { ABSENT } else { PRESENT });
                done
            }
            FlowOp::Fsync => match task.open {
                Some((i, _)) => self.flow_io(Op::Fsync, i, 0, 0, intended).1,
                None => intended,
            },
            _ => self.flow_transfer(tree, task, step, intended, deadline),
        }
    }

    /// One I/O on the open file `i` (the engine's file 0), counted on tree file `i`.
    fn flow_io(&mut self, op: Op, i: u64, offset: u64, len: u64, intended: u64) -> (i64, u64) {
        self.tree_file = Some(file_no(i));
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        let got = self.submit_sync(&Io { op, file: 0, offset, len, slot: 0 }, intended);
        self.tree_file = None;
        got
    }

    /// A read, write, whole-file read or write, or append on the open file.
    fn flow_transfer(&mut self, tree: &Tree, task: &mut FlowTask, step: FlowStep, intended: u64, deadline: u64) -> u64 {
        let Some((i, cursor)) = task.open else { return intended };
        let size = &tree.sizes[i as usize];
        let now = size.load(Relaxed);
        let bytes = step.bytes.max(1);
        match step.op {
            FlowOp::ReadWhole | FlowOp::WriteWhole => {
                let (op, end) = match step.op {
                    FlowOp::ReadWhole => (Op::Read, now),
                    _ => (Op::Write, tree.layout.file_size(i)),
                };
                let (mut at, mut t) = (0, intended);
                while at < end && t < deadline && !self.stop.load(Relaxed) {
                    let len = bytes.min(end - at);
                    let (r, done) = self.flow_io(op, i, at, len, t);
                    t = done;
                    if r < 0 || (r as u64) < len {
                        break;
                    }
                    at += len;
                    if op == Op::Write {
                        size.fetch_max(at, Relaxed);
                    }
                }
                t
            }
            FlowOp::Append => {
                let len = if step.random { 1 + task.pick.below(bytes) } else { bytes };
                let (r, done) = self.flow_io(Op::Write, i, now, len, intended);
                if r >= 0 && r as u64 == len {
                    size.fetch_max(now + len, Relaxed);
                }
                done
            }
            _ => {
                let write = step.op == FlowOp::Write;
                // A write's file is as long as the dataset says at least; a read's as it is now.
                let room = if write { now.max(tree.layout.file_size(i)) } else { now };
                if room == 0 {
                    // Nothing to read in an empty file: no I/O.
                    return intended;
                }
                let len = bytes.min(room);
                let at = match step.random {
                    true => task.pick.below(room / len) * len,
                    false if cursor + len > room => 0,
                    false => cursor,
                };
                let op = if write { Op::Write } else { Op::Read };
                let (r, done) = self.flow_io(op, i, at, len, intended);
                if write && r >= 0 {
                    size.fetch_max(at + len, Relaxed);
                }
                task.open = Some((i, at + len));
                done
            }
        }
    }
}

/// The operations a flow records (for its workers' recorders).
pub fn ops_of_flow(steps: &[FlowStep]) -> Vec<Op> {
    let mut ops = Vec::new();
    for s in steps {
        let op = match s.op {
            FlowOp::Create => Op::Create,
            FlowOp::Open => Op::Open,
            FlowOp::Close => Op::Close,
            FlowOp::Read | FlowOp::ReadWhole => Op::Read,
            FlowOp::Write | FlowOp::WriteWhole | FlowOp::Append => Op::Write,
            FlowOp::Fsync => Op::Fsync,
            FlowOp::Delete => Op::Delete,
            FlowOp::Stat => Op::Getattr,
        };
        if !ops.contains(&op) {
            ops.push(op);
        }
    }
    // A file left open when the run ends is closed then.
    if (ops.contains(&Op::Open) || ops.contains(&Op::Create)) && !ops.contains(&Op::Close) {
        ops.push(Op::Close);
    }
    ops.sort();
    ops
}
