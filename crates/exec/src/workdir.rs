//! A working directory belongs to one run at a time: before anything in it is checked or
//! written, a run takes an advisory lock (flock) on `.ioscope.lock` in it, holding the
//! run's pid, host and results file. A second run on the same directory is refused at
//! once, naming the first. The kernel drops the lock when the process ends, also on
//! kill -9, so a file left behind never blocks anyone. Taking the lock also proves that
//! ioscope can create, write and remove files there, before any working set is written.
//!
//! The lock file is opened without following a link, and used only if it is a regular
//! file with no other name (a link to someone's file, or a hard link of one, would have
//! that file truncated); the probe file is created new, never opened if it exists.
//!
//! Only local directories (and network file systems mounted here whose locks the kernel
//! forwards) are protected; engine nfs talks to its server directly and takes no lock.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The lock file's name, in the working directory.
pub const LOCK: &str = ".ioscope.lock";

/// Why a directory cannot be used. Found before any I/O: invalid input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum WorkdirError {
    #[error("{dir}: in use by another ioscope run ({holder}); a directory belongs to one run at a time, since one run's preparation or cleanup would change the other's files under it. Wait for that run to end, or choose another directory")]
    Busy { dir: PathBuf, holder: String },
    #[error("{dir}: the parent directory {parent} does not exist; ioscope creates only the last part of the path (and removes it again with --cleanup). Create {parent} first, or check the path for a typo")]
    NoParent { dir: PathBuf, parent: PathBuf },
    #[error("{dir}: not a directory")]
    NotADir { dir: PathBuf },
    #[error("{dir}: ioscope cannot {what} here ({source}); it needs a directory where it can create, write and remove files")]
    Unusable { dir: PathBuf, what: &'static str, source: std::io::Error },
}

/// The lock on a working directory, released (and its file removed) when dropped.
#[derive(Debug)]
pub struct DirLock {
    file: File,
    path: PathBuf,
    dir: PathBuf,
    created_dir: bool,
}

impl DirLock {
    /// Whether this run created the directory (its parent existed, it did not).
    pub fn created_dir(&self) -> bool {
        self.created_dir
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Only our own file: cleanup may have removed it with the directory.
        if same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
        if self.created_dir {
            let _ = std::fs::remove_dir(&self.dir); // only if nothing else is left in it
        }
    }
}

fn same_file(f: &File, path: &Path) -> bool {
    match (f.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    }
}

/// The local directory a plan's files live in (the dataset's, or the working set's), if
/// any: none for an engine with a target (nfs: on its server), none without a dataset for
/// an engine that does no I/O (null), none for a block device or an existing file.
pub fn local_dir(plan: &ioscope_workload::Plan) -> Option<PathBuf> {
    let caps = plan.engine.spec().caps;
    match &plan.dataset {
        _ if caps.target.is_some() => None,
        // A block device holds no lock file: nothing but the run's own I/O is written on it.
        None if crate::blockdev::is_block_device(&plan.dir) => None,
        // Nor does an existing file named as the target (not ioscope's: nothing is added).
        None if crate::existing::is_existing_file(&plan.dir) => None,
        Some(d) => Some(d.dir.clone()),
        None => caps.does_io.then(|| plan.dir.clone()),
    }
}

/// Locks `dir` for a run whose results go to `results`, creating `dir` (not its
/// parents) if it does not exist.
pub fn lock(dir: &Path, results: &Path) -> Result<DirLock, WorkdirError> {
    let unusable = |what, source| WorkdirError::Unusable { dir: dir.to_path_buf(), what, source };
    let mut created_dir = false;
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(WorkdirError::NotADir { dir: dir.to_path_buf() }),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if !parent.is_dir() {
                return Err(WorkdirError::NoParent { dir: dir.to_path_buf(), parent: parent.to_path_buf() });
            }
            match std::fs::create_dir(dir) {
                Ok(()) => created_dir = true,
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {} // another run made it just now
                Err(e) => return Err(unusable("create a directory", e)),
            }
        }
        Err(e) => return Err(unusable("look at the directory", e)),
    }
    let path = dir.join(LOCK);
    let locked = acquire(&path).map_err(|e| match e {
        Acquire::Held(holder) => WorkdirError::Busy { dir: dir.to_path_buf(), holder },
        Acquire::Io(e) => unusable("create a file", e),
    });
    let mut file = match locked {
        Ok(f) => f,
        Err(e) => {
            if created_dir {
                let _ = std::fs::remove_dir(dir);
            }
            return Err(e);
        }
    };
    let lock = |file| DirLock { file, path: path.clone(), dir: dir.to_path_buf(), created_dir };
    let results = std::path::absolute(results).unwrap_or_else(|_| results.to_path_buf());
    let text = format!("pid {}\nhost {}\nresults {}\n", std::process::id(), crate::host::hostname(), results.display());
    if let Err(e) = file.set_len(0).and_then(|()| file.write_all(text.as_bytes())).and_then(|()| file.sync_data()) {
        drop(lock(file));
        return Err(unusable("write a file", e));
    }
    // Removing is what cleanup does at the end: find out now if it cannot.
    let probe = dir.join(format!("{LOCK}.{}.probe", std::process::id()));
    let created = std::fs::OpenOptions::new().write(true).create_new(true).open(&probe);
    if let Err(e) = created.and_then(|_| std::fs::remove_file(&probe)) {
        // Only a probe of ours is removed: one that was there already stays.
        if e.kind() != ErrorKind::AlreadyExists {
            let _ = std::fs::remove_file(&probe);
        }
        drop(lock(file));
        return Err(unusable("create and remove a file", e));
    }
    Ok(lock(file))
}

enum Acquire {
    /// Another process holds the lock: what its file says about it.
    Held(String),
    Io(std::io::Error),
}

fn acquire(path: &Path) -> Result<File, Acquire> {
    use rustix::fs::{flock, FlockOperation};
    use std::os::unix::fs::OpenOptionsExt;
    loop {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => std::io::Error::other(format!("{} is a symbolic link", path.display())),
                _ => e,
            });
        let Ok(f) = file.as_mut() else { return Err(Acquire::Io(file.unwrap_err())) };
        match f.metadata() {
            Ok(m) if m.is_file() && m.nlink() == 1 => {}
            Ok(_) => {
                let what =
                    format!("{} is not a regular file of its own (a FIFO, a device, or a hard link)", path.display());
                return Err(Acquire::Io(std::io::Error::other(what)));
            }
            Err(e) => return Err(Acquire::Io(e)),
        }
        match flock(&*f, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => return Err(Acquire::Held(holder(f))),
            Err(e) => return Err(Acquire::Io(e.into())),
        }
        // The holder before us may have removed the file between our open and our lock:
        // then we locked a file nobody else can see; take the one at the path instead.
        if same_file(f, path) {
            return file.map_err(Acquire::Io);
        }
    }
}

/// "pid N on host H, results file R", from the holder's lock file (read with a bound).
fn holder(f: &mut File) -> String {
    let mut text = String::new();
    let _ = f.take(4096).read_to_string(&mut text);
    let field = |key: &str| {
        text.lines().find_map(|l| l.strip_prefix(key).map(|v| v.trim().chars().take(1024).collect::<String>()))
    };
    match (field("pid "), field("host "), field("results ")) {
        (Some(pid), Some(host), Some(results)) => format!("pid {pid} on host {host}, results file {results}"),
        _ => "it has not written its pid yet".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_directory_is_refused_naming_the_first_run() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ws");
        let first = lock(&dir, Path::new("/r/first.db")).unwrap();
        assert!(first.created_dir());
        let err = lock(&dir, Path::new("/r/second.db")).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, WorkdirError::Busy { .. }), "{text}");
        assert!(text.contains(&format!("pid {}", std::process::id())) && text.contains("/r/first.db"), "{text}");
        drop(first);
        assert!(!dir.exists(), "the directory this run made, empty, goes with the lock");
        let again = lock(tmp.path(), Path::new("/r/third.db")).unwrap();
        assert!(!again.created_dir());
        drop(again);
        assert!(!tmp.path().join(LOCK).exists());
    }

    #[test]
    fn a_directory_whose_parent_is_missing_or_where_files_cannot_be_made_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let err = lock(&tmp.path().join("a/b"), Path::new("r.db")).unwrap_err();
        assert!(matches!(err, WorkdirError::NoParent { .. }), "{err}");
        assert!(!tmp.path().join("a").exists(), "nothing was created");
        let err = lock(Path::new("/proc/self"), Path::new("r.db")).unwrap_err();
        assert!(matches!(err, WorkdirError::Unusable { .. }), "{err}");
        let file = tmp.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        assert!(matches!(lock(&file, Path::new("r.db")).unwrap_err(), WorkdirError::NotADir { .. }));
    }

    #[test]
    fn a_lock_file_that_is_a_link_or_a_hard_link_of_another_file_is_refused_and_that_file_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, victim) = (tmp.path().join("ws"), tmp.path().join("victim"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.join(LOCK)).unwrap();
        let err = lock(&dir, Path::new("r.db")).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        std::fs::remove_file(dir.join(LOCK)).unwrap();
        std::fs::hard_link(&victim, dir.join(LOCK)).unwrap();
        let err = lock(&dir, Path::new("r.db")).unwrap_err();
        assert!(err.to_string().contains("hard link"), "{err}");
        // A probe name planted in advance is neither written nor removed.
        std::fs::remove_file(dir.join(LOCK)).unwrap();
        let probe = dir.join(format!("{LOCK}.{}.probe", std::process::id()));
        std::os::unix::fs::symlink(&victim, &probe).unwrap();
        assert!(lock(&dir, Path::new("r.db")).is_err());
        assert!(probe.is_symlink());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }
}
