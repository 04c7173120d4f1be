//! A workload's own iodepth, sync and direct: read into the Plan, checked where written.

use crate::*;
use std::path::PathBuf;

fn src(text: &str) -> SourceFile {
    SourceFile { path: PathBuf::from("job.toml"), text: text.to_string() }
}

fn errors(text: &str) -> Vec<Diagnostic> {
    match validate_file(&src(text)) {
        Ok(p) => panic!("expected errors, got {p:?}"),
        Err(d) => d,
    }
}

fn line_of(d: &Diagnostic) -> usize {
    match &d.origin {
        Origin::File { line, .. } => *line,
        _ => panic!("expected a file diagnostic, got {d}"),
    }
}

const TWO: &str = "engine = \"uring\"\ndir = \"/tmp/x\"\n\n[[workload]]\nname = \"shallow\"\nrw = \"randread\"\niodepth = 4\n\n[[workload]]\nname = \"deep\"\nrw = \"randwrite\"\niodepth = 32\nsync = \"fdatasync\"\ndirect = true\n";

#[test]
fn two_workloads_keep_their_own_iodepth_sync_and_direct() {
    let p = validate_file(&src(TWO)).unwrap_or_else(|d| panic!("{}", render_diagnostics(&d)));
    let (a, b) = (&p.workloads[0], &p.workloads[1]);
    assert_eq!((p.iodepth_of(a), p.iodepth_of(b)), (4, 32));
    assert_eq!((p.sync_of(a), p.sync_of(b)), (SyncMode::None, SyncMode::Fdatasync));
    assert_eq!((p.direct_of(a), p.direct_of(b)), (false, true));
    assert_eq!(p.max_iodepth(), 32);
    // The run's own keys stay the default of a workload that sets none.
    let p = validate_file(&src(&TWO.replace("iodepth = 4\n", "").replace("engine", "iodepth = 8\nengine")))
        .unwrap_or_else(|d| panic!("{}", render_diagnostics(&d)));
    assert_eq!((p.iodepth_of(&p.workloads[0]), p.iodepth_of(&p.workloads[1])), (8, 32));
}

#[test]
fn a_plan_with_per_workload_depths_survives_its_json_and_its_canonical_text() {
    let p = validate_file(&src(TWO)).unwrap();
    // What a coordinator sends an agent: the canonical text, validated again there.
    for text in [TWO, RATED] {
        let p = validate_file(&src(text)).unwrap();
        let again = validate_file(&src(&to_toml(&p))).unwrap_or_else(|d| panic!("{}", render_diagnostics(&d)));
        assert_eq!(again, p);
        assert_eq!(plan_hash(&again), plan_hash(&p));
    }
    let back: Plan = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
    assert_eq!(back, p);
    assert_eq!(back.workloads[1].iodepth, Some(32));
    // A plan written before the keys existed reads with none set.
    let mut v: serde_json::Value = serde_json::to_value(&p).unwrap();
    for w in v["workloads"].as_array_mut().unwrap() {
        let o = w.as_object_mut().unwrap();
        for k in ["iodepth", "sync", "direct"] {
            o.remove(k);
        }
    }
    let old: Plan = serde_json::from_value(v).unwrap();
    assert_eq!(old.workloads[1].iodepth, None);
}

#[test]
fn a_workload_iodepth_out_of_range_is_refused_at_its_line() {
    let d = errors(&TWO.replace("iodepth = 32", "iodepth = 0"));
    assert_eq!(d.len(), 1, "{}", render_diagnostics(&d));
    assert_eq!(line_of(&d[0]), 12, "{}", d[0]);
    // posix is synchronous: depth 1 only, said at the deep workload's line.
    let d = errors(&TWO.replace("engine = \"uring\"", "engine = \"posix\"").replace("direct = true\n", ""));
    let lines: Vec<usize> = d.iter().map(line_of).collect();
    assert_eq!(lines, vec![7, 12], "{}", render_diagnostics(&d));
    assert!(d[1].to_string().contains("at most 1 with engine posix"), "{}", d[1]);
}

#[test]
fn a_workload_sync_on_reads_only_and_a_dataset_depth_are_refused_at_their_lines() {
    let d = errors(&TWO.replace("iodepth = 4\n", "iodepth = 4\nsync = \"fsync\"\n"));
    assert_eq!(d.iter().map(line_of).collect::<Vec<_>>(), vec![8], "{}", render_diagnostics(&d));
    let text = "engine = \"null\"\n[dataset]\ndir = \"/tmp/x\"\n\n[[workload]]\noperation = \"read\"\niodepth = 4\n";
    let d = errors(text);
    assert_eq!(d.iter().map(line_of).collect::<Vec<_>>(), vec![7], "{}", render_diagnostics(&d));
    assert!(d[0].to_string().contains("1 with a [dataset]"), "{}", d[0]);
}

#[test]
fn workload_buffers_add_up_over_workloads_at_their_own_depths() {
    // 64 threads × 1024 × 1 MiB = 64 GiB in each workload, plus the first's.
    let text = "engine = \"uring\"\ndir = \"/tmp/x\"\n\n[[workload]]\nrw = \"read\"\nbs = \"1m\"\nthreads = 64\niodepth = 1024\n\n[[workload]]\nrw = \"write\"\nbs = \"1m\"\nthreads = 64\niodepth = 1024\n";
    let d = errors(text);
    assert!(d.iter().any(|d| line_of(d) == 14 && d.to_string().contains("64 GiB")), "{}", render_diagnostics(&d));
}

const RATED: &str = "engine = \"null\"\n\n[[workload]]\nname = \"log\"\nrw = \"write\"\nrate_iops = 100\n\n[[workload]]\nname = \"data\"\nrw = \"randread\"\nthreads = 2\nrate_iops = 300\n";

#[test]
fn each_workload_runs_at_its_own_rate_iops() {
    let p = validate_file(&src(RATED)).unwrap_or_else(|d| panic!("{}", render_diagnostics(&d)));
    assert_eq!(p.rate_iops, Some(400), "the run's rate is the sum");
    assert_eq!((p.workloads[0].skew_pct, p.workloads[1].skew_pct), (Some(25.0), Some(75.0)));
    assert_eq!((p.workloads[0].rate_iops, p.workloads[1].rate_iops), (Some(100), Some(300)));
}

#[test]
fn a_workload_rate_with_a_run_rate_a_curve_a_skew_or_a_workload_without_is_refused_naming_both() {
    let d = errors(&format!("rate_iops = 50\n{RATED}"));
    assert_eq!(d.iter().map(line_of).collect::<Vec<_>>(), vec![1], "{}", render_diagnostics(&d));
    assert!(d[0].to_string().contains("(line 7)"), "names the workload's line: {}", d[0]);
    let d = errors(&RATED.replace("rate_iops = 100\n", "rate_iops = 100\nskew = 10\n"));
    assert_eq!(d.iter().map(line_of).collect::<Vec<_>>(), vec![7], "{}", render_diagnostics(&d));
    assert!(d[0].to_string().contains("either rate_iops or skew"), "{}", d[0]);
    let d = errors(&RATED.replace("rate_iops = 300\n", ""));
    assert_eq!(d.iter().map(line_of).collect::<Vec<_>>(), vec![9], "{}", render_diagnostics(&d));
    let d = errors(&RATED.replace("rate_iops = 300", "rate_iops = 1"));
    assert_eq!(d.iter().map(line_of).collect::<Vec<_>>(), vec![12], "{}", render_diagnostics(&d));
}
