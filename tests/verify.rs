//! Data validation against real faults (`--verify`, docs/verify.md): ioscope writes its
//! working set, then reads it back while this test damages the file behind its back with
//! pwrite and truncate. Each fault must be found with its kind and offset; clean runs of the
//! same length must find nothing.

mod skip;

use serde_json::Value;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BLOCK: u64 = 4096;

/// A fault made to the working-set file once the write pass is over.
#[derive(Clone, Copy)]
enum Fault {
    /// Bytes of block N flipped (checksum at N).
    Flip(u64),
    /// Block N zeroed (zeroed at N).
    Zero(u64),
    /// Block FROM copied over block TO (misplaced at TO; the header names FROM).
    Copy { from: u64, to: u64 },
    /// The file cut to N blocks (truncated past it, short reads).
    Truncate(u64),
}

fn workload(dir_or_target: &str, engine: &str, extra: &str) -> String {
    let place =
        if engine == "nfs" { format!("target = \"{dir_or_target}\"") } else { format!("dir = \"{dir_or_target}\"") };
    format!(
        "engine = \"{engine}\"\n{place}\nsize = \"1m\"\nbs = \"4k\"\nrw = \"randrw\"\nduration = \"2s\"\nfor_rwmix_read = [0, 100]\n{extra}\n"
    )
}

/// Whether the results file has a second of step 1 (the read pass) yet.
fn read_pass_started(results: &Path) -> bool {
    let Ok(c) = rusqlite::Connection::open_with_flags(results, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else {
        return false;
    };
    c.query_row("SELECT count(*) FROM tick WHERE step >= 1", [], |r| r.get::<_, i64>(0)).is_ok_and(|n| n > 0)
}

fn inject(file: &Path, fault: Fault) {
    let f = std::fs::OpenOptions::new().read(true).write(true).open(file).unwrap();
    let mut b = vec![0u8; BLOCK as usize];
    match fault {
        Fault::Flip(n) => {
            f.read_exact_at(&mut b, n * BLOCK).unwrap();
            for x in &mut b[1000..1010] {
                *x ^= 0x5a;
            }
            f.write_all_at(&b, n * BLOCK).unwrap();
        }
        Fault::Zero(n) => f.write_all_at(&b, n * BLOCK).unwrap(),
        Fault::Copy { from, to } => {
            f.read_exact_at(&mut b, from * BLOCK).unwrap();
            f.write_all_at(&b, to * BLOCK).unwrap();
        }
        Fault::Truncate(n) => f.set_len(n * BLOCK).unwrap(),
    }
    f.sync_all().unwrap();
}

/// Runs the write pass and the read pass with `--verify [mode]`, making `faults` to
/// `file` once the read pass has started; the exit code and the JSON summary.
fn run(toml: &str, verify: &[&str], file: &Path, faults: &[Fault]) -> (i32, Value) {
    let tmp = tempfile::tempdir().unwrap();
    let (w, results) = (tmp.path().join("w.toml"), tmp.path().join("r.db"));
    std::fs::write(&w, toml).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ioscope"));
    cmd.arg("run").args(verify).arg(&w).args(["--quiet", "--json", "--force", "--out"]).arg(&results);
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    if !faults.is_empty() {
        let start = Instant::now();
        while !read_pass_started(&results) {
            assert!(start.elapsed() < Duration::from_secs(30), "the read pass never started");
            std::thread::sleep(Duration::from_millis(50));
        }
        for f in faults {
            inject(file, *f);
        }
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap_or(-1), v)
}

/// The summary with its verification section matches schema/summary.schema.json.
fn schema_check(summary: &Value) {
    let schema: Value = serde_json::from_str(include_str!("../schema/summary.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(summary).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "summary does not match schema: {errors:#?}");
}

/// The kinds found at each offset (first mismatches of the summary).
fn found(v: &Value) -> Vec<(String, u64, Option<Value>)> {
    v["verification"]["first_mismatches"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|m| {
            let header = m["found_header_json"].as_str().and_then(|j| serde_json::from_str(j).ok());
            (m["kind"].as_str().unwrap().to_string(), m["offset"].as_u64().unwrap(), header)
        })
        .collect()
}

fn has(v: &Value, kind: &str, block: u64) -> bool {
    found(v).iter().any(|(k, o, _)| k == kind && *o == block * BLOCK)
}

/// Flip, zero and copy in one read pass: each is found at its own block with its kind.
fn three_faults(engine: &str, place: &str, file: &Path, verify: &[&str], extra: &str) -> (i32, Value) {
    let faults = [Fault::Flip(5), Fault::Zero(7), Fault::Copy { from: 3, to: 9 }];
    let (code, v) = run(&workload(place, engine, extra), verify, file, &faults);
    schema_check(&v);
    let ver = &v["verification"];
    assert!(has(&v, "checksum", 5), "{engine}: flipped bytes at block 5: {ver}");
    assert!(has(&v, "zeroed", 7), "{engine}: zeroed block 7: {ver}");
    assert!(has(&v, "misplaced", 9), "{engine}: block 3 copied over block 9: {ver}");
    let misplaced = found(&v).into_iter().find(|(k, o, _)| k == "misplaced" && *o == 9 * BLOCK).unwrap();
    assert_eq!(misplaced.2.unwrap()["offset"], 3 * BLOCK, "{engine}: the header found names block 3");
    assert_eq!(found(&v).len(), 3, "{engine}: no other block is flagged: {ver}");
    for kind in ["checksum", "zeroed", "misplaced"] {
        assert!(ver["by_kind"][kind].as_u64().unwrap_or(0) > 0, "{engine}: {kind} counted: {ver}");
    }
    assert_eq!(v["verdicts"][0]["id"], "data-mismatch", "{engine}: {}", v["verdicts"]);
    (code, v)
}

fn truncated(engine: &str, place: &str, file: &Path, extra: &str) {
    let (code, v) = run(&workload(place, engine, extra), &["--verify"], file, &[Fault::Truncate(128)]);
    let ver = &v["verification"];
    assert_eq!(code, 1, "{engine}: {ver}");
    let cut: Vec<u64> = found(&v).iter().filter(|(k, _, _)| k == "truncated").map(|(_, o, _)| *o).collect();
    assert!(!cut.is_empty(), "{engine}: {ver}");
    assert!(cut.iter().all(|o| *o >= 128 * BLOCK), "{engine}: only blocks past the new end are truncated: {cut:?}");
    assert_eq!(found(&v).len(), cut.len(), "{engine}: nothing but truncated blocks: {ver}");
    let short = v["ops"]["read"]["errors_by_kind"]["short read"].as_u64().unwrap_or(0);
    assert!(short > 0, "{engine}: the short reads are counted: {}", v["ops"]["read"]);
}

fn clean(engine: &str, place: &str, extra: &str) {
    let toml = workload(place, engine, extra);
    let (code, v) = run(&toml, &["--verify"], Path::new("/nonexistent"), &[]);
    let ver = &v["verification"];
    assert_eq!(code, 0, "{engine}: {ver}");
    assert_eq!(ver["mismatches"], 0, "{engine}: {ver}");
    assert!(ver["verified"].as_u64().unwrap() > 1000, "{engine}: {ver}");
    assert_eq!(v["total"]["errors"], 0, "{engine}");
}

fn local() -> (tempfile::TempDir, String, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let place = d.path().display().to_string();
    let file = d.path().join("ioscope.0.dat");
    (d, place, file)
}

#[test]
fn posix_flipped_zeroed_and_copied_blocks_are_found_with_kind_and_offset_and_fail_the_run() {
    let (_d, place, file) = local();
    let (code, v) = three_faults("posix", &place, &file, &["--verify"], "");
    assert_eq!(code, 1, "any mismatch fails the run");
    // The file, the summary and the exit code tell one story.
    assert_eq!(v["status"], "failed", "a run that failed verification is not completed: {}", v["status_detail"]);
    assert!(
        v["status_detail"].as_str().is_some_and(|d| d.contains("block(s) read back were not what the run wrote")),
        "{}",
        v["status_detail"]
    );
}

#[test]
fn uring_finds_the_same_faults_and_verify_report_exits_0() {
    let (_d, place, file) = local();
    let (code, v) = three_faults("uring", &place, &file, &["--verify", "report"], "iodepth = 8");
    assert_eq!(code, 0, "--verify report counts mismatches without failing: {}", v["verification"]);
    assert_eq!(v["verification"]["mode"], "report");
    assert_eq!(v["status"], "completed");
}

#[test]
fn posix_a_file_truncated_during_the_run_reads_as_truncated_blocks_and_short_reads() {
    let (_d, place, file) = local();
    truncated("posix", &place, &file, "");
}

#[test]
fn clean_runs_of_the_same_length_find_no_mismatch_posix_and_uring_with_overlapping_writes() {
    let (_d, place, _) = local();
    clean("posix", &place, "");
    // Four threads of iodepth 8 writing and reading 256 blocks: the same block is often
    // written by several I/Os at once, and read while they are in flight.
    let (_d2, place2, _) = local();
    let toml = format!(
        "engine = \"uring\"\ndir = \"{place2}\"\nsize = \"1m\"\nbs = [{{size = \"4k\", weight = 1}}, {{size = \"16k\", weight = 1}}]\nrw = \"randrw\"\nthreads = 4\niodepth = 8\nduration = \"4s\"\n"
    );
    let (code, v) = run(&toml, &["--verify"], Path::new("/nonexistent"), &[]);
    assert_eq!(code, 0, "{}", v["verification"]);
    assert_eq!(v["verification"]["mismatches"], 0, "{}", v["verification"]);
    assert!(v["verification"]["verified"].as_u64().unwrap() > 1000, "{}", v["verification"]);
}

/// The NFS server scripts/nfs-ganesha.sh started: (URL, its export directory on this host).
fn nfs_server() -> Option<(String, PathBuf)> {
    let url = std::env::var("IOSCOPE_NFS_URL").ok()?;
    let dir = std::env::var("IOSCOPE_NFS_EXPORT_DIR").unwrap_or_else(|_| "/tmp/ioscope-nfs/export".into());
    Some((url, PathBuf::from(dir)))
}

#[test]
#[ignore = "needs nfs-ganesha: scripts/test.sh starts one and sets IOSCOPE_NFS_URL"]
fn nfs_faults_made_on_the_server_are_found_with_kind_and_offset_and_clean_runs_find_none() {
    let Some((url, export)) = nfs_server() else {
        skip::skip("IOSCOPE_NFS_URL is not set (scripts/nfs-ganesha.sh start-loop)");
        return;
    };
    // Each run in a directory of its own: a file removed behind the server's back would
    // leave it a stale handle.
    let dir = |what: &str| format!("verify-{}-{what}", std::process::id());
    let (faults, cut, clean_dir) = (dir("faults"), dir("truncated"), dir("clean"));
    let file = |d: &str| export.join(d).join("ioscope.0.dat");
    let (code, _) = three_faults("nfs", &format!("{url}/{faults}"), &file(&faults), &["--verify"], "iodepth = 4");
    assert_eq!(code, 1);
    truncated("nfs", &format!("{url}/{cut}"), &file(&cut), "iodepth = 4");
    clean("nfs", &format!("{url}/{clean_dir}"), "iodepth = 4\nthreads = 2");
    for d in [faults, cut, clean_dir] {
        let _ = std::fs::remove_dir_all(export.join(d));
    }
}

// ---- NFS reads of 1 MiB (v3 and v4.1), whose data is read from the socket straight into the I/O buffer ----

#[test]
#[ignore = "needs nfs-ganesha: scripts/test.sh starts one and sets IOSCOPE_NFS_URL"]
fn nfs_large_reads_landing_in_the_io_buffer_are_checked_faults_found_and_clean_runs_find_none() {
    let Some((url, export)) = nfs_server() else {
        skip::skip("IOSCOPE_NFS_URL is not set (scripts/nfs-ganesha.sh start-loop)");
        return;
    };
    // Over NFSv3 and NFSv4.1: each engine lands its large READs.
    for (version, query) in [("v3", ""), ("v41", "?version=4.1")] {
        let dir = |what: &str| format!("verify-{}-{version}-{what}", std::process::id());
        let (faults, clean_dir) = (dir("large-faults"), dir("large-clean"));
        // READs of 64 KiB and more land (engine-nfs/src/engine.rs): 1 MiB blocks, 4 in flight.
        let toml = |d: &str| {
            format!(
                "engine = \"nfs\"\ntarget = \"{url}/{d}{query}\"\nsize = \"4m\"\nbs = \"1m\"\nrw = \"randrw\"\nduration = \"2s\"\nfor_rwmix_read = [0, 100]\niodepth = 4\n"
            )
        };
        let file = export.join(&faults).join("ioscope.0.dat");
        let made = [Fault::Flip(5), Fault::Zero(300), Fault::Copy { from: 3, to: 700 }];
        // Blocks of 4 KiB inside each 1 MiB read: a fault is found at its own block.
        let verify = ["--verify", "--verify-block", "4k"];
        let (code, v) = run(&toml(&faults), &verify, &file, &made);
        let ver = &v["verification"];
        assert_eq!(code, 1, "{version}: {ver}");
        assert!(has(&v, "checksum", 5), "{version}: flipped bytes at block 5: {ver}");
        assert!(has(&v, "zeroed", 300), "{version}: zeroed block 300: {ver}");
        assert!(has(&v, "misplaced", 700), "{version}: block 3 copied over block 700: {ver}");
        assert_eq!(found(&v).len(), 3, "{version}: no other block is flagged: {ver}");
        let (code, v) = run(&toml(&clean_dir), &verify, Path::new("/nonexistent"), &[]);
        let ver = &v["verification"];
        assert_eq!(code, 0, "{version}: {ver}");
        assert_eq!(ver["mismatches"], 0, "{version}: {ver}");
        assert!(ver["verified"].as_u64().unwrap() > 1000, "{version}: {ver}");
        assert_eq!(v["total"]["errors"], 0, "{version}");
        for d in [faults, clean_dir] {
            let _ = std::fs::remove_dir_all(export.join(d));
        }
    }
}

fn ioscope(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ioscope")).args(args).output().unwrap()
}

#[test]
fn a_bare_verify_flag_never_takes_the_workload_file_and_report_is_its_only_other_value() {
    let d = tempfile::tempdir().unwrap();
    let w = d.path().join("w.toml");
    std::fs::write(&w, workload(&d.path().join("data").display().to_string(), "posix", "")).unwrap();
    for (args, mode) in
        [(vec!["--verify"], "fail"), (vec!["--verify", "report"], "report"), (vec!["--verify=report"], "report")]
    {
        let out = d.path().join(format!("{mode}-{}.db", args.len()));
        let mut a = vec!["run"];
        a.extend(args.iter().copied());
        a.extend([w.to_str().unwrap(), "--quiet", "--json", "--out", out.to_str().unwrap()]);
        let o = ioscope(&a);
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["verification"]["mode"], mode, "{args:?}");
    }
}

#[test]
fn verify_refuses_before_any_io_what_it_cannot_check() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("data");
    let dir = dir.to_str().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["--engine", "null"], "engine null stores nothing to read back"),
        (&["--dir", dir, "--bs", "4k", "--verify-block", "8k"], "a multiple of 8192 bytes with verify on"),
        (&["--dir", dir, "--bs", "1000"], "a multiple of 512 bytes with verify on"),
    ];
    for (args, says) in cases {
        let mut a = vec!["run", "--verify", "--duration", "1s", "--quiet"];
        a.extend(args);
        let o = ioscope(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(!d.path().join("data").exists(), "nothing was written");
}

#[test]
fn a_working_set_prepared_with_verify_is_checked_from_the_first_read_and_reused_by_the_next_run() {
    let d = tempfile::tempdir().unwrap();
    let w = d.path().join("w.toml");
    let data = d.path().join("data").display().to_string();
    std::fs::write(
        &w,
        format!(
            "engine = \"posix\"\ndir = \"{data}\"\nsize = \"1m\"\nbs = \"4k\"\nrw = \"randread\"\nduration = \"1s\"\n"
        ),
    )
    .unwrap();
    for run in ["prepared now", "reused"] {
        let out = d.path().join(format!("{}.db", run.len()));
        let o = ioscope(&["run", "--verify", w.to_str().unwrap(), "--quiet", "--json", "--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{run}: {}", String::from_utf8_lossy(&o.stderr));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        let ver = &v["verification"];
        assert!(ver["verified"].as_u64().unwrap() > 100, "{run}: every block carries a header: {ver}");
        assert_eq!(ver["unverified"], 0, "{run}: {ver}");
        assert_eq!(ver["mismatches"], 0, "{run}: {ver}");
    }
}

// ---- File-tree datasets ([dataset]) with --verify ----

/// A tree of `files` files of 64 KiB in one leaf under `anchor`, with these workloads.
fn tree_workload(anchor: &Path, files: u32, top: &str, workloads: &str) -> String {
    format!(
        "engine = \"posix\"\n{top}\n[dataset]\ndir = \"{}\"\ndepth = 1\nwidth = 1\nfiles = {files}\nsizes = \"64k\"\n{workloads}",
        anchor.display()
    )
}

#[test]
fn tree_verify_a_clean_run_of_transfers_creates_deletes_copies_and_moves_finds_no_mismatch() {
    let d = tempfile::tempdir().unwrap();
    let mut workloads = String::new();
    // Two threads writing and reading back through their handles, one reading, and one of
    // each whole-file operation racing them on the same 16 files.
    workloads += "[[workload]]\nrw = \"randrw\"\nbs = \"4k\"\nthreads = 2\n";
    workloads += "[[workload]]\nrw = \"randread\"\nbs = \"4k\"\nthreads = 1\n";
    for op in ["create", "delete", "copy", "move"] {
        workloads += &format!("[[workload]]\noperation = \"{op}\"\nthreads = 1\n");
    }
    let toml = tree_workload(&d.path().join("tree"), 16, "duration = \"3s\"", &workloads);
    // Whole-file operations race the transfers for real (a file deleted between a pick and
    // its open): those are counted errors, not mismatches.
    let (code, v) = run(&toml, &["--verify", "--max-errors", "off"], Path::new("/nonexistent"), &[]);
    let ver = &v["verification"];
    assert_eq!(code, 0, "{ver}");
    assert_eq!(ver["mismatches"], 0, "{ver}");
    assert!(ver["verified"].as_u64().unwrap() > 100, "blocks were checked: {ver}");
    for op in ["create", "delete", "copy", "move", "write", "read"] {
        assert!(v["ops"][op]["ops"].as_u64().unwrap_or(0) > 0, "{op} ran: {}", v["ops"]);
    }
    schema_check(&v);
}

#[test]
fn tree_verify_bytes_flipped_in_a_tree_file_fail_their_checksum_found_with_its_path_and_offset() {
    let d = tempfile::tempdir().unwrap();
    let anchor = d.path().join("tree");
    // A write pass over 4 files of 16 blocks, then a read pass checking them.
    let toml = tree_workload(
        &anchor,
        4,
        "duration = \"2s\"\nfor_rwmix_read = [0, 100]",
        "[[workload]]\nrw = \"randrw\"\nbs = \"4k\"\nthreads = 1\n",
    );
    let file = anchor.join("d00").join("f000002");
    let (code, v) = run(&toml, &["--verify"], &file, &[Fault::Flip(5)]);
    let ver = &v["verification"];
    assert_eq!(code, 1, "{ver}");
    let first = ver["first_mismatches"].as_array().unwrap();
    assert_eq!(first.len(), 1, "only the flipped block: {ver}");
    assert_eq!(first[0]["kind"], "checksum", "{ver}");
    assert_eq!(first[0]["offset"], 5 * BLOCK, "{ver}");
    assert_eq!(first[0]["path"], file.display().to_string(), "{ver}");
    assert_eq!(first[0]["file"], 2, "the tree's file index: {ver}");
}

#[test]
fn tree_verify_a_dataset_created_with_verify_is_checked_from_the_first_read_and_a_reused_one_once_written() {
    let d = tempfile::tempdir().unwrap();
    let toml = tree_workload(
        &d.path().join("tree"),
        4,
        "duration = \"1s\"",
        "[[workload]]\nrw = \"randread\"\nbs = \"4k\"\nthreads = 2\n",
    );
    let (code, v) = run(&toml, &["--verify"], Path::new("/nonexistent"), &[]);
    let ver = &v["verification"];
    assert_eq!(code, 0, "{ver}");
    assert!(ver["verified"].as_u64().unwrap() > 100, "every block of the new tree carries a header: {ver}");
    assert_eq!(ver["unverified"], 0, "{ver}");
    assert_eq!(ver["mismatches"], 0, "{ver}");
    // The same tree reused: it may hold what another run's copies and moves put there, so
    // its blocks are not checked until this run writes them.
    let (code, v) = run(&toml, &["--verify"], Path::new("/nonexistent"), &[]);
    let ver = &v["verification"];
    assert_eq!(code, 0, "{ver}");
    assert_eq!(ver["verified"], 0, "{ver}");
    assert!(ver["unverified"].as_u64().unwrap() > 100, "{ver}");
}

// ---- Headers from the first fill: a later read-only run tells a destroyed header from none ----

/// `ioscope run ARGS --quiet --json --out OUT`: the exit code and the JSON summary.
fn run_json(args: &[&str], out: &Path) -> (i32, Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_ioscope"))
        .arg("run")
        .args(args)
        .args(["--quiet", "--json", "--out"])
        .arg(out)
        .output()
        .unwrap();
    summary_of(o)
}

fn summary_of(o: std::process::Output) -> (i32, Value) {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let v: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\nstderr: {}", String::from_utf8_lossy(&o.stderr)));
    (o.status.code().unwrap_or(-1), v)
}

fn overwrite_4_bytes(file: &Path, offset: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    f.write_all_at(&[0xde, 0xad, 0xbe, 0xef], offset).unwrap();
    f.sync_all().unwrap();
}

/// The (kind, offset) of every bad block the summary lists.
fn bad_blocks(v: &Value) -> Vec<(String, u64)> {
    found(v).into_iter().map(|(k, o, _)| (k, o)).collect()
}

#[test]
fn a_header_overwritten_during_or_before_a_later_read_only_verify_run_is_header_destroyed_at_its_offset_and_fails_it() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let file = data.join("ioscope.0.dat");
    let data = data.to_str().unwrap();
    let common = ["--engine", "posix", "--bs", "4k", "--size", "16m", "--dir", data, "--verify"];
    let (code, v) = run_json(&[&common[..], &["--rw", "randrw", "--duration", "1s"]].concat(), &d.path().join("1.db"));
    assert_eq!((code, &v["verification"]["mismatches"]), (0, &Value::from(0)), "{}", v["verification"]);

    // During: a sequential read of 4 blocks a second reaches block 10 (offset 40960) 2.5 s
    // in; its first 4 bytes are overwritten as soon as the run's results file exists (it
    // is created before the first I/O, after preparation).
    let during = d.path().join("2.db");
    let child = Command::new(env!("CARGO_BIN_EXE_ioscope"))
        .arg("run")
        .args(common)
        .args(["--rw", "read", "--rate-iops", "4", "--duration", "4s", "--quiet", "--json", "--out"])
        .arg(&during)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !during.exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "the read-only run never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    overwrite_4_bytes(&file, 40960);
    let (code, v) = summary_of(child.wait_with_output().unwrap());
    let ver = &v["verification"];
    assert_eq!(code, 1, "a destroyed header fails the run: {ver}");
    assert_eq!(v["status"], "failed", "{}", v["status_detail"]);
    assert_eq!(bad_blocks(&v), [("header-destroyed".to_string(), 40960)], "{ver}");
    assert_eq!((ver["mismatches"].as_u64(), ver["by_kind"]["header-destroyed"].as_u64()), (Some(1), Some(1)), "{ver}");
    assert_eq!(ver["unverified"], 0, "every block carries a header: {ver}");
    assert!(ver["first_mismatches"][0]["found"].as_str().unwrap().contains("no header"), "{ver}");
    assert_eq!(v["verdicts"][0]["id"], "data-mismatch", "{}", v["verdicts"]);

    // Before: another block's header overwritten between runs; the whole file read once.
    overwrite_4_bytes(&file, 12 * BLOCK);
    let (code, v) = run_json(&[&common[..], &["--rw", "read", "--duration", "1s"]].concat(), &d.path().join("3.db"));
    let mut bad = bad_blocks(&v);
    bad.sort();
    let destroyed = |o: u64| ("header-destroyed".to_string(), o);
    assert_eq!((code, bad), (1, vec![destroyed(40960), destroyed(12 * BLOCK)]), "{}", v["verification"]);
    assert_eq!(v["verification"]["mismatches"], 2, "each bad block once, however often read: {}", v["verification"]);
}

#[test]
fn a_working_set_prepared_without_verify_carries_headers_that_a_later_verify_run_checks() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let data = data.to_str().unwrap();
    let common = ["--engine", "posix", "--bs", "4k", "--size", "1m", "--dir", data, "--duration", "1s"];
    let (code, _) = run_json(&[&common[..], &["--rw", "randread"]].concat(), &d.path().join("1.db"));
    assert_eq!(code, 0);
    let (code, v) = run_json(&[&common[..], &["--rw", "read", "--verify"]].concat(), &d.path().join("2.db"));
    let ver = &v["verification"];
    assert_eq!(code, 0, "{ver}");
    assert!(ver["verified"].as_u64().unwrap() > 0, "{ver}");
    assert_eq!((ver["unverified"].as_u64(), ver["mismatches"].as_u64()), (Some(0), Some(0)), "{ver}");
}

#[test]
fn a_working_set_written_since_by_a_run_without_verify_reads_unverified_not_as_destroyed_headers() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let marker = data.join(".ioscope-workset.json");
    let data = data.to_str().unwrap();
    let common = ["--engine", "posix", "--bs", "4k", "--size", "1m", "--dir", data, "--duration", "1s"];
    let (code, _) = run_json(&[&common[..], &["--rw", "read"]].concat(), &d.path().join("1.db"));
    assert_eq!(code, 0);
    let said: Value = serde_json::from_slice(&std::fs::read(&marker).unwrap()).unwrap();
    assert_eq!(said["files"][0]["verify_block"], 4096, "the fill stamped 4 KiB blocks: {said}");
    // Writes without --verify put no header in the blocks they write: the marker stops
    // claiming them before the first one.
    let (code, _) = run_json(&[&common[..], &["--rw", "randwrite"]].concat(), &d.path().join("2.db"));
    assert_eq!(code, 0);
    let said: Value = serde_json::from_slice(&std::fs::read(&marker).unwrap()).unwrap();
    assert!(said["files"][0].get("verify_block").is_none(), "{said}");
    let (code, v) = run_json(&[&common[..], &["--rw", "read", "--verify"]].concat(), &d.path().join("3.db"));
    let ver = &v["verification"];
    assert_eq!((code, ver["mismatches"].as_u64()), (0, Some(0)), "no false alarm: {ver}");
    assert!(ver["unverified"].as_u64().unwrap() > 0, "{ver}");
    // A marker whose claim is not one ioscope writes is refused, naming it.
    let mut bent: Value = serde_json::from_slice(&std::fs::read(&marker).unwrap()).unwrap();
    bent["files"][0]["verify_block"] = 1000.into();
    std::fs::write(&marker, bent.to_string()).unwrap();
    let o =
        ioscope(&["run", "--rw", "read", "--verify", "--engine", "posix", "--bs", "4k", "--size", "1m", "--dir", data]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("files[0].verify_block 1000"), "{err}");
}

#[test]
fn reads_and_writes_of_the_same_blocks_at_depth_32_on_two_threads_never_overlap_so_none_is_unverified() {
    // 16 blocks, 2 threads of 32 I/Os in flight: every block is wanted by several I/Os at
    // once all the time. Under --verify a read and a write of one block (or two writes)
    // are never in flight together, so no read returns half of a write.
    // posix: one I/O at a time per thread, so eight threads.
    for (engine, depth, threads) in [("uring", "32", "2"), ("posix", "1", "8")] {
        let d = tempfile::tempdir().unwrap();
        let data = d.path().join("data");
        let args = [
            "--engine",
            engine,
            "--dir",
            data.to_str().unwrap(),
            "--size",
            "64k",
            "--bs",
            "4k",
            "--rw",
            "randrw",
            "--iodepth",
            depth,
            "--threads",
            threads,
            "--duration",
            "2s",
            "--verify",
        ];
        let (code, v) = run_json(&args, &d.path().join("r.db"));
        let ver = &v["verification"];
        assert_eq!(code, 0, "{engine}: {ver}");
        assert_eq!((ver["unverified"].as_u64(), ver["mismatches"].as_u64()), (Some(0), Some(0)), "{engine}: {ver}");
        assert!(ver["verified"].as_u64().unwrap() > 100, "{engine}: {ver}");
        assert!(v["ops"]["write"]["ops"].as_u64().unwrap() > 100, "{engine}: {}", v["ops"]);
    }
}
