//! Text in a results file is data from whoever wrote it: an agent's host name and system
//! description (stored by the coordinator as the agent sent them), error kinds and file
//! names. `ioscope show` prints each escaped: no control character of theirs reaches the
//! terminal, and none breaks a line.

use ioscope_metrics::{Counts, FileCounts, Histogram, Op, OpInterval, OpSeries, Snapshot};
use ioscope_store::{RunInfo, Status, Writer};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a lying agent puts in every string: a colour, a screen clear, a title, a line of
/// its own.
const EVIL: &str = "\x1b[31mred\x1b[2J\x1b]0;title\x07\r\nINJECTED line\u{202e}";

fn second(n: u32, host: &str) -> Snapshot {
    let mut h = Histogram::new();
    (1..=10u64).for_each(|i| h.record(i * 10_000));
    let mut sizes = Histogram::new();
    (0..10).for_each(|_| sizes.record(4096));
    let data = OpInterval {
        counts: Counts { ops: 10, bytes: 10 * 4096, errors: 3 },
        errors_by_kind: vec![(format!("EIO{EVIL}"), 2), ("EACCES".into(), 1)],
        skipped: 0,
        latency_ns: h.clone(),
        service_ns: h,
        size_bytes: sizes,
        offset_bytes: Default::default(),
    };
    Snapshot {
        second: n,
        interval_ns: 1_000_000_000,
        step: 0,
        warmup: false,
        host: host.into(),
        ops: vec![OpSeries { workload: String::new(), op: Op::Read, data }],
        workers: vec![],
        files: vec![FileCounts {
            file: format!("ioscope.0.dat{EVIL}"),
            op: Op::Read,
            counts: Counts { ops: 10, bytes: 10 * 4096, errors: 3 },
        }],
        worker_dists: vec![],
        file_dists: vec![],
        not_broken_down: 0,
        worker_cpu: vec![],
    }
}

/// A results file as a coordinator stores a run with one honest and one lying agent.
fn results(dir: &Path) -> PathBuf {
    let path = dir.join("r.ioscope");
    let liar = format!("fake{EVIL}");
    let info = RunInfo {
        ioscope_version: "test".into(),
        host: "coordinator".into(),
        pid: 1,
        command_line: "ioscope run --hosts agent://a agent://b".into(),
        started_unix_ms: 1_700_000_000_000,
        planned_duration_ns: 2_000_000_000,
        plan_json: "{}".into(),
        workload_toml: String::new(),
        workload_hash: "x".into(),
    };
    let config = |name: &str| {
        json!({
            "hostname": name,
            "cpu_model": format!("Xeon{EVIL}"),
            "cpus": 2,
            "memory_bytes": 1u64 << 30,
            "os": format!("Debian{EVIL}"),
            "kernel": format!("6.1{EVIL}"),
            "engine": format!("posix{EVIL}"),
            "target": { "fs_type": format!("ext4{EVIL}"), "mount_options": format!("rw{EVIL}"), "mount_point": format!("/{EVIL}") },
        })
    };
    let hosts = [("honest".to_string(), config("honest")), (liar.clone(), config(&liar))];
    let mut w = Writer::create(&path, &info, &hosts).unwrap();
    for n in 0..2 {
        w.write_second(&second(n, "honest")).unwrap();
        w.write_second(&second(n, &liar)).unwrap();
    }
    w.finish(Status::Completed, None, 1_700_000_002_000).unwrap();
    path
}

#[test]
fn show_prints_strings_from_a_results_file_escaped_never_a_control_character_or_a_line_of_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let path = results(dir.path());
    let out = Command::new(env!("CARGO_BIN_EXE_ioscope")).arg("show").arg(&path).output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
        let raw: Vec<char> = text.chars().filter(|c| (c.is_control() && *c != '\n') || *c == '\u{202e}').collect();
        assert!(raw.is_empty(), "{name} holds raw control characters {raw:?}:\n{text}");
        assert!(!text.lines().any(|l| l.starts_with("INJECTED")), "{name} holds a line of the file's:\n{text}");
    }
    // `show --system` (each host's record) and `compare` escape them too.
    let b = dir.path().join("b.ioscope");
    std::fs::copy(&path, &b).unwrap();
    for args in [
        vec!["show".as_ref(), "--system".as_ref(), path.as_os_str()],
        vec!["compare".as_ref(), path.as_os_str(), b.as_os_str()],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_ioscope")).args(&args).output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "{args:?}: {text}");
        let raw: Vec<char> = text.chars().filter(|c| (c.is_control() && *c != '\n') || *c == '\u{202e}').collect();
        assert!(raw.is_empty(), "{args:?} prints raw control characters {raw:?}:\n{text}");
        assert!(!text.lines().any(|l| l.starts_with("INJECTED")), "{args:?} prints a line of the file's:\n{text}");
    }
    // What the strings said is still there, escaped: the system lines, the host and the kind.
    assert!(
        stdout.contains("Xeon\\u{1b}[31mred\\u{1b}[2J\\u{1b}]0;title\\u{7}\\r\\nINJECTED line\\u{202e} x2"),
        "{stdout}"
    );
    assert!(stdout.contains("fake\\u{1b}[31mred"), "{stdout}");
    assert!(stdout.contains("EIO\\u{1b}[31mred"), "{stdout}");
}
