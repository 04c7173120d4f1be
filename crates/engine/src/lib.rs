//! I/O engines: how an I/O reaches the target. An engine submits operations and reports
//! completions; it never reads a clock or touches a histogram. The core loop (crate
//! `ioscope-exec`) stamps intended, issue and completion times and records results, so
//! every engine is measured the same way.
//!
//! What each engine can do (the limits a plan is validated against) is plain data in the
//! engine table, `ioscope_engine_table::ENGINES`; an engine is one module here (or its own
//! crate, like `ioscope-engine-nfs`) plus its line in that table and its arm in the executor.

pub mod buffers;
pub mod caught;
pub mod fs;
pub mod null;
pub mod op;
pub mod posix;
pub mod uring;

pub use buffers::IoBuffers;
pub use op::{FileReq, Io, Op, OP_KINDS};

use std::path::PathBuf;

/// How an engine instance, once opened, submits: the core loop picks its loop from this.
/// (What an engine can do at all is in the engine table, checked before any I/O.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submission {
    /// Completions come from [`Engine::reap`] (submit may return [`Submitted::Queued`]);
    /// false means every submit completes before it returns.
    pub queued: bool,
    /// Queued I/Os reach the target only at [`Engine::reap`] (batched), not in
    /// [`Engine::submit`]; the core then stamps their issue time once, before reaping.
    pub batched_submit: bool,
}

/// What an engine opens before the run: the working-set files and how.
#[derive(Clone, Debug, Default)]
pub struct OpenSpec {
    pub files: Vec<PathBuf>,
    /// Open for writing too.
    pub write: bool,
    /// O_DIRECT: bypass the page cache (buffers are aligned by [`IoBuffers`]).
    pub direct: bool,
    /// O_DSYNC: each write is durable when it completes.
    pub dsync: bool,
    /// Queue depth the core will use.
    pub queue_depth: u32,
    /// Bytes in each file (a flat working set's files are all alike); 0 if not known.
    pub file_size: u64,
}

impl OpenSpec {
    /// Opens every file as the spec says (read, write, O_DIRECT, O_DSYNC); errors name the file.
    pub fn open_files(&self) -> std::io::Result<Vec<std::fs::File>> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut flags = 0;
        if self.direct {
            flags |= libc::O_DIRECT;
        }
        if self.dsync {
            flags |= libc::O_DSYNC;
        }
        self.files
            .iter()
            .map(|p| {
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(self.write)
                    .custom_flags(flags)
                    .open(p)
                    .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", p.display())))
            })
            .collect()
    }
}

/// Result of [`Engine::submit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// Completed synchronously: bytes transferred (>= 0) or a negative errno.
    Done(i64),
    /// Accepted; its completion comes from [`Engine::reap`].
    Queued,
    /// The engine cannot accept more now; reap first and resubmit.
    Busy,
}

/// A queued I/O that finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The slot given in [`Io::slot`].
    pub slot: u32,
    /// Bytes transferred (>= 0) or a negative errno.
    pub result: i64,
}

/// The engine interface. One instance per worker thread.
pub trait Engine: Send {
    fn name(&self) -> &'static str;
    /// How the engine is set up once opened (recorded with the results); the name by default.
    fn describe(&self) -> String {
        self.name().to_string()
    }
    fn submission(&self) -> Submission;
    /// Opens the target. Buffers are allocated by the core and stay put for the whole run.
    fn open(&mut self, spec: &OpenSpec, buffers: &IoBuffers) -> std::io::Result<()>;
    /// Submits one I/O using the buffer of `io.slot`.
    fn submit(&mut self, io: &Io, buffers: &mut IoBuffers) -> Submitted;
    /// Makes queued submissions visible to the target (batched engines); no-op by default.
    fn commit(&mut self) {}
    /// Submits what is queued, waits for at least `min` completions (0 = do not wait) but
    /// no longer than `timeout_ns` if given, and appends the completions to `out`.
    fn reap(&mut self, _min: usize, _timeout_ns: Option<u64>, _out: &mut Vec<Completion>) -> std::io::Result<()> {
        Ok(())
    }
    /// Performs a file or directory operation synchronously: bytes transferred (Create,
    /// Copy), 0, or a negative errno. Engines without file operations (see the engine table)
    /// refuse every one.
    fn file_op(&mut self, _req: &FileReq<'_>, _buffers: &mut IoBuffers) -> i64 {
        -(libc::EOPNOTSUPP as i64)
    }
    /// What a failed result (a negative value from submit or reap) means, in the target's
    /// own words (an NFS engine names NFS statuses); the errno text by default.
    fn error_text(&self, result: i64) -> String {
        error_name(result)
    }
    /// Why the target can no longer be reached (a server that closed every connection or
    /// stopped answering): the run ends, failed. None while it can.
    fn lost(&self) -> Option<&str> {
        None
    }
    /// Closes the target. Also done on drop.
    fn close(&mut self) {}
}

/// Failed results carrying a status of the target's own protocol (an NFS status, an S3
/// error code's number) are `-(STATUS_BASE + status)`, above every errno; the engine's
/// [`Engine::error_text`] names them, and the recorders count them by kind.
pub const STATUS_BASE: i64 = 1 << 20;

/// Turns a negative errno result into a readable message.
pub fn error_name(result: i64) -> String {
    std::io::Error::from_raw_os_error((-result) as i32).to_string()
}
