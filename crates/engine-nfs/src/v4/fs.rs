//! Paths on an NFSv4.1 server, spelt `nfs://HOST[:PORT]/a/b` and walked from the root of
//! its pseudo file system (PUTROOTFH, then LOOKUP per name), with directory handles cached
//! as the NFSv3 [`Paths`](crate::fs::Paths) caches them. [`Paths41`] does the file and
//! directory operations of file-tree workloads (OPEN and CLOSE with the state OPEN
//! returns, GETATTR, SETATTR, REMOVE, RENAME, READDIR, CREATE of directories) on one
//! slot of a session; [`Nfs41Fs`] is the [`FileSystem`] datasets are checked, created and
//! removed through, a session per connection.

use super::proto::{self, op, status, Attrs, Create, DirEntry, Reply, StateId};
use super::session::{failed, Calls, Renewal};
use crate::client::NfsError;
use crate::proto::{Fh, Stable};
use crate::target::Target;
use ioscope_engine::fs::{Entry, FileSystem, FsConn, Kind, Stat};
use std::collections::HashMap;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

/// Handles cached before the cache starts over (a bound on memory for huge trees).
const MAX_CACHED: usize = 1 << 16;

/// An open file: its handle and the stateid its OPEN returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Open {
    pub fh: Fh,
    pub state: StateId,
}

/// File and directory operations by path on one slot, one compound at a time.
pub struct Paths41 {
    pub calls: Calls,
    root: Fh,
    /// `nfs://HOST[:PORT]/`: every path starts with it.
    prefix: PathBuf,
    dirs: HashMap<PathBuf, Fh>,
    files: HashMap<PathBuf, Fh>,
    pub rtmax: u32,
    pub wtmax: u32,
    /// The file a dataset is being written to (`create_empty`, `write_at`, `sync`).
    writing: Option<(PathBuf, Open)>,
    /// Keeps the lease of a connection of [`Nfs41Fs`] (an engine renews its own).
    renewal: Option<Renewal>,
}

impl Paths41 {
    /// A client and session of its own with `io_slots` slots for I/O besides its own.
    pub fn connect(t: &Target, io_slots: u32) -> Result<Paths41, NfsError> {
        let mut calls = Calls::establish(t, io_slots)?;
        let root = calls.run(
            "PUTROOTFH",
            2,
            |e| {
                proto::putrootfh(e);
                proto::getfh(e);
            },
            |r| match r.plain(op::PUTROOTFH, 0)? {
                Ok(()) => r.getfh(),
                Err(s) => Ok(Err(s)),
            },
        )?;
        // What the session carries bounds a transfer too.
        let room = calls.info.fore.max_request.min(calls.info.fore.max_response).saturating_sub(1024);
        let max = room.clamp(4096, 1 << 20);
        Ok(Paths41 {
            calls,
            root,
            prefix: PathBuf::from(t.url_of("/")),
            dirs: HashMap::new(),
            files: HashMap::new(),
            rtmax: max,
            wtmax: max,
            writing: None,
            renewal: None,
        })
    }

    /// The path below the root.
    fn below<'p>(&self, path: &'p Path) -> Result<&'p Path, NfsError> {
        path.strip_prefix(&self.prefix)
            .map_err(|_| NfsError::Setup(format!("{} is not on the server {}", path.display(), self.prefix.display())))
    }

    /// A compound on the handle `fh`: PUTFH, then the operations of `args`.
    fn on<T>(
        &mut self,
        what: &'static str,
        fh: &Fh,
        ops: u32,
        args: impl Fn(&mut crate::xdr::Encoder),
        read: impl FnOnce(&mut Reply) -> proto::Res<T>,
    ) -> Result<T, NfsError> {
        self.calls.run(
            what,
            ops + 1,
            |e| {
                proto::putfh(e, fh);
                args(e);
            },
            |r| match r.plain(op::PUTFH, 0)? {
                Ok(()) => read(r),
                Err(s) => Ok(Err(s)),
            },
        )
    }

    /// LOOKUP of `name` in `dir`: its handle and attributes.
    pub fn lookup_in(&mut self, dir: &Fh, name: &str) -> Result<(Fh, Attrs), NfsError> {
        self.on(
            "LOOKUP",
            dir,
            3,
            |e| {
                proto::lookup(e, name);
                proto::getfh(e);
                proto::getattr(e, proto::FILE_ATTRS);
            },
            |r| {
                if let Err(s) = r.plain(op::LOOKUP, 0)? {
                    return Ok(Err(s));
                }
                let fh = match r.getfh()? {
                    Ok(fh) => fh,
                    Err(s) => return Ok(Err(s)),
                };
                Ok(r.getattr()?.map(|a| (fh, a)))
            },
        )
    }

    /// The lease time, largest read and largest write of the file system holding `fh`.
    pub fn fs_attrs(&mut self, fh: &Fh) -> Result<Attrs, NfsError> {
        self.on("GETATTR", fh, 1, |e| proto::getattr(e, proto::FS_ATTRS), |r| r.getattr())
    }

    /// The handle of a directory below the root, from the cache or by LOOKUP.
    pub fn dir(&mut self, rel: &Path) -> Result<Fh, NfsError> {
        if rel.as_os_str().is_empty() {
            return Ok(self.root.clone());
        }
        if let Some(fh) = self.dirs.get(rel) {
            return Ok(fh.clone());
        }
        let (parent, name) = split(rel)?;
        let parent = self.dir(parent)?;
        let (fh, _) = self.lookup_in(&parent, name)?;
        self.remember_dir(rel, &fh);
        Ok(fh)
    }

    /// The handle of the directory at `path` (`nfs://HOST/a/b`).
    pub fn dir_of(&mut self, path: &Path) -> Result<Fh, NfsError> {
        let rel = self.below(path)?.to_path_buf();
        self.dir(&rel)
    }

    fn remember_dir(&mut self, rel: &Path, fh: &Fh) {
        if self.dirs.len() >= MAX_CACHED {
            self.dirs.clear();
        }
        self.dirs.insert(rel.to_path_buf(), fh.clone());
    }

    fn parent<'p>(&mut self, path: &'p Path) -> Result<(Fh, &'p str), NfsError> {
        let (parent, name) = split(self.below(path)?)?;
        Ok((self.dir(parent)?, name))
    }

    /// LOOKUP of a path (the root for the prefix itself, with no attributes read).
    pub fn lookup(&mut self, path: &Path) -> Result<(Fh, Option<Attrs>), NfsError> {
        if self.below(path)?.as_os_str().is_empty() {
            return Ok((self.root.clone(), None));
        }
        let (dir, name) = self.parent(path)?;
        self.lookup_in(&dir, name).map(|(fh, a)| (fh, Some(a)))
    }

    fn file(&mut self, path: &Path) -> Result<Fh, NfsError> {
        if let Some(fh) = self.files.get(path) {
            return Ok(fh.clone());
        }
        let (fh, _) = self.lookup(path)?;
        if self.files.len() >= MAX_CACHED {
            self.files.clear();
        }
        self.files.insert(path.to_path_buf(), fh.clone());
        Ok(fh)
    }

    fn forget(&mut self, path: &Path) {
        self.files.remove(path);
        if let Ok(rel) = path.strip_prefix(&self.prefix) {
            self.dirs.remove(rel);
        }
    }

    /// Runs `f`; on NFS4ERR_STALE (a cached handle whose object is gone) forgets every
    /// handle and runs it once more.
    fn fresh<T>(&mut self, mut f: impl FnMut(&mut Self) -> Result<T, NfsError>) -> Result<T, NfsError> {
        match f(self) {
            Err(e) if e.status() == Some(status::STALE) => {
                self.dirs.clear();
                self.files.clear();
                f(self)
            }
            r => r,
        }
    }

    /// OPEN of `name` in `dir` (CLAIM_NULL), then its handle.
    pub fn open_in(&mut self, dir: &Fh, name: &str, write: bool, how: Create) -> Result<Open, NfsError> {
        let (clientid, owner) = (self.calls.info.clientid, self.calls.info.owner.clone());
        self.on(
            "OPEN",
            dir,
            2,
            |e| {
                proto::open(e, clientid, &owner, name, write, how);
                proto::getfh(e);
            },
            |r| {
                let state = match r.open()? {
                    Ok(s) => s,
                    Err(s) => return Ok(Err(s)),
                };
                Ok(r.getfh()?.map(|fh| Open { fh, state }))
            },
        )
    }

    /// OPEN of an existing file for reading and writing (or reading only).
    pub fn open(&mut self, path: &Path, write: bool) -> Result<Open, NfsError> {
        self.forget(path);
        self.fresh(|p| {
            let (dir, name) = p.parent(path)?;
            p.open_in(&dir, name, write, Create::No)
        })
    }

    pub fn close(&mut self, f: &Open) -> Result<(), NfsError> {
        self.on("CLOSE", &f.fh, 1, |e| proto::close(e, &f.state), |r| r.close().map(|r| r.map(|_| ())))
    }

    pub fn commit(&mut self, fh: &Fh) -> Result<[u8; 8], NfsError> {
        self.on("COMMIT", fh, 1, proto::commit, |r| r.commit())
    }

    pub fn getattr_fh(&mut self, fh: &Fh) -> Result<Attrs, NfsError> {
        self.on("GETATTR", fh, 1, |e| proto::getattr(e, proto::FILE_ATTRS), |r| r.getattr())
    }

    /// READDIR of a directory, every page: how many entries it has.
    pub fn list_len(&mut self, dir: &Path) -> Result<usize, NfsError> {
        let rel = self.below(dir)?.to_path_buf();
        self.fresh(|p| {
            let fh = p.dir(&rel)?;
            p.readdir(&fh).map(|e| e.len())
        })
    }

    pub fn getattr(&mut self, path: &Path) -> Result<Attrs, NfsError> {
        self.fresh(|p| {
            let fh = p.file(path)?;
            let r = p.getattr_fh(&fh);
            if r.is_err() {
                p.forget(path);
            }
            r
        })
    }

    /// SETATTR of the modification time to the server's clock (touch).
    pub fn touch(&mut self, path: &Path) -> Result<(), NfsError> {
        self.fresh(|p| {
            let fh = p.file(path)?;
            let r = p.on("SETATTR", &fh, 1, |e| proto::setattr(e, &StateId::default(), None), |r| r.setattr());
            if r.is_err() {
                p.forget(path);
            }
            r
        })
    }

    /// WRITE of `data` at `off`, in wtmax pieces: (bytes, how stable, verifier) of the last.
    pub fn write(&mut self, f: &Open, mut off: u64, mut data: &[u8], stable: Stable) -> Result<(), NfsError> {
        while !data.is_empty() {
            let piece = &data[..data.len().min(self.wtmax as usize)];
            let (n, _, _) =
                self.on("WRITE", &f.fh, 1, |e| proto::write(e, &f.state, off, stable, piece), |r| r.write())?;
            if n == 0 || n as usize > piece.len() {
                return Err(NfsError::Setup(format!("the server wrote {n} bytes of {}", piece.len())));
            }
            (off, data) = (off + n as u64, &data[n as usize..]);
        }
        Ok(())
    }

    /// READ of at most `count` bytes at `off`: (data, eof).
    pub fn read(&mut self, f: &Open, off: u64, count: u32) -> Result<(Vec<u8>, bool), NfsError> {
        let count = count.min(self.rtmax);
        let (data, eof) = self.on(
            "READ",
            &f.fh,
            1,
            |e| proto::read(e, &f.state, off, count),
            |r| r.read().map(|r| r.map(|(d, eof)| (d.to_vec(), eof))),
        )?;
        if data.len() > count as usize {
            return Err(NfsError::Setup(format!("the server read {} bytes of {count}", data.len())));
        }
        Ok((data, eof))
    }

    /// Creates a file that must not exist (OPEN GUARDED) holding `size` bytes of `data`
    /// repeated, written UNSTABLE, COMMITted and CLOSEd.
    pub fn create_new(&mut self, path: &Path, size: u64, data: &[u8]) -> Result<u64, NfsError> {
        let f = self.fresh(|p| {
            let (dir, name) = p.parent(path)?;
            p.open_in(&dir, name, true, Create::Guarded { mode: 0o644 })
        })?;
        let written = (|| -> Result<u64, NfsError> {
            let mut buf = vec![0u8; (self.wtmax as u64).min(size) as usize];
            for off in (0..size).step_by(self.wtmax.max(1) as usize) {
                let chunk = &mut buf[..(size - off).min(self.wtmax as u64) as usize];
                let mut i = 0;
                while i < chunk.len() && !data.is_empty() {
                    let at = ((off + i as u64) % data.len() as u64) as usize;
                    let n = (chunk.len() - i).min(data.len() - at);
                    chunk[i..i + n].copy_from_slice(&data[at..at + n]);
                    i += n;
                }
                self.write(&f, off, chunk, Stable::Unstable)?;
            }
            if size > 0 {
                self.commit(&f.fh)?;
            }
            Ok(size)
        })();
        let closed = self.close(&f);
        let size = written?;
        closed.map(|()| size)
    }

    pub fn remove(&mut self, path: &Path) -> Result<(), NfsError> {
        self.forget(path);
        self.fresh(|p| {
            let (dir, name) = p.parent(path)?;
            p.on("REMOVE", &dir, 1, |e| proto::remove(e, name), |r| r.plain(op::REMOVE, 20))
        })
    }

    pub fn mkdir(&mut self, path: &Path) -> Result<(), NfsError> {
        let fh = self.fresh(|p| {
            let (dir, name) = p.parent(path)?;
            p.mkdir_in(&dir, name)
        })?;
        let rel = self.below(path)?.to_path_buf();
        self.remember_dir(&rel, &fh);
        Ok(())
    }

    /// CREATE of a directory: its handle.
    pub fn mkdir_in(&mut self, dir: &Fh, name: &str) -> Result<Fh, NfsError> {
        self.on(
            "CREATE",
            dir,
            2,
            |e| {
                proto::mkdir(e, name, 0o755);
                proto::getfh(e);
            },
            |r| match r.create()? {
                Ok(()) => r.getfh(),
                Err(s) => Ok(Err(s)),
            },
        )
    }

    /// A directory is removed by REMOVE too.
    pub fn rmdir(&mut self, path: &Path) -> Result<(), NfsError> {
        self.remove(path)
    }

    /// RENAME to a name that must not exist (NFS4ERR_EXIST otherwise).
    pub fn rename_new(&mut self, from: &Path, to: &Path) -> Result<(), NfsError> {
        match self.fresh(|p| p.lookup(to)) {
            Ok(_) => return Err(failed("RENAME", status::EXIST)),
            Err(e) if e.status() == Some(status::NOENT) => {}
            Err(e) => return Err(e),
        }
        self.rename(from, to)
    }

    /// RENAME (replaces `to` if it exists): PUTFH, SAVEFH, PUTFH, RENAME.
    pub fn rename(&mut self, from: &Path, to: &Path) -> Result<(), NfsError> {
        self.forget(from);
        self.forget(to);
        self.fresh(|p| {
            let (from_dir, from_name) = p.parent(from)?;
            let (to_dir, to_name) = p.parent(to)?;
            p.on(
                "RENAME",
                &from_dir,
                3,
                |e| {
                    proto::savefh(e);
                    proto::putfh(e, &to_dir);
                    proto::rename(e, from_name, to_name);
                },
                |r| {
                    for opnum in [op::SAVEFH, op::PUTFH] {
                        if let Err(s) = r.plain(opnum, 0)? {
                            return Ok(Err(s));
                        }
                    }
                    r.plain(op::RENAME, 40)
                },
            )
        })
    }

    /// Copies a file to a name that must not exist: READ from the source, WRITE to the new
    /// file (UNSTABLE, then COMMIT). Returns the bytes copied.
    pub fn copy_new(&mut self, from: &Path, to: &Path) -> Result<u64, NfsError> {
        let src = self.open(from, false)?;
        let dst = self.fresh(|p| {
            let (dir, name) = p.parent(to)?;
            p.open_in(&dir, name, true, Create::Guarded { mode: 0o644 })
        });
        let dst = match dst {
            Ok(d) => d,
            Err(e) => {
                let _ = self.close(&src);
                return Err(e);
            }
        };
        let copied = (|| -> Result<u64, NfsError> {
            let mut off = 0u64;
            loop {
                let (data, eof) = self.read(&src, off, self.rtmax)?;
                if !data.is_empty() {
                    self.write(&dst, off, &data, Stable::Unstable)?;
                    off += data.len() as u64;
                }
                if eof || data.is_empty() {
                    break;
                }
            }
            if off > 0 {
                self.commit(&dst.fh)?;
            }
            Ok(off)
        })();
        let closed = self.close(&dst).and(self.close(&src));
        let n = copied?;
        closed.map(|()| n)
    }

    /// Every entry of a directory (all READDIR pages).
    pub fn readdir(&mut self, dir: &Fh) -> Result<Vec<DirEntry>, NfsError> {
        let (mut cookie, mut verf, mut all) = (0u64, [0u8; 8], Vec::new());
        loop {
            let (entries, v, eof) = self.on("READDIR", dir, 1, |e| proto::readdir(e, cookie, verf), |r| r.readdir())?;
            verf = v;
            if let Some(last) = entries.last() {
                cookie = last.cookie;
            }
            let done = eof || entries.is_empty();
            all.extend(entries.into_iter().filter(|x| x.name != "." && x.name != ".."));
            if done {
                return Ok(all);
            }
        }
    }

    pub fn ping(&mut self) -> Result<(), NfsError> {
        self.calls.null()
    }

    /// The file being written, opened if it is not already (closing the one before).
    fn writing(&mut self, path: &Path) -> Result<Open, NfsError> {
        if let Some((p, f)) = &self.writing {
            if p == path {
                return Ok(f.clone());
            }
        }
        self.finish_writing()?;
        let f = self.open(path, true)?;
        self.writing = Some((path.to_path_buf(), f.clone()));
        Ok(f)
    }

    /// COMMITs and CLOSEs the file being written, if any.
    fn finish_writing(&mut self) -> Result<(), NfsError> {
        let Some((_, f)) = self.writing.take() else { return Ok(()) };
        let committed = self.commit(&f.fh).map(|_| ());
        let closed = self.close(&f);
        committed.and(closed)
    }

    /// CLOSE of what is open, then DESTROY_SESSION and DESTROY_CLIENTID.
    pub fn teardown(&mut self) -> Option<NfsError> {
        if let Some(mut r) = self.renewal.take() {
            r.stop();
        }
        let closed = self.finish_writing().err();
        closed.or(self.calls.destroy())
    }
}

impl Drop for Paths41 {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// A path's parent and last name.
fn split(rel: &Path) -> Result<(&Path, &str), NfsError> {
    let name = rel.file_name().and_then(|n| n.to_str());
    match (rel.parent(), name) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(NfsError::Setup(format!("{}: not a file or directory name", rel.display()))),
    }
}

/// The server of a `version=4.1` target as a [`FileSystem`]: a session per connection.
pub struct Nfs41Fs {
    target: Target,
}

impl Nfs41Fs {
    /// Checks the server answers (a session made and destroyed), as a mount would.
    pub fn mount(t: &Target) -> Result<Nfs41Fs, NfsError> {
        let mut p = Paths41::connect(t, 0)?;
        if let Some(e) = p.teardown() {
            return Err(e);
        }
        Ok(Nfs41Fs { target: t.clone() })
    }
}

impl FileSystem for Nfs41Fs {
    fn connect(&self) -> io::Result<Box<dyn FsConn + '_>> {
        // A connection may sit idle past the lease (the one that wrote the marker, while
        // others fill the files): it renews the lease itself.
        let mut paths = Paths41::connect(&self.target, 0).map_err(to_io)?;
        paths.renewal = Some(paths.calls.keep_lease(&self.target).map_err(to_io)?);
        Ok(Box::new(paths))
    }
}

/// An NFSv4 failure as an io::Error of the local file system's kind, named by its status.
pub fn to_io(e: NfsError) -> io::Error {
    let kind = match e.status() {
        Some(status::NOENT) => ErrorKind::NotFound,
        Some(status::EXIST) => ErrorKind::AlreadyExists,
        Some(1 | 13) => ErrorKind::PermissionDenied,
        Some(20) => ErrorKind::NotADirectory,
        Some(21) => ErrorKind::IsADirectory,
        Some(28 | 69) => ErrorKind::StorageFull,
        Some(30) => ErrorKind::ReadOnlyFilesystem,
        Some(66) => ErrorKind::DirectoryNotEmpty,
        Some(status::STALE) => ErrorKind::StaleNetworkFileHandle,
        Some(_) => ErrorKind::Other,
        None => match &e {
            NfsError::Rpc(crate::rpc::RpcError::Timeout { .. }) => ErrorKind::TimedOut,
            _ => ErrorKind::Other,
        },
    };
    let text = match e.status() {
        Some(s) => proto::status_name(s).to_string(),
        None => e.to_string(),
    };
    io::Error::new(kind, text)
}

fn stat_of(a: &Attrs) -> Stat {
    Stat { dir: a.kind == Some(2), file: a.kind == Some(1), len: a.size.unwrap_or(0) }
}

/// nfs_ftype4: 1 regular, 2 directory, 5 symbolic link (LOOKUP does not follow one).
fn entry_of(a: &Attrs) -> Entry {
    let kind = match a.kind {
        Some(1) => Kind::File,
        Some(2) => Kind::Dir,
        Some(5) => Kind::Link,
        _ => Kind::Other,
    };
    Entry { kind, len: a.size.unwrap_or(0), id: a.fileid }
}

impl FsConn for Paths41 {
    fn stat(&mut self, path: &Path) -> io::Result<Option<Stat>> {
        match self.fresh(|p| p.lookup(path)) {
            Ok((_, Some(a))) => Ok(Some(stat_of(&a))),
            Ok((fh, None)) => self.getattr_fh(&fh).map(|a| Some(stat_of(&a))).map_err(to_io),
            Err(e) if e.status() == Some(status::NOENT) => Ok(None),
            Err(e) => Err(to_io(e)),
        }
    }

    fn identify(&mut self, path: &Path) -> io::Result<Option<Entry>> {
        match self.fresh(|p| p.lookup(path)) {
            Ok((_, Some(a))) => Ok(Some(entry_of(&a))),
            Ok((fh, None)) => self.getattr_fh(&fh).map(|a| Some(entry_of(&a))).map_err(to_io),
            Err(e) if e.status() == Some(status::NOENT) => Ok(None),
            Err(e) => Err(to_io(e)),
        }
    }

    fn read_file(&mut self, path: &Path) -> io::Result<Vec<u8>> {
        let f = self.open(path, false).map_err(to_io)?;
        let mut data = Vec::new();
        let read = loop {
            match self.read(&f, data.len() as u64, self.rtmax) {
                Ok((piece, eof)) => {
                    data.extend_from_slice(&piece);
                    if eof || piece.is_empty() {
                        break Ok(());
                    }
                }
                Err(e) => break Err(e),
            }
        };
        let closed = self.close(&f);
        read.and(closed).map_err(to_io)?;
        Ok(data)
    }

    fn list(&mut self, dir: &Path) -> io::Result<Vec<(String, Option<Stat>)>> {
        let rel = self.below(dir).map_err(to_io)?.to_path_buf();
        let entries = self.fresh(|p| {
            let fh = p.dir(&rel)?;
            p.readdir(&fh)
        });
        Ok(entries.map_err(to_io)?.into_iter().map(|e| (e.name, Some(stat_of(&e.attrs)))).collect())
    }

    /// Walks from the root without the cache: another connection may have removed a
    /// directory this one still holds a handle of.
    fn create_dir_all(&mut self, path: &Path) -> io::Result<()> {
        let rel = self.below(path).map_err(to_io)?.to_path_buf();
        let (mut at, mut fh) = (PathBuf::new(), self.root.clone());
        for name in rel.iter() {
            at.push(name);
            let name = name.to_str().ok_or_else(|| io::Error::other("a name that is not UTF-8"))?;
            fh = match self.lookup_in(&fh, name) {
                Ok((f, _)) => f,
                Err(e) if e.status() == Some(status::NOENT) => match self.mkdir_in(&fh, name) {
                    Ok(f) => f,
                    Err(e) if e.status() == Some(status::EXIST) => self.lookup_in(&fh, name).map_err(to_io)?.0,
                    Err(e) => return Err(to_io(e)),
                },
                Err(e) => return Err(to_io(e)),
            };
            self.remember_dir(&at, &fh);
        }
        Ok(())
    }

    fn remove_file(&mut self, path: &Path) -> io::Result<()> {
        self.remove(path).map_err(to_io)
    }

    fn remove_dir(&mut self, path: &Path) -> io::Result<()> {
        self.rmdir(path).map_err(to_io)
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        Paths41::rename(self, from, to).map_err(to_io)
    }

    /// OPEN creating (UNCHECKED, size 0): a file that exists is emptied. It stays open for
    /// the writes that follow, until `sync`.
    fn create_empty(&mut self, path: &Path) -> io::Result<()> {
        self.finish_writing().map_err(to_io)?;
        self.forget(path);
        let f = self.fresh(|p| {
            let (dir, name) = p.parent(path)?;
            p.open_in(&dir, name, true, Create::Unchecked { mode: 0o644, truncate: true })
        });
        self.writing = Some((path.to_path_buf(), f.map_err(to_io)?));
        Ok(())
    }

    fn write_at(&mut self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        let f = self.writing(path).map_err(to_io)?;
        self.write(&f, offset, data, Stable::Unstable).map_err(to_io)
    }

    fn sync(&mut self, path: &Path) -> io::Result<()> {
        self.writing(path).map_err(to_io)?;
        self.finish_writing().map_err(to_io)
    }
}
