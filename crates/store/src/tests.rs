use super::*;
use ioscope_metrics::{Counts, FileCounts, Histogram, OpInterval, OpSeries, WorkerCounts};
use std::process::Command;

fn run_info(pid: u32, host: &str) -> RunInfo {
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

fn hosts() -> Vec<(String, serde_json::Value)> {
    vec![("h1".into(), serde_json::json!({"memory_bytes": 1u64 << 34, "cpu_model": "Test CPU"}))]
}

fn hist(values: impl IntoIterator<Item = u64>) -> Histogram {
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

fn snapshot(second: u32, host: &str) -> Snapshot {
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
            OpSeries {
                workload: "w1".into(),
                op: "read".into(),
                data: op_interval(second as u64, 1000 + second as u64),
            },
            OpSeries { workload: "w1".into(), op: "write".into(), data: write },
            OpSeries { workload: "w1".into(), op: "fsync".into(), data: OpInterval::empty() },
        ],
        workers: (0..3)
            .flat_map(|w| {
                ["read", "write"].map(|op| WorkerCounts {
                    worker: w,
                    op: op.into(),
                    counts: Counts { ops: w as u64 * 10 + second as u64, bytes: 4096 * w as u64, errors: 0 },
                })
            })
            .collect(),
        files: vec![
            FileCounts {
                file: "ioscope.0".into(),
                op: "read".into(),
                counts: Counts { ops: 7, bytes: 28672, errors: 0 },
            },
            FileCounts { file: "ioscope.1".into(), op: "write".into(), counts: Counts { ops: 3, bytes: 0, errors: 1 } },
        ],
    }
}

fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

fn sqlite3_cli(path: &Path, sql: &str) -> Option<String> {
    let out = Command::new("sqlite3").arg(path).arg(sql).output().ok()?;
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
    assert_eq!(r.op_names(), ["read", "write", "fsync"]);
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
fn a_live_ioscope_process_is_still_running() {
    let Ok(sleep) = std::fs::read("/bin/sleep") else { return };
    let Some(host) = hostname() else { return };
    let dir = tempfile::tempdir().unwrap();
    // A process whose comm is "ioscope".
    let exe = dir.path().join("ioscope");
    std::fs::write(&exe, sleep).unwrap();
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut child = Command::new(&exe).arg("30").spawn().unwrap();

    let path = dir.path().join("live.ioscope");
    let mut w = Writer::create(&path, &run_info(child.id(), &host), &hosts()).unwrap();
    w.write_second(&snapshot(0, &host)).unwrap();
    let live = open(&path);
    if child.try_wait().unwrap().is_some() {
        // This system's sleep would not run under another name (a multi-call binary).
        return;
    }
    // Another host's run can't be checked: counted as stopped.
    let other = dir.path().join("other.ioscope");
    drop(Writer::create(&other, &run_info(child.id(), "not-this-host.invalid"), &hosts()).unwrap());
    let other = open(&other);
    child.kill().unwrap();
    child.wait().unwrap();
    let dead = open(&path);

    let live = live.unwrap();
    assert_eq!(live.run.status, Status::Running);
    assert_eq!(live.run.status_detail, None);
    assert_eq!(live.seconds.len(), 1);
    assert_eq!(other.unwrap().run.status, Status::Interrupted);
    assert_eq!(dead.unwrap().run.status, Status::Interrupted);
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
    for s in 0..2 {
        w.write_second(&snapshot(s, "h1")).unwrap();
    }
    let mut r = open(&path).unwrap();
    assert_eq!(r.seconds_kept(), 2);
    assert_eq!(r.run.stored_status, Status::Running);
    for s in 2..5 {
        w.write_second(&snapshot(s, "h1")).unwrap();
    }
    w.finish(Status::Completed, None, 1_700_000_005_000).unwrap();
    refresh(&mut r).unwrap();
    assert_eq!(r, open(&path).unwrap());
    assert_eq!(r.seconds_kept(), 5);
    assert_eq!(r.run.status, Status::Completed);
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
        "DROP VIEW samples; DROP INDEX series_key; DELETE FROM sample WHERE series_id IN
           (SELECT id FROM series WHERE error IS NOT NULL OR stat = 'io.skipped');
         DELETE FROM series WHERE error IS NOT NULL OR stat = 'io.skipped';
         ALTER TABLE series DROP COLUMN error; PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(conn);
    let old = open(&path).unwrap();
    assert_eq!(old.schema_version, 3);
    let d = &old.seconds[2].ops[0].data;
    assert_eq!((d.counts.errors, d.errors_by_kind.len(), d.skipped), (2, 0, 0));
}
