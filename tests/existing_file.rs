//! A file that exists already, not made by ioscope, as the target (`--dir FILE`, fio's
//! `filename=FILE` without a size): read as it is with no --force, written into only with
//! --force, used whole without a size, and never removed, marked or locked.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn ioscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ioscope")).args(args).output().unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn summary(db: &Path) -> Value {
    let out = ioscope(&["show", s(db), "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A user's file of `len` bytes of data that is not ioscope's (no header, no marker).
fn users_file(dir: &Path, len: usize) -> (std::path::PathBuf, Vec<u8>) {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let data: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let path = dir.join("users-data.bin");
    std::fs::write(&path, &data).unwrap();
    (path, data)
}

/// What the directory holds besides the user's file: nothing (no marker, no lock file).
fn others_in(dir: &Path, keep: &[&Path]) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !keep.contains(&p.as_path()))
        .map(|p| p.display().to_string())
        .collect()
}

#[test]
fn a_fio_job_naming_an_existing_file_without_a_size_reads_it_whole_per_loop_and_leaves_it_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let data_dir = tmp.path().join("data");
    std::fs::create_dir(&data_dir).unwrap();
    let (file, before) = users_file(&data_dir, 8 << 20);
    let job = tmp.path().join("forward.fio");
    std::fs::write(&job, format!("[forward]\nioengine=psync\nrw=read\nbs=64k\nfilename={}\nloops=2\n", s(&file)))
        .unwrap();
    let imported = ioscope(&["import", "fio", s(&job)]);
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    let toml = String::from_utf8(imported.stdout).unwrap();
    assert!(toml.contains(&format!("dir = \"{}\"", s(&file))), "the file itself is the target:\n{toml}");
    assert!(String::from_utf8_lossy(&imported.stderr).contains("an existing file is run on as it is"));
    let workload = tmp.path().join("forward.toml");
    std::fs::write(&workload, toml).unwrap();
    let db = tmp.path().join("r.db");
    // No --force: it only reads. --cleanup: it removes nothing that is not ioscope's.
    let out = ioscope(&["run", s(&workload), "--out", s(&db), "--cleanup"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("existing file") && stderr.contains("nothing is prepared on it"), "{stderr}");
    let sum = summary(&db);
    // fio reads the file twice (loops=2): 2 × 8 MiB in 64 KiB reads.
    assert_eq!(sum["total"]["ops"].as_u64(), Some(256), "{:#}", sum["total"]);
    assert_eq!(sum["total"]["bytes"].as_u64(), Some(16 << 20), "{:#}", sum["total"]);
    assert_eq!(sum["ended"]["by"], "amount", "{:#}", sum["ended"]);
    // Its content is its own, measured: random bytes do not compress.
    let content = &sum["content"];
    assert!(content["asked"].as_str().unwrap().starts_with("nothing (an existing file"), "{content:#}");
    let ratio = content["compress_ratio"].as_f64().unwrap();
    assert!((0.95..1.05).contains(&ratio), "{content:#}");
    assert!(std::fs::read(&file).unwrap() == before, "the user's file is unchanged");
    assert_eq!(others_in(&data_dir, &[&file]), Vec::<String>::new(), "nothing added beside the user's file");
}

#[test]
fn writing_into_an_existing_file_needs_force_is_refused_before_any_io_and_the_file_is_never_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let (file, before) = users_file(tmp.path(), 4 << 20);
    let db = tmp.path().join("w.db");
    let write = ["run", "--dir", s(&file), "--rw", "randwrite", "--number-ios", "200", "--out", s(&db), "--cleanup"];
    let refused = ioscope(&write);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(s(&file)) && stderr.contains("--force") && stderr.contains("not made by ioscope"),
        "{stderr}"
    );
    assert!(!db.exists(), "refused before any results file");
    assert!(std::fs::read(&file).unwrap() == before, "refused before any I/O");
    // A precondition writes it whole: refused the same.
    let pre = ioscope(&[
        "run",
        "--dir",
        s(&file),
        "--rw",
        "randread",
        "--precondition",
        "1x sequential write",
        "--out",
        s(&db),
    ]);
    assert_eq!(pre.status.code(), Some(2), "{}", String::from_utf8_lossy(&pre.stderr));
    assert!(String::from_utf8_lossy(&pre.stderr).contains("its precondition writes it whole"));
    // Larger than the file: refused, naming its size.
    let large = ioscope(&["run", "--dir", s(&file), "--rw", "read", "--size", "1g", "--out", s(&db)]);
    assert_eq!(large.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&large.stderr).contains("the file holds 4 MiB"));
    // With --force: written in place (same length), and --cleanup leaves it.
    let mut forced = write.to_vec();
    forced.push("--force");
    let out = ioscope(&forced);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let sum = summary(&db);
    assert_eq!(sum["total"]["ops"].as_u64(), Some(200));
    let asked = sum["content"]["asked"].as_str().unwrap();
    assert_eq!(asked, "random (default) for the writes, over an existing file's own data");
    let after = std::fs::read(&file).expect("--cleanup never removes a file that is not ioscope's");
    assert_eq!(after.len(), before.len(), "written in place, never extended or truncated");
    assert!(after != before, "the 200 writes landed in the file");
    assert_eq!(others_in(tmp.path(), &[&file, &db]), Vec::<String>::new(), "nothing added beside it");
}
