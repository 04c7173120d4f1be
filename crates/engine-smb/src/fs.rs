//! The share as a file system, for what prepares, checks and removes a working set or a
//! dataset tree (and its marker): a path `smb://HOST[:PORT]/SHARE/P` is the file or
//! directory P of the share. Each connection is a session of its own (its own TCP
//! connection), so the fill's writers write in parallel.

use crate::errors;
use crate::session::{self, Failed, Session};
use crate::wire::FileId;
use ioscope_engine::fs::{FileSystem, FsConn, Stat};
use ioscope_engine_table::smb::Target;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

/// The largest file [`FsConn::read_file`] reads (markers are a few KiB).
const MAX_READ_FILE: u64 = 64 << 20;

pub struct SmbFs {
    target: Target,
}

impl SmbFs {
    /// Logs in and connects to the share (so that a wrong password, a missing share or a
    /// server that does not answer are reported before anything else).
    pub fn connect_to(target: &Target) -> Result<SmbFs, String> {
        let s = Session::connect(target, 64)?;
        drop(s);
        Ok(SmbFs { target: target.clone() })
    }
}

/// An io::Error of a failed result, of the kind the callers test for.
fn io_err(result: Failed, path: &str) -> io::Error {
    let kind = match errors::status_of(result) {
        _ if session::is_missing(result) => ErrorKind::NotFound,
        Some(0xC000_0035) => ErrorKind::AlreadyExists,
        Some(0xC000_0101) => ErrorKind::DirectoryNotEmpty,
        Some(0xC000_007F) => ErrorKind::StorageFull,
        Some(0xC000_0022) => ErrorKind::PermissionDenied,
        Some(_) => ErrorKind::Other,
        None => match i32::try_from(-result) {
            Ok(errno) if errno > 0 => io::Error::from_raw_os_error(errno).kind(),
            _ => ErrorKind::Other,
        },
    };
    io::Error::new(kind, format!("smb {path:?}: {}", errors::error_text(result)))
}

impl FileSystem for SmbFs {
    fn connect(&self) -> io::Result<Box<dyn FsConn + '_>> {
        let session = Session::connect(&self.target, 64).map_err(io::Error::other)?;
        Ok(Box::new(SmbConn { target: &self.target, session, open: None }))
    }
}

struct SmbConn<'a> {
    target: &'a Target,
    session: Session,
    /// The file written last, kept open for the next write to it.
    open: Option<(PathBuf, FileId)>,
}

impl SmbConn<'_> {
    fn path(&self, path: &Path) -> io::Result<String> {
        let p = path.to_string_lossy();
        self.target.path_of(&p).map(str::to_string).ok_or_else(|| {
            io::Error::new(ErrorKind::InvalidInput, format!("{p} is not in share {}", self.target.share_root()))
        })
    }

    /// Runs a path operation on the session.
    fn call<T>(&mut self, path: &Path, f: impl FnOnce(&mut Session, &str) -> Result<T, Failed>) -> io::Result<T> {
        let p = self.path(path)?;
        f(&mut self.session, &p).map_err(|e| io_err(e, &p))
    }

    /// Closes the file kept open, if any.
    fn close_open(&mut self) -> io::Result<()> {
        let Some((p, f)) = self.open.take() else { return Ok(()) };
        if self.session.gone() {
            return Ok(());
        }
        self.session.close(&f).map_err(|e| io_err(e, &p.to_string_lossy()))
    }

    /// The handle of `path` for writing: the one kept open, or a new one.
    fn file(&mut self, path: &Path) -> io::Result<FileId> {
        if let Some((p, f)) = &self.open {
            if p == path {
                return Ok(*f);
            }
        }
        self.close_open()?;
        let f = self.call(path, |s, p| s.open_file(p, true, false))?;
        self.open = Some((path.to_path_buf(), f.file_id));
        Ok(f.file_id)
    }
}

impl FsConn for SmbConn<'_> {
    fn stat(&mut self, path: &Path) -> io::Result<Option<Stat>> {
        let got = self.call(path, |s, p| s.stat(p))?;
        Ok(got.map(|(dir, len)| Stat { dir, file: !dir, len }))
    }

    fn read_file(&mut self, path: &Path) -> io::Result<Vec<u8>> {
        self.call(path, |s, p| {
            let f = s.open_file(p, false, false)?;
            // The size is the server's word: markers are small, and nothing larger is read.
            let r = if f.end_of_file > MAX_READ_FILE {
                Err(-(libc::EFBIG as i64))
            } else {
                s.read_all(&f.file_id, f.end_of_file)
            };
            let closed = s.close(&f.file_id);
            match (r, closed) {
                (Ok(v), Ok(())) => Ok(v),
                (Ok(_), Err(e)) | (Err(e), _) => Err(e),
            }
        })
    }

    fn list(&mut self, dir: &Path) -> io::Result<Vec<(String, Option<Stat>)>> {
        let entries = self.call(dir, |s, p| s.list(p))?;
        Ok(entries.into_iter().map(|(name, dir, len)| (name, Some(Stat { dir, file: !dir, len }))).collect())
    }

    fn create_dir_all(&mut self, path: &Path) -> io::Result<()> {
        let p = self.path(path)?;
        let mut at = String::new();
        for part in p.split('/').filter(|c| !c.is_empty()) {
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            match self.session.mkdir(&at).map_err(|e| io_err(e, &at)) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn remove_file(&mut self, path: &Path) -> io::Result<()> {
        if self.open.as_ref().is_some_and(|(p, _)| p == path) {
            self.close_open()?;
        }
        self.call(path, |s, p| s.remove(p, false))
    }

    fn remove_dir(&mut self, path: &Path) -> io::Result<()> {
        self.call(path, |s, p| s.remove(p, true))
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        if self.open.as_ref().is_some_and(|(p, _)| p == from || p == to) {
            self.close_open()?;
        }
        let t = self.path(to)?;
        self.call(from, |s, f| s.rename(f, &t, true))
    }

    fn create_empty(&mut self, path: &Path) -> io::Result<()> {
        self.close_open()?;
        let f = self.call(path, |s, p| s.create_file(p, false))?;
        self.open = Some((path.to_path_buf(), f.file_id));
        Ok(())
    }

    /// WRITEs of at most 1 MiB (`session::FILL_WRITE_BYTES`), 4 in flight.
    fn write_at(&mut self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        let f = self.file(path)?;
        let p = path.to_string_lossy().into_owned();
        let mut fill = |off: u64, chunk: &mut [u8]| {
            let start = usize::try_from(off).unwrap_or(usize::MAX).min(data.len());
            let end = start.saturating_add(chunk.len()).min(data.len());
            chunk[..end - start].copy_from_slice(&data[start..end]);
        };
        let len = data.len() as u64;
        let written = self.session.write_generated(&f, offset, len, session::FILL_DEPTH, &mut fill);
        written.map_err(|e| io_err(e, &p)).map(drop)
    }

    /// FLUSH, then the handle is closed.
    fn sync(&mut self, path: &Path) -> io::Result<()> {
        let f = self.file(path)?;
        let p = path.to_string_lossy().into_owned();
        self.session.flush(&f).map_err(|e| io_err(e, &p))?;
        self.close_open()
    }

    fn free_bytes(&mut self, _path: &Path) -> io::Result<Option<u64>> {
        let root = self.target.share_root();
        self.session.free_bytes().map(Some).map_err(|e| io_err(e, &root))
    }
}

impl Drop for SmbConn<'_> {
    fn drop(&mut self) {
        let _ = self.close_open();
    }
}
