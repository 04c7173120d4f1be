//! Ends by amount (`--io-size`, `--number-ios`, `--passes`) with the real binary: each
//! workload issues exactly its amount, its threads together, the step ends there, and every
//! view says what ended it; a duration that comes first ends it instead, and says so.

mod common;
#[allow(dead_code)]
mod skip;

use common::run::{ioscope, json_of, run_ok, s};
use serde_json::Value;

/// A run on a fresh 16 MiB file with `extra` flags: its summary (JSON) and its text.
fn run(extra: &[&str]) -> (Value, String, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out) = (tmp.path().join("d"), tmp.path().join("r.db"));
    let mut args = vec!["run", "--dir", s(&dir), "--size", "16m", "--out", s(&out), "--quiet"];
    args.extend_from_slice(extra);
    run_ok(&args);
    let json = json_of(&run_ok(&["show", "--json", s(&out)]));
    schema_check(&json);
    let text = String::from_utf8_lossy(&run_ok(&["show", s(&out)]).stdout).into_owned();
    (json, text, tmp)
}

/// The summary matches schema/summary.schema.json (its `ended` and `precondition` included).
fn schema_check(summary: &Value) {
    let schema: Value = serde_json::from_str(include_str!("../schema/summary.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(summary).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "summary does not match schema: {errors:#?}");
}

fn ops(summary: &Value, op: &str) -> u64 {
    summary["ops"][op]["ops"].as_u64().unwrap_or_else(|| panic!("no {op} ops: {}", summary["ops"]))
}

#[test]
fn io_size_shared_by_four_threads_issues_exactly_that_many_bytes_and_ends_the_step_there() {
    let (j, text, _t) = run(&["--rw", "randwrite", "--bs", "4k", "--threads", "4", "--io-size", "8m"]);
    assert_eq!(ops(&j, "write"), 2048, "8 MiB in 4 KiB writes, over the four threads together");
    assert_eq!(j["ops"]["write"]["bytes"], 8 << 20);
    assert_eq!(j["ended"]["by"], "amount", "{}", j["ended"]);
    assert_eq!(j["ended"]["amount"], "io_size 8 MiB");
    // The step's row keeps its real length: seconds, not the 24 h an amount may last.
    assert!(j["duration_s"].as_f64().unwrap() < 600.0, "{}", j["duration_s"]);
    assert!(text.contains("ended    by amount: every workload issued its io_size 8 MiB"), "{text}");
    assert!(
        !j["verdicts"].to_string().contains("shorter-than-planned"),
        "an end by amount is planned: {}",
        j["verdicts"]
    );
}

#[test]
fn number_ios_and_passes_end_each_at_their_count() {
    let (j, _, _t) = run(&["--rw", "randread", "--bs", "4k", "--number-ios", "3000", "--threads", "3"]);
    assert_eq!(ops(&j, "read"), 3000);
    assert_eq!(j["ended"]["by"], "amount");
    // A queueing engine keeps 32 in flight and still issues no more than its count.
    let (j, _, _t) = run(&["--engine", "uring", "--iodepth", "32", "--rw", "randread", "--number-ios", "5000"]);
    assert_eq!(ops(&j, "read"), 5000);
    // Two passes of a sequential read over 16 MiB in 64 KiB reads: 512 reads.
    let (j, _, _t) = run(&["--rw", "read", "--bs", "64k", "--passes", "2"]);
    assert_eq!((ops(&j, "read"), j["ops"]["read"]["bytes"].as_u64()), (512, Some(32 << 20)));
    assert_eq!(j["ended"]["amount"], "passes 2 (32 MiB)");
}

#[test]
fn a_duration_that_comes_first_ends_the_step_and_the_summary_says_the_amount_was_not_issued() {
    let (j, text, _t) =
        run(&["--rw", "randread", "--bs", "4k", "--io-size", "1t", "--duration", "1s", "--rate-iops", "200"]);
    assert_eq!(j["ended"]["by"], "duration", "{}", j["ended"]);
    assert!(ops(&j, "read") < 1000);
    assert!(text.contains("ended    at its planned duration, before the amount (io_size 1 TiB) was issued"), "{text}");
}

#[test]
fn an_amount_on_a_run_of_several_steps_is_refused_with_exit_2_before_any_io() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let o = ioscope()
        .args(["run", "--dir", s(&dir), "--size", "1m", "--staircase", "1-2+1/2s", "--io-size", "1m"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--io-size") && err.contains("io_size on a run of one step"), "{err}");
    assert!(!dir.exists(), "nothing was prepared");
}

#[test]
fn a_fio_job_without_runtime_imports_and_runs_until_it_has_done_size_per_clone_as_fio_does() {
    let tmp = tempfile::tempdir().unwrap();
    let (job, toml, out) = (tmp.path().join("j.fio"), tmp.path().join("w.toml"), tmp.path().join("r.db"));
    let dir = tmp.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(&job, format!("[w]\nrw=randwrite\nbs=4k\nsize=8m\nnumjobs=2\ndirectory={}\n", s(&dir))).unwrap();
    run_ok(&["import", "fio", s(&job), "-o", s(&toml)]);
    run_ok(&["run", s(&toml), "--out", s(&out), "--quiet"]);
    let j = json_of(&run_ok(&["show", "--json", s(&out)]));
    // Each of fio's two clones writes its 8 MiB: 16 MiB in 4 KiB writes.
    assert_eq!(ops(&j, "write"), 4096, "{}", j["ops"]);
    assert_eq!(j["ended"]["by"], "amount");
}
