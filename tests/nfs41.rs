//! The `nfs` engine over NFSv4.1 (`nfs://HOST/PATH?version=4.1`) against the nfs-ganesha
//! that scripts/test.sh starts (scripts/nfs-ganesha.sh start-loop, with
//! IOSCOPE_NFS_LEASE_S=10 so that a run can outlast the lease): flat workloads, data read
//! back through NFSv3, every file-tree operation, a run longer than the lease, the server
//! paused past the timeout and killed mid-run. Each needs IOSCOPE_NFS_URL (else it says
//! why it skips); the `server_` tests run alone, one at a time, after the others (the
//! kill test restarts the server when done).

mod common;
mod skip;

use common::run::{ioscope, json_of, run_ok, s};

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The server scripts/nfs-ganesha.sh started: (URL, its export directory on this host).
fn nfs_server() -> Option<(String, PathBuf)> {
    let Ok(url) = std::env::var("IOSCOPE_NFS_URL") else {
        skip::skip("IOSCOPE_NFS_URL is not set (scripts/nfs-ganesha.sh start-loop)");
        return None;
    };
    let dir = std::env::var("IOSCOPE_NFS_EXPORT_DIR").unwrap_or_else(|_| "/tmp/ioscope-nfs/export".into());
    Some((url, PathBuf::from(dir)))
}

/// `URL/sub?version=4.1&...`.
fn v41(url: &str, sub: &str, options: &str) -> String {
    format!("{url}/{sub}?version=4.1{options}")
}

#[test]
fn nfs_versions_4_0_and_4_2_are_refused_before_any_io_naming_3_and_4_1() {
    let tmp = tempfile::tempdir().unwrap();
    for v in ["4", "4.0", "4.2"] {
        let out = ioscope()
            .args(["run", "--engine", "nfs", "--target", &format!("nfs://127.0.0.1/export?version={v}")])
            .args(["--duration", "1s", "--out", s(&tmp.path().join("r.db"))])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{v}: {stderr}");
        assert!(stderr.contains("only NFS versions 3 and 4.1 are supported"), "{v}: {stderr}");
        assert!(!tmp.path().join("r.db").exists());
    }
}

#[test]
#[ignore = "needs nfs-ganesha: scripts/test.sh starts one and sets IOSCOPE_NFS_URL"]
fn nfs41_flat_workloads_read_write_and_randrw_with_fsync_run_without_errors() {
    let Some((url, _)) = nfs_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let target = v41(&url, &format!("flat41-{}", std::process::id()), "&nconnect=2");
    for (rw, extra, ops) in [
        ("randwrite", &[][..], &["write"][..]),
        ("randread", &[][..], &["read"][..]),
        ("randrw", &["--sync", "fsync"][..], &["read", "write", "fsync"][..]),
        ("write", &["--sync", "fdatasync"][..], &["write", "fdatasync"][..]),
    ] {
        let results = tmp.path().join(format!("{rw}.db"));
        let mut args = vec!["run", "--engine", "nfs", "--target", &target, "--rw", rw, "--bs", "16k"];
        args.extend(["--size", "16m", "--iodepth", "8", "--threads", "2", "--duration", "2s"]);
        args.extend(extra);
        args.extend(["--quiet", "--json", "--out", s(&results)]);
        let v = json_of(&run_ok(&args));
        assert_eq!(v["total"]["errors"], 0, "{rw}: {}", v["ops"]);
        for op in ops {
            assert!(v["ops"][op]["ops"].as_u64().unwrap_or(0) > 50, "{rw} {op}: {}", v["ops"]);
        }
        let system = v["system"].to_string();
        assert!(system.contains("nfs v4.1 "), "the engine's setup names the version: {system}");
        assert!(system.contains("NFSv4.1 client"), "{system}");
    }
    // At a rate: the I/Os asked for are done, no more and no fewer (each second counts
    // what completed in it, so the run's IOPS is the rate).
    let v = json_of(&run_ok(&[
        "run",
        "--engine",
        "nfs",
        "--target",
        &target,
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--size",
        "16m",
        "--iodepth",
        "4",
        "--rate-iops",
        "500",
        "--duration",
        "4s",
        "--quiet",
        "--json",
        "--out",
        s(&tmp.path().join("rate.db")),
    ]));
    assert_eq!(v["total"]["errors"], 0, "{}", v["ops"]);
    let ops = v["total"]["ops"].as_u64().unwrap();
    assert!((1900..=2100).contains(&ops), "500 IOPS for 4 s: {ops} I/Os");
    let iops = v["total"]["iops"].as_f64().unwrap();
    assert!((475.0..=525.0).contains(&iops), "{iops} IOPS");
    // `show --system` names the NFS version.
    let shown = run_ok(&["show", s(&tmp.path().join("rate.db")), "--system"]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(text.lines().any(|l| l.trim_start().starts_with("nfs") && l.contains(" v4.1 server ")), "{text}");
}

#[test]
#[ignore = "needs nfs-ganesha: scripts/test.sh starts one and sets IOSCOPE_NFS_URL"]
fn nfs41_written_data_verifies_and_reads_back_identical_through_nfsv3() {
    let Some((url, export_dir)) = nfs_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let sub = format!("back41-{}", std::process::id());
    // A write pass, then a read pass that checks every block's header (--verify).
    let toml = tmp.path().join("w.toml");
    std::fs::write(
        &toml,
        format!(
            "engine = \"nfs\"\ntarget = \"{}\"\nsize = \"4m\"\nbs = \"4k\"\nrw = \"randrw\"\nduration = \"2s\"\n\
             iodepth = 8\nfor_rwmix_read = [0, 100]\n",
            v41(&url, &sub, "&nconnect=2")
        ),
    )
    .unwrap();
    let journal = tmp.path().join("j");
    let out = ioscope()
        .args(["run", "--verify", s(&toml), "--journal", s(&journal), "--quiet", "--json"])
        .args(["--out", s(&tmp.path().join("v.db"))])
        .output()
        .unwrap();
    let v = json_of(&out);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(v["verification"]["mismatches"], 0, "{}", v["verification"]);
    assert!(v["verification"]["verified"].as_u64().unwrap() > 500, "{}", v["verification"]);
    assert_eq!(v["total"]["errors"], 0);
    // `ioscope verify` reopens the journal's files over NFSv4.1 and finds every block.
    let verified = ioscope().args(["verify", "--journal", s(&journal)]).output().unwrap();
    let said = String::from_utf8_lossy(&verified.stdout);
    assert_eq!(verified.status.code(), Some(0), "{said}{}", String::from_utf8_lossy(&verified.stderr));
    // The file on the server, and the same file read over NFSv3 by another client (libnfs)
    // and by ioscope's own NFSv3 engine: identical, without a zero block.
    let on_server = std::fs::read(export_dir.join(&sub).join("ioscope.0.dat")).unwrap();
    assert_eq!(on_server.len(), 4 << 20);
    assert!(on_server.chunks(4096).all(|c| c.iter().any(|b| *b != 0)), "no zero block");
    let via_v3 = Command::new("nfs-cat").arg(format!("{url}/{sub}/ioscope.0.dat?version=3")).output().unwrap();
    assert!(via_v3.status.success(), "{}", String::from_utf8_lossy(&via_v3.stderr));
    assert!(via_v3.stdout == on_server, "NFSv3 reads what NFSv4.1 wrote");
    let v = json_of(&run_ok(&[
        "run",
        "--engine",
        "nfs",
        "--target",
        &format!("{url}/{sub}"),
        "--rw",
        "read",
        "--size",
        "4m",
        "--bs",
        "64k",
        "--duration",
        "1s",
        "--quiet",
        "--json",
        "--out",
        s(&tmp.path().join("v3.db")),
    ]));
    assert_eq!(v["total"]["errors"], 0, "the NFSv3 engine reads the working set NFSv4.1 made: {}", v["ops"]);
    assert!(v["system"].to_string().contains("nfs v3 "));
}

#[test]
#[ignore = "needs nfs-ganesha: scripts/test.sh starts one and sets IOSCOPE_NFS_URL"]
fn nfs41_file_tree_workloads_use_every_file_operation() {
    let Some((url, export_dir)) = nfs_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let sub = format!("tree41-{}", std::process::id());
    std::fs::create_dir_all(export_dir.join(&sub)).unwrap();
    let workload = |name: &str, dataset: &str, ops: &[(&str, &str)]| {
        let mut toml = format!(
            "engine = \"nfs\"\ntarget = \"{}\"\nduration = \"3s\"\n\n[dataset]\n{dataset}\n",
            v41(&url, &sub, "&nconnect=2")
        );
        for (op, extra) in ops {
            toml.push_str(&format!("\n[[workload]]\nname = \"{op}\"\noperation = \"{op}\"\nthreads = 1\n{extra}\n"));
        }
        let path = tmp.path().join(name);
        std::fs::write(&path, toml).unwrap();
        path
    };
    let ops_of = |v: &Value, op: &str| v["ops"][op]["ops"].as_u64().unwrap_or(0);
    // Transfers, open/close and attributes on a tree the run creates over NFSv4.1.
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
    for op in ["read", "write", "open", "close", "getattr", "setattr"] {
        assert!(ops_of(&v, op) > 10, "{op}: {}", v["ops"]);
    }
    assert_eq!(v["total"]["errors"], 0, "{}", v["ops"]);
    let anchor = export_dir.join(&sub).join("tree");
    assert!(anchor.join(".ioscope-dataset.json").is_file(), "the dataset's marker was written over NFSv4.1");
    for file in ["d00/d00/f000000", "d02/d02/f000019"] {
        let on_server = std::fs::read(anchor.join(file)).unwrap();
        assert!(!on_server.is_empty() && on_server.chunks(4096).all(|c| c.iter().any(|b| *b != 0)), "{file}");
    }
    // The namespace operations, racing each other on a small tree: each gets done.
    let names = workload(
        "names.toml",
        "dir = \"names\"\ndepth = 1\nwidth = 4\nfiles = 3\nsizes = \"4k\"",
        &[("create", ""), ("delete", ""), ("copy", ""), ("move", ""), ("mkdir", ""), ("rmdir", "")],
    );
    let v = json_of(&run_ok(&[
        "run",
        s(&names),
        "--max-errors",
        "off",
        "--quiet",
        "--json",
        "--out",
        s(&tmp.path().join("names.db")),
    ]));
    for op in ["create", "delete", "copy", "move", "mkdir", "rmdir"] {
        assert!(ops_of(&v, op) > 0, "{op}: {}", v["ops"]);
    }
    // Failures of racing names are counted by their NFSv4 names, never NFSv3's.
    assert!(!v["ops"].to_string().contains("NFS3ERR"), "{}", v["ops"]);
    // Again: the dataset is checked (READDIR of every directory) and reused, then removed.
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
}

#[test]
#[ignore = "needs nfs-ganesha started with IOSCOPE_NFS_LEASE_S=10 (scripts/test.sh)"]
fn nfs41_a_run_longer_than_the_lease_keeps_its_session_and_has_no_errors() {
    let Some((url, _)) = nfs_server() else { return };
    let lease_s: u64 = std::env::var("IOSCOPE_NFS_LEASE_S").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    if lease_s > 12 {
        skip::skip("the server's lease is not short (start it with IOSCOPE_NFS_LEASE_S=10)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let duration = format!("{}s", lease_s * 2 + 5);
    let v = json_of(&run_ok(&[
        "run",
        "--engine",
        "nfs",
        "--target",
        &v41(&url, &format!("lease41-{}", std::process::id()), ""),
        "--rw",
        "randrw",
        "--size",
        "1m",
        "--rate-iops",
        "2",
        "--duration",
        &duration,
        "--quiet",
        "--json",
        "--out",
        s(&tmp.path().join("l.db")),
    ]));
    assert_eq!(v["status"], "completed", "{}", v["status_detail"]);
    assert_eq!(v["total"]["errors"], 0, "{}", v["ops"]);
    assert!(v["total"]["ops"].as_u64().unwrap() >= lease_s * 4, "{}", v["total"]);
}

#[test]
#[ignore = "kills the nfs-ganesha that scripts/test.sh started, then restarts it (run alone)"]
fn nfs41_server_killed_mid_run_ends_the_run_with_errors_counted_and_the_results_kept() {
    let Some((url, _)) = nfs_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("k.db");
    let started = Instant::now();
    let child = ioscope()
        .args(["run", "--engine", "nfs", "--target", &v41(&url, "kill41", "&timeout=3"), "--rw", "randread"])
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
    // The server back for whatever runs next (same files, new process).
    let restarted = Command::new(&script).arg("restart-server").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(3 + 3 + 10), "the run ended {took:?} after it started (60 s planned): {stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("went out of reach"), "a clear message: {stderr}");
    let show = json_of(&run_ok(&["show", s(&results), "--json"]));
    assert_eq!(show["status"], "failed");
    assert!(show["status_detail"].as_str().unwrap().contains("went out of reach"), "{}", show["status_detail"]);
    assert!(show["total"]["errors"].as_u64().unwrap() > 0, "the I/Os in flight count as errors");
    assert!(show["total"]["ops"].as_u64().unwrap() > 100, "the seconds before the kill are kept");
    assert!(restarted.status.success(), "{}", String::from_utf8_lossy(&restarted.stderr));
}

#[test]
#[ignore = "pauses the nfs-ganesha that scripts/test.sh started (run alone)"]
fn nfs41_server_paused_past_the_timeout_gives_timeouts_and_the_sessions_go_on() {
    let Some((url, export_dir)) = nfs_server() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("p.db");
    let pid_file = export_dir.parent().unwrap().join("ganesha.pid");
    let pid: i32 = std::fs::read_to_string(pid_file).unwrap().trim().parse().unwrap();
    let child = ioscope()
        .args(["run", "--engine", "nfs", "--target", &v41(&url, "pause41", "&timeout=2"), "--rw", "randrw"])
        .args(["--size", "16m", "--iodepth", "8", "--duration", "12s", "--quiet", "--json", "--out", s(&results)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    // SIGSTOP: the server keeps its connections and answers nothing for longer than a
    // call may take, then goes on (and answers the NULL call the engine asks by then).
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_millis(2800));
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let v = json_of(&out);
    assert_eq!(v["status"], "completed", "{}", v["status_detail"]);
    let errors = v["total"]["errors"].as_u64().unwrap();
    assert!(errors > 0 && errors <= 16, "the calls in flight during the pause time out: {}", v["ops"]);
    // Every failure is a timeout: each slot's sequence ids stayed in step with the server.
    let ops = v["ops"].to_string();
    assert!(!ops.contains("NFS4ERR"), "{ops}");
    // I/O went on after the pause: each of the last seconds has transfers.
    let series = run_ok(&["export", s(&results), "--format", "csv"]);
    let text = String::from_utf8_lossy(&series.stdout);
    let iops: Vec<f64> = text.lines().skip(1).filter_map(|l| l.split(',').nth(5)?.parse().ok()).collect();
    assert!(iops.len() >= 11, "{text}");
    assert!(iops[iops.len() - 4..].iter().all(|r| *r > 50.0), "after the pause: {iops:?}");
}
