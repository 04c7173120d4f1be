//! The statistics registry drives every layer: each statistic in it is stored under its
//! name, unit and kind, read back, offered by the API with its unit and label, answers
//! queries by each of its dimensions, and appears in the summary where its kind says.
//! A statistic added to the registry is held to all of this without touching this test.

use ioscope_metrics::stat::{Dim, Kind, Reported, STATS};
use ioscope_metrics::{
    Counts, FileCounts, FileDists, Histogram, Op, OpInterval, OpSeries, Snapshot, WorkerCounts, WorkerCpu, WorkerDists,
};
use ioscope_store::{ProbeRow, RunInfo, Status, Writer};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn hist(values: impl IntoIterator<Item = u64>) -> Histogram {
    let mut h = Histogram::new();
    values.into_iter().for_each(|v| h.record(v));
    h
}

/// One second in which every statistic has a value: reads that complete and fail (two
/// EIO), deletes that find nothing to delete, per worker and per file (counters and
/// distributions).
fn second(n: u32) -> Snapshot {
    let read = OpInterval {
        counts: Counts { ops: 10, bytes: 10 * 4096, errors: 2 },
        errors_by_kind: vec![("EIO".into(), 2)],
        skipped: 0,
        latency_ns: hist((1..=10).map(|i| i * 10_000)),
        service_ns: hist((1..=10).map(|i| i * 9_000)),
        size_bytes: hist((0..10).map(|_| 4096)),
        offset_bytes: hist((0..10).map(|i| i * 4096)),
    };
    let delete = OpInterval { skipped: 3, ..OpInterval::empty() };
    let counts = Counts { ops: 10, bytes: 10 * 4096, errors: 2 };
    Snapshot {
        second: n,
        interval_ns: 1_000_000_000,
        step: 0,
        warmup: false,
        host: "h1".into(),
        worker_dists: vec![WorkerDists { worker: Some(0), op: Op::Read, data: read.clone() }],
        file_dists: vec![FileDists { file: "ioscope.0.dat".into(), op: Op::Read, data: read.clone() }],
        ops: vec![
            OpSeries { workload: String::new(), op: Op::Read, data: read },
            OpSeries { workload: String::new(), op: Op::Delete, data: delete },
        ],
        workers: vec![WorkerCounts { worker: 0, op: Op::Read, counts }],
        files: vec![FileCounts { file: "ioscope.0.dat".into(), op: Op::Read, counts }],
        not_broken_down: 0,
        worker_cpu: vec![WorkerCpu { worker: 0, cpu_ns: 700_000_000, wait_ns: 200_000_000 }],
    }
}

fn probe() -> ProbeRow {
    ProbeRow {
        name: "sync".into(),
        command: "sync".into(),
        at_ns: 500_000_000,
        duration_ns: 2_000_000,
        exit_code: Some(0),
        detail: None,
    }
}

fn write(dir: &Path) -> PathBuf {
    let path = dir.join("r.ioscope");
    let info = RunInfo {
        ioscope_version: "test".into(),
        host: "h1".into(),
        pid: 1,
        command_line: "ioscope run".into(),
        started_unix_ms: 1_700_000_000_000,
        planned_duration_ns: 2_000_000_000,
        plan_json: "{}".into(),
        workload_toml: String::new(),
        workload_hash: "x".into(),
    };
    let mut w = Writer::create(&path, &info, &[("h1".into(), serde_json::json!({}))]).unwrap();
    w.write_second(&second(0)).unwrap();
    w.write_second(&second(1)).unwrap();
    w.write_probe(&probe()).unwrap();
    w.finish(Status::Completed, None, 1_700_000_002_000).unwrap();
    path
}

fn get(api: &ioscope_web::Api, path: &str, query: &str) -> Value {
    let answer = api.get(path, query);
    assert_eq!(answer.status, 200, "{path}?{query}: {}", answer.body);
    answer.json()
}

/// Sum of the `total` of every series of an answer.
fn total(answer: &Value) -> u64 {
    answer["series"].as_array().unwrap().iter().map(|s| s["total"].as_u64().unwrap()).sum()
}

#[test]
fn every_statistic_in_the_registry_is_stored_read_back_offered_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path());
    let written = second(0);
    let results = ioscope_store::open(&path).unwrap();
    let db = rusqlite::Connection::open(&path).unwrap();
    let api = ioscope_web::Api::new(std::slice::from_ref(&path));
    let detail = get(&api, "/api/v1/runs/0", "");
    let summary = serde_json::to_value(ioscope_report::summarize(&results, &path)).unwrap();
    let schema = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/summary.schema.json")).unwrap();

    for stat in STATS {
        let name = stat.name;
        // Stored: under its name with its unit and kind; per worker, file and kind of
        // failure where its dimensions say so. Events have their own table.
        if stat.is_series() {
            let rows = |extra: &str| -> Vec<(String, String)> {
                let sql = format!("SELECT unit, kind FROM series WHERE stat = ?1 {extra}");
                let mut stmt = db.prepare(&sql).unwrap();
                let rows = stmt.query_map([stat.stored], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
                rows.collect::<Result<_, _>>().unwrap()
            };
            let all = rows("");
            assert!(!all.is_empty(), "{name}: no series {}", stat.stored);
            for (unit, kind) in &all {
                assert_eq!((unit.as_str(), kind.as_str()), (stat.unit, stat.kind.name()), "{name}: unit and kind");
            }
            let meta: String =
                db.query_row("SELECT value FROM meta WHERE key = 'statistics'", [], |r| r.get(0)).unwrap();
            let entry = format!("{} ({}, {}): {}", stat.stored, stat.unit, stat.kind.name(), stat.label);
            assert!(meta.contains(&entry), "{name}: meta 'statistics' lists {entry:?}: {meta}");
            for (dim, column) in [(Dim::Worker, "worker"), (Dim::File, "file"), (Dim::Error, "error")] {
                let stored = !rows(&format!("AND {column} IS NOT NULL")).is_empty();
                assert_eq!(stored, stat.has(dim), "{name}: stored per {column} as its dimensions say");
            }
        } else {
            let n: i64 = db.query_row("SELECT count(*) FROM probe", [], |r| r.get(0)).unwrap();
            assert_eq!((stat.kind, n), (Kind::Event, 1), "{name}: events are stored in their table");
        }

        // Read back: the values written, every second.
        for s in &results.seconds {
            for (w, r) in written.ops.iter().zip(&s.ops) {
                assert_eq!(w.op, r.op);
                assert_eq!(w.data.count(stat.id), r.data.count(stat.id), "{name} of {} read back", w.op);
                assert_eq!(w.data.histogram(stat.id), r.data.histogram(stat.id), "{name} of {} read back", w.op);
            }
            assert_eq!(s.workers[0].counts.get(stat.id), written.workers[0].counts.get(stat.id), "{name}");
            assert_eq!(s.files[0].counts.get(stat.id), written.files[0].counts.get(stat.id), "{name}");
        }
        if stat.kind == Kind::Event {
            assert_eq!(results.probes, [probe()], "{name} read back");
        }

        // Offered by the API with its label and unit, and answering by every dimension.
        let offered = detail["stats"].as_array().unwrap().iter().find(|s| s["name"] == name);
        let offered = offered.unwrap_or_else(|| panic!("{name} is not in the run's stats: {}", detail["stats"]));
        assert_eq!(offered["label"], stat.label, "{name}");
        assert_eq!(offered["unit"], stat.answer_unit().as_str(), "{name}");
        assert_eq!(offered["kind"], stat.kind.name(), "{name}");
        let dims: Vec<&str> = stat.dims.iter().map(|d| d.name()).collect();
        assert_eq!(offered["dimensions"], serde_json::json!(dims), "{name}");
        let whole = get(&api, "/api/v1/runs/0/series", &format!("stat={name}"));
        assert_eq!(whole["unit"], stat.answer_unit().as_str(), "{name}");
        assert!(total(&whole) > 0, "{name}: the run's values are answered: {whole}");
        for dim in &dims {
            let by = get(&api, "/api/v1/runs/0/series", &format!("stat={name}&by={dim}"));
            assert_eq!(total(&by), total(&whole), "{name} by {dim}: the parts add up to the whole");
        }
        let heatmap = api.get("/api/v1/runs/0/heatmap", &format!("stat={name}"));
        assert_eq!(heatmap.status == 200, stat.kind == Kind::Distribution, "{name}: heat maps are for distributions");

        // Reported in the summary where its kind says, under a field the schema describes.
        let ops = summary["ops"].as_object().unwrap();
        match stat.reported {
            Reported::Count(field) => {
                let sum: u64 = ops.values().map(|o| o[field].as_u64().unwrap()).sum();
                assert!(sum > 0, "{name}: summary field {field} in {ops:?}");
            }
            Reported::Percentiles(field) => {
                assert!(ops["read"][field]["p99"].as_u64().is_some(), "{name}: summary field {field}: {ops:?}");
            }
            Reported::Range(field) => {
                assert!(ops["read"][field]["max"].as_u64().is_some(), "{name}: summary field {field}: {ops:?}");
            }
            Reported::Events(field) => {
                assert_eq!(summary[field].as_array().map(Vec::len), Some(1), "{name}: summary list {field}");
            }
            Reported::PerSecondOnly => {
                assert!(!ops["read"].as_object().unwrap().keys().any(|k| k.contains(name)), "{name}: not summarized");
                continue;
            }
        }
        let field = match stat.reported {
            Reported::Count(f) | Reported::Percentiles(f) | Reported::Range(f) | Reported::Events(f) => f,
            Reported::PerSecondOnly => unreachable!("continued above"),
        };
        assert!(schema.contains(&format!("\"{field}\"")), "{name}: {field} is in schema/summary.schema.json");
    }
}

#[test]
fn every_statistic_in_the_registry_is_in_the_api_docs_with_its_kind_and_unit() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.md")).unwrap();
    // Rows "| `name` | kind | unit | what |" of a table, up to the first blank line after it.
    let table = |heading: &str| -> Vec<Vec<String>> {
        let after = docs.split(heading).nth(1).unwrap_or_else(|| panic!("docs/api.md has the table {heading:?}"));
        after
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .filter(|l| l.starts_with("| `"))
            .map(|l| l.split('|').map(|c| c.trim().trim_matches('`').to_string()).collect())
            .collect()
    };
    let mut rows = table("Client statistics (`stats[].name`");
    rows.extend(table("Target statistics (`--probe`"));
    let documented: Vec<(&str, &str, &str)> =
        rows.iter().map(|r| (r[1].as_str(), r[2].as_str(), r[3].as_str())).collect();
    let units: Vec<String> = ioscope_metrics::stat::all().map(|s| s.answer_unit()).collect();
    let registry: Vec<(&str, &str, &str)> =
        ioscope_metrics::stat::all().zip(&units).map(|(s, unit)| (s.name, s.kind.name(), unit.as_str())).collect();
    assert_eq!(
        documented, registry,
        "docs/api.md's statistics table (name, kind, unit) is the registry's, in its order"
    );
}

#[test]
fn every_distribution_in_the_registry_is_offered_by_the_plot_help() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ioscope")).args(["plot", "--help"]).output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let line = help.lines().find(|l| l.contains("--stat")).expect("plot --help has --stat");
    for stat in STATS.iter().filter(|s| s.kind == Kind::Distribution) {
        assert!(line.contains(stat.name), "plot --help names {}: {line}", stat.name);
    }
}

/// One second of every target statistic, each with two values of each of its dimensions.
fn target_second(n: u64) -> ioscope_metrics::TargetSecond {
    use ioscope_metrics::{TargetSeries, TargetValue};
    let mut series = Vec::new();
    for stat in ioscope_metrics::TARGET_STATS {
        let dims: Vec<Dim> = stat.dims.iter().copied().filter(|d| *d != Dim::Host).collect();
        // Every combination of two values per dimension ("a", "b").
        for pick in 0..(1u32 << dims.len()) {
            let labels: Vec<(Dim, String)> = dims
                .iter()
                .enumerate()
                .map(|(i, d)| (*d, if pick >> i & 1 == 0 { "a" } else { "b" }.to_string()))
                .collect();
            let value = match stat.kind {
                Kind::Counter => TargetValue::Count(1_000_000 + u64::from(pick)),
                Kind::Gauge => TargetValue::Gauge(4096 * (1 + u64::from(pick))),
                _ => TargetValue::Dist(hist([1000, 2000 + u64::from(pick), 3000])),
            };
            series.push(TargetSeries { stat: stat.id, labels, value });
        }
    }
    ioscope_metrics::TargetSecond { host: "server".into(), second: n, interval_ns: 1_000_000_000, series }
}

/// The target side's registry drives every layer too: each statistic is stored with its
/// side, unit, kind and dimension columns, read back, offered with its side, answers by
/// each of its dimensions with parts that add up to the whole, and draws a heat map when
/// it is a distribution.
#[test]
fn every_target_statistic_is_stored_read_back_offered_and_broken_down_by_its_dimensions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ioscope");
    let info = RunInfo {
        ioscope_version: "test".into(),
        host: "h1".into(),
        pid: 1,
        command_line: "ioscope run".into(),
        started_unix_ms: 1_700_000_000_000,
        planned_duration_ns: 2_000_000_000,
        plan_json: "{}".into(),
        workload_toml: String::new(),
        workload_hash: "x".into(),
    };
    let mut w = Writer::create(&path, &info, &[("h1".into(), serde_json::json!({}))]).unwrap();
    for n in 0..2 {
        w.write_second(&second(n)).unwrap();
        w.write_target(&target_second(u64::from(n))).unwrap();
    }
    w.finish(Status::Completed, None, 1_700_000_002_000).unwrap();
    let results = ioscope_store::open(&path).unwrap();
    let db = rusqlite::Connection::open(&path).unwrap();
    let api = ioscope_web::Api::new(std::slice::from_ref(&path));
    let detail = get(&api, "/api/v1/runs/0", "");
    let written = target_second(0);
    for stat in ioscope_metrics::TARGET_STATS {
        let name = stat.name;
        let (unit, kind, side): (String, String, String) = db
            .query_row("SELECT unit, kind, side FROM series WHERE stat = ?1 LIMIT 1", [stat.stored], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .unwrap();
        assert_eq!((unit.as_str(), kind.as_str(), side.as_str()), (stat.unit, stat.kind.name(), "target"), "{name}");
        for dim in Dim::TARGET {
            let n: i64 = db
                .query_row(
                    &format!("SELECT count(*) FROM series WHERE stat = ?1 AND {} IS NOT NULL", dim.name()),
                    [stat.stored],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(n > 0, stat.has(dim), "{name}: column {} holds its dimension", dim.name());
        }
        // Read back as written, both seconds.
        for w in written.series.iter().filter(|s| s.stat == stat.id) {
            let mut labels = w.labels.clone();
            labels.sort();
            let r = results.target.iter().find(|t| {
                t.stat.id == stat.id && {
                    let mut l = t.labels.clone();
                    l.sort();
                    l == labels
                }
            });
            let r = r.unwrap_or_else(|| panic!("{name} {labels:?} read back"));
            assert_eq!(r.samples.len(), 2, "{name}");
            assert_eq!(r.samples[0].value, w.value, "{name} {labels:?}");
        }
        let offered = detail["stats"].as_array().unwrap().iter().find(|s| s["name"] == name);
        let offered = offered.unwrap_or_else(|| panic!("{name} is not in the run's stats"));
        assert_eq!(
            (offered["side"].as_str(), offered["unit"].as_str()),
            (Some("target"), Some(stat.answer_unit().as_str()))
        );
        let whole = get(&api, "/api/v1/runs/0/series", &format!("stat={name}"));
        let sum = |a: &Value| -> f64 {
            a["series"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| match stat.kind {
                    Kind::Gauge => s["mean"].as_f64().unwrap(),
                    _ => s["total"].as_f64().unwrap(),
                })
                .sum()
        };
        assert!(sum(&whole) > 0.0, "{name}: answered: {whole}");
        for dim in stat.dims {
            let by = get(&api, "/api/v1/runs/0/series", &format!("stat={name}&by={}", dim.name()));
            assert_eq!(sum(&by), sum(&whole), "{name} by {}: the parts add up to the whole", dim.name());
            if *dim != Dim::Host {
                let one = get(&api, "/api/v1/runs/0/series", &format!("stat={name}&where={}:a", dim.name()));
                assert!(sum(&one) > 0.0 && sum(&one) < sum(&whole), "{name} where {}:a is a part", dim.name());
            }
        }
        let heatmap = api.get("/api/v1/runs/0/heatmap", &format!("stat={name}"));
        assert_eq!(heatmap.status == 200, stat.kind == Kind::Distribution, "{name}: heat maps are for distributions");
    }
}
