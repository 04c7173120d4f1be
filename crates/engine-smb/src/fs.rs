//! The share as a file system, for what prepares, checks and removes a working set or a
//! dataset tree (and its marker): a path `smb://HOST[:PORT]/SHARE/P` is the file or
//! directory P of the share. Each connection is a session of its own (its own TCP
//! connection and runtime), so the fill's writers write in parallel.

use crate::errors;
use crate::session::{self, Failed, Session};
use ioscope_engine::fs::{FileSystem, FsConn, Stat};
use ioscope_engine_table::smb::Target;
use smb::File;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    open: Option<(PathBuf, Arc<File>)>,
}

impl SmbConn<'_> {
    fn path(&self, path: &Path) -> io::Result<String> {
        let p = path.to_string_lossy();
        self.target.path_of(&p).map(str::to_string).ok_or_else(|| {
            io::Error::new(ErrorKind::InvalidInput, format!("{p} is not in share {}", self.target.share_root()))
        })
    }

    /// Runs a path operation on the session's tree.
    fn call<T, F, Fut>(&self, path: &str, f: F) -> io::Result<T>
    where
        F: FnOnce(Arc<smb::Tree>) -> Fut,
        Fut: std::future::Future<Output = Result<T, Failed>>,
    {
        let tree = self.session.tree().map_err(|e| io_err(e, path))?;
        self.session.block(f(tree)).map_err(|e| io_err(e, path))
    }

    /// Closes the file kept open, if any.
    fn close_open(&mut self) -> io::Result<()> {
        let Some((p, f)) = self.open.take() else { return Ok(()) };
        let f2 = f.clone();
        let r = self.session.block(async move { f2.close().await.map_err(|e| errors::result_of(&e)) });
        self.session.drop_here(f);
        r.map_err(|e| io_err(e, &p.to_string_lossy()))
    }

    /// The handle of `path` for writing: the one kept open, or a new one.
    fn file(&mut self, path: &Path) -> io::Result<Arc<File>> {
        if let Some((p, f)) = &self.open {
            if p == path {
                return Ok(f.clone());
            }
        }
        self.close_open()?;
        let p = self.path(path)?;
        let f = self.call(&p.clone(), |tree| async move { session::open_file(&tree, &p, true, false).await })?;
        let f = Arc::new(f);
        self.open = Some((path.to_path_buf(), f.clone()));
        Ok(f)
    }
}

impl FsConn for SmbConn<'_> {
    fn stat(&mut self, path: &Path) -> io::Result<Option<Stat>> {
        let p = self.path(path)?;
        let got = self.call(&p.clone(), |tree| async move { session::stat(&tree, &p).await })?;
        Ok(got.map(|(dir, len)| Stat { dir, file: !dir, len }))
    }

    fn read_file(&mut self, path: &Path) -> io::Result<Vec<u8>> {
        let p = self.path(path)?;
        let max = self.session.negotiated.max_read_bytes.clamp(4096, 1 << 20) as usize;
        self.call(&p.clone(), |tree| async move {
            use smb::resource::GetLen;
            let f = session::open_file(&tree, &p, false, false).await?;
            // The size is the server's word: markers are small, and nothing larger is read.
            let len = f.get_len().await.unwrap_or(0);
            if len > MAX_READ_FILE {
                let _ = f.close().await;
                return Err(-(libc::EFBIG as i64));
            }
            let mut out = vec![0u8; len as usize];
            let mut at = 0usize;
            let mut r = Ok(());
            while at < out.len() {
                let end = out.len().min(at + max);
                match f.read_block(&mut out[at..end], at as u64, None, false).await {
                    Ok(0) => break,
                    Ok(n) => at += n,
                    Err(e) => {
                        r = Err(errors::result_of_io(&e));
                        break;
                    }
                }
            }
            out.truncate(at);
            let closed = f.close().await.map_err(|e| errors::result_of(&e));
            r.and(closed).map(|()| out)
        })
    }

    fn list(&mut self, dir: &Path) -> io::Result<Vec<(String, Option<Stat>)>> {
        let p = self.path(dir)?;
        let entries = self.call(&p.clone(), |tree| async move { session::list(&tree, &p).await })?;
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
            let here = at.clone();
            match self.call(&here.clone(), |tree| async move { session::mkdir(&tree, &here).await }) {
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
        let p = self.path(path)?;
        self.call(&p.clone(), |tree| async move { session::remove(&tree, &p, false).await })
    }

    fn remove_dir(&mut self, path: &Path) -> io::Result<()> {
        let p = self.path(path)?;
        self.call(&p.clone(), |tree| async move { session::remove(&tree, &p, true).await })
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        if self.open.as_ref().is_some_and(|(p, _)| p == from || p == to) {
            self.close_open()?;
        }
        let (f, t) = (self.path(from)?, self.path(to)?);
        self.call(&f.clone(), |tree| async move { session::rename(&tree, &f, &t, true).await })
    }

    fn create_empty(&mut self, path: &Path) -> io::Result<()> {
        self.close_open()?;
        let p = self.path(path)?;
        let f = self.call(&p.clone(), |tree| async move { session::create_file(&tree, &p, false).await })?;
        self.open = Some((path.to_path_buf(), Arc::new(f)));
        Ok(())
    }

    /// WRITEs of at most 64 KiB (`session::FILL_WRITE_BYTES`), 16 in flight.
    fn write_at(&mut self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        let f = self.file(path)?;
        let max = self.session.negotiated.max_write_bytes;
        let p = path.to_string_lossy().into_owned();
        let mut fill = |off: u64, chunk: &mut [u8]| {
            let start = usize::try_from(off).unwrap_or(usize::MAX).min(data.len());
            let end = start.saturating_add(chunk.len()).min(data.len());
            chunk[..end - start].copy_from_slice(&data[start..end]);
        };
        let len = data.len() as u64;
        let written =
            self.session.block(session::write_generated(&f, offset, len, max, session::FILL_DEPTH, &mut fill));
        written.map_err(|e| io_err(e, &p)).map(drop)
    }

    /// FLUSH, then the handle is closed.
    fn sync(&mut self, path: &Path) -> io::Result<()> {
        let f = self.file(path)?;
        let p = path.to_string_lossy().into_owned();
        self.session
            .block(async move { f.flush().await.map_err(|e| errors::result_of_io(&e)) })
            .map_err(|e| io_err(e, &p))?;
        self.close_open()
    }

    fn free_bytes(&mut self, _path: &Path) -> io::Result<Option<u64>> {
        let root = self.target.share_root();
        self.call(&root.clone(), |tree| async move { session::free_bytes(&tree).await }).map(Some)
    }
}

impl Drop for SmbConn<'_> {
    fn drop(&mut self) {
        let _ = self.close_open();
    }
}
