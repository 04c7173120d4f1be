//! Phases: workloads that name a phase run only in its steps, one phase after another, as
//! fio's stonewall groups do. The real binary on local files; what each step did is read
//! back from the results file with SQL, and the summary's rates are checked against it.

use serde_json::Value;
use std::path::Path;

mod common;
#[allow(dead_code)]
mod skip;

use common::run::{json_of, run_ok, s};

/// I/Os per (step, workload) from the results file: every second's ops of the whole host.
fn ops_by_step(results: &Path) -> Vec<(u32, String, u64)> {
    let db = rusqlite::Connection::open(results).unwrap();
    let mut q = db
        .prepare(
            "SELECT t.step, s.workload, sum(sa.value) FROM sample sa JOIN series s ON s.id = sa.series_id \
             JOIN tick t ON t.second = sa.second AND t.host = s.host \
             WHERE s.stat = 'io.ops' AND s.worker IS NULL AND s.file IS NULL AND s.error IS NULL \
             AND s.side = 'client' AND t.warmup = 0 GROUP BY 1, 2 ORDER BY 1, 2",
        )
        .unwrap();
    q.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect()
}

fn ops(rows: &[(u32, String, u64)], step: u32, workload: &str) -> u64 {
    rows.iter().find(|(s, w, _)| *s == step && w == workload).map_or(0, |r| r.2)
}

#[test]
fn a_write_phase_then_a_read_phase_each_run_only_their_own_workloads_and_are_rated_over_their_own_seconds() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("phases.toml");
    let text = format!(
        "dir = \"{}\"\nsize = \"16m\"\nduration = \"2s\"\n\n\
         [[workload]]\nname = \"fill\"\nrw = \"write\"\nbs = \"64k\"\nphase = 1\n\n\
         [[workload]]\nname = \"check\"\nrw = \"randread\"\nthreads = 2\nphase = 2\n\n\
         [[workload]]\nname = \"always\"\nrw = \"randread\"\n",
        s(&tmp.path().join("d"))
    );
    std::fs::write(&file, text).unwrap();
    let results = tmp.path().join("r.db");
    let summary = json_of(&run_ok(&["run", s(&file), "--out", s(&results), "--json", "--quiet"]));
    assert_eq!(summary["total"]["errors"], 0, "{summary}");
    let labels: Vec<&str> = summary["steps"].as_array().unwrap().iter().map(|s| s["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["phase=1", "phase=2"], "{summary}");
    let rows = ops_by_step(&results);
    // Each phase's own workload did its I/O there; the other phase's did none, but for the
    // I/Os in flight when its phase ended (one per thread, completed in the next second).
    assert!(ops(&rows, 0, "fill") > 0 && ops(&rows, 1, "check") > 0, "{rows:?}");
    assert!(ops(&rows, 0, "check") == 0 && ops(&rows, 1, "fill") <= 1, "{rows:?}");
    // A workload without a phase runs in both.
    assert!(ops(&rows, 0, "always") > 0 && ops(&rows, 1, "always") > 0, "{rows:?}");
    // The summary rates a one-phase workload over its phase's 2 s, not the run's 4 s.
    let rated = |w: &str| -> (f64, f64) {
        let v: &Value = &summary["workloads"][w];
        (v["iops"].as_f64().unwrap(), v["ops"].as_f64().unwrap())
    };
    let (iops, n) = rated("check");
    assert!((iops - n / 2.0).abs() <= 1e-6 * n, "check: {iops} IOPS for {n} I/Os in its 2 s phase: {summary}");
    let (iops, n) = rated("always");
    assert!((iops - n / 4.0).abs() <= 1e-6 * n, "always: {iops} IOPS for {n} I/Os over the run's 4 s: {summary}");
}

#[test]
fn a_fio_job_file_that_writes_then_reads_at_random_imports_to_phases_and_runs_them_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("write-then-read.fio");
    let text = format!(
        "[global]\ndirectory={}\nsize=16m\nruntime=2\ntime_based\nthreads=1\n\
         [seq-write]\nrw=write\nbs=128k\n[rand-read]\nstonewall\nrw=randread\nbs=4k\nnumjobs=2\n",
        s(tmp.path())
    );
    std::fs::write(&job, text).unwrap();
    let toml = tmp.path().join("job.toml");
    run_ok(&["import", "fio", s(&job), "-o", s(&toml)]);
    let results = tmp.path().join("r.db");
    let summary = json_of(&run_ok(&["run", s(&toml), "--out", s(&results), "--json", "--quiet"]));
    let rows = ops_by_step(&results);
    assert!(ops(&rows, 0, "seq-write") > 0 && ops(&rows, 1, "rand-read") > 0, "{rows:?}");
    assert_eq!(ops(&rows, 0, "rand-read"), 0, "{rows:?}");
    let plan = &summary["workload"]["plan"]["workloads"];
    assert_eq!((plan[0]["phase"].as_u64(), plan[1]["phase"].as_u64()), (Some(1), Some(2)), "{plan}");
}
