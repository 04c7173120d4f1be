//! The `nfs` engine over NFSv4.1 (`?version=4.1`). Each worker's engine is a client of
//! its own with a session of `depth + 2` slots ([`session`](super::session)); it OPENs the
//! working-set files (keeping the stateids OPEN returns) and keeps its I/Os in flight over
//! `nconnect` connections ([`Pipe`]), each I/O one compound `SEQUENCE, PUTFH, READ |
//! WRITE | COMMIT` on the I/O's own slot. Writes are UNSTABLE unless the plan asks for
//! O_DSYNC (FILE_SYNC4 then); fsync/fdatasync are COMMIT, checked against the verifier of
//! the slot's last write as over NFSv3 ([`VERIFIER_CHANGED`]). File and directory
//! operations of file-tree workloads go by path ([`Paths41`]). A thread renews the lease
//! when the run sends nothing for a third of it; at close the files are CLOSEd and the
//! session and client destroyed. Timeouts and a lost server end the run as over NFSv3.

use super::fs::{Open, Paths41};
use super::proto::{self, op, status, Reply, StateId};
use super::session::{Renewal, SlotSeq, RESENDS};
use crate::client::NfsError;
use crate::engine::{commit_result, LAND_FROM, NFS_STATUS_BASE, VERIFIER_CHANGED};
use crate::pipe::{CallError, Landing, Pipe};
use crate::proto::{Stable, NFS_PROG};
use crate::rpc::RpcError;
use crate::target::Target;
use ioscope_engine::{Completion, Engine, FileReq, Io, IoBuffers, Op, OpenSpec, Submission, Submitted};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

pub struct Nfs41Engine {
    target: Target,
    paths: Option<Paths41>,
    pipe: Option<Pipe>,
    renewal: Option<Renewal>,
    /// Compounds sent (the renewal thread renews when it stands still).
    activity: Arc<AtomicU64>,
    /// Open files: the working set's, or the one a file-tree workload opened.
    files: Vec<Open>,
    stable: Stable,
    /// Per slot: the I/O in flight, its sequence ids, its buffer, its last write's verifier.
    slots: Vec<Slot>,
    /// Slots whose call was refused at SEQUENCE for its id, to send again (kept: no
    /// allocation per reap).
    resend: Vec<u32>,
    /// Files written UNSTABLE since their last COMMIT (committed at close).
    dirty: Vec<bool>,
    lost: Option<String>,
    /// What the server allows: largest read and write, lease.
    rtmax: u32,
    wtmax: u32,
    /// What failed of the teardown at close (a CLOSE, DESTROY_SESSION, DESTROY_CLIENTID).
    teardown: Option<String>,
}

impl Nfs41Engine {
    pub fn new(target: Target) -> Self {
        Nfs41Engine {
            target,
            paths: None,
            pipe: None,
            renewal: None,
            activity: Arc::new(AtomicU64::new(0)),
            files: Vec::new(),
            stable: Stable::Unstable,
            slots: Vec::new(),
            resend: Vec::new(),
            dirty: Vec::new(),
            lost: None,
            rtmax: 0,
            wtmax: 0,
            teardown: None,
        }
    }

    /// Sends slot `slot`'s I/O as one compound `SEQUENCE, PUTFH, READ | WRITE | COMMIT`
    /// with the slot's next sequence id; a failure is the I/O's result.
    fn send(&mut self, slot: u32) -> Result<(), i64> {
        let (Some(pipe), Some(paths), Some(s)) =
            (self.pipe.as_mut(), self.paths.as_ref(), self.slots.get_mut(slot as usize))
        else {
            return Err(-(libc::EBADF as i64));
        };
        let io = s.io;
        let Some(f) = self.files.get(io.file as usize) else { return Err(-(libc::EBADF as i64)) };
        let (stable, info) = (self.stable, &paths.calls.info);
        let (seq, highest) = (s.seq.take(), info.highest_slot());
        s.in_flight = seq;
        let head = |e: &mut crate::xdr::Encoder| {
            proto::compound(e, 3);
            proto::sequence(e, &info.id, seq, slot, highest);
            proto::putfh(e, &f.fh);
        };
        let (tag, state): (u64, &StateId) = (slot as u64, &f.state);
        let land = io.len >= LAND_FROM && io.len as usize <= s.buf.1;
        let sent = match io.op {
            Op::Read if land => {
                // SAFETY: the slot's buffer (allocated by IoBuffers, alive while the engine
                // is open, at least io.len bytes) is the in-flight READ's alone until its
                // completion is handed back, as with io_uring; the pipe stops writing there
                // once the call failed.
                let landing = unsafe { Landing::new(s.buf.0 as *mut u8, io.len as usize, proto::read_res_split) };
                let args = |e: &mut crate::xdr::Encoder| {
                    head(e);
                    proto::read(e, state, io.offset, io.len);
                };
                pipe.send_with_landing(NFS_PROG, 4, proto::COMPOUND, tag, args, landing)
            }
            Op::Read => pipe.send_with(NFS_PROG, 4, proto::COMPOUND, tag, |e| {
                head(e);
                proto::read(e, state, io.offset, io.len);
            }),
            Op::Write => {
                // SAFETY: the slot's buffer (allocated by IoBuffers, alive while the engine
                // is open, at least io.len bytes: checked at submit) holds this write's data
                // until its completion is handed back; it goes from there to the socket.
                let data = unsafe { std::slice::from_raw_parts(s.buf.0 as *const u8, io.len as usize) };
                pipe.send_with_data(
                    NFS_PROG,
                    4,
                    proto::COMPOUND,
                    tag,
                    |e| {
                        head(e);
                        proto::write_head(e, state, io.offset, stable, io.len);
                    },
                    data,
                )
            }
            _ => pipe.send_with(NFS_PROG, 4, proto::COMPOUND, tag, |e| {
                head(e);
                proto::commit(e);
            }),
        };
        // One writer (this thread): a plain store, no locked instruction per I/O.
        self.activity.store(self.activity.load(Relaxed).wrapping_add(1), Relaxed);
        sent.map_err(|_| {
            if pipe.dead() {
                self.lost.get_or_insert_with(|| format!("{} closed every connection", pipe.addr));
            }
            -(libc::ECONNRESET as i64)
        })
    }

    /// After a call went unanswered: the run goes on if the server answers a NULL call.
    fn check_alive(&mut self, why: String) {
        let answer = match self.paths.as_mut() {
            Some(paths) => paths.ping().map_err(|e| e.to_string()),
            None => Err("no connection to ask".to_string()),
        };
        if let Err(e) = answer {
            self.lost.get_or_insert_with(|| format!("{why}, and no answer to a NULL call either ({e})"));
        }
    }

    /// What failed when the engine closed its files and destroyed its session and client
    /// (None: all of it succeeded, or it has not closed).
    pub fn teardown_failure(&self) -> Option<&str> {
        self.teardown.as_deref()
    }

    /// Counts a compound sent: a plain load and store (this thread is the only writer; the
    /// renewal thread only reads), no locked instruction per I/O.
    fn bump(&self) {
        self.activity.store(self.activity.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// The renewal thread's count of SEQUENCE-only compounds (for tests).
    pub fn renewals(&self) -> u64 {
        self.renewal.as_ref().map_or(0, |r| r.renewals.load(Relaxed))
    }
}

/// One slot of the session, as the engine uses it.
#[derive(Clone, Copy, Debug)]
struct Slot {
    /// The I/O in flight (or last in flight) in the slot.
    io: Io,
    seq: SlotSeq,
    /// The sequence id of the call in flight.
    in_flight: u32,
    /// Times the I/O in flight was sent again after its id was refused.
    resends: u32,
    /// The write verifier of the slot's last write if the server kept it UNSTABLE.
    verf: Option<[u8; 8]>,
    /// The slot's I/O buffer (address, length): a READ's data is copied there, a WRITE's
    /// data sent from there.
    buf: (usize, usize),
}

fn status_result(status: u32) -> i64 {
    -(NFS_STATUS_BASE + status as i64)
}

/// What a reply says of one slot's I/O.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct SlotReply {
    /// Bytes moved, a failing status, or EPROTO for a reply that does not decode or claims
    /// more bytes than were asked.
    pub result: i64,
    /// The status SEQUENCE answered (NFS4_OK when it passed or the reply does not say).
    pub seq_status: u32,
}

/// The reply to a `SEQUENCE, PUTFH, op` compound of `asked` bytes; a READ's data is in
/// `read_into` (address, length) already if `landed` there (the reply then ends where its
/// data began), or is copied there; a WRITE sets `verf` when UNSTABLE and a COMMIT
/// compares its verifier with it.
pub(crate) fn slot_reply(
    op: Op,
    asked: u32,
    body: &[u8],
    landed: Option<usize>,
    read_into: Option<(usize, usize)>,
    verf: &mut Option<[u8; 8]>,
) -> SlotReply {
    let mut seq_status = status::OK;
    let decoded = (|| -> proto::Res<i64> {
        let mut r = Reply::parse(body)?;
        if let Err(s) = r.sequence()? {
            seq_status = s;
            return Ok(Err(s));
        }
        if r.uncached_retry() {
            seq_status = status::RETRY_UNCACHED_REP;
            return Ok(Err(seq_status));
        }
        if let Err(s) = r.plain(op::PUTFH, 0)? {
            return Ok(Err(s));
        }
        Ok(match (op, landed) {
            (Op::Read, Some(n)) => r.read_landed(n)?.map(|_| n as i64),
            (Op::Read, None) => r.read()?.map(|(data, _)| {
                if let Some((at, len)) = read_into.filter(|_| data.len() <= asked as usize) {
                    // SAFETY: the slot's buffer (allocated by IoBuffers, alive while the
                    // engine is open) is the in-flight READ's alone until this completion
                    // is handed back, as with io_uring.
                    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), at as *mut u8, data.len().min(len)) };
                }
                data.len() as i64
            }),
            (Op::Write, _) => r.write()?.map(|(n, committed, v)| {
                *verf = (committed == proto::UNSTABLE).then_some(v);
                i64::from(n)
            }),
            _ => r.commit()?.map(|v| commit_result(*verf, v)),
        })
    })();
    let result = match decoded {
        Ok(Ok(n)) if n <= i64::from(asked) => n,
        Ok(Ok(_)) | Err(_) => -(libc::EPROTO as i64),
        Ok(Err(status)) => status_result(status),
    };
    SlotReply { result, seq_status }
}

fn io_error(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// The name of a result: an NFS4ERR_ status, the changed verifier, or an errno.
pub fn error_text(result: i64) -> String {
    match -result {
        r if r == -VERIFIER_CHANGED => "NFS write verifier changed: uncommitted writes lost".into(),
        r if r >= NFS_STATUS_BASE => proto::status_name((r - NFS_STATUS_BASE) as u32).to_string(),
        _ => ioscope_engine::error_name(result),
    }
}

impl Engine for Nfs41Engine {
    fn name(&self) -> &'static str {
        "nfs"
    }

    fn describe(&self) -> String {
        match &self.paths {
            Some(p) => format!(
                "nfs v4.1 {} path {} ({} connection(s), {} session slots, lease {}s, rtmax {}, wtmax {}, writes {})",
                p.calls.info.addr,
                self.target.path,
                self.target.nconnect,
                p.calls.info.slots,
                p.calls.info.lease.as_secs(),
                self.rtmax,
                self.wtmax,
                if self.stable == Stable::FileSync { "FILE_SYNC4" } else { "UNSTABLE4 + COMMIT" }
            ),
            None => "nfs v4.1".into(),
        }
    }

    fn submission(&self) -> Submission {
        Submission { queued: true, batched_submit: false }
    }

    fn open(&mut self, spec: &OpenSpec, buffers: &IoBuffers) -> std::io::Result<()> {
        let slots = buffers.slots() as u32;
        let mut paths = Paths41::connect(&self.target, slots).map_err(io_error)?;
        let dir = paths.dir_of(Path::new(&self.target.url_of(&self.target.path))).map_err(io_error)?;
        let fs = paths.fs_attrs(&dir).map_err(io_error)?;
        let clamp = |v: Option<u64>| v.unwrap_or(1 << 20).min(u32::MAX as u64) as u32;
        (self.rtmax, self.wtmax) = (clamp(fs.maxread).min(paths.rtmax), clamp(fs.maxwrite).min(paths.wtmax));
        let block = buffers.slot_len() as u32;
        if block > self.rtmax || (spec.write && block > self.wtmax) {
            return Err(io_error(format!(
                "block size {block} is larger than the server takes (rtmax {}, wtmax {})",
                self.rtmax, self.wtmax
            )));
        }
        let mut files = Vec::new();
        for p in &spec.files {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            match paths.open_in(&dir, &name, spec.write, proto::Create::No) {
                Ok(f) => files.push(f),
                Err(e) => {
                    for f in &files {
                        let _ = paths.close(f);
                    }
                    return Err(io_error(format!("{}/{name}: {e}", self.target.path)));
                }
            }
        }
        self.files = files;
        self.stable = if spec.dsync { Stable::FileSync } else { Stable::Unstable };
        self.dirty = vec![false; self.files.len()];
        self.slots = (0..slots)
            .map(|i| Slot {
                io: Io { op: Op::Read, file: 0, offset: 0, len: 0, slot: i },
                seq: SlotSeq::default(),
                in_flight: 0,
                resends: 0,
                verf: None,
                buf: (buffers.slot_ptr(i) as usize, buffers.slot_len()),
            })
            .collect();
        self.resend = Vec::with_capacity(slots as usize);
        let info = paths.calls.info.clone();
        self.pipe = Some(
            Pipe::connect(info.addr, self.target.nconnect, crate::client::auth_of(&self.target), self.target.timeout)
                .map_err(io_error)?,
        );
        self.renewal = Some(Renewal::start(&self.target, &info, slots + 1, self.activity.clone()).map_err(io_error)?);
        self.paths = Some(paths);
        Ok(())
    }

    fn file_op(&mut self, req: &FileReq<'_>, buffers: &mut IoBuffers) -> i64 {
        let Some(paths) = self.paths.as_mut() else { return -(libc::EBADF as i64) };
        let path = req.path;
        let done = match (req.op, req.to) {
            (Op::Open, _) => paths.open(path, true).map(|f| {
                // Handles are opened and closed last-in, first-out (one per worker today).
                self.files.truncate(req.file as usize);
                self.dirty.truncate(req.file as usize);
                self.files.push(f);
                self.dirty.push(false);
                0
            }),
            (Op::Close, _) => {
                let k = req.file as usize;
                let done = match (self.files.get(k), self.dirty.get(k)) {
                    (Some(f), dirty) => {
                        let committed = match dirty {
                            Some(true) => paths.commit(&f.fh).map(|_| ()),
                            _ => Ok(()),
                        };
                        let closed = paths.close(f);
                        committed.and(closed).map(|()| 0)
                    }
                    _ => Ok(0),
                };
                self.files.truncate(k);
                self.dirty.truncate(k);
                done
            }
            (Op::Create, _) => paths.create_new(path, req.size, buffers.slot(0)).map(|n| n as i64),
            (Op::Delete, _) => paths.remove(path).map(|()| 0),
            (Op::Mkdir, _) => paths.mkdir(path).map(|()| 0),
            (Op::Rmdir, _) => paths.rmdir(path).map(|()| 0),
            (Op::Getattr, _) => paths.getattr(path).map(|_| 0),
            (Op::List, _) => paths.list_len(path).map(|_| 0),
            (Op::Setattr, _) => paths.touch(path).map(|()| 0),
            (Op::Copy, Some(to)) => paths.copy_new(path, to).map(|n| n as i64),
            (Op::Move, Some(to)) => paths.rename_new(path, to).map(|()| 0),
            _ => return -(libc::EINVAL as i64),
        };
        self.bump();
        match done {
            Ok(n) => n,
            Err(NfsError::Status4 { status, .. }) => status_result(status),
            Err(NfsError::Rpc(e @ RpcError::Timeout { .. })) => {
                self.check_alive(e.to_string());
                -(libc::ETIMEDOUT as i64)
            }
            Err(NfsError::Rpc(e @ (RpcError::Closed { .. } | RpcError::Io { .. }))) => {
                self.lost.get_or_insert_with(|| e.to_string());
                -(libc::ECONNRESET as i64)
            }
            Err(_) => -(libc::EPROTO as i64),
        }
    }

    fn submit(&mut self, io: &Io, _buffers: &mut IoBuffers) -> Submitted {
        let (Some(slot), Some(dirty)) = (self.slots.get_mut(io.slot as usize), self.dirty.get_mut(io.file as usize))
        else {
            return Submitted::Done(-(libc::EBADF as i64));
        };
        match io.op {
            Op::Read => {}
            Op::Write => {
                *dirty |= self.stable == Stable::Unstable;
                // Set again by the reply if the server keeps this write UNSTABLE.
                slot.verf = None;
            }
            Op::Fsync | Op::Fdatasync => *dirty = false,
            _ => return Submitted::Done(-(libc::EOPNOTSUPP as i64)),
        }
        if io.op == Op::Write && io.len as usize > slot.buf.1 {
            return Submitted::Done(-(libc::EINVAL as i64));
        }
        (slot.io, slot.resends) = (*io, 0);
        match self.send(io.slot) {
            Ok(()) => Submitted::Queued,
            Err(result) => Submitted::Done(result),
        }
    }

    fn reap(&mut self, min: usize, timeout_ns: Option<u64>, out: &mut Vec<Completion>) -> std::io::Result<()> {
        let start = out.len();
        loop {
            let Some(pipe) = self.pipe.as_mut() else { return Ok(()) };
            let (slots, resend, addr) = (&mut self.slots, &mut self.resend, pipe.addr);
            let mut unanswered = None;
            let want = min.saturating_sub(out.len() - start);
            pipe.poll_replies(want, timeout_ns.map(Duration::from_nanos), &mut |tag, reply| {
                let Some(s) = slots.get_mut(tag as usize) else { return };
                let result = match reply {
                    Ok(reply) => {
                        let r = slot_reply(s.io.op, s.io.len, reply.body, reply.landed, Some(s.buf), &mut s.verf);
                        // A call refused for its id executed nothing: sent again.
                        if s.seq.answered(s.in_flight, r.seq_status) && s.resends < RESENDS {
                            s.resends += 1;
                            resend.push(tag as u32);
                            return;
                        }
                        r.result
                    }
                    Err(CallError::Timeout(t)) => {
                        unanswered = Some(format!("{addr} sent no reply within {t:?}"));
                        -(libc::ETIMEDOUT as i64)
                    }
                    Err(CallError::Lost(_)) => -(libc::ECONNRESET as i64),
                    Err(CallError::Refused(_)) => -(libc::EPROTO as i64),
                };
                out.push(Completion { slot: tag as u32, result });
            });
            if pipe.dead() {
                self.lost.get_or_insert_with(|| format!("{} closed every connection", pipe.addr));
            }
            if let Some(why) = unanswered {
                self.check_alive(why);
            }
            let again = std::mem::take(&mut self.resend);
            for &slot in &again {
                if let Err(result) = self.send(slot) {
                    out.push(Completion { slot, result });
                }
            }
            let resent = !again.is_empty();
            self.resend = again;
            self.resend.clear();
            // What was sent again is waited for as the I/Os it is.
            if !resent || out.len() - start >= min {
                return Ok(());
            }
        }
    }

    fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }

    fn error_text(&self, result: i64) -> String {
        error_text(result)
    }

    /// COMMITs every file written UNSTABLE since its last COMMIT, CLOSEs every open file,
    /// stops the lease renewal, and destroys the session and the client.
    fn close(&mut self) {
        let reachable = self.lost.is_none() && self.pipe.as_ref().is_some_and(|p| !p.dead());
        if let Some(renewal) = self.renewal.as_mut() {
            renewal.stop();
        }
        self.renewal = None;
        self.pipe = None;
        if let Some(paths) = self.paths.as_mut() {
            if reachable {
                let mut failed = Vec::new();
                for (i, f) in self.files.iter().enumerate() {
                    if self.dirty.get(i) == Some(&true) {
                        failed.extend(paths.commit(&f.fh).err());
                    }
                    failed.extend(paths.close(f).err());
                }
                failed.extend(paths.teardown());
                self.teardown = failed.first().map(|e| e.to_string());
            }
        }
        self.files.clear();
        self.dirty.clear();
        // Unreachable: the session is left to expire rather than waited on for each call.
        if let Some(mut p) = self.paths.take() {
            if !reachable {
                p.calls.forget();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xdr::Encoder;

    fn reply(status: u32, results: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u32(status).string("").u32(results.len() as u32);
        for (opnum, st, body) in results {
            e.u32(*opnum).u32(*st);
            e.buf.extend_from_slice(body);
        }
        e.buf
    }

    fn seq_ok() -> Vec<u8> {
        let mut s = Encoder::default();
        s.fixed(&[1; 16]).u32(1).u32(0).u32(3).u32(3).u32(0);
        s.buf
    }

    #[test]
    fn v4_failures_are_named_by_their_nfs4err_status() {
        assert_eq!(error_text(status_result(28)), "NFS4ERR_NOSPC");
        assert_eq!(error_text(status_result(10052)), "NFS4ERR_BADSESSION");
        assert_eq!(error_text(status_result(10011)), "NFS4ERR_EXPIRED");
        assert!(error_text(-(libc::ETIMEDOUT as i64)).contains("timed out"));
        assert_eq!(error_text(VERIFIER_CHANGED), "NFS write verifier changed: uncommitted writes lost");
    }

    #[test]
    fn a_v4_slot_reply_gives_the_bytes_the_status_or_a_protocol_error() {
        let seq = seq_ok();
        let mut read = Encoder::default();
        read.bool(false).opaque(&[7; 4096]);
        let body = reply(0, &[(op::SEQUENCE, 0, &seq), (op::PUTFH, 0, &[]), (op::READ, 0, &read.buf)]);
        let mut buf = vec![0u8; 4096];
        let r = slot_reply(Op::Read, 4096, &body, None, Some((buf.as_mut_ptr() as usize, 4096)), &mut None);
        assert_eq!(r, SlotReply { result: 4096, seq_status: 0 });
        assert!(buf.iter().all(|b| *b == 7), "the data is in the slot's buffer");
        assert_eq!(
            slot_reply(Op::Read, 1024, &body, None, None, &mut None).result,
            -(libc::EPROTO as i64),
            "more than asked"
        );

        let mut write = Encoder::default();
        write.u32(4096).u32(0).fixed(&[5; 8]);
        let body = reply(0, &[(op::SEQUENCE, 0, &seq), (op::PUTFH, 0, &[]), (op::WRITE, 0, &write.buf)]);
        let mut verf = None;
        assert_eq!(slot_reply(Op::Write, 4096, &body, None, None, &mut verf).result, 4096);
        assert_eq!(verf, Some([5; 8]), "an UNSTABLE write keeps its verifier");
        let mut commit = Encoder::default();
        commit.fixed(&[6; 8]);
        let body = reply(0, &[(op::SEQUENCE, 0, &seq), (op::PUTFH, 0, &[]), (op::COMMIT, 0, &commit.buf)]);
        assert_eq!(slot_reply(Op::Fsync, 0, &body, None, None, &mut verf).result, VERIFIER_CHANGED);

        let body = reply(28, &[(op::SEQUENCE, 0, &seq), (op::PUTFH, 0, &[]), (op::WRITE, 28, &[])]);
        assert_eq!(slot_reply(Op::Write, 4096, &body, None, None, &mut None).result, status_result(28));
        let body = reply(status::SEQ_MISORDERED, &[(op::SEQUENCE, status::SEQ_MISORDERED, &[])]);
        assert_eq!(
            slot_reply(Op::Read, 4096, &body, None, None, &mut None),
            SlotReply { result: status_result(status::SEQ_MISORDERED), seq_status: status::SEQ_MISORDERED }
        );
        assert_eq!(slot_reply(Op::Read, 4096, &[0, 0], None, None, &mut None).result, -(libc::EPROTO as i64));
        // nfs-ganesha's answer to a retried id it did not cache: SEQUENCE passes, the next
        // operation says NFS4ERR_RETRY_UNCACHED_REP; the call is sent again, not failed.
        let held = status::RETRY_UNCACHED_REP;
        let body = reply(held, &[(op::SEQUENCE, 0, &seq), (op::PUTFH, held, &[])]);
        assert_eq!(
            slot_reply(Op::Write, 4096, &body, None, None, &mut None),
            SlotReply { result: status_result(held), seq_status: held }
        );
        let mut slot = SlotSeq::default();
        let id = slot.take();
        assert!(slot.answered(id, held), "sent again with the next id");
        assert_eq!(slot.take(), id + 1);
    }
}
