//! The file-system calls that check, create and remove a dataset tree, so that a tree can
//! be made wherever an engine works: a local directory ([`LocalFs`]) or an NFS export (in
//! `ioscope-engine-nfs`). Errors are `io::Error`s whose kind says "not found", "already
//! exists" or "directory not empty" alike on every file system.

use std::io::{self, ErrorKind, Write};
use std::path::Path;

/// What [`FsConn::stat`] and [`FsConn::list`] tell of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub dir: bool,
    pub file: bool,
    pub len: u64,
}

/// A file system that datasets can live on.
pub trait FileSystem: Sync {
    /// A connection for one thread; its calls are made one at a time.
    fn connect(&self) -> io::Result<Box<dyn FsConn + '_>>;
}

/// Calls on one connection. Paths are absolute in the file system's own spelling (a
/// local path, or `nfs://HOST/EXPORT/...`).
pub trait FsConn {
    /// None when nothing is at `path`.
    fn stat(&mut self, path: &Path) -> io::Result<Option<Stat>>;
    fn read_file(&mut self, path: &Path) -> io::Result<Vec<u8>>;
    /// The entries of a directory ("." and ".." left out), with what is known of each.
    fn list(&mut self, dir: &Path) -> io::Result<Vec<(String, Option<Stat>)>>;
    fn create_dir_all(&mut self, path: &Path) -> io::Result<()>;
    fn remove_file(&mut self, path: &Path) -> io::Result<()>;
    fn remove_dir(&mut self, path: &Path) -> io::Result<()>;
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()>;
    /// Creates or truncates `path` and writes `len` bytes, `fill(offset, chunk)` providing
    /// each chunk; the data is on stable storage when it returns.
    fn write_file(&mut self, path: &Path, len: u64, fill: &mut dyn FnMut(u64, &mut [u8])) -> io::Result<()>;
}

/// The local file system through std::fs.
pub struct LocalFs;

/// Bytes [`LocalFs`] writes per call.
const LOCAL_CHUNK: u64 = 1 << 20;

impl FileSystem for LocalFs {
    fn connect(&self) -> io::Result<Box<dyn FsConn + '_>> {
        Ok(Box::new(LocalConn { buf: Vec::new() }))
    }
}

struct LocalConn {
    buf: Vec<u8>,
}

fn stat_of(m: &std::fs::Metadata) -> Stat {
    Stat { dir: m.is_dir(), file: m.is_file(), len: m.len() }
}

impl FsConn for LocalConn {
    fn stat(&mut self, path: &Path) -> io::Result<Option<Stat>> {
        match std::fs::metadata(path) {
            Ok(m) => Ok(Some(stat_of(&m))),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn read_file(&mut self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn list(&mut self, dir: &Path) -> io::Result<Vec<(String, Option<Stat>)>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir)? {
            let e = e?;
            let stat = match e.metadata() {
                Ok(m) => Some(stat_of(&m)),
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(_) => None,
            };
            out.push((e.file_name().to_string_lossy().into_owned(), stat));
        }
        Ok(out)
    }
    fn create_dir_all(&mut self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }
    fn remove_file(&mut self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn remove_dir(&mut self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir(path)
    }
    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn write_file(&mut self, path: &Path, len: u64, fill: &mut dyn FnMut(u64, &mut [u8])) -> io::Result<()> {
        let mut file = std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(path)?;
        self.buf.resize(len.min(LOCAL_CHUNK) as usize, 0);
        for off in (0..len).step_by(LOCAL_CHUNK as usize) {
            let chunk = &mut self.buf[..(len - off).min(LOCAL_CHUNK) as usize];
            fill(off, chunk);
            file.write_all(chunk)?;
        }
        file.sync_data()
    }
}
