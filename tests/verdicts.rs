//! Verdicts built for real: each trap is run with the real binary and must get its verdict
//! with measured evidence, and the same shape without the trap must not. The summary is
//! recomputed by `ioscope show` from the results file alone, so every verdict is checked
//! there too.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The tests of this file run one at a time: a trap that keeps a CPU busy (the null
/// engine's ceiling, page-cache reads) would make another test's open-loop run start its
/// I/Os late, which is a true rate-not-held.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn ioscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ioscope")).args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A directory on a real file system (the build's target directory, not a tmpfs /tmp,
/// which refuses O_DIRECT), removed at the end of the test.
fn disk_dir(name: &str) -> tempfile::TempDir {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&base).unwrap();
    tempfile::Builder::new().prefix(name).tempdir_in(base).unwrap()
}

/// Runs `ioscope run --json` with `args` into `dir/name.db`; returns the summary printed
/// and the one `ioscope show --json` recomputes from the file.
fn run(dir: &Path, name: &str, args: &[&str]) -> (Value, Value) {
    let db = dir.join(format!("{name}.db"));
    let mut all = vec!["run", "--quiet", "--json", "--out", db.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = ioscope(&all);
    assert_eq!(out.status.code(), Some(0), "{all:?}\n{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let shown = ioscope(&["show", "--json", db.to_str().unwrap()]);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    (summary, serde_json::from_slice(&shown.stdout).unwrap())
}

/// The verdict `id` of a summary, if any; it must be the same in the file's summary.
fn verdict(run: &(Value, Value), id: &str) -> Option<Value> {
    let find = |s: &Value| s["verdicts"].as_array().unwrap().iter().find(|v| v["id"] == id).cloned();
    let (printed, shown) = (find(&run.0), find(&run.1));
    assert_eq!(printed.is_some(), shown.is_some(), "{id}: the run and `show` disagree:\n{:#?}", run.0["verdicts"]);
    printed
}

fn ids(s: &Value) -> Vec<String> {
    s["verdicts"].as_array().unwrap().iter().map(|v| v["id"].as_str().unwrap().to_string()).collect()
}

fn num(v: &Value, key: &str) -> f64 {
    v["evidence"][key].as_f64().unwrap_or_else(|| panic!("no number {key} in {v:#}"))
}

#[test]
fn buffered_rereads_of_a_cached_file_are_client_cache_and_direct_reads_of_a_disk_file_are_not() {
    let _one = one_at_a_time();
    let dir = disk_dir("client-cache");
    let d = dir.path().to_str().unwrap();
    let shape = ["--engine", "posix", "--rw", "randread", "--bs", "4k", "--size", "4m", "--duration", "2s", "--dir", d];

    // A 4 MiB file read over and over through the page cache.
    let cached = run(dir.path(), "buffered", &shape);
    let v = verdict(&cached, "client-cache").unwrap_or_else(|| panic!("no client-cache in {:?}", ids(&cached.0)));
    assert_eq!(v["severity"], "warning");
    let (p50, floor, below) = (num(&v, "read_latency_p50_ns"), num(&v, "floor_ns"), num(&v, "reads_below_floor_pct"));
    assert!(p50 < floor && below >= 50.0, "{v:#}");
    assert_eq!(p50, cached.0["ops"]["read"]["latency_ns"]["p50"].as_f64().unwrap(), "the summary's own p50");
    assert!(v["message"].as_str().unwrap().contains("page cache"), "{v:#}");

    // The same reads with O_DIRECT go to the disk every time.
    let mut direct_shape = shape.to_vec();
    direct_shape.push("--direct");
    let direct = run(dir.path(), "direct", &direct_shape);
    assert!(verdict(&direct, "client-cache").is_none(), "{:#?}", direct.0["verdicts"]);
    assert!(verdict(&direct, "working-set-cached").is_none(), "{:#?}", direct.0["verdicts"]);
}

#[test]
fn a_null_run_above_one_threads_ceiling_is_client_bound_and_a_slow_one_is_not() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let shape = ["--engine", "null", "--threads", "1", "--duration", "2s"];

    // A rate no single thread can issue: the worker never waits.
    let mut fast = shape.to_vec();
    fast.extend(["--rate-iops", "100000000"]);
    let fast = run(dir.path(), "fast", &fast);
    let v = verdict(&fast, "client-bound").unwrap_or_else(|| panic!("no client-bound in {:?}", ids(&fast.0)));
    assert!(num(&v, "busiest_thread_busy_pct") >= 90.0, "{v:#}");
    assert_eq!(num(&v, "threads"), 1.0);
    assert!(num(&v, "cpus") >= 1.0, "{v:#}");
    assert_eq!(num(&v, "asked_iops"), 1e8);
    assert!(num(&v, "achieved_iops") < 1e8, "{v:#}");
    assert!(v["message"].as_str().unwrap().contains("was not reached"), "{v:#}");

    // 200 I/Os a second: the worker sleeps between them.
    let mut slow = shape.to_vec();
    slow.extend(["--rate-iops", "200"]);
    let slow = run(dir.path(), "slow", &slow);
    assert!(verdict(&slow, "client-bound").is_none(), "{:#?}", slow.0["verdicts"]);
}

#[test]
fn a_500_iops_fsync_run_that_falls_behind_is_rate_not_held_with_how_late() {
    let _one = one_at_a_time();
    let dir = disk_dir("rate");
    let d = dir.path().to_str().unwrap();
    let shape =
        ["--engine", "posix", "--rw", "randwrite", "--bs", "4k", "--size", "4m", "--duration", "3s", "--dir", d];

    // The same writes without the syncs, at a rate the disk absorbs (and whose 20 ms
    // between I/Os leave room for a busy machine's late wake-ups): on schedule. First, so
    // that no writeback of the synced run is still going on.
    let mut plain = shape.to_vec();
    plain.extend(["--rate-iops", "50"]);
    let plain = run(dir.path(), "plain", &plain);
    assert!(verdict(&plain, "rate-not-held").is_none(), "{:#?}", plain.0["verdicts"]);

    // Every write is followed by an fsync: at 500 a second, one slow sync holds up the
    // writes due behind it.
    let mut synced = shape.to_vec();
    synced.extend(["--rate-iops", "500", "--sync", "fsync"]);
    let synced = run(dir.path(), "fsync", &synced);
    let sync_p99 = synced.0["ops"]["fsync"]["service_time_ns"]["p99"].as_f64().unwrap();
    let write = &synced.0["ops"]["write"];
    let late_p99 = write["latency_ns"]["p99"].as_f64().unwrap() - write["service_time_ns"]["p99"].as_f64().unwrap();
    // The trap: writes started later than the 2 ms between two intended starts, held up by
    // the syncs before them. A disk that syncs fast enough (or slow syncs too rare to reach
    // the p99 of the writes' lateness) keeps the schedule: nothing to say.
    if late_p99 < 2e6 {
        eprintln!(
            "skipped: fsync p99 {sync_p99} ns held the writes up by only {late_p99} ns at p99, within 500 IOPS' 2 ms"
        );
        return;
    }
    let v = verdict(&synced, "rate-not-held").unwrap_or_else(|| panic!("no rate-not-held in {:#?}", synced.0));
    let late = num(&v, "write_start_delay_p99_ns");
    assert!(late >= num(&v, "schedule_interval_per_worker_ns"), "{v:#}");
    assert_eq!(
        num(&v, "write_latency_p99_ns") - num(&v, "write_service_time_p99_ns"),
        late,
        "lateness is response minus service time: {v:#}"
    );
    assert_eq!(num(&v, "asked_iops"), 500.0);
    let message = v["message"].as_str().unwrap();
    assert!(message.contains("fell behind") || message.contains("was not reached"), "{message}");

    // The text summary lists the verdicts, severity first.
    let shown = ioscope(&["show", dir.path().join("fsync.db").to_str().unwrap()]);
    let shown = text(&shown.stdout);
    assert!(shown.contains("verdicts (evidence: ioscope show --json)\n"), "{shown}");
    assert!(shown.lines().any(|l| l.starts_with("  warning  ") && l.ends_with("[rate-not-held]")), "{shown}");
}
