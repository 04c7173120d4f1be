//! The core loop of one worker: generate an I/O, wait for its intended start when a
//! rate is set, submit it, stamp the completion, record. Latency is timed here, never
//! by the engine: response time from the intended start, service time from issue.
//!
//! Closed loop (no rate): the intended start of an I/O is the moment the worker is ready,
//! which is the previous completion; the issue time is read right before submission, so
//! service time covers the engine alone. Open loop: the schedule is fixed in advance; an I/O that starts late keeps its intended time, so
//! queueing delay shows in response time (no coordinated omission).

use crate::access::Arrivals;
use crate::clock::{now_ns, wait_until};
use crate::errors;
use crate::iogen::IoGen;
use ioscope_engine::{Completion, Engine, Io, IoBuffers, Op, Submitted};
use ioscope_metrics::breakdown::{FileRing, IoRecord};
use ioscope_metrics::WorkerRecorder;
use ioscope_workload::SyncMode;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Timing parameters of one worker.
pub struct Schedule {
    /// Run start (ns, monotonic clock).
    pub start_ns: u64,
    /// Stop issuing at this time.
    pub deadline_ns: u64,
    /// Open loop: time between intended starts of this worker; None = closed loop.
    pub interval_ns: Option<u64>,
    /// Open loop: offset of this worker's first intended start (spreads workers evenly).
    pub phase_ns: u64,
    /// Open loop: the gaps between intended starts, of mean `interval_ns` (even, or a
    /// Poisson process).
    pub arrivals: Arrivals,
}

/// The first failure of each op kind, for the end-of-run report.
#[derive(Default, Debug, Clone)]
pub struct FirstErrors(pub Vec<FirstError>);

/// One failed I/O, as the end-of-run report names it.
#[derive(Debug, Clone)]
pub struct FirstError {
    pub op: Op,
    /// "ENOSPC: No space left on device (os error 28)", "4096 of 8192 bytes (short read)".
    pub text: String,
    /// The file: an index into the working set's files, or a dataset's file number.
    pub file: u32,
    /// Where in the file, for reads and writes.
    pub offset: Option<u64>,
}

impl FirstErrors {
    #[cold]
    fn note(&mut self, io: &Io, file: u32, text: impl FnOnce() -> String) {
        if !self.0.iter().any(|e| e.op == io.op) {
            let offset = io.op.is_data().then_some(io.offset);
            self.0.push(FirstError { op: io.op, text: text(), file, offset });
        }
    }
}

/// Everything a worker needs for its loop.
pub struct Worker<'a, E: Engine> {
    pub engine: E,
    pub buffers: IoBuffers,
    pub gen: IoGen,
    pub recorder: &'a WorkerRecorder,
    /// Where each finished I/O goes to be broken down by file (None: not broken down).
    pub ring: Option<&'a FileRing>,
    /// The tree file a dataset transfer is on (its `Io.file` is the engine's open file).
    pub(crate) tree_file: Option<u32>,
    pub stop: &'a AtomicBool,
    pub sync: SyncMode,
    pub queue_depth: u32,
    pub errors: FirstErrors,
    /// Names error kinds as the run's collector does (NFSv3 or NFSv4 status names).
    pub namer: ioscope_metrics::KindNamer,
    /// Data validation (`--verify`): stamps writes, checks reads (None: off).
    pub(crate) verify: Option<crate::verify::WorkerVerify<'a>>,
    /// What the bytes of each write are (the workload's data content).
    pub(crate) content: crate::content::Filler,
    /// An end by amount: each I/O is claimed from it before it is issued (None: on time only).
    pub(crate) budget: Option<&'a crate::amount::Budget>,
    /// What a queued engine's reap returns when one I/O is waited for (kept: no allocation
    /// per I/O).
    reaped: Vec<Completion>,
    /// Operations that failed or found nothing to act on, so far (a flow's round with one
    /// is cut short).
    pub(crate) failures: u64,
}

impl<'a, E: Engine> Worker<'a, E> {
    pub fn new(
        engine: E,
        buffers: IoBuffers,
        gen: IoGen,
        recorder: &'a WorkerRecorder,
        stop: &'a AtomicBool,
        sync: SyncMode,
        queue_depth: u32,
    ) -> Self {
        Self {
            engine,
            buffers,
            gen,
            recorder,
            ring: None,
            tree_file: None,
            stop,
            sync,
            queue_depth,
            errors: FirstErrors::default(),
            namer: errors::kind_name,
            verify: None,
            content: crate::content::Filler::new(&Default::default(), 0, 0),
            budget: None,
            reaped: Vec::new(),
            failures: 0,
        }
    }

    /// Runs until the deadline or until `stop` is set; in-flight I/O is completed and recorded.
    pub fn run(&mut self, s: &Schedule) {
        if self.engine.submission().queued {
            self.run_queued(s)
        } else {
            self.run_sync(s)
        }
    }

    /// Records one finished I/O: a success, or an error counted by its kind. A read or
    /// write that moved fewer bytes than asked (past the end of a file another process
    /// truncated, say) is an error of its own kind, "short read" or "short write", never
    /// a success of fewer bytes.
    ///
    /// It counts in the second its completion time `done_ns` falls in. An operation without
    /// a size (sync, open, close, metadata) has no size histogram, so it moves 0 bytes and
    /// records no size sample whatever the engine returned (per file, it counts what the
    /// engine returned: 0 for them).
    #[inline(always)]
    pub(crate) fn record(&mut self, io: &Io, result: i64, done_ns: u64, latency_ns: u64, service_ns: u64) {
        // The slot is chosen once: every statistic of this I/O, the verification's and the
        // per-file ring's too, is recorded while `slot` lives (see `SlotWriter`).
        let slot = self.recorder.at(done_ns);
        if let Some(v) = self.verify.as_mut() {
            match self.tree_file {
                Some(f) => v.complete_tree(io, f, result, self.buffers.slot(io.slot), &slot, done_ns),
                None => v.complete(io, result, self.buffers.slot(io.slot), &slot, done_ns),
            }
        }
        let rec = slot.op(io.op as usize);
        let short = io.op.is_data() && result >= 0 && (result as u64) < io.len as u64;
        let file = self.tree_file.unwrap_or(io.file);
        if let Some(ring) = self.ring {
            let ok = result >= 0 && !short;
            let place = (ok && io.op.has_size()).then_some((result as u64, io.offset));
            let (slot, seq) = (slot.slot_index(), slot.seq());
            ring.push(&IoRecord { done_ns, file, op: io.op as u8, ok, latency_ns, service_ns, place, slot, seq });
        }
        if result >= 0 && !short {
            slot.record_file(io.op as usize, io.file, Some(result as u64));
            rec.record(latency_ns, service_ns, result as u64, io.offset);
        } else {
            self.failures += 1;
            slot.record_file(io.op as usize, io.file, None);
            let kind = if short { errors::SHORT } else { errors::kind_of(result) };
            rec.record_error(kind);
            // The I/O's record ends here: its slot may be read again.
            drop(slot);
            let (engine, namer) = (&self.engine, self.namer);
            self.errors.note(io, file, || match short {
                true => format!("{result} of {} bytes (short {})", io.len, io.op.name()),
                false => {
                    // The kind's name first ("ENOSPC"), as the counts call it.
                    let (name, text) = (namer(io.op as usize, kind), engine.error_text(result));
                    if text.contains(&name) {
                        text
                    } else {
                        format!("{name}: {text}")
                    }
                }
            });
        }
    }

    /// Fills a write with the workload's data content (by default unique in every sector:
    /// no dedup); with verification, then a header in each block (and a read notes what it
    /// may find).
    /// False under verification while an I/O of one of its blocks is in flight that it may
    /// not overlap (see ioscope_verify::state): nothing was stamped; issue it later.
    #[inline(always)]
    fn stamp(&mut self, io: &Io) -> bool {
        if io.op == Op::Write {
            let file = self.tree_file.unwrap_or(io.file);
            if let Some(buf) = self.buffers.slot(io.slot).get_mut(..io.len as usize) {
                self.content.fill(file, io.offset, buf);
            }
        }
        if let Some(v) = self.verify.as_mut() {
            return match self.tree_file {
                Some(f) => v.issue_tree(io, f, self.buffers.slot(io.slot)),
                None => v.issue(io, self.buffers.slot(io.slot)),
            };
        }
        true
    }

    /// An I/O stamped but not submitted (the engine refused it): what verification
    /// reserved for it is given back.
    #[cold]
    fn unstamp(&mut self, io: &Io) {
        if let Some(v) = self.verify.as_mut() {
            match self.tree_file {
                Some(f) => v.release_tree(io, f),
                None => v.release(io, usize::MAX),
            }
        }
    }

    /// Stamps `io` once no I/O of another worker it may not overlap is in flight (a
    /// worker of one I/O at a time has none of its own then). False if the run stops first.
    fn stamp_when_free(&mut self, io: &Io) -> bool {
        let mut waits = 0u32;
        while !self.stamp(io) {
            if self.stop.load(Relaxed) {
                return false;
            }
            // The other I/O takes a service time: yield first, then sleep a little.
            waits += 1;
            if waits < 64 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
        }
        true
    }

    /// The sync operation to issue after a successful write, if any.
    #[inline(always)]
    fn sync_after(&self, io: &Io, result: i64) -> Option<Io> {
        let op = match self.sync {
            SyncMode::Fsync => Op::Fsync,
            SyncMode::Fdatasync => Op::Fdatasync,
            SyncMode::None | SyncMode::Dsync => return None,
        };
        (io.op == Op::Write && result >= 0).then_some(Io { op, offset: 0, len: 0, ..*io })
    }

    /// The intended start of the next operation of a one-at-a-time loop at time `t`: `t`
    /// itself (closed loop), or the next slot of the schedule, waited for (`t` moves on).
    /// None when the deadline or a stop comes first.
    #[inline(always)]
    pub(crate) fn pace(&self, s: &Schedule, next_intended: &mut u64, t: &mut u64) -> Option<u64> {
        let Some(iv) = s.interval_ns else { return Some(*t) };
        let i = *next_intended;
        *next_intended += s.arrivals.gap(iv);
        if i > *t {
            *t = wait_until(i, self.stop);
            if *t >= s.deadline_ns || self.stop.load(Relaxed) {
                return None;
            }
        }
        Some(i)
    }

    /// Submits one I/O to a synchronous engine and records it; returns its result and
    /// completion time.
    #[inline(always)]
    /// Under verification it waits while another worker has an I/O of the same block in
    /// flight that it may not overlap; if the run stops meanwhile the I/O is not issued,
    /// nor recorded, and its result is -ECANCELED.
    pub(crate) fn submit_sync(&mut self, io: &Io, intended: u64) -> (i64, u64) {
        if !self.stamp_when_free(io) {
            return (-(libc::ECANCELED as i64), now_ns());
        }
        let issue = now_ns();
        let result = match self.engine.submit(io, &mut self.buffers) {
            Submitted::Done(r) => r,
            Submitted::Queued => self.wait_for(io.slot),
            // Nothing else is in flight, so a queued engine has room; treat it as a bug.
            Submitted::Busy => -(libc::EPROTO as i64),
        };
        let done = now_ns();
        self.record(io, result, done, done - intended, done - issue);
        (result, done)
    }

    /// The result of the one I/O a queued engine has in flight (in `slot`).
    fn wait_for(&mut self, slot: u32) -> i64 {
        self.engine.commit();
        loop {
            self.reaped.clear();
            if let Err(e) = self.engine.reap(1, None, &mut self.reaped) {
                return -(e.raw_os_error().unwrap_or(libc::EIO) as i64);
            }
            if let Some(c) = self.reaped.iter().find(|c| c.slot == slot) {
                return c.result;
            }
        }
    }

    /// Synchronous engines (or depth 1): one I/O at a time.
    fn run_sync(&mut self, s: &Schedule) {
        let mut next_intended = s.start_ns + s.phase_ns;
        let mut t = if s.interval_ns.is_some() { wait_until(next_intended, self.stop) } else { now_ns() };
        let pattern = self.gen.pattern().is_some();
        while t < s.deadline_ns && !self.stop.load(Relaxed) {
            let io = if pattern {
                // A blank column of the text: idle (and skip what was due) until it ends.
                match self.gen.next_pattern(0, next_intended.max(t)) {
                    Ok(io) => io,
                    Err(column_end) => {
                        t = wait_until(column_end.min(s.deadline_ns), self.stop);
                        next_intended = next_intended.max(column_end);
                        continue;
                    }
                }
            } else {
                self.gen.next(0)
            };
            if self.budget.is_some_and(|b| !b.claim(io.len)) {
                break;
            }
            // The closed loop stays inline: through `pace` it measured ~3% slower on null.
            let intended = match s.interval_ns {
                None => t,
                Some(_) => match self.pace(s, &mut next_intended, &mut t) {
                    Some(i) => i,
                    None => break,
                },
            };
            let result;
            (result, t) = self.submit_sync(&io, intended);
            if let Some(sync) = self.sync_after(&io, result) {
                let issue = t;
                let r = match self.engine.submit(&sync, &mut self.buffers) {
                    Submitted::Done(r) => r,
                    _ => -(libc::EPROTO as i64),
                };
                t = now_ns();
                self.record(&sync, r, t, t - issue, t - issue);
            }
        }
    }

    /// Queueing engines: keep up to `queue_depth` I/Os in flight.
    fn run_queued(&mut self, s: &Schedule) {
        #[derive(Clone, Copy)]
        struct InFlight {
            io: Io,
            intended: u64,
            issue: u64,
        }
        let depth = self.queue_depth as usize;
        let blank = InFlight { io: Io { op: Op::Read, file: 0, offset: 0, len: 0, slot: 0 }, intended: 0, issue: 0 };
        let mut slots = vec![blank; depth];
        let mut free: Vec<u32> = (0..depth as u32).rev().collect();
        let mut done: Vec<Completion> = Vec::with_capacity(depth);
        // Slots queued in this round; their issue time is read once, right before commit.
        let mut batch: Vec<u32> = Vec::with_capacity(depth);
        let mut next_intended = s.start_ns + s.phase_ns;
        // The gap last added to `next_intended`, taken back when the engine is busy.
        let mut last_gap = 0;
        let batched = self.engine.submission().batched_submit;
        // Under verification: the I/O generated but not issued yet, because an I/O of one
        // of its blocks was in flight that it may not overlap. It is issued, unchanged (no
        // offset is picked again, so the offsets keep their distribution), once that one
        // completes; its slot stays free until then.
        let mut held: Option<InFlight> = None;
        let mut t = now_ns();
        // The budget of an end by amount is spent: no more I/O is issued.
        let mut spent = false;
        loop {
            let stopping = spent || t >= s.deadline_ns || self.stop.load(Relaxed) || self.engine.lost().is_some();
            if stopping && free.len() == depth {
                break;
            }
            // Fill the queue.
            while let Some(&top) = free.last().filter(|_| !stopping) {
                let (io, intended) = match held.take() {
                    Some(h) => (h.io, h.intended),
                    None => {
                        let intended = match s.interval_ns {
                            None => t,
                            Some(iv) => {
                                if next_intended > t {
                                    break;
                                }
                                last_gap = s.arrivals.gap(iv);
                                next_intended += last_gap;
                                next_intended - last_gap
                            }
                        };
                        let io = self.gen.next(top);
                        if self.budget.is_some_and(|b| !b.claim(io.len)) {
                            spent = true;
                            break;
                        }
                        (io, intended)
                    }
                };
                if !self.stamp(&io) {
                    held = Some(InFlight { io, intended, issue: 0 });
                    break;
                }
                let slot = io.slot;
                // An engine that hands each I/O to the target at once is stamped per I/O.
                let issue = if batched { t } else { now_ns() };
                match self.engine.submit(&io, &mut self.buffers) {
                    Submitted::Queued => {
                        if let Some(k) = free.iter().rposition(|&f| f == slot) {
                            free.swap_remove(k);
                        }
                        if batched {
                            batch.push(slot);
                        }
                        slots[slot as usize] = InFlight { io, intended, issue };
                    }
                    Submitted::Done(r) => {
                        let now = now_ns();
                        self.record(&io, r, now, now - intended, now - issue);
                        t = now;
                        if t >= s.deadline_ns || self.stop.load(Relaxed) || self.engine.lost().is_some() {
                            break;
                        }
                    }
                    Submitted::Busy => {
                        self.unstamp(&io);
                        if s.interval_ns.is_some() {
                            next_intended -= last_gap;
                        }
                        break;
                    }
                }
            }
            if !batch.is_empty() {
                let issue = now_ns();
                for slot in batch.drain(..) {
                    slots[slot as usize].issue = issue;
                }
            }
            self.engine.commit();
            if free.len() == depth {
                // Nothing in flight: wait for the schedule (open loop) or go round again;
                // an I/O held for another worker's lets that one complete first.
                t = match s.interval_ns {
                    _ if held.is_some() => {
                        std::thread::yield_now();
                        now_ns()
                    }
                    Some(_) if !stopping => wait_until(next_intended.min(s.deadline_ns), self.stop),
                    _ => now_ns(),
                };
                continue;
            }
            // With a rate and a free slot, wait for a completion only until the next intended
            // start (or the deadline); otherwise wait for one completion.
            let timeout = match s.interval_ns {
                Some(_) if !stopping && !free.is_empty() => {
                    Some(next_intended.min(s.deadline_ns).saturating_sub(now_ns()).max(1))
                }
                _ => None,
            };
            if let Err(e) = self.engine.reap(1, timeout, &mut done) {
                // The engine lost its queue: count every in-flight I/O as failed.
                let errno = -(e.raw_os_error().unwrap_or(libc::EIO) as i64);
                for slot in 0..depth as u32 {
                    if !free.contains(&slot) {
                        done.push(Completion { slot, result: errno });
                    }
                }
            }
            t = now_ns();
            for c in done.drain(..) {
                let f = slots[c.slot as usize];
                self.record(&f.io, c.result, t, t - f.intended, t - f.issue);
                let follow = self.sync_after(&f.io, c.result);
                match follow.map(|io| (io, self.engine.submit(&io, &mut self.buffers))) {
                    Some((io, Submitted::Queued)) => slots[c.slot as usize] = InFlight { io, intended: t, issue: t },
                    Some((io, Submitted::Done(r))) => {
                        let now = now_ns();
                        self.record(&io, r, now, now - t, now - t);
                        free.push(c.slot);
                    }
                    _ => free.push(c.slot),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ioscope_engine::null::NullEngine;
    use ioscope_engine::{OpenSpec, Submission};
    use ioscope_workload::Plan;
    use std::time::Duration;

    fn plan(iodepth: u32) -> Plan {
        crate::test_plan(&format!("engine = 'null'\nrw = 'randrw'\nsync = 'fdatasync'\niodepth = {iodepth}"))
    }

    fn run_with<E: Engine>(mut engine: E, p: &Plan, interval_ns: Option<u64>, duration_ns: u64) -> WorkerRecorder {
        let rec = WorkerRecorder::new(ioscope_engine::OP_KINDS);
        let stop = AtomicBool::new(false);
        let bufs = IoBuffers::new(p.iodepth as usize, 4096, 1);
        engine.open(&OpenSpec { queue_depth: p.iodepth, ..Default::default() }, &bufs).unwrap();
        let start = now_ns();
        let mut w = Worker::new(engine, bufs, IoGen::for_plan(p, 1), &rec, &stop, p.sync, p.iodepth);
        w.run(&Schedule {
            start_ns: start,
            deadline_ns: start + duration_ns,
            interval_ns,
            phase_ns: 0,
            arrivals: Arrivals::uniform(),
        });
        rec
    }

    /// Everything the recorder holds, per op.
    fn totals(rec: &WorkerRecorder) -> Vec<ioscope_metrics::OpInterval> {
        ioscope_metrics::WorkerReader::new(ioscope_engine::OP_KINDS).take(rec)
    }

    #[test]
    fn sync_and_queued_loops_record_every_io_and_its_sync() {
        for depth in [1, 8] {
            let p = plan(depth);
            let rec = run_with(NullEngine::default(), &p, None, 200_000_000);
            let t = totals(&rec);
            let (r, w, s) = (t[0].counts.ops, t[1].counts.ops, t[Op::Fdatasync as usize].counts.ops);
            // Some of each (how many depends on the machine's load, not on the loop).
            assert!(r > 0 && w > 0, "depth {depth}: {r} reads {w} writes");
            assert_eq!(s, w, "depth {depth}: one fdatasync per write");
            assert_eq!(t[0].counts.bytes, r * 4096);
        }
    }

    /// Completes instantly except for one long stall, like a target that hiccups.
    struct StallOnce {
        n: u64,
        stall_at: u64,
        stall: Duration,
    }

    impl Engine for StallOnce {
        fn name(&self) -> &'static str {
            "stall"
        }
        fn submission(&self) -> Submission {
            Submission { queued: false, batched_submit: false }
        }
        fn open(&mut self, _: &OpenSpec, _: &IoBuffers) -> std::io::Result<()> {
            Ok(())
        }
        fn submit(&mut self, io: &Io, _: &mut IoBuffers) -> Submitted {
            self.n += 1;
            if self.n == self.stall_at {
                std::thread::sleep(self.stall);
            }
            Submitted::Done(io.len as i64)
        }
    }

    /// A queued target of 4 blocks that lands a write and serves a read when it is
    /// submitted, completes them in submission order, and counts every submission of a read
    /// or write while a write of the same block is in flight (or a write while a read is).
    struct Overlaps {
        disk: Vec<u8>,
        queue: std::collections::VecDeque<(u32, i64)>,
        /// In flight: (slot, op, block).
        inflight: Vec<(u32, Op, u64)>,
        overlaps: std::sync::Arc<std::sync::atomic::AtomicU64>,
    }

    impl Engine for Overlaps {
        fn name(&self) -> &'static str {
            "overlaps"
        }
        fn submission(&self) -> Submission {
            Submission { queued: true, batched_submit: false }
        }
        fn open(&mut self, _: &OpenSpec, _: &IoBuffers) -> std::io::Result<()> {
            Ok(())
        }
        fn submit(&mut self, io: &Io, bufs: &mut IoBuffers) -> Submitted {
            let block = io.offset / 4096;
            let clash = self.inflight.iter().any(|&(_, op, b)| b == block && (op == Op::Write || io.op == Op::Write));
            if clash {
                self.overlaps.fetch_add(1, Relaxed);
            }
            let at = io.offset as usize..io.offset as usize + io.len as usize;
            match io.op {
                Op::Write => self.disk[at].copy_from_slice(&bufs.slot(io.slot)[..io.len as usize]),
                _ => bufs.slot(io.slot)[..io.len as usize].copy_from_slice(&self.disk[at]),
            }
            self.inflight.push((io.slot, io.op, block));
            self.queue.push_back((io.slot, io.len as i64));
            Submitted::Queued
        }
        fn reap(&mut self, _: usize, _: Option<u64>, out: &mut Vec<Completion>) -> std::io::Result<()> {
            if let Some((slot, result)) = self.queue.pop_front() {
                self.inflight.retain(|&(s, _, _)| s != slot);
                out.push(Completion { slot, result });
            }
            Ok(())
        }
    }

    #[test]
    fn under_verify_a_queue_of_32_on_4_blocks_never_has_a_read_and_a_write_of_one_block_in_flight() {
        let mut p = crate::test_plan(
            "engine = 'posix'\ndir = '/nonexistent'\nrw = 'randrw'\nsize = '16k'\nbs = '4k'\nverify = 'fail'",
        );
        p.sync = SyncMode::None;
        // Laid out with headers, as preparation does.
        let mut disk = vec![0x42u8; 16 << 10];
        crate::verify::stamp_laid_out(&mut disk, 7, 0, 4096, 0);
        let v = crate::verify::Verifier::for_plan(&p, 1, Some(&crate::verify::LaidOut { run_id: 7, files: vec![0] }));
        let rec = WorkerRecorder::new(ioscope_engine::OP_KINDS);
        let stop = AtomicBool::new(false);
        let bufs = IoBuffers::new(32, 4096, 1);
        let overlaps = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let engine = Overlaps { disk, queue: Default::default(), inflight: Vec::new(), overlaps: overlaps.clone() };
        let mut w = Worker::new(engine, bufs, IoGen::for_plan(&p, 1), &rec, &stop, p.sync, 32);
        w.verify = Some(crate::verify::WorkerVerify::new(&v, 32, 4096));
        // Slices of 50 ms until it has done enough of each (how long that takes depends on
        // the machine's load, not on the loop), at most 200 of them.
        let mut slices = 0;
        let t = loop {
            let start = now_ns();
            w.run(&Schedule {
                start_ns: start,
                deadline_ns: start + 50_000_000,
                interval_ns: None,
                phase_ns: 0,
                arrivals: Arrivals::uniform(),
            });
            slices += 1;
            let t = totals(&rec);
            if (t[0].counts.ops > 100 && t[1].counts.ops > 100) || slices == 200 {
                break t;
            }
        };
        let (reads, writes, checked) = (t[0].counts.ops, t[1].counts.ops, &t[Op::Verify as usize]);
        assert!(reads > 100 && writes > 100, "{reads} reads, {writes} writes in {slices} slices of 50 ms");
        assert_eq!(
            overlaps.load(Relaxed),
            0,
            "no I/O was issued over a write of its block in flight (or a write over a read)"
        );
        assert_eq!((checked.counts.errors, checked.skipped), (0, 0), "no mismatch and none unverified");
        assert!(checked.counts.ops > 100, "{:?}", checked.counts);
    }

    #[test]
    fn open_loop_response_time_includes_queueing_behind_a_stall() {
        let mut p = plan(1);
        p.sync = SyncMode::None;
        // 1,000 IOPS for 300 ms with one 100 ms stall at the 50th I/O: the ~100 I/Os due
        // during the stall start late, and their response time must show it.
        let engine = StallOnce { n: 0, stall_at: 50, stall: Duration::from_millis(100) };
        let rec = run_with(engine, &p, Some(1_000_000), 300_000_000);
        let (mut latency, mut service) = (ioscope_metrics::Histogram::new(), ioscope_metrics::Histogram::new());
        for op in totals(&rec) {
            latency.merge(&op.latency_ns);
            service.merge(&op.service_ns);
        }
        let ops = latency.count();
        // Never more than scheduled; how many of the 300 got done depends on the CPU this
        // thread got on a shared machine, so only that the stall was reached is required.
        assert!((51..=301).contains(&ops), "the schedule is kept: {ops} I/Os in 300 ms");
        // Service time: only the stalled I/O is slow.
        assert!(service.quantile(0.9).unwrap() < 1_000_000, "service p90 {:?}", service.quantile(0.9));
        // Response time: about a third of the I/Os waited; the worst waited ~100 ms.
        assert!(latency.quantile(0.9).unwrap() > 10_000_000, "response p90 {:?}", latency.quantile(0.9));
        assert!(latency.max().unwrap() >= 99_000_000);
        let waited = latency
            .nonzero()
            .filter(|(i, _)| ioscope_metrics::histogram::bucket_range(*i).0 > 2_000_000)
            .map(|(_, c)| c)
            .sum::<u64>();
        // At least the ~100 I/Os due during the stall waited (more may, on a busy machine),
        // and those due before it did not.
        assert!(waited >= 80 && waited < ops - 30, "{waited} of {ops} I/Os show queueing delay");
    }

    #[test]
    fn uring_at_depths_1_to_256_completes_every_io_and_latency_grows_with_depth() {
        crate::clock::init();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        std::fs::write(&path, vec![7u8; 64 << 20]).unwrap();
        let mut p50s = Vec::new();
        for depth in [1u32, 8, 32, 256] {
            let p = crate::test_plan(&format!(
                "engine = 'uring'\nrw = 'randread'\nsize = '64m'\niodepth = {depth}\ndir = '{}'",
                dir.path().display()
            ));
            let rec = WorkerRecorder::new(ioscope_engine::OP_KINDS);
            let stop = AtomicBool::new(false);
            let bufs = IoBuffers::new(depth as usize, 4096, 1);
            let mut engine = ioscope_engine::uring::UringEngine::new(false);
            let spec = OpenSpec { files: vec![path.clone()], queue_depth: depth, ..Default::default() };
            engine.open(&spec, &bufs).unwrap();
            let mut w = Worker::new(engine, bufs, IoGen::for_plan(&p, 1), &rec, &stop, p.sync, depth);
            let start = now_ns();
            w.run(&Schedule {
                start_ns: start,
                deadline_ns: start + 300_000_000,
                interval_ns: None,
                phase_ns: 0,
                arrivals: Arrivals::uniform(),
            });
            let read = &totals(&rec)[Op::Read as usize];
            assert_eq!(read.counts.errors, 0, "depth {depth}");
            assert!(read.counts.ops > 1000, "depth {depth}: {} reads", read.counts.ops);
            assert_eq!(read.counts.bytes, read.counts.ops * 4096, "depth {depth}: every read is whole");
            assert_eq!(read.service_ns.count(), read.counts.ops);
            p50s.push(read.latency_ns.quantile(0.5).unwrap());
        }
        // The page cache serves a batch one I/O after another: the deeper the queue, the
        // longer each I/O waits for the ones submitted with it. Neighbouring depths may swap
        // on a busy machine; 256 in flight against 1 never does.
        assert!(p50s[3] > 4 * p50s[0], "p50 at depths 1, 8, 32, 256: {p50s:?} ns");
    }

    #[test]
    fn a_short_read_is_an_error_not_a_success() {
        crate::clock::init();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        // The plan says 64 MiB; the file was truncated behind ioscope's back to 1 MiB and
        // 701 bytes: most random reads land past its end, one returns 701 bytes.
        std::fs::write(&path, vec![7u8; (1 << 20) + 701]).unwrap();
        for engine in ["posix", "uring"] {
            let depth = if engine == "posix" { 1 } else { 4 };
            let p = crate::test_plan(&format!(
                "engine = '{engine}'\nrw = 'randread'\nsize = '64m'\niodepth = {depth}\ndir = '{}'",
                dir.path().display()
            ));
            let rec = WorkerRecorder::new(ioscope_engine::OP_KINDS);
            let stop = AtomicBool::new(false);
            let bufs = IoBuffers::new(depth as usize, 4096, 1);
            let spec = OpenSpec { files: vec![path.clone()], queue_depth: depth, ..Default::default() };
            let start = now_ns();
            let schedule = Schedule {
                start_ns: start,
                deadline_ns: start + 100_000_000,
                interval_ns: None,
                phase_ns: 0,
                arrivals: Arrivals::uniform(),
            };
            let errors = if engine == "posix" {
                let mut e = ioscope_engine::posix::PosixEngine::default();
                e.open(&spec, &bufs).unwrap();
                let mut w = Worker::new(e, bufs, IoGen::for_plan(&p, 1), &rec, &stop, p.sync, depth);
                w.run(&schedule);
                w.errors
            } else {
                let mut e = ioscope_engine::uring::UringEngine::new(false);
                e.open(&spec, &bufs).unwrap();
                let mut w = Worker::new(e, bufs, IoGen::for_plan(&p, 1), &rec, &stop, p.sync, depth);
                w.run(&schedule);
                w.errors
            };
            let mut reader = ioscope_metrics::WorkerReader::new(ioscope_engine::OP_KINDS).naming(errors::kind_name);
            let read = &reader.take(&rec)[Op::Read as usize];
            assert!(read.counts.errors > read.counts.ops, "{engine}: {:?}", read.counts);
            assert_eq!(read.errors_by_kind, [("short read".to_string(), read.counts.errors)], "{engine}");
            assert_eq!(read.counts.bytes, read.counts.ops * 4096, "{engine}: bytes per op is not falsely low");
            assert!(errors.0[0].text.contains("short read"), "{engine}: {:?}", errors.0);
        }
    }
}
