//! The journal (`run --verify --journal FILE`, `ioscope verify --journal FILE`) on real
//! crashes: ioscope killed with SIGKILL mid-run, nfs-ganesha killed and restarted during a
//! write run (with O_DSYNC writes, and with UNSTABLE writes each followed by a COMMIT), and
//! a negative control that proves the check can fail: a durable block put back to an
//! older copy of itself, or zeroed, behind ioscope's back.
//!
//! The nfs tests kill the nfs-ganesha that scripts/test.sh started (run them alone).

mod common;
mod skip;

use common::run::{ioscope, s};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `ioscope verify --journal J --json` (and `extra`): its exit code and report.
fn verify(journal: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let out = ioscope().args(["verify", "--journal", s(journal), "--json"]).args(extra).output().unwrap();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON report ({e}): {}\n{}", String::from_utf8_lossy(&out.stdout), stderr(&out)));
    (out.status.code(), report)
}

fn failed_total(report: &Value) -> u64 {
    report["failed"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum()
}

/// Waits until the journal has at least `blocks` blocks with an acknowledged write.
fn wait_for_writes(journal: &Path, blocks: usize, child: &mut Child) {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(c) = ioscope_verify::journal::read(journal) {
            let written = (0..c.description.files.len() as u32)
                .flat_map(|f| (0..c.blocks_of(f)).map(move |b| (f, b)))
                .filter(|&(f, b)| c.floors(f, b).is_some_and(|(floor, _)| floor > 0))
                .take(blocks)
                .count();
            if written >= blocks {
                return;
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the run ended ({status}) before {blocks} blocks were written");
        }
        assert!(Instant::now() < until, "no {blocks} journaled writes within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One block of a journal: (file index, path, block, floor, durable).
type Block = (u32, String, u64, u64, u64);

/// Every block of the journal with its floors, and the block length.
fn journaled(journal: &Path) -> (u32, Vec<Block>) {
    let c = ioscope_verify::journal::read(journal).unwrap();
    let mut all = Vec::new();
    for (i, f) in c.description.files.iter().enumerate() {
        for b in 0..c.blocks_of(i as u32) {
            let (floor, durable) = c.floors(i as u32, b).unwrap();
            all.push((i as u32, f.path.clone(), b, floor, durable));
        }
    }
    (c.description.block_len, all)
}

#[test]
fn a_journal_needs_verify_and_an_existing_file_is_refused_before_any_io() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, journal) = (tmp.path().join("data"), tmp.path().join("j"));
    let run = |extra: &[&str]| {
        ioscope()
            .args(["run", "--dir", s(&dir), "--size", "1m", "--rw", "randwrite", "--duration", "1s", "--quiet"])
            .args(["--out", s(&tmp.path().join("r.db"))])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&["--journal", s(&journal)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--journal needs --verify"), "{}", stderr(&out));
    std::fs::write(&journal, "mine").unwrap();
    let out = run(&["--verify", "--journal", s(&journal)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not an ioscope journal"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), "mine");
    let out = ioscope().args(["verify", "--journal", s(&journal)]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "a file that is not a journal: {}", stderr(&out));
    let out = run(&["--verify", "--journal", s(&tmp.path().join("j2")), "--hosts", "h1,h2"]);
    assert_eq!(out.status.code(), Some(2), "verification and its journal are per host: {}", stderr(&out));
    assert!(!dir.exists(), "the working set was written before the refusal");
    // Beside the target: allowed, with a warning; then a second run over it is refused.
    let (j2, results2) = (tmp.path().join("j2"), tmp.path().join("r2.db"));
    let out = ioscope()
        .args(["run", "--dir", s(&dir), "--size", "1m", "--rw", "randwrite", "--duration", "1s", "--quiet"])
        .args(["--verify", "--journal", s(&j2), "--out", s(&results2)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("same file system as the target"), "{}", stderr(&out));
    let out = run(&["--verify", "--journal", s(&j2)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("the journal of another run"), "{}", stderr(&out));
}

#[test]
fn ioscope_killed_mid_run_leaves_a_journal_that_verifies_and_a_readable_results_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, journal, results) = (tmp.path().join("data"), tmp.path().join("j"), tmp.path().join("r.db"));
    let mut child = ioscope()
        .args(["run", "--dir", s(&dir), "--size", "4m", "--bs", "4k", "--rw", "randwrite", "--threads", "2"])
        .args(["--verify", "--journal", s(&journal), "--duration", "60s", "--quiet", "--out", s(&results)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_writes(&journal, 200, &mut child);
    std::thread::sleep(Duration::from_millis(1500)); // a second of results stored too
    child.kill().unwrap(); // SIGKILL: no code of ours runs
    child.wait().unwrap();
    let (code, report) = verify(&journal, &["--strict"]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["closed"], false, "a killed run cannot close its journal");
    assert!(report["blocks_checked"].as_u64().unwrap() >= 200, "{report:#}");
    assert_eq!(report["intact"], report["blocks_checked"], "no crash of the host: every acknowledged write is there");
    let shown = ioscope().args(["show", s(&results), "--json"]).output().unwrap();
    assert!(shown.status.success(), "{}", stderr(&shown));
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["status"], "interrupted");
    assert!(shown["ops"]["write"]["iops"].as_f64().unwrap() > 0.0, "{shown:#}");
}

/// Runs a posix write run with O_DSYNC writes (every acknowledged write durable) and
/// its journal; returns the journal.
fn dsync_run(dir: &Path, journal: &Path, results: &Path) {
    let out = ioscope()
        .args(["run", "--dir", s(dir), "--size", "256k", "--bs", "4k", "--rw", "randwrite", "--sync", "dsync"])
        .args(["--verify", "--journal", s(journal), "--duration", "2s", "--quiet", "--out", s(results)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_durable_block_put_back_to_an_older_copy_or_zeroed_fails_the_check_naming_it() {
    use std::os::unix::fs::FileExt as _;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    // A first run writes every block; the test keeps a copy of the file as it was.
    dsync_run(&dir, &tmp.path().join("j0"), &tmp.path().join("r0.db"));
    let journal = tmp.path().join("j");
    let (_, first) = journaled(&tmp.path().join("j0"));
    let path = PathBuf::from(&first[0].1);
    let older = std::fs::read(&path).unwrap();
    dsync_run(&dir, &journal, &tmp.path().join("r.db"));
    let (code, report) = verify(&journal, &[]);
    assert_eq!((code, failed_total(&report)), (Some(0), 0), "a clean run passes: {report:#}");
    let (len, blocks) = journaled(&journal);
    let len = len as usize;
    // Two durable blocks of file 0 that the first run had written too.
    let mut durable = blocks.iter().filter(|b| b.0 == 0 && b.4 > 0).filter(|b| {
        let at = b.2 as usize * len;
        older.get(at..at + 8) == Some(b"IOSCOPEV")
    });
    let (stale, zeroed) = (durable.next().expect("a durable block"), durable.next().expect("two durable blocks"));
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let at = stale.2 as usize * len;
    f.write_all_at(&older[at..at + len], at as u64).unwrap();
    f.write_all_at(&vec![0u8; len], zeroed.2 * len as u64).unwrap();
    drop(f);
    let (code, report) = verify(&journal, &[]);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!((report["failed"]["stale"].as_u64(), report["failed"]["zeroed"].as_u64()), (Some(1), Some(1)));
    let found = |offset: u64| {
        report["mismatches"].as_array().unwrap().iter().find(|m| m["offset"] == offset).cloned().unwrap_or_default()
    };
    let s_ = found(stale.2 * len as u64);
    assert_eq!((s_["kind"].as_str(), s_["allowed"].as_bool()), (Some("stale"), Some(false)), "{report:#}");
    assert_eq!(s_["path"], stale.1.as_str());
    assert_eq!(s_["found"]["offset"], stale.2 * len as u64, "the older copy of the same block");
    let z = found(zeroed.2 * len as u64);
    assert_eq!((z["kind"].as_str(), z["found"].is_null()), (Some("zeroed"), true), "{report:#}");
    // The text names the block and the kind too.
    let text = ioscope().args(["verify", "--journal", s(&journal)]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("offset {}: stale", stale.2 * len as u64)), "{text}");
    assert!(text.contains(&format!("offset {}: zeroed", zeroed.2 * len as u64)), "{text}");
    // The file gone: every block of it is missing.
    std::fs::remove_file(&path).unwrap();
    let (code, report) = verify(&journal, &[]);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["failed"]["truncated"], report["blocks_durable"], "{report:#}");
    assert_eq!(report["intact"], 0);
}

// ---- nfs-ganesha killed and restarted during a write run ----

fn nfs_url() -> Option<String> {
    match std::env::var("IOSCOPE_NFS_URL") {
        Ok(url) => Some(url),
        Err(_) => {
            skip::skip("needs nfs-ganesha: scripts/test.sh starts one and sets IOSCOPE_NFS_URL");
            None
        }
    }
}

fn ganesha(cmd: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/nfs-ganesha.sh");
    let out = Command::new(&script).arg(cmd).output().unwrap();
    assert!(out.status.success(), "nfs-ganesha.sh {cmd}: {}", stderr(&out));
}

/// A write run on nfs with `sync`, ganesha SIGKILLed once `writes` blocks are journaled and
/// then restarted; returns `ioscope verify`'s report.
fn server_crash(sync: &str, sub: &str) -> Option<(Option<i32>, Value)> {
    let url = nfs_url()?;
    let tmp = tempfile::tempdir().unwrap();
    let (journal, results) = (tmp.path().join("j"), tmp.path().join("r.db"));
    let target = format!("{url}/{sub}-{}?timeout=3", std::process::id());
    let mut child = ioscope()
        .args(["run", "--engine", "nfs", "--target", &target, "--size", "4m", "--bs", "4k", "--rw", "randwrite"])
        .args(["--iodepth", "4", "--sync", sync, "--verify", "--journal", s(&journal), "--duration", "60s"])
        .args(["--quiet", "--out", s(&results)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_writes(&journal, 100, &mut child);
    ganesha("kill-server");
    let out = child.wait_with_output().unwrap();
    ganesha("restart-server");
    assert_eq!(out.status.code(), Some(1), "the server went out of reach: {}", stderr(&out));
    let report = verify(&journal, &[]);
    let shown = ioscope().args(["show", s(&results), "--json"]).output().unwrap();
    assert!(shown.status.success(), "the results file is readable: {}", stderr(&shown));
    Some(report)
}

#[test]
#[ignore = "kills and restarts the nfs-ganesha that scripts/test.sh started (run alone)"]
fn ganesha_killed_and_restarted_mid_run_with_dsync_keeps_every_durable_write() {
    let Some((code, report)) = server_crash("dsync", "jdsync") else { return };
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(failed_total(&report), 0, "{report:#}");
    assert!(report["blocks_checked"].as_u64().unwrap() >= 100, "{report:#}");
    assert_eq!(report["blocks_durable"], report["blocks_checked"], "every O_DSYNC write is durable: {report:#}");
}

#[test]
#[ignore = "kills and restarts the nfs-ganesha that scripts/test.sh started (run alone)"]
fn ganesha_killed_and_restarted_mid_run_with_unstable_writes_and_commits_keeps_every_committed_write() {
    let Some((code, report)) = server_crash("fsync", "jcommit") else { return };
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(failed_total(&report), 0, "{report:#}");
    // Writes acknowledged UNSTABLE whose COMMIT never came may be gone: allowed, counted.
    let checked = report["blocks_checked"].as_u64().unwrap();
    assert!(report["blocks_durable"].as_u64().unwrap() > 0, "COMMITs made writes durable: {report:#}");
    assert_eq!(report["intact"].as_u64().unwrap() + report["not_durable_missing"].as_u64().unwrap(), checked);
}

#[test]
#[ignore = "kills and restarts the nfs-ganesha that scripts/test.sh started (run alone)"]
fn a_server_restart_between_unstable_writes_and_their_commit_changes_the_write_verifier() {
    use ioscope_engine_nfs::client::{mount, Session};
    use ioscope_engine_nfs::proto::{Stable, UNSTABLE};
    use ioscope_engine_nfs::target::Target;
    let Some(url) = nfs_url() else { return };
    let t = Target::parse(&format!("{url}?timeout=5")).unwrap();
    let name = format!("verf-{}", std::process::id());
    let (before, same) = {
        let m = mount(&t).unwrap();
        let mut s = Session::connect(&t, &m).unwrap();
        let f = s.create(&m.dir, &name, 0o644).unwrap();
        let (n, how, verf) = s.write_reply(&f, 0, Stable::Unstable, &[7u8; 4096]).unwrap();
        assert_eq!((n, how), (4096, UNSTABLE), "the server kept the write UNSTABLE");
        (verf, s.commit_verifier(&f).unwrap())
    };
    assert_eq!(before, same, "without a restart the COMMIT carries the writes' verifier");
    ganesha("kill-server");
    ganesha("restart-server");
    let m = mount(&t).unwrap();
    let mut s = Session::connect(&t, &m).unwrap();
    let (f, _) = s.lookup(&m.dir, &name).unwrap();
    let after = s.commit_verifier(&f).unwrap();
    // The engine compares these (crates/engine-nfs/src/engine.rs, Window): a COMMIT whose
    // verifier differs fails with "NFS write verifier changed: uncommitted writes lost"
    // and the writes it covers are not counted durable.
    assert_ne!(before, after, "a restarted server must not confirm writes it may have lost");
    s.remove(&m.dir, &name).unwrap();
}
