//! `ioscope run --check`: conditions on a run's figures, evaluated from its summary; a
//! failed check exits 3, a malformed one exits 2 before anything runs.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn ioscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ioscope")).args(args).output().unwrap()
}

/// A 1 s run of the null engine into `out`, with `more` flags (the checks).
fn null_run(out: &Path, more: &[&str]) -> Output {
    let mut args = vec!["run", "--engine", "null", "--duration", "1s", "--quiet", "--out", out.to_str().unwrap()];
    args.extend_from_slice(more);
    ioscope(&args)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn checks_pass_or_fail_on_the_summary_figures_and_a_failed_one_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let checks = ["read.latency.p99 < 1s", "total.errors == 0", "total.iops > 1G", "write.iops > 0"];
    let out = null_run(
        &db,
        &["--json", "--check", checks[0], "--check", checks[1], "--check", checks[2], "--check", checks[3]],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks = summary["checks"].as_array().unwrap();
    let passed: Vec<bool> = checks.iter().map(|c| c["passed"].as_bool().unwrap()).collect();
    assert_eq!(passed, [true, true, false, false], "{checks:#?}");
    // The measured figure is the summary's own.
    let p99 = summary["ops"]["read"]["latency_ns"]["p99"].as_f64().unwrap();
    assert_eq!(checks[0]["measured"].as_f64(), Some(p99));
    assert_eq!(checks[2]["measured"].as_f64(), summary["total"]["iops"].as_f64());
    assert!(checks[3]["measured"].is_null());
    assert!(checks[3]["message"].as_str().unwrap().contains("no write operations"), "{checks:#?}");

    // `show` evaluates the same checks from the results file and prints them.
    let shown = ioscope(&["show", db.to_str().unwrap()]);
    assert!(shown.status.success());
    let shown = text(&shown.stdout);
    assert!(shown.contains("check passed: read latency p99"), "{shown}");
    assert!(shown.contains("check failed: total IOPS"), "{shown}");

    // Every check passing: exit 0.
    let ok = null_run(&dir.path().join("ok.db"), &["--check", "total.ops > 0"]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
}

#[test]
fn a_malformed_check_names_its_column_and_exits_2_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let out = null_run(&db, &["--check", "read.latency.p99 < 2"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("--check 'read.latency.p99 < 2': column 20: expected a time unit"), "{err}");
    assert!(!db.exists(), "nothing is written for a bad check");
}

#[test]
fn check_tables_of_a_workload_file_and_check_flags_are_evaluated_together() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.toml");
    std::fs::write(&file, "engine = \"null\"\nduration = \"1s\"\n[[check]]\nexpr = \"total.errors == 0\"\n").unwrap();
    let db = dir.path().join("r.db");
    let out = ioscope(&[
        "run",
        file.to_str().unwrap(),
        "--quiet",
        "--json",
        "--out",
        db.to_str().unwrap(),
        "--check",
        "read.iops < 1",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks: Vec<(&str, bool)> = summary["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["check"].as_str().unwrap(), c["passed"].as_bool().unwrap()))
        .collect();
    assert_eq!(checks, [("total.errors == 0", true), ("read.iops < 1", false)]);

    // A malformed one in the file: file, line and column, exit 2.
    std::fs::write(&file, "engine = \"null\"\n[[check]]\nexpr = \"total.iops > lots\"\n").unwrap();
    let out = ioscope(&["run", file.to_str().unwrap(), "--quiet", "--out", dir.path().join("b.db").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("w.toml:3:22") && err.contains("a number like"), "{err}");
}
