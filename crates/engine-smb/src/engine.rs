//! The `smb` engine: each worker thread has one SMB session on one TCP connection
//! ([`crate::conn`]), with `iodepth` READ or WRITE requests in flight on it. `submit`
//! queues a request's bytes; `reap` sends what is queued and receives replies until enough
//! have completed (batched submission: the core stamps the issue time before reaping).
//! Every request is bounded by the target's timeout: one that outlives it completes as
//! ETIMEDOUT, never as a success.
//!
//! Path operations (one at a time, each CREATE, the call, CLOSE): open (CREATE, kept open
//! until close), create (CREATE new + WRITEs), delete (CREATE with delete-on-close),
//! getattr (CREATE for attributes: its reply carries them), setattr (SET_INFO of the
//! last-write time), mkdir, rmdir, list (QUERY_DIRECTORY, every page), copy (server-side
//! COPYCHUNK), move (SET_INFO FileRenameInformation). Flat-set fsync is FLUSH; dsync opens
//! with write-through.

use crate::conn::Sink;
use crate::errors;
use crate::session::{Failed, Session};
use crate::wire::{self, FileId};
use ioscope_engine::{Completion, Engine, FileReq, Io, IoBuffers, Op, OpenSpec, Submission, Submitted};
use ioscope_engine_table::smb::Target;
use std::time::{Duration, Instant};

/// A file the engine reads and writes: its handle.
struct Open {
    id: FileId,
}

pub struct SmbEngine {
    target: Target,
    session: Option<Session>,
    files: Vec<Open>,
    write: bool,
    write_through: bool,
    /// READ flags (unbuffered, SMB 3.0.2 and later).
    read_flags: u8,
    /// Per slot: the buffer's address and length.
    bufs: Vec<(usize, usize)>,
    lost: Option<String>,
}

impl SmbEngine {
    pub fn new(target: Target) -> SmbEngine {
        SmbEngine {
            target,
            session: None,
            files: Vec::new(),
            write: false,
            write_through: false,
            read_flags: 0,
            bufs: Vec::new(),
            lost: None,
        }
    }

    fn path_of(&self, p: &std::path::Path) -> Option<String> {
        self.target.path_of(&p.to_string_lossy()).map(str::to_string)
    }

    /// Notes a result that says the connection is gone: the run ends.
    fn note(&mut self, result: i64) {
        let gone = self.session.as_ref().is_some_and(Session::gone);
        if result < 0 && (gone || errors::is_gone(result)) && self.lost.is_none() {
            let why = errors::error_text(result);
            self.lost = Some(format!(
                "{}:{} share {}: the connection is gone ({why})",
                self.target.host, self.target.port, self.target.share
            ));
        }
    }

    /// Opens `path` for reads (and writes).
    fn open_file(&mut self, path: &str, write: bool) -> Result<FileId, Failed> {
        let through = self.write_through;
        let s = self.session.as_mut().ok_or(-(libc::EBADF as i64))?;
        s.open_file(path, write, through).map(|c| c.file_id)
    }

    /// Closes a handle (bounded by the timeout; nothing once the connection is gone).
    fn close_file(&mut self, id: &FileId) -> i64 {
        match self.session.as_mut() {
            Some(s) if !s.gone() => s.close(id).map_or_else(|e| e, |()| 0),
            _ => 0,
        }
    }

    fn path_op(&mut self, req: &FileReq<'_>, buffers: &mut IoBuffers) -> Result<i64, Failed> {
        let path = self.path_of(req.path).ok_or(-(libc::EXDEV as i64))?;
        let to = match req.to {
            Some(to) => Some(self.path_of(to).ok_or(-(libc::EXDEV as i64))?),
            None => None,
        };
        let s = self.session.as_mut().ok_or(-(libc::EBADF as i64))?;
        let p = path.as_str();
        match (req.op, to.as_deref()) {
            (Op::Create, _) => s.create_with(p, req.size, buffers.slot(0)).map(|n| n as i64),
            (Op::Delete, _) => s.remove(p, false).map(|()| 0),
            (Op::Rmdir, _) => s.remove(p, true).map(|()| 0),
            (Op::Mkdir, _) => s.mkdir(p).map(|()| 0),
            (Op::Getattr, _) => match s.stat(p)? {
                Some(_) => Ok(0),
                None => Err(errors::status_result(0xC000_0034)),
            },
            (Op::Setattr, _) => s.touch(p).map(|()| 0),
            (Op::List, _) => s.list(p).map(|_| 0),
            (Op::Copy, Some(to)) => s.copy(p, to).map(|n| n as i64),
            (Op::Move, Some(to)) => s.rename(p, to, false).map(|()| 0),
            _ => Err(-(libc::EINVAL as i64)),
        }
    }
}

impl Engine for SmbEngine {
    fn name(&self) -> &'static str {
        "smb"
    }

    fn describe(&self) -> String {
        match &self.session {
            Some(s) => format!(
                "smb {}:{} share {} dir {:?} as {} ({}, {}, max read {} KiB, max write {} KiB, {} request(s) in flight)",
                self.target.host,
                self.target.port,
                self.target.share,
                self.target.dir,
                self.target.user,
                s.negotiated.dialect,
                s.negotiated.protection,
                s.negotiated.max_read_bytes >> 10,
                s.negotiated.max_write_bytes >> 10,
                self.bufs.len().max(1)
            ),
            None => "smb".to_string(),
        }
    }

    fn submission(&self) -> Submission {
        Submission { queued: true, batched_submit: true }
    }

    fn open(&mut self, spec: &OpenSpec, buffers: &IoBuffers) -> std::io::Result<()> {
        let slots = spec.queue_depth.max(1) as usize;
        // A request costs one credit per 64 KiB; keep enough asked for a full queue.
        let per_request = buffers.slot_len().div_ceil(65536).max(1);
        let credits = u16::try_from(slots.saturating_mul(per_request).saturating_add(16)).unwrap_or(u16::MAX).min(8192);
        let s = Session::connect(&self.target, credits).map_err(std::io::Error::other)?;
        let largest = buffers.slot_len();
        let (max_r, max_w) = (s.negotiated.max_read_bytes as usize, s.negotiated.max_write_bytes as usize);
        if (max_r > 0 && largest > max_r) || (spec.write && max_w > 0 && largest > max_w) {
            return Err(std::io::Error::other(format!(
                "{}:{}: the server takes at most {} KiB per read and {} KiB per write; bs is {} KiB",
                self.target.host,
                self.target.port,
                max_r >> 10,
                max_w >> 10,
                largest >> 10
            )));
        }
        self.write = spec.write;
        self.write_through = spec.dsync;
        self.read_flags =
            if spec.direct && s.conn.agreed.dialect >= wire::DIALECT_302 { wire::READ_UNBUFFERED } else { 0 };
        self.session = Some(s);
        self.files = Vec::new();
        for p in &spec.files {
            let path = self.path_of(p).ok_or_else(|| {
                std::io::Error::other(format!("{} is not in share {}", p.display(), self.target.share_root()))
            })?;
            let id = self
                .open_file(&path, spec.write)
                .map_err(|e| std::io::Error::other(format!("{}: {}", p.display(), errors::error_text(e))))?;
            self.files.push(Open { id });
        }
        self.bufs = (0..slots).map(|i| (buffers.slot_ptr(i as u32) as usize, buffers.slot_len())).collect();
        Ok(())
    }

    fn submit(&mut self, io: &Io, buffers: &mut IoBuffers) -> Submitted {
        let Some(&(at, cap)) = self.bufs.get(io.slot as usize) else { return Submitted::Done(-(libc::EBADF as i64)) };
        let len = io.len as usize;
        if len == 0 {
            return Submitted::Done(0);
        }
        if len > cap && matches!(io.op, Op::Read | Op::Write) {
            return Submitted::Done(-(libc::EINVAL as i64));
        }
        let Some(open) = self.files.get(io.file as usize) else { return Submitted::Done(-(libc::EBADF as i64)) };
        let id = open.id;
        let Some(s) = self.session.as_mut() else { return Submitted::Done(-(libc::EBADF as i64)) };
        let (tag, off, n) = (u64::from(io.slot), io.offset, io.len);
        let sent = match io.op {
            // The reply's data lands in the slot's buffer (`cap` bytes, the in-flight read's
            // alone until its completion is handed back).
            Op::Read => {
                let flags = self.read_flags;
                s.conn.send(
                    wire::READ,
                    len,
                    tag,
                    Sink::Into { at, cap: len },
                    |o| wire::read(o, &id, off, n, flags),
                    &[],
                    false,
                )
            }
            Op::Write => {
                let data = &buffers.slot(io.slot)[..len];
                s.conn.send(wire::WRITE, len, tag, Sink::Count, |o| wire::write(o, &id, off, n, 0), data, true)
            }
            Op::Fsync | Op::Fdatasync => {
                s.conn.send(wire::FLUSH, 0, tag, Sink::Status, |o| wire::flush(o, &id), &[], false)
            }
            _ => return Submitted::Done(-(libc::EOPNOTSUPP as i64)),
        };
        match sent {
            Ok(_) => Submitted::Queued,
            Err(e) => {
                self.note(e);
                Submitted::Done(e)
            }
        }
    }

    fn reap(&mut self, min: usize, timeout_ns: Option<u64>, out: &mut Vec<Completion>) -> std::io::Result<()> {
        let Some(s) = self.session.as_mut() else { return Ok(()) };
        // Each request has the target's timeout as its deadline: this waits at most that
        // long, plus a margin, for the completions asked for.
        let bound = Instant::now() + s.target.timeout + Duration::from_secs(1);
        let deadline = timeout_ns.map_or(bound, |t| bound.min(Instant::now() + Duration::from_nanos(t)));
        let _ = s.conn.pump(deadline, |c| c.completed_count() >= min.min(c.completed_count() + c.in_flight()));
        let from = out.len();
        out.extend(s.conn.completed().map(|d| Completion { slot: d.tag as u32, result: d.result }));
        for c in &out[from..] {
            self.note(c.result);
        }
        Ok(())
    }

    fn file_op(&mut self, req: &FileReq<'_>, buffers: &mut IoBuffers) -> i64 {
        let result = match req.op {
            Op::Open => {
                let Some(path) = self.path_of(req.path) else { return -(libc::EXDEV as i64) };
                // Handles are opened and closed last-in, first-out (one per worker today).
                let gone: Vec<Open> = self.files.drain((req.file as usize).min(self.files.len())..).collect();
                for o in &gone {
                    self.close_file(&o.id);
                }
                match self.open_file(&path, self.write || req.write) {
                    Ok(id) => {
                        self.files.push(Open { id });
                        0
                    }
                    Err(e) => e,
                }
            }
            Op::Close => {
                let k = (req.file as usize).min(self.files.len());
                let closed: Vec<Open> = self.files.drain(k..).collect();
                let mut r = 0;
                for o in &closed {
                    let c = self.close_file(&o.id);
                    if r == 0 {
                        r = c;
                    }
                }
                r
            }
            _ => self.path_op(req, buffers).unwrap_or_else(|e| e),
        };
        self.note(result);
        result
    }

    fn error_text(&self, result: i64) -> String {
        errors::error_text(result)
    }

    fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }

    /// Closes the handles and logs off (each bounded by the timeout; nothing is waited for
    /// once the connection is gone). Replies still in flight are not waited for.
    fn close(&mut self) {
        if let Some(s) = self.session.as_mut() {
            s.conn.release_buffers();
        }
        let files = std::mem::take(&mut self.files);
        for o in &files {
            self.close_file(&o.id);
        }
        self.session = None;
    }
}

impl Drop for SmbEngine {
    fn drop(&mut self) {
        self.close();
    }
}
