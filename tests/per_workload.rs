//! Workloads of one run at their own queue depth: the real binary, two workloads of a
//! [[workload]] file, depth 1 and depth 16, each worker really at its own.

use serde_json::Value;

mod common;
#[allow(dead_code)]
mod skip;

use common::run::{json_of, run_ok, s};

/// I/Os in flight on average by Little's law, from a workload's summary: IOPS × p50 latency
/// (the summary has no mean per workload; p50 is close enough for a factor of several).
fn in_flight(w: &Value) -> f64 {
    w["iops"].as_f64().unwrap() * w["latency_p50_ns"].as_f64().unwrap() / 1e9
}

#[test]
fn two_workloads_of_one_run_keep_their_own_iodepth_in_flight() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("two.toml");
    let text = format!(
        "engine = \"uring\"\ndir = \"{}\"\nsize = \"16m\"\n\n[[workload]]\nname = \"shallow\"\nrw = \"randread\"\niodepth = 1\n\n[[workload]]\nname = \"deep\"\nrw = \"randread\"\niodepth = 16\n",
        s(&tmp.path().join("d"))
    );
    std::fs::write(&file, text).unwrap();
    let results = tmp.path().join("r.db");
    let summary = json_of(&run_ok(&["run", s(&file), "--duration", "2s", "--out", s(&results), "--json", "--quiet"]));
    assert_eq!(summary["total"]["errors"], 0, "{summary}");
    let plan = &summary["workload"]["plan"]["workloads"];
    assert_eq!((plan[0]["iodepth"].as_u64(), plan[1]["iodepth"].as_u64()), (Some(1), Some(16)), "{plan}");
    let (shallow, deep) = (in_flight(&summary["workloads"]["shallow"]), in_flight(&summary["workloads"]["deep"]));
    // One I/O at a time cannot keep more than one in flight (a little over for the p50's
    // rounding); sixteen at a time keeps several, whatever the machine's speed.
    assert!(shallow <= 1.5, "depth 1 kept {shallow:.2} in flight: {summary}");
    assert!(deep >= 2.0 && deep > 2.0 * shallow, "depth 16 kept {deep:.2} in flight, depth 1 {shallow:.2}: {summary}");
}

#[test]
fn two_workloads_of_one_run_each_run_at_their_own_rate_iops() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("rated.toml");
    let text = "engine = \"null\"\n\n[[workload]]\nname = \"log\"\nrw = \"write\"\nrate_iops = 100\n\n[[workload]]\nname = \"data\"\nrw = \"randread\"\nthreads = 2\nrate_iops = 300\n";
    std::fs::write(&file, text).unwrap();
    let results = tmp.path().join("r.db");
    let summary = json_of(&run_ok(&["run", s(&file), "--duration", "2s", "--out", s(&results), "--json", "--quiet"]));
    for (w, rate) in [("log", 100.0), ("data", 300.0)] {
        let iops = summary["workloads"][w]["iops"].as_f64().unwrap();
        assert!((iops - rate).abs() <= rate * 0.1, "{w}: {iops} IOPS, its own rate_iops {rate}: {summary}");
    }
}

#[test]
fn for_iodepth_runs_a_step_per_depth_each_keeping_its_own_in_flight() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("depths.toml");
    let text = format!(
        "engine = \"uring\"\ndir = \"{}\"\nsize = \"16m\"\nrw = \"randread\"\nfor_iodepth = [1, 16]\n",
        s(&tmp.path().join("d"))
    );
    std::fs::write(&file, text).unwrap();
    let results = tmp.path().join("r.db");
    let summary = json_of(&run_ok(&["run", s(&file), "--duration", "2s", "--out", s(&results), "--json", "--quiet"]));
    let steps = summary["steps"].as_array().unwrap();
    let labels: Vec<&str> = steps.iter().map(|st| st["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["iodepth=1", "iodepth=16"], "{summary}");
    let (shallow, deep) = (in_flight(&steps[0]), in_flight(&steps[1]));
    assert!(shallow <= 1.5, "depth 1 kept {shallow:.2} in flight: {summary}");
    assert!(deep >= 2.0 && deep > 2.0 * shallow, "depth 16 kept {deep:.2} in flight, depth 1 {shallow:.2}: {summary}");
}
