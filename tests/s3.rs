//! The `s3` engine against the MinIO server that scripts/test.sh starts
//! (scripts/s3-server.sh): flat GET/PUT workloads read back with s5cmd, every dataset
//! operation (GET, PUT, multipart, HEAD, DELETE, copy, move), errors named by their S3
//! code, credentials kept out of the results, and the server killed mid-run. The server
//! tests need IOSCOPE_S3_ENDPOINT, the AWS_* variables of the server's env file and
//! IOSCOPE_S5CMD (else they say why they skip); `server_` runs alone, last (it kills the
//! server and restarts it).

mod common;
mod skip;

use common::run::{ioscope, json_of, run_ok, s};

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The server: (endpoint, bucket, s5cmd).
fn server() -> Option<(String, String, String)> {
    let (Ok(endpoint), Ok(s5cmd)) = (std::env::var("IOSCOPE_S3_ENDPOINT"), std::env::var("IOSCOPE_S5CMD")) else {
        skip::skip("IOSCOPE_S3_ENDPOINT or IOSCOPE_S5CMD is not set (scripts/s3-server.sh start; source its env)");
        return None;
    };
    let bucket = std::env::var("IOSCOPE_S3_BUCKET").unwrap_or_else(|_| "ioscope".into());
    Some((endpoint, bucket, s5cmd))
}

/// `s3://BUCKET/PREFIX?endpoint=...` with a prefix of its own per test and process.
fn target(endpoint: &str, bucket: &str, name: &str) -> String {
    format!("s3://{bucket}/t{}-{name}?endpoint={endpoint}", std::process::id())
}

/// s5cmd against the server (the reference client).
fn s5cmd(bin: &str, endpoint: &str, args: &[&str]) -> Output {
    Command::new(bin).args(["--endpoint-url", endpoint]).args(args).output().unwrap()
}

/// The objects under a prefix, as s5cmd lists them: (name, size).
fn listed(bin: &str, endpoint: &str, prefix: &str) -> Vec<(String, u64)> {
    let out = s5cmd(bin, endpoint, &["ls", &format!("{prefix}/*")]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace().rev();
            let name = w.next()?.to_string();
            let size = w.next()?.parse().ok()?;
            Some((name, size))
        })
        .collect()
}

fn prefix_of(target: &str) -> String {
    target.split('?').next().unwrap().to_string()
}

#[test]
fn writes_of_part_of_an_object_or_sync_are_refused_before_any_io() {
    let tmp = tempfile::tempdir().unwrap();
    let t = "s3://bucket/p?endpoint=http://127.0.0.1:1";
    for (extra, says) in [
        (
            &["--rw", "randwrite", "--bs", "4k", "--size", "1m", "--files", "4"][..],
            "expected 256 KiB (the object size)",
        ),
        (
            &["--rw", "randwrite", "--bs", "256k", "--size", "1m", "--files", "4", "--sync", "fsync"][..],
            "nothing to sync",
        ),
    ] {
        let out = ioscope()
            .args(["run", "--engine", "s3", "--target", t, "--duration", "1s", "--out", s(&tmp.path().join("r.db"))])
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
    let out = ioscope()
        .args(["run", "--engine", "s3", "--target", "s3://Bad_Bucket/x", "--duration", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("lowercase"));
}

#[test]
#[ignore = "needs the MinIO server of scripts/s3-server.sh"]
fn s3_gets_and_puts_of_whole_objects_run_and_read_back_through_s5cmd() {
    let Some((endpoint, bucket, bin)) = server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let t = target(&endpoint, &bucket, "flat");
    let out = run_ok(&[
        "run",
        "--engine",
        "s3",
        "--target",
        &t,
        "--rw",
        "randrw",
        "--bs",
        "64k",
        "--size",
        "1m",
        "--files",
        "16",
        "--iodepth",
        "8",
        "--duration",
        "3s",
        "--verify",
        "--json",
        "--out",
        s(&results),
    ]);
    let v = json_of(&out);
    assert_eq!(v["status"], "completed", "{}", v["status_detail"]);
    // Every object read back was the one last written (headers and checksums, --verify).
    let checked = &v["verification"];
    assert!(checked["verified"].as_u64().unwrap() > 20, "{checked}");
    assert_eq!((checked["mismatches"].as_u64(), checked["unverified"].as_u64()), (Some(0), Some(0)), "{checked}");
    for op in ["read", "write"] {
        assert!(v["ops"][op]["ops"].as_u64().unwrap() > 20, "{op}: {}", v["ops"][op]);
        assert_eq!(v["ops"][op]["errors"], 0, "{op}: {}", v["ops"][op]);
        assert_eq!(v["ops"][op]["size_bytes"]["max"], 65536, "whole objects: {}", v["ops"][op]);
    }
    // What ioscope wrote is there for another client: 16 objects of 64 KiB, data that is
    // neither zero nor repeated.
    let objects = listed(&bin, &endpoint, &prefix_of(&t));
    let data: Vec<&(String, u64)> = objects.iter().filter(|(n, _)| n.ends_with(".dat")).collect();
    assert_eq!(data.len(), 16, "{objects:?}");
    assert!(data.iter().all(|(_, size)| *size == 65536), "{objects:?}");
    let got = s5cmd(&bin, &endpoint, &["cat", &format!("{}/{}", prefix_of(&t), data[0].0)]);
    assert_eq!(got.stdout.len(), 65536);
    assert!(got.stdout.iter().filter(|b| **b == 0).count() < 1024, "written data is not zeros");
    assert_ne!(got.stdout[..4096], got.stdout[4096..8192], "nor one block repeated");
    // The credentials are in no byte of the results file.
    let secret = std::env::var("AWS_SECRET_ACCESS_KEY").unwrap();
    let bytes = std::fs::read(&results).unwrap();
    assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()), "the secret key is stored");
    // The run records where it ran (endpoint, bucket, prefix) and that reads were ranged
    // GETs of part of an object only when asked: here every GET was whole.
    let show = json_of(&run_ok(&["show", s(&results), "--json"]));
    assert!(show.to_string().contains(&endpoint), "the endpoint is recorded");
    // An object ioscope did not make is never written into: the run is refused before any
    // I/O, naming it, and the object is left as it was.
    let foreign = target(&endpoint, &bucket, "foreign");
    let theirs = tmp.path().join("theirs.txt");
    std::fs::write(&theirs, b"not ioscope's").unwrap();
    let put = s5cmd(&bin, &endpoint, &["cp", s(&theirs), &format!("{}/ioscope.0.dat", prefix_of(&foreign))]);
    assert!(put.status.success(), "{}", String::from_utf8_lossy(&put.stderr));
    let out = ioscope()
        .args(["run", "--engine", "s3", "--target", &foreign, "--rw", "randwrite", "--bs", "64k", "--size", "128k"])
        .args(["--files", "2", "--duration", "1s", "--out", s(&tmp.path().join("f.db"))])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ioscope.0.dat") && stderr.contains("--force"), "{stderr}");
    let got = s5cmd(&bin, &endpoint, &["cat", &format!("{}/ioscope.0.dat", prefix_of(&foreign))]);
    assert_eq!(got.stdout, b"not ioscope's");
    // Cleanup removes what the run made, and only that.
    run_ok(&[
        "run",
        "--engine",
        "s3",
        "--target",
        &t,
        "--rw",
        "read",
        "--bs",
        "64k",
        "--size",
        "1m",
        "--files",
        "16",
        "--duration",
        "1s",
        "--quiet",
        "--cleanup",
        "--out",
        s(&tmp.path().join("c.db")),
    ]);
    assert!(listed(&bin, &endpoint, &prefix_of(&t)).is_empty(), "{:?}", listed(&bin, &endpoint, &prefix_of(&t)));
}

/// A dataset workload file with one `[[workload]]` per operation given.
fn dataset_file(dir: &Path, sizes: &str, workloads: &[(&str, &str)]) -> String {
    let mut text = format!(
        "engine = \"s3\"\nduration = \"3s\"\n[dataset]\ndepth = 1\nwidth = 2\nfiles = 8\nsizes = \"{sizes}\"\n"
    );
    for (name, extra) in workloads {
        text.push_str(&format!("[[workload]]\nname = \"{name}\"\n{extra}\n"));
    }
    let path = dir.join("w.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
#[ignore = "needs the MinIO server of scripts/s3-server.sh"]
fn s3_every_dataset_operation_runs_and_failures_are_named_by_their_s3_code() {
    let Some((endpoint, bucket, bin)) = server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = target(&endpoint, &bucket, "tree");
    // GET, PUT (create), HEAD, DELETE and LIST at once: the only failures are the races of
    // a delete with a read or a HEAD of the same object, named NoSuchKey and NotFound.
    let file = dataset_file(
        tmp.path(),
        "64k",
        &[
            ("get", "operation = \"read\"\nbs = \"64k\""),
            ("put", "operation = \"create\""),
            ("head", "operation = \"getattr\""),
            ("del", "operation = \"delete\""),
            ("ls", "operation = \"list\""),
        ],
    );
    let out = ioscope()
        .args(["run", &file, "--target", &t, "--json", "--max-errors", "off", "--out", s(&tmp.path().join("a.db"))])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json_of(&out);
    assert_eq!(v["ops"]["list"]["errors"], 0, "a listing under a prefix never fails: {}", v["ops"]["list"]);
    for op in ["read", "create", "getattr", "delete", "list"] {
        assert!(v["ops"][op]["ops"].as_u64().unwrap() > 0, "{op}: {}", v["ops"][op]);
        let kinds = v["ops"][op]["errors_by_kind"].as_object().cloned().unwrap_or_default();
        assert!(kinds.keys().all(|k| k == "NoSuchKey" || k == "NotFound"), "{op}: {kinds:?}");
    }
    assert_eq!(v["ops"]["create"]["size_bytes"]["max"], 65536, "a create PUTs the dataset's size");
    // Server-side copy and move (onto names a delete frees): each claims its objects, so
    // no failures at all.
    let file = dataset_file(
        tmp.path(),
        "64k",
        &[("cp", "operation = \"copy\""), ("mv", "operation = \"move\""), ("del", "operation = \"delete\"")],
    );
    let t2 = target(&endpoint, &bucket, "copy");
    let v = json_of(&run_ok(&["run", &file, "--target", &t2, "--json", "--out", s(&tmp.path().join("b.db"))]));
    for op in ["copy", "move", "delete"] {
        assert!(v["ops"][op]["ops"].as_u64().unwrap() > 0, "{op}: {}", v["ops"][op]);
        assert_eq!(v["ops"][op]["errors"], 0, "{op}: {}", v["ops"][op]);
    }
    // Large objects written in 5 MiB transfers are multipart uploads; an object is never
    // left shorter than its size (an upload the run cut short is aborted).
    let file =
        dataset_file(tmp.path(), "12m", &[("up", "operation = \"write\"\nfileio = \"sequential\"\nbs = \"5m\"")]);
    let t3 = target(&endpoint, &bucket, "multipart");
    let v = json_of(&run_ok(&["run", &file, "--target", &t3, "--json", "--out", s(&tmp.path().join("c.db"))]));
    assert!(v["ops"]["write"]["ops"].as_u64().unwrap() >= 3, "{}", v["ops"]["write"]);
    assert_eq!(v["ops"]["write"]["errors"], 0, "{}", v["ops"]["write"]);
    let objects = listed(&bin, &endpoint, &prefix_of(&t3));
    let data: Vec<_> = objects.iter().filter(|(n, _)| !n.starts_with('.')).collect();
    assert_eq!(data.len(), 16, "{objects:?}");
    assert!(data.iter().all(|(_, size)| *size == 12 << 20), "{objects:?}");

    // Objects removed behind the run's back: its GETs fail with NoSuchKey, by name, and
    // are counted as errors, never as transfers.
    let t4 = target(&endpoint, &bucket, "gone");
    let results = tmp.path().join("gone.db");
    let child = ioscope()
        .args([
            "run",
            "--engine",
            "s3",
            "--target",
            &t4,
            "--bs",
            "4k",
            "--size",
            "64k",
            "--files",
            "2",
            "--duration",
            "5s",
        ])
        .args(["--max-errors", "off", "--json", "--out", s(&results)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while listed(&bin, &endpoint, &prefix_of(&t4)).iter().filter(|(n, _)| n.ends_with(".dat")).count() < 2 {
        assert!(Instant::now() < deadline, "the working set never appeared");
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_secs(2));
    let rm = s5cmd(&bin, &endpoint, &["rm", &format!("{}/ioscope.*", prefix_of(&t4))]);
    assert!(rm.status.success(), "{}", String::from_utf8_lossy(&rm.stderr));
    let out = child.wait_with_output().unwrap();
    let v = json_of(&out);
    let read = &v["ops"]["read"];
    assert!(read["errors_by_kind"]["NoSuchKey"].as_u64().unwrap_or(0) > 0, "{read}");
    assert!(read["ops"].as_u64().unwrap() > 0, "the reads before the removal: {read}");

    // A bucket that is not there, and credentials the server does not know: refused
    // before any I/O, named.
    let out = ioscope()
        .args(["run", "--engine", "s3", "--target", &format!("s3://no-such-bucket-ioscope/x?endpoint={endpoint}")])
        .args(["--duration", "1s", "--out", s(&tmp.path().join("nb.db"))])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("NoSuchBucket"), "{}", String::from_utf8_lossy(&out.stderr));
    let out = ioscope()
        .args(["run", "--engine", "s3", "--target", &t, "--duration", "1s", "--out", s(&tmp.path().join("k.db"))])
        .env("AWS_ACCESS_KEY_ID", "NOSUCHKEY")
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("InvalidAccessKeyId"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "kills the MinIO server scripts/test.sh started, then restarts it (run alone, last)"]
fn server_killed_mid_run_ends_the_run_with_errors_counted_and_the_results_kept() {
    let Some((endpoint, bucket, _)) = server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("k.db");
    let t = format!("{}&timeout=3", target(&endpoint, &bucket, "kill"));
    let started = Instant::now();
    let child = ioscope()
        .args(["run", "--engine", "s3", "--target", &t, "--rw", "randread", "--bs", "4k", "--size", "1m"])
        .args(["--iodepth", "8", "--duration", "60s", "--quiet", "--out", s(&results)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/s3-server.sh");
    let state = std::env::var("IOSCOPE_S3_STATE_DIR").unwrap_or_else(|_| "/tmp/ioscope-s3".into());
    let killed = Command::new(&script).args(["kill-server", &state]).output().unwrap();
    assert!(killed.status.success(), "{}", String::from_utf8_lossy(&killed.stderr));
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let restarted = Command::new(&script).args(["restart-server", &state]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(4 + 15), "the run ended {took:?} after it started (60 s planned): {stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("refused"), "a clear message: {stderr}");
    let show = json_of(&run_ok(&["show", s(&results), "--json"]));
    assert_eq!(show["status"], "failed");
    assert!(show["total"]["errors"].as_u64().unwrap() > 0, "the requests in flight count as errors");
    assert!(show["total"]["ops"].as_u64().unwrap() > 100, "the seconds before the kill are kept");
    assert!(restarted.status.success(), "{}", String::from_utf8_lossy(&restarted.stderr));
}
