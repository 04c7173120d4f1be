//! Faults of the target's file system during a run, made for real on an ext4 file system
//! on a loop device (needs root, losetup and mkfs.ext4; `scripts/test.sh` runs them, and
//! under `IOSCOPE_TEST_REQUIRE_ALL=1` a test that cannot run fails): the file system fills
//! up (ENOSPC) and it turns read-only (EROFS) in the middle of a write run. Each run must
//! end early, exit 1 (docs/exit-codes.md), say on stderr what happened and where, count
//! its failed I/Os by kind, and keep a complete results file that `ioscope show` reads.
//!
//! No timing thresholds: every wait is for a condition, with a generous limit; a run is
//! planned for far longer than any wait, so "it ended" means the fault ended it.

use serde_json::Value;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod skip;
use skip::skip;

/// What a run is planned for: the fault must end it long before.
const PLANNED_S: f64 = 600.0;
/// The longest any wait of these tests lasts before it fails the test.
const PATIENCE: Duration = Duration::from_secs(120);

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// An ext4 file system on a loop device over an image in a temporary directory, mounted
/// until dropped. Drop unmounts it and detaches the device even when the test failed
/// (lazily, if something still holds it).
struct LoopExt4 {
    mnt: PathBuf,
    dev: String,
    mounted: bool,
}

impl LoopExt4 {
    /// A file system of `size_mib` MiB in `dir` mounted with `options`; Err says why it
    /// cannot be made here.
    fn mount(dir: &Path, size_mib: u64, options: &str) -> Result<LoopExt4, String> {
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root".into());
        }
        let img = dir.join("ext4.img");
        std::fs::File::create(&img).and_then(|f| f.set_len(size_mib << 20)).map_err(|e| format!("{img:?}: {e}"))?;
        let out =
            Command::new("losetup").args(["-f", "--show", s(&img)]).output().map_err(|e| format!("losetup: {e}"))?;
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || dev.is_empty() {
            return Err(format!("losetup: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        let mut fs = LoopExt4 { mnt: dir.join("mnt"), dev, mounted: false };
        std::fs::create_dir_all(&fs.mnt).map_err(|e| e.to_string())?;
        run_tool(Command::new("mkfs.ext4").args(["-q", &fs.dev]))?;
        run_tool(Command::new("mount").args(["-o", options, &fs.dev, s(&fs.mnt)]))?;
        fs.mounted = true;
        Ok(fs)
    }

    /// The device's directory in /sys/fs/ext4 ("loop3").
    fn sysfs(&self) -> PathBuf {
        Path::new("/sys/fs/ext4").join(Path::new(&self.dev).file_name().unwrap())
    }
}

impl Drop for LoopExt4 {
    fn drop(&mut self) {
        let quiet = |c: &mut Command| c.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        if self.mounted && !quiet(Command::new("umount").arg(&self.mnt)) {
            // Still busy (a test failed with a file open): detach it now, freed when let go.
            quiet(Command::new("umount").arg("-l").arg(&self.mnt));
        }
        quiet(Command::new("losetup").args(["-d", &self.dev]));
    }
}

/// Runs a tool that must succeed; Err with its output if it did not.
fn run_tool(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr).trim())),
    }
}

/// A running `ioscope run`, killed if the test ends before it did.
struct Run(Option<Child>);

impl Run {
    fn start(args: &[&str]) -> Run {
        let child = Command::new(env!("CARGO_BIN_EXE_ioscope"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Run(Some(child))
    }

    /// Its output once it has ended; fails the test if it has not ended within [`PATIENCE`].
    fn finish(mut self) -> Output {
        let mut child = self.0.take().unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > PATIENCE {
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!("the run did not end within {PATIENCE:?}: {}", String::from_utf8_lossy(&out.stderr));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().unwrap()
    }

    /// Stops every thread of the run (SIGSTOP) and waits until each one is stopped: an
    /// I/O a thread was in has returned by then, and no new one starts until [`Run::resume`].
    fn pause(&mut self) {
        let pid = self.0.as_ref().unwrap().id() as i32;
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
        let tasks = PathBuf::from(format!("/proc/{pid}/task"));
        let all_stopped = || {
            std::fs::read_dir(&tasks).unwrap().all(|t| {
                let stat = std::fs::read_to_string(t.unwrap().path().join("stat")).unwrap_or_default();
                // "pid (comm) STATE ...": the state follows the last ')'.
                stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with(['T', 't']))
            })
        };
        let started = Instant::now();
        while !all_stopped() {
            assert!(started.elapsed() < PATIENCE, "the run's threads did not stop within {PATIENCE:?}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn resume(&mut self) {
        assert_eq!(unsafe { libc::kill(self.0.as_ref().unwrap().id() as i32, libc::SIGCONT) }, 0);
    }

    fn running(&mut self) -> bool {
        self.0.as_mut().is_some_and(|c| c.try_wait().unwrap().is_none())
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Waits until `cond` holds while the run goes on; fails the test if the run ended first
/// or [`PATIENCE`] passed.
fn wait_for(run: &mut Run, what: &str, mut cond: impl FnMut() -> bool) {
    let started = Instant::now();
    while !cond() {
        assert!(run.running(), "the run ended before {what}");
        assert!(started.elapsed() < PATIENCE, "no {what} within {PATIENCE:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn mtime_ns(p: &Path) -> Option<i128> {
    let t = std::fs::metadata(p).ok()?.modified().ok()?;
    Some(t.duration_since(std::time::UNIX_EPOCH).ok()?.as_nanos() as i128)
}

/// Waits until the run has begun and is writing into `file`: the results file exists and
/// the file's modification time moves after that (a write of the measured run, not of
/// the preparation, which is over once the results file is created).
fn wait_until_writing(run: &mut Run, results: &Path, file: &Path) {
    wait_for(run, "the results file", || results.exists());
    let before = mtime_ns(file);
    wait_for(run, "a measured write", || mtime_ns(file) > before);
}

/// Allocates every free block of the file system `in_dir` is on, those kept for root
/// too, to a new file `name` there (fallocate: instant, and every block taken), as
/// another program filling the disk would.
fn take_all_space(in_dir: &Path, name: &str) {
    let f = std::fs::File::create(in_dir.join(name)).unwrap();
    let mut at = 0i64;
    loop {
        let free = free_bytes(in_dir) as i64 & !4095;
        let mut len = free;
        while len >= 4096 && unsafe { libc::fallocate(f.as_raw_fd(), 0, at, len) } != 0 {
            len = (len / 2) & !4095; // what is free is not always one piece
        }
        if len < 4096 {
            return;
        }
        at += len;
    }
}

fn free_bytes(dir: &Path) -> u64 {
    let path = std::ffi::CString::new(s(dir)).unwrap();
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(path.as_ptr(), &mut st) }, 0);
    // f_bfree, not f_bavail: ioscope runs as root here and may use the blocks ext4 keeps
    // for root (5%), so the filler (root too) takes those as well.
    st.f_bfree as u64 * st.f_frsize as u64
}

/// Gives the blocks of `file` back to the file system (a hole over all of it; its size
/// stays): writing into it needs new blocks from then on.
fn punch_out(file: &Path) {
    let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    let len = f.metadata().unwrap().len() as i64;
    let mode = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    assert_eq!(unsafe { libc::fallocate(f.as_raw_fd(), mode, 0, len) }, 0, "{}", std::io::Error::last_os_error());
}

fn json_of(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(bytes)))
}

fn schema_check(summary: &Value) {
    let schema: Value = serde_json::from_str(include_str!("../schema/summary.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(summary).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "summary does not match schema: {errors:#?}");
}

/// What every faulted run must show: exit 1 and the reason on stderr, naming `says` (the
/// kind and where), where the results are and the first failed write with its file; a
/// failed status ended long before the planned time, the failed writes counted under
/// `kind` and matching the error total; and a results file that `ioscope show` reads
/// whole: the same status, seconds and counts. Returns the summary.
fn assert_ended_and_kept(done: &Output, results: &Path, kind: &str, says: &str, file: &Path) -> Value {
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "exit 1: the run failed (docs/exit-codes.md); stderr: {stderr}");
    assert!(stderr.contains(&format!("error: the run failed: {says}")), "{stderr}");
    assert!(stderr.contains(&format!("kept in {}", results.display())), "{stderr}");
    let first = format!("first write: {kind}: ");
    assert!(stderr.contains(&first) && stderr.contains(&format!("in {} at offset ", file.display())), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let summary = json_of(&done.stdout);
    schema_check(&summary);
    assert_eq!(summary["status"], "failed", "{summary}");
    assert!(summary["status_detail"].as_str().unwrap().starts_with(says), "{}", summary["status_detail"]);
    let duration = summary["duration_s"].as_f64().unwrap();
    assert!(duration < PLANNED_S, "the fault ended the run: {duration} s of {PLANNED_S}");
    let write = &summary["ops"]["write"];
    let by_kind = write["errors_by_kind"].as_object().unwrap();
    assert!(by_kind[kind].as_u64().unwrap() > 0, "{write}");
    let counted: u64 = by_kind.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(write["errors"].as_u64(), Some(counted), "every failed write has its kind: {write}");
    assert!(write["ops"].as_u64().unwrap() > 0, "writes succeeded before the fault, mid-run: {write}");

    let shown = Command::new(env!("CARGO_BIN_EXE_ioscope")).args(["show", s(results), "--json"]).output().unwrap();
    assert!(shown.status.success(), "{}", String::from_utf8_lossy(&shown.stderr));
    let shown = json_of(&shown.stdout);
    for key in ["status", "status_detail", "samples", "ops", "total", "duration_s"] {
        assert_eq!(shown[key], summary[key], "show and run disagree on {key}");
    }
    assert!(!shown["samples"].as_array().unwrap().is_empty());
    summary
}

/// A flat working set that fits when prepared, written with O_DIRECT (so each write
/// needs its blocks now; with page-cache writes ext4 reserves them at write(), other file
/// systems may fail only at writeback): once the run writes, another program takes every
/// free block, the working set's blocks are given back (a hole over the file, as a thin
/// file or a trim would leave it) and taken too, so every write into the hole fails with
/// ENOSPC. Some writes, into blocks the run took back in between, still succeed: the
/// default max_errors (1%) ends the run.
#[test]
fn a_file_system_filling_up_mid_run_ends_the_run_naming_enospc_and_the_file_system_with_results_kept() {
    for engine in [&["--engine", "posix", "--direct"][..], &["--engine", "uring", "--direct", "--iodepth", "8"]] {
        let tmp = tempfile::tempdir().unwrap();
        let fs = match LoopExt4::mount(tmp.path(), 64, "errors=continue") {
            Ok(fs) => fs,
            Err(why) => return skip(&format!("cannot make and mount an ext4 loop device here: {why}")),
        };
        let dir = fs.mnt.join("data");
        let results = tmp.path().join("r.db"); // beside the loop file system, not on it
        let planned = format!("{PLANNED_S}s");
        let mut args = vec!["run", "--rw", "randwrite", "--size", "16m", "--duration", &planned, "--dir", s(&dir)];
        args.extend(engine);
        args.extend(["--out", s(&results), "--json", "--quiet"]);
        let mut run = Run::start(&args);
        let file = dir.join("ioscope.0.dat");
        wait_until_writing(&mut run, &results, &file);
        take_all_space(&fs.mnt, "filler.1");
        punch_out(&file);
        take_all_space(&fs.mnt, "filler.2");
        let done = run.finish();
        let says = format!("no space left on the file system of {} (ENOSPC)", dir.display());
        let summary = assert_ended_and_kept(&done, &results, "ENOSPC", &says, &file);
        let detail = summary["status_detail"].as_str().unwrap();
        assert!(detail.contains("write ENOSPC"), "{engine:?}: {detail}");
    }
}

/// The rule for a file system that refuses every write, on a full one: a mixed run whose
/// max_errors (90%) the failures (the writes, about half of the I/Os) never pass, and whose
/// reads keep succeeding, so neither the share nor the dead-device rule would ever end
/// it. The run is stopped (SIGSTOP) while its working set's blocks are given back and
/// every free block is taken, so that no write of it can take a block back in between:
/// from its resumption on, every write fails with ENOSPC (O_DIRECT, posix: each write
/// needs its block at once). The run must end within a second or two, not run for its
/// planned ten minutes.
#[test]
fn every_write_refused_by_a_full_file_system_ends_the_run_even_below_max_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = match LoopExt4::mount(tmp.path(), 64, "errors=continue") {
        Ok(fs) => fs,
        Err(why) => return skip(&format!("cannot make and mount an ext4 loop device here: {why}")),
    };
    let dir = fs.mnt.join("data");
    let results = tmp.path().join("r.db");
    let planned = format!("{PLANNED_S}s");
    let mut run = Run::start(&[
        "run",
        "--rw",
        "randrw",
        "--direct",
        "--size",
        "16m",
        "--duration",
        &planned,
        "--max-errors",
        "90%",
        "--dir",
        s(&dir),
        "--out",
        s(&results),
        "--json",
        "--quiet",
    ]);
    let file = dir.join("ioscope.0.dat");
    wait_until_writing(&mut run, &results, &file);
    run.pause();
    take_all_space(&fs.mnt, "filler.1");
    punch_out(&file);
    take_all_space(&fs.mnt, "filler.2");
    run.resume();
    let done = run.finish();
    let says = format!("no space left on the file system of {} (ENOSPC): in second ", dir.display());
    let summary = assert_ended_and_kept(&done, &results, "ENOSPC", &says, &file);
    let detail = summary["status_detail"].as_str().unwrap();
    assert!(detail.contains("every write failed so") && detail.contains("free space there"), "{detail}");
    let read = &summary["ops"]["read"];
    assert!(read["ops"].as_u64().unwrap() > 0 && read["errors"].as_u64() == Some(0), "{read}");
}

/// The kernel will not remount a file system read-only while files on it are open for
/// writing (`mount -o remount,ro` fails with EBUSY, "mount point is busy", on Linux 6.18),
/// which a running write load always has. What does turn it read-only under a running
/// load is what happens in the field: an error on an ext4 mounted `errors=remount-ro`.
/// The test tries the remount first and, refused, raises an ext4 error through
/// /sys/fs/ext4/DEV/trigger_fs_error: the journal is aborted, the file system is marked
/// `emergency_ro`, and from then on every write fails with EROFS while reads go on.
///
/// Page-cache writes with posix (ext4 checks at write() entry, so EROFS reaches the write
/// itself) and O_DIRECT with uring, mixed with reads that keep succeeding, and a
/// max_errors of 90% that the share of failures (the writes, about half) never passes:
/// what ends the run is the rule for a file system that refuses every write for a whole
/// second.
#[test]
fn a_file_system_turning_read_only_mid_run_ends_the_run_naming_erofs_with_results_kept() {
    for engine in [&["--engine", "posix"][..], &["--engine", "uring", "--direct", "--iodepth", "8"]] {
        let tmp = tempfile::tempdir().unwrap();
        let fs = match LoopExt4::mount(tmp.path(), 64, "errors=remount-ro") {
            Ok(fs) => fs,
            Err(why) => return skip(&format!("cannot make and mount an ext4 loop device here: {why}")),
        };
        let trigger = fs.sysfs().join("trigger_fs_error");
        if !trigger.exists() {
            return skip(&format!("{} is missing (ext4 without its error trigger)", trigger.display()));
        }
        let dir = fs.mnt.join("data");
        let results = tmp.path().join("r.db");
        let planned = format!("{PLANNED_S}s");
        let mut args = vec!["run", "--rw", "randrw", "--size", "16m", "--duration", &planned, "--max-errors", "90%"];
        args.extend(engine);
        args.extend(["--dir", s(&dir), "--out", s(&results), "--json", "--quiet"]);
        let mut run = Run::start(&args);
        let file = dir.join("ioscope.0.dat");
        wait_until_writing(&mut run, &results, &file);
        let remount = Command::new("mount").args(["-o", "remount,ro", s(&fs.mnt)]).output().unwrap();
        if !remount.status.success() {
            std::fs::write(&trigger, "ioscope fault test: read-only mid-run\n").unwrap();
        }
        let done = run.finish();
        let says = format!("the file system of {} is read-only (EROFS)", dir.display());
        let summary = assert_ended_and_kept(&done, &results, "EROFS", &says, &file);
        let detail = summary["status_detail"].as_str().unwrap();
        assert!(detail.contains("every write failed so") && detail.contains("dmesg"), "{engine:?}: {detail}");
        // Reads went on succeeding: only the writes were refused.
        let read = &summary["ops"]["read"];
        assert!(read["ops"].as_u64().unwrap() > 0 && read["errors"].as_u64() == Some(0), "{engine:?}: {read}");
    }
}
