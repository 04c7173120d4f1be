use super::*;
use ioscope_metrics::{
    Counts, FileCounts, FileDists, Histogram, OpInterval, OpSeries, WorkerCounts, WorkerDists, OTHER,
};
use std::process::Command;

pub(crate) fn run_info(pid: u32, host: &str) -> RunInfo {
    RunInfo {
        ioscope_version: "0.1.0-test".into(),
        host: host.into(),
        pid,
        command_line: "ioscope run --rw randread".into(),
        started_unix_ms: 1_700_000_000_000,
        planned_duration_ns: 3_000_000_000,
        plan_json: r#"{"rw":"randread"}"#.into(),
        workload_toml: "rw = \"randread\"\n".into(),
        workload_hash: "3f2a9c".into(),
    }
}

pub(crate) fn hosts() -> Vec<(String, serde_json::Value)> {
    vec![("h1".into(), serde_json::json!({"memory_bytes": 1u64 << 34, "cpu_model": "Test CPU"}))]
}

pub(crate) fn hist(values: impl IntoIterator<Item = u64>) -> Histogram {
    let mut h = Histogram::new();
    for v in values {
        h.record(v);
    }
    h
}

fn op_interval(second: u64, n: u64) -> OpInterval {
    let lat = hist((1..=n).map(|i| i * 1013 + second * 7));
    // Errors by kind add up to the error count; skips are counted apart.
    let errors_by_kind = match second {
        0 => vec![],
        1 => vec![("EROFS".to_string(), 1)],
        _ => vec![("EROFS".to_string(), second - 1), ("short read".to_string(), 1)],
    };
    OpInterval {
        counts: Counts { ops: n, bytes: n * 4096, errors: second },
        errors_by_kind,
        skipped: second * 3,
        service_ns: hist((1..=n).map(|i| i * 977)),
        size_bytes: hist((0..n).map(|_| 4096)),
        offset_bytes: hist((0..n).map(|i| i * 4096 * 31 % (1 << 30))),
        latency_ns: lat,
    }
}

/// Distributions of `n` I/Os as a busiest worker or file (or the rest) has them: no errors.
fn part(second: u64, n: u64) -> OpInterval {
    OpInterval {
        counts: Counts { ops: n, bytes: n * 4096, errors: 0 },
        errors_by_kind: Vec::new(),
        skipped: 0,
        ..op_interval(second, n)
    }
}

pub(crate) fn snapshot(second: u32, host: &str) -> Snapshot {
    let mut write = op_interval(second as u64, 10);
    // Values past i64::MAX and an empty distribution must round-trip too.
    write.offset_bytes.record(u64::MAX);
    write.service_ns = Histogram::new();
    Snapshot {
        step: second / 2,
        warmup: second == 0,
        second,
        interval_ns: 1_000_000_000 + second as u64,
        host: host.into(),
        ops: vec![
            OpSeries { workload: "w1".into(), op: Op::Read, data: op_interval(second as u64, 1000 + second as u64) },
            OpSeries { workload: "w1".into(), op: Op::Write, data: write },
            OpSeries { workload: "w1".into(), op: Op::Fsync, data: OpInterval::empty() },
        ],
        workers: (0..3)
            .flat_map(|w| {
                [Op::Read, Op::Write].map(|op| WorkerCounts {
                    worker: w,
                    op,
                    counts: Counts { ops: w as u64 * 10 + second as u64, bytes: 4096 * w as u64, errors: 0 },
                })
            })
            .collect(),
        files: vec![
            FileCounts { file: "ioscope.0".into(), op: Op::Read, counts: Counts { ops: 7, bytes: 28672, errors: 0 } },
            FileCounts { file: "ioscope.1".into(), op: Op::Write, counts: Counts { ops: 3, bytes: 0, errors: 1 } },
        ],
        worker_dists: vec![
            WorkerDists { worker: Some(2), op: Op::Read, data: part(second as u64, 5) },
            WorkerDists { worker: None, op: Op::Read, data: part(second as u64, 3) },
        ],
        file_dists: vec![
            FileDists { file: "ioscope.0".into(), op: Op::Read, data: part(second as u64, 6) },
            FileDists {
                file: OTHER.into(),
                op: Op::Write,
                data: OpInterval { service_ns: Histogram::new(), ..part(second as u64, 2) },
            },
        ],
        not_broken_down: second as u64 * 1000,
        worker_cpu: Vec::new(),
    }
}

fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// A check that cannot run here says why, and fails instead where every prerequisite is
/// installed (IOSCOPE_TEST_REQUIRE_ALL=1, set by scripts/test.sh).
fn skip(why: &str) {
    if std::env::var("IOSCOPE_TEST_REQUIRE_ALL").is_ok_and(|v| v == "1") {
        panic!("this check cannot run here ({why}), and IOSCOPE_TEST_REQUIRE_ALL=1 requires every test to run");
    }
    eprintln!("skipped: {why} (set IOSCOPE_TEST_REQUIRE_ALL=1 to make this a failure)");
}

/// The sqlite3 shell's answer to `sql`; None (said, see [`skip`]) when it is not installed.
fn sqlite3_cli(path: &Path, sql: &str) -> Option<String> {
    let out = match Command::new("sqlite3").arg(path).arg(sql).output() {
        Ok(out) => out,
        Err(e) => {
            skip(&format!("the sqlite3 shell cannot be run ({e}); the file is not checked with an independent reader"));
            return None;
        }
    };
    assert!(out.status.success(), "sqlite3 failed: {}", String::from_utf8_lossy(&out.stderr));
    Some(String::from_utf8(out.stdout).unwrap())
}

#[test]
fn finished_run_round_trips_exactly_into_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let snaps: Vec<Snapshot> = (0..3).map(|s| snapshot(s, "h1")).collect();
    let mut w = Writer::create(&path, &run_info(std::process::id(), "h1"), &hosts()).unwrap();
    let steps: Vec<StepRow> = (0..2)
        .map(|i| StepRow {
            index: i,
            repeat: i,
            label: format!("rate={}%", 50 * (i + 1)),
            threads: Some(4),
            rate_iops: None,
            curve_pct: Some(50 * (i + 1) as u8),
            start_second: 2 * i,
            warmup_ns: 1_000_000_000,
            duration_ns: 1_000_000_000,
        })
        .collect();
    w.write_steps(&steps).unwrap();
    for s in &snaps {
        w.write_second(s).unwrap();
    }
    w.set_step_rate(1, 1234).unwrap();
    let probe = ProbeRow {
        name: "rsync".into(),
        command: "rsync -a a/ b/".into(),
        at_ns: 1_500_000_000,
        duration_ns: 250_000_000,
        exit_code: Some(23),
        detail: None,
    };
    w.write_probe(&probe).unwrap();
    w.finish(Status::Completed, None, 1_700_000_003_500).unwrap();

    assert!(!sidecar(&path, "-wal").exists(), "no -wal file after finish");
    assert!(!sidecar(&path, "-shm").exists(), "no -shm file after finish");

    let r = open(&path).unwrap();
    assert_eq!(r.seconds, snaps, "snapshots, histograms included, round-trip exactly");
    assert_eq!(r.run.status, Status::Completed);
    assert_eq!(r.run.stored_status, Status::Completed);
    assert_eq!(r.run.status_detail, None);
    assert_eq!(r.run.ended_unix_ms, Some(1_700_000_003_500));
    assert_eq!(r.run.info, run_info(std::process::id(), "h1"));
    assert_eq!(r.hosts, hosts());
    assert_eq!(r.schema_version, SCHEMA_VERSION);
    assert_eq!(r.seconds_kept(), 3);
    assert_eq!(r.ops(), [Op::Read, Op::Write, Op::Fsync]);
    assert_eq!(r.steps[0], steps[0]);
    assert_eq!(r.steps[1].rate_iops, Some(1234), "a curve step's rate is filled in later");
    assert_eq!(r.probes, vec![probe]);
    assert_eq!(r.seconds[0].files[1].counts.errors, 1, "per-file counters round-trip");

    if let Some(out) = sqlite3_cli(
        &path,
        "PRAGMA journal_mode; PRAGMA application_id; PRAGMA user_version; \
         SELECT status FROM run; SELECT count(*) FROM tick; \
         SELECT value FROM samples WHERE stat='io.ops' AND op='read' AND worker IS NULL AND file IS NULL ORDER BY second;",
    ) {
        assert_eq!(out, format!("delete\n{APPLICATION_ID}\n{SCHEMA_VERSION}\ncompleted\n3\n1000\n1001\n1002\n"));
    }
}

#[test]
fn dropped_writer_leaves_an_interrupted_run_with_every_second() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let host = hostname().unwrap_or_else(|| "h1".into());
    let mut w = Writer::create(&path, &run_info(u32::MAX - 1, &host), &hosts()).unwrap();
    for s in 0..3 {
        w.write_second(&snapshot(s, "h1")).unwrap();
    }
    drop(w);

    let r = open(&path).unwrap();
    assert_eq!(r.seconds.len(), 3);
    assert_eq!(r.run.stored_status, Status::Running);
    assert_eq!(r.run.status, Status::Interrupted);
    assert_eq!(
        r.run.status_detail.as_deref(),
        Some("the run stopped without finishing (killed or crashed); 3 seconds kept")
    );
    assert_eq!(r.run.ended_unix_ms, None);
}

/// The child half of `killed_process_leaves_a_readable_file`: write three seconds, then
/// die without running any destructor (as with SIGKILL).
#[test]
fn child_writes_then_aborts() {
    let Some(path) = std::env::var_os("IOSCOPE_STORE_TEST_CHILD") else { return };
    let path = PathBuf::from(path);
    let host = hostname().unwrap_or_else(|| "h1".into());
    let mut w = Writer::create(&path, &run_info(std::process::id(), &host), &hosts()).unwrap();
    for s in 0..3 {
        w.write_second(&snapshot(s, &host)).unwrap();
    }
    std::process::abort();
}

#[test]
fn killed_process_leaves_a_readable_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.ioscope");
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "tests::child_writes_then_aborts", "--nocapture", "--test-threads=1"])
        .env("IOSCOPE_STORE_TEST_CHILD", &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child aborts");
    assert!(sidecar(&path, "-wal").exists(), "the killed run left its WAL");

    let r = open(&path).unwrap();
    assert_eq!(r.seconds.len(), 3);
    assert_eq!(r.seconds[2].ops[0].data, snapshot(2, "x").ops[0].data);
    assert_eq!(r.run.stored_status, Status::Running);
    assert_eq!(r.run.status, Status::Interrupted);
    assert!(r.run.status_detail.unwrap().ends_with("3 seconds kept"));

    if let Some(out) = sqlite3_cli(&path, "SELECT status, (SELECT count(*) FROM tick) FROM run;") {
        assert_eq!(out, "running|3\n");
    }
}

#[test]
fn a_killed_runs_wal_is_folded_into_the_results_file_by_the_next_reader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.ioscope");
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "tests::child_writes_then_aborts", "--nocapture", "--test-threads=1"])
        .env("IOSCOPE_STORE_TEST_CHILD", &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child aborts");
    // Copying only the results file now loses the run: everything is in the -wal.
    let early = dir.path().join("early-copy.ioscope");
    std::fs::copy(&path, &early).unwrap();
    assert!(matches!(open(&early), Err(StoreError::NotResults { .. })));

    let r = open(&path).unwrap();
    assert_eq!(r.seconds.len(), 3);
    assert!(!sidecar(&path, "-wal").exists() && !sidecar(&path, "-shm").exists(), "one file remains");
    // Now the file alone is the whole run.
    let copy = dir.path().join("copy.ioscope");
    std::fs::copy(&path, &copy).unwrap();
    let c = open(&copy).unwrap();
    assert_eq!((c.seconds, c.run.status), (r.seconds, Status::Interrupted));
}

/// The child half of `a_finished_runs_leftover_wal_is_folded_by_the_next_reader`: write
/// three seconds and record the end of the run, then die before the checkpoint (as when
/// the checkpoint fails on a full disk).
#[test]
fn child_finishes_then_dies_before_the_checkpoint() {
    let Some(path) = std::env::var_os("IOSCOPE_STORE_TEST_FINISHED_CHILD") else { return };
    let path = PathBuf::from(path);
    let host = hostname().unwrap_or_else(|| "h1".into());
    let mut w = Writer::create(&path, &run_info(std::process::id(), &host), &hosts()).unwrap();
    for s in 0..3 {
        w.write_second(&snapshot(s, &host)).unwrap();
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE run SET status = 'completed' WHERE id = 1", []).unwrap();
    std::process::abort();
}

#[test]
fn a_finished_runs_leftover_wal_is_folded_by_the_next_reader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("finished.ioscope");
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "tests::child_finishes_then_dies_before_the_checkpoint", "--nocapture", "--test-threads=1"])
        .env("IOSCOPE_STORE_TEST_FINISHED_CHILD", &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child aborts");
    assert!(sidecar(&path, "-wal").exists(), "the run left its WAL");

    let r = open(&path).unwrap();
    assert_eq!((r.seconds.len(), r.run.status), (3, Status::Completed));
    assert!(!sidecar(&path, "-wal").exists() && !sidecar(&path, "-shm").exists(), "one file remains");
}

#[test]
fn a_live_ioscope_process_is_still_running() {
    let host = hostname().unwrap_or_default();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.ioscope");
    // The writer's lock says it, whatever pid and host the file records.
    let mut w = Writer::create(&path, &run_info(u32::MAX, "not-this-host.invalid"), &hosts()).unwrap();
    w.write_second(&snapshot(0, &host)).unwrap();
    let live = open(&path).unwrap();
    assert_eq!(live.run.status, Status::Running);
    assert_eq!(live.run.status_detail, None);
    assert_eq!(live.seconds.len(), 1);
    // A writer gone without finishing (killed: the kernel drops its lock) is interrupted,
    // though the pid it recorded is a live ioscope process (this one, in a test binary named otherwise).
    let gone = dir.path().join("gone.ioscope");
    drop(Writer::create(&gone, &run_info(std::process::id(), &host), &hosts()).unwrap());
    assert_eq!(open(&gone).unwrap().run.status, Status::Interrupted);
    w.finish(Status::Completed, None, 0).unwrap();
    assert_eq!(open(&path).unwrap().run.status, Status::Completed);
}

#[test]
fn refuses_to_create_over_an_existing_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("exists.ioscope");
    std::fs::write(&path, b"precious").unwrap();
    let err = Writer::create(&path, &run_info(1, "h1"), &hosts()).unwrap_err();
    assert!(matches!(err, StoreError::Exists { .. }));
    let msg = err.to_string();
    assert!(msg.contains("already exists") && msg.contains("exists.ioscope"), "{msg}");
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
    assert!(check_new_path(&path).is_err());

    let fresh = dir.path().join("fresh.ioscope");
    assert!(check_new_path(&fresh).is_ok());
    std::fs::write(sidecar(&fresh, "-wal"), b"old").unwrap();
    let err = Writer::create(&fresh, &run_info(1, "h1"), &hosts()).unwrap_err();
    assert!(matches!(err, StoreError::Leftover { .. }), "{err}");
    assert!(!fresh.exists());
}

#[test]
fn other_files_are_not_results() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello, this is not a database at all, just some text that is long enough").unwrap();
    let err = open(&text).unwrap_err();
    assert!(matches!(err, StoreError::NotResults { .. }), "{err}");
    assert!(err.to_string().contains("notes.txt"));

    let db = dir.path().join("other.db");
    rusqlite::Connection::open(&db).unwrap().execute_batch("CREATE TABLE t(x)").unwrap();
    let err = open(&db).unwrap_err();
    assert!(matches!(err, StoreError::NotResults { .. }), "{err}");

    let missing = dir.path().join("missing.ioscope");
    let err = open(&missing).unwrap_err();
    assert!(matches!(err, StoreError::Io { .. }) && err.to_string().contains("missing.ioscope"), "{err}");
}

#[test]
fn status_strings_round_trip() {
    for s in [Status::Running, Status::Completed, Status::Interrupted, Status::Failed] {
        assert_eq!(s.as_str().parse::<Status>().unwrap(), s);
    }
    assert!("done".parse::<Status>().is_err());
}

#[test]
fn failed_status_and_detail_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.ioscope");
    let w = Writer::create(&path, &run_info(1, "h1"), &[]).unwrap();
    w.finish(Status::Failed, Some("open /x: permission denied"), 5).unwrap();
    let r = open(&path).unwrap();
    assert_eq!(r.run.status, Status::Failed);
    assert_eq!(r.run.status_detail.as_deref(), Some("open /x: permission denied"));
    assert!(r.seconds.is_empty() && r.hosts.is_empty());
}

#[test]
fn refresh_reads_the_new_seconds_and_ends_equal_to_a_fresh_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let host = hostname().unwrap_or_else(|| "h1".into());
    let mut w = Writer::create(&path, &run_info(std::process::id(), &host), &hosts()).unwrap();
    // Target series too: one there from the start, one that appears later.
    let target = |second: u32| {
        use ioscope_metrics::stat::{Dim, StatId};
        use ioscope_metrics::{TargetSecond, TargetSeries, TargetValue};
        let mut series = vec![TargetSeries::new(StatId::MemDirty, &[], TargetValue::Gauge(u64::from(second)))];
        if second >= 3 {
            series.push(TargetSeries::new(StatId::DiskOps, &[(Dim::Disk, "loop3")], TargetValue::Count(7)));
        }
        TargetSecond { host: "server".into(), second: u64::from(second), interval_ns: 1_000_000_000, series }
    };
    for s in 0..2 {
        w.write_second(&snapshot(s, "h1")).unwrap();
        w.write_target(&target(s)).unwrap();
    }
    let mut r = open(&path).unwrap();
    assert_eq!(r.seconds_kept(), 2);
    assert_eq!(r.run.stored_status, Status::Running);
    for s in 2..5 {
        w.write_second(&snapshot(s, "h1")).unwrap();
        w.write_target(&target(s)).unwrap();
    }
    w.finish(Status::Completed, None, 1_700_000_005_000).unwrap();
    refresh(&mut r).unwrap();
    assert_eq!(r, open(&path).unwrap());
    assert_eq!(r.seconds_kept(), 5);
    assert_eq!(r.target.iter().map(|t| t.samples.len()).collect::<Vec<_>>(), [5, 2], "target seconds kept and added");
    assert_eq!(r.run.status, Status::Completed);
}

/// A finished file of seconds 0..3 for damaging.
fn finished_file(dir: &Path) -> PathBuf {
    let path = dir.join("r.ioscope");
    let mut w = Writer::create(&path, &run_info(1, "h1"), &hosts()).unwrap();
    for s in 0..3 {
        w.write_second(&snapshot(s, "h1")).unwrap();
    }
    w.finish(Status::Completed, None, 1_700_000_003_000).unwrap();
    path
}

#[test]
fn damaged_values_are_errors_naming_the_table_row_and_value() {
    let dir = tempfile::tempdir().unwrap();
    let base = finished_file(dir.path());
    let latency = "(SELECT id FROM series WHERE stat = 'io.latency' AND op = 'read')";
    let ops = "(SELECT id FROM series WHERE stat = 'io.ops' AND op = 'read' AND worker IS NULL AND file IS NULL)";
    for (sql, says) in [
        // A second far past the others: answers would have 2e9 entries.
        (
            "UPDATE tick SET second = 2000000000 WHERE second = 2; UPDATE sample SET second = 2000000000 WHERE second = 2".to_string(),
            "table tick, row second=2000000000: seconds 0 to 2000000000 leave 1999999998 of 2000000001 seconds unrecorded",
        ),
        (format!("UPDATE sample SET min = 900000, max = 10 WHERE series_id = {latency} AND second = 1"), "min 900000 > max 10"),
        ("UPDATE tick SET interval_ns = 0 WHERE second = 1".into(), "table tick, row host='h1' second=1: interval_ns is 0"),
        ("UPDATE tick SET second = -1 WHERE second = 0".into(), "table tick, row host='h1' second=-1: second is -1"),
        (
            format!("UPDATE sample SET value = 0 WHERE series_id = {ops} AND second = 1"),
            "second 1: workload \"w1\" op \"read\": 0 io.ops but 1001 io.latency values",
        ),
        (
            format!("DELETE FROM sample WHERE series_id = {ops} AND second = 1"),
            "second 1: no io.ops row for workload \"w1\" op \"read\"",
        ),
        (
            format!("UPDATE sample SET hist = x'00ff' WHERE series_id = {latency} AND second = 0"),
            "malformed sparse histogram",
        ),
        // Counts that add up past 2^64 over the run.
        (
            "UPDATE sample SET value = 9223372036854775807 WHERE series_id IN (SELECT id FROM series WHERE stat = 'io.errors' AND worker IS NULL AND file IS NULL)".into(),
            "the ops add up past 2^64",
        ),
        ("DELETE FROM tick WHERE second = 1".into(), "no row of table tick for host \"h1\" second 1"),
        ("DROP VIEW samples; DROP TABLE step".into(), "table step: the table is missing"),
        ("UPDATE run SET pid = 'x'".into(), "table run, row id=1: pid is 'x', expected a whole number"),
        ("DELETE FROM run".into(), "table run: no row with id 1"),
        // Operations are read back into the registry's enum: a name it lacks is damage.
        (
            format!("UPDATE series SET op = 'stat' WHERE id = {latency}"),
            "table series, row id=",
        ),
        (format!("UPDATE series SET op = 'stat' WHERE id = {latency}"), "op \"stat\" is not an operation (expected one of read, write,"),
    ] {
        let path = dir.path().join("d.ioscope");
        std::fs::copy(&base, &path).unwrap();
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(&format!("PRAGMA foreign_keys = OFF; PRAGMA ignore_check_constraints = ON; {sql}")).unwrap();
        drop(conn);
        let err = open(&path).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}: damaged results file: ", path.display())), "{sql}: {err}");
        assert!(err.contains(says), "{sql}:\n{err}\ndoes not say\n{says}");
    }
    assert!(open(&base).is_ok());
}

// ---- A reader (the UI, `ioscope show`) while a run writes ----

#[test]
fn a_reader_holding_the_file_does_not_stop_the_run_leaving_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    drop(Writer::create(&path, &run_info(1, "h1"), &hosts()).unwrap());
    // The run's connection (the only one that may leave WAL mode: no other may be open).
    let writer = rusqlite::Connection::open(&path).unwrap();
    let mode: String = writer.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    // A reader in the middle of a read transaction, as the UI is a few times a second.
    let reader = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let runs: i64 = reader.query_row("SELECT count(*) FROM run", [], |r| r.get(0)).unwrap();
    assert_eq!(runs, 1);
    let once = writer.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get::<_, String>(0));
    assert!(once.as_deref().map_or(true, |m| m == "wal"), "SQLite refuses the switch while a reader is in the file");
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        reader.execute_batch("COMMIT").unwrap();
    });
    let mode = crate::write::set_journal_mode(&writer, &path, "delete").unwrap();
    release.join().unwrap();
    assert_eq!(mode, "delete", "the switch waits for the reader");
}

#[test]
fn error_kinds_are_stored_as_a_dimension_and_version_3_files_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let mut w = Writer::create(&path, &run_info(std::process::id(), "h1"), &hosts()).unwrap();
    let snaps: Vec<Snapshot> = (0..3).map(|s| snapshot(s, "h1")).collect();
    for s in &snaps {
        w.write_second(s).unwrap();
    }
    w.finish(Status::Completed, None, 1).unwrap();
    let r = open(&path).unwrap();
    let read = |s: &Snapshot| s.ops[0].data.clone();
    assert_eq!(read(&r.seconds[2]).errors_by_kind, [("EROFS".to_string(), 1), ("short read".to_string(), 1)]);
    assert_eq!(read(&r.seconds[2]).skipped, 6);
    if let Some(out) = sqlite3_cli(
        &path,
        "SELECT second, error, value FROM samples WHERE stat='io.errors' AND op='read' AND error IS NOT NULL ORDER BY second, error;",
    ) {
        assert_eq!(out, "1|EROFS|1\n2|EROFS|1\n2|short read|1\n");
    }

    // The same file as version 3 wrote it: no error column.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP VIEW samples; DROP VIEW op_seconds; DROP VIEW percentiles; DROP TABLE quantiles; DROP INDEX series_key;
         DELETE FROM sample WHERE series_id IN
           (SELECT id FROM series WHERE error IS NOT NULL OR stat = 'io.skipped'
              OR (kind = 'distribution' AND (worker IS NOT NULL OR file IS NOT NULL)));
         DELETE FROM series WHERE error IS NOT NULL OR stat = 'io.skipped'
              OR (kind = 'distribution' AND (worker IS NOT NULL OR file IS NOT NULL));
         ALTER TABLE series DROP COLUMN error; PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(conn);
    let old = open(&path).unwrap();
    assert_eq!(old.schema_version, 3);
    let d = &old.seconds[2].ops[0].data;
    assert_eq!((d.counts.errors, d.errors_by_kind.len(), d.skipped), (2, 0, 0));
}

#[test]
fn a_gap_of_hours_after_a_stopped_process_is_read_not_refused_as_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let mut w = Writer::create(&path, &run_info(1, "h1"), &hosts()).unwrap();
    w.write_second(&snapshot(0, "h1")).unwrap();
    w.write_second(&snapshot(1, "h1")).unwrap();
    // Stopped for two hours: one late tick of its real length, numbered at its end.
    let mut late = snapshot(7202, "h1");
    late.interval_ns = 7_201_000_000_000;
    w.write_second(&late).unwrap();
    w.finish(Status::Completed, None, 1_700_000_003_000).unwrap();
    let r = open(&path).unwrap();
    assert_eq!(r.seconds.iter().map(|s| s.second).collect::<Vec<_>>(), [0, 1, 7202]);
}

/// A run over many files creates three series per file in its first second; looking them up
/// must not take time quadratic in their number (19,000 files once stalled the first second
/// for 66 s, so a 3 s run lasted 67 s and its seconds were recorded as one late tick).
#[test]
fn a_second_of_a_run_over_many_files_is_written_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let mut w = Writer::create(&path, &run_info(std::process::id(), "h1"), &hosts()).unwrap();
    let mut s = snapshot(0, "h1");
    s.files = (0..5_000)
        .map(|i| FileCounts {
            file: format!("ioscope.{i}.dat"),
            op: Op::Read,
            counts: Counts { ops: 1, bytes: 4096, errors: 0 },
        })
        .collect();
    // Each file's series is created in this second and looked up by its key (a hash map:
    // a linear scan made this second take a minute at 19,000 files).
    w.write_second(&s).unwrap();
    w.write_second(&snapshot(1, "h1")).unwrap();
    w.finish(Status::Completed, None, 1_700_000_003_000).unwrap();
    let r = open(&path).unwrap();
    assert_eq!(r.seconds[0].files.len(), 5_000);
    assert_eq!(r.seconds[0].files[4_999].file, "ioscope.4999.dat");
}

#[test]
fn a_run_whose_wal_cannot_be_folded_at_the_end_is_complete_in_two_files_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let mut w = Writer::create(&path, &run_info(1, "h1"), &hosts()).unwrap();
    for s in 0..2 {
        w.write_second(&snapshot(s, "h1")).unwrap();
    }
    // A reader in a read transaction keeps the -wal from being folded (as a full disk
    // does); the status is committed all the same.
    let reader = rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let _: i64 = reader.query_row("SELECT count(*) FROM tick", [], |r| r.get(0)).unwrap();
    let finished = w.finish(Status::Completed, None, 1_700_000_003_000).unwrap();
    assert!(matches!(finished, crate::Finished::WithWal(_)), "{finished:?}");
    drop(reader);
    let r = open(&path).unwrap();
    assert_eq!((r.run.status, r.seconds.len()), (Status::Completed, 2));
}

#[test]
fn a_live_or_killed_runs_file_copied_without_its_wal_says_to_copy_the_wal_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let mut w = Writer::create(&path, &run_info(1, "h1"), &hosts()).unwrap();
    w.write_second(&snapshot(0, "h1")).unwrap();
    let copy = dir.path().join("copy.ioscope");
    std::fs::copy(&path, &copy).unwrap();
    let err = open(&copy).unwrap_err().to_string();
    assert!(err.contains("copied without its -wal file"), "{err}");
    drop(w);
}

#[test]
fn per_worker_and_per_file_distributions_round_trip_and_version_4_files_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let mut w = Writer::create(&path, &run_info(std::process::id(), "h1"), &hosts()).unwrap();
    let snaps: Vec<Snapshot> = (0..3).map(|s| snapshot(s, "h1")).collect();
    for s in &snaps {
        w.write_second(s).unwrap();
    }
    w.set_meta("breakdown", "N = 16").unwrap();
    w.finish(Status::Completed, None, 1).unwrap();
    let r = open(&path).unwrap();
    for (read, written) in r.seconds.iter().zip(&snaps) {
        assert_eq!(read.worker_dists, written.worker_dists, "second {}", written.second);
        assert_eq!(read.file_dists, written.file_dists, "second {}", written.second);
        assert_eq!(read.not_broken_down, written.not_broken_down);
    }
    // The other workers are worker -1 and the other files '(other)', for SQL users too.
    let conn = rusqlite::Connection::open(&path).unwrap();
    let rows: Vec<(Option<i64>, Option<String>)> = conn
        .prepare("SELECT DISTINCT worker, file FROM series WHERE kind = 'distribution' AND (worker < 0 OR file = '(other)') ORDER BY worker")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows, [(None, Some(OTHER.to_string())), (Some(-1), None)]);

    // The same file as version 4 wrote it: no per-worker or per-file distributions.
    conn.execute_batch(
        "DROP VIEW samples; DROP VIEW op_seconds; DROP VIEW percentiles; DROP TABLE quantiles;
         DELETE FROM sample WHERE series_id IN
           (SELECT id FROM series WHERE kind = 'distribution' AND (worker IS NOT NULL OR file IS NOT NULL));
         DELETE FROM series WHERE kind = 'distribution' AND (worker IS NOT NULL OR file IS NOT NULL);
         ALTER TABLE tick DROP COLUMN not_broken_down; PRAGMA user_version = 4;",
    )
    .unwrap();
    drop(conn);
    let old = open(&path).unwrap();
    assert_eq!(old.schema_version, 4);
    assert!(old.seconds.iter().all(|s| s.worker_dists.is_empty() && s.file_dists.is_empty() && s.not_broken_down == 0));
    assert_eq!(old.seconds[2].ops, snaps[2].ops);
}

/// The target side's series come back as written, beside the client's, with their own
/// dimensions, and SQL finds them by side and dimension column.
#[test]
fn target_series_round_trip_beside_the_client_series_and_sql_finds_them_by_dimension() {
    use ioscope_metrics::stat::{Dim, StatId};
    use ioscope_metrics::{TargetSecond, TargetSeries, TargetValue};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let mut w = Writer::create(&path, &run_info(std::process::id(), "h1"), &hosts()).unwrap();
    let loop3 = [(Dim::Disk, "loop3"), (Dim::Op, "write")];
    let mut written = Vec::new();
    for second in 0..3u32 {
        w.write_second(&snapshot(second, "h1")).unwrap();
        let t = TargetSecond {
            host: "server".into(),
            second: u64::from(second),
            interval_ns: 1_001_000_000,
            series: vec![
                TargetSeries::new(StatId::DiskOps, &loop3, TargetValue::Count(100 + u64::from(second))),
                TargetSeries::new(StatId::MemDirty, &[], TargetValue::Gauge(4096)),
                TargetSeries::new(StatId::BlockLatency, &loop3, TargetValue::Dist(hist([1000, 2000, 3000]))),
                TargetSeries::new(
                    StatId::CpuTime,
                    &[(Dim::Cpu, "0"), (Dim::Mode, "user")],
                    TargetValue::Count(250_000_000),
                ),
            ],
        };
        w.write_target(&t).unwrap();
        written.push(t);
    }
    w.finish(Status::Completed, None, 0).unwrap();
    let r = crate::open(&path).unwrap();
    assert_eq!(r.seconds.len(), 3, "the client's seconds are all there");
    let disk = r.target.iter().find(|t| t.stat.id == StatId::DiskOps).unwrap();
    assert_eq!((disk.host.as_str(), disk.label(Dim::Disk), disk.label(Dim::Op)), ("server", "loop3", "write"));
    let values: Vec<_> = disk.samples.iter().map(|s| (s.second, s.interval_ns, s.value.clone())).collect();
    assert_eq!(values, (0..3).map(|s| (s, 1_001_000_000, TargetValue::Count(100 + u64::from(s)))).collect::<Vec<_>>());
    let lat = r.target.iter().find(|t| t.stat.id == StatId::BlockLatency).unwrap();
    assert_eq!(lat.samples[2].value, TargetValue::Dist(hist([1000, 2000, 3000])));
    assert_eq!(r.target.len(), 4);
    if let Some(out) = sqlite3_cli(
        &path,
        "SELECT sum(x.value) FROM sample x JOIN series s ON s.id = x.series_id \
         WHERE s.side = 'target' AND s.stat = 'disk.ops' AND s.disk = 'loop3' AND s.op = 'write'",
    ) {
        assert_eq!(out.trim(), "303");
    }
}

#[test]
fn marked_warmup_seconds_are_warmup_for_every_reader_and_the_step_row_moves_their_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let mut w = Writer::create(&path, &run_info(std::process::id(), "h1"), &hosts()).unwrap();
    let step = StepRow {
        index: 0,
        repeat: 0,
        label: String::new(),
        threads: None,
        rate_iops: None,
        curve_pct: None,
        start_second: 0,
        warmup_ns: 0,
        duration_ns: 6_000_000_000,
    };
    w.write_steps(&[step]).unwrap();
    for s in 0..6 {
        w.write_second(&Snapshot { warmup: false, step: 0, ..snapshot(s, "h1") }).unwrap();
    }
    w.finish(Status::Completed, None, 1_700_000_006_000).unwrap();
    crate::mark_warmup(&path, &[(0, 2)]).unwrap();
    assert!(!sidecar(&path, "-wal").exists(), "still one file");
    let r = open(&path).unwrap();
    let warm: Vec<bool> = r.seconds.iter().map(|s| s.warmup).collect();
    assert_eq!(warm, [true, true, false, false, false, false]);
    assert_eq!((r.steps[0].warmup_ns, r.steps[0].duration_ns), (2_000_000_000, 4_000_000_000));
    let c = rusqlite::Connection::open(&path).unwrap();
    let warm_rows: i64 =
        c.query_row("SELECT COUNT(*) FROM op_seconds WHERE warmup = 1 AND second >= 2", [], |r| r.get(0)).unwrap();
    let cold_rows: i64 =
        c.query_row("SELECT COUNT(*) FROM op_seconds WHERE warmup = 0 AND second < 2", [], |r| r.get(0)).unwrap();
    assert_eq!((warm_rows, cold_rows), (0, 0));
}

#[test]
fn steps_keep_their_repeat_the_views_carry_it_and_version_6_files_read_as_repeat_0() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let mut w = Writer::create(&path, &run_info(std::process::id(), "h1"), &hosts()).unwrap();
    // One plan step run twice: repeat 1's step starts after a second without a tick.
    let step = |index: u32, repeat: u32, start_second: u32| StepRow {
        index,
        repeat,
        label: String::new(),
        threads: None,
        rate_iops: None,
        curve_pct: None,
        start_second,
        warmup_ns: 0,
        duration_ns: 2_000_000_000,
    };
    w.write_steps(&[step(0, 0, 0)]).unwrap();
    let mut snaps: Vec<Snapshot> = (0..2).map(|s| Snapshot { step: 0, warmup: false, ..snapshot(s, "h1") }).collect();
    w.write_steps(&[step(1, 1, 3)]).unwrap();
    snaps.extend((3..5).map(|s| Snapshot { step: 1, ..snapshot(s, "h1") }));
    snaps.iter().for_each(|s| w.write_second(s).unwrap());
    w.finish(Status::Completed, None, 1).unwrap();
    let r = open(&path).unwrap();
    assert_eq!(r.steps, [step(0, 0, 0), step(1, 1, 3)]);
    assert_eq!(r.seconds, snaps);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let per_repeat: Vec<(i64, i64)> = conn
        .prepare(
            "SELECT repeat, count(DISTINCT second) FROM op_seconds WHERE NOT warmup GROUP BY repeat ORDER BY repeat",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(per_repeat, [(0, 2), (1, 2)]);
    for view in ["samples", "percentiles"] {
        let n: i64 =
            conn.query_row(&format!("SELECT count(*) FROM {view} WHERE repeat = 1"), [], |r| r.get(0)).unwrap();
        assert!(n > 0, "{view} has no rows of repeat 1");
    }

    // A later step of an earlier repeat is damage, named as such.
    conn.execute_batch("UPDATE step SET repeat = 0 WHERE idx = 1; UPDATE step SET repeat = 2 WHERE idx = 0").unwrap();
    let err = open(&path).unwrap_err().to_string();
    assert!(err.contains("table step") && err.contains("repeat 0 after a step of repeat 2"), "{err}");

    // The same file as version 6 wrote it: no repeat column.
    conn.execute_batch(
        "DROP VIEW samples; DROP VIEW op_seconds; DROP VIEW percentiles;
         ALTER TABLE step DROP COLUMN repeat; PRAGMA user_version = 6;",
    )
    .unwrap();
    drop(conn);
    let old = open(&path).unwrap();
    assert_eq!(old.schema_version, 6);
    assert!(old.steps.iter().all(|s| s.repeat == 0));
    assert_eq!(old.seconds, snaps);
}

#[test]
fn a_count_the_file_cannot_hold_is_refused_by_the_checker_and_the_largest_it_can_reads_back() {
    // Counters are INTEGER columns: SQLite keeps 2^63-1 and turns anything larger into a
    // float the reader must refuse. The checker is what stands between a peer and that.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.ioscope");
    let mut w = Writer::create(&path, &run_info(std::process::id(), "h1"), &hosts()).unwrap();
    let mut s = Snapshot::new(0, 1_000_000_000, "h1");
    let mut d = OpInterval::empty();
    d.skipped = i64::MAX as u64;
    d.counts.errors = i64::MAX as u64;
    d.errors_by_kind = vec![("EIO".into(), i64::MAX as u64)];
    s.ops.push(OpSeries { workload: String::new(), op: Op::Read, data: d });
    check::snapshot(&s, &[]).unwrap();
    w.write_second(&s).unwrap();
    w.finish(Status::Completed, None, 1_700_000_003_500).unwrap();
    assert_eq!(open(&path).unwrap().seconds, vec![s.clone()]);
    for past in 0..4 {
        let mut t = s.clone();
        let d = &mut t.ops[0].data;
        match past {
            0 => d.skipped = i64::MAX as u64 + 1,
            1 => d.counts.errors = u64::MAX,
            2 => d.errors_by_kind[0].1 = u64::MAX,
            _ => t.interval_ns = u64::MAX,
        }
        let why = check::snapshot(&t, &[]).unwrap_err();
        assert!(why.contains("past 2^63-1"), "{past}: {why}");
    }
}
