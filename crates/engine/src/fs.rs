//! The file-system calls that check, create and remove a dataset tree, so that a tree can
//! be made wherever an engine works: a local directory ([`LocalFs`]) or an NFS export (in
//! `ioscope-engine-nfs`). Errors are `io::Error`s whose kind says "not found", "already
//! exists" or "directory not empty" alike on every file system.

use std::fs::File;
use std::io::{self, ErrorKind};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// What [`FsConn::stat`] and [`FsConn::list`] tell of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub dir: bool,
    pub file: bool,
    pub len: u64,
}

/// What [`FsConn::identify`] tells of the entry at a path itself (a link is not followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub kind: Kind,
    pub len: u64,
    /// The file system's identity of the file, the same for its whole life whatever its
    /// name, compared only for equality: locally the inode number mixed with the birth time
    /// (an inode number is reused at once for the next file created), on NFS the fileid.
    /// None where the file system has none (an object store).
    pub id: Option<u64>,
}

/// What an entry is, a symbolic link not followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Link,
    /// A device, FIFO, socket, or what the file system does not say.
    Other,
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
    /// Creates `path`, or empties it if it exists.
    fn create_empty(&mut self, path: &Path) -> io::Result<()>;
    /// Writes `data` at `offset` of an existing file.
    fn write_at(&mut self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Puts what was written to `path` on stable storage.
    fn sync(&mut self, path: &Path) -> io::Result<()>;
    /// Bytes an unprivileged writer can still put on the file system holding `path`;
    /// None where the file system does not say.
    fn free_bytes(&mut self, _path: &Path) -> io::Result<Option<u64>> {
        Ok(None)
    }

    /// What is at `path` itself, a link not followed, with its file id where the file
    /// system has one: what decides whether a file is the one ioscope made. By default
    /// what [`FsConn::stat`] says, without an id (a file system that has neither links
    /// nor file ids: an object store).
    fn identify(&mut self, path: &Path) -> io::Result<Option<Entry>> {
        Ok(self.stat(path)?.map(|s| Entry {
            kind: if s.file {
                Kind::File
            } else if s.dir {
                Kind::Dir
            } else {
                Kind::Other
            },
            len: s.len,
            id: None,
        }))
    }

    /// Creates or empties `path` and writes `len` bytes, `fill(offset, chunk)` providing
    /// each chunk; the data is on stable storage when it returns.
    fn write_file(&mut self, path: &Path, len: u64, fill: &mut dyn FnMut(u64, &mut [u8])) -> io::Result<()> {
        self.create_empty(path)?;
        let mut buf = vec![0u8; len.min(CHUNK) as usize];
        for off in (0..len).step_by(CHUNK as usize) {
            let chunk = &mut buf[..(len - off).min(CHUNK) as usize];
            fill(off, chunk);
            self.write_at(path, off, chunk)?;
        }
        self.sync(path)
    }
}

/// Bytes [`FsConn::write_file`] writes per call.
const CHUNK: u64 = 1 << 20;

/// Bytes a working set's fill passes to each [`FsConn::write_at`]: every chunk but a file's
/// last is this long and starts at a multiple of it (an S3 object's parts).
pub const FILL_CHUNK: u64 = 8 << 20;

/// The local file system through std::fs.
pub struct LocalFs;

impl FileSystem for LocalFs {
    fn connect(&self) -> io::Result<Box<dyn FsConn + '_>> {
        Ok(Box::new(LocalConn { open: None }))
    }
}

struct LocalConn {
    /// The file written last, kept open for the next write to it.
    open: Option<(PathBuf, File)>,
}

impl LocalConn {
    fn file(&mut self, path: &Path) -> io::Result<&File> {
        if self.open.as_ref().is_none_or(|(p, _)| p != path) {
            self.open = Some((path.to_path_buf(), std::fs::OpenOptions::new().write(true).open(path)?));
        }
        Ok(&self.open.as_ref().expect("just opened").1)
    }
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
        // A regular file only, opened without waiting: a FIFO put where a marker was is
        // refused, not waited on (the caller bounds the size it read).
        let mut f = ioscope_readfile::open(path, false).map_err(|e| match e {
            ioscope_readfile::FileError::Io(e) => e,
            other => io::Error::other(other.to_string()),
        })?;
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut f, &mut bytes)?;
        Ok(bytes)
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
    fn create_empty(&mut self, path: &Path) -> io::Result<()> {
        let f = std::fs::OpenOptions::new().create(true).write(true).truncate(true).open(path)?;
        self.open = Some((path.to_path_buf(), f));
        Ok(())
    }
    fn write_at(&mut self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        self.file(path)?.write_all_at(data, offset)
    }
    fn sync(&mut self, path: &Path) -> io::Result<()> {
        self.file(path)?.sync_data()
    }
    fn free_bytes(&mut self, path: &Path) -> io::Result<Option<u64>> {
        let s = rustix::fs::statvfs(path)?;
        Ok(Some(s.f_bavail.saturating_mul(s.f_frsize)))
    }
    fn identify(&mut self, path: &Path) -> io::Result<Option<Entry>> {
        use std::os::unix::fs::MetadataExt;
        let m = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let t = m.file_type();
        let kind = if t.is_symlink() {
            Kind::Link
        } else if t.is_file() {
            Kind::File
        } else if t.is_dir() {
            Kind::Dir
        } else {
            Kind::Other
        };
        // The birth time (statx), where the file system keeps one, tells a reused inode apart.
        let born = m.created().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        let born =
            born.map_or(0, |d| d.as_secs().wrapping_mul(1_000_000_000).wrapping_add(u64::from(d.subsec_nanos())));
        Ok(Some(Entry { kind, len: m.len(), id: Some(m.ino().wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ born) }))
    }
}
