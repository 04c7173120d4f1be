//! The posix engine: pread(2)/pwrite(2) and fsync(2)/fdatasync(2) on the working-set
//! files, buffered or with O_DIRECT, optionally O_DSYNC. Synchronous: every submit
//! completes before it returns.

use crate::{Engine, FileReq, Io, IoBuffers, Op, OpenSpec, Submission, Submitted};
use std::fs::File;

#[derive(Default)]
pub struct PosixEngine {
    files: Vec<File>,
}

impl Engine for PosixEngine {
    fn name(&self) -> &'static str {
        "posix"
    }
    fn submission(&self) -> Submission {
        Submission { queued: false, batched_submit: false }
    }
    fn open(&mut self, spec: &OpenSpec, _buffers: &IoBuffers) -> std::io::Result<()> {
        self.files = spec.open_files()?;
        Ok(())
    }

    #[inline]
    fn submit(&mut self, io: &Io, buffers: &mut IoBuffers) -> Submitted {
        // rustix issues the system calls directly: no libc wrapper, no cancellation-point
        // bookkeeping on every I/O.
        // A file index the engine did not open (an open that failed, a file closed) is an
        // error of that I/O, never a panic.
        let Some(file) = self.files.get(io.file as usize) else {
            return Submitted::Done(-(libc::EBADF as i64));
        };
        loop {
            let r = match io.op {
                Op::Read => rustix::io::pread(file, &mut buffers.slot(io.slot)[..io.len as usize], io.offset),
                Op::Write => rustix::io::pwrite(file, &buffers.slot(io.slot)[..io.len as usize], io.offset),
                Op::Fsync => rustix::fs::fsync(file).map(|()| 0),
                Op::Fdatasync => rustix::fs::fdatasync(file).map(|()| 0),
                _ => Err(rustix::io::Errno::INVAL),
            };
            match r {
                Ok(n) => return Submitted::Done(n as i64),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Submitted::Done(-(e.raw_os_error() as i64)),
            }
        }
    }

    fn file_op(&mut self, req: &FileReq<'_>, buffers: &mut IoBuffers) -> i64 {
        let result = match req.op {
            Op::Open => {
                let opened = std::fs::OpenOptions::new().read(true).write(req.write).open(req.path);
                opened.map(|f| {
                    // Handles are opened and closed last-in, first-out (one per worker today).
                    self.files.truncate(req.file as usize);
                    self.files.push(f);
                    0
                })
            }
            Op::Close => {
                self.files.truncate(req.file as usize);
                Ok(0)
            }
            Op::Create => create(req.path, req.size, buffers),
            Op::Delete => std::fs::remove_file(req.path).map(|()| 0),
            Op::Mkdir => std::fs::create_dir(req.path).map(|()| 0),
            Op::Rmdir => std::fs::remove_dir(req.path).map(|()| 0),
            Op::Getattr => std::fs::symlink_metadata(req.path).map(|_| 0),
            Op::Setattr => std::fs::File::options()
                .write(true)
                .open(req.path)
                .and_then(|f| f.set_modified(std::time::SystemTime::now()))
                .map(|()| 0),
            Op::Copy => match req.to {
                Some(to) => copy_new(req.path, to),
                None => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
            },
            Op::Move => match req.to {
                // Never over an existing file: rename(2) would replace it.
                Some(to) if to.symlink_metadata().is_ok() => Err(std::io::Error::from_raw_os_error(libc::EEXIST)),
                Some(to) => std::fs::rename(req.path, to).map(|()| 0),
                None => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
            },
            // Every entry read, as `ls` would.
            Op::List => std::fs::read_dir(req.path).and_then(|mut d| d.try_for_each(|e| e.map(drop))).map(|()| 0),
            Op::Read | Op::Write | Op::Fsync | Op::Fdatasync | Op::Verify | Op::Flow => {
                Err(std::io::Error::from_raw_os_error(libc::EINVAL))
            }
        };
        result.unwrap_or_else(|e| -(e.raw_os_error().unwrap_or(libc::EIO) as i64))
    }

    fn close(&mut self) {
        self.files.clear();
    }
}

/// Creates `path` (which must not exist) and writes `size` bytes from buffer slot 0. A
/// create that fails while writing (ENOSPC) removes its partial file: the name is free
/// again, as the caller's state says, and the failure is the write's.
fn create(path: &std::path::Path, size: u64, buffers: &mut IoBuffers) -> std::io::Result<i64> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(path)?;
    let chunk = buffers.slot(0);
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        if let Err(e) = f.write_all(&chunk[..n]) {
            let _ = std::fs::remove_file(path);
            return Err(e);
        }
        left -= n as u64;
    }
    Ok(size as i64)
}

/// Copies `from` to `to`, which must not exist, through the kernel (copy_file_range).
fn copy_new(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<i64> {
    let mut src = std::fs::File::open(from)?;
    let mut dst = std::fs::OpenOptions::new().write(true).create_new(true).open(to)?;
    std::io::copy(&mut src, &mut dst).map(|n| n as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 8192]).unwrap();
        let mut bufs = IoBuffers::new(1, 4096, 1);
        let mut e = PosixEngine::default();
        let spec = OpenSpec { files: vec![path.clone()], write: true, queue_depth: 1, ..Default::default() };
        e.open(&spec, &bufs).unwrap();
        let written = bufs.slot(0)[..4096].to_vec();
        let w = Io { op: Op::Write, file: 0, offset: 4096, len: 4096, slot: 0 };
        assert_eq!(e.submit(&w, &mut bufs), Submitted::Done(4096));
        assert_eq!(e.submit(&Io { op: Op::Fdatasync, ..w }, &mut bufs), Submitted::Done(0));
        bufs.slot(0).fill(0);
        assert_eq!(e.submit(&Io { op: Op::Read, ..w }, &mut bufs), Submitted::Done(4096));
        assert_eq!(&bufs.slot(0)[..4096], &written[..]);
        // Reading past the end is a short read, not an error.
        let past = Io { op: Op::Read, offset: 8192, ..w };
        assert_eq!(e.submit(&past, &mut bufs), Submitted::Done(0));
    }

    #[test]
    fn errors_come_back_as_negative_errno() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"x").unwrap();
        let mut bufs = IoBuffers::new(1, 4096, 1);
        let mut e = PosixEngine::default();
        // Opened read-only: a write must fail with EBADF and be reported, not hidden.
        e.open(&OpenSpec { files: vec![path], write: false, queue_depth: 1, ..Default::default() }, &bufs).unwrap();
        let w = Io { op: Op::Write, file: 0, offset: 0, len: 1, slot: 0 };
        assert_eq!(e.submit(&w, &mut bufs), Submitted::Done(-(libc::EBADF as i64)));
    }

    #[test]
    fn an_io_on_a_file_that_is_not_open_fails_with_ebadf_instead_of_panicking() {
        let mut bufs = IoBuffers::new(1, 4096, 1);
        let mut e = PosixEngine::default();
        let io = Io { op: Op::Read, file: 400, offset: 0, len: 4096, slot: 0 };
        assert_eq!(e.submit(&io, &mut bufs), Submitted::Done(-(libc::EBADF as i64)));
    }
}
