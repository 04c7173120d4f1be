//! Running the ioscope binary from a test: the command, a run that must succeed, its JSON.

#![allow(dead_code)] // each test file uses its own part of it

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// The binary under test.
pub fn ioscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ioscope"))
}

/// Runs ioscope with `args`; fails the test, with its stderr, unless it exits 0.
pub fn run_ok(args: &[&str]) -> Output {
    let out = ioscope().args(args).output().unwrap();
    assert!(out.status.success(), "ioscope {args:?} failed: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    out
}

/// A command's stdout as JSON; fails the test, showing it, when it is not.
pub fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)))
}

/// A path as an argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The command's output, or a test failure if it has not ended within `limit` (killed).
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!("{cmd:?} still running after {limit:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}
