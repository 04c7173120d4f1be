//! The `smb` engine: each worker thread has one SMB session on one TCP connection, driven
//! by the thread's own current-thread runtime, with `iodepth` READ or WRITE requests in
//! flight on it (the server's credits allow it). `submit` queues a request's future;
//! `reap` runs the runtime until enough have completed (batched submission: the core
//! stamps the issue time before reaping). Every request is bounded by the target's
//! timeout: one that outlives it completes as ETIMEDOUT, never as a success.
//!
//! Path operations (one at a time, each CREATE, the call, CLOSE): open (CREATE, kept open
//! until close), create (CREATE new + WRITEs), delete (CREATE with delete-on-close),
//! getattr (CREATE for attributes: its reply carries them), setattr (SET_INFO of the
//! last-write time), mkdir, rmdir, list (QUERY_DIRECTORY, every page), copy (server-side
//! COPYCHUNK), move (SET_INFO FileRenameInformation). Flat-set fsync is FLUSH; dsync opens
//! with write-through.

use crate::errors;
use crate::session::{self, Failed, Session};
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use ioscope_engine::{Completion, Engine, FileReq, Io, IoBuffers, Op, OpenSpec, Submission, Submitted};
use ioscope_engine_table::smb::Target;
use smb::File;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

type InFlight = Pin<Box<dyn Future<Output = (u32, i64)> + Send>>;

/// A file the engine reads and writes: its path in the share, its handle, and the bytes it
/// is known to hold (the crate answers a read at or past the size it saw at open with 0
/// bytes without asking the server, so a file written past that is opened again).
struct Open {
    path: String,
    file: Option<Arc<File>>,
    known_size: u64,
    opened_size: u64,
}

pub struct SmbEngine {
    target: Target,
    session: Option<Session>,
    files: Vec<Open>,
    write: bool,
    write_through: bool,
    unbuffered: bool,
    /// Per slot: the buffer's address and length.
    bufs: Vec<(usize, usize)>,
    in_flight: FuturesUnordered<InFlight>,
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
            unbuffered: false,
            bufs: Vec::new(),
            in_flight: FuturesUnordered::new(),
            lost: None,
        }
    }

    fn path_of(&self, p: &std::path::Path) -> Option<String> {
        self.target.path_of(&p.to_string_lossy()).map(str::to_string)
    }

    /// Notes a result that says the connection is gone: the run ends.
    fn note(&mut self, result: i64) {
        if result < 0 && errors::is_gone(result) && self.lost.is_none() {
            let why = errors::error_text(result);
            self.lost = Some(format!(
                "{}:{} share {}: the connection is gone ({why})",
                self.target.host, self.target.port, self.target.share
            ));
            if let Some(s) = self.session.as_mut() {
                s.gone = true;
            }
        }
    }

    /// Opens `path` (a handle for reads and writes).
    fn open_file(&self, path: &str, write: bool) -> Result<(Arc<File>, u64), Failed> {
        use smb::resource::GetLen;
        let s = self.session.as_ref().ok_or(-(libc::EBADF as i64))?;
        let tree = s.tree()?;
        let through = self.write_through;
        s.block(async move {
            let f = session::open_file(&tree, path, write, through).await?;
            let size = f.get_len().await.unwrap_or(0);
            Ok((Arc::new(f), size))
        })
    }

    /// Closes a handle (bounded by the timeout), inside the runtime's context.
    fn close_file(&self, f: Arc<File>) -> i64 {
        let Some(s) = self.session.as_ref() else { return 0 };
        let r = if s.gone {
            Ok(())
        } else {
            let f2 = f.clone();
            s.block(async move { f2.close().await.map_err(|e| errors::result_of(&e)) })
        };
        s.drop_here(f);
        r.map_or_else(|e| e, |()| 0)
    }

    fn path_op(&mut self, req: &FileReq<'_>, buffers: &mut IoBuffers) -> Result<i64, Failed> {
        let path = self.path_of(req.path).ok_or(-(libc::EXDEV as i64))?;
        let to = match req.to {
            Some(to) => Some(self.path_of(to).ok_or(-(libc::EXDEV as i64))?),
            None => None,
        };
        let s = self.session.as_ref().ok_or(-(libc::EBADF as i64))?;
        let tree = s.tree()?;
        let p = path.as_str();
        match (req.op, to.as_deref()) {
            (Op::Create, _) => {
                let src = buffers.slot(0).to_vec();
                let max = s.negotiated.max_write_bytes;
                s.block(async move { session::create_with(&tree, p, req.size, max, &src).await }).map(|n| n as i64)
            }
            (Op::Delete, _) => s.block(async move { session::remove(&tree, p, false).await }).map(|()| 0),
            (Op::Rmdir, _) => s.block(async move { session::remove(&tree, p, true).await }).map(|()| 0),
            (Op::Mkdir, _) => s.block(async move { session::mkdir(&tree, p).await }).map(|()| 0),
            (Op::Getattr, _) => match s.block(async move { session::stat(&tree, p).await })? {
                Some(_) => Ok(0),
                None => Err(errors::status_result(0xC000_0034)),
            },
            (Op::Setattr, _) => s.block(async move { session::touch(&tree, p).await }).map(|()| 0),
            (Op::List, _) => s.block(async move { session::list(&tree, p).await }).map(|_| 0),
            (Op::Copy, Some(to)) => s.block(async move { session::copy(&tree, p, to).await }).map(|n| n as i64),
            (Op::Move, Some(to)) => s.block(async move { session::rename(&tree, p, to, false).await }).map(|()| 0),
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
                "smb {}:{} share {} dir {:?} as {} ({}, encryption {}, max read {} KiB, max write {} KiB, {} request(s) in flight)",
                self.target.host,
                self.target.port,
                self.target.share,
                self.target.dir,
                self.target.user,
                s.negotiated.dialect,
                self.target.encrypt.name(),
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
        self.unbuffered = spec.direct;
        self.session = Some(s);
        self.files = Vec::new();
        for p in &spec.files {
            let path = self.path_of(p).ok_or_else(|| {
                std::io::Error::other(format!("{} is not in share {}", p.display(), self.target.share_root()))
            })?;
            let (file, size) = self
                .open_file(&path, spec.write)
                .map_err(|e| std::io::Error::other(format!("{}: {}", p.display(), errors::error_text(e))))?;
            let known = size.max(spec.file_size);
            self.files.push(Open { path, file: Some(file), known_size: known, opened_size: size });
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
        let k = io.file as usize;
        // A read past the size the handle saw at open, of a file since written past it:
        // a fresh handle sees the size.
        let stale = self
            .files
            .get(k)
            .is_some_and(|o| io.op == Op::Read && io.offset >= o.opened_size && io.offset < o.known_size);
        if stale {
            let path = self.files[k].path.clone();
            match self.open_file(&path, self.write) {
                Ok((f, size)) => {
                    let old = self.files[k].file.replace(f);
                    self.files[k].opened_size = size;
                    if let Some(old) = old {
                        self.close_file(old);
                    }
                }
                Err(e) => {
                    self.note(e);
                    return Submitted::Done(e);
                }
            }
        }
        let Some(open) = self.files.get_mut(k) else { return Submitted::Done(-(libc::EBADF as i64)) };
        let Some(file) = open.file.clone() else { return Submitted::Done(-(libc::EBADF as i64)) };
        let (slot, off, timeout, unbuffered) = (io.slot, io.offset, self.target.timeout, self.unbuffered);
        let fut: InFlight = match io.op {
            Op::Read => Box::pin(async move {
                // SAFETY: (at, cap) is the slot's buffer (allocated by IoBuffers, alive
                // while the engine is open), the in-flight read's alone until its
                // completion is handed back; `len <= cap` was checked. A future dropped
                // (timed out, or the engine closed) writes nothing more.
                let buf = unsafe { std::slice::from_raw_parts_mut(at as *mut u8, len) };
                // The crate copies the reply into `buf` unchecked: a server that sends more
                // than asked makes it panic, caught here as this read's failure (EPROTO).
                let read = std::panic::AssertUnwindSafe(file.read_block(buf, off, None, unbuffered));
                match tokio::time::timeout(timeout, read.catch_unwind()).await {
                    Ok(Err(_)) => (slot, -(libc::EPROTO as i64)),
                    Ok(Ok(r)) => (slot, done(Ok(r))),
                    Err(elapsed) => (slot, done(Err(elapsed))),
                }
            }),
            Op::Write => {
                let data: Arc<[u8]> = Arc::from(&buffers.slot(slot)[..len]);
                open.known_size = open.known_size.max(off.saturating_add(len as u64));
                Box::pin(async move {
                    let r = tokio::time::timeout(timeout, file.write_block_zc(data, off, None)).await;
                    (slot, done(r))
                })
            }
            Op::Fsync | Op::Fdatasync => Box::pin(async move {
                let r = tokio::time::timeout(timeout, file.flush()).await;
                (slot, done(r.map(|r| r.map(|()| 0))))
            }),
            _ => return Submitted::Done(-(libc::EOPNOTSUPP as i64)),
        };
        self.in_flight.push(fut);
        Submitted::Queued
    }

    fn reap(&mut self, min: usize, timeout_ns: Option<u64>, out: &mut Vec<Completion>) -> std::io::Result<()> {
        let Some(s) = self.session.as_ref() else { return Ok(()) };
        let deadline = timeout_ns.map(|t| Instant::now() + Duration::from_nanos(t));
        let in_flight = &mut self.in_flight;
        let mut got = Vec::new();
        // Each request is under the target's timeout (see submit): this waits at most that
        // long, plus a margin for the runtime, for the first completion.
        let bound = s.target.timeout + Duration::from_secs(1);
        let until = deadline.map_or(Instant::now() + bound, |d| d.min(Instant::now() + bound));
        // Polled under `catching`: a panic of the crate on a reply is that request's
        // failure (see submit), not the process's end.
        let caught = ioscope_engine::caught::catching(|| {
            s.rt().block_on(async {
                let mut polled = false;
                loop {
                    while let Some(Some(d)) = in_flight.next().now_or_never() {
                        got.push(d);
                    }
                    if got.len() >= min || in_flight.is_empty() {
                        // Once at least, so that the connection's tasks send what was queued.
                        if polled || in_flight.is_empty() {
                            return;
                        }
                        tokio::task::yield_now().await;
                        polled = true;
                        continue;
                    }
                    match tokio::time::timeout_at(until.into(), in_flight.next()).await {
                        Ok(Some(d)) => got.push(d),
                        Ok(None) | Err(_) => return,
                    }
                    polled = true;
                }
            })
        });
        if let Err(why) = caught {
            self.lost.get_or_insert_with(|| format!("the SMB client failed on a reply of the server: {why}"));
        }
        for (slot, result) in got {
            self.note(result);
            out.push(Completion { slot, result });
        }
        Ok(())
    }

    fn file_op(&mut self, req: &FileReq<'_>, buffers: &mut IoBuffers) -> i64 {
        let result = match req.op {
            Op::Open => {
                let Some(path) = self.path_of(req.path) else { return -(libc::EXDEV as i64) };
                // Handles are opened and closed last-in, first-out (one per worker today).
                let mut gone: Vec<Open> = self.files.drain((req.file as usize).min(self.files.len())..).collect();
                for o in gone.iter_mut() {
                    if let Some(f) = o.file.take() {
                        self.close_file(f);
                    }
                }
                match self.open_file(&path, self.write || req.write) {
                    Ok((file, size)) => {
                        let known = size.max(req.size);
                        self.files.push(Open { path, file: Some(file), known_size: known, opened_size: size });
                        0
                    }
                    Err(e) => e,
                }
            }
            Op::Close => {
                let k = (req.file as usize).min(self.files.len());
                let mut closed: Vec<Open> = self.files.drain(k..).collect();
                let mut r = 0;
                for o in closed.iter_mut() {
                    if let Some(f) = o.file.take() {
                        let c = self.close_file(f);
                        if r == 0 {
                            r = c;
                        }
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

    /// Drops what is in flight, closes the handles and logs off (each bounded by the
    /// timeout; nothing is waited for once the connection is gone).
    fn close(&mut self) {
        let Some(s) = self.session.as_ref() else { return };
        let in_flight = std::mem::take(&mut self.in_flight);
        s.drop_here(in_flight);
        let files = std::mem::take(&mut self.files);
        for mut o in files {
            if let Some(f) = o.file.take() {
                self.close_file(f);
            }
        }
        self.session = None;
    }
}

/// A request's result: bytes moved, or its failure (ETIMEDOUT when it outlived the timeout).
fn done(r: Result<std::io::Result<usize>, tokio::time::error::Elapsed>) -> i64 {
    match r {
        Ok(Ok(n)) => i64::try_from(n).unwrap_or(i64::MAX),
        Ok(Err(e)) => errors::result_of_io(&e),
        Err(_) => -(libc::ETIMEDOUT as i64),
    }
}

impl Drop for SmbEngine {
    fn drop(&mut self) {
        self.close();
    }
}
