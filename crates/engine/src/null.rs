//! The null engine: performs no I/O. It completes every request at once (or, at a
//! queue depth above 1, queues it and completes it on the next reap), so a run with it
//! measures the cost of the core loop itself.

use crate::{Completion, Engine, FileReq, Io, IoBuffers, Op, OpenSpec, Submission, Submitted};

#[derive(Default)]
pub struct NullEngine {
    queued: bool,
    pending: Vec<Completion>,
}

impl Engine for NullEngine {
    fn name(&self) -> &'static str {
        "null"
    }
    fn submission(&self) -> Submission {
        // Synchronous at depth 1 (the cheapest loop), queued above it once opened.
        Submission { queued: self.queued, batched_submit: true }
    }
    fn open(&mut self, spec: &OpenSpec, _buffers: &IoBuffers) -> std::io::Result<()> {
        self.queued = spec.queue_depth > 1;
        self.pending = Vec::with_capacity(spec.queue_depth as usize);
        Ok(())
    }
    #[inline]
    fn submit(&mut self, io: &Io, _buffers: &mut IoBuffers) -> Submitted {
        let bytes = if io.op.is_data() { io.len as i64 } else { 0 };
        if self.queued {
            self.pending.push(Completion { slot: io.slot, result: bytes });
            Submitted::Queued
        } else {
            Submitted::Done(bytes)
        }
    }
    fn file_op(&mut self, req: &FileReq<'_>, _buffers: &mut IoBuffers) -> i64 {
        match req.op {
            Op::Create => req.size as i64,
            _ => 0,
        }
    }
    fn reap(&mut self, _min: usize, _timeout_ns: Option<u64>, out: &mut Vec<Completion>) -> std::io::Result<()> {
        out.append(&mut self.pending);
        Ok(())
    }
}
