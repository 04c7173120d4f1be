//! The `s3` engine: each worker thread keeps `iodepth` HTTP/1.1 connections to the
//! endpoint, one request in flight on each, driven by the thread's own current-thread
//! runtime. `submit` builds and signs a request; `reap` sends what was submitted and waits
//! for replies (batched submission: the core stamps the issue time before reaping).
//!
//! A read is a GET of the object (whole when the I/O covers the object, else ranged); a
//! write is a PUT of the whole object, or in a dataset file written in several transfers,
//! one part of a multipart upload started by its first transfer and completed at close.
//! Path operations: create (PUT, multipart above the part size), delete (DELETE), getattr
//! (HEAD), copy (CopyObject, on the server), move (copy, then delete); open and close
//! send nothing, but a close completes a multipart upload.

use crate::client::{exchange, Client, Into, Sender};
use crate::errors;
use crate::objects::{self, Conn};
use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::FutureExt;
use http::Method;
use ioscope_engine::{Completion, Engine, FileReq, Io, IoBuffers, Op, OpenSpec, Submission, Submitted};
use ioscope_engine_table::s3::Target;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a request in flight gives back: its slot, its result, its connection (if it can
/// take another request), and a part's ETag.
struct Done {
    slot: u32,
    result: i64,
    sender: Option<Sender>,
    etag: Option<String>,
}

type InFlight = Pin<Box<dyn Future<Output = Done> + Send>>;

/// A dataset file being written in parts.
#[derive(Debug, Default)]
struct Upload {
    id: Option<String>,
    parts: Vec<(u64, String)>,
    /// Bytes the parts hold.
    bytes: u64,
    failed: bool,
}

/// An object the engine reads and writes: its key and size (0: unknown).
#[derive(Debug)]
struct Object {
    key: String,
    size: u64,
    /// The size is the object's for sure (a flat working set's objects never change size;
    /// a dataset's can, by a copy or move onto it): a read covering it GETs it whole.
    exact: bool,
    upload: Option<Upload>,
}

pub struct S3Engine {
    target: Target,
    rt: Option<Arc<tokio::runtime::Runtime>>,
    client: Option<Arc<Client>>,
    /// Path operations and multipart bookkeeping, on a connection of their own.
    conn: Option<Conn>,
    objects: Vec<Object>,
    /// Per slot: its connection while idle, and its buffer (address, length).
    idle: Vec<Option<Sender>>,
    bufs: Vec<(usize, usize)>,
    /// Built by submit, sent by reap: the slot, the request, where its reply goes, and the
    /// bytes a write sends.
    queued: Vec<(u32, http::Request<http_body_util::Full<Bytes>>, Into, u64)>,
    in_flight: FuturesUnordered<InFlight>,
    /// Per slot: the object and part number of a part upload in flight.
    parts: Vec<Option<(u32, u64)>>,
    lost: Option<String>,
}

impl S3Engine {
    pub fn new(target: Target) -> S3Engine {
        S3Engine {
            target,
            rt: None,
            client: None,
            conn: None,
            objects: Vec::new(),
            idle: Vec::new(),
            bufs: Vec::new(),
            queued: Vec::new(),
            in_flight: FuturesUnordered::new(),
            parts: Vec::new(),
            lost: None,
        }
    }

    fn key_of(&self, path: &std::path::Path) -> Option<String> {
        self.target.key_of(&path.to_string_lossy()).map(str::to_string)
    }

    /// Notes a result that says the endpoint is gone.
    fn note(&mut self, result: i64) {
        if result == -(libc::ECONNREFUSED as i64) {
            let origin = self.client.as_ref().map_or("the endpoint", |c| c.origin()).to_string();
            self.lost.get_or_insert_with(|| format!("{origin} refused a new connection"));
        }
    }

    /// The write of `io` as a request: a whole object, or the next part of its upload.
    fn write_request(&mut self, io: &Io, data: Bytes) -> Result<http::Request<http_body_util::Full<Bytes>>, i64> {
        let (Some(client), Some(conn)) = (self.client.as_ref(), self.conn.as_mut()) else {
            return Err(-(libc::EBADF as i64));
        };
        let Some(obj) = self.objects.get_mut(io.file as usize) else { return Err(-(libc::EBADF as i64)) };
        let whole = io.offset == 0 && (obj.size == 0 || u64::from(io.len) >= obj.size) && obj.upload.is_none();
        let bad = |_| -(libc::EINVAL as i64);
        if whole {
            return client.request(Method::PUT, &obj.key, "", &[], data).map_err(bad);
        }
        // A file written in transfers: its first starts the upload (timed with it).
        let upload = obj.upload.get_or_insert_with(Upload::default);
        if upload.failed {
            return Err(-(libc::EIO as i64));
        }
        let id = match &upload.id {
            Some(id) => id.clone(),
            None => {
                let id = conn.start_upload(&obj.key)?;
                upload.id = Some(id.clone());
                id
            }
        };
        let n = upload.parts.len() as u64 + 1;
        if n > objects::MAX_PARTS {
            return Err(-(libc::EFBIG as i64));
        }
        if let Some(p) = self.parts.get_mut(io.slot as usize) {
            *p = Some((io.file, n));
        }
        let q = format!("partNumber={n}&uploadId={}", crate::client::query_value(&id));
        client.request(Method::PUT, &obj.key, &q, &[], data).map_err(bad)
    }

    /// Completes the upload of open file `k`; aborts it after a failed part, or when the
    /// file was not written to its end (the run ended first): the object stays as it was.
    fn finish_upload(&mut self, k: usize) -> i64 {
        let (Some(conn), Some(obj)) = (self.conn.as_mut(), self.objects.get_mut(k)) else { return 0 };
        let Some(upload) = obj.upload.take() else { return 0 };
        let Some(id) = upload.id else { return 0 };
        if upload.failed {
            let _ = conn.abort_upload(&obj.key, &id);
            return -(libc::EIO as i64);
        }
        if upload.bytes < obj.size {
            return conn.abort_upload(&obj.key, &id).map_or_else(|e| e, |()| 0);
        }
        match conn.complete_upload(&obj.key, &id, &upload.parts) {
            Ok(()) => 0,
            Err(e) => {
                let _ = conn.abort_upload(&obj.key, &id);
                e
            }
        }
    }

    fn path_op(&mut self, req: &FileReq<'_>, buffers: &mut IoBuffers) -> Result<i64, i64> {
        let key = self.key_of(req.path).ok_or(-(libc::EXDEV as i64))?;
        let to = match req.to {
            Some(to) => Some(self.key_of(to).ok_or(-(libc::EXDEV as i64))?),
            None => None,
        };
        let part = self.target.part_size_bytes;
        let conn = self.conn.as_mut().ok_or(-(libc::EBADF as i64))?;
        match (req.op, to) {
            (Op::Create, _) => {
                let src = buffers.slot(0).to_vec();
                let mut fill = |off: u64, chunk: &mut [u8]| repeat_into(&src, off, chunk);
                conn.put_generated(&key, req.size, part, &mut fill)?;
                Ok(req.size as i64)
            }
            (Op::Delete, _) => conn.delete(&key).map(|()| 0),
            (Op::Getattr, _) => match conn.head(&key)? {
                Some(_) => Ok(0),
                None => Err(errors::result_of(404, None)),
            },
            (Op::Copy, Some(to)) => conn.copy(&key, &to).map(|()| 0),
            // Every page of the listing under the directory's prefix (ListObjectsV2).
            (Op::List, _) => conn.list(&format!("{}/", key.trim_end_matches('/')), Some("/")).map(|_| 0),
            (Op::Move, Some(to)) => {
                conn.copy(&key, &to)?;
                conn.delete(&key).map(|()| 0)
            }
            _ => Err(-(libc::EOPNOTSUPP as i64)),
        }
    }

    /// Takes a finished request back: its connection to the slot, a part's ETag (or its
    /// failure) to its upload; the completion the core gets.
    fn finished(&mut self, d: Done) -> Completion {
        if let Some(s) = self.idle.get_mut(d.slot as usize) {
            *s = d.sender;
        }
        if let Some((file, n)) = self.parts.get_mut(d.slot as usize).and_then(Option::take) {
            if let Some(upload) = self.objects.get_mut(file as usize).and_then(|o| o.upload.as_mut()) {
                match (&d.etag, d.result >= 0) {
                    (Some(etag), true) => {
                        upload.parts.push((n, etag.clone()));
                        upload.bytes += d.result as u64;
                    }
                    _ => upload.failed = true,
                }
            }
        }
        self.note(d.result);
        Completion { slot: d.slot, result: d.result }
    }
}

/// Fills `chunk` (at `off` of the object) with `src` repeated.
fn repeat_into(src: &[u8], off: u64, chunk: &mut [u8]) {
    if src.is_empty() {
        return;
    }
    let mut at = (off % src.len() as u64) as usize;
    let mut i = 0;
    while i < chunk.len() {
        let n = (src.len() - at).min(chunk.len() - i);
        chunk[i..i + n].copy_from_slice(&src[at..at + n]);
        i += n;
        at = 0;
    }
}

impl Engine for S3Engine {
    fn name(&self) -> &'static str {
        "s3"
    }

    fn describe(&self) -> String {
        match &self.client {
            Some(c) => format!(
                "s3 {} bucket {} prefix {:?} ({:?} style, region {}, credentials from {}, {} connection(s), part size {} MiB)",
                c.origin(),
                self.target.bucket,
                self.target.prefix,
                self.target.style,
                c.region,
                c.credentials_from,
                self.idle.len().max(1),
                self.target.part_size_bytes >> 20
            ),
            None => "s3".to_string(),
        }
    }

    fn submission(&self) -> Submission {
        Submission { queued: true, batched_submit: true }
    }

    fn open(&mut self, spec: &OpenSpec, buffers: &IoBuffers) -> std::io::Result<()> {
        let client = Arc::new(Client::new(&self.target).map_err(std::io::Error::other)?);
        let rt = Arc::new(objects::runtime()?);
        let slots = spec.queue_depth.max(1);
        // Every connection is made before the run: the first second is not setup.
        let connected: Vec<std::io::Result<Sender>> = rt.block_on(async {
            let all = (0..slots).map(|_| client.connect());
            futures_util::future::join_all(all).await
        });
        let mut idle = Vec::new();
        for c in connected {
            idle.push(Some(c.map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", client.origin())))?));
        }
        self.objects = Vec::new();
        for p in &spec.files {
            let key = self.key_of(p).ok_or_else(|| {
                std::io::Error::other(format!("{} is not in bucket {}", p.display(), self.target.bucket))
            })?;
            self.objects.push(Object { key, size: spec.file_size, exact: spec.file_size > 0, upload: None });
        }
        self.idle = idle;
        self.bufs = (0..slots).map(|i| (buffers.slot_ptr(i) as usize, buffers.slot_len())).collect();
        self.parts = (0..slots).map(|_| None).collect();
        self.conn = Some(Conn::new(client.clone(), rt.clone()));
        self.client = Some(client);
        self.rt = Some(rt);
        Ok(())
    }

    fn submit(&mut self, io: &Io, buffers: &mut IoBuffers) -> Submitted {
        let (Some(client), Some(&(at, cap))) = (self.client.as_ref(), self.bufs.get(io.slot as usize)) else {
            return Submitted::Done(-(libc::EBADF as i64));
        };
        let Some(obj) = self.objects.get(io.file as usize) else { return Submitted::Done(-(libc::EBADF as i64)) };
        let len = io.len as usize;
        let built = match io.op {
            _ if len == 0 => return Submitted::Done(0),
            Op::Read if len > cap => Err(-(libc::EINVAL as i64)),
            Op::Read => {
                let whole = obj.exact && io.offset == 0 && obj.size > 0 && io.len as u64 >= obj.size;
                let range = format!("bytes={}-{}", io.offset, io.offset + io.len as u64 - 1);
                let headers = if whole { Vec::new() } else { vec![("range", range)] };
                client
                    .request(Method::GET, &obj.key, "", &headers, Bytes::new())
                    .map(|r| (r, Into::Buffer(at, len)))
                    .map_err(|_| -(libc::EINVAL as i64))
            }
            Op::Write if len > cap => Err(-(libc::EINVAL as i64)),
            Op::Write => {
                let data = Bytes::copy_from_slice(&buffers.slot(io.slot)[..len]);
                self.write_request(io, data).map(|r| (r, Into::Nothing))
            }
            _ => Err(-(libc::EOPNOTSUPP as i64)),
        };
        let sent = if io.op == Op::Write { io.len as u64 } else { 0 };
        match built {
            Ok((req, into)) => {
                self.queued.push((io.slot, req, into, sent));
                Submitted::Queued
            }
            Err(e) => {
                self.note(e);
                Submitted::Done(e)
            }
        }
    }

    fn reap(&mut self, min: usize, timeout_ns: Option<u64>, out: &mut Vec<Completion>) -> std::io::Result<()> {
        let (Some(rt), Some(client)) = (self.rt.clone(), self.client.clone()) else { return Ok(()) };
        for (slot, req, into, sent) in self.queued.drain(..) {
            let mut sender = self.idle.get_mut(slot as usize).and_then(Option::take);
            let client = client.clone();
            self.in_flight.push(Box::pin(async move {
                let r = exchange(&client, &mut sender, req, into).await;
                // A GET moved the bytes it received; a PUT those it sent.
                let (result, etag) = match r {
                    Ok(reply) => ((reply.bytes + sent) as i64, reply.etag),
                    Err(e) => (e, None),
                };
                Done { slot, result, sender, etag }
            }));
        }
        let deadline = timeout_ns.map(|t| Instant::now() + Duration::from_nanos(t));
        let mut done = Vec::new();
        rt.block_on(async {
            let mut waited = false;
            loop {
                while let Some(Some(d)) = self.in_flight.next().now_or_never() {
                    done.push(d);
                }
                if done.len() >= min || self.in_flight.is_empty() {
                    // Once at least, the connections' drivers send what was queued.
                    if waited || self.in_flight.is_empty() {
                        return;
                    }
                    tokio::task::yield_now().await;
                    waited = true;
                    continue;
                }
                let next = match deadline {
                    Some(d) => match tokio::time::timeout_at(d.into(), self.in_flight.next()).await {
                        Ok(n) => n,
                        Err(_) => return,
                    },
                    None => self.in_flight.next().await,
                };
                match next {
                    Some(d) => done.push(d),
                    None => return,
                }
                waited = true;
            }
        });
        for d in done {
            let c = self.finished(d);
            out.push(c);
        }
        Ok(())
    }

    fn file_op(&mut self, req: &FileReq<'_>, buffers: &mut IoBuffers) -> i64 {
        let result = match req.op {
            Op::Open => {
                let Some(key) = self.key_of(req.path) else { return -(libc::EXDEV as i64) };
                // Handles are opened and closed last-in, first-out (one per worker today).
                self.objects.truncate(req.file as usize);
                self.objects.push(Object { key, size: req.size, exact: false, upload: None });
                0
            }
            Op::Close => {
                let k = req.file as usize;
                let r = self.finish_upload(k);
                self.objects.truncate(k);
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

    /// Aborts the uploads still open; the connections close with the engine.
    fn close(&mut self) {
        for k in (0..self.objects.len()).rev() {
            if let (Some(conn), Some(obj)) = (self.conn.as_mut(), self.objects.get_mut(k)) {
                if let Some(id) = obj.upload.take().and_then(|u| u.id) {
                    let _ = conn.abort_upload(&obj.key, &id);
                }
            }
        }
        self.in_flight = FuturesUnordered::new();
        self.idle.clear();
        self.conn = None;
        self.objects.clear();
    }
}

impl Drop for S3Engine {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_repeats_from_any_offset() {
        let mut chunk = [0u8; 7];
        repeat_into(&[1, 2, 3], 4, &mut chunk);
        assert_eq!(chunk, [2, 3, 1, 2, 3, 1, 2]);
        repeat_into(&[], 0, &mut chunk);
    }
}
