//! A local file system with failures injected, for the preparation tests.

use ioscope_engine::fs::{FileSystem, FsConn, LocalFs, Stat};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

/// The local file system, full (ENOSPC) after `left` more bytes, and failing (EIO) every
/// write to `fail`; counts the writes of data it was asked for (markers are not counted).
pub(crate) struct Faulty {
    pub left: AtomicI64,
    pub fail: Option<PathBuf>,
    pub writes: AtomicU64,
}

impl Faulty {
    pub fn full_after(bytes: i64) -> Self {
        Faulty { left: AtomicI64::new(bytes), fail: None, writes: AtomicU64::new(0) }
    }
    pub fn failing(path: PathBuf) -> Self {
        Faulty { left: AtomicI64::new(i64::MAX), fail: Some(path), writes: AtomicU64::new(0) }
    }
}

struct Conn<'a> {
    inner: Box<dyn FsConn + 'a>,
    fs: &'a Faulty,
}

impl FileSystem for Faulty {
    fn connect(&self) -> std::io::Result<Box<dyn FsConn + '_>> {
        Ok(Box::new(Conn { inner: LocalFs.connect()?, fs: self }))
    }
}

impl FsConn for Conn<'_> {
    fn stat(&mut self, p: &Path) -> std::io::Result<Option<Stat>> {
        self.inner.stat(p)
    }
    fn read_file(&mut self, p: &Path) -> std::io::Result<Vec<u8>> {
        self.inner.read_file(p)
    }
    fn list(&mut self, p: &Path) -> std::io::Result<Vec<(String, Option<Stat>)>> {
        self.inner.list(p)
    }
    fn create_dir_all(&mut self, p: &Path) -> std::io::Result<()> {
        self.inner.create_dir_all(p)
    }
    fn remove_file(&mut self, p: &Path) -> std::io::Result<()> {
        self.inner.remove_file(p)
    }
    fn remove_dir(&mut self, p: &Path) -> std::io::Result<()> {
        self.inner.remove_dir(p)
    }
    fn rename(&mut self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.inner.rename(from, to)
    }
    fn create_empty(&mut self, p: &Path) -> std::io::Result<()> {
        self.inner.create_empty(p)
    }
    fn write_at(&mut self, p: &Path, offset: u64, data: &[u8]) -> std::io::Result<()> {
        if !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')) {
            self.fs.writes.fetch_add(1, Relaxed);
        }
        if self.fs.fail.as_deref() == Some(p) {
            return Err(std::io::Error::from_raw_os_error(libc::EIO));
        }
        let n = data.len() as i64;
        if self.fs.left.fetch_sub(n, Relaxed) < n {
            return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        }
        self.inner.write_at(p, offset, data)
    }
    fn sync(&mut self, p: &Path) -> std::io::Result<()> {
        self.inner.sync(p)
    }
}
