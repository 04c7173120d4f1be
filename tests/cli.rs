//! Integration tests: the real `ioscope` binary in temporary directories.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

mod common;
mod skip;

use common::run::{ioscope, json_of, output_within, run_ok, s};
use skip::skip;

fn schema_check(summary: &Value) {
    let schema: Value = serde_json::from_str(include_str!("../schema/summary.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(summary).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "summary does not match schema: {errors:#?}");
}

#[test]
fn randread_run_json_show_and_export_agree() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let results = tmp.path().join("r.db");
    let out = run_ok(&[
        "run",
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--size",
        "32m",
        "--threads",
        "2",
        "--duration",
        "5s",
        "--dir",
        s(&dir),
        "--out",
        s(&results),
        "--json",
    ]);
    let run = json_of(&out);
    schema_check(&run);
    assert_eq!(run["schema"], "ioscope.summary/1");
    assert_eq!(run["status"], "completed");
    assert!(run["total"]["iops"].as_f64().unwrap() > 0.0);
    let lat = &run["ops"]["read"]["latency_ns"];
    assert!(lat["p99"].as_u64().unwrap() >= lat["p50"].as_u64().unwrap());
    assert!(lat["max"].as_u64().unwrap() >= lat["p99"].as_u64().unwrap());
    let duration = run["duration_s"].as_f64().unwrap();
    assert!((4.9..6.0).contains(&duration), "duration_s {duration}");

    let shown = json_of(&run_ok(&["show", s(&results), "--json"]));
    schema_check(&shown);
    for key in ["total", "ops", "duration_s", "status", "workload"] {
        assert_eq!(shown[key], run[key], "show and run disagree on {key}");
    }
    let samples = shown["samples"].as_array().unwrap();
    assert!(samples.len() >= 5, "{} samples", samples.len());

    let csv = String::from_utf8(run_ok(&["export", s(&results), "--format", "csv"]).stdout).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), samples.len() + 1, "header plus one row per second:\n{csv}");
    assert!(rows[0].starts_with("second,"));

    // The working set is ours: a second run reuses it, and a sqlite3 reader sees the series.
    assert!(dir.join(".ioscope-workset.json").exists());
    let text = String::from_utf8(run_ok(&["show", s(&results)]).stdout).unwrap();
    assert!(text.contains("read") && text.contains("p99"), "{text}");
}

#[test]
fn sigkill_leaves_a_readable_interrupted_results_file() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let mut child = ioscope()
        .args(["run", "--engine", "null", "--rw", "randread", "--duration", "60s", "--quiet", "--out", s(&results)])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let shown = json_of(&run_ok(&["show", s(&results), "--json"]));
    assert_eq!(shown["status"], "interrupted");
    assert!(shown["samples"].as_array().unwrap().len() >= 2, "{shown}");
    assert!(shown["total"]["iops"].as_f64().unwrap() > 0.0);
}

#[test]
fn sigint_stops_cleanly_with_exit_130() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let child = ioscope()
        .args(["run", "--engine", "null", "--rw", "randrw", "--duration", "60s", "--json", "--out", s(&results)])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let summary = json_of(&out);
    assert_eq!(summary["status"], "interrupted");
    assert!(summary["ops"]["write"]["iops"].as_f64().unwrap() > 0.0);
    // A finished file is one self-contained SQLite file.
    assert!(!PathBuf::from(format!("{}-wal", results.display())).exists());
}

#[test]
fn invalid_workload_lists_every_error_and_touches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target");
    std::fs::create_dir(&target).unwrap();
    let job = tmp.path().join("job.toml");
    std::fs::write(
        &job,
        format!("rw = \"randread\"\nsize = \"12q\"\nthraeds = 4\nthreads = -2\ndir = \"{}\"\n", target.display()),
    )
    .unwrap();
    let out = ioscope().args(["run", s(&job), "--out", s(&tmp.path().join("r.db"))]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let job = job.display();
    for needle in [format!("{job}:2:8"), format!("{job}:3:1"), format!("{job}:4:11")] {
        assert!(err.contains(&needle), "missing {needle} in:\n{err}");
    }
    assert!(err.contains("3 errors"), "{err}");
    assert_eq!(std::fs::read_dir(&target).unwrap().count(), 0, "nothing written into the target directory");
    assert!(!tmp.path().join("r.db").exists(), "no results file for a run that never started");

    let v = ioscope().args(["validate", &job.to_string()]).output().unwrap();
    assert_eq!(v.status.code(), Some(2));
}

#[test]
fn refuses_to_write_into_files_it_did_not_create() {
    let tmp = tempfile::tempdir().unwrap();
    let foreign = tmp.path().join("ioscope.0.dat");
    std::fs::write(&foreign, vec![42u8; 1 << 20]).unwrap();
    let out = ioscope()
        .args(["run", "--rw", "randwrite", "--size", "1m", "--duration", "1s", "--dir", s(tmp.path())])
        .args(["--out", s(&tmp.path().join("r.db"))])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    assert_eq!(std::fs::read(&foreign).unwrap(), vec![42u8; 1 << 20], "the foreign file is untouched");
}

#[test]
fn writes_are_incompressible_and_cleanup_removes_only_our_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ws");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), b"keep me").unwrap();
    run_ok(&[
        "run",
        "--rw",
        "randwrite",
        "--bs",
        "4k:50,16k:50",
        "--size",
        "8m",
        "--files",
        "2",
        "--sync",
        "fdatasync",
        "--duration",
        "1s",
        "--dir",
        s(&dir),
        "--out",
        s(&tmp.path().join("r.db")),
        "--quiet",
    ]);
    let data = std::fs::read(dir.join("ioscope.1.dat")).unwrap();
    assert_eq!(data.len(), 4 << 20);
    let zeros = data.iter().filter(|b| **b == 0).count();
    assert!(zeros < data.len() / 100, "{zeros} zero bytes: data must be random");
    let shown = json_of(&run_ok(&["show", s(&tmp.path().join("r.db")), "--json"]));
    assert!(shown["ops"]["fdatasync"]["ops"].as_u64().unwrap() > 0, "each write is followed by a counted fdatasync");

    run_ok(&[
        "run",
        "--rw",
        "randread",
        "--size",
        "8m",
        "--files",
        "2",
        "--duration",
        "1s",
        "--dir",
        s(&dir),
        "--cleanup",
        "--out",
        s(&tmp.path().join("r2.db")),
        "--quiet",
    ]);
    let left: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, vec!["notes.txt".to_string()]);
}

#[test]
fn examples_validate() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let out = ioscope().args(["validate", s(&path)]).output().unwrap();
            let want = if path.file_name().unwrap() == "bad.toml" { 2 } else { 0 };
            assert_eq!(out.status.code(), Some(want), "{}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
        }
    }
}

#[test]
fn uring_direct_mixed_run_counts_every_io_without_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let out = run_ok(&[
        "run",
        "--engine",
        "uring",
        "--iodepth",
        "16",
        "--rw",
        "randrw",
        "--bs",
        "4k:50,64k:50",
        "--size",
        "16m",
        "--direct",
        "--sync",
        "fdatasync",
        "--threads",
        "2",
        "--duration",
        "2s",
        "--dir",
        s(&tmp.path().join("d")),
        "--out",
        s(&results),
        "--json",
    ]);
    let summary = json_of(&out);
    schema_check(&summary);
    assert_eq!(summary["total"]["errors"], 0, "{summary}");
    for op in ["read", "write", "fdatasync"] {
        assert!(summary["ops"][op]["ops"].as_u64().unwrap() > 0, "{op}: {summary}");
    }
    assert_eq!(summary["ops"]["write"]["ops"], summary["ops"]["fdatasync"]["ops"], "one fdatasync per write");
    assert_eq!(summary["workload"]["plan"]["iodepth"], 16);
}

/// Per-second CSV rows (header names to values), full seconds only.
fn csv_seconds(results: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let out = run_ok(&["export", s(results), "--format", "csv"]);
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| header.iter().cloned().zip(l.split(',').map(String::from)).collect())
        .filter(|row: &std::collections::HashMap<String, String>| row["interval_s"].parse::<f64>().unwrap() > 0.99)
        .collect()
}

/// A fixed rate over a whole run: the I/Os scheduled are the I/Os done, and every second
/// has its share. How close each second comes to the rate is timing on a shared machine,
/// measured by bench/rate.py, not asserted here.
#[test]
fn a_fixed_rate_of_2000_iops_does_the_scheduled_ios_over_the_run_on_null_and_posix() {
    let tmp = tempfile::tempdir().unwrap();
    for engine in ["null", "posix"] {
        let results = tmp.path().join(format!("{engine}.db"));
        let dir = tmp.path().join("data");
        run_ok(&[
            "run",
            "--engine",
            engine,
            "--size",
            "16m",
            "--dir",
            s(&dir),
            "--rate-iops",
            "2000",
            "--duration",
            "4s",
            "--out",
            s(&results),
            "--quiet",
        ]);
        let rows = csv_seconds(&results);
        assert!(rows.len() >= 3, "{engine}: {} full seconds", rows.len());
        for row in &rows {
            let ops: u64 = row["ops_total"].parse().unwrap();
            assert!(ops > 0, "{engine}: second {} did no I/O", row["second"]);
        }
        // An open loop catches up after a late second: the run does what was scheduled
        // (4 s at 2,000 per second), less at most the I/Os due in its last moments.
        let total: u64 = all_seconds(&results).iter().map(|r| r["ops_total"].parse::<u64>().unwrap()).sum();
        assert!((7_600..=8_000).contains(&total), "{engine}: {total} I/Os done, 8,000 scheduled");
    }
}

/// Every stored second of a results file's CSV export, short ones too.
fn all_seconds(results: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = String::from_utf8(run_ok(&["export", s(results), "--format", "csv"]).stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines.map(|l| header.iter().cloned().zip(l.split(',').map(String::from)).collect()).collect()
}

#[test]
fn seed_vdbench_file_imports_and_both_workloads_run_at_their_share() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = tmp.path().join("seed.toml");
    run_ok(&["import", "vdbench", "examples/vdbench-seed.parm", "-o", s(&toml)]);
    let text = std::fs::read_to_string(&toml).unwrap();
    assert!(text.contains("name = \"fwd1\"") && text.contains("name = \"fwd2\""), "{text}");
    assert!(text.contains("rate_iops = 10000") && text.contains("sizes = \"8k:60,32k:25,512k:10,4m:5\""), "{text}");
    // Scaled down from the command line: a small tree, 4 threads each, 2,000 IOPS, 4 s.
    let results = tmp.path().join("r.db");
    let tree = tmp.path().join("tree");
    let out = run_ok(&[
        "run",
        s(&toml),
        "--set",
        &format!("dataset.dir={}", s(&tree)),
        "--set",
        "dataset.files=4",
        "--set",
        "dataset.sizes=8k:60,32k:25,512k:10,1m:5",
        "--set",
        "dataset.format=reuse",
        "--set",
        "workload.threads=2",
        "--rate-iops",
        "2000",
        "--duration",
        "4s",
        "--out",
        s(&results),
        "--json",
        "--quiet",
    ]);
    let summary = json_of(&out);
    schema_check(&summary);
    for w in ["fwd1", "fwd2"] {
        let iops = summary["workloads"][w]["iops"].as_f64().unwrap();
        assert!((iops - 1000.0).abs() < 50.0, "{w}: {iops} IOPS, skew 50% of 2,000");
    }
    assert_eq!(summary["total"]["errors"], 0);
    // Per-second results for both workloads: every second has reads of each.
    for row in csv_seconds(&results) {
        for w in ["fwd1", "fwd2"] {
            let iops: f64 = row[&format!("{w}.read_iops")].parse().unwrap();
            assert!(iops > 0.0, "second {}: {w} {iops} IOPS", row["second"]);
        }
    }
    // Unsupported vdbench parameters are named with their line, and nothing is written.
    let bad = tmp.path().join("bad.parm");
    std::fs::write(
        &bad,
        "fsd=fsd1,anchor=/x,depth=1,width=1,files=1,sizes=8k\nfwd=fwd1,fsd=fsd1,hotband=5\nrd=rd1,fwd=fwd1\n",
    )
    .unwrap();
    let out = ioscope().args(["import", "vdbench", s(&bad)]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.parm:2:"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
}

#[test]
fn staircase_prints_a_step_per_thread_count_and_a_knee_line() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let out = run_ok(&["run", "--engine", "null", "--staircase", "1-3/1s", "--out", s(&results)]);
    let text = String::from_utf8(out.stdout).unwrap();
    for t in 1..=3 {
        assert!(text.contains(&format!("{} threads={t}", t - 1)), "{text}");
    }
    assert!(text.contains("\nknee: "), "{text}");
    let json = json_of(&run_ok(&["show", s(&results), "--json"]));
    schema_check(&json);
    let steps = json["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    assert!(steps.iter().all(|st| st["seconds"].as_u64().unwrap() >= 1 && st["iops"].as_f64().unwrap() > 0.0));
}

#[test]
fn probe_durations_and_exit_codes_are_in_the_results_and_the_summary() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("probe.toml");
    std::fs::write(
        &file,
        "engine = \"null\"\nduration = \"3s\"\nrate_iops = 1000\n\n[[probe]]\nname = \"nap\"\ncommand = \"sleep 0.3\"\nat = [\"1s\"]\n\n[[probe]]\ncommand = \"exit 3\"\nat = [\"1s\", \"2s\"]\n",
    )
    .unwrap();
    let results = tmp.path().join("r.db");
    let summary = json_of(&run_ok(&["run", s(&file), "--out", s(&results), "--json", "--quiet"]));
    schema_check(&summary);
    let probes = summary["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 3, "{probes:#?}");
    let nap = probes.iter().find(|p| p["name"] == "nap").unwrap();
    let d = nap["duration_s"].as_f64().unwrap();
    assert!((0.3..2.0).contains(&d), "sleep 0.3 took {d} s");
    assert_eq!(nap["exit_code"], 0);
    let exits: Vec<&Value> = probes.iter().filter(|p| p["name"] == "exit").map(|p| &p["exit_code"]).collect();
    assert_eq!(exits, [&Value::from(3), &Value::from(3)]);
    assert!((1.0..1.5).contains(&nap["at_s"].as_f64().unwrap()));
    let text = String::from_utf8(run_ok(&["show", s(&results)]).stdout).unwrap();
    assert!(text.contains("nap") && text.contains("probe"), "{text}");
}

#[test]
fn pattern_workload_spells_its_text_in_the_per_second_offset_distribution() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("art.toml");
    std::fs::write(
        &file,
        "engine = \"null\"\nsize = \"7m\"\nduration = \"12s\"\nrate_iops = 3000\n\n[[workload]]\nbs = \"4k\"\npattern = { text = \"HI\", map = \"offset\" }\n",
    )
    .unwrap();
    let results = tmp.path().join("r.db");
    run_ok(&["run", s(&file), "--out", s(&results), "--quiet"]);
    let r = ioscope_store::open(&results).unwrap();
    let band = (7u64 << 20) / 7;
    let want = ioscope_workload::font::render("HI").unwrap();
    let mut drawn = Vec::new();
    for snap in r.seconds.iter().take(want.len()) {
        let h = &snap.ops.iter().find(|o| o.op.name() == "read").unwrap().data.offset_bytes;
        let mut rows = [0u64; 7];
        for (i, c) in h.nonzero() {
            let (lo, _) = ioscope_metrics::histogram::bucket_range(i);
            // Band 0 is the lowest offsets: the glyph's bottom row (row 6).
            rows[6 - (lo / band).min(6) as usize] += c;
        }
        // A lit band gets a few hundred I/Os a second (3,000 IOPS over at most 7 bands);
        // a blank second may catch the first I/Os of the next column as it ends.
        let column = (0..7).filter(|r| rows[*r] >= 100).fold(0u8, |acc, r| acc | 1 << r);
        drawn.push(column);
    }
    // The text ends with a blank column: a last second without I/O is not stored.
    assert!(drawn.len() >= want.len() - 1, "{} seconds stored", drawn.len());
    drawn.resize(want.len(), 0);
    let art = |cols: &[u8]| {
        (0..7)
            .map(|r| cols.iter().map(|c| if c & (1 << r) != 0 { '#' } else { '.' }).collect::<String>() + "\n")
            .collect::<String>()
    };
    assert_eq!(art(&drawn), art(&want), "drawn:\n{}\nwant:\n{}", art(&drawn), art(&want));
}

/// GET `path` from `addr` (HTTP/1.0): (status, body).
fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|x| x.1.to_string()).unwrap_or_default();
    (status, body)
}

/// Starts `ioscope ARGS` and waits for the UI address it prints: (child, "127.0.0.1:PORT").
fn spawn_ui(args: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = ioscope().args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let address = loop {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => match line.strip_prefix("Analytics UI: http://") {
                Some(url) => break Some(url.trim_end_matches('/').to_string()),
                None => continue,
            },
            Err(_) => break None,
        }
    };
    match address {
        Some(a) => (child, a),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ioscope printed no UI address");
        }
    }
}

#[test]
fn run_with_ui_serves_the_run_live_and_keeps_serving_until_ctrl_c() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let (mut child, addr) = spawn_ui(&[
        "run",
        "--engine",
        "null",
        "--rate-iops",
        "1000",
        "--duration",
        "4s",
        "--quiet",
        "--ui",
        "--listen",
        "127.0.0.1:0",
        "--out",
        s(&results),
    ]);
    // During the run: live, and the stored seconds grow.
    let mut seen_live = Vec::new();
    for _ in 0..60 {
        let (status, body) = http_get(&addr, "/api/v1/runs");
        let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        if status == 200 && v["runs"][0]["live"] == true {
            if let Some(last) = v["runs"][0]["last_second"].as_u64() {
                if seen_live.last() != Some(&last) {
                    seen_live.push(last);
                }
            }
        }
        if seen_live.len() >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(seen_live.len() >= 2, "saw no new second while the run was live: {seen_live:?}");
    // After the run: still served, no longer live.
    let mut done = Value::Null;
    for _ in 0..50 {
        let v: Value = serde_json::from_str(&http_get(&addr, "/api/v1/runs").1).unwrap();
        if v["runs"][0]["status"] == "completed" {
            done = v;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(done["runs"][0]["live"], false, "{done}");
    assert_eq!(done["runs"][0]["last_second"], 3);
    let (status, page) = http_get(&addr, "/");
    assert_eq!(status, 200);
    assert!(page.contains("/assets/app.js"), "the UI page loads its script");
    let (status, series) = http_get(&addr, "/api/v1/runs/0/series?stat=ops&by=op");
    assert_eq!(status, 200);
    let v: Value = serde_json::from_str(&series).unwrap();
    let per_second: Vec<f64> = v["series"][0]["values"].as_array().unwrap().iter().filter_map(|x| x.as_f64()).collect();
    // Every second is served, with I/Os in it; how close each comes to the rate is timing.
    assert!(per_second.len() >= 3 && per_second.iter().all(|r| *r > 0.0), "{per_second:?}");
    assert!(child.try_wait().unwrap().is_none(), "the UI stays up after the run");
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "a completed run exits 0 when its UI is closed");
}

#[test]
fn ui_refuses_what_is_not_a_results_file_and_answers_bad_queries_with_400() {
    let tmp = tempfile::tempdir().unwrap();
    let bogus = tmp.path().join("x.db");
    std::fs::write(&bogus, "not sqlite").unwrap();
    let out = ioscope().args(["ui", s(&bogus), "--listen", "127.0.0.1:0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("x.db"));

    let results = tmp.path().join("r.db");
    run_ok(&["run", "--engine", "null", "--duration", "1s", "--quiet", "--out", s(&results)]);
    let (mut child, addr) = spawn_ui(&["ui", s(&results), "--listen", "127.0.0.1:0"]);
    let (status, body) = http_get(&addr, "/api/v1/runs/0/heatmap?stat=ops");
    assert_eq!(status, 400);
    assert!(body.contains("not a distribution"), "{body}");
    assert_eq!(http_get(&addr, "/api/v1/runs/9").0, 404);
    assert_eq!(http_get(&addr, "/etc/passwd").0, 404);
    child.kill().unwrap();
    let _ = child.wait();
}

#[test]
fn report_and_plot_write_their_files_and_never_overwrite_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    run_ok(&["run", "--engine", "null", "--rate-iops", "2000", "--duration", "2s", "--quiet", "--out", s(&results)]);
    let html = tmp.path().join("r.html");
    run_ok(&["report", s(&results), "-o", s(&html)]);
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.contains("window.IOSCOPE_EMBEDDED") && text.contains("\"stat\":\"latency\""));
    let again = ioscope().args(["report", s(&results), "-o", s(&html)]).output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
    run_ok(&["report", s(&results), "-o", s(&html), "--force"]);

    let png = tmp.path().join("h.png");
    run_ok(&["plot", s(&results), "--stat", "latency", "--by", "op", "-o", s(&png)]);
    assert_eq!(&std::fs::read(&png).unwrap()[..4], b"\x89PNG");
    for (args, says) in [
        (vec!["--stat", "ops"], "not a distribution"),
        (vec!["--stat", "latency", "--by", "shelf"], "unknown dimension"),
        (vec!["--stat", "latency", "--by", "disk"], "latency cannot be broken down by disk"),
        (vec!["--stat", "latency", "--where", "op"], "DIMENSION:VALUE"),
    ] {
        let out =
            ioscope().args(["plot", s(&results), "-o", s(&tmp.path().join("x.png"))]).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!tmp.path().join("x.png").exists());
    }
}

/// The NFS server scripts/nfs-ganesha.sh started: (URL, its export directory on this host).
fn nfs_server() -> (String, PathBuf) {
    let url = std::env::var("IOSCOPE_NFS_URL").expect("IOSCOPE_NFS_URL (scripts/nfs-ganesha.sh start)");
    let dir = std::env::var("IOSCOPE_NFS_EXPORT_DIR").unwrap_or_else(|_| "/tmp/ioscope-nfs/export".into());
    (url, PathBuf::from(dir))
}

#[test]
#[ignore = "needs nfs-ganesha: scripts/test.sh starts one and sets IOSCOPE_NFS_URL"]
fn nfs_engine_runs_reads_and_writes_against_ganesha_and_the_server_has_what_was_written() {
    let (url, export_dir) = nfs_server();
    let tmp = tempfile::tempdir().unwrap();
    let sub = format!("cli-{}", std::process::id());
    let target = format!("{url}/{sub}?nconnect=2");
    for (rw, op) in [("randread", "read"), ("randwrite", "write"), ("read", "read"), ("write", "write")] {
        let results = tmp.path().join(format!("{rw}.db"));
        let out = run_ok(&[
            "run",
            "--engine",
            "nfs",
            "--target",
            &target,
            "--rw",
            rw,
            "--bs",
            "16k",
            "--size",
            "16m",
            "--iodepth",
            "8",
            "--threads",
            "2",
            "--duration",
            "2s",
            "--quiet",
            "--json",
            "--out",
            s(&results),
        ]);
        let v = json_of(&out);
        schema_check(&v);
        assert_eq!(v["total"]["errors"], 0, "{rw}: {v}");
        assert!(v["ops"][op]["ops"].as_u64().unwrap() > 100, "{rw}: {}", v["ops"]);
        assert!(v["system"].to_string().contains("nfs v3"), "the engine's setup is recorded");
    }
    // What ioscope wrote over NFS is on the server, byte for byte, through another client.
    let on_server = std::fs::read(export_dir.join(&sub).join("ioscope.0.dat")).unwrap();
    let via_libnfs = Command::new("nfs-cat").arg(format!("{url}/{sub}/ioscope.0.dat")).output().unwrap();
    assert!(via_libnfs.status.success(), "{}", String::from_utf8_lossy(&via_libnfs.stderr));
    assert_eq!(on_server.len(), 16 << 20);
    assert!(via_libnfs.stdout == on_server, "nfs-cat and the server's file differ");
    assert!(on_server.chunks(4096).all(|c| c.iter().any(|b| *b != 0)), "no zero block");
    // A foreign file is never written; --cleanup removes only ioscope's files.
    std::fs::write(export_dir.join(&sub).join("theirs.txt"), "keep me").unwrap();
    run_ok(&[
        "run",
        "--engine",
        "nfs",
        "--target",
        &target,
        "--rw",
        "randwrite",
        "--size",
        "16m",
        "--duration",
        "1s",
        "--quiet",
        "--cleanup",
        "--out",
        s(&tmp.path().join("c.db")),
    ]);
    assert!(!export_dir.join(&sub).join("ioscope.0.dat").exists());
    assert_eq!(std::fs::read_to_string(export_dir.join(&sub).join("theirs.txt")).unwrap(), "keep me");
    // A file ioscope did not create, where its working set would go: refused before any I/O.
    std::fs::write(export_dir.join(&sub).join("ioscope.0.dat"), "not ours").unwrap();
    let refused = ioscope()
        .args(["run", "--engine", "nfs", "--target", &target, "--rw", "randwrite", "--size", "1m"])
        .args(["--duration", "1s", "--out", s(&tmp.path().join("r.db"))])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("only into files it created"));
    assert_eq!(std::fs::read_to_string(export_dir.join(&sub).join("ioscope.0.dat")).unwrap(), "not ours");
}

#[test]
#[ignore = "needs nfs-ganesha: scripts/test.sh starts one and sets IOSCOPE_NFS_URL"]
fn nfs_engine_runs_file_tree_workloads_against_ganesha() {
    let (url, export_dir) = nfs_server();
    let tmp = tempfile::tempdir().unwrap();
    let sub = format!("tree-{}", std::process::id());
    // The target directory exists (ioscope makes only the last part of a path: the tree).
    std::fs::create_dir_all(export_dir.join(&sub)).unwrap();
    // A workload file: the dataset, then one single-threaded workload per operation.
    let workload = |name: &str, dataset: &str, ops: &[(&str, &str)]| {
        let mut toml = format!(
            "engine = \"nfs\"\ntarget = \"{url}/{sub}?nconnect=2\"\nduration = \"3s\"\n\n[dataset]\n{dataset}\n"
        );
        for (op, extra) in ops {
            toml.push_str(&format!("\n[[workload]]\nname = \"{op}\"\noperation = \"{op}\"\nthreads = 1\n{extra}\n"));
        }
        let path = tmp.path().join(name);
        std::fs::write(&path, toml).unwrap();
        path
    };
    let ops_of = |v: &Value, op: &str| v["ops"][op]["ops"].as_u64().unwrap_or(0);

    // Transfers and attributes on a tree the run creates: no errors.
    let tree = workload(
        "tree.toml",
        "dir = \"tree\"\ndepth = 2\nwidth = 3\nfiles = 20\nsizes = \"4k:50,64k:40,1m:10\"",
        &[
            ("read", "rwmix_read = 100\nbs = \"16k\"\nfileio = \"random\""),
            ("write", "rwmix_read = 0\nbs = \"32k\""),
            ("getattr", ""),
            ("setattr", ""),
            ("open", ""),
        ],
    );
    let v = json_of(&run_ok(&["run", s(&tree), "--quiet", "--json", "--out", s(&tmp.path().join("tree.db"))]));
    schema_check(&v);
    for op in ["read", "write", "open", "close", "getattr", "setattr"] {
        assert!(ops_of(&v, op) > 10, "{op}: {}", v["ops"]);
    }
    assert_eq!(v["total"]["errors"], 0, "{}", v["ops"]);
    // The tree is on the server, and what ioscope wrote reads back through another client
    // byte for byte, without a zero block.
    let anchor = export_dir.join(&sub).join("tree");
    assert!(anchor.join(".ioscope-dataset.json").is_file());
    for file in ["d00/d00/f000000", "d02/d02/f000019"] {
        let on_server = std::fs::read(anchor.join(file)).unwrap();
        let via_libnfs = Command::new("nfs-cat").arg(format!("{url}/{sub}/tree/{file}")).output().unwrap();
        assert!(via_libnfs.status.success(), "{}", String::from_utf8_lossy(&via_libnfs.stderr));
        assert!(!on_server.is_empty() && via_libnfs.stdout == on_server, "{file}: nfs-cat and the server differ");
        assert!(on_server.chunks(4096).all(|c| c.iter().any(|b| *b != 0)), "{file}: a zero block");
    }

    // The namespace operations, racing each other on a small tree: each gets done.
    let names = workload(
        "names.toml",
        "dir = \"names\"\ndepth = 1\nwidth = 4\nfiles = 3\nsizes = \"4k\"",
        &[("create", ""), ("delete", ""), ("copy", ""), ("move", ""), ("mkdir", ""), ("rmdir", "")],
    );
    // Racing on a few names fails some operations for real (a create in a directory an
    // rmdir just removed): counted by kind, not a reason to end the run.
    let names_db = tmp.path().join("names.db");
    let v = json_of(&run_ok(&["run", s(&names), "--max-errors", "off", "--quiet", "--json", "--out", s(&names_db)]));
    for op in ["create", "delete", "copy", "move", "mkdir", "rmdir"] {
        assert!(ops_of(&v, op) > 0, "{op}: {}", v["ops"]);
    }

    // Again with --cleanup: the tree is reused, then all ioscope made is gone, and a
    // foreign file stays.
    std::fs::write(export_dir.join(&sub).join("theirs.txt"), "keep me").unwrap();
    let again = ioscope()
        .args(["run", s(&tree), "--duration", "1s", "--cleanup", "--out", s(&tmp.path().join("again.db"))])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("reusing dataset"), "{stderr}");
    assert!(!anchor.exists(), "cleanup removed the tree: {stderr}");
    assert_eq!(std::fs::read_to_string(export_dir.join(&sub).join("theirs.txt")).unwrap(), "keep me");
    // A directory holding data ioscope did not make is refused before any I/O.
    std::fs::create_dir_all(&anchor).unwrap();
    std::fs::write(anchor.join("notes.txt"), "mine").unwrap();
    let refused = ioscope().args(["run", s(&tree), "--out", s(&tmp.path().join("no.db"))]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--force"));
    assert_eq!(std::fs::read_dir(&anchor).unwrap().count(), 1, "nothing written");
}

#[test]
#[ignore = "pauses the nfs-ganesha that scripts/test.sh started (run alone)"]
fn nfs_server_stopped_mid_run_gives_timeouts_and_ends_the_run_when_a_null_call_goes_unanswered() {
    let (url, export_dir) = nfs_server();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("s.db");
    // scripts/nfs-ganesha.sh keeps the pid next to the export directory, in its state dir.
    let pid_file = export_dir.parent().unwrap().join("ganesha.pid");
    let pid: i32 = std::fs::read_to_string(pid_file).unwrap().trim().parse().unwrap();
    let started = std::time::Instant::now();
    let child = ioscope()
        .args(["run", "--engine", "nfs", "--target", &format!("{url}/stop?timeout=2"), "--rw", "randread"])
        .args(["--size", "16m", "--iodepth", "8", "--duration", "60s", "--quiet", "--out", s(&results)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    // SIGSTOP: the server keeps its connections open and answers nothing.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let out = child.wait_with_output();
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let out = out.unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A call's timeout, then the NULL call's: about 4 s after the stop.
    assert!(took < Duration::from_secs(3 + 2 + 2 + 5), "the run ended {took:?} after it started: {stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("timed out"), "the timeouts are named: {stderr}");
    let show = json_of(&run_ok(&["show", s(&results), "--json"]));
    assert_eq!(show["status"], "failed");
    let detail = show["status_detail"].as_str().unwrap();
    assert!(detail.contains("no reply within 2s") && detail.contains("NULL call"), "{detail}");
    assert!(show["total"]["errors"].as_u64().unwrap() > 0, "the calls in flight count as timed out");
    assert!(show["total"]["ops"].as_u64().unwrap() > 100, "the seconds before the stop are kept");
}

#[test]
#[ignore = "kills the nfs-ganesha that scripts/test.sh started (run alone, last)"]
fn nfs_server_killed_mid_run_ends_the_run_with_errors_counted_and_the_results_kept() {
    let (url, _) = nfs_server();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("k.db");
    let started = std::time::Instant::now();
    let child = ioscope()
        .args(["run", "--engine", "nfs", "--target", &format!("{url}/kill?timeout=3"), "--rw", "randread"])
        .args(["--size", "16m", "--iodepth", "8", "--duration", "60s", "--quiet", "--out", s(&results)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/nfs-ganesha.sh");
    let killed = Command::new(&script).arg("kill-server").output().unwrap();
    assert!(killed.status.success(), "{}", String::from_utf8_lossy(&killed.stderr));
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(3 + 3 + 10), "the run ended {took:?} after it started (60 s planned): {stderr}");
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let show = json_of(&run_ok(&["show", s(&results), "--json"]));
    assert_eq!(show["status"], "failed");
    assert!(show["status_detail"].as_str().unwrap().contains("went out of reach"), "{}", show["status_detail"]);
    assert!(show["total"]["errors"].as_u64().unwrap() > 0, "the I/Os in flight count as errors");
    assert!(show["total"]["ops"].as_u64().unwrap() > 100, "the seconds before the kill are kept");
}

// ---- Checks before any I/O, and signals (results file, --listen, SIGTERM/SIGHUP) ----

/// Runs a small posix workload with `extra` arguments and returns (exit code, stderr).
fn run_with(dir: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["run", "--size", "8m", "--duration", "2s", "--quiet", "--dir", s(dir)];
    args.extend_from_slice(extra);
    let out = ioscope().args(&args).stdout(Stdio::null()).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_bad_results_file_or_listen_address_is_refused_before_the_working_set_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let leftover = tmp.path().join("old.db");
    std::fs::write(tmp.path().join("old.db-wal"), b"x").unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = busy.local_addr().unwrap().to_string();
    let cases: [(&[&str], &str); 4] = [
        (&["--out", &format!("{}/missing/r.db", tmp.path().display())], "does not exist"),
        (&["--out", s(&leftover)], "leftover"),
        (&["--out", "/proc/ioscope-results.db"], "cannot create the results file"),
        (&["--out", &format!("{}/r.db", tmp.path().display()), "--ui", "--listen", &busy], "cannot listen"),
    ];
    for (extra, expected) in cases {
        let (code, stderr) = run_with(&dir, extra);
        assert_eq!(code, Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(expected), "{extra:?}: expected {expected:?} in: {stderr}");
        assert!(!dir.exists(), "{extra:?}: the working set was written before the refusal");
    }
}

/// Starts a run that prepares a large working set and returns once it says so.
fn spawn_preparing(dir: &Path, results: &Path) -> std::process::Child {
    use std::io::BufRead;
    let mut child = ioscope()
        .args(["run", "--size", "2g", "--duration", "60s", "--dir", s(dir), "--out", s(results)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(first.starts_with("preparing working set"), "{first}");
    std::thread::spawn(move || lines.for_each(drop));
    child
}

#[test]
fn sigterm_or_sighup_while_preparing_ends_with_exit_130_and_a_message() {
    for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, results) = (tmp.path().join("data"), tmp.path().join("r.db"));
        let child = spawn_preparing(&dir, &results);
        // SAFETY: plain kill(2) on our child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "signal {signal}");
        assert!(!results.exists(), "nothing was measured, so there is no results file");
    }
}

#[test]
fn sighup_during_a_run_keeps_the_partial_second_and_leaves_one_file() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let child = ioscope()
        .args(["run", "--engine", "null", "--duration", "60s", "--json", "--out", s(&results)])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(3000));
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let summary = json_of(&out);
    assert_eq!(summary["status"], "interrupted");
    let duration = summary["duration_s"].as_f64().unwrap();
    assert!(duration > 2.0, "the half second before SIGHUP is kept: {duration} s");
    assert!(!PathBuf::from(format!("{}-wal", results.display())).exists());
}

// ---- Input limits: durations, NFS targets, --set, hostile workload files ----

/// Runs ioscope expecting exit 2 (invalid input); returns stderr.
fn invalid_input(args: &[&str]) -> String {
    let out = ioscope().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "ioscope {args:?}: {}\n{err}", out.status);
    err
}

#[test]
fn a_run_shorter_than_a_second_exits_2_and_writes_no_results() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let err = invalid_input(&["run", "--engine", "null", "--duration", "1ns", "--quiet", "--out", s(&results)]);
    assert!(err.contains("--duration 1ns: error: expected a whole number of seconds from 1s"), "{err}");
    assert!(!results.exists(), "nothing was run");
    let job = tmp.path().join("job.toml");
    std::fs::write(&job, "engine = \"null\"\nstaircase = \"1-4/10ms\"\n").unwrap();
    let err = invalid_input(&["validate", s(&job)]);
    assert!(err.contains("job.toml:2:13: error: staircase \"1-4/10ms\""), "{err}");
}

#[test]
fn a_malformed_nfs_target_exits_2_before_any_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    for (target, says) in [
        ("nfs://[::1/export", "needs its closing ]"),
        ("nfs://127.0.0.1/export?nconnect=0", "nconnect=\"0\": expected a number from 1 to 64"),
        ("nfs://127.0.0.1/export?nconnect=1000", "nconnect=\"1000\": expected a number from 1 to 64"),
    ] {
        let err =
            invalid_input(&["run", "--engine", "nfs", "--target", target, "--duration", "1s", "--out", s(&results)]);
        assert!(err.contains(&format!("--target {target}: error: expected an NFS target")), "{err}");
        assert!(err.contains(says), "{target}: {err}");
        assert!(!results.exists());
    }
}

#[test]
fn a_set_for_a_missing_workload_section_exits_2_naming_the_key() {
    let tmp = tempfile::tempdir().unwrap();
    let job = tmp.path().join("job.toml");
    std::fs::write(&job, "engine = \"null\"\nduration = \"1s\"\n").unwrap();
    let results = tmp.path().join("r.db");
    let err = invalid_input(&["run", s(&job), "--set", "workload.threads=5000", "--quiet", "--out", s(&results)]);
    assert!(err.starts_with("--set workload.threads=5000: error: expected a [[workload]] section"), "{err}");
    assert!(err.contains("--set threads=5000"), "{err}");
    assert!(!results.exists());
}

#[test]
fn hostile_workload_input_exits_2_with_a_short_message() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    // Not UTF-8: the place of the first bad byte.
    let job = tmp.path().join("latin1.toml");
    std::fs::write(&job, b"engine = \"null\"\ndescription = \"caf\xe9\"\n").unwrap();
    let err = invalid_input(&["validate", s(&job)]);
    assert!(err.contains("latin1.toml:2:19: error: byte 0xe9 is not UTF-8 text"), "{err}");
    // A 100 KB key and a 100 KB directory: refused, echoed shortened.
    let job = tmp.path().join("key.toml");
    std::fs::write(&job, format!("engine = \"null\"\n{} = 1\n", "k".repeat(100_000))).unwrap();
    let err = invalid_input(&["run", s(&job), "--quiet", "--out", s(&results)]);
    assert!(err.len() < 2_000 && err.contains("unknown key \"kkk"), "{} bytes", err.len());
    let dir = format!("{}/{}", tmp.path().display(), "d".repeat(100_000));
    let err = invalid_input(&["run", "--dir", &dir, "--size", "1m", "--duration", "1s", "--out", s(&results)]);
    assert!(err.len() < 2_000 && err.contains("at most 4095 bytes"), "{} bytes: {}", err.len(), &err[..200]);
    assert!(!results.exists());
}

// ---- Output: broken pipes, full disks and output files ----

/// A short engine-null run's results file in `dir`.
fn null_results(dir: &Path) -> PathBuf {
    let results = dir.join("r.db");
    run_ok(&["run", "--engine", "null", "--rate-iops", "2000", "--duration", "2s", "--quiet", "--out", s(&results)]);
    results
}

/// Runs ioscope with stdout a pipe whose reader has already gone.
fn with_closed_stdout(args: &[&str]) -> Output {
    let mut child = ioscope().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

fn full_stdout(args: &[&str]) -> Output {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    ioscope().args(args).stdout(full).output().unwrap()
}

#[test]
fn a_closed_pipe_ends_output_quietly_and_a_full_stdout_is_an_error_never_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let results = null_results(tmp.path());
    let r = s(&results);
    for args in [
        vec!["show", r],
        vec!["show", r, "--json"],
        vec!["export", r],
        vec!["export", r, "--format", "json"],
        vec!["validate", "examples/randread-4k.toml"],
    ] {
        let out = with_closed_stdout(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?} into a closed pipe: {err}");
        assert!(!err.contains("panicked") && err.is_empty(), "{args:?}: {err}");

        let out = full_stdout(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?} into /dev/full: {err}");
        assert!(err.contains("writing to standard output: No space left on device"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // A run whose summary cannot be printed still completes and keeps its results.
    let second = tmp.path().join("r2.db");
    for (out, code) in [
        (full_stdout(&["run", "--engine", "null", "--duration", "1s", "--quiet", "--out", s(&second)]), 1),
        (
            with_closed_stdout(&[
                "run",
                "--engine",
                "null",
                "--duration",
                "1s",
                "--json",
                "--out",
                s(&tmp.path().join("r3.db")),
            ]),
            0,
        ),
    ] {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let shown = json_of(&run_ok(&["show", s(&second), "--json"]));
    assert_eq!(shown["status"], "completed");
    // stderr full too: still no panic, the exit code says it.
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = ioscope().args(["show", "/nonexistent.db"]).stderr(full).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn plot_refuses_oversized_images_and_no_output_is_written_through_a_symlink() {
    let tmp = tempfile::tempdir().unwrap();
    let results = null_results(tmp.path());
    let png = tmp.path().join("p.png");
    for (flag, value) in [("--width", "100000"), ("--height", "100000"), ("--width", "0")] {
        let out = ioscope().args(["plot", s(&results), "-o", s(&png), flag, value]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains("is not in"), "{flag} {value}: {err}");
        assert!(!png.exists());
    }
    run_ok(&["plot", s(&results), "-o", s(&png), "--width", "8192", "--height", "4096"]);

    let target = tmp.path().join("elsewhere");
    let link = tmp.path().join("link.out");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for args in [
        vec!["plot", s(&results), "-o", s(&link)],
        vec!["plot", s(&results), "-o", s(&link), "--force"],
        vec!["report", s(&results), "-o", s(&link)],
        vec!["report", s(&results), "-o", s(&link), "--force"],
    ] {
        let out = ioscope().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("symbolic link"), "{args:?}: {err}");
        assert!(!target.exists(), "{args:?} wrote through the link");
    }
}

// ---- Results files: one file after a crash, full file systems ----

#[test]
fn a_killed_run_is_one_file_after_the_next_show_and_show_on_a_live_run_says_what_to_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let mut child = ioscope()
        .args(["run", "--engine", "null", "--rate-iops", "1000", "--duration", "60s", "--quiet", "--out", s(&results)])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let wal = tmp.path().join("r.db-wal");
    while !(wal.exists() && ioscope().args(["show", s(&results), "--json"]).output().unwrap().status.success()) {
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    let live = ioscope().args(["show", s(&results), "--json"]).output().unwrap();
    let notes = json_of(&live)["notes"].to_string();
    assert!(live.status.success() && notes.contains("-wal file") && notes.contains("copy both files"), "{notes}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(wal.exists(), "a killed run leaves its -wal");

    let shown = json_of(&run_ok(&["show", s(&results), "--json"]));
    assert_eq!(shown["status"], "interrupted");
    assert!(!wal.exists() && !tmp.path().join("r.db-shm").exists(), "show folded the -wal into r.db");
    // The results file alone now holds the run: copied elsewhere it reads the same.
    let copy = tmp.path().join("copy.db");
    std::fs::copy(&results, &copy).unwrap();
    let copied = json_of(&run_ok(&["show", s(&copy), "--json"]));
    assert_eq!(copied["samples"], shown["samples"]);
    assert!(copied["samples"].as_array().unwrap().len() >= 2);
}

#[test]
fn a_full_file_system_under_out_ends_the_run_naming_the_file_and_enospc_with_the_summary_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("small");
    let Some(_mount) = Tmpfs::mount(&dir, "size=192k") else { return };
    let results = dir.join("r.db");
    // engine null without a rate fills 256 KiB within seconds (many latency buckets a second).
    let out = ioscope()
        .args(["run", "--engine", "null", "--duration", "60s", "--quiet", "--json", "--out", s(&results)])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("{}: no space left on the file system (ENOSPC", results.display())), "{err}");
    assert!(err.contains("keep both"), "says which files hold the results: {err}");
    let summary = json_of(&out);
    assert_eq!(summary["status"], "failed");
    assert!(summary["status_detail"].as_str().unwrap().contains("ENOSPC"), "{summary}");
    let measured = summary["samples"].as_array().unwrap().len();
    assert!(measured >= 1 && summary["total"]["ops"].as_u64().unwrap() > 0, "{summary}");
    assert!(summary["duration_s"].as_f64().unwrap() < 30.0, "the run ended at the failure");
    // What was measured stays readable.
    let shown = json_of(&run_ok(&["show", s(&results), "--json"]));
    assert_eq!(shown["samples"].as_array().unwrap().len(), measured);
}

// ---- Failed I/O: kinds, short transfers, max_errors, file-tree skips ------------------

/// Starts `ioscope run ARGS --out OUT --json --quiet`, waits until the run has begun (its
/// results file exists), waits `after` more, then calls `act`; returns the finished output.
fn run_and_meddle(args: &[&str], out: &Path, after: Duration, act: impl FnOnce()) -> Output {
    let child = ioscope()
        .args(args)
        .args(["--out", s(out), "--json", "--quiet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !out.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(after);
    act();
    child.wait_with_output().unwrap()
}

fn truncate(path: &Path) {
    std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(0).unwrap();
}

#[test]
fn a_working_set_truncated_mid_run_fails_the_run_naming_short_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out) = (tmp.path().join("data"), tmp.path().join("r.db"));
    let args = ["run", "--rw", "randread", "--size", "8m", "--duration", "20s", "--dir", s(&dir)];
    // Another process shrinks the file behind ioscope's back: every read from then on is
    // past the end of the file.
    let done = run_and_meddle(&args, &out, Duration::from_millis(300), || truncate(&dir.join("ioscope.0.dat")));
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{stderr}");
    let summary = json_of(&done);
    schema_check(&summary);
    assert_eq!(summary["status"], "failed");
    let detail = summary["status_detail"].as_str().unwrap();
    assert!(detail.contains("max_errors = 1%") && detail.contains("read short read"), "{detail}");
    let read = &summary["ops"]["read"];
    assert!(read["errors_by_kind"]["short read"].as_u64().unwrap() > 0, "{read}");
    assert_eq!(read["bytes"].as_u64(), read["ops"].as_u64().map(|n| n * 4096), "bytes per op is not falsely low");
    // The default limit ends the run at once, not at the end of its 20 s; the results stay.
    assert!(summary["duration_s"].as_f64().unwrap() < 10.0, "{}", summary["duration_s"]);
    let shown = run_ok(&["show", s(&out)]);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("errors: read"),
        "{}",
        String::from_utf8_lossy(&shown.stdout)
    );
}

#[test]
fn with_max_errors_off_a_run_of_failures_completes_and_says_every_io_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, out) = (tmp.path().join("data"), tmp.path().join("r.db"));
    let args = ["run", "--rw", "randread", "--size", "8m", "--duration", "3s", "--dir", s(&dir), "--max-errors", "off"];
    let done = run_and_meddle(&args, &out, Duration::from_millis(200), || truncate(&dir.join("ioscope.0.dat")));
    assert_eq!(done.status.code(), Some(0), "{}", String::from_utf8_lossy(&done.stderr));
    let summary = json_of(&done);
    assert_eq!(summary["status"], "completed");
    let notes: Vec<&str> = summary["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes.iter().any(|n| n.starts_with("every I/O failed in ")), "{notes:#?}");
    // A bad limit is refused before any I/O, naming the flag.
    let bad = ioscope().args(["run", "--engine", "null", "--max-errors", "lots"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--max-errors"), "{}", String::from_utf8_lossy(&bad.stderr));
}

/// A tree workload file: a dataset of `files` files of `sizes` in `dir`, and one thread
/// each of `ops`.
fn tree_workload(dir: &Path, files: u32, sizes: &str, ops: &[&str], duration: &str) -> String {
    let mut text = format!(
        "duration = \"{duration}\"\n\n[dataset]\ndir = \"{}\"\ndepth = 1\nwidth = 1\nfiles = {files}\nsizes = \"{sizes}\"\n",
        dir.display()
    );
    for op in ops {
        text.push_str(&format!("\n[[workload]]\nname = \"{op}\"\noperation = \"{op}\"\nthreads = 1\n"));
    }
    text
}

#[test]
fn file_tree_picks_that_find_no_file_are_skips_not_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = tmp.path().join("w.toml");
    std::fs::write(&toml, tree_workload(&tmp.path().join("tree"), 4, "4k", &["create", "delete"], "2s")).unwrap();
    let out = tmp.path().join("r.db");
    let done = run_ok(&["run", s(&toml), "--out", s(&out), "--json", "--quiet"]);
    let summary = json_of(&done);
    schema_check(&summary);
    // Creates find every name taken until deletes free one (and the other way round): such
    // a pick is not an I/O, not an error, and the thread does not spin.
    assert_eq!(summary["total"]["errors"], 0, "{}", summary["ops"]);
    let skipped: u64 = ["create", "delete"].iter().map(|op| summary["ops"][op]["skipped"].as_u64().unwrap_or(0)).sum();
    assert!(skipped > 0, "{}", summary["ops"]);
    let notes = summary["notes"].to_string();
    assert!(notes.contains("picks found no"), "{notes}");
    assert!(summary["ops"]["create"]["ops"].as_u64().unwrap() > 0, "creates still happen");
}

#[test]
fn enospc_during_a_file_tree_run_is_reported_as_enospc() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(&tmp.path().join("small"), "size=2m") else { return };
    let toml = tmp.path().join("w.toml");
    let tree = fs.0.join("tree");
    std::fs::write(&toml, tree_workload(&tree, 8, "4k:50,256k:50", &["create", "delete"], "2s")).unwrap();
    let out = tmp.path().join("r.db");
    let filler = fs.0.join("filler");
    // Once the run has begun, fill the file system, and keep taking what deletes free.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let fill = {
        let (filler, stop) = (filler.clone(), stop.clone());
        move || {
            std::thread::spawn(move || {
                use std::io::Write;
                let mut f = std::fs::File::create(&filler).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if f.write_all(&[1u8; 4096]).is_err() {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
            });
        }
    };
    let done = run_and_meddle(&["run", s(&toml)], &out, Duration::ZERO, fill);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let stderr = String::from_utf8_lossy(&done.stderr);
    let summary = json_of(&done);
    let kinds = &summary["ops"]["create"]["errors_by_kind"];
    assert!(kinds["ENOSPC"].as_u64().unwrap_or(0) > 0, "{kinds} {stderr}");
    assert!(kinds.get("ENOENT").is_none() && kinds.get("EEXIST").is_none(), "{kinds}");
    assert!(!stderr.contains("No such file or directory"), "{stderr}");
    // The first failed create is named with its kind and the dataset's file.
    let first = format!("first create: ENOSPC: No space left on device (os error 28), in {}/", tree.display());
    assert!(stderr.contains(&first), "{stderr}");
    std::thread::sleep(Duration::from_millis(50));
}

/// An ext4 file system on a loop device, mounted at `mnt` for the test's life; None where
/// that is not allowed (needs root and loop devices).
struct LoopExt4 {
    mnt: PathBuf,
    dev: String,
}

impl LoopExt4 {
    fn mount(dir: &Path) -> Option<LoopExt4> {
        let img = dir.join("ext4.img");
        std::fs::File::create(&img).ok()?.set_len(64 << 20).ok()?;
        let out = Command::new("losetup").args(["-f", "--show", s(&img)]).stderr(Stdio::null()).output().ok()?;
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || dev.is_empty() {
            return None;
        }
        let fs = LoopExt4 { mnt: dir.join("mnt"), dev };
        std::fs::create_dir_all(&fs.mnt).ok()?;
        let ok = |c: &mut Command| c.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
        (ok(Command::new("mkfs.ext4").args(["-q", &fs.dev]))
            && ok(Command::new("mount").args([fs.dev.as_str(), s(&fs.mnt)])))
        .then_some(fs)
    }

    /// Shuts the file system down as a dying device would (EXT4_IOC_SHUTDOWN, no log
    /// flush): from then on every I/O fails with EIO.
    fn shut_down(&self) {
        let dir = std::fs::File::open(&self.mnt).unwrap();
        let mut flags: u32 = 2; // EXT4_GOING_FLAGS_NOLOGFLUSH
        const EXT4_IOC_SHUTDOWN: libc::c_ulong = 0x8004_587D; // _IOR('X', 125, __u32)
        let rc = unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(&dir), EXT4_IOC_SHUTDOWN as _, &mut flags) };
        assert_eq!(rc, 0, "EXT4_IOC_SHUTDOWN: {}", std::io::Error::last_os_error());
    }
}

impl Drop for LoopExt4 {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

#[test]
fn a_dead_device_ends_the_run_as_failed_within_seconds() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(fs) = LoopExt4::mount(tmp.path()) else {
        skip("cannot make and mount an ext4 loop device here (needs root, losetup and mkfs.ext4)");
        return;
    };
    let out = tmp.path().join("r.db");
    let args = ["run", "--rw", "randrw", "--direct", "--size", "16m", "--duration", "60s", "--dir"];
    let dir = fs.mnt.join("data");
    let done = run_and_meddle(&[&args[..], &[s(&dir)]].concat(), &out, Duration::from_millis(500), || fs.shut_down());
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(1), "{stderr}");
    let summary = json_of(&done);
    assert_eq!(summary["status"], "failed");
    let detail = summary["status_detail"].as_str().unwrap();
    assert!(detail.contains("EIO"), "the error kind is named: {detail}");
    assert!(summary["duration_s"].as_f64().unwrap() < 10.0, "60 s planned: {}", summary["duration_s"]);
    assert!(summary["ops"]["read"]["errors_by_kind"]["EIO"].as_u64().unwrap() > 0);
}

// ---- The working directory and the measured core: one run per directory, every check
// ---- before I/O, clean failures of opens and preparation, seconds under overload.

/// `ioscope ARGS` under `sh -c 'ulimit -n NOFILE; exec ...'`, given 60 s.
fn ioscope_with_nofile(nofile: u32, args: &[&str]) -> Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(format!("ulimit -n {nofile} && exec \"$0\" \"$@\"")).arg(env!("CARGO_BIN_EXE_ioscope"));
    output_within(cmd.args(args), Duration::from_secs(60))
}

#[test]
fn too_many_open_files_fails_the_run_cleanly_and_never_runs_a_worker_without_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    // 2 threads × 30 files fit a limit of 64 on paper (the check before any I/O lets the
    // run start), but not with the results file, rings and sockets: opens fail in workers.
    // The race was between a worker passing the start barrier and the main thread setting
    // the stop flag: repeat it, with both engines that open the working set.
    for round in 0..10 {
        for engine in ["posix", "uring"] {
            let results = tmp.path().join(format!("{engine}-{round}.db"));
            let out = ioscope_with_nofile(
                64,
                &[
                    "run",
                    "--engine",
                    engine,
                    "--files",
                    "30",
                    "--size",
                    "4m",
                    "--threads",
                    "2",
                    "--duration",
                    "2s",
                    "--quiet",
                    "--dir",
                    s(&dir),
                    "--out",
                    s(&results),
                ],
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!stderr.contains("panicked"), "{engine} round {round}: {stderr}");
            assert_eq!(out.status.code(), Some(1), "{engine} round {round}: {stderr}");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("Too many open files"), "{engine} round {round}: {text}{stderr}");
            let show = json_of(&run_ok(&["show", s(&results), "--json"]));
            assert_eq!(show["status"], "failed", "the results are kept and say why");
            assert!(show["status_detail"].as_str().unwrap().contains("Too many open files"), "{show}");
        }
    }
}

#[test]
fn a_second_run_on_the_same_dir_is_refused_at_once_naming_the_first_runs_pid_and_results() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let first_results = tmp.path().join("first.db");
    let first = ioscope()
        .args(["run", "--size", "8m", "--duration", "4s", "--quiet", "--dir", s(&dir), "--out", s(&first_results)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first run holds the directory.
    let started = std::time::Instant::now();
    while !first_results.exists() && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for rw in ["randread", "randwrite"] {
        let second_results = tmp.path().join(format!("second-{rw}.db"));
        let args = ["run", "--rw", rw, "--size", "4m", "--dir", s(&dir), "--out", s(&second_results)];
        let out = output_within(ioscope().args(args), Duration::from_secs(10));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("in use by another ioscope run"), "{stderr}");
        assert!(stderr.contains(&format!("pid {}", first.id())), "names the other run's pid: {stderr}");
        assert!(stderr.contains(s(&first_results)), "names the other run's results file: {stderr}");
        assert!(!second_results.exists(), "nothing was run");
    }
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shown = json_of(&run_ok(&["show", s(&first_results), "--json"]));
    assert_eq!(shown["total"]["errors"], 0);
    assert_eq!(shown["ops"]["read"]["bytes"].as_u64().unwrap(), shown["ops"]["read"]["ops"].as_u64().unwrap() * 4096);
    assert!(!dir.join(".ioscope.lock").exists(), "the lock file goes when the run ends");
}

#[test]
fn a_lock_left_by_a_killed_run_never_blocks_the_next() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let results = tmp.path().join("killed.db");
    let mut child = ioscope()
        .args(["run", "--size", "4m", "--duration", "60s", "--quiet", "--dir", s(&dir), "--out", s(&results)])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !results.exists() && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL: no code of ours runs, the lock file stays
    child.wait().unwrap();
    assert!(dir.join(".ioscope.lock").exists());
    run_ok(&[
        "run",
        "--size",
        "4m",
        "--duration",
        "1s",
        "--quiet",
        "--dir",
        s(&dir),
        "--out",
        s(&tmp.path().join("next.db")),
    ]);
}

#[test]
fn two_runs_preparing_the_same_fresh_dir_never_collide_one_is_refused_clearly() {
    for round in 0..3 {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("fresh");
        let spawn = |name: &str| {
            ioscope()
                .args(["run", "--size", "32m", "--files", "4", "--duration", "1s", "--quiet", "--dir", s(&dir)])
                .args(["--out", s(&tmp.path().join(name))])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn("a.db"), spawn("b.db"));
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let mut codes = [a.status.code(), b.status.code()];
        codes.sort();
        let stderr = format!("{}{}", String::from_utf8_lossy(&a.stderr), String::from_utf8_lossy(&b.stderr));
        assert!(!stderr.contains("No such file or directory"), "round {round}: {stderr}");
        // Either they ran one after the other, or the second was refused naming the first.
        if codes != [Some(0), Some(0)] {
            assert_eq!(codes, [Some(0), Some(2)], "round {round}: {stderr}");
            assert!(stderr.contains("in use by another ioscope run"), "round {round}: {stderr}");
        }
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 5, "four files and the marker, no temporary file");
    }
}

#[test]
fn a_dir_whose_parent_is_missing_is_refused_and_cleanup_leaves_no_dir_it_made() {
    let tmp = tempfile::tempdir().unwrap();
    let deep = tmp.path().join("typo/data");
    let results = tmp.path().join("r.db");
    let out = ioscope()
        .args(["run", "--size", "4m", "--duration", "1s", "--dir", s(&deep), "--out", s(&results)])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("parent directory") && stderr.contains("does not exist"), "{stderr}");
    assert!(!tmp.path().join("typo").exists() && !results.exists(), "nothing was created");
    // The last part of the path is made, and --cleanup takes it away again.
    let dir = tmp.path().join("data");
    run_ok(&[
        "run",
        "--size",
        "4m",
        "--duration",
        "1s",
        "--quiet",
        "--cleanup",
        "--dir",
        s(&dir),
        "--out",
        s(&results),
    ]);
    assert!(!dir.exists(), "the directory ioscope made is gone");
}

#[test]
fn a_dir_where_files_cannot_be_created_is_refused_before_any_working_set_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    for dir in ["/proc/ioscope-test", "/proc/self"] {
        let results = tmp.path().join("r.db");
        let out = ioscope()
            .args(["run", "--size", "4m", "--duration", "1s", "--dir", dir, "--out", s(&results)])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{dir}: {stderr}");
        assert!(stderr.contains("ioscope cannot"), "{dir}: {stderr}");
        assert!(!stderr.contains("preparing"), "found before preparing: {stderr}");
        assert!(!results.exists());
    }
}

/// (second, interval in s) of every stored tick, from the CSV export.
fn tick_intervals(results: &Path) -> Vec<(u32, f64)> {
    csv_seconds(results).iter().map(|r| (r["second"].parse().unwrap(), r["interval_s"].parse().unwrap())).collect()
}

#[test]
fn a_stopped_process_records_one_gap_and_then_whole_seconds_again() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let child = ioscope()
        .args(["run", "--engine", "null", "--duration", "8s", "--quiet", "--out", s(&results)])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !results.exists() && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(2300));
    let pid = child.id() as i32;
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_secs(3));
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let ticks = tick_intervals(&results);
    let gaps: Vec<_> = ticks.iter().filter(|(_, i)| *i > 2.0).collect();
    assert_eq!(gaps.len(), 1, "the stop is one long tick: {ticks:?}");
    assert!(gaps[0].1 < 6.0, "{ticks:?}");
    // Every other tick is about a second (the last may be shorter), none a few ms.
    for (k, (second, interval)) in ticks.iter().enumerate().filter(|(_, (_, i))| *i <= 2.0) {
        assert!(*interval >= 0.5 || k == ticks.len() - 1, "second {second} lasted {interval} s: {ticks:?}");
    }
    // Seconds keep their place on the time line: the gap's seconds have no row.
    let total: f64 = ticks.iter().map(|t| t.1).sum();
    let last = ticks.last().unwrap().0 as f64 + 1.0;
    assert!((total - last).abs() < 1.0, "{total} s measured, last second {last}: {ticks:?}");
    let text = String::from_utf8(run_ok(&["show", s(&results)]).stdout).unwrap();
    assert!(text.contains("came late"), "the gap is named: {text}");
    let rows: Vec<String> = csv_seconds(&results)
        .iter()
        .map(|r| format!("{}:{}:{}", r["second"], r["interval_s"], r["ops_total"]))
        .collect();
    assert!(!text.contains("stalls"), "no short tick is called a stall: {text}\n{rows:?}");
}

#[test]
#[ignore = "needs the machine to itself (scripts/test.sh runs it alone): other tests' runs would starve it"]
fn seconds_stay_seconds_with_many_more_threads_than_cpus() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let dir = tmp.path().join("data");
    // At nice 19 the workers also yield to the other tests running meanwhile; the collector
    // must tick on time regardless. scripts/test.sh points IOSCOPE_RELEASE_BIN at the
    // optimized build users run: a debug build's collector reads hundreds of workers' histograms
    // several times slower and is late for its own reasons.
    let bin = std::env::var("IOSCOPE_RELEASE_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_ioscope").to_string());
    let out = Command::new("nice")
        .args(["-n", "19", &bin, "run", "--threads", "256", "--size", "8m", "--duration", "5s"])
        .args(["--quiet", "--dir", s(&dir), "--out", s(&results)])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ticks = tick_intervals(&results);
    let db = rusqlite::Connection::open(&results).unwrap();
    let config: String = db.query_row("SELECT config_json FROM host", [], |r| r.get(0)).unwrap();
    let priority = serde_json::from_str::<serde_json::Value>(&config).unwrap()["collector_priority"].clone();
    // Exact seconds on the run's clock: a collector late for one (hundreds of threads
    // starting) stores the seconds it missed as one tick of their whole length, named;
    // never a run collapsed into a tick or two, never a second of 1.13 s.
    assert!(ticks.len() >= 3, "a tick per second of 5 s: {ticks:?} (collector {priority})");
    assert!(
        ticks.iter().all(|(_, i)| i.fract() == 0.0 && *i >= 1.0),
        "whole seconds: {ticks:?} (collector {priority})"
    );
    assert!(ticks[0].1 <= 3.0, "the first second at most a little late: {ticks:?} (collector {priority})");
    assert_eq!(
        ticks.iter().map(|t| t.1).sum::<f64>(),
        5.0,
        "the run's 5 s, each once: {ticks:?} (collector {priority})"
    );
}

/// A tmpfs mounted at `dir` with `options` (unmounted on drop), or None with the reason
/// printed when this is not possible here (not root, no mount).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, options: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            skip("mounting a tmpfs needs root");
            return None;
        }
        let out = match Command::new("mount").args(["-t", "tmpfs", "-o", options, "tmpfs", s(dir)]).output() {
            Ok(out) => out,
            Err(e) => {
                skip(&format!("cannot run mount: {e}"));
                return None;
            }
        };
        if !out.status.success() {
            skip(&format!("cannot mount a tmpfs: {}", String::from_utf8_lossy(&out.stderr).trim()));
            return None;
        }
        Some(Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_working_set_larger_than_the_free_space_is_refused_before_any_write() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(&tmp.path().join("small"), "size=8m") else { return };
    let dir = fs.0.join("ws");
    let results = tmp.path().join("r.db");
    let out = ioscope()
        .args(["run", "--size", "16m", "--duration", "1s", "--dir", s(&dir), "--out", s(&results)])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs 16 MiB more") && stderr.contains("free"), "{stderr}");
    assert!(!dir.exists() && !results.exists(), "nothing was written");
    // Also when the directory exists and holds someone's file.
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("keep.txt"), b"user data").unwrap();
    let out = ioscope()
        .args(["run", "--size", "16m", "--duration", "1s", "--dir", s(&dir), "--out", s(&results)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["keep.txt"], "only the user's file is there");
}

#[test]
fn a_dir_on_a_read_only_file_system_is_refused_before_any_io() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(&tmp.path().join("ro"), "ro,size=1m") else { return };
    let results = tmp.path().join("r.db");
    for dir in [fs.0.clone(), fs.0.join("ws")] {
        let out = ioscope()
            .args(["run", "--size", "4m", "--duration", "1s", "--dir", s(&dir), "--out", s(&results)])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("ioscope cannot") && stderr.contains("Read-only file system"), "{stderr}");
        assert!(!results.exists());
    }
}

#[test]
fn enospc_while_preparing_removes_the_files_of_this_run_and_keeps_everything_else() {
    let tmp = tempfile::tempdir().unwrap();
    // Room for bytes, but only six inodes: the root, ws, the user's file, the lock file, the
    // marker and one data file; the second data file fails with ENOSPC.
    let Some(fs) = Tmpfs::mount(&tmp.path().join("small"), "size=32m,nr_inodes=6") else { return };
    let dir = fs.0.join("ws");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("keep.txt"), b"user data").unwrap();
    let results = tmp.path().join("r.db");
    let args = [
        "run",
        "--size",
        "8m",
        "--files",
        "4",
        "--duration",
        "1s",
        "--cleanup",
        "--dir",
        s(&dir),
        "--out",
        s(&results),
    ];
    let out = ioscope().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, ["keep.txt"], "no partial file, marker or lock is left: {stderr}");
    assert_eq!(std::fs::read(dir.join("keep.txt")).unwrap(), b"user data");
}

#[test]
fn a_second_run_on_the_same_dataset_dir_is_refused_and_cleanup_takes_the_tree_and_its_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = tmp.path().join("tree.toml");
    let tree = tmp.path().join("tree");
    std::fs::write(
        &toml,
        format!(
            "duration = \"3s\"\n[dataset]\ndir = \"{}\"\ndepth = 1\nwidth = 2\nfiles = 4\nsizes = \"8k\"\n\
             [[workload]]\noperation = \"read\"\nthreads = 1\n",
            s(&tree)
        ),
    )
    .unwrap();
    let first_results = tmp.path().join("first.db");
    let first = ioscope()
        .args(["run", s(&toml), "--cleanup", "--quiet", "--out", s(&first_results)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !first_results.exists() && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let second = tmp.path().join("second.db");
    let out = output_within(ioscope().args(["run", s(&toml), "--out", s(&second)]), Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("pid {}", first.id())) && stderr.contains(s(&first_results)), "{stderr}");
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!tree.exists(), "--cleanup removes the tree and the directory the run made");
}

#[test]
fn more_files_than_the_open_file_limit_allows_are_refused_before_any_io() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let results = tmp.path().join("r.db");
    let args = ["run", "--files", "500", "--size", "4m", "--threads", "2", "--duration", "2s", "--quiet"];
    let out = ioscope_with_nofile(64, &[&args[..], &["--dir", s(&dir), "--out", s(&results)]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("2 thread(s) × 500 file(s) need 1003 open files"), "{stderr}");
    assert!(!dir.exists() && !results.exists(), "nothing was written");
}

// ---- The engine table: every engine is reachable from the command line ----

#[test]
fn every_engine_in_the_table_is_accepted_by_engine_and_listed_in_the_help() {
    // Help text is wrapped to the width of a terminal: compare with whitespace folded.
    let fold = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let help = fold(&String::from_utf8_lossy(&run_ok(&["run", "--help"]).stdout));
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    for e in ioscope_engine_table::ENGINES {
        let listed = format!("{} ({})", e.name, fold(e.description));
        assert!(help.contains(&listed), "`run --help` lists {listed:?}:\n{help}");
        for name in std::iter::once(e.name).chain(e.aliases.iter().copied()) {
            let mut args = vec!["run", "--engine", name, "--duration", "1ns", "--out", s(&results)];
            match e.caps.target {
                Some(rule) => args.extend(["--target", rule.example]),
                None => args.extend(["--dir", s(tmp.path())]),
            }
            // Only the duration is refused (exit 2 before any I/O): the engine was taken.
            let err = invalid_input(&args);
            assert!(err.contains("--duration 1ns: error"), "--engine {name}: {err}");
            assert!(
                !err.contains("--engine") && !err.contains("--target") && !err.contains("--dir"),
                "--engine {name}: {err}"
            );
        }
    }
    assert!(!results.exists(), "nothing was run");
}

// ---- Key table: the workload flags, their help and fio's spellings ----

#[test]
fn every_key_in_the_key_table_is_in_the_cli_help() {
    use ioscope_workload::keys::{self, FioMeaning, Section};
    for command in ["run", "validate"] {
        let out = run_ok(&[command, "--help"]);
        let help = String::from_utf8_lossy(&out.stdout);
        for key in keys::in_section(Section::Top) {
            if let Some(flag) = key.flag {
                assert!(help.contains(&format!("--{flag}")), "`ioscope {command} --help` has no --{flag}:\n{help}");
                assert!(help.contains(key.help.trim_end_matches('.')), "--{flag}'s help is not the table's");
            }
        }
        // Keys without a flag of their own are listed under --set.
        for key in keys::settable() {
            assert!(help.contains(&key), "`ioscope {command} --help` does not name the key {key}");
        }
        for option in keys::FIO_OPTIONS {
            if let FioMeaning::NoOp(why) = option.meaning {
                assert!(help.contains(&format!("--{}", option.name)) && help.contains(why), "{}", option.name);
            }
        }
    }
    // The drift the table ended: --engine names nfs, --iodepth is not for uring only.
    let help = String::from_utf8_lossy(&run_ok(&["run", "--help"]).stdout).into_owned();
    let line = |flag: &str| help.lines().skip_while(|l| !l.contains(flag)).nth(1).unwrap_or("").to_string();
    assert!(line("--engine <ENGINE>").contains("nfs"), "{help}");
    assert!(line("--iodepth <N>").contains("nfs and null"), "{help}");
}

#[test]
fn an_unknown_fio_option_exits_2_naming_it_and_why() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let dir = tmp.path().join("data");
    for (args, says) in [
        (
            &["--readonly=1"][..],
            "--readonly 1: error: expected a flag ioscope has (fio's --readonly has no equivalent)",
        ),
        // fio's verify methods are ioscope's --verify, which engine null cannot do.
        (&["--verify=md5"][..], "--verify md5: error: expected verify = \"off\" here"),
        // fio's options the importer converts are converted; a value that does not is refused.
        (&["--filename", "/a/x:/b/y"][..], "--filename /a/x:/b/y: error: expected a file or a device"),
        (&["--bssplit=4k/50:8k/60"][..], "--bssplit 4k/50:8k/60: error: expected size/percent pairs"),
        (&["--fsync=8"][..], "--fsync 8: error: expected 1 or 0"),
        (&["--ioengine=rbd"][..], "--ioengine rbd: error: expected one of: posix, uring"),
        (&["--output", "report.txt"][..], "--output report.txt: error: expected a flag ioscope has"),
    ] {
        let mut all = vec!["run", "--engine", "null", "--dir", s(&dir), "--duration", "1s", "--out", s(&results)];
        all.extend_from_slice(args);
        let err = invalid_input(&all);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("tip:"), "not clap's generic tip: {err}");
        assert!(!results.exists() && !dir.exists(), "nothing was prepared or run");
    }
}

#[test]
fn a_run_with_fio_spellings_records_the_workload_hash_of_the_native_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let hash = |name: &str, flags: &[&str]| {
        let results = tmp.path().join(name);
        let mut args = vec!["run", "--quiet", "--json", "--out", s(&results)];
        args.extend_from_slice(flags);
        let summary = json_of(&run_ok(&args));
        summary["workload"]["hash"].as_str().expect("the summary's workload hash").to_string()
    };
    let native = hash(
        "native.db",
        &["--engine", "null", "--threads", "2", "--duration", "1s", "--rw", "rw", "--rwmix-read", "70", "--direct"],
    );
    let fio = hash(
        "fio.db",
        &[
            "--ioengine=null",
            "--numjobs=2",
            "--runtime=1",
            "--time_based",
            "--readwrite=readwrite",
            "--rwmixread=70",
            "--direct=1",
            "--group_reporting",
        ],
    );
    assert_eq!(native, fio);
}

// ---- Command line: output files, pre-flight checks, progress, skips ----------------------

/// Files and directories under `dir`, recursively (to show that nothing was created).
fn tree_of(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        found.push(entry.path());
        if entry.file_type().unwrap().is_dir() {
            found.extend(tree_of(&entry.path()));
        }
    }
    found.sort();
    found
}

#[test]
fn a_bad_out_or_dir_is_refused_with_exit_2_before_any_file_is_created() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    let results = tmp.path().join("r.db");
    let cases: [(&str, &str, &str); 5] = [
        (s(&ws), "/proc/r.db", "/proc/r.db"),
        (s(&ws), "/nonexistent/r.db", "directory /nonexistent does not exist"),
        (s(&ws), s(tmp.path()), "exists"),
        ("/proc/x", s(&results), "/proc/x"),
        ("/nonexistent/ws", s(&results), "parent directory /nonexistent does not exist"),
    ];
    for (dir, out, says) in cases {
        let args = ["run", "--rw", "randwrite", "--size", "4m", "--duration", "1s", "--dir", dir, "-o", out];
        let done = ioscope().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(2), "--dir {dir} --out {out}: {err}");
        assert!(err.contains(says), "--dir {dir} --out {out}: expected {says:?} in: {err}");
        assert!(!err.contains("preparing"), "refused before the working set: {err}");
        assert_eq!(tree_of(tmp.path()), Vec::<PathBuf>::new(), "--dir {dir} --out {out}: {err}");
    }
}

#[test]
fn progress_is_one_line_per_second_with_step_and_threads_when_stderr_is_not_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let out = tmp.path().join(name);
        let args = ["run", "--engine", "null", "--rate-iops", "1000", "--staircase", "1-2/2s", "-o", s(&out)];
        let done = ioscope().args(args).args(extra).stdout(Stdio::null()).output().unwrap();
        assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
        String::from_utf8_lossy(&done.stderr).into_owned()
    };
    let err = run("auto.db", &[]);
    let lines: Vec<&str> = err.lines().collect();
    let header = lines.iter().position(|l| l.contains("IOPS") && l.contains("p99")).expect(&err);
    let seconds: Vec<Vec<&str>> = lines[header + 1..]
        .iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .take_while(|f| f.len() >= 9 && f[0].len() == 8 && f[0].as_bytes()[2] == b':')
        .collect();
    assert!(seconds.len() >= 3, "a line per second of 4 s: {err}");
    assert_eq!(
        (seconds[0][1], seconds[0][2], seconds[0][3]),
        ("0", "1/2", "1"),
        "second (from 0, as stored), step, threads: {err}"
    );
    let last = seconds.last().unwrap();
    assert_eq!((last[2], last[3]), ("2/2", "2"), "the second step runs 2 threads: {err}");
    assert!(err.contains("threads=2"), "the step's label: {err}");
    assert_eq!(run("lines.db", &["--progress", "lines"]).lines().filter(|l| l.contains("IOPS")).count(), 1);
    for quiet in [&["--progress", "none"][..], &["--quiet"][..]] {
        let err = run(&format!("{}.db", quiet.len()), quiet);
        assert!(!err.contains("IOPS") && !err.contains("1/2"), "{quiet:?}: {err}");
    }
}

#[test]
fn every_command_that_writes_a_file_takes_o_and_replaces_it_only_with_force() {
    let tmp = tempfile::tempdir().unwrap();
    let results = null_results(tmp.path());
    let file = |name: &str| tmp.path().join(name);
    let commands: Vec<(Vec<&str>, PathBuf)> = vec![
        (vec!["show", s(&results), "--json"], file("summary.json")),
        (vec!["export", s(&results), "--format", "csv"], file("seconds.csv")),
        (vec!["import", "vdbench", "examples/vdbench-seed.parm"], file("seed.toml")),
        (vec!["import", "fio", "tests/fio-jobs/randread-qd1-latency.fio"], file("fio.toml")),
        (vec!["report", s(&results)], file("report.html")),
        (vec!["plot", s(&results)], file("heat.png")),
    ];
    for (args, out) in &commands {
        run_ok(&[&args[..], &["-o", s(out)]].concat());
        let first = std::fs::read(out).unwrap();
        assert!(!first.is_empty(), "{args:?} wrote {}", out.display());
        std::fs::write(out, b"mine").unwrap();
        let again = ioscope().args(args).args(["-o", s(out)]).output().unwrap();
        let err = String::from_utf8_lossy(&again.stderr);
        assert_eq!(again.status.code(), Some(2), "{args:?} over an existing file: {err}");
        assert!(err.contains("use --force"), "{args:?}: {err}");
        assert_eq!(std::fs::read(out).unwrap(), b"mine", "{args:?} left the file alone");
        run_ok(&[&args[..], &["-o", s(out), "--force"]].concat());
        assert_eq!(std::fs::read(out).unwrap().len(), first.len(), "{args:?} --force replaced it");
        let nowhere = ioscope().args(args).args(["-o", "/nonexistent/f"]).output().unwrap();
        assert_eq!(nowhere.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&nowhere.stderr));
    }
    // A results file is never replaced: run and demo refuse an existing one.
    for args in [vec!["run", "--engine", "null", "--duration", "1s"], vec!["demo", "--duration", "1s"]] {
        let done = ioscope().args(&args).args(["-o", s(&results)]).output().unwrap();
        let err = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("exists"), "{args:?}: {err}");
    }
}

/// Asked to skip by the test below; passes (or fails) like any test that cannot run here.
#[test]
fn a_test_that_cannot_run_here() {
    if std::env::var_os("IOSCOPE_TEST_SKIP_PROBE").is_some() {
        skip("the probe was asked to skip");
    }
}

#[test]
fn a_skipped_test_says_why_and_fails_when_ci_requires_every_test() {
    let probe = |require: &str| {
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "a_test_that_cannot_run_here", "--nocapture", "--test-threads", "1"])
            .env("IOSCOPE_TEST_SKIP_PROBE", "1")
            .env(skip::REQUIRE_ALL, require)
            .output()
            .unwrap()
    };
    let here = probe("0");
    let text = String::from_utf8_lossy(&here.stderr);
    assert!(here.status.success(), "{text}");
    assert!(text.contains("skipped: the probe was asked to skip"), "the reason is printed: {text}");
    let ci = probe("1");
    let text = format!("{}{}", String::from_utf8_lossy(&ci.stdout), String::from_utf8_lossy(&ci.stderr));
    assert!(!ci.status.success(), "a skip fails under {}=1: {text}", skip::REQUIRE_ALL);
    assert!(text.contains("the probe was asked to skip"), "{text}");
}

// ---- Preparation: markers ----

#[test]
fn a_damaged_marker_is_refused_with_exit_2_naming_the_file_for_a_working_set_and_a_dataset() {
    let tmp = tempfile::tempdir().unwrap();
    let (ws, tree) = (tmp.path().join("ws"), tmp.path().join("tree"));
    for d in [&ws, &tree] {
        std::fs::create_dir(d).unwrap();
    }
    let toml = tmp.path().join("tree.toml");
    std::fs::write(
        &toml,
        format!(
            "duration = \"1s\"\n[dataset]\ndir = \"{}\"\ndepth = 0\nwidth = 1\nfiles = 2\nsizes = \"4k\"\n\
             [[workload]]\noperation = \"read\"\nthreads = 1\n",
            s(&tree)
        ),
    )
    .unwrap();
    let ws_marker = ws.join(".ioscope-workset.json");
    let tree_marker = tree.join(".ioscope-dataset.json");
    std::fs::write(&ws_marker, b"{\"files\": [").unwrap();
    std::fs::write(&tree_marker, b"not json").unwrap();
    let flat = ["run", "--rw", "randread", "--size", "1m", "--files", "1", "--duration", "1s", "--quiet"];
    let runs: [(Vec<&str>, &Path); 2] =
        [([&flat[..], &["--dir", s(&ws)]].concat(), &ws_marker), (vec!["run", s(&toml), "--quiet"], &tree_marker)];
    for (args, marker) in runs {
        let results = tmp.path().join("r.db");
        let out = ioscope().args(&args).args(["--out", s(&results)]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.starts_with(&format!("error: {}: unreadable marker (", s(marker))), "{stderr}");
        assert!(stderr.contains("--force"), "{stderr}");
        assert!(!results.exists(), "nothing was run");
    }
    // Nothing was written or removed: each directory holds its marker (and at most the lock).
    for d in [&ws, &tree] {
        let names: Vec<String> =
            std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert!(names.iter().all(|n| n.starts_with(".ioscope")), "{names:?}");
    }
    // --force takes the directory as not ioscope's, and runs.
    let forced = tmp.path().join("forced.db");
    let out = ioscope().args(flat).args(["--dir", s(&ws), "--force", "--out", s(&forced)]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

// --- UI over HTTPS ---------------------------------------------------------------------

#[test]
fn a_bad_tls_certificate_is_refused_with_exit_2_before_the_working_set_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let missing = tmp.path().join("missing.pem");
    let out = format!("{}/r.db", tmp.path().display());
    let tls = ["--ui", "--listen", "127.0.0.1:0", "--tls-cert", s(&missing), "--tls-key", s(&missing)];
    let (code, stderr) = run_with(&dir, &[&["--out", &out][..], &tls[..]].concat());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--tls-cert") && stderr.contains("missing.pem"), "{stderr}");
    assert!(!dir.exists(), "the working set was written before the refusal");
    // A certificate without its key (or the other way round) is refused by the flags.
    let only_cert = ioscope().args(["ui", &out, "--tls-cert", s(&missing)]).output().unwrap();
    assert_eq!(only_cert.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&only_cert.stderr).contains("--tls-key"));
}

// --- Distributions per worker and per file; SQL views of the results file ------------

/// What a histogram says: its buckets, count, sum and max (the recorder keeps a min per
/// bucket, the per-file breakdown the exact one).
fn cells(h: &ioscope_metrics::Histogram) -> (Vec<(usize, u64)>, u64, u128, Option<u64>) {
    (h.nonzero().collect(), h.count(), h.sum(), h.max())
}

/// Every second's latency of `op` merged: per op, per worker and per file.
#[allow(clippy::type_complexity)]
fn merged_latency(r: &ioscope_store::Results, op: &str) -> [(Vec<(usize, u64)>, u64, u128, Option<u64>); 3] {
    let mut out: [ioscope_metrics::Histogram; 3] = Default::default();
    for s in &r.seconds {
        s.ops.iter().filter(|o| o.op.name() == op).for_each(|o| out[0].merge(&o.data.latency_ns));
        s.worker_dists.iter().filter(|w| w.op.name() == op).for_each(|w| out[1].merge(&w.data.latency_ns));
        s.file_dists.iter().filter(|f| f.op.name() == op).for_each(|f| out[2].merge(&f.data.latency_ns));
    }
    out.map(|h| cells(&h))
}

#[test]
fn latency_breaks_down_by_file_and_worker_in_a_run_and_the_parts_add_up_to_the_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.db");
    let args = ["run", "--rw", "randrw", "--files", "3", "--size", "6m", "--threads", "3", "--duration", "2s"];
    let more = ["--sync", "fdatasync", "--breakdown-top", "2", "--quiet"];
    run_ok(&[&args[..], &more[..], &["--dir", s(&tmp.path().join("d")), "--out", s(&out)]].concat());
    let r = ioscope_store::open(&out).unwrap();
    assert!(r.seconds.iter().all(|s| s.not_broken_down == 0), "the collector kept up");
    for s in &r.seconds {
        for op in ["read", "write", "fdatasync"] {
            // The two busiest workers and files, and "(other)" for the third.
            let workers: Vec<String> =
                s.worker_dists.iter().filter(|w| w.op.name() == op).map(|w| format!("{:?}", w.worker)).collect();
            assert!(workers.len() <= 3 && workers.iter().any(|w| w == "None"), "{op}: {workers:?}");
            let files: Vec<&str> = s.file_dists.iter().filter(|f| f.op.name() == op).map(|f| f.file.as_str()).collect();
            assert!(
                files.len() <= 3 && files.iter().all(|f| f.starts_with("ioscope.") || *f == "(other)"),
                "{files:?}"
            );
            // The workers add up to the whole in every second (one read of the recorders).
            let mut whole = ioscope_metrics::Histogram::new();
            s.ops.iter().filter(|o| o.op.name() == op).for_each(|o| whole.merge(&o.data.latency_ns));
            let mut parts = ioscope_metrics::Histogram::new();
            s.worker_dists.iter().filter(|w| w.op.name() == op).for_each(|w| parts.merge(&w.data.latency_ns));
            assert_eq!(cells(&parts), cells(&whole), "second {} {op}: workers", s.second);
            // And the files: each per-file record goes to the second whose read of the
            // recorders has its I/O (none of the next second's, none left for a later one).
            let mut files = ioscope_metrics::Histogram::new();
            s.file_dists.iter().filter(|f| f.op.name() == op).for_each(|f| files.merge(&f.data.latency_ns));
            assert_eq!(cells(&files), cells(&whole), "second {} {op}: files", s.second);
        }
        // Sync operations have no size or offset, in the per-file rows either.
        assert!(s.file_dists.iter().filter(|f| f.op.name() == "fdatasync").all(|f| f.data.size_bytes.is_empty()));
    }
    // The files add up to the whole over the run (each I/O in the second it completed in).
    for op in ["read", "write", "fdatasync"] {
        let [whole, workers, files] = merged_latency(&r, op);
        assert!(whole.1 > 0);
        assert_eq!(workers, whole, "{op}: workers");
        assert_eq!(files, whole, "{op}: files");
    }
    // The API answers by file like the store holds it, "(other)" included.
    let api = ioscope_web::Api::new(std::slice::from_ref(&out));
    let by_file = api.get("/api/v1/runs/0/heatmap", "stat=latency&by=file&where=op:write").json();
    let total: u64 = by_file["series"].as_array().unwrap().iter().map(|s| s["total"].as_u64().unwrap()).sum();
    assert_eq!(total, merged_latency(&r, "write")[0].1);
    let meta: String = rusqlite::Connection::open(&out)
        .unwrap()
        .query_row("SELECT value FROM meta WHERE key = 'breakdown'", [], |r| r.get(0))
        .unwrap();
    assert!(meta.starts_with("breakdown_top = 2:"), "{meta}");
}

#[test]
fn a_file_tree_run_has_per_file_counters_and_latency() {
    // The rsync example, shortened: random reads and writes over a small tree.
    let tmp = tempfile::tempdir().unwrap();
    let toml = tmp.path().join("w.toml");
    std::fs::write(
        &toml,
        format!(
            "engine = \"posix\"\nduration = \"2s\"\nbreakdown_top = 4\n\n[dataset]\ndir = \"{}\"\ndepth = 1\nwidth = 2\n\
             files = 10\nsizes = \"8k:60,32k:40\"\n\n[[workload]]\nname = \"readers\"\noperation = \"read\"\n\
             rwmix_read = 50\nbs = \"8k\"\nfileio = \"random\"\nthreads = 2\n",
            tmp.path().join("tree").display()
        ),
    )
    .unwrap();
    let out = tmp.path().join("r.db");
    run_ok(&["run", s(&toml), "--out", s(&out), "--quiet"]);
    let r = ioscope_store::open(&out).unwrap();
    assert!(r.seconds.iter().all(|s| s.not_broken_down == 0), "the collector kept up");
    let mut names = std::collections::BTreeSet::new();
    let mut totals = std::collections::BTreeMap::<&str, (u64, u64)>::new();
    for s in &r.seconds {
        for op in ["open", "read", "write", "close"] {
            // Counters: the 4 busiest files and "(other)"; as many I/O as the distributions.
            let whole: u64 = s.ops.iter().filter(|o| o.op.name() == op).map(|o| o.data.counts.ops).sum();
            let rows: Vec<_> = s.files.iter().filter(|f| f.op.name() == op).collect();
            assert!(rows.iter().filter(|f| f.file != "(other)").count() <= 4, "{rows:?}");
            let parts: u64 = rows.iter().map(|f| f.counts.ops).sum();
            let dists: u64 = s.file_dists.iter().filter(|f| f.op.name() == op).map(|f| f.data.counts.ops).sum();
            assert_eq!(dists, parts, "second {} {op}", s.second);
            let t = totals.entry(op).or_default();
            (t.0, t.1) = (t.0 + whole, t.1 + parts);
            names.extend(rows.iter().map(|f| f.file.clone()));
        }
        // Open and close have a latency per file, and no size or offset.
        for f in s.file_dists.iter().filter(|f| matches!(f.op.name(), "open" | "close")) {
            assert!(f.data.latency_ns.count() > 0 && f.data.size_bytes.is_empty() && f.data.offset_bytes.is_empty());
        }
    }
    assert!(names.iter().any(|n| n.starts_with("d00/f") || n.starts_with("d01/f")), "tree paths: {names:?}");
    // Over the run, the files add up to the whole (each I/O in the second it completed in).
    for (op, (whole, parts)) in totals {
        assert_eq!(parts, whole, "{op}");
        assert!(whole > 0 || op == "write", "{op}");
    }
    let [whole, _, files] = merged_latency(&r, "read");
    assert_eq!(files, whole, "read latency by file adds up to the whole");
    let api = ioscope_web::Api::new(std::slice::from_ref(&out));
    let by_file = api.get("/api/v1/runs/0/series", "stat=ops&by=file&where=op:read").json();
    assert!(by_file["series"].as_array().unwrap().len() >= 2, "{by_file}");
}

#[test]
fn summing_the_op_seconds_view_gives_the_summary_totals() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.db");
    let summary = json_of(&run_ok(&[
        "run",
        "--rw",
        "randrw",
        "--files",
        "2",
        "--size",
        "4m",
        "--threads",
        "2",
        "--duration",
        "2s",
        "--sync",
        "fsync",
        "--dir",
        s(&tmp.path().join("d")),
        "--out",
        s(&out),
        "--json",
        "--quiet",
    ]));
    let db = rusqlite::Connection::open(&out).unwrap();
    for op in ["read", "write", "fsync"] {
        let (ops, bytes, errors): (u64, u64, u64) = db
            .query_row(
                "SELECT sum(ops), sum(bytes), sum(errors) FROM op_seconds WHERE op = ?1 AND warmup = 0",
                [op],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        let o = &summary["ops"][op];
        assert_eq!(
            (ops, bytes, errors),
            (o["ops"].as_u64().unwrap(), o["bytes"].as_u64().unwrap(), o["errors"].as_u64().unwrap()),
            "{op}"
        );
        // The samples view holds the per-worker and per-file rows too: summing it counts twice or more.
        let naive: u64 = db
            .query_row("SELECT sum(value) FROM samples WHERE stat = 'io.ops' AND op = ?1", [op], |r| r.get(0))
            .unwrap();
        assert!(naive >= 2 * ops, "{op}: {naive} vs {ops}");
    }
    // Percentiles per second for SQL users: the API's, from the same histograms.
    let api = ioscope_web::Api::new(std::slice::from_ref(&out));
    let answer = api.get("/api/v1/runs/0/series", "stat=latency&where=op:write").json();
    let p99: Vec<Option<u64>> = answer["series"][0]["p99"].as_array().unwrap().iter().map(|v| v.as_u64()).collect();
    let mut stmt = db
        .prepare("SELECT p99 FROM percentiles WHERE stat = 'io.latency' AND op = 'write' AND worker IS NULL AND file IS NULL ORDER BY second")
        .unwrap();
    let sql: Vec<Option<u64>> = stmt.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(sql, p99);
}

#[test]
fn breakdown_top_sets_how_many_workers_and_files_get_distributions_and_0_turns_it_off() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |top: &str| {
        let out = tmp.path().join(format!("r{top}.db"));
        let args = ["run", "--engine", "null", "--threads", "3", "--duration", "1s", "--breakdown-top", top];
        run_ok(&[&args[..], &["--out", s(&out), "--quiet"]].concat());
        let meta: String = rusqlite::Connection::open(&out)
            .unwrap()
            .query_row("SELECT value FROM meta WHERE key = 'breakdown'", [], |r| r.get(0))
            .unwrap();
        (ioscope_store::open(&out).unwrap(), meta)
    };
    let (off, meta) = run("0");
    assert!(meta.starts_with("off"), "{meta}");
    assert!(off.seconds.iter().all(|s| s.worker_dists.is_empty() && s.file_dists.is_empty()));
    // The null engine does no I/O: broken down by worker (the busiest one and the rest), not by file.
    let (one, meta) = run("1");
    assert!(meta.contains("not per file"), "{meta}");
    for s in &one.seconds {
        let workers: Vec<Option<u32>> = s.worker_dists.iter().map(|w| w.worker).collect();
        assert!(workers.len() == 2 && workers.contains(&None), "{workers:?}");
        assert!(s.file_dists.is_empty() && s.not_broken_down == 0);
    }
    let out = tmp.path().join("bad.db");
    for bad in ["lots", "10001"] {
        let err = invalid_input(&["run", "--engine", "null", "--breakdown-top", bad, "--out", s(&out)]);
        assert!(err.contains("--breakdown-top") && err.contains(bad) && err.contains("0 to 10000"), "{err}");
    }
    assert!(!out.exists());
}

// ---- One definition of a second; only the I/O that has a quantity records it ----

/// Every op of every stored second: its counter, latency and service time count the same
/// I/Os; reads and writes (and creates) have a size each, reads and writes an offset each,
/// and no other op has either.
fn assert_each_second_counts_each_io_once_in_each_view(r: &ioscope_store::Results) {
    for snap in &r.seconds {
        for o in &snap.ops {
            let (d, at) = (&o.data, format!("second {} {} {}", snap.second, o.workload, o.op));
            assert_eq!(d.latency_ns.count(), d.counts.ops, "{at}: latency count = ops");
            assert_eq!(d.service_ns.count(), d.counts.ops, "{at}: service time count = ops");
            let sized = matches!(o.op.name(), "read" | "write" | "create" | "copy");
            assert_eq!(d.size_bytes.count(), if sized { d.counts.ops } else { 0 }, "{at}: size samples");
            assert_eq!(d.size_bytes.sum() as u64, d.counts.bytes, "{at}: bytes = the sizes' sum");
            let placed = matches!(o.op.name(), "read" | "write");
            assert_eq!(d.offset_bytes.count(), if placed { d.counts.ops } else { 0 }, "{at}: offset samples");
        }
    }
}

#[test]
fn every_stored_second_is_one_second_and_its_ops_latencies_and_offsets_count_the_same_ios() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let out = run_ok(&[
        "run",
        "--engine",
        "null",
        "--rw",
        "randrw",
        "--sync",
        "fdatasync",
        "--threads",
        "3",
        "--duration",
        "3s",
        "--out",
        s(&results),
        "--json",
        "--quiet",
    ]);
    let summary = json_of(&out);
    schema_check(&summary);
    let r = ioscope_store::open(&results).unwrap();
    let intervals: Vec<(u32, u64)> = r.seconds.iter().map(|x| (x.second, x.interval_ns)).collect();
    assert_eq!(
        intervals,
        [(0, 1_000_000_000), (1, 1_000_000_000), (2, 1_000_000_000)],
        "exact seconds (durations are whole seconds; a stopped run's last is its real length)"
    );
    assert_each_second_counts_each_io_once_in_each_view(&r);
    let sync = r.seconds.iter().flat_map(|x| &x.ops).filter(|o| o.op.name() == "fdatasync");
    assert!(sync.map(|o| o.data.counts.ops).sum::<u64>() > 0, "the run synced");
    // The summary's rate is the stored seconds' ops over their length, as the UI averages it.
    let ops: u64 = r.seconds.iter().map(|x| x.total().ops).sum();
    let seconds: u64 = r.seconds.iter().map(|x| x.interval_ns).sum();
    let iops = summary["total"]["iops"].as_f64().unwrap();
    let want = ops as f64 * 1e9 / seconds as f64;
    assert!((iops - want).abs() <= want * 1e-9, "summary {iops} IOPS, stored seconds {want}");
    assert_eq!(summary["duration_s"].as_f64().unwrap(), 3.0);
}

#[test]
fn a_file_tree_run_records_sizes_and_offsets_of_its_transfers_only() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = tmp.path().join("w.toml");
    let ops = ["read", "write", "create", "getattr", "delete"];
    std::fs::write(&toml, tree_workload(&tmp.path().join("tree"), 16, "8k", &ops, "2s")).unwrap();
    let results = tmp.path().join("r.db");
    run_ok(&["run", s(&toml), "--out", s(&results), "--quiet"]);
    let r = ioscope_store::open(&results).unwrap();
    assert!(r.seconds.iter().all(|x| x.interval_ns == 1_000_000_000), "two whole seconds");
    assert_each_second_counts_each_io_once_in_each_view(&r);
    let done = |op: &str| {
        r.seconds.iter().flat_map(|x| &x.ops).filter(|o| o.op.name() == op).map(|o| o.data.counts.ops).sum::<u64>()
    };
    for op in ["open", "close", "read", "write", "getattr"] {
        assert!(done(op) > 0, "{op} ran");
    }
}

#[test]
fn an_open_loop_run_stores_whole_seconds_of_about_its_rate_each() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let args = ["run", "--engine", "null", "--rate-iops", "500", "--threads", "2", "--duration", "3s"];
    run_ok(&[&args[..], &["--out", s(&results), "--quiet"]].concat());
    let r = ioscope_store::open(&results).unwrap();
    assert_each_second_counts_each_io_once_in_each_view(&r);
    let seconds: Vec<(u64, u64)> = r.seconds.iter().map(|x| (x.interval_ns, x.total().ops)).collect();
    // Workers asleep between their I/Os still count each in the second it completed in:
    // 500 a second, not 500 spread over a jittered interval.
    assert_eq!(seconds.len(), 3, "{seconds:?}");
    assert!(seconds.iter().all(|(i, ops)| *i == 1_000_000_000 && (450..=550).contains(ops)), "{seconds:?}");
}

// ---- The seeds' file-tree run, as a user drills it ------------------------------------

#[test]
fn the_rsync_example_shortened_shows_per_file_counters_and_latency_and_no_size_row_for_metadata() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("r.db");
    let dir = format!("dataset.dir={}", tmp.path().join("tree").display());
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/rsync-under-load.toml");
    run_ok(&[
        "run",
        example,
        "--set",
        "duration=3s",
        "--set",
        "warmup=1s",
        "--set",
        &dir,
        "--set",
        "probe.at=[\"2s\"]",
        "--set",
        "probe.command=\"true\"",
        "--out",
        s(&out),
        "--quiet",
    ]);
    let api = ioscope_web::Api::new(std::slice::from_ref(&out));
    let keys_and_totals = |path: &str, query: &str| -> Vec<(String, f64)> {
        let a = api.get(path, query).json();
        a["series"]
            .as_array()
            .unwrap_or_else(|| panic!("{query}: {a}"))
            .iter()
            .map(|s| {
                let total = s["total"]
                    .as_f64()
                    .unwrap_or_else(|| s["values"].as_array().unwrap().iter().filter_map(|v| v.as_f64()).sum::<f64>());
                (s["key"].as_str().unwrap().to_string(), total)
            })
            .collect()
    };
    // Per-file counters and latency, named by the file's path in the tree.
    let ops_by_file = keys_and_totals("/api/v1/runs/0/series", "stat=ops&by=file&where=op:read");
    assert!(ops_by_file.iter().any(|(k, n)| k.starts_with("d0") && k.contains("/f") && *n > 0.0), "{ops_by_file:?}");
    let latency_by_file = keys_and_totals("/api/v1/runs/0/heatmap", "stat=latency&by=file&where=op:read");
    assert!(
        latency_by_file.iter().filter(|(k, n)| k.starts_with("d0") && *n > 0.0).count() >= 2,
        "{latency_by_file:?}"
    );
    let whole = keys_and_totals("/api/v1/runs/0/heatmap", "stat=latency&where=op:read");
    let parts: f64 = latency_by_file.iter().map(|(_, n)| n).sum();
    assert_eq!(parts, whole[0].1, "the files and (other) add up to every read");
    // The size heat map has rows for the transfers only: no open or close series, no 1 B row.
    let size = api.get("/api/v1/runs/0/heatmap", "stat=size&by=op").json();
    let ops: Vec<&str> = size["series"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(ops, ["read", "write"], "{size}");
    let lowest = size["buckets"].as_array().unwrap().iter().map(|b| b[0].as_u64().unwrap()).min().unwrap();
    assert_eq!(lowest, 8192, "every transfer is 8 KiB: {}", size["buckets"]);
}

#[test]
fn a_run_offers_by_file_and_by_worker_only_for_the_distributions_it_broke_down() {
    let tmp = tempfile::tempdir().unwrap();
    let dims_of = |top: &str| -> Vec<String> {
        let out = tmp.path().join(format!("top-{top}.db"));
        let dir = tmp.path().join(format!("d{top}"));
        run_ok(&[
            "run",
            "--engine",
            "posix",
            "--dir",
            s(&dir),
            "--size",
            "4m",
            "--files",
            "2",
            "--threads",
            "2",
            "--rw",
            "randrw",
            "--duration",
            "1s",
            "--breakdown-top",
            top,
            // Below what the collector drains: at a million I/Os a second of buffered 4k
            // I/O, a second whose rings overflowed has no per-file distributions at all.
            "--rate-iops",
            "20000",
            "--out",
            s(&out),
            "--quiet",
        ]);
        let run = ioscope_web::Api::new(std::slice::from_ref(&out)).get("/api/v1/runs/0", "").json();
        let latency = run["stats"].as_array().unwrap().iter().find(|s| s["name"] == "latency").unwrap().clone();
        latency["dimensions"].as_array().unwrap().iter().map(|d| d.as_str().unwrap().to_string()).collect()
    };
    let on = dims_of("16");
    assert!(on.contains(&"file".to_string()) && on.contains(&"worker".to_string()), "{on:?}");
    // Off: "latency by file" is not offered (it would draw nothing), the rest still is.
    let off = dims_of("0");
    assert!(!off.contains(&"file".to_string()) && !off.contains(&"worker".to_string()), "{off:?}");
    assert!(off.contains(&"op".to_string()), "{off:?}");
}

// ---- Many hosts: the workload input ([[host]], --hosts) ----

#[test]
fn validate_names_the_hosts_of_a_many_host_file() {
    let out = run_ok(&["validate", "examples/hosts-staircase.toml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(": ok (posix randrw, 4 threads per host, 4 hosts, 4 steps, 4m)"), "{text}");
}

#[test]
fn a_bad_hosts_flag_exits_2_naming_the_flag_and_the_address_before_any_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let err = invalid_input(&[
        "run",
        "--engine",
        "null",
        "--hosts",
        "c1,-oProxyCommand=x",
        "--staircase",
        "hosts:1-3/1s",
        "--quiet",
        "--out",
        s(&results),
    ]);
    assert!(err.contains("--hosts c1,-oProxyCommand=x: error: expected [user@]host[:port]"), "{err}");
    assert!(err.contains("the host `-oProxyCommand=x` starts with `-`"), "{err}");
    assert!(!results.exists(), "nothing was run");
    let err = invalid_input(&["validate", "examples/hosts-staircase.toml", "--hosts", "a,b"]);
    assert!(err.contains("--staircase") || err.contains("staircase"), "{err}");
    assert!(err.contains("at most 2 hosts"), "{err}");
}

// ---- ioscope compare: two runs' figures, their difference and its interval ----

/// A null-engine run at `rate` IOPS of 1 s steps (plus `extra` flags) into `out`.
fn rated_run(out: &Path, rate: &str, extra: &[&str]) {
    let mut args = vec!["run", "--engine", "null", "--rate-iops", rate, "--duration", "1s", "--quiet", "--out", s(out)];
    args.extend_from_slice(extra);
    run_ok(&args);
}

/// `ioscope compare A B --json`, checked against schema/compare.schema.json.
fn compare_json(a: &Path, b: &Path) -> Value {
    let json = json_of(&run_ok(&["compare", s(a), s(b), "--json"]));
    let schema: Value = serde_json::from_str(include_str!("../schema/compare.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "comparison does not match its schema: {errors:#?}");
    json
}

/// The rows of a comparison's first step for `op` and `figure`.
fn compared<'a>(c: &'a Value, op: &str, figure: &str) -> &'a Value {
    c["steps"][0]["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["op"] == op && f["figure"] == figure)
        .unwrap_or_else(|| panic!("no {op} {figure} in {c:#}"))
}

// These two need `--repeat` (repeat sets in one results file). Three repeats of 1 s each
// (the least `--until-ci` takes) keep them short. The rate sets IOPS and MB/s, so those
// are what the tests assert on; the null engine's latency is the scheduler's jitter on a
// shared machine, which may really drift between two sets run seconds apart (p99 2.9 ms
// against 8.8 ms was seen), so it is not asserted.

#[test]
fn compare_reports_a_real_twenty_percent_difference_between_repeat_sets_as_significant() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.db"), tmp.path().join("b.db"));
    rated_run(&a, "1000", &["--repeat", "3"]);
    rated_run(&b, "1200", &["--repeat", "3"]);
    let c = compare_json(&a, &b);
    assert_eq!(c["method"], "welch", "{c:#}");
    assert_eq!((c["a"]["repeats"].as_u64(), c["b"]["repeats"].as_u64()), (Some(3), Some(3)));
    assert!(c["workload_differs"]["keys"].as_array().unwrap().contains(&"rate_iops".into()), "{c:#}");
    for op in ["read", "total"] {
        for figure in ["iops", "bytes_per_sec"] {
            let f = compared(&c, op, figure);
            assert_eq!(f["significant"], true, "{f:#}");
            assert_eq!(f["finding"], "higher", "{f:#}");
            let pct = f["difference_pct"].as_f64().unwrap();
            assert!((19.0..21.0).contains(&pct), "{f:#}");
            let (low, high) = (f["interval"]["low_pct"].as_f64().unwrap(), f["interval"]["high_pct"].as_f64().unwrap());
            assert!(low > 1.0 && low <= pct && pct <= high, "the interval holds the difference: {f:#}");
        }
    }
    let text = String::from_utf8(run_ok(&["compare", s(&a), s(&b)]).stdout).unwrap();
    let line = text.lines().find(|l| l.starts_with("read IOPS")).unwrap_or_else(|| panic!("{text}"));
    let pct: f64 = line
        .split_whitespace()
        .find_map(|w| w.strip_suffix('%')?.parse().ok())
        .unwrap_or_else(|| panic!("no percentage in {line:?}"));
    assert!(line.ends_with("yes") && (19.0..21.0).contains(&pct), "{text}");
    assert!(text.contains("method: Welch's t on the repeat means"), "{text}");
}

#[test]
fn compare_finds_no_significant_difference_between_repeat_sets_of_the_same_workload() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.db"), tmp.path().join("b.db"));
    rated_run(&a, "1000", &["--repeat", "3"]);
    rated_run(&b, "1000", &["--repeat", "3"]);
    let c = compare_json(&a, &b);
    assert_eq!(c["method"], "welch", "{c:#}");
    assert_eq!(c["workload_differs"], Value::Null, "{c:#}");
    // A run that held its rate repeats to a hundredth of a percent: the interval may well
    // exclude 0, but not ±1%, so it is no difference. On a busy machine a repeat may fall
    // short of its rate (989 of 1,000 was seen): then the comparison must say which run
    // did not hold its rate, or that the machine's load differed, beside any difference.
    let explained = c["notes"].as_array().unwrap().iter().any(|n| {
        let n = n.as_str().unwrap();
        n.contains("[rate-not-held]") || n.contains("the machine's load differed")
    });
    for op in ["read", "total"] {
        for figure in ["iops", "bytes_per_sec"] {
            let f = compared(&c, op, figure);
            if f["significant"] == true {
                assert!(explained, "a difference between runs of one workload, unexplained: {c:#}");
                continue;
            }
            assert_eq!(f["significant"], false, "{f:#}");
            assert!(["negligible", "not-significant"].contains(&f["finding"].as_str().unwrap()), "{f:#}");
        }
    }
}

#[test]
fn compare_fail_if_exits_3_on_a_regression_and_0_without_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.db"), tmp.path().join("b.db"));
    rated_run(&a, "1200", &["--repeat", "3"]);
    rated_run(&b, "1000", &["--repeat", "3"]);
    // B's reads are a sixth fewer than A's: a regression of more than 5% fails the comparison.
    let out = ioscope()
        .args(["compare", s(&a), s(&b), "--fail-if", "read.iops < -5%", "--fail-if", "total.iops < -50%"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("fail-if FAILED: read.iops < -5% (step 0: read IOPS -16."), "{text}");
    assert!(text.contains("fail-if passed: total.iops < -50%"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 of 2 --fail-if conditions failed"));
    let json =
        json_of(&ioscope().args(["compare", s(&a), s(&b), "--json", "--fail-if", "read.iops < -5%"]).output().unwrap());
    assert_eq!(json["fail_if"][0]["failed"], true, "{json:#}");
    // The other way round it is an improvement: nothing fails, exit 0.
    run_ok(&["compare", s(&b), s(&a), "--fail-if", "read.iops < -5%"]);
    // A condition that does not parse is bad input, named with its column, before any file is read.
    let err = invalid_input(&["compare", s(&a), "/nonexistent.db", "--fail-if", "read.iops < -5"]);
    assert!(err.contains("--fail-if \"read.iops < -5\": column 13: expected a signed percentage"), "{err}");
}

#[test]
fn compare_of_single_runs_gives_the_difference_and_says_it_may_be_noise() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.db"), tmp.path().join("b.db"));
    rated_run(&a, "1000", &[]);
    rated_run(&b, "1200", &[]);
    let c = compare_json(&a, &b);
    assert_eq!(c["method"], "single");
    assert_eq!(c["workload_differs"]["keys"], serde_json::json!(["rate_iops"]), "{c:#}");
    assert_eq!(c["system_differs"], serde_json::json!([]), "the same host and system");
    let f = compared(&c, "read", "iops");
    assert_eq!((&f["significant"], &f["interval"], &f["finding"]), (&Value::Null, &Value::Null, &"noise".into()));
    let pct = f["difference_pct"].as_f64().unwrap();
    assert!((18.0..22.0).contains(&pct), "{f:#}");
    assert!(c["notes"][0].as_str().unwrap().contains("may be noise"), "{c:#}");
    let text = String::from_utf8(run_ok(&["compare", s(&a), s(&b)]).stdout).unwrap();
    assert!(text.contains("workload differs (hash ") && text.contains("): rate_iops\n"), "{text}");
    let line = text.lines().find(|l| l.starts_with("read IOPS")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("may be noise") && line.ends_with('-'), "no interval, no verdict: {text}");
    assert!(text.contains("note: one run each: a difference may be noise"), "{text}");
}

#[test]
fn compare_of_a_file_that_cannot_be_read_exits_2_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let a = null_results(tmp.path());
    let missing = tmp.path().join("missing.db");
    let err = invalid_input(&["compare", s(&a), s(&missing)]);
    assert!(err.contains("run B cannot be read") && err.contains("missing.db"), "{err}");
    let junk = tmp.path().join("junk.db");
    std::fs::write(&junk, "not a database").unwrap();
    let err = invalid_input(&["compare", s(&junk), s(&a), "--json"]);
    assert!(err.contains("run A cannot be read") && err.contains("junk.db: not an ioscope results file"), "{err}");
    let err = invalid_input(&["compare", s(tmp.path()), s(&a)]);
    assert!(err.contains("run A cannot be read"), "{err}");
}

// ---- System record: `ioscope show --system` ----------------------------------------

#[test]
fn show_system_prints_each_hosts_record_with_sane_values_as_text_and_json() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, results) = (tmp.path().join("data"), tmp.path().join("r.db"));
    run_ok(&[
        "run",
        "--rw",
        "randread",
        "--size",
        "1m",
        "--duration",
        "1s",
        "--dir",
        s(&dir),
        "--quiet",
        "--out",
        s(&results),
    ]);
    let v = json_of(&run_ok(&["show", s(&results), "--system", "--json"]));
    let hosts = v.as_object().unwrap();
    assert_eq!(hosts.len(), 1, "one host: {v}");
    let (name, c) = hosts.iter().next().unwrap();
    assert!(c["cpus"].as_u64().is_some_and(|n| n >= 1), "{c}");
    assert!(c["memory_bytes"].as_u64().is_some_and(|m| m >= 64 << 20), "{c}");
    assert!(c["cpu_governor"].as_str().is_some_and(|g| !g.is_empty()), "\"none\" when there is no cpufreq: {c}");
    assert!(c["kernel"].as_str().is_some_and(|k| k.chars().next().unwrap().is_ascii_digit()), "{c}");
    assert!(c["kernel_cmdline"].is_string(), "{c}");
    let target = &c["target"];
    assert!(target["dir"].as_str().unwrap().ends_with("/data"), "{target}");
    assert!(target["fs_type"].as_str().is_some_and(|f| !f.is_empty()), "{target}");
    assert!(target["mount_options"].as_str().is_some_and(|o| o.contains("rw")), "{target}");
    assert!(target["device_major_minor"].as_str().is_some_and(|d| d.contains(':')), "{target}");
    // Every interface this machine has but loopback, each with its MTU and offloads.
    let on_machine: Vec<String> = std::fs::read_dir("/sys/class/net")
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lo")
        .collect();
    for nic in &on_machine {
        let n = &c["nics"][nic];
        assert!(n["mtu_bytes"].as_u64().is_some_and(|m| m >= 68), "{nic}: {n}");
        assert!(n["speed_mbit_per_sec"].is_null() || n["speed_mbit_per_sec"].as_u64().unwrap() > 0, "{nic}: {n}");
        assert!(n["offloads"].is_object(), "{nic}: {n}");
    }
    assert_eq!(c["ioscope_version"], env!("CARGO_PKG_VERSION"));
    // The same record as text, one labelled line per part.
    let text = String::from_utf8(run_ok(&["show", s(&results), "--system"]).stdout).unwrap();
    assert!(text.starts_with(&format!("host {name}\n")), "{text}");
    for label in ["cpu", "memory", "kernel", "command line", "target", "ioscope"] {
        assert!(text.contains(&format!("\n  {label:<14} ")), "{label} missing:\n{text}");
    }
    for nic in &on_machine {
        assert!(text.contains(&format!("  nic {nic}")), "{nic} missing:\n{text}");
    }
}

// ---- The target-bound verdict: a probed disk saturated over a run ---------------------

#[test]
fn a_probed_disk_kept_busy_is_target_bound_and_the_same_reads_at_a_low_rate_are_not() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(fs) = LoopExt4::mount(tmp.path()) else {
        skip("cannot make and mount an ext4 loop device here (needs root, losetup and mkfs.ext4)");
        return;
    };
    let disk = format!("disk {}", fs.dev.trim_start_matches("/dev/"));
    let dir = fs.mnt.join("data");
    let run = |name: &str, rate: &[&str]| {
        let out = tmp.path().join(name);
        let args = [
            "run",
            "--rw",
            "randread",
            "--direct",
            "--engine",
            "uring",
            "--iodepth",
            "8",
            "--bs",
            "1m",
            "--size",
            "16m",
            "--threads",
            "2",
            "--duration",
            "3s",
        ];
        let probe = ["--probe", "local", "--quiet", "--json", "--dir", s(&dir), "--out", s(&out)];
        let summary = json_of(&run_ok(&[&args[..], rate, &probe[..]].concat()));
        let on_disk: Vec<Value> = summary["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v["id"] == "target-bound" && v["evidence"]["resource"] == disk.as_str())
            .cloned()
            .collect();
        (summary, on_disk)
    };
    // Two threads with eight 1 MiB reads in flight each: the loop device is never idle,
    // even when other processes keep the CPUs busy.
    let (busy, found) = run("busy.db", &[]);
    assert_eq!(found.len(), 1, "{disk}: {} / target {}", busy["verdicts"], busy["target"]);
    let e = &found[0]["evidence"];
    assert!(e["busy_pct"].as_f64().unwrap() >= 90.0, "{e}");
    assert_eq!(e["load_on_same_host"], true, "ioscope ran on the probed host: {e}");
    assert!(e.get("step").is_none(), "a run without steps is judged over the run: {e}");
    // 50 reads a second leave it idle nearly all the time.
    let (_, found) = run("idle.db", &["--rate-iops", "50"]);
    // io_uring lets go of its files a moment after the process exits: until then the
    // file system is busy, and the loop device would be left behind.
    for _ in 0..50 {
        if Command::new("umount").arg(&fs.mnt).stderr(Stdio::null()).status().is_ok_and(|s| s.success()) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(found.is_empty(), "{found:?}");
}
