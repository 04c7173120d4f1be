//! Whether the run that wrote a `running` results file is still writing it.
//!
//! The writer holds a lock on one byte of the results file for as long as it has the file
//! open; the kernel drops it when the process ends, however it ends (SIGKILL included). A
//! reader that finds the byte unlocked knows nobody is writing, whatever the pid recorded
//! in the file: a killed process not yet reaped (a zombie keeps its pid and its name), a
//! pid reused by another ioscope, a run in another pid namespace or on another host
//! sharing the file system. The lock is an open-file-description lock (`F_OFD_SETLK`) on a
//! byte far past the bytes SQLite locks (from 1 GiB, 512 bytes), so it never meets
//! SQLite's own locks, and no other file is made. Where such locks are not available
//! (an old kernel, a file system without locks) the recorded host and pid are checked
//! instead, as before.

use crate::RunInfo;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The byte locked: past SQLite's lock bytes (`PENDING_BYTE` 0x4000_0000 and the 511
/// after it), below 2^31 for file systems with 32-bit lock offsets.
const LOCK_BYTE: i64 = 0x5000_0000;

/// The writer's lock: held while this lives.
#[derive(Debug)]
pub(crate) struct Held {
    _file: File,
}

fn lock(kind: libc::c_short) -> libc::flock {
    // SAFETY: flock is plain data; zero is a valid value of every field.
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = kind;
    l.l_whence = libc::SEEK_SET as libc::c_short;
    l.l_start = LOCK_BYTE;
    l.l_len = 1;
    l
}

/// Takes the writer's lock on the results file at `path`. None when the file system
/// offers no such lock: readers then fall back to the recorded pid.
pub(crate) fn hold(path: &Path) -> Option<Held> {
    let file = std::fs::OpenOptions::new().read(true).write(true).open(path).ok()?;
    let l = lock(libc::F_WRLCK as libc::c_short);
    // SAFETY: a valid descriptor and a valid flock for the call's duration.
    let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &l) };
    (r == 0).then_some(Held { _file: file })
}

/// Some(true) while a writer holds the lock, Some(false) when nobody does; None when
/// locks cannot be queried on this file.
fn writer_holds(path: &Path) -> Option<bool> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).ok()?;
    let mut l = lock(libc::F_WRLCK as libc::c_short);
    // SAFETY: as above; F_OFD_GETLK fills `l` in.
    let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut l) };
    (r == 0).then_some(l.l_type != libc::F_UNLCK as libc::c_short)
}

/// Whether the process that wrote a `running` file at `path` is still at it.
pub(crate) fn still_running(path: &Path, run: &RunInfo) -> bool {
    match writer_holds(path) {
        Some(held) => held,
        None => pid_alive(run),
    }
}

/// The check without the lock: same host, the pid exists and it is an ioscope process.
/// A run from another host cannot be checked and counts as stopped.
fn pid_alive(run: &RunInfo) -> bool {
    if crate::hostname().as_deref() != Some(run.host.as_str()) || run.pid == 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{}/comm", run.pid)) {
        Ok(comm) => comm.trim_end() == "ioscope",
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_is_seen_while_held_and_gone_once_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        std::fs::write(&path, b"").unwrap();
        assert_eq!(writer_holds(&path), Some(false));
        let held = hold(&path).expect("OFD locks on a local file system");
        assert_eq!(writer_holds(&path), Some(true), "another open file description sees it, in this process too");
        assert!(hold(&path).is_none(), "one writer at a time");
        drop(held);
        assert_eq!(writer_holds(&path), Some(false));
    }
}
