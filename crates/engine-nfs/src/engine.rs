//! The `nfs` engine: ioscope's [`Engine`] over NFSv3 from user space. Each worker's
//! engine mounts the target, looks up the working-set files, and keeps its I/Os in flight
//! over `nconnect` connections ([`Pipe`]). READ and WRITE carry the I/O; writes are
//! UNSTABLE unless the plan asks for O_DSYNC (FILE_SYNC then); fsync/fdatasync are COMMIT.
//! There is no client cache: every read reaches the server. File and directory operations
//! of file-tree workloads go by path over a connection of their own ([`Paths`]): open is
//! a LOOKUP, close COMMITs what was written, create is CREATE + WRITEs + COMMIT, copy
//! READs and WRITEs, move is RENAME, getattr/setattr are GETATTR/SETATTR.

use crate::client::{auth_of, mount, Mounted, NfsError};
use crate::fs::Paths;
use crate::pipe::{CallError, Pipe};
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
    /// The operation in flight in each slot (replies are decoded by it).
    slot_ops: Vec<Op>,
    /// Files written UNSTABLE since their last COMMIT (committed at close).
    dirty: Vec<bool>,
    /// Why the server is out of reach, once it is.
    lost: Option<String>,
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
            dirty: Vec::new(),
            lost: None,
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

/// Failed results carrying an NFS status are `-(NFS_STATUS_BASE + status)`, above every
/// errno, so that [`Engine::error_text`] can name the status (NFS3ERR_NOSPC, ...).
pub const NFS_STATUS_BASE: i64 = 1 << 20;

fn status_result(status: u32) -> i64 {
    -(NFS_STATUS_BASE + status as i64)
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
        self.slot_ops = vec![Op::Read; buffers.slots()];
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
        self.slot_ops[io.slot as usize] = io.op;
        match io.op {
            Op::Write if stable == Stable::Unstable => self.dirty[io.file as usize] = true,
            Op::Fsync | Op::Fdatasync => self.dirty[io.file as usize] = false,
            _ => {}
        }
        let tag = io.slot as u64;
        let sent = match io.op {
            Op::Read => pipe.send_with(NFS_PROG, 3, proc_, tag, |e| proto::read_args(e, fh, io.offset, io.len)),
            // The data goes from the I/O buffer to the socket, not through the record.
            Op::Write => pipe.send_with_data(
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
        let (slot_ops, addr) = (&self.slot_ops, pipe.addr);
        let mut unanswered = None;
        pipe.poll_with(min, timeout_ns.map(Duration::from_nanos), &mut |tag, reply| {
            let slot = tag as u32;
            let result = match reply {
                Ok(body) => {
                    let decoded = match slot_ops[slot as usize] {
                        Op::Read => proto::read_res(body).map(|r| r.map(|(n, _)| n as i64)),
                        Op::Write => proto::write_res(body).map(|r| r.map(|(n, _, _)| n as i64)),
                        _ => proto::status_res(body).map(|r| r.map(|_| 0)),
                    };
                    match decoded {
                        Ok(Ok(n)) => n,
                        Ok(Err(status)) => status_result(status),
                        Err(_) => -(libc::EPROTO as i64),
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
    }
}
