//! Reports from fixed histograms: no I/O, exact expectations.

use super::*;
use ioscope_metrics::{Counts, OpSeries, Snapshot, WorkerCounts};
use ioscope_store::{RunInfo, Status, StoredRun};
use ioscope_workload::plan::{BlockSize, EngineKind, FileIo, FileSelect, Operation, Plan, SyncMode, Workload};
use std::path::PathBuf;
use std::time::Duration;
use verdict::Severity;

const SCHEMA_FILE: &str = include_str!("../../../schema/summary.schema.json");

fn plan() -> Plan {
    Plan {
        engine: EngineKind::Posix,
        workloads: vec![Workload {
            name: "randrw".into(),
            operation: Operation::Read,
            read_pct: 70,
            block_sizes: vec![BlockSize { bytes: 4096, weight: 1 }],
            fileio: FileIo::Random,
            fileselect: FileSelect::Random,
            threads: 2,
            skew_pct: None,
            pattern: None,
            access: Default::default(),
            content: Default::default(),
            iodepth: None,
            sync: None,
            direct: None,
            rate_iops: None,
            phase: None,
            flow: Vec::new(),
            flow_rate: None,
        }],
        size_bytes: 256 << 20,
        size_default: false,
        files: 1,
        dataset: None,
        filesets: Vec::new(),
        iodepth: 1,
        duration: Duration::from_secs(3),
        warmup: Duration::ZERO,
        steps: Default::default(),
        probes: Vec::new(),
        dir: PathBuf::from("/tmp/x"),
        target: None,
        direct: false,
        sync: SyncMode::None,
        cache: Default::default(),
        rate_iops: None,
        sqpoll: false,
        force: false,
        cleanup: true,
        max_errors: Default::default(),
        breakdown_top: None,
        hosts: Vec::new(),
        on_host_loss: Default::default(),
        host_timeout: ioscope_workload::host::DEFAULT_HOST_TIMEOUT,
        host_share: None,
        checks: Vec::new(),
        warmup_auto: false,
        steady_window_s: None,
        until_steady_s: None,
        amount: Default::default(),
        precondition: None,
        repeat: None,
        until_ci: None,
        verify: Default::default(),
        verify_block: None,
        content: Default::default(),
    }
}
fn hist(values: &[(u64, u64)]) -> Histogram {
    let mut h = Histogram::new();
    for &(v, n) in values {
        h.record_n(v, n);
    }
    h
}

/// 1000 reads: 900 at 2 µs, 90 at 10 µs, 9 at 100 µs, 1 at 1 ms.
fn reads() -> OpInterval {
    let lat = [(2_000, 900), (10_000, 90), (100_000, 9), (1_000_000, 1)];
    OpInterval {
        counts: Counts { ops: 1000, bytes: 4096 * 1000, errors: 0 },
        errors_by_kind: Vec::new(),
        skipped: 0,
        latency_ns: hist(&lat),
        service_ns: hist(&lat.map(|(v, n)| (v / 2, n))),
        size_bytes: hist(&[(4096, 1000)]),
        offset_bytes: hist(&[(0, 500), (1 << 20, 500)]),
    }
}

fn writes(ops: u64, errors: u64) -> OpInterval {
    OpInterval {
        counts: Counts { ops, bytes: 4096 * ops, errors },
        errors_by_kind: if errors > 0 { vec![("EROFS".to_string(), errors)] } else { Vec::new() },
        skipped: 0,
        latency_ns: hist(&[(50_000, ops)]),
        service_ns: hist(&[(40_000, ops)]),
        size_bytes: hist(&[(4096, ops)]),
        offset_bytes: hist(&[(8192, ops)]),
    }
}

fn snap(second: u32, interval_ns: u64, ops: Vec<(&str, OpInterval)>) -> Snapshot {
    Snapshot {
        second,
        interval_ns,
        step: 0,
        warmup: false,
        host: "h1".into(),
        workers: ops.iter().map(|(op, d)| WorkerCounts { worker: 0, op: op_named(op), counts: d.counts }).collect(),
        files: Vec::new(),
        worker_dists: Vec::new(),
        file_dists: Vec::new(),
        not_broken_down: 0,
        ops: ops.into_iter().map(|(op, data)| OpSeries { workload: "randrw".into(), op: op_named(op), data }).collect(),
        worker_cpu: Vec::new(),
    }
}

fn op_named(name: &str) -> Op {
    Op::parse(name).unwrap_or_else(|| panic!("{name} is not an operation"))
}

fn results(status: Status) -> Results {
    let fsync = OpInterval::empty();
    Results {
        path: PathBuf::from("/tmp/r.ioscope"),
        schema_version: 1,
        run: StoredRun {
            info: RunInfo {
                ioscope_version: "0.1.0-test".into(),
                host: "h1".into(),
                pid: 42,
                command_line: "ioscope run w.toml".into(),
                started_unix_ms: 1_700_000_000_000,
                planned_duration_ns: 3_000_000_000,
                plan_json: serde_json::to_string(&plan()).unwrap(),
                workload_toml: "rw = \"randrw\"\n".into(),
                workload_hash: "3f2a9c0d11223344".into(),
            },
            ended_unix_ms: Some(1_700_000_003_000),
            stored_status: status,
            stored_detail: None,
            status,
            status_detail: None,
        },
        hosts: vec![(
            "h1".into(),
            serde_json::json!({"cpu_model": "Test CPU", "cpus": 2, "memory_bytes": 25_125_558_272u64,
                "kernel": "6.18.0", "target": {"fs_type": "ext4",
                "mount_options": "rw,relatime", "mount_point": "/tmp/x"}}),
        )],
        seconds: vec![
            snap(0, 1_000_000_000, vec![("read", reads()), ("write", writes(100, 0)), ("fsync", fsync.clone())]),
            snap(1, 1_000_000_000, vec![("read", reads()), ("write", writes(0, 2)), ("fsync", fsync.clone())]),
            // A stall: the last half second completed nothing.
            snap(2, 500_000_000, vec![("read", OpInterval::empty()), ("write", OpInterval::empty()), ("fsync", fsync)]),
        ],
        steps: Vec::new(),
        probes: Vec::new(),
        target: Vec::new(),
        verification: None,
    }
}

/// A step measured at `iops` with p99 `p99_ns`.
fn step(index: u32, iops: f64, p99_ns: u64) -> StepSummary {
    StepSummary {
        index,
        repeat: 0,
        label: format!("threads={}", index + 1),
        threads: Some(index + 1),
        rate_iops: None,
        seconds: 5,
        measured: PartSummary { iops, latency_p99_ns: Some(p99_ns), ..Default::default() },
    }
}

#[test]
fn io_not_broken_down_by_file_is_said_in_a_note() {
    let mut r = results(Status::Completed);
    let note = |r: &Results| summarize(r, Path::new("r")).notes.into_iter().find(|n| n.contains("per-file data"));
    assert_eq!(note(&r), None);
    r.seconds[1].not_broken_down = 12_345;
    let said = note(&r).expect("a note");
    assert!(said.contains("12,345 I/O not broken down by file") && said.contains("1 s of the run"), "{said}");
}

#[test]
fn knee_is_the_first_step_near_peak_throughput_with_latency_climbing_after_it() {
    // A device that saturates at ~110K IOPS: step 2 reaches 90% of the peak, then p99 climbs.
    let steps = [
        step(0, 60_000.0, 200_000),
        step(1, 90_000.0, 300_000),
        step(2, 104_000.0, 400_000),
        step(3, 110_000.0, 700_000),
        step(4, 109_000.0, 900_000),
    ];
    let knee = find_knee(&steps).expect("a knee");
    assert_eq!((knee.step, knee.label.as_str()), (2, "threads=3"));
    assert!(knee.reason.contains("p99 latency rose to 900 µs (step 4 threads=5, 2.2x)"), "{}", knee.reason);
    // One noisy dip does not make a knee while throughput keeps growing.
    let rising = [step(0, 10_000.0, 100), step(1, 20_000.0, 100), step(2, 19_000.0, 300), step(3, 40_000.0, 300)];
    assert_eq!(find_knee(&rising), None);
    // Throughput flat but latency flat too: a limit, not queueing.
    let flat = [step(0, 100.0, 1000), step(1, 101.0, 1000), step(2, 100.0, 1050)];
    assert_eq!(find_knee(&flat), None);
}

/// A curve step at `rate` asked (None: its max step, with no label), measured at `iops`.
fn curve_step(index: u32, rate: Option<u64>, iops: f64, p99_ns: u64) -> StepSummary {
    let label = rate.map_or(String::new(), |r| format!("rate={}%", r * 100 / 500_000));
    StepSummary { rate_iops: rate, label, threads: None, ..step(index, iops, p99_ns) }
}

#[test]
fn a_curve_knee_orders_the_max_step_last_names_every_step_and_says_p99_in_time_not_a_ratio_of_a_tiny_base() {
    // The seed's curve: step 0 at the max rate (no label) at 1 µs p99 from a page cache,
    // its shares of that rate unreachable, p99 25 s. It said "knee: step 0 (): ... p99
    // latency rose up to 2544538%". The max step is the curve's highest load: no step
    // before it reached 90% of the peak, so there is no knee.
    let seed = [
        curve_step(0, None, 500_000.0, 1_000),
        curve_step(1, Some(250_000), 250_000.0, 30_000_000),
        curve_step(2, Some(450_000), 300_000.0, 25_000_000_000),
    ];
    assert_eq!(find_knee(&seed), None);
    // A curve with a knee: its 90% step, then the max step's queueing.
    let curve = [
        curve_step(0, None, 500_000.0, 2_000_000),
        curve_step(1, Some(250_000), 250_000.0, 200_000),
        curve_step(2, Some(450_000), 455_000.0, 400_000),
    ];
    let knee = find_knee(&curve).expect("a knee");
    assert_eq!((knee.step, knee.label.as_str()), (2, "rate=90%"));
    assert!(knee.reason.contains("p99 latency rose to 2.0 ms (step 0 rate=max, 5.0x)"), "{}", knee.reason);
    assert!(!knee.reason.contains("%)") && !knee.reason.contains("up to"), "{}", knee.reason);
    // The text names the step with its label, never "()".
    let mut s = summarize(&results(Status::Completed), Path::new("r"));
    s.steps = curve.to_vec();
    s.knee = Some(knee);
    let text = render_text(&s);
    assert!(text.contains("knee: step 2 (rate=90%): 455,000 IOPS at p99 400"), "{text}");
    // Below the floor, a rise is noise: 1 µs to 5 µs is no knee.
    let tiny = [step(0, 100_000.0, 1_000), step(1, 101_000.0, 5_000), step(2, 100_500.0, 4_000)];
    assert_eq!(find_knee(&tiny), None);
    // A step without a label is named by its rate.
    let unnamed = [
        StepSummary { label: String::new(), ..step(0, 100_000.0, 100_000) },
        StepSummary { label: String::new(), ..step(1, 101_000.0, 900_000) },
    ];
    assert_eq!(find_knee(&unnamed).expect("a knee").label, "rate=max");
}

fn validate(summary: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value = serde_json::from_str(SCHEMA_FILE).unwrap();
    let v = jsonschema::draft202012::new(&schema).expect("the schema compiles");
    v.iter_errors(summary).map(|e| format!("{} at {}", e, e.instance_path)).collect()
}

#[test]
fn summary_math_comes_from_the_histograms() {
    let s = summarize(&results(Status::Completed), Path::new("/tmp/r.ioscope"));
    assert_eq!(s.schema, SUMMARY_SCHEMA);
    assert_eq!(s.status, "completed");
    assert_eq!(s.duration_s, 2.5);
    assert_eq!(s.seconds, 3);

    assert_eq!(s.ops.keys().collect::<Vec<_>>(), ["read", "write"], "never-used fsync is left out");
    let r = &s.ops["read"];
    assert_eq!((r.ops, r.bytes, r.errors), (2000, 2000 * 4096, 0));
    assert_eq!(r.iops, 800.0);
    assert_eq!(r.bytes_per_sec, 2000.0 * 4096.0 / 2.5);
    let lat = r.percentiles(StatId::Latency).unwrap();
    // Exact: mean (from the sum), min, max. Percentiles: bucket midpoints.
    assert_eq!((lat.mean, lat.min, lat.max), (4_600, 2_000, 1_000_000));
    assert_eq!((lat.p50, lat.p90, lat.p99, lat.p999), (2_003, 2_003, 10_015, 100_095));
    for (got, truth) in [(lat.p50, 2_000), (lat.p90, 2_000), (lat.p99, 10_000), (lat.p999, 100_000)] {
        assert!((got as f64 - truth as f64).abs() / truth as f64 <= s.latency_relative_error);
    }
    assert_eq!(r.percentiles(StatId::ServiceTime).unwrap().max, 500_000);
    assert_eq!(r.range(StatId::Size), Some(&SizeStats { mean: 4096, min: 4096, max: 4096 }));

    let w = &s.ops["write"];
    assert_eq!((w.ops, w.errors, w.iops), (100, 2, 40.0));
    assert_eq!(w.percentiles(StatId::Latency).unwrap().p99, 50_000, "clamped to the exact max");

    assert_eq!(s.total.ops, 2100);
    assert_eq!(s.total.errors, 2);
    assert_eq!(s.total.iops, 840.0);
    assert_eq!(s.total.bytes_per_sec, 2100.0 * 4096.0 / 2.5);
    assert_eq!(s.by_host["h1"], s.total);

    assert_eq!(s.samples.len(), 3);
    assert_eq!((s.samples[0].ops, s.samples[0].iops, s.samples[0].interval_s), (1100, 1100.0, 1.0));
    assert_eq!(s.samples[0].latency_p99_ns, Some(50_047), "reads and writes merged");
    assert_eq!((s.samples[1].ops, s.samples[1].errors, s.samples[1].latency_p99_ns), (1000, 2, Some(10_015)));
    assert_eq!((s.samples[2].ops, s.samples[2].latency_p99_ns, s.samples[2].interval_s), (0, None, 0.5));

    assert_eq!(s.system["h1"]["cpus"], 2);
    assert_eq!(s.workload.plan["workloads"][0]["read_pct"], 70);
    assert_eq!(s.workload.hash, "3f2a9c0d11223344");
    assert_eq!(
        s.notes,
        [
            "2 I/O errors (0.10% of 2,102 attempts: write 2 EROFS): failed operations count as errors, not in IOPS or latency",
            "only 2.5 s measured: too short to tell whether the result is steady (run for minutes, not seconds)",
            "working set 256 MiB is 1.1% of this host's 23.4 GiB RAM and I/O was buffered: reads were likely \
             served from, and writes absorbed by, the page cache",
            "1 of 3 seconds completed no I/O at all (stalls)",
            "99% of the reads completed in less than 10.5 µs, faster than any device or network answers a read of \
             4 KiB (read p50 2.0 µs): they were served from this client's page cache (buffered I/O), so these are \
             memory, not storage, numbers; use --direct or a working set several times the client's memory",
            "measured 2.5 s of the planned 3 s",
        ],
        "the verdicts' messages, most severe first"
    );
    let ids: Vec<(&str, Severity)> = s.verdicts.iter().map(|v| (v.id.as_str(), v.severity)).collect();
    assert_eq!(
        ids,
        [
            ("errors", Severity::Warning),
            ("too-short", Severity::Warning),
            ("working-set-cached", Severity::Warning),
            ("stalls", Severity::Warning),
            ("client-cache", Severity::Warning),
            ("shorter-than-planned", Severity::Info),
        ]
    );
    let errors = &s.verdicts[0].evidence;
    assert_eq!((errors["errors"].as_u64(), errors["attempts"].as_u64()), (Some(2), Some(2102)));
    assert_eq!(errors["errors_by_op_and_kind"]["write"]["EROFS"], 2);
    let cached = &s.verdicts[2].evidence;
    assert_eq!(cached["working_set_bytes"], 256u64 << 20);
    assert!(cached["client_memory_bytes"].as_u64().is_some_and(|m| m > 20 << 30), "{cached:?}");
}

#[test]
fn text_summary_is_aligned_and_carries_the_numbers() {
    let s = summarize(&results(Status::Completed), Path::new("/tmp/r.ioscope"));
    let text = render_text(&s);
    let golden = "\
ioscope 0.1.0-test  completed  2.5 s  results: /tmp/r.ioscope
workload  randrw 70% reads bs 4 KiB threads 2  size 256 MiB x 1 file  qd 1  posix buffered  hash 3f2a9c0d…
op     IOPS  MB/s  lat mean      p50      p90      p99    p99.9      max  errors
read    800   3.3    4.6 µs   2.0 µs   2.0 µs  10.0 µs   100 µs   1.0 ms       0
write  40.0   0.2   50.0 µs  50.0 µs  50.0 µs  50.0 µs  50.0 µs  50.0 µs       2
total   840   3.4                                                              2
errors: write 2 EROFS (2.0%)
latency: response time from intended start; percentiles within ±0.4% (log-linear histogram)
system   Test CPU x2, 23.4 GiB RAM, Linux 6.18.0, ext4 (rw,relatime) on /tmp/x
";
    assert!(text.starts_with(golden), "got:\n{text}\nwant prefix:\n{golden}");
    // The verdicts block: severity first, then the message and the id.
    let block = text.split_once("verdicts (evidence: ioscope show --json)\n").map(|(_, b)| b).unwrap_or_else(|| {
        panic!("no verdicts block in:\n{text}");
    });
    let lines: Vec<&str> = block.lines().take_while(|l| l.starts_with("  ")).collect();
    assert_eq!(lines.len(), s.verdicts.len());
    assert!(lines[0].starts_with("  warning  2 I/O errors"), "{text}");
    assert!(lines[2].starts_with("  warning  working set 256 MiB is 1.1% of this host's 23.4 GiB RAM"), "{text}");
    assert!(lines[2].ends_with(" [working-set-cached]"), "{text}");
}

#[test]
fn text_summary_of_a_run_without_plan_or_ops() {
    let mut r = results(Status::Interrupted);
    r.run.info.plan_json = "not json".into();
    r.run.status_detail = Some("the run stopped without finishing (killed or crashed); 0 seconds kept".into());
    r.seconds.clear();
    r.hosts.clear();
    let s = summarize(&r, Path::new("r"));
    assert_eq!(s.duration_s, 0.0);
    assert_eq!(s.total.iops, 0.0);
    assert!(s.ops.is_empty());
    let text = render_text(&s);
    assert!(text.contains("interrupted  0.0 s"), "{text}");
    assert!(text.contains("workload  hash 3f2a9c0d…"), "{text}");
    assert!(text.contains("  warning  the run was interrupted (the run stopped without finishing"), "{text}");
    assert!(validate(&serde_json::to_value(&s).unwrap()).is_empty());
}

#[test]
fn summary_validates_against_the_schema_file() {
    for status in [Status::Completed, Status::Interrupted, Status::Failed, Status::Running] {
        let mut r = results(status);
        // An operation that only failed has no latency: null, still valid.
        r.seconds[0].ops.push(OpSeries { workload: "randrw".into(), op: Op::Fsync, data: writes(0, 3) });
        let s = summarize(&r, Path::new("/tmp/r.ioscope"));
        assert!(s.ops["fsync"].percentiles(StatId::Latency).is_none());
        let json: serde_json::Value = serde_json::from_str(&render_json(&s)).unwrap();
        let errors = validate(&json);
        assert!(errors.is_empty(), "{status}: {errors:#?}");
        // Required fields the acceptance checks rely on.
        for key in ["schema", "status", "results_file", "duration_s", "total", "ops", "samples", "system", "workload"] {
            assert!(json.get(key).is_some(), "{key}");
        }
        assert!(json["ops"]["read"]["latency_ns"]["p99"].is_u64());
        assert!(json["samples"][0]["latency_p99_ns"].is_u64());
        // The JSON reads back into the same Summary.
        let back: Summary = serde_json::from_value(json).unwrap();
        assert_eq!(back, s);
    }

    // The schema does reject what is wrong.
    let s = summarize(&results(Status::Completed), Path::new("r"));
    let mut json = serde_json::to_value(&s).unwrap();
    json.as_object_mut().unwrap().remove("total");
    json["schema"] = "ioscope.summary/2".into();
    json["ops"]["read"]["latency_ns"]["p99"] = (-1).into();
    assert_eq!(validate(&json).len(), 3, "{:#?}", validate(&json));
}

#[test]
fn csv_has_one_row_per_second() {
    let csv = export_csv(&results(Status::Completed));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 3);
    assert_eq!(
        lines[0],
        "second,step,warmup,interval_s,ops_total,iops,bytes_per_sec,errors,\
         read_iops,read_bytes_per_sec,read_errors,read_lat_mean_ns,read_lat_p50_ns,read_lat_p99_ns,read_lat_max_ns,\
         write_iops,write_bytes_per_sec,write_errors,write_lat_mean_ns,write_lat_p50_ns,write_lat_p99_ns,write_lat_max_ns"
    );
    assert_eq!(
        lines[1],
        "0,0,0,1,1100,1100,4505600,0,1000,4096000,0,4600,2003,10015,1000000,100,409600,0,50000,50000,50000,50000"
    );
    assert_eq!(lines[2], "1,0,0,1,1000,1000,4096000,2,1000,4096000,0,4600,2003,10015,1000000,0,0,2,,,,");
    assert_eq!(lines[3], "2,0,0,0.5,0,0,0,0,0,0,0,,,,,0,0,0,,,,");
    for l in &lines {
        assert_eq!(l.split(',').count(), 22);
    }
}

#[test]
fn json_export_nests_ops_per_second() {
    let v: serde_json::Value = serde_json::from_str(&export_json(&results(Status::Completed))).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["ops_total"], 1100);
    assert_eq!(rows[0]["interval_s"], 1.0);
    assert_eq!(rows[0]["ops"]["read"]["lat_p99_ns"], 10_015);
    assert_eq!(rows[1]["ops"]["write"]["errors"], 2);
    assert_eq!(rows[1]["ops"]["write"]["errors_by_kind"]["EROFS"], 2, "errors by kind, per second");
    assert!(rows[0]["ops"]["write"].get("errors_by_kind").is_none(), "none without errors");
    assert!(rows[1]["ops"]["write"]["lat_p99_ns"].is_null());
    assert!(rows[0]["ops"].get("fsync").is_none());
}

#[test]
fn hosts_merge_per_second_and_report_separately() {
    let mut r = results(Status::Completed);
    let mut other: Vec<Snapshot> = r.seconds.clone();
    for s in &mut other {
        s.host = "h2".into();
    }
    r.seconds.extend(other);
    r.seconds.sort_by(|a, b| (a.second, &a.host).cmp(&(b.second, &b.host)));
    r.hosts.push(("h2".into(), serde_json::json!({"memory_bytes": 1u64 << 27})));
    let s = summarize(&r, Path::new("r"));
    assert_eq!(s.duration_s, 2.5, "hosts run side by side");
    assert_eq!(s.total.iops, 1680.0);
    assert_eq!(s.by_host["h2"].iops, 840.0);
    assert_eq!(s.samples.len(), 3);
    assert_eq!(s.samples[0].ops, 2200);
    assert!(s.notes.iter().any(|n| n.starts_with("working set 256 MiB is 1.1% of host h1's")), "{:#?}", s.notes);
    assert!(
        s.notes.iter().any(|n| n.starts_with("working set 256 MiB is only 2.0x host h2's 128 MiB RAM")),
        "{:#?}",
        s.notes
    );
    let text = render_text(&s);
    assert!(text.contains("\nhost h1 "), "{text}");
    assert!(text.contains("\nsystem   h1: Test CPU x2"), "{text}");
    assert!(text.contains("\n         h2: 128 MiB RAM"), "{text}");
    assert_eq!(export_csv(&r).lines().count(), 4);
}

#[test]
fn a_probed_host_that_applied_no_load_has_no_row_among_the_load_hosts() {
    let mut r = results(Status::Completed);
    let probed = serde_json::json!({"memory_bytes": 1u64 << 30, "probe": {"processes": []}});
    r.hosts.push(("vm".into(), probed));
    let s = summarize(&r, Path::new("r"));
    assert!(!s.hosts.contains_key("vm") && !s.by_host.contains_key("vm"), "{:?}", s.hosts.keys());
    let text = render_text(&s);
    assert!(!text.contains("\nhost vm "), "{text}");
    // Nor is its memory a client's: the working set is not judged against it as one.
    assert!(!s.verdicts.iter().any(|v| v.evidence.get("host").is_some_and(|h| h == "vm")), "{:#?}", s.verdicts);
    // With a second load host, the rows are the two load hosts and not the probed one.
    let mut other: Vec<Snapshot> = r.seconds.clone();
    other.iter_mut().for_each(|x| x.host = "h2".into());
    r.seconds.extend(other);
    r.hosts.push(("h2".into(), serde_json::json!({"memory_bytes": 1u64 << 30})));
    let s = summarize(&r, Path::new("r"));
    assert_eq!(s.hosts.keys().collect::<Vec<_>>(), ["h1", "h2"], "{:?}", s.hosts.keys());
}

#[test]
fn notes_for_direct_null_and_rate_limited_runs() {
    let with_plan = |p: Plan| {
        let mut r = results(Status::Completed);
        r.run.info.plan_json = serde_json::to_string(&p).unwrap();
        summarize(&r, Path::new("r")).notes
    };
    let direct = with_plan(Plan { direct: true, ..plan() });
    assert!(!direct.iter().any(|n| n.contains("page cache")), "{direct:#?}");
    let null = with_plan(Plan { engine: EngineKind::Null, ..plan() });
    assert!(null.iter().any(|n| n.starts_with("engine null performs no I/O")), "{null:#?}");
    assert!(!null.iter().any(|n| n.contains("page cache")));
    let rate = with_plan(Plan { rate_iops: Some(10_000), ..plan() });
    assert!(
        rate.iter().any(|n| n.starts_with("the target rate of 10,000 IOPS was not reached (840 IOPS)")),
        "{rate:#?}"
    );
    let met = with_plan(Plan { rate_iops: Some(800), ..plan() });
    assert!(!met.iter().any(|n| n.contains("target rate")));
}

#[test]
fn open_loop_summary_shows_service_time_under_each_response_time() {
    let mut r = results(Status::Completed);
    r.run.info.plan_json = serde_json::to_string(&Plan { rate_iops: Some(800), ..plan() }).unwrap();
    let text = render_text(&summarize(&r, Path::new("r")));
    let lines: Vec<&str> = text.lines().collect();
    let read = lines.iter().position(|l| l.starts_with("read ")).expect("a read row");
    assert!(lines[read + 1].starts_with("  service "), "{text}");
    assert!(text.contains("(service rows: from issue)"), "{text}");
    // Closed loop: one row per op, as before.
    let closed = render_text(&summarize(&results(Status::Completed), Path::new("r")));
    assert!(!closed.contains("  service"), "{closed}");
}

#[test]
fn errors_show_by_name_skips_apart_and_seconds_of_nothing_but_failures_are_noted() {
    let mut r = results(Status::Failed);
    r.run.status_detail = Some("too many failed I/Os".into());
    let mut w = writes(51, 49);
    w.errors_by_kind = vec![("EROFS".into(), 48), ("EIO".into(), 1)];
    let mut delete = OpInterval::empty();
    delete.skipped = 1_234_567;
    r.seconds = vec![
        snap(0, 1_000_000_000, vec![("write", w), ("delete", delete)]),
        snap(1, 1_000_000_000, vec![("write", writes(0, 5))]),
        snap(2, 1_000_000_000, vec![("write", writes(0, 5))]),
    ];
    let s = summarize(&r, Path::new("r"));
    let write = &s.ops["write"];
    assert_eq!(write.errors, 59);
    assert_eq!(write.errors_by_kind, [("EIO".to_string(), 1), ("EROFS".to_string(), 58)].into());
    assert_eq!(s.ops["delete"].skipped, 1_234_567);
    assert_eq!((s.ops["delete"].ops, s.ops["delete"].errors), (0, 0), "a skip is neither I/O nor error");
    let text = render_text(&s);
    assert!(text.contains("errors: write 58 EROFS (53%), 1 EIO (0.9%)\n"), "{text}");
    for note in [
        "  error    every I/O failed in 2 of 3 seconds (seconds 1 to 2): the target was unusable then",
        "  info     delete: 1,234,567 picks found no file to delete (counted apart: neither I/O nor errors)",
        "  error    59 I/O errors (54% of 110 attempts: write 59 (most EROFS: 58)): failed",
    ] {
        assert!(text.contains(note), "{note}\n{text}");
    }
    assert!(!text.contains("stalls"), "seconds of failures are not stalls: {text}");
    let json: serde_json::Value = serde_json::from_str(&render_json(&s)).unwrap();
    assert_eq!(json["ops"]["write"]["errors_by_kind"]["EROFS"], 58);
    assert_eq!(json["ops"]["delete"]["skipped"], 1_234_567);
    assert!(validate(&json).is_empty(), "{:#?}", validate(&json));
}

#[test]
fn a_late_tick_is_named_as_a_gap_and_a_tick_of_a_few_ms_is_no_stall() {
    let mut r = results(Status::Completed);
    let empty = || vec![("read", OpInterval::empty()), ("write", OpInterval::empty())];
    r.seconds = vec![
        snap(0, 1_000_000_000, vec![("read", reads()), ("write", writes(100, 0))]),
        // Stopped for about 3 s: one tick of its real length, numbered at its end.
        snap(3, 3_200_000_000, vec![("read", reads()), ("write", writes(100, 0))]),
        snap(4, 1_000_000_000, vec![("read", reads()), ("write", writes(100, 0))]),
        snap(5, 1_000_000, empty()),
    ];
    let notes = summarize(&r, Path::new("r")).notes;
    assert!(
        notes.iter().any(|n| n.starts_with("1 of 4 seconds came late, the longest (second 3) covering 3.2 s")),
        "{notes:#?}"
    );
    assert!(!notes.iter().any(|n| n.contains("stalls")), "{notes:#?}");
    assert!(notes.iter().any(|n| n.starts_with("only 5.2 s measured")), "time, not rows: {notes:#?}");
}

#[test]
fn many_threads_per_cpu_without_collector_priority_are_named() {
    let mut r = results(Status::Completed);
    let mut p = plan();
    p.workloads[0].threads = 64;
    r.run.info.plan_json = serde_json::to_string(&p).unwrap();
    r.hosts[0].1["collector_priority"] = serde_json::json!("normal (no permission to raise it)");
    let notes = summarize(&r, Path::new("r")).notes;
    assert!(notes.iter().any(|n| n.starts_with("64 worker threads on 2 CPUs of host h1")), "{notes:#?}");
    r.hosts[0].1["collector_priority"] = serde_json::json!("SCHED_FIFO 2");
    let notes = summarize(&r, Path::new("r")).notes;
    assert!(!notes.iter().any(|n| n.contains("worker threads on")), "{notes:#?}");
}

#[test]
fn a_rate_met_in_attempts_but_short_in_successes_is_named_as_errors_not_saturation() {
    let mut r = results(Status::Completed);
    r.run.info.plan_json = serde_json::to_string(&Plan { rate_iops: Some(1_000), ..plan() }).unwrap();
    // 1,000 I/Os issued each second on schedule, a quarter of them failing.
    r.seconds = (0..3).map(|s| snap(s, 1_000_000_000, vec![("write", writes(750, 250))])).collect();
    let notes = summarize(&r, Path::new("r")).notes;
    assert!(!notes.iter().any(|n| n.contains("target rate")), "{notes:#?}");
    assert!(notes.iter().any(|n| n.starts_with("750 I/O errors")), "{notes:#?}");
    // Fewer attempts than the rate: saturated, whatever failed.
    r.seconds = (0..3).map(|s| snap(s, 1_000_000_000, vec![("write", writes(600, 100))])).collect();
    let notes = summarize(&r, Path::new("r")).notes;
    assert!(notes.iter().any(|n| n.starts_with("the target rate of 1,000 IOPS was not reached")), "{notes:#?}");
}

#[test]
fn planned_warm_up_is_not_a_shortfall_but_a_missing_second_is() {
    let mut r = results(Status::Completed);
    // 2 s of warm-up planned before the 3 s measured: the measured seconds are all there.
    let mut p = plan();
    p.warmup = Duration::from_secs(2);
    r.run.info.plan_json = serde_json::to_string(&p).unwrap();
    r.run.info.planned_duration_ns = 5_000_000_000;
    // Seconds 0 and 1 are the warm-up, stored as such.
    r.seconds = (0..5).map(|i| Snapshot { warmup: i < 2, ..snap(i, 1_000_000_000, vec![("read", reads())]) }).collect();
    let mut s = summarize(&r, Path::new("/tmp/r.ioscope"));
    s.duration_s = 3.0;
    let notes: Vec<String> = crate::notes::notes(&s).into_iter().map(|v| v.message).collect();
    assert!(!notes.iter().any(|n| n.contains("of the planned")), "{notes:?}");
    // One measured second missing is said, with the warm-up named as not counted.
    s.duration_s = 2.0;
    let notes: Vec<String> = crate::notes::notes(&s).into_iter().map(|v| v.message).collect();
    assert!(notes.iter().any(|n| n == "measured 2 s of the planned 3 s (warm-up of 2 s not counted)"), "{notes:?}");
}

mod notes;
mod verdicts;

mod hosts;

mod compare;

mod registry;
mod traps;

#[test]
fn checks_are_evaluated_from_the_summary_figures() {
    use ioscope_workload::check::Check;
    let s = summarize(&results(Status::Completed), Path::new("/tmp/r.ioscope"));
    let eval = |text: &str| crate::check::evaluate(&Check::parse(text).unwrap(), &s, None);
    // read: 800 IOPS, latency p99 10,015 ns (from its histogram), max 1 ms.
    let r = eval("read.latency.p99 < 20us");
    assert!(r.passed, "{r:?}");
    assert_eq!((r.measured, r.threshold, r.unit.as_str()), (Some(10_015.0), 20_000.0, "ns"));
    assert_eq!(r.message, "passed: read latency p99 10.0 µs < 20.0 µs");
    let r = eval("read.latency.max < 1ms");
    assert!(!r.passed && r.message.starts_with("failed: read latency max 1.0 ms < 1.0 ms"), "{r:?}");
    assert!(eval("read.iops >= 800").passed);
    assert!(!eval("read.iops > 800").passed);
    assert!(eval(&format!("total.ops == {}", s.total.ops)).passed);
    assert!(eval("read.service_time.max <= 500us").passed);
    assert_eq!(eval("total.errors == 2").message, "passed: total errors 2 == 2");
    assert_eq!(eval("read.errors < 1").message, "passed: read errors 0 < 1");
    // A figure the run does not have fails, saying why.
    let r = eval("trim.iops > 0");
    assert!(!r.passed && r.measured.is_none() && r.message.contains("no trim operations"), "{r:?}");
}

/// `n` one-second reads, `iops(second)` of them each second.
fn paced(n: u32, iops: impl Fn(u32) -> u64) -> Vec<Snapshot> {
    (0..n)
        .map(|i| {
            let ops = iops(i);
            let mut d = writes(ops, 0);
            d.offset_bytes = hist(&[(0, ops)]);
            // Slower seconds have proportionally longer latency, as a throttle gives.
            d.latency_ns = hist(&[(1_000_000_000 / ops.max(1), ops)]);
            snap(i, 1_000_000_000, vec![("read", d)])
        })
        .collect()
}

#[test]
fn a_run_that_falls_out_of_steady_state_gets_the_verdict_naming_the_second_and_what_changed() {
    let mut r = results(Status::Completed);
    r.seconds = paced(40, |i| if i < 25 { 52_000 } else { 11_000 });
    let s = summarize(&r, Path::new("/tmp/r.ioscope"));
    assert_eq!(s.steady.len(), 1);
    assert_eq!((s.steady[0].state.as_str(), s.steady[0].steady_from_s), ("steady", Some(0)));
    let v: Vec<_> = s.verdicts.iter().filter(|v| v.id == "fell-out-of-steady-state").collect();
    assert_eq!(v.len(), 1, "{:#?}", s.verdicts);
    assert_eq!(v[0].severity, crate::verdict::Severity::Warning);
    assert!(v[0].message.contains("at second 25 IOPS fell from 52,000 to 11,000 (−79%)"), "{}", v[0].message);
    assert!(v[0].message.contains("latency p50 rose from"), "{}", v[0].message);
    assert_eq!(v[0].evidence["second"], 25);
    assert_eq!(v[0].evidence["iops_steady"], 52_000.0);
    assert_eq!(v[0].evidence["iops_after"], 11_000.0);
    assert!(
        render_text(&s).contains("steady   steady from second 0 (window 10 s); fell out at second 25"),
        "{}",
        render_text(&s)
    );
    assert!(
        validate(&serde_json::to_value(&s).unwrap()).is_empty(),
        "{:#?}",
        validate(&serde_json::to_value(&s).unwrap())
    );
    // The same run without the drop: steady, no verdict.
    r.seconds = paced(40, |_| 52_000);
    let s = summarize(&r, Path::new("/tmp/r.ioscope"));
    assert!(s.verdicts.iter().all(|v| !v.id.contains("steady")), "{:#?}", s.verdicts);
}

#[test]
fn a_run_that_swings_every_second_is_not_steady_and_a_short_one_is_not_judged() {
    let mut r = results(Status::Completed);
    r.seconds = paced(30, |i| if i % 2 == 0 { 10_000 } else { 30_000 });
    let s = summarize(&r, Path::new("/tmp/r.ioscope"));
    assert_eq!(s.steady[0].state, "not-steady");
    let v: Vec<_> = s.verdicts.iter().filter(|v| v.id == "not-steady").collect();
    assert_eq!(v.len(), 1, "{:#?}", s.verdicts);
    assert!(v[0].message.starts_with("the run never became steady"), "{}", v[0].message);
    assert_eq!(
        (v[0].evidence["iops_min"].as_f64(), v[0].evidence["iops_max"].as_f64()),
        (Some(10_000.0), Some(30_000.0))
    );
    assert!(validate(&serde_json::to_value(&s).unwrap()).is_empty());
    // Shorter than the window: not judged, and no verdict either way.
    r.seconds = paced(5, |i| if i % 2 == 0 { 10_000 } else { 30_000 });
    let s = summarize(&r, Path::new("/tmp/r.ioscope"));
    assert_eq!(s.steady[0].state, "too-short");
    assert!(s.verdicts.iter().all(|v| !v.id.contains("steady")), "{:#?}", s.verdicts);
}

/// A run of one step repeated 4 times (1 s each, one second between repeats), reads at
/// `per_repeat[r]` times the fixture's 1000 per second.
fn repeated(status: Status, per_repeat: &[u64]) -> Results {
    let mut r = results(status);
    let scaled = |k: u64| {
        let mut d = reads();
        d.counts.ops *= k;
        d.counts.bytes *= k;
        d.latency_ns = hist(&[(2_000 * k, 1000 * k)]);
        d
    };
    r.seconds = per_repeat
        .iter()
        .enumerate()
        .map(|(i, k)| Snapshot { step: i as u32, ..snap(2 * i as u32, 1_000_000_000, vec![("read", scaled(*k))]) })
        .collect();
    r.steps = (0..per_repeat.len() as u32)
        .map(|i| ioscope_store::StepRow {
            index: i,
            repeat: i,
            label: "threads=2".into(),
            threads: Some(2),
            rate_iops: None,
            curve_pct: None,
            start_second: 2 * i,
            warmup_ns: 0,
            duration_ns: 1_000_000_000,
        })
        .collect();
    r
}

#[test]
fn repeats_give_each_figure_per_repeat_with_its_interval_and_a_stopped_run_leaves_its_last_out() {
    let s = summarize(&repeated(Status::Completed, &[1, 2, 3, 4]), Path::new("r.db"));
    let rep = s.repeats.as_ref().expect("a repeats section");
    assert_eq!((rep.count, rep.confidence_pct, rep.stopped.as_str()), (4, 95.0, "count"));
    let step = &rep.steps[0];
    assert_eq!((step.step, step.label.as_str()), (0, "threads=2"));
    let iops = &step.ops["total"]["iops"];
    assert_eq!(iops.values, [1000.0, 2000.0, 3000.0, 4000.0]);
    // Mean 2500, s = 1290.99, t(0.975, 3) = 3.182: half-width 2054.
    assert!((iops.ci_high - 2500.0 - 2054.0).abs() < 1.0, "{iops:?}");
    assert_eq!(step.ops["read"]["latency_p50_ns"].values.len(), 4);
    assert_eq!(step.ops["total"]["bytes_per_sec"].mean, 2500.0 * 4096.0);
    // 1000, 2000, 3000, 4000: a straight climb, named as a trend.
    assert!(step.trend.as_deref().is_some_and(|t| t.contains("IOPS rose")), "{:?}", step.trend);
    // Summary.steps: one per repeat, labelled with it; the text has the block.
    let labels: Vec<(u32, &str)> = s.steps.iter().map(|st| (st.repeat, st.label.as_str())).collect();
    assert_eq!(labels[1], (1, "repeat 1 threads=2"));
    assert!(validate(&serde_json::to_value(&s).unwrap()).is_empty());
    let text = render_text(&s);
    assert!(
        text.contains("repeats: 4 (as asked)") && text.contains("total IOPS 2,500 ± 82.2% (95% CI 446–4,554"),
        "{text}"
    );
    assert!(!text.contains("knee"), "a repeated single step has no knee line: {text}");

    // Interrupted: the last repeat may be partial and is left out.
    let s = summarize(&repeated(Status::Interrupted, &[1, 1, 1, 3]), Path::new("r.db"));
    let rep = s.repeats.expect("three whole repeats");
    assert_eq!((rep.count, rep.stopped.as_str()), (3, "interrupted"));
    assert_eq!(rep.steps[0].ops["total"]["iops"].values, [1000.0; 3]);
    assert!(summarize(&repeated(Status::Interrupted, &[1, 1]), Path::new("r.db")).repeats.is_none());
}

#[test]
fn an_error_verdict_is_said_of_a_failed_run_only_and_a_completed_run_gets_the_same_finding_as_a_warning() {
    // Two failed writes of 2,102: within max_errors the run completed (exit 0), and its
    // verdicts must not say "error"; the same seconds in a failed run (exit 1) do.
    let severity = |status: Status, id: &str| {
        let s = summarize(&results(status), Path::new("/tmp/r.ioscope"));
        s.verdicts.iter().find(|v| v.id == id).map(|v| v.severity)
    };
    assert_eq!(severity(Status::Completed, "errors"), Some(Severity::Warning));
    assert_eq!(severity(Status::Interrupted, "errors"), Some(Severity::Warning));
    assert_eq!(severity(Status::Failed, "errors"), Some(Severity::Error));
    let failed = summarize(&results(Status::Failed), Path::new("/tmp/r.ioscope"));
    assert_eq!(failed.verdicts[0].severity, Severity::Error, "most severe first: {:?}", failed.verdicts[0]);
}
