//! The `nfs` engine: ioscope's [`Engine`] over NFSv3 from user space. Each worker's
//! engine mounts the target, looks up the working-set files, and keeps its I/Os in flight
//! over `nconnect` connections ([`Pipe`]). READ and WRITE carry the I/O; writes are
//! UNSTABLE unless the plan asks for O_DSYNC (FILE_SYNC then); fsync/fdatasync are COMMIT.
//! There is no client cache: every read reaches the server. File and directory operations
//! of file-tree workloads go by path over a connection of their own ([`Paths`]): open is
//! a LOOKUP, close COMMITs what was written, create is CREATE + WRITEs + COMMIT, copy
//! READs and WRITEs, move is RENAME, getattr/setattr are GETATTR/SETATTR.
//!
//! A COMMIT makes durable only the UNSTABLE write whose reply carried the verifier the
//! COMMIT reply carries. The core sends the COMMIT that follows a write (`sync = "fsync"`)
//! in that write's slot, so, as the Linux client does per request, the engine compares the
//! COMMIT's verifier with that of the slot's last write. If it changed (the server
//! restarted in between and may have dropped the write), the COMMIT fails with its own
//! error, "NFS write verifier changed: uncommitted writes lost" ([`VERIFIER_CHANGED`]). The
//! Linux client would write the data again from its page cache; ioscope keeps no copy of
//! what it wrote, so it counts the failure instead and the write is not counted durable.

use crate::client::{auth_of, mount, Mounted, NfsError};
use crate::fs::Paths;
use crate::pipe::{CallError, Landing, Pipe, Reply};
use crate::proto::{self, proc3, Fh, Stable, NFS_PROG};
use crate::rpc::RpcError;
use crate::target::Target;
use ioscope_engine::{Completion, Engine, FileReq, Io, IoBuffers, Op, OpenSpec, Submission, Submitted};
use std::time::Duration;

pub struct NfsEngine {
    target: Target,
    mounted: Option<Mounted>,
    pipe: Option<Pipe>,
    /// Operations by path (file-tree workloads).
    paths: Option<Paths>,
    /// Open files: the working set's, or the one a file-tree workload opened.
    files: Vec<Fh>,
    stable: Stable,
    /// The operation in flight in each slot and its bytes (replies are decoded by them).
    slot_ops: Vec<(Op, u32)>,
    /// Each slot's I/O buffer (address, length): a READ's data goes there, as a kernel
    /// engine's read fills it (data validation checks it): read from the socket straight
    /// into it for large reads ([`LAND_FROM`]), copied from the reply for small ones.
    slot_bufs: Vec<(usize, usize)>,
    /// Files written UNSTABLE since their last COMMIT (committed at close).
    dirty: Vec<bool>,
    /// Why the server is out of reach, once it is.
    lost: Option<String>,
    /// Per slot: the write verifier of its last write if the server kept it UNSTABLE.
    slot_verfs: Vec<Option<[u8; 8]>>,
}

/// The result of a COMMIT replying `commit_verf` in a slot whose last write was UNSTABLE
/// with `write_verf` (None: no such write): 0, or [`VERIFIER_CHANGED`].
pub(crate) fn commit_result(write_verf: Option<[u8; 8]>, commit_verf: [u8; 8]) -> i64 {
    match write_verf {
        Some(v) if v != commit_verf => VERIFIER_CHANGED,
        _ => 0,
    }
}

impl NfsEngine {
    pub fn new(target: Target) -> Self {
        NfsEngine {
            target,
            mounted: None,
            pipe: None,
            paths: None,
            files: Vec::new(),
            stable: Stable::Unstable,
            slot_ops: Vec::new(),
            slot_bufs: Vec::new(),
            dirty: Vec::new(),
            lost: None,
            slot_verfs: Vec::new(),
        }
    }
}

impl NfsEngine {
    /// After a call went unanswered (counted as timed out): a server may drop a request it
    /// cannot serve now (nfs-ganesha does) and go on, so the run goes on if the server
    /// answers a NULL call; if that goes unanswered too, the server is out of reach.
    fn check_alive(&mut self, why: String) {
        let answer = match self.paths.as_mut() {
            Some(paths) => paths.ping().map_err(|e| e.to_string()),
            None => Err("no connection to ask".to_string()),
        };
        if let Err(e) = answer {
            self.lost.get_or_insert_with(|| format!("{why}, and no answer to a NULL call either ({e})"));
        }
    }
}

/// READs of this many bytes or more have their data read from the socket straight into
/// the slot's buffer (a landing: one copy of the data less, and the bounded read of the
/// reply's head is one system call more, which pays only for large reads).
pub(crate) const LAND_FROM: u32 = 64 << 10;

/// Failed results carrying an NFS status are `-(NFS_STATUS_BASE + status)`, above every
/// errno, so that [`Engine::error_text`] can name the status (NFS3ERR_NOSPC, ...).
pub const NFS_STATUS_BASE: i64 = ioscope_engine::STATUS_BASE;

/// A COMMIT whose verifier differs from that of the UNSTABLE writes it covers: the server
/// restarted in between and the writes may be gone. Between the errnos and the statuses.
pub const VERIFIER_CHANGED: i64 = -(NFS_STATUS_BASE - 1);

fn status_result(status: u32) -> i64 {
    -(NFS_STATUS_BASE + status as i64)
}

/// The result of a reply to `op` of `asked` bytes: the bytes moved, a failing status, or
/// EPROTO for a reply that does not decode or claims more bytes than were asked (they
/// would be counted as moved when they were not).
pub(crate) fn reply_result(op: Op, asked: u32, body: &[u8]) -> i64 {
    slot_reply(op, asked, Reply { body, landed: None }, None, &mut None)
}

/// [`reply_result`] for the I/O of one slot: a READ's data is in the slot's buffer
/// `read_into` (address, length) already if it landed there, or is copied there, as a
/// kernel engine's read fills it (data validation checks it); a WRITE's reply sets `verf`
/// to its verifier when the data is UNSTABLE, and a COMMIT's is compared with it.
fn slot_reply(op: Op, asked: u32, reply: Reply, read_into: Option<(usize, usize)>, verf: &mut Option<[u8; 8]>) -> i64 {
    let body = reply.body;
    let decoded = match (op, reply.landed) {
        (Op::Read, Some(landed)) => proto::read_res_landed(body, landed).map(|r| r.map(|(n, _)| i64::from(n))),
        (Op::Read, None) => proto::read_res_data(body).map(|r| {
            r.map(|(data, _)| {
                if let Some((at, len)) = read_into.filter(|_| data.len() <= asked as usize) {
                    // SAFETY: the slot's buffer (allocated by IoBuffers, alive while the
                    // engine is open) is the in-flight READ's alone until this completion
                    // is handed back, as with io_uring.
                    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), at as *mut u8, data.len().min(len)) };
                }
                data.len() as i64
            })
        }),
        (Op::Write, _) => proto::write_res(body).map(|r| {
            r.map(|(n, committed, v)| {
                *verf = (committed == proto::UNSTABLE).then_some(v);
                i64::from(n)
            })
        }),
        (Op::Fsync | Op::Fdatasync, _) => proto::commit_res(body).map(|r| r.map(|v| commit_result(*verf, v))),
        _ => proto::status_res(body).map(|r| r.map(|_| 0)),
    };
    match decoded {
        Ok(Ok(n)) if n <= i64::from(asked) => n,
        Ok(Ok(_)) | Err(_) => -(libc::EPROTO as i64),
        Ok(Err(status)) => status_result(status),
    }
}

fn io_error(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

impl Engine for NfsEngine {
    fn name(&self) -> &'static str {
        "nfs"
    }

    fn describe(&self) -> String {
        match &self.mounted {
            Some(m) => format!(
                "nfs v3 {} export {} ({} connection(s), rtmax {}, wtmax {}, writes {})",
                m.nfs_addr,
                m.export,
                self.target.nconnect,
                m.fsinfo.rtmax,
                m.fsinfo.wtmax,
                if self.stable == Stable::FileSync { "FILE_SYNC" } else { "UNSTABLE + COMMIT" }
            ),
            None => "nfs".into(),
        }
    }

    fn submission(&self) -> Submission {
        Submission { queued: true, batched_submit: false }
    }

    fn open(&mut self, spec: &OpenSpec, buffers: &IoBuffers) -> std::io::Result<()> {
        let m = mount(&self.target).map_err(io_error)?;
        let block = buffers.slot_len() as u32;
        if block > m.fsinfo.rtmax || (spec.write && block > m.fsinfo.wtmax) {
            return Err(io_error(format!(
                "block size {block} is larger than the server takes (rtmax {}, wtmax {})",
                m.fsinfo.rtmax, m.fsinfo.wtmax
            )));
        }
        let mut session = crate::client::Session::connect(&self.target, &m).map_err(io_error)?;
        self.files = spec
            .files
            .iter()
            .map(|p| {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                session
                    .lookup(&m.dir, &name)
                    .map(|(fh, _)| fh)
                    .map_err(|e| io_error(format!("{}/{name}: {e}", m.export)))
            })
            .collect::<Result<_, _>>()?;
        self.stable = if spec.dsync { Stable::FileSync } else { Stable::Unstable };
        self.dirty = vec![false; self.files.len()];
        self.slot_ops = vec![(Op::Read, 0); buffers.slots()];
        self.slot_verfs = vec![None; buffers.slots()];
        self.slot_bufs =
            (0..buffers.slots() as u32).map(|i| (buffers.slot_ptr(i) as usize, buffers.slot_len())).collect();
        self.pipe = Some(
            Pipe::connect(m.nfs_addr, self.target.nconnect, auth_of(&self.target), self.target.timeout)
                .map_err(io_error)?,
        );
        self.paths = Some(Paths::connect(&self.target, &m).map_err(io_error)?);
        self.mounted = Some(m);
        Ok(())
    }

    fn file_op(&mut self, req: &FileReq<'_>, buffers: &mut IoBuffers) -> i64 {
        let Some(paths) = self.paths.as_mut() else { return -(libc::EBADF as i64) };
        let path = req.path;
        let done = match (req.op, req.to) {
            (Op::Open, _) => paths.open(path).map(|fh| {
                // Handles are opened and closed last-in, first-out (one per worker today).
                self.files.truncate(req.file as usize);
                self.dirty.truncate(req.file as usize);
                self.files.push(fh);
                self.dirty.push(false);
                0
            }),
            (Op::Close, _) => {
                let k = req.file as usize;
                let committed = match (self.files.get(k), self.dirty.get(k)) {
                    (Some(fh), Some(true)) => paths.commit(fh).map(|()| 0),
                    _ => Ok(0),
                };
                self.files.truncate(k);
                self.dirty.truncate(k);
                committed
            }
            (Op::Create, _) => paths.create_new(path, req.size, buffers.slot(0)).map(|n| n as i64),
            (Op::Delete, _) => paths.remove(path).map(|()| 0),
            (Op::Mkdir, _) => paths.mkdir(path).map(|()| 0),
            (Op::Rmdir, _) => paths.rmdir(path).map(|()| 0),
            (Op::Getattr, _) => paths.getattr(path).map(|_| 0),
            (Op::List, _) => paths.readdir(path).map(|_| 0),
            (Op::Setattr, _) => paths.touch(path).map(|()| 0),
            (Op::Copy, Some(to)) => paths.copy_new(path, to).map(|n| n as i64),
            (Op::Move, Some(to)) => paths.rename_new(path, to).map(|()| 0),
            _ => return -(libc::EINVAL as i64),
        };
        match done {
            Ok(n) => n,
            Err(NfsError::Status { status, .. }) => status_result(status),
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

    fn submit(&mut self, io: &Io, buffers: &mut IoBuffers) -> Submitted {
        let (Some(pipe), Some(fh)) = (self.pipe.as_mut(), self.files.get(io.file as usize)) else {
            return Submitted::Done(-(libc::EBADF as i64));
        };
        let stable = self.stable;
        let proc_ = match io.op {
            Op::Read => proc3::READ,
            Op::Write => proc3::WRITE,
            Op::Fsync | Op::Fdatasync => proc3::COMMIT,
            _ => return Submitted::Done(-(libc::EOPNOTSUPP as i64)),
        };
        self.slot_ops[io.slot as usize] = (io.op, io.len);
        match io.op {
            Op::Write => {
                self.dirty[io.file as usize] |= stable == Stable::Unstable;
                // Set again by the reply if the server keeps this write UNSTABLE.
                self.slot_verfs[io.slot as usize] = None;
            }
            Op::Fsync | Op::Fdatasync => self.dirty[io.file as usize] = false,
            _ => {}
        }
        let tag = io.slot as u64;
        let land =
            self.slot_bufs.get(io.slot as usize).filter(|(_, len)| io.len >= LAND_FROM && io.len as usize <= *len);
        let sent = match (io.op, land) {
            (Op::Read, Some(&(at, _))) => {
                // SAFETY: the slot's buffer (allocated by IoBuffers, alive while the engine is
                // open) is the in-flight READ's alone until its completion is handed back,
                // as with io_uring; the pipe stops writing there once the call failed.
                let landing = unsafe { Landing::new(at as *mut u8, io.len as usize, proto::read_res_split) };
                let args = |e: &mut crate::xdr::Encoder| proto::read_args(e, fh, io.offset, io.len);
                pipe.send_with_landing(NFS_PROG, 3, proc_, tag, args, landing)
            }
            (Op::Read, None) => pipe.send_with(NFS_PROG, 3, proc_, tag, |e| proto::read_args(e, fh, io.offset, io.len)),
            // The data goes from the I/O buffer to the socket, not through the record.
            (Op::Write, _) => pipe.send_with_data(
                NFS_PROG,
                3,
                proc_,
                tag,
                |e| proto::write_args_head(e, fh, io.offset, stable, io.len),
                &buffers.slot(io.slot)[..io.len as usize],
            ),
            _ => pipe.send_with(NFS_PROG, 3, proc_, tag, |e| proto::commit_args(e, fh)),
        };
        match sent {
            Ok(()) => Submitted::Queued,
            Err(_) => {
                if pipe.dead() {
                    self.lost.get_or_insert_with(|| format!("{} closed every connection", pipe.addr));
                }
                Submitted::Done(-(libc::ECONNRESET as i64))
            }
        }
    }

    fn reap(&mut self, min: usize, timeout_ns: Option<u64>, out: &mut Vec<Completion>) -> std::io::Result<()> {
        let Some(pipe) = self.pipe.as_mut() else { return Ok(()) };
        let (slot_ops, slot_bufs, addr) = (&self.slot_ops, &self.slot_bufs, pipe.addr);
        let slot_verfs = &mut self.slot_verfs;
        let mut unanswered = None;
        pipe.poll_replies(min, timeout_ns.map(Duration::from_nanos), &mut |tag, reply| {
            let slot = tag as u32;
            let result = match reply {
                Ok(reply) => {
                    let (op, asked) = slot_ops[slot as usize];
                    let read_into = slot_bufs.get(slot as usize).copied();
                    match slot_verfs.get_mut(slot as usize) {
                        Some(verf) => slot_reply(op, asked, reply, read_into, verf),
                        None => reply_result(op, asked, reply.body),
                    }
                }
                Err(CallError::Timeout(t)) => {
                    unanswered = Some(format!("{addr} sent no reply within {t:?}"));
                    -(libc::ETIMEDOUT as i64)
                }
                Err(CallError::Lost(_)) => -(libc::ECONNRESET as i64),
                Err(CallError::Refused(_)) => -(libc::EPROTO as i64),
            };
            out.push(Completion { slot, result });
        });
        if pipe.dead() {
            self.lost.get_or_insert_with(|| format!("{} closed every connection", pipe.addr));
        }
        if let Some(why) = unanswered {
            self.check_alive(why);
        }
        Ok(())
    }

    fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }

    fn error_text(&self, result: i64) -> String {
        match -result {
            r if r == -VERIFIER_CHANGED => "NFS write verifier changed: uncommitted writes lost".into(),
            r if r >= NFS_STATUS_BASE => proto::status_name((r - NFS_STATUS_BASE) as u32).to_string(),
            _ => ioscope_engine::error_name(result),
        }
    }

    /// COMMITs every file written UNSTABLE since its last COMMIT (data the server holds
    /// only in memory would otherwise outlive the run unsaved), then disconnects.
    fn close(&mut self) {
        if let Some(pipe) = self.pipe.as_mut().filter(|p| !p.dead() && self.lost.is_none()) {
            let mut pending = 0;
            for (i, fh) in self.files.iter().enumerate().filter(|(i, _)| self.dirty[*i]) {
                if pipe.send_with(NFS_PROG, 3, proc3::COMMIT, i as u64, |e| proto::commit_args(e, fh)).is_ok() {
                    pending += 1;
                }
            }
            pipe.poll_with(pending, Some(self.target.timeout), &mut |_, _| {});
        }
        self.dirty.iter_mut().for_each(|d| *d = false);
        self.pipe = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_named_by_their_nfs_status_or_errno() {
        let e = NfsEngine::new(Target::parse("nfs://h/e").unwrap());
        assert_eq!(e.error_text(status_result(28)), "NFS3ERR_NOSPC");
        assert_eq!(e.error_text(status_result(10008)), "NFS3ERR_JUKEBOX");
        assert!(e.error_text(-(libc::ETIMEDOUT as i64)).contains("timed out"));
        assert_eq!(e.error_text(VERIFIER_CHANGED), "NFS write verifier changed: uncommitted writes lost");
    }

    #[test]
    fn a_commit_makes_durable_only_a_write_with_its_verifier() {
        assert_eq!(commit_result(Some([1; 8]), [1; 8]), 0, "no restart between the write and its COMMIT");
        assert_eq!(
            commit_result(Some([1; 8]), [2; 8]),
            VERIFIER_CHANGED,
            "the server restarted: the write may be gone"
        );
        assert_eq!(commit_result(None, [2; 8]), 0, "the write was stable already, or there was none");
    }

    /// Found while writing the reply property tests (decode_tests.rs): a READ or WRITE
    /// reply whose count is larger than the I/O was counted as that many bytes moved.
    #[test]
    fn a_reply_claiming_more_bytes_than_asked_is_a_protocol_error() {
        let mut read = crate::xdr::Encoder::default();
        read.u32(0).bool(false).u32(8192).bool(false).opaque(&[7; 8192]);
        assert_eq!(reply_result(Op::Read, 4096, &read.buf), -(libc::EPROTO as i64));
        assert_eq!(reply_result(Op::Read, 8192, &read.buf), 8192);
        let mut write = crate::xdr::Encoder::default();
        write.u32(0).bool(false).bool(false).u32(5000).u32(2).fixed(&[0; 8]);
        assert_eq!(reply_result(Op::Write, 4096, &write.buf), -(libc::EPROTO as i64));
        assert_eq!(reply_result(Op::Write, 5000, &write.buf), 5000);
        assert_eq!(reply_result(Op::Write, 4096, &[0, 0, 0, 28]), status_result(28));
        assert_eq!(reply_result(Op::Fsync, 0, &[0, 0]), -(libc::EPROTO as i64));
    }
}
