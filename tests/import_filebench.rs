//! `ioscope import filebench` on the ten personalities Filebench ships
//! (examples/filebench/): each one that converts validates and runs on local files, and
//! over NFSv3 and NFSv4.1 against the nfs-ganesha scripts/test.sh starts (made small with
//! flags, which override the file), with the operations its flowops name and no error;
//! each one that does not is refused naming the line and the reason.

use serde_json::Value;

mod common;
#[allow(dead_code)]
mod skip;

use common::run::{ioscope, json_of, run_ok, s};

/// Personality, and what it converts to: the operations its flow records, or (refused)
/// what the message says.
const PERSONALITIES: &[(&str, Result<&[&str], &str>)] = &[
    ("fileserver", Ok(&["create", "write", "close", "open", "read", "delete", "getattr"])),
    ("varmail", Ok(&["delete", "create", "write", "fsync", "close", "open", "read"])),
    ("webproxy", Ok(&["delete", "create", "write", "close", "open", "read"])),
    ("randomread", Ok(&["read"])),
    ("randomwrite", Ok(&["write"])),
    ("singlestreamread", Ok(&["read"])),
    ("webserver", Ok(&["open", "read", "close", "write"])),
    ("videoserver", Ok(&["delete", "create", "write", "close", "open", "read"])),
    ("singlestreamwrite", Ok(&["open", "write", "close"])),
    ("oltp", Ok(&["read", "write", "fsync", "open", "close"])),
];

#[test]
fn filebench_personalities_import_validate_and_run_or_are_refused_with_their_reason() {
    every_personality_runs(&[]);
}

#[test]
#[ignore = "needs nfs-ganesha: scripts/test.sh starts one and sets IOSCOPE_NFS_URL"]
fn filebench_personalities_run_against_nfs_v3_and_v41() {
    let Ok(url) = std::env::var("IOSCOPE_NFS_URL") else {
        skip::skip("IOSCOPE_NFS_URL is not set (scripts/nfs-ganesha.sh start-loop)");
        return;
    };
    let sub = format!("filebench-{}", std::process::id());
    let dir = std::env::var("IOSCOPE_NFS_EXPORT_DIR").unwrap_or_else(|_| "/tmp/ioscope-nfs/export".into());
    let on_server = std::path::Path::new(&dir).join(&sub);
    std::fs::create_dir_all(&on_server).unwrap();
    for version in ["3", "4.1"] {
        let target = format!("{url}/{sub}?version={version}");
        every_personality_runs(&["--engine", "nfs", "--target", &target, "--cleanup"]);
    }
    // --cleanup removed every file set and working set the runs made: the directory is empty.
    std::fs::remove_dir(&on_server).unwrap();
}

/// Imports, validates and runs every personality (with `engine` flags, or on local files in
/// a temporary directory), each for a second on small files: each does every operation its
/// flowops do, without an error, and its rounds are counted.
fn every_personality_runs(engine: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    for (name, outcome) in PERSONALITIES {
        let f = format!("examples/filebench/{name}.f");
        let toml = tmp.path().join(format!("{name}.toml"));
        let out = ioscope().args(["import", "filebench", &f, "-o", s(&toml)]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let ops = match outcome {
            Err(says) => {
                assert_eq!(out.status.code(), Some(2), "{name}: {err}");
                assert!(err.contains(says) && err.contains(&format!("{name}.f:")), "{name}: {err}");
                assert!(!toml.exists(), "{name}: nothing written");
                continue;
            }
            Ok(ops) => ops,
        };
        assert!(out.status.success(), "{name}: {err}");
        run_ok(&["validate", s(&toml)]);
        let dir = tmp.path().join(name);
        let text = std::fs::read_to_string(&toml).unwrap();
        let mut args = vec!["run", s(&toml), "--duration", "1s", "--json", "--quiet"];
        match engine.is_empty() {
            true => args.extend(["--dir", s(&dir)]),
            false => args.extend(engine),
        }
        let results = tmp.path().join(format!("{name}.db"));
        args.extend(["--out", s(&results)]);
        if text.contains("[dataset]") {
            args.extend(["--set", "dataset.width=4", "--set", "workload.threads=4", "--set", "dataset.sizes=16k"]);
        }
        if text.contains("[[fileset]]") {
            args.extend(["--set", "fileset.sizes=16k"]);
        }
        if !text.contains("[dataset]") {
            args.extend(["--size", "16m", "--threads", "2"]);
        }
        let summary: Value = json_of(&run_ok(&args));
        assert_eq!(summary["total"]["errors"], 0, "{name} {engine:?}: {summary}");
        for op in *ops {
            assert!(summary["ops"][op]["ops"].as_u64().unwrap_or(0) > 0, "{name} {engine:?}: no {op}: {summary}");
        }
        if text.contains("flow = ") {
            assert!(summary["ops"]["flow"]["ops"].as_u64().unwrap_or(0) > 0, "{name} {engine:?}: no rounds: {summary}");
        }
    }
}

#[test]
fn the_fileserver_personality_converts_to_its_fileset_and_flow() {
    let out = run_ok(&["import", "filebench", "examples/filebench/fileserver.f"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "dir = \"/tmp/bigfileset\"",
        "duration = \"1m\"",
        "width = 500",
        "files = 20",
        "sizes = \"gamma:128k:1.5\"",
        "prealloc = 80",
        "threads = 50",
        "\"append 16k random\",",
        "\"read_whole 1m\",",
    ] {
        assert!(text.lines().any(|l| l.trim() == line), "no `{line}` in:\n{text}");
    }
}

#[test]
fn a_filebench_file_with_what_has_no_meaning_here_is_refused_naming_each_line() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("bad.f");
    let text = "set $dir=/tmp/x\n\
                define fileset name=a,path=$dir,size=8k,entries=100,prealloc\n\
                define process name=p\n{\n  thread name=t,instances=2\n  {\n\
                \x20   flowop openfile name=o,filesetname=a,fd=1\n\
                \x20   flowop makedir name=w,filesetname=a,iosize=8k\n\
                \x20   flowop readwholefile name=r,fd=1,iosize=$nope\n\
                \x20   flowop closefile name=c,fd=1,dsync\n  }\n}\nrun 10\n";
    std::fs::write(&f, text).unwrap();
    let out = ioscope().args(["import", "filebench", s(&f)]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for says in [
        "bad.f:8:5: error: makedir",
        "not a step of ioscope's flows",
        "bad.f:9:38: error: iosize",
        "$nope is not set",
        "bad.f:10:",
        "dsync",
    ] {
        assert!(err.contains(says), "no `{says}` in:\n{err}");
    }
    assert!(out.stdout.is_empty());
}
