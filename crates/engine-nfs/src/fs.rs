//! Paths on an NFS server. A path is spelt `nfs://HOST[:PORT]/EXPORT/a/b` (see
//! [`Target::url_of`]) and resolved from the export's root handle by LOOKUP; directory
//! handles are cached per connection, as a kernel client's dentry cache would, so an
//! operation on a file costs the calls the operation needs and not a walk from the root.
//! [`Paths`] does the file and directory operations of the engine's file-tree workloads;
//! [`NfsFs`] is the [`FileSystem`] datasets are checked, created and removed through.

use crate::client::{mount_export, Mounted, NfsError, Session};
use crate::proto::{status_name, Attr, Fh, Stable};
use crate::target::Target;
use ioscope_engine::fs::{Entry, FileSystem, FsConn, Kind, Stat};
use std::collections::HashMap;
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

/// NFS3ERR_* statuses the operations here act on.
pub mod status {
    pub const NOENT: u32 = 2;
    pub const EXIST: u32 = 17;
    pub const STALE: u32 = 70;
}

/// Handles cached per connection before the cache starts over (a bound on memory for
/// trees of millions of files).
const MAX_CACHED: usize = 1 << 16;

/// File and directory operations by path on one connection, one call at a time.
pub struct Paths {
    session: Session,
    root: Fh,
    /// The spelling of the export's root: every path starts with it.
    prefix: PathBuf,
    /// Handles by path below the export (directories; files looked up before).
    dirs: HashMap<PathBuf, Fh>,
    files: HashMap<PathBuf, Fh>,
    rtmax: u32,
    wtmax: u32,
}

fn status_err(op: &'static str, status: u32) -> NfsError {
    NfsError::Status { op, status }
}

impl Paths {
    /// A connection of its own to the mounted export (`m` from [`mount_export`]).
    pub fn connect(t: &Target, m: &Mounted) -> Result<Paths, NfsError> {
        Ok(Paths {
            session: Session::connect(t, m)?,
            root: m.root.clone(),
            prefix: PathBuf::from(t.url_of(&m.export)),
            dirs: HashMap::new(),
            files: HashMap::new(),
            rtmax: m.fsinfo.rtmax.clamp(1, 1 << 20),
            wtmax: m.fsinfo.wtmax.clamp(1, 1 << 20),
        })
    }

    /// The path below the export.
    fn below<'p>(&self, path: &'p Path) -> Result<&'p Path, NfsError> {
        path.strip_prefix(&self.prefix).map_err(|_| {
            NfsError::Setup(format!("{} is not on the mounted export {}", path.display(), self.prefix.display()))
        })
    }

    /// The handle of a directory below the export, from the cache or by LOOKUP.
    fn dir(&mut self, rel: &Path) -> Result<Fh, NfsError> {
        if rel.as_os_str().is_empty() {
            return Ok(self.root.clone());
        }
        if let Some(fh) = self.dirs.get(rel) {
            return Ok(fh.clone());
        }
        let (parent, name) = split(rel)?;
        let parent = self.dir(parent)?;
        let (fh, _) = self.session.lookup(&parent, name)?;
        self.remember_dir(rel, &fh);
        Ok(fh)
    }

    fn remember_dir(&mut self, rel: &Path, fh: &Fh) {
        if self.dirs.len() >= MAX_CACHED {
            self.dirs.clear();
        }
        self.dirs.insert(rel.to_path_buf(), fh.clone());
    }

    /// The handle of a path's directory and the path's last name.
    fn parent<'p>(&mut self, path: &'p Path) -> Result<(Fh, &'p str), NfsError> {
        let (parent, name) = split(self.below(path)?)?;
        Ok((self.dir(parent)?, name))
    }

    /// LOOKUP of a path (the export's root for the prefix itself).
    pub fn lookup(&mut self, path: &Path) -> Result<(Fh, Option<Attr>), NfsError> {
        let rel = self.below(path)?;
        if rel.as_os_str().is_empty() {
            return Ok((self.root.clone(), None));
        }
        let (dir, name) = self.parent(path)?;
        self.session.lookup(&dir, name)
    }

    /// A file's handle: cached, or looked up (and cached).
    fn file(&mut self, path: &Path) -> Result<Fh, NfsError> {
        if let Some(fh) = self.files.get(path) {
            return Ok(fh.clone());
        }
        let (fh, _) = self.lookup(path)?;
        self.remember_file(path, &fh);
        Ok(fh)
    }

    fn remember_file(&mut self, path: &Path, fh: &Fh) {
        if self.files.len() >= MAX_CACHED {
            self.files.clear();
        }
        self.files.insert(path.to_path_buf(), fh.clone());
    }

    /// Drops what is cached of a path (removed, renamed, or stale).
    fn forget(&mut self, path: &Path) {
        self.files.remove(path);
        if let Ok(rel) = path.strip_prefix(&self.prefix) {
            self.dirs.remove(rel);
        }
    }

    /// Runs `f`; on NFS3ERR_STALE (a cached handle whose object was removed, perhaps
    /// re-created by another worker) forgets every handle and runs it once more.
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

    /// Open: a LOOKUP every time (an open revalidates the name); the handle for I/O.
    pub fn open(&mut self, path: &Path) -> Result<Fh, NfsError> {
        self.forget(path);
        self.fresh(|p| p.file(path))
    }

    /// READDIRPLUS of a directory, every page: how many entries it has.
    pub fn readdir(&mut self, dir: &Path) -> Result<usize, NfsError> {
        let rel = self.below(dir)?.to_path_buf();
        self.fresh(|p| {
            let fh = p.dir(&rel)?;
            p.session.readdirplus(&fh).map(|e| e.len())
        })
    }

    /// GETATTR of a file by its handle (looked up once).
    pub fn getattr(&mut self, path: &Path) -> Result<Attr, NfsError> {
        self.fresh(|p| {
            let fh = p.file(path)?;
            let r = p.session.getattr(&fh);
            if r.is_err() {
                p.forget(path);
            }
            r
        })
    }

    /// SETATTR of the modification time (touch).
    pub fn touch(&mut self, path: &Path) -> Result<(), NfsError> {
        self.fresh(|p| {
            let fh = p.file(path)?;
            let r = p.session.touch(&fh);
            if r.is_err() {
                p.forget(path);
            }
            r
        })
    }

    /// Creates a file that must not exist (CREATE guarded) holding `size` bytes of `data`
    /// repeated, written UNSTABLE and COMMITted: what a client's create, write, close does.
    pub fn create_new(&mut self, path: &Path, size: u64, data: &[u8]) -> Result<u64, NfsError> {
        let fh = self.fresh(|p| {
            let (dir, name) = p.parent(path)?;
            p.session.create_with(&dir, name, 0o644, true, false)
        })?;
        self.write_all(&fh, size, &mut |off, chunk| {
            let mut i = 0;
            while i < chunk.len() {
                let at = ((off + i as u64) % data.len() as u64) as usize;
                let n = (chunk.len() - i).min(data.len() - at);
                chunk[i..i + n].copy_from_slice(&data[at..at + n]);
                i += n;
            }
        })?;
        Ok(size)
    }

    /// WRITEs `size` bytes in wtmax pieces from `fill(offset, piece)`, UNSTABLE, then COMMIT.
    fn write_all(&mut self, fh: &Fh, size: u64, fill: &mut dyn FnMut(u64, &mut [u8])) -> Result<(), NfsError> {
        let mut buf = vec![0u8; (self.wtmax as u64).min(size) as usize];
        for off in (0..size).step_by(self.wtmax as usize) {
            let chunk = &mut buf[..(size - off).min(self.wtmax as u64) as usize];
            fill(off, chunk);
            self.write_data(fh, off, chunk)?;
        }
        if size > 0 {
            self.session.commit(fh)?;
        }
        Ok(())
    }

    /// WRITEs `data` at `off`, UNSTABLE, in wtmax pieces (and again what a short write left).
    fn write_data(&mut self, fh: &Fh, mut off: u64, mut data: &[u8]) -> Result<(), NfsError> {
        while !data.is_empty() {
            let piece = &data[..data.len().min(self.wtmax as usize)];
            let n = self.session.write(fh, off, Stable::Unstable, piece)? as usize;
            if n == 0 {
                return Err(NfsError::Setup("the server wrote 0 bytes".into()));
            }
            (off, data) = (off + n as u64, &data[n.min(data.len())..]);
        }
        Ok(())
    }

    pub fn remove(&mut self, path: &Path) -> Result<(), NfsError> {
        self.forget(path);
        self.fresh(|p| {
            let (dir, name) = p.parent(path)?;
            p.session.remove(&dir, name)
        })
    }

    pub fn mkdir(&mut self, path: &Path) -> Result<(), NfsError> {
        let fh = self.fresh(|p| {
            let (dir, name) = p.parent(path)?;
            p.session.mkdir(&dir, name, 0o755)
        })?;
        let rel = self.below(path)?.to_path_buf();
        self.remember_dir(&rel, &fh);
        Ok(())
    }

    pub fn rmdir(&mut self, path: &Path) -> Result<(), NfsError> {
        self.forget(path);
        self.fresh(|p| {
            let (dir, name) = p.parent(path)?;
            p.session.rmdir(&dir, name)
        })
    }

    /// RENAME to a name that must not exist (NFS3ERR_EXIST otherwise): RENAME itself would
    /// replace it.
    pub fn rename_new(&mut self, from: &Path, to: &Path) -> Result<(), NfsError> {
        match self.fresh(|p| p.lookup(to)) {
            Ok(_) => return Err(status_err("RENAME", status::EXIST)),
            Err(e) if e.status() == Some(status::NOENT) => {}
            Err(e) => return Err(e),
        }
        self.rename(from, to)
    }

    fn rename(&mut self, from: &Path, to: &Path) -> Result<(), NfsError> {
        self.forget(from);
        self.forget(to);
        self.fresh(|p| {
            let (from_dir, from_name) = p.parent(from)?;
            let (to_dir, to_name) = p.parent(to)?;
            p.session.rename(&from_dir, from_name, &to_dir, to_name)
        })
    }

    /// Copies a file to a name that must not exist, as a client does: READ from the
    /// source, WRITE to the new file (UNSTABLE, then COMMIT). Returns the bytes copied.
    pub fn copy_new(&mut self, from: &Path, to: &Path) -> Result<u64, NfsError> {
        let (src, attr) = self.fresh(|p| p.lookup(from))?;
        let size = match attr {
            Some(a) => a.size,
            None => self.session.getattr(&src)?.size,
        };
        let dst = self.fresh(|p| {
            let (dir, name) = p.parent(to)?;
            p.session.create_with(&dir, name, 0o644, true, false)
        })?;
        let (mut buf, mut off) = (vec![0u8; (self.wtmax as u64).min(size) as usize], 0u64);
        'copy: while off < size {
            let chunk = &mut buf[..(size - off).min(self.wtmax as u64) as usize];
            let mut got = 0;
            while got < chunk.len() {
                let want = (chunk.len() - got).min(self.rtmax as usize) as u32;
                let data = self.session.read_data(&src, off + got as u64, want)?;
                if data.is_empty() {
                    // The source got shorter while copying: copy what there is.
                    self.session.write(&dst, off, Stable::Unstable, &chunk[..got])?;
                    off += got as u64;
                    break 'copy;
                }
                chunk[got..got + data.len()].copy_from_slice(&data);
                got += data.len();
            }
            off += self.session.write(&dst, off, Stable::Unstable, chunk)? as u64;
        }
        if off > 0 {
            self.session.commit(&dst)?;
        }
        Ok(off)
    }

    /// The NULL procedure: whether the server answers at all.
    pub fn ping(&mut self) -> Result<(), NfsError> {
        self.session.null()
    }

    /// COMMIT of a file written UNSTABLE.
    pub fn commit(&mut self, fh: &Fh) -> Result<(), NfsError> {
        self.session.commit(fh)
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

/// The export of a target as a [`FileSystem`]: mounted once, a [`Paths`] per thread.
pub struct NfsFs {
    target: Target,
    mounted: Mounted,
}

impl NfsFs {
    pub fn mount(t: &Target) -> Result<NfsFs, NfsError> {
        Ok(NfsFs { target: t.clone(), mounted: mount_export(t)? })
    }
}

impl FileSystem for NfsFs {
    fn connect(&self) -> io::Result<Box<dyn FsConn + '_>> {
        Ok(Box::new(Paths::connect(&self.target, &self.mounted).map_err(to_io)?))
    }
}

/// An NFS failure as an io::Error whose kind matches the local file system's (not found,
/// already exists, directory not empty ...), keeping the status's name as its text.
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
        Some(s) => status_name(s).to_string(),
        None => e.to_string(),
    };
    io::Error::new(kind, text)
}

fn stat_of(a: &Attr) -> Stat {
    Stat { dir: a.kind == 2, file: a.kind == 1, len: a.size }
}

/// ftype3: 1 regular, 2 directory, 5 symbolic link (LOOKUP does not follow one).
fn entry_of(a: &Attr) -> Entry {
    let kind = match a.kind {
        1 => Kind::File,
        2 => Kind::Dir,
        5 => Kind::Link,
        _ => Kind::Other,
    };
    Entry { kind, len: a.size, id: Some(a.fileid) }
}

impl FsConn for Paths {
    fn stat(&mut self, path: &Path) -> io::Result<Option<Stat>> {
        match self.fresh(|p| p.lookup(path)) {
            Ok((_, Some(a))) => Ok(Some(stat_of(&a))),
            Ok((fh, None)) => self.session.getattr(&fh).map(|a| Some(stat_of(&a))).map_err(to_io),
            Err(e) if e.status() == Some(status::NOENT) => Ok(None),
            Err(e) => Err(to_io(e)),
        }
    }

    fn identify(&mut self, path: &Path) -> io::Result<Option<Entry>> {
        match self.fresh(|p| p.lookup(path)) {
            Ok((_, Some(a))) => Ok(Some(entry_of(&a))),
            Ok((fh, None)) => self.session.getattr(&fh).map(|a| Some(entry_of(&a))).map_err(to_io),
            Err(e) if e.status() == Some(status::NOENT) => Ok(None),
            Err(e) => Err(to_io(e)),
        }
    }

    fn read_file(&mut self, path: &Path) -> io::Result<Vec<u8>> {
        let (fh, _) = self.fresh(|p| p.lookup(path)).map_err(to_io)?;
        let mut data = Vec::new();
        loop {
            let piece = self.session.read_data(&fh, data.len() as u64, self.rtmax).map_err(to_io)?;
            if piece.is_empty() {
                return Ok(data);
            }
            data.extend_from_slice(&piece);
        }
    }

    fn list(&mut self, dir: &Path) -> io::Result<Vec<(String, Option<Stat>)>> {
        let rel = self.below(dir).map_err(to_io)?.to_path_buf();
        let entries = self.fresh(|p| {
            let fh = p.dir(&rel)?;
            p.session.readdirplus(&fh)
        });
        let entries = entries.map_err(to_io)?;
        Ok(entries.into_iter().map(|e| (e.name, e.attr.as_ref().map(stat_of))).collect())
    }

    /// Walks from the root without the cache: another connection may have removed a
    /// directory this one still holds a handle of.
    fn create_dir_all(&mut self, path: &Path) -> io::Result<()> {
        let rel = self.below(path).map_err(to_io)?.to_path_buf();
        let mut at = PathBuf::new();
        let mut fh = self.root.clone();
        for name in rel.iter() {
            at.push(name);
            let name = name.to_str().ok_or_else(|| io::Error::other("a name that is not UTF-8"))?;
            fh = match self.session.lookup(&fh, name) {
                Ok((f, _)) => f,
                Err(e) if e.status() == Some(status::NOENT) => match self.session.mkdir(&fh, name, 0o755) {
                    Ok(f) => f,
                    // Made by another thread meanwhile.
                    Err(e) if e.status() == Some(status::EXIST) => self.session.lookup(&fh, name).map_err(to_io)?.0,
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
        Paths::rename(self, from, to).map_err(to_io)
    }

    fn create_empty(&mut self, path: &Path) -> io::Result<()> {
        self.forget(path);
        let fh = self.fresh(|p| {
            let (dir, name) = p.parent(path)?;
            match p.session.create_with(&dir, name, 0o644, false, true) {
                // An unchecked CREATE of an existing name should succeed; some servers say EXIST.
                Err(e) if e.status() == Some(status::EXIST) => {
                    let (fh, _) = p.session.lookup(&dir, name)?;
                    p.session.setattr(&fh, None, Some(0))?;
                    Ok(fh)
                }
                r => r,
            }
        });
        self.remember_file(path, &fh.map_err(to_io)?);
        Ok(())
    }

    fn write_at(&mut self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        let fh = self.fresh(|p| p.file(path)).map_err(to_io)?;
        self.write_data(&fh, offset, data).map_err(to_io)
    }

    fn sync(&mut self, path: &Path) -> io::Result<()> {
        let fh = self.fresh(|p| p.file(path)).map_err(to_io)?;
        self.session.commit(&fh).map_err(to_io)
    }
}
