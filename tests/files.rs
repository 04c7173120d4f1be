//! Files ioscope reads because a user or another file named them (a workload, a fio job
//! file's includes, a vdbench parameter file, a journal and its data files): regular files
//! only, never waited on; and a results file whose writer was killed reads as interrupted.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn ioscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ioscope"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().map(|st| st.success()).unwrap_or(false);
    assert!(ok, "mkfifo {}", path.display());
}

/// Runs `args` with a standard input that stays open and silent (as a terminal would),
/// ending it if it has not finished within 60 s (it should take well under one): a
/// command that waits on a FIFO fails the test instead of hanging it.
fn within_a_minute(args: &[&str]) -> Output {
    let mut child =
        ioscope().args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ioscope {args:?} still waiting after 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Exit 2 with `want` in the message.
fn refused(args: &[&str], want: &str) {
    let out = within_a_minute(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "ioscope {args:?}: {err}");
    assert!(err.contains(want), "ioscope {args:?}: {err}");
}

#[test]
fn a_fifo_named_as_a_workload_include_or_journal_data_file_is_refused_not_waited_on() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo");
    mkfifo(&fifo);
    let fifo = s(&fifo);
    let is_fifo = "not a regular file (a FIFO)";
    refused(&["validate", fifo], is_fifo);
    refused(&["run", fifo, "--duration", "1s"], is_fifo);
    refused(&["import", "vdbench", fifo], is_fifo);
    refused(&["import", "fio", fifo], is_fifo);
    refused(&["verify", "--journal", fifo], is_fifo);
    let data = tmp.path().join("data");
    refused(&["run", "--dir", s(&data), "--size", "64k", "--rw", "randwrite", "--verify", "--journal", fifo], is_fifo);

    // An include of the FIFO, and of standard input (outside the job file's directory).
    let job = tmp.path().join("job.fio");
    std::fs::write(&job, "[global]\nsize=1g\nruntime=5\n[a]\nrw=read\ninclude fifo\n").unwrap();
    refused(&["import", "fio", s(&job)], is_fifo);
    std::fs::write(&job, "[global]\nsize=1g\nruntime=5\n[a]\nrw=read\ninclude /dev/stdin\n").unwrap();
    refused(&["import", "fio", s(&job)], "is outside");

    // A journal whose data file was replaced by a FIFO.
    let journal = tmp.path().join("j");
    let run = ioscope()
        .args(["run", "--dir", s(&data), "--size", "64k", "--rw", "randwrite", "--duration", "1s"])
        .args(["--verify", "--journal", s(&journal), "--out", s(&tmp.path().join("r.db"))])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let c = ioscope_verify::journal::read(&journal).unwrap();
    let file = Path::new(&c.description.files[0].path);
    std::fs::remove_file(file).unwrap();
    mkfifo(file);
    refused(&["verify", "--journal", s(&journal)], "a FIFO");
}

/// The status `show` gives a results file.
fn shown_status(results: &Path) -> String {
    let out = ioscope().args(["show", s(results)]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().nth(2).unwrap_or_default().to_string()
}

fn wait_for_a_second(results: &Path, child: &mut Child) {
    let until = Instant::now() + Duration::from_secs(60);
    while shown_status(results) != "running" {
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        assert!(Instant::now() < until, "no second recorded within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_run_killed_with_sigkill_is_not_shown_as_running() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("X.db");
    let mut child = ioscope()
        .args(["run", "--dir", s(&tmp.path().join("d")), "--size", "1m", "--rw", "randread", "--duration", "60s"])
        .args(["--out", s(&results)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_a_second(&results, &mut child);
    child.kill().unwrap(); // SIGKILL
                           // Not reaped yet: the pid still exists, named ioscope (a zombie), as it does under a
                           // parent that has not waited for it.
    std::thread::sleep(Duration::from_millis(300));
    let status = shown_status(&results);
    child.wait().unwrap();
    assert_eq!(status, "interrupted");
    assert_eq!(shown_status(&results), "interrupted");
}
