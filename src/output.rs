//! Standard output and standard error that never panic. `println!` panics when stdout is a
//! closed pipe (`ioscope show R.db | head`) or a full disk (`> /dev/full`), and so does
//! `eprintln!` on stderr; with `panic = "abort"` that would end a run.
//!
//! - A broken pipe means the reader has seen enough: the rest of the output is dropped
//!   quietly and the exit code is not changed (like `git log | head`).
//! - Any other failure (ENOSPC, EIO) is reported once on stderr and turns a successful
//!   exit code into 1 ([`failed`]).
//! - Failures to write to stderr are ignored: there is nowhere left to report them.

use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Stdout was closed by its reader: drop the rest quietly.
static CLOSED: AtomicBool = AtomicBool::new(false);
/// Writing to stdout failed for another reason (reported once).
static FAILED: AtomicBool = AtomicBool::new(false);

/// Writes `text` to stdout; see the module docs for what happens on failure.
pub fn print(text: &str) {
    if CLOSED.load(Ordering::Relaxed) || FAILED.load(Ordering::Relaxed) {
        return;
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::BrokenPipe => CLOSED.store(true, Ordering::Relaxed),
        Err(e) => {
            FAILED.store(true, Ordering::Relaxed);
            let _ = writeln!(std::io::stderr(), "error: writing to standard output: {e}");
        }
    }
}

/// Writes `text` and a newline to stdout.
pub fn println(text: &str) {
    print(&format!("{text}\n"));
}

/// Whether some output was lost for a reason other than a closed pipe.
pub fn failed() -> bool {
    FAILED.load(Ordering::Relaxed)
}
