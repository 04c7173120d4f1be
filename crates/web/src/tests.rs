//! Queries, API answers and the report over a small results file written for the test.

use crate::api::{parse_query, query_path, Api};
use crate::query::{self, Query};
use ioscope_metrics::{
    Counts, FileCounts, FileDists, Histogram, Op, OpInterval, OpSeries, Snapshot, WorkerCounts, WorkerDists, OTHER,
};
use ioscope_store::{ProbeRow, RunInfo, Status, Writer};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn hist(values: impl IntoIterator<Item = u64>) -> Histogram {
    let mut h = Histogram::new();
    values.into_iter().for_each(|v| h.record(v));
    h
}

/// `n` operations with latencies base, base+1000, ...
fn interval(n: u64, base_ns: u64, size: u64) -> OpInterval {
    part(0..n, base_ns, size)
}

/// Operations `range` of [`interval`]: the parts of a breakdown add up to the whole.
fn part(range: std::ops::Range<u64>, base_ns: u64, size: u64) -> OpInterval {
    let n = range.end - range.start;
    OpInterval {
        counts: Counts { ops: n, bytes: n * size, errors: 0 },
        errors_by_kind: Vec::new(),
        skipped: 0,
        latency_ns: hist(range.clone().map(|i| base_ns + i * 1000)),
        service_ns: hist(range.clone().map(|i| base_ns / 2 + i * 1000)),
        size_bytes: hist(range.clone().map(|_| size)),
        offset_bytes: hist(range.map(|i| i * size)),
    }
}

fn snapshot(second: u32, host: &str) -> Snapshot {
    let reads = 100 + second as u64;
    Snapshot {
        second,
        interval_ns: if second == 1 { 500_000_000 } else { 1_000_000_000 },
        step: second / 2,
        warmup: second == 0,
        host: host.into(),
        ops: vec![
            OpSeries { workload: "w".into(), op: Op::Read, data: interval(reads, 10_000, 4096) },
            OpSeries { workload: "w".into(), op: Op::Write, data: interval(50, 2_000_000, 65536) },
        ],
        workers: vec![
            WorkerCounts { worker: 0, op: Op::Read, counts: Counts { ops: reads - 40, bytes: 0, errors: 0 } },
            WorkerCounts { worker: 1, op: Op::Read, counts: Counts { ops: 40, bytes: 0, errors: 0 } },
            WorkerCounts { worker: 1, op: Op::Write, counts: Counts { ops: 30, bytes: 0, errors: 0 } },
            WorkerCounts { worker: 2, op: Op::Write, counts: Counts { ops: 20, bytes: 0, errors: 0 } },
        ],
        files: vec![
            FileCounts { file: "f0".into(), op: Op::Read, counts: Counts { ops: reads - 10, bytes: 0, errors: 0 } },
            FileCounts { file: "f1".into(), op: Op::Read, counts: Counts { ops: 10, bytes: 0, errors: 0 } },
            FileCounts { file: "f1".into(), op: Op::Write, counts: Counts { ops: 30, bytes: 0, errors: 2 } },
            FileCounts { file: "f2".into(), op: Op::Write, counts: Counts { ops: 15, bytes: 0, errors: 0 } },
            FileCounts { file: "f3".into(), op: Op::Write, counts: Counts { ops: 5, bytes: 0, errors: 0 } },
        ],
        // The two busiest workers and files of each op (breakdown_top = 2), the rest as
        // "(other)": writes go to f1, f2 and f3, which is "(other)".
        worker_dists: vec![
            WorkerDists { worker: Some(0), op: Op::Read, data: part(0..reads - 40, 10_000, 4096) },
            WorkerDists { worker: Some(1), op: Op::Read, data: part(reads - 40..reads, 10_000, 4096) },
            WorkerDists { worker: Some(1), op: Op::Write, data: part(0..30, 2_000_000, 65536) },
            WorkerDists { worker: Some(2), op: Op::Write, data: part(30..50, 2_000_000, 65536) },
        ],
        file_dists: vec![
            FileDists { file: "f0".into(), op: Op::Read, data: part(0..reads - 10, 10_000, 4096) },
            FileDists { file: "f1".into(), op: Op::Read, data: part(reads - 10..reads, 10_000, 4096) },
            FileDists { file: "f1".into(), op: Op::Write, data: part(0..30, 2_000_000, 65536) },
            FileDists { file: "f2".into(), op: Op::Write, data: part(30..45, 2_000_000, 65536) },
            FileDists { file: OTHER.into(), op: Op::Write, data: part(45..50, 2_000_000, 65536) },
        ],
        not_broken_down: 0,
        worker_cpu: Vec::new(),
    }
}

/// Seconds 0..4 on hosts a and b, except that host b misses second 2 and nobody has second 3.
pub(crate) fn write_results(dir: &Path) -> PathBuf {
    let path = dir.join("r.ioscope");
    let info = RunInfo {
        ioscope_version: "test".into(),
        host: "a".into(),
        pid: 1,
        command_line: "ioscope run".into(),
        started_unix_ms: 1_700_000_000_000,
        planned_duration_ns: 5_000_000_000,
        plan_json: "{}".into(),
        workload_toml: String::new(),
        workload_hash: "x".into(),
    };
    let hosts = vec![("a".to_string(), serde_json::json!({"cpus": 2})), ("b".to_string(), serde_json::json!({}))];
    let mut w = Writer::create(&path, &info, &hosts).unwrap();
    for second in [0, 1, 2, 4] {
        w.write_second(&snapshot(second, "a")).unwrap();
        if second != 2 {
            w.write_second(&snapshot(second, "b")).unwrap();
        }
    }
    let probe = |at_ns, duration_ns| ProbeRow {
        name: "sync".into(),
        command: "sync".into(),
        at_ns,
        duration_ns,
        exit_code: Some(0),
        detail: None,
    };
    w.write_probe(&probe(1_200_000_000, 300_000_000)).unwrap();
    w.write_probe(&probe(4_100_000_000, 700_000_000)).unwrap();
    w.finish(Status::Completed, None, 1_700_000_005_000).unwrap();
    path
}

fn results() -> (tempfile::TempDir, ioscope_store::Results) {
    let dir = tempfile::tempdir().unwrap();
    let path = write_results(dir.path());
    let r = ioscope_store::open(&path).unwrap();
    (dir, r)
}

fn q(stat: &str, by: Option<&str>, filter: &str) -> Query {
    let mut q = Query::new(stat).unwrap();
    if let Some(b) = by {
        q = q.by(b).unwrap();
    }
    q.filter(filter).unwrap()
}

/// The /heatmap answer as a JSON value.
fn heatmap(r: &ioscope_store::Results, q: &Query) -> Result<Value, query::QueryError> {
    Ok(serde_json::to_value(query::heatmap(r, q)?).expect("an answer is JSON"))
}

/// The /series answer as a JSON value.
fn series(r: &ioscope_store::Results, q: &Query) -> Value {
    serde_json::to_value(query::series(r, q)).expect("an answer is JSON")
}

fn series_values(v: &Value, key: &str) -> Vec<Option<f64>> {
    let s = v["series"].as_array().unwrap().iter().find(|s| s["key"] == key).unwrap_or_else(|| panic!("no {key}"));
    s["values"].as_array().unwrap().iter().map(|x| x.as_f64()).collect()
}

#[test]
fn counter_breakdowns_sum_to_the_whole_and_rates_use_each_interval() {
    let (_d, r) = results();
    let all = series(&r, &q("ops", None, ""));
    let by_op = series(&r, &q("ops", Some("op"), ""));
    let total = series_values(&all, "all");
    let (reads, writes) = (series_values(&by_op, "read"), series_values(&by_op, "write"));
    for i in 0..total.len() {
        match total[i] {
            Some(t) => assert!((t - reads[i].unwrap() - writes[i].unwrap()).abs() < 1e-6, "second {i}"),
            None => assert!(reads[i].is_none() && writes[i].is_none()),
        }
    }
    // Second 1 lasted 0.5 s on both hosts: 101 reads each is 202/s per host.
    assert_eq!(reads[1], Some(404.0));
    // Second 3 was never stored: null, not zero.
    assert_eq!(total[3], None);
    assert_eq!(all["seconds"], serde_json::json!([0, 1, 2, 3, 4]));
    assert_eq!(all["warmup"][0], true);
    assert_eq!(all["step"][4], 2);
    // Host b has no second 2: only host a's 102 reads.
    let b = series(&r, &q("ops", Some("host"), "op:read"));
    assert_eq!(series_values(&b, "a")[2], Some(102.0));
    assert_eq!(series_values(&b, "b")[2], Some(0.0));
}

#[test]
fn filters_narrow_and_repeat_as_alternatives() {
    let (_d, r) = results();
    let writes = series(&r, &q("ops", None, "op:write"));
    assert_eq!(writes["series"][0]["total"], 7 * 50);
    let both = series(&r, &q("ops", None, "op:write;op:read"));
    let all = series(&r, &q("ops", None, ""));
    assert_eq!(both["series"][0]["total"], all["series"][0]["total"]);
    let one_host = series(&r, &q("ops", None, "op:write;host:b"));
    assert_eq!(one_host["series"][0]["total"], 3 * 50);
    assert_eq!(one_host["where"], "op:write;host:b");
}

#[test]
fn workers_come_from_per_worker_counts_and_cannot_be_split_by_workload() {
    let (_d, r) = results();
    let v = series(&r, &q("ops", Some("worker"), "op:read"));
    let keys: Vec<&str> = v["series"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["0", "1"]);
    assert_eq!(v["series"][1]["total"], 7 * 40);
    let err = Query::new("ops").unwrap().by("worker").unwrap().filter("workload:w").unwrap_err().to_string();
    assert!(err.contains("worker and workload"), "{err}");
    let err = Query::new("latency").unwrap().by("worker").unwrap().filter("workload:w").unwrap_err().to_string();
    assert!(err.contains("worker and workload"), "{err}");
    let err = Query::new("iops").unwrap_err().to_string();
    assert!(err.contains("unknown statistic \"iops\"") && err.contains("latency"), "{err}");
}

#[test]
fn files_come_from_per_file_counts() {
    let (_d, r) = results();
    let v = series(&r, &q("ops", Some("file"), "op:write"));
    let keys: Vec<&str> = v["series"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["f1", "f2", "f3"], "three files were written");
    assert_eq!(v["series"][0]["total"], 7 * 30);
    let errors = series(&r, &q("errors", Some("file"), ""));
    assert_eq!(series_values(&errors, "f1")[4], Some(4.0), "2 errors a second on each of two hosts");
    let err = Query::new("ops").unwrap().by("file").unwrap().filter("worker:1").unwrap_err().to_string();
    assert!(err.contains("worker and file cannot be combined"), "{err}");
    assert!(Query::new("latency").unwrap().by("file").unwrap().filter("worker:1").is_err());
}

#[test]
fn latency_size_and_offset_break_down_by_file_and_worker_and_the_parts_add_up_to_the_whole() {
    let (_d, r) = results();
    let keys = |v: &Value| -> Vec<String> {
        v["series"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap().to_string()).collect()
    };
    let totals =
        |v: &Value| -> u64 { v["series"].as_array().unwrap().iter().map(|s| s["total"].as_u64().unwrap()).sum() };
    for stat in ["latency", "service_time", "size", "offset"] {
        let whole = series(&r, &q(stat, None, "op:write"));
        let by_file = series(&r, &q(stat, Some("file"), "op:write"));
        assert_eq!(keys(&by_file), ["f1", "f2", OTHER], "{stat}: the busiest files, then the rest");
        assert_eq!(totals(&by_file), totals(&whole), "{stat} by file adds up to the whole");
        let by_worker = series(&r, &q(stat, Some("worker"), ""));
        assert_eq!(keys(&by_worker), ["0", "1", "2"], "{stat}");
        assert_eq!(totals(&by_worker), totals(&series(&r, &q(stat, None, ""))), "{stat} by worker adds up");
    }
    // "(other)" is a value like any other; one file's latency is its own.
    let other = series(&r, &q("latency", None, "op:write;file:(other)"));
    assert_eq!(other["series"][0]["total"], 7 * 5);
    let f1 = series(&r, &q("latency", None, "file:f1;op:write"));
    assert_eq!(f1["series"][0]["max"][0], 2_000_000 + 29 * 1000, "the slowest of writes 0..30, f1's");
    // Heat maps too: every second's cells of the files add up to the op's.
    let map = |by: Option<&str>, width: Option<u32>| -> Value {
        let query = q("latency", by, "op:write");
        match width {
            Some(w) => serde_json::to_value(crate::columns::heatmap(&r, &query, w).unwrap()).unwrap(),
            None => heatmap(&r, &query).unwrap(),
        }
    };
    let column_sums = |v: &Value| -> Vec<u64> {
        let series = v["series"].as_array().unwrap();
        let n = series[0]["columns"].as_array().unwrap().len();
        let cells = |s: &Value, i: usize| -> u64 {
            s["columns"][i].as_array().unwrap().chunks(2).map(|c| c[1].as_u64().unwrap()).sum()
        };
        (0..n).map(|i| series.iter().map(|s| cells(s, i)).sum()).collect()
    };
    for width in [None, Some(2)] {
        let (whole, parts) = (map(None, width), map(Some("file"), width));
        assert_eq!(keys(&parts), ["f1", "f2", OTHER]);
        assert_eq!(column_sums(&parts), column_sums(&whole), "column_seconds {width:?}");
    }
    // The statistic list says which dimensions each statistic has, for the UI to offer.
    let stats = query::stat_list(&r);
    let latency = stats.iter().find(|s| s.name == "latency").unwrap();
    assert_eq!(latency.dimensions, ["op", "workload", "host", "step", "worker", "file"]);
    assert_eq!(query::dimension_values(&r).file, ["f0", "f1", "f2", "f3", OTHER]);
}

#[test]
fn percentiles_come_from_merged_histograms() {
    let (_d, r) = results();
    let v = series(&r, &q("latency", Some("op"), "step:2"));
    let read = v["series"].as_array().unwrap().iter().find(|s| s["key"] == "read").unwrap();
    // Second 4 on two hosts: 104 reads each at 10 us + i us, i < 104; p50 is ~61.5 us.
    let p50 = read["p50"][4].as_f64().unwrap();
    assert!((p50 - 61_000.0).abs() / 61_000.0 < 0.01, "p50 {p50}");
    assert_eq!(read["count"][4], 208);
    assert_eq!(read["max"][4], 113_000);
    assert_eq!(read["count"][0], Value::Null, "second 0 is in step 0, filtered out");
}

#[test]
fn heat_map_cells_add_up_and_name_their_bucket_bounds() {
    let (_d, r) = results();
    let v = heatmap(&r, &q("latency", Some("op"), "")).unwrap();
    let buckets = v["buckets"].as_array().unwrap();
    let lows: Vec<u64> = buckets.iter().map(|b| b[0].as_u64().unwrap()).collect();
    assert!(lows.windows(2).all(|w| w[0] < w[1]), "buckets ascend");
    for s in v["series"].as_array().unwrap() {
        let mut sum = 0;
        for col in s["columns"].as_array().unwrap() {
            for pair in col.as_array().unwrap().chunks(2) {
                assert!((pair[0].as_u64().unwrap() as usize) < buckets.len());
                sum += pair[1].as_u64().unwrap();
            }
        }
        assert_eq!(s["total"].as_u64(), Some(sum));
    }
    let write = v["series"].as_array().unwrap().iter().find(|s| s["key"] == "write").unwrap();
    let first = &write["columns"][0];
    let lo = buckets[first[0].as_u64().unwrap() as usize][0].as_u64().unwrap();
    assert!((1_984_000..=2_000_000).contains(&lo), "the fastest write (2 ms) is in bucket from {lo}");
    assert_eq!(v["series"][0]["columns"][3], serde_json::json!([]), "no second 3");
    assert!(heatmap(&r, &q("ops", None, "")).unwrap_err().to_string().contains("not a distribution"));
}

#[test]
fn probe_durations_sit_at_the_second_they_started() {
    let (_d, r) = results();
    let v = series(&r, &q("probe", Some("probe"), ""));
    assert_eq!(series_values(&v, "sync"), [None, Some(3e8), None, None, Some(7e8)]);
}

#[test]
fn the_api_routes_answers_and_refuses_with_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_results(dir.path());
    let api = Api::new(&[path]);
    let runs = api.get("/api/v1/runs", "");
    assert_eq!(runs.status, 200);
    assert_eq!(runs.json()["runs"][0]["last_second"], 4);
    assert_eq!(runs.json()["runs"][0]["live"], false);
    let detail = api.get("/api/v1/runs/0", "");
    assert_eq!(detail.json()["dimensions"]["host"], serde_json::json!(["a", "b"]));
    assert_eq!(detail.json()["summary"]["schema"], "ioscope.summary/1");
    assert!(detail.json()["stats"].as_array().unwrap().iter().any(|s| s["name"] == "probe"));
    let ok = api.get("/api/v1/runs/0/heatmap", "stat=size&by=op&where=host%3Ab");
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.json()["where"], "host:b");
    let bad = api.get("/api/v1/runs/0/series", "stat=latency&by=error");
    assert_eq!(bad.status, 400);
    assert!(bad.json()["error"].as_str().unwrap().contains("latency cannot be broken down by error"));
    assert_eq!(api.get("/api/v1/runs/0/series", "stat=ops&by=disk").status, 400);
    assert_eq!(api.get("/api/v1/runs/7", "").status, 404);
    assert_eq!(api.get("/api/v1/nothing", "").status, 404);
    assert_eq!(api.get("/api/v1/runs/0/series", "stat=ops&from=x").status, 400);
}

#[test]
fn query_paths_match_the_uis_encoding() {
    assert_eq!(
        query_path("0", "heatmap", "latency", Some("op"), "op:write;host:my host"),
        "/api/v1/runs/0/heatmap?stat=latency&by=op&where=op:write;host:my%20host&encoding=packed"
    );
    let decoded = parse_query("where=op:write;host:my%20host&stat=ops");
    assert_eq!(decoded[0], ("where".to_string(), "op:write;host:my host".to_string()));
}

#[test]
fn the_report_embeds_its_data_and_needs_no_server() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_results(dir.path());
    let html = crate::report::render(&path).unwrap();
    assert!(html.contains("window.IOSCOPE_EMBEDDED = {"));
    assert!(!html.contains("src=\"/assets/") && !html.contains("href=\"/assets/"), "no server paths left");
    assert!(!html.contains("type=\"module\""), "module scripts do not load from file://");
    for key in ["/api/v1/runs/0/series?stat=ops&by=op", "/api/v1/runs/0/heatmap?stat=latency&by=op&encoding=packed"] {
        assert!(html.contains(&format!("\"{key}\"")), "{key} not embedded");
    }
}

/// The drill menu of a report offers what it embeds: each operation's own I/O, every
/// statistic whole (heat maps too) and by the other dimensions.
#[test]
fn the_report_embeds_each_operations_own_io_for_the_drill_menu() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_results(dir.path());
    let html = crate::report::render(&path).unwrap();
    for key in [
        "/api/v1/runs/0/heatmap?stat=latency&where=op:write&encoding=packed",
        "/api/v1/runs/0/heatmap?stat=size&where=op:read&encoding=packed",
        "/api/v1/runs/0/series?stat=offset&where=op:write",
        "/api/v1/runs/0/series?stat=ops&by=host&where=op:write",
    ] {
        assert!(html.contains(&format!("\"{key}\"")), "{key} not embedded");
    }
}

#[test]
fn the_plot_is_a_png_of_the_asked_size() {
    let (_d, r) = results();
    let opts = crate::plot::PlotOptions { width: 600, panel_height: 200 };
    let png = crate::plot::render(&r, &q("latency", Some("op"), ""), &opts).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (600, 2 * (200 + 30) + 26 + 26), "two panels, one per op, a time axis and a legend");
    let err = crate::plot::render(&r, &q("latency", None, "op:fsync"), &opts).unwrap_err();
    assert_eq!(err.to_string(), format!("no latency values recorded in {}", r.path.display()));
}

/// Typed errors read as the messages users of `ioscope plot` and the API have seen.
#[test]
fn plot_and_run_errors_keep_their_messages() {
    use crate::plot::{render, PlotOptions, MAX_PIXELS};
    let (_d, r) = results();
    let huge = PlotOptions { width: 8192, panel_height: 4096 };
    assert_eq!(
        render(&r, &q("latency", Some("host"), ""), &huge).unwrap_err().to_string(),
        format!(
            "2 panels of 4096 px at width 8192 make an image of 8192x8304 pixels; at most {MAX_PIXELS} (draw fewer \
             panels with --where, or lower --height or --width)"
        )
    );
    let opts = PlotOptions { width: 600, panel_height: 200 };
    assert_eq!(
        render(&r, &q("ops", None, ""), &opts).unwrap_err().to_string(),
        "ops is not a distribution; heat maps are for latency, service_time, size, offset, block_latency, block_size, \
             block_offset and syscall_latency"
    );
    let api = Api::new(&[]);
    assert_eq!(api.find("0").err().unwrap().to_string(), "no run \"0\" (no runs are served)");
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let api = Api::new(&[write_results(a.path()), write_results(b.path())]);
    assert_eq!(api.find("x7").err().unwrap().to_string(), "no run \"x7\" (expected a run id from 0 to 1)");
    assert_eq!(api.get("/api/v1/runs/9", "").json()["error"], "no run \"9\" (expected a run id from 0 to 1)");
}

fn get(port: u16, target: &str, cookie: Option<&str>) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let cookie = cookie.map(|c| format!("Cookie: {c}\r\n")).unwrap_or_default();
    write!(s, "GET {target} HTTP/1.1\r\nConnection: close\r\nHost: 127.0.0.1:{port}\r\n{cookie}\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    (out[9..12].parse().unwrap(), out)
}

#[test]
fn off_loopback_every_request_needs_the_token() {
    let dir = tempfile::tempdir().unwrap();
    let api = Api::new(&[write_results(dir.path())]);
    let server = crate::Server::start("0.0.0.0:0".parse().unwrap(), api).unwrap();
    let (port, token) = (server.addr.port(), server.token.clone().expect("a token off loopback"));
    assert_eq!(token.len(), 32);
    assert_eq!(get(port, "/api/v1/runs", None).0, 401);
    assert_eq!(get(port, "/api/v1/runs?token=wrong", None).0, 401);
    let (status, page) = get(port, &format!("/?token={token}"), None);
    assert_eq!(status, 200);
    assert!(page.contains(&format!("Set-Cookie: ioscope_token={token};")));
    assert_eq!(get(port, "/api/v1/runs", Some(&format!("ioscope_token={token}"))).0, 200);
    server.stop();

    let local = crate::Server::start("127.0.0.1:0".parse().unwrap(), Api::new(&[])).unwrap();
    assert!(local.token.is_none());
    assert_eq!(get(local.addr.port(), "/api/v1/runs", None).0, 200);
    assert_eq!(get(local.addr.port(), "/assets/../../etc/passwd", None).0, 404);
    local.stop();
}

#[test]
fn errors_break_down_by_kind_and_the_kinds_sum_to_the_whole() {
    let (_dir, mut r) = results();
    for s in &mut r.seconds {
        let write = &mut s.ops[1].data;
        write.counts.errors = 5;
        write.errors_by_kind = vec![("EROFS".into(), 3), ("short write".into(), 1)]; // 1 of no recorded kind
        s.ops[0].data.skipped = 7;
    }
    let by_error = series(&r, &q("errors", Some("error"), ""));
    let totals: Vec<(String, u64)> = by_error["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["key"].as_str().unwrap().to_string(), s["total"].as_u64().unwrap()))
        .collect();
    let n = r.seconds.len() as u64;
    assert_eq!(totals, [("EROFS".into(), 3 * n), ("short write".into(), n), ("unrecorded".into(), n)]);
    let whole = series(&r, &q("errors", None, ""));
    assert_eq!(whole["series"][0]["total"].as_u64(), Some(5 * n));
    // Filtered to one kind, by op.
    let erofs = series(&r, &q("errors", Some("op"), "error:EROFS"));
    assert_eq!(erofs["series"][0]["key"], "write");
    assert_eq!(erofs["series"][0]["total"].as_u64(), Some(3 * n));
    // Skips are their own counter.
    let skipped = series(&r, &q("skipped", Some("op"), ""));
    assert_eq!(skipped["series"][0]["total"].as_u64(), Some(7 * n));
    // Kinds are per operation: not per worker or file; and only errors have them.
    assert!(Query::new("errors").unwrap().by("error").unwrap().filter("worker:1").is_err());
    assert!(Query::new("errors").unwrap().by("error").unwrap().filter("file:f1").is_err());
    assert!(Query::new("ops").unwrap().by("error").is_err());
    let dims = query::dimension_values(&r);
    assert_eq!(dims.error, ["EROFS", "short write"]);
    // `skipped` is offered for file-tree runs only.
    let listed = |r: &ioscope_store::Results| query::stat_list(r).iter().any(|s| s.name == "skipped");
    assert!(!listed(&r), "reads and writes only");
    r.seconds[0].ops[0].op = Op::Delete;
    assert!(listed(&r));
}
