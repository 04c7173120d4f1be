//! Steady state per step (docs/steady-state.md) on real runs: a run throttled half way
//! falls out of steady state at the second it was throttled, `warmup = "auto"` leaves the
//! seconds before steady state out of every view, `until_steady` ends a steady run early.
//!
//! The throttle is a CPU cgroup made by the test (cgroup v2 `cpu.max`, or v1
//! `cpu.cfs_quota_us`) that the ioscope process is moved into as it starts: 10% of one
//! CPU for the null engine, which is CPU-bound. The group also has the largest CPU weight,
//! so that other work on a shared machine does not swing the run's throughput while it is
//! not throttled (the clean runs must be steady); the runs that must be steady are also held
//! at 2M IOPS, a third of what the engine does on one CPU. Without cgroups (not root) those
//! tests skip.

mod skip;
use skip::skip;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// One measured run at a time: runs beside each other on the same CPUs disturb each other's
/// steadiness, which is what these tests look at.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// The window the tests run with: short, so that runs stay short.
const WINDOW: &str = "5s";

fn ioscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ioscope")).args(args).output().unwrap()
}

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ioscope"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn summary(db: &Path) -> Value {
    let out = ioscope(&["show", db.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn text(db: &Path) -> String {
    String::from_utf8_lossy(&ioscope(&["show", db.to_str().unwrap()]).stdout).into_owned()
}

/// The last second stored so far (-1 before the first); the file may be live.
fn last_second(db: &Path) -> i64 {
    let Ok(c) = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else {
        return -1;
    };
    c.query_row("SELECT COALESCE(MAX(second), -1) FROM tick", [], |r| r.get(0)).unwrap_or(-1)
}

/// Waits until second `n` is stored (or the limit passes).
fn wait_for_second(db: &Path, n: i64) {
    let start = Instant::now();
    while last_second(db) < n && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A CPU cgroup of the test's own, removed when dropped.
struct Throttle {
    dir: PathBuf,
    v2: bool,
}

impl Throttle {
    /// A cgroup with the largest CPU weight and no limit yet; the reason where cgroups
    /// cannot be made.
    fn new() -> Result<Throttle, String> {
        let name = format!("ioscope-steady-test-{}-{}", std::process::id(), fastrand::u32(..));
        let v2_root = Path::new("/sys/fs/cgroup");
        let v2 = std::fs::read_to_string(v2_root.join("cgroup.controllers")).is_ok_and(|c| c.contains("cpu"));
        let t = if v2 {
            // The cpu controller must be enabled for the children of the root.
            let _ = std::fs::write(v2_root.join("cgroup.subtree_control"), "+cpu");
            Throttle { dir: v2_root.join(name), v2: true }
        } else {
            Throttle { dir: Path::new("/sys/fs/cgroup/cpu").join(name), v2: false }
        };
        std::fs::create_dir(&t.dir).map_err(|e| format!("cannot make a cgroup at {}: {e}", t.dir.display()))?;
        if !t.v2 {
            // The collector runs at SCHED_FIFO: a v1 group without real-time time refuses it.
            let _ = std::fs::write(t.dir.join("cpu.rt_runtime_us"), "50000");
        }
        let (file, weight) = if t.v2 { ("cpu.weight", "10000") } else { ("cpu.shares", "262144") };
        std::fs::write(t.dir.join(file), weight).map_err(|e| format!("cannot write {file}: {e}"))?;
        t.limit(false)?;
        Ok(t)
    }

    /// On: 10% of one CPU; off: no limit.
    fn limit(&self, on: bool) -> Result<(), String> {
        let (file, value) = match (self.v2, on) {
            (true, true) => ("cpu.max", "10000 100000"),
            (true, false) => ("cpu.max", "max 100000"),
            (false, true) => ("cpu.cfs_quota_us", "10000"),
            (false, false) => ("cpu.cfs_quota_us", "-1"),
        };
        std::fs::write(self.dir.join(file), value).map_err(|e| format!("cannot write {file}: {e}"))
    }

    /// Moves the process (all its threads) into the group.
    fn take(&self, pid: u32) -> Result<(), String> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
            .map_err(|e| format!("cannot move pid {pid} into {}: {e}", self.dir.display()))
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        // Empty once the process has ended.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn throttle_or_skip() -> Option<Throttle> {
    match Throttle::new() {
        Ok(t) => Some(t),
        Err(why) => {
            skip(&format!("throttling ioscope needs a CPU cgroup (root): {why}"));
            None
        }
    }
}

fn verdicts<'a>(s: &'a Value, id: &str) -> Vec<&'a Value> {
    s["verdicts"].as_array().unwrap().iter().filter(|v| v["id"] == id).collect()
}

fn finish(child: Child) -> Output {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn a_run_throttled_half_way_falls_out_of_steady_state_at_the_second_named_and_the_same_run_unthrottled_does_not() {
    let _alone = alone();
    let Some(throttle) = throttle_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let run = |db: &Path| {
        spawn(&[
            "run",
            "--engine",
            "null",
            "--duration",
            "16s",
            // Held at a third of what the null engine does on one CPU, so that other work on
            // a shared machine does not swing the unthrottled seconds; the throttle's 10% of
            // a CPU is far below it.
            "--rate-iops",
            "2000000",
            "--steady-window",
            WINDOW,
            "--quiet",
            "--out",
            db.to_str().unwrap(),
        ])
    };

    // Throttled from second 8 on: limited once second 7 is stored.
    let db = dir.path().join("throttled.db");
    let child = run(&db);
    throttle.take(child.id()).unwrap();
    wait_for_second(&db, 7);
    let before = last_second(&db);
    throttle.limit(true).unwrap();
    let after = last_second(&db);
    finish(child);
    let s = summary(&db);
    let fell = verdicts(&s, "fell-out-of-steady-state");
    assert_eq!(fell.len(), 1, "{:#}", s["verdicts"]);
    let v = fell[0];
    // The throttle began in the second after the last one stored when it was set; the
    // second named may be one later (a throttle set late in a second shows in the next).
    let named = v["evidence"]["second"].as_i64().unwrap();
    assert!(
        (before + 1..=after + 2).contains(&named),
        "named {named}, throttled after second {before}..{after}: {v:#}"
    );
    assert!(v["message"].as_str().unwrap().contains(&format!("at second {named} IOPS fell from")), "{v:#}");
    assert!(v["evidence"]["iops_change_pct"].as_f64().unwrap() < -50.0, "{v:#}");
    assert!(v["evidence"]["iops_after"].as_f64() < v["evidence"]["iops_steady"].as_f64(), "{v:#}");
    assert_eq!(s["steady"][0]["fell_out"]["second"].as_i64(), Some(named));
    assert!(text(&db).contains(&format!("fell out at second {named}")), "{}", text(&db));

    // The same run, left alone: steady, and nothing fell.
    let db = dir.path().join("clean.db");
    throttle.limit(false).unwrap();
    let child = run(&db);
    throttle.take(child.id()).unwrap();
    finish(child);
    let s = summary(&db);
    assert!(verdicts(&s, "fell-out-of-steady-state").is_empty(), "{:#}", s["verdicts"]);
    assert!(verdicts(&s, "not-steady").is_empty(), "{:#}", s["verdicts"]);
    assert_eq!(s["steady"][0]["state"], "steady", "{:#}", s["steady"]);
    assert!(text(&db).contains("steady   steady from second"), "{}", text(&db));
}

#[test]
fn warmup_auto_marks_the_seconds_before_steady_state_as_warmup_and_every_view_leaves_them_out() {
    let _alone = alone();
    let Some(throttle) = throttle_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    // Throttled for its first seconds, then free: not steady until a window after that.
    // Held at 2M IOPS (as the other runs that must become steady), far above what the
    // throttle leaves. It ends once steady: up to 60 s leave room for a steady window on
    // a busy machine, at no cost on a quiet one.
    let args = [
        "run",
        "--engine",
        "null",
        "--duration",
        "60s",
        "--rate-iops",
        "2000000",
        "--until-steady",
        WINDOW,
        "--warmup",
        "auto",
    ];
    let mut args = args.to_vec();
    args.extend(["--json", "--out", db.to_str().unwrap()]);
    throttle.limit(true).unwrap();
    let child = spawn(&args);
    throttle.take(child.id()).unwrap();
    wait_for_second(&db, 2);
    throttle.limit(false).unwrap();
    let out = finish(child);
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = summary(&db);
    assert_eq!(printed["steady"], s["steady"], "the run's summary and show agree");
    let st = &s["steady"][0];
    let from = st["steady_from_s"].as_u64().unwrap_or_else(|| panic!("{st:#}"));
    assert!(from >= 3, "steady only after the throttle: {st:#}");
    assert_eq!(st["auto_warmup_s"].as_u64(), Some(from), "{st:#}");
    // The summary's samples, its totals and the SQL view agree on which seconds are warm-up.
    let samples = s["samples"].as_array().unwrap();
    for x in samples {
        assert_eq!(x["warmup"].as_bool(), Some(x["second"].as_u64().unwrap() < from), "{x}");
    }
    let measured_ops: u64 = samples.iter().filter(|x| x["warmup"] == false).map(|x| x["ops"].as_u64().unwrap()).sum();
    assert_eq!(s["total"]["ops"].as_u64(), Some(measured_ops), "the totals leave warm-up out");
    let db_conn = rusqlite::Connection::open(&db).unwrap();
    let sql = |q: &str| -> i64 { db_conn.query_row(q, [], |r| r.get(0)).unwrap() };
    assert_eq!(sql(&format!("SELECT COUNT(*) FROM op_seconds WHERE warmup = 1 AND second >= {from}")), 0);
    assert!(sql(&format!("SELECT COUNT(*) FROM op_seconds WHERE warmup = 1 AND second < {from}")) as u64 >= from);
    assert_eq!(sql(&format!("SELECT COUNT(*) FROM op_seconds WHERE warmup = 0 AND second < {from}")), 0);
    assert_eq!(sql("SELECT warmup_ns FROM step WHERE idx = 0") as u64, from * 1_000_000_000);
    assert!(text(&db).contains(&format!("warmup auto: {from} s before it excluded")), "{}", text(&db));
}

#[test]
fn until_steady_ends_a_steady_null_run_of_60s_planned_in_far_less_and_the_step_row_says_so() {
    let _alone = alone();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    // In the group of the largest CPU weight where there is one (never throttled).
    let favoured = Throttle::new().ok();
    let start = Instant::now();
    let child = spawn(&[
        "run",
        "--engine",
        "null",
        "--duration",
        "60s",
        "--rate-iops",
        "2000000",
        "--until-steady",
        WINDOW,
        "--json",
        "--out",
        db.to_str().unwrap(),
    ]);
    if let Some(group) = &favoured {
        group.take(child.id()).unwrap();
    }
    finish(child);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(40), "took {took:?} of the 60 s planned");
    let s = summary(&db);
    assert_eq!(s["status"], "completed");
    let st = &s["steady"][0];
    assert_eq!((st["state"].as_str(), st["ended_early"].as_bool()), (Some("steady"), Some(true)), "{st:#}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let row_ns: i64 = conn.query_row("SELECT duration_ns FROM step WHERE idx = 0", [], |r| r.get(0)).unwrap();
    let stored_ns: i64 = conn.query_row("SELECT SUM(interval_ns) FROM tick", [], |r| r.get(0)).unwrap();
    assert_eq!(row_ns, stored_ns, "the step row records the real duration");
    assert!(row_ns < 40_000_000_000, "{row_ns}");
    assert!((s["duration_s"].as_f64().unwrap() - row_ns as f64 / 1e9).abs() < 1e-6);
    assert!(text(&db).contains("ended early, steady"), "{}", text(&db));
    assert!(!text(&db).contains("of the planned"), "no note of a shortfall: {}", text(&db));
}

#[test]
fn until_steady_on_a_run_of_several_steps_exits_2_before_any_io() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let out = ioscope(&[
        "run",
        "--engine",
        "null",
        "--set",
        "for_threads=[1, 2]",
        "--until-steady",
        "5s",
        "--out",
        db.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--until-steady") && err.contains("one step"), "{err}");
    assert!(!db.exists());
}
