//! `--probe local` and `ioscope probe`: the target side's series recorded in the run's
//! seconds (the real binary, procfs samplers; eBPF is tested in crates/probe and
//! tests/probe.rs).

use ioscope_metrics::stat::{Dim, StatId};
use ioscope_metrics::TargetValue;
use std::process::Command;

fn ioscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ioscope"))
}

fn count(v: &TargetValue) -> u64 {
    match v {
        TargetValue::Count(n) | TargetValue::Gauge(n) => *n,
        TargetValue::Dist(h) => h.count(),
    }
}

/// What a user sees after `ioscope run ... --probe local`: the machine's CPU, disks and
/// the named process in every second of the run, and in none outside it.
#[test]
fn a_run_with_probe_local_records_the_target_side_in_the_runs_own_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.db");
    let data = dir.path().join("data");
    let status = ioscope()
        .args(["run", "--rw", "randwrite", "--bs", "4k", "--size", "16m", "--duration", "3s", "--quiet"])
        .args(["--dir", data.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .args(["--probe", "local", "--probe-process", "ioscope"])
        .status()
        .unwrap();
    assert!(status.success());
    let r = ioscope_store::open(&out).unwrap();
    let ticks: Vec<u32> = r.seconds.iter().map(|s| s.second).collect();
    assert_eq!(ticks, [0, 1, 2]);
    for t in &r.target {
        let seconds: Vec<u32> = t.samples.iter().map(|s| s.second).collect();
        assert!(
            seconds.iter().all(|s| ticks.contains(s)),
            "{} {:?}: seconds {seconds:?} outside the run's",
            t.stat.stored,
            t.labels
        );
    }
    // CPU time over every CPU and mode is the machine's whole time: CPUs x the seconds
    // sampled (clock ticks of 10 ms make it a little coarse).
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    let cpu: Vec<_> = r.target.iter().filter(|t| t.stat.id == StatId::CpuTime).collect();
    let per_second: Vec<u32> = cpu[0].samples.iter().map(|s| s.second).collect();
    assert_eq!(per_second, ticks, "CPU time in every second of the run");
    let busy_ns: u64 = cpu.iter().flat_map(|t| &t.samples).map(|s| count(&s.value)).sum();
    let sampled_ns: u64 = cpu[0].samples.iter().map(|s| s.interval_ns).sum();
    let ratio = busy_ns as f64 / (cpus * sampled_ns as f64);
    assert!((0.9..1.1).contains(&ratio), "CPU time over all modes is {ratio:.3} of the time sampled");
    // The run's own process did work in user or system mode.
    let own: u64 = r
        .target
        .iter()
        .filter(|t| t.stat.id == StatId::ProcessCpu && t.label(Dim::Process) == "ioscope")
        .flat_map(|t| &t.samples)
        .map(|s| count(&s.value))
        .sum();
    assert!(own > 0, "the ioscope process's CPU time is recorded");
    let probe = &r.hosts[0].1["probe"];
    assert_eq!(probe["processes"], serde_json::json!(["ioscope"]), "{probe}");

    // The summary's target section says the same as the series, and fits the schema.
    let show = ioscope().args(["show", "--json", out.to_str().unwrap()]).output().unwrap();
    let summary: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    let schema: serde_json::Value = serde_json::from_str(include_str!("../schema/summary.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&summary).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "summary does not match schema: {errors:#?}");
    let host = &r.seconds[0].host;
    let target = &summary["target"][host];
    assert_eq!(target["cpus"], serde_json::json!(cpus as u64), "{target}");
    let process_cpu = target["processes"]["ioscope"]["cpu_percent"]["mean"].as_f64().unwrap();
    let own_percent = own as f64 / 1e7 / ticks.len() as f64;
    assert!(
        (process_cpu - own_percent).abs() < 0.05 * own_percent + 1.0,
        "summary {process_cpu} vs series {own_percent}"
    );
    let text = ioscope().args(["show", out.to_str().unwrap()]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("target   {host}: CPU ")), "{text}");
    assert!(text.contains("process ioscope: CPU "), "{text}");
}

#[test]
fn probe_flags_that_name_no_place_or_process_exit_2_naming_the_flag() {
    for (args, expected) in [
        (vec!["--probe", "remote"], "--probe \"remote\": expected local or ssh://[USER@]HOST[:PORT]"),
        (vec!["--probe", "local", "--probe", "local"], "--probe \"local\" is given twice"),
        (vec!["--probe-process", "x"], "--probe-process needs --probe local"),
        (vec!["--probe", "local", "--probe-process", "a/b"], "--probe-process \"a/b\": expected a process name"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = ioscope()
            .args(["run", "--engine", "null", "--duration", "1s", "--dir", dir.path().to_str().unwrap()])
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was created");
    }
}

/// `ioscope probe --out` alone: a file of the target side's seconds, one tick each.
#[test]
fn probe_alone_records_its_seconds_into_a_results_file_the_ui_reads() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("server.db");
    let run = ioscope().args(["probe", "--out", out.to_str().unwrap(), "--duration", "2s"]).output().unwrap();
    assert!(run.status.success());
    let said = String::from_utf8_lossy(&run.stdout);
    assert!(said.contains("target side only (ioscope probe)") && said.contains(": CPU "), "{said}");
    let r = ioscope_store::open(&out).unwrap();
    assert_eq!(r.run.status, ioscope_store::Status::Completed);
    assert_eq!(r.seconds.iter().map(|s| s.second).collect::<Vec<_>>(), [0, 1]);
    let stats: std::collections::BTreeSet<&str> = r.target.iter().map(|t| t.stat.stored).collect();
    for needed in ["cpu.time", "mem.available", "mem.dirty", "mem.page_cache", "net.rx_bytes"] {
        assert!(stats.contains(needed), "{needed} in {stats:?}");
    }
    let again = ioscope().args(["probe", "--out", out.to_str().unwrap(), "--duration", "1s"]).output().unwrap();
    assert_eq!(again.status.code(), Some(2), "never over an existing file");
}
