//! Flows (Filebench's flowops) with the real binary on local files: each thread runs its
//! steps in order, over and over, on a file set of gamma-distributed sizes, part of it
//! preallocated; the operations each step performs are counted in the summary, and a flow
//! that does not make sense is refused before any I/O.

use serde_json::Value;
use std::path::Path;

mod common;
#[allow(dead_code)]
mod skip;

use common::run::{json_of, run_ok, s};

fn ops(summary: &Value, op: &str) -> i64 {
    summary["ops"][op]["ops"].as_i64().unwrap_or(0)
}

/// The regular files below `dir` (not the marker) and their sizes.
fn files_below(dir: &Path) -> Vec<u64> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().map(Result::unwrap) {
        let m = e.metadata().unwrap();
        if m.is_dir() {
            out.extend(files_below(&e.path()));
        } else if !e.file_name().to_string_lossy().starts_with('.') {
            out.push(m.len());
        }
    }
    out
}

#[test]
fn filebench_fileserver_flow_counts_each_step_as_its_operation_in_the_flows_proportions() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("fileserver.toml");
    let threads = 4;
    let text = format!(
        "dir = \"{}\"\nduration = \"2s\"\n\n\
         [dataset]\ndepth = 1\nwidth = 10\nfiles = 20\nsizes = \"gamma:32k:1.5\"\nprealloc = 80\n\n\
         [[workload]]\nname = \"fileserver\"\nthreads = {threads}\n\
         flow = [\"create\", \"write_whole 64k\", \"close\", \"open\", \"append 16k random\", \"close\",\n\
                 \"open\", \"read_whole 64k\", \"close\", \"delete\", \"stat\"]\n",
        s(&tmp.path().join("d"))
    );
    std::fs::write(&file, text).unwrap();
    let results = tmp.path().join("r.db");
    let summary = json_of(&run_ok(&["run", s(&file), "--out", s(&results), "--json", "--quiet"]));
    assert_eq!(summary["total"]["errors"], 0, "{summary}");
    let create = ops(&summary, "create");
    assert!(create > 100, "{summary}");
    // Each thread ends somewhere in its flow: every count is the flows begun, give or take
    // one per thread (and per step of that kind in the flow).
    let t = threads as i64;
    let near = |got: i64, per_flow: i64| (got - per_flow * create).abs() <= per_flow * t;
    assert!(near(ops(&summary, "delete"), 1), "delete vs create {create}: {summary}");
    assert!(near(ops(&summary, "getattr"), 1), "stat vs create {create}: {summary}");
    assert!(near(ops(&summary, "open"), 2), "2 opens per flow: {summary}");
    // Three closes per flow, and the one each thread's open file gets when the run ends.
    assert!((ops(&summary, "close") - 3 * create).abs() <= 4 * t, "3 closes per flow: {summary}");
    // Writes: a whole file in 64 KiB transfers (at most 64 KiB each) and an append of at
    // most 16 KiB; reads: what is in the file, 64 KiB at a time.
    let (w, r) = (&summary["ops"]["write"], &summary["ops"]["read"]);
    assert!(w["size_bytes"]["max"].as_u64().unwrap() <= 65536, "{w}");
    assert!(r["size_bytes"]["max"].as_u64().unwrap() <= 65536, "{r}");
    assert!(ops(&summary, "write") >= 2 * create - 2 * t, "{summary}");
    let plan = &summary["workload"]["plan"];
    assert_eq!(plan["dataset"]["format"], "always", "a flow that writes makes its tree anew: {plan}");
    // Each round of the flow is its own op, `flow`, timed over all of its steps: rounds
    // are the flows begun (less the one each thread was in when the run ended), and as
    // the steps follow each other, the rounds' time is the time of the steps in them.
    let flow = &summary["ops"]["flow"];
    let rounds = flow["ops"].as_i64().unwrap() + flow["skipped"].as_i64().unwrap();
    assert!((create - rounds).abs() <= t, "{rounds} rounds for {create} creates: {summary}");
    assert_eq!(flow["bytes"], 0, "{flow}");
    let time = |o: &Value| o["ops"].as_f64().unwrap() * o["latency_ns"]["mean"].as_f64().unwrap();
    let steps: f64 =
        summary["ops"].as_object().unwrap().iter().filter(|(k, _)| *k != "flow").map(|(_, o)| time(o)).sum();
    let in_rounds = time(flow);
    assert!(
        in_rounds <= steps * 1.01 && in_rounds >= steps * 0.7,
        "rounds {in_rounds} ns, steps {steps} ns: {summary}"
    );
    // Rounds are not I/O: the total counts the transfers and file operations alone.
    let io: i64 = ["read", "write", "create", "delete", "getattr"].iter().map(|op| ops(&summary, op)).sum();
    assert_eq!(summary["total"]["ops"].as_i64().unwrap(), io, "{summary}");
    assert!(summary.get("flows").is_none(), "one workload: its flow is the op table: {summary}");
}

#[test]
fn a_file_set_has_the_gamma_mean_and_the_share_preallocated_that_it_names() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("readers.toml");
    let dir = tmp.path().join("d");
    let text = format!(
        "dir = \"{}\"\nduration = \"1s\"\n\n\
         [dataset]\ndepth = 1\nwidth = 50\nfiles = 100\nsizes = \"gamma:16k:1.5\"\nprealloc = 80\n\n\
         [[workload]]\nname = \"readers\"\nthreads = 2\nflow = [\"open\", \"read_whole 1m\", \"close\"]\n",
        s(&dir)
    );
    std::fs::write(&file, text).unwrap();
    let summary = json_of(&run_ok(&["run", s(&file), "--out", s(&tmp.path().join("r.db")), "--json", "--quiet"]));
    assert_eq!(summary["total"]["errors"], 0, "{summary}");
    // A flow that only reads leaves the tree as preparation made it.
    let sizes = files_below(&dir);
    let share = sizes.len() as f64 / 5000.0;
    assert!((share - 0.80).abs() < 0.02, "{} of 5000 files preallocated", sizes.len());
    // Gamma with shape 1.5 has a coefficient of variation of 0.82: over 4,000 files the
    // mean is within 1.3% of the distribution's (1 sigma), so 5% is over 3 sigma.
    let mean = sizes.iter().sum::<u64>() as f64 / sizes.len() as f64;
    assert!((mean / 16384.0 - 1.0).abs() < 0.05, "mean file size {mean:.0} B, asked 16384");
    // Some files are far above the mean and some far below, as gamma's are.
    let big = sizes.iter().filter(|&&b| b > 3 * 16384).count() as f64 / sizes.len() as f64;
    assert!((0.02..0.10).contains(&big), "{big} of the files above 3x the mean (gamma 1.5: 5.7%)");
    // Every read_whole read a whole file: the read bytes per open are the mean file size.
    let read_bytes = summary["ops"]["read"]["bytes"].as_f64().unwrap();
    let per_open = read_bytes / ops(&summary, "open") as f64;
    assert!((per_open / mean - 1.0).abs() < 0.15, "{per_open:.0} B read per open, mean file {mean:.0} B");
}

#[test]
fn a_flow_that_makes_no_sense_is_refused_before_any_io_naming_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let cases: [(&str, &str); 7] = [
        ("[[workload]]\nflow = [\"open\", \"read_whole 1m\", \"close\"]\n", "a flow with a [dataset]"),
        (
            "[dataset]\nfiles = 10\n[[workload]]\nflow = [\"read_whole 1m\", \"close\"]\n",
            "read_whole needs an open file: put open or create before it",
        ),
        (
            "[dataset]\nfiles = 10\n[[workload]]\nbs = \"4k\"\nflow = [\"open\", \"close\"]\n",
            "either flow or bs, not both",
        ),
        (
            "[dataset]\nfiles = 10\n[[workload]]\nflow = [\"open\", \"readwhole 1m\", \"close\"]\n",
            "no step `readwhole`",
        ),
        (
            "[dataset]\nfiles = 10\n[[fileset]]\nname = \"logs\"\n[[workload]]\nflow = [\"open\", \"append 8k in log\", \"close\"]\n",
            "the step `append 8k in log` names no set (sets: logs)",
        ),
        (
            "[dataset]\nfiles = 10\n[[fileset]]\nname = \"logs\"\n[[workload]]\nflow = [\"open\", \"close\"]\n",
            "the fileset `logs` would be made and never used",
        ),
        (
            "[dataset]\nfiles = 10\n[[workload]]\nflow = [\"open\", \"read 4k\", \"close\", \"wait w 10\"]\n",
            "no flow's step posts to `w`",
        ),
    ];
    for (body, says) in cases {
        let file = tmp.path().join("bad.toml");
        std::fs::write(&file, format!("dir = \"{}\"\n{body}", s(&dir))).unwrap();
        let out = common::run::ioscope().args(["validate", s(&file)]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{body}: {err}");
        assert!(err.contains(says), "{body}: {err}");
        assert!(err.contains("bad.toml:"), "names the file and line: {err}");
    }
    assert!(!dir.exists(), "nothing was made");
}

#[test]
fn a_log_appended_by_every_thread_grows_by_every_append_and_is_its_own_file_in_the_breakdown() {
    // Filebench's webserver: each flow reads a whole file of the dataset, then appends to
    // the log, a file set of one file every thread holds open.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("webserver.toml");
    let threads = 4;
    let text = format!(
        "dir = \"{}\"\nduration = \"2s\"\nbreakdown_top = 8\n\n\
         [dataset]\nname = \"pages\"\ndepth = 1\nwidth = 4\nfiles = 25\nsizes = \"16k\"\n\n\
         [[fileset]]\nname = \"logs\"\ndepth = 0\nfiles = 1\nsizes = \"16k\"\n\n\
         [[workload]]\nname = \"webserver\"\nthreads = {threads}\n\
         flow = [\"open in pages\", \"read_whole 64k\", \"close\", \"append 8k random in logs\"]\n",
        s(&tmp.path().join("d"))
    );
    std::fs::write(&file, text).unwrap();
    let results = tmp.path().join("r.db");
    let summary = json_of(&run_ok(&["run", s(&file), "--out", s(&results), "--json", "--quiet"]));
    assert_eq!(summary["total"]["errors"], 0, "{summary}");
    let (reads, writes) = (ops(&summary, "read"), ops(&summary, "write"));
    assert!(reads > 100, "{summary}");
    // One read of each 16 KiB page per flow, one append: give or take one per thread.
    assert!((reads - writes).abs() <= threads, "{summary}");
    // Each thread's log is opened once when it starts and closed when it ends, beside
    // the pages it opens and closes.
    assert_eq!(ops(&summary, "open"), ops(&summary, "close"), "{summary}");
    assert!((ops(&summary, "open") - reads - threads).abs() <= threads, "{summary}");
    // Concurrent appends each take their own range: the log grew by every byte written.
    let log = tmp.path().join("d/logs/f000000");
    let grown = std::fs::metadata(&log).unwrap().len() - 16384;
    assert_eq!(grown, summary["ops"]["write"]["bytes"].as_u64().unwrap(), "{summary}");
    // The log is a file of its own in the per-file breakdown, named below the anchor.
    let r = ioscope_store::open(&results).unwrap();
    let log_writes: u64 = r
        .seconds
        .iter()
        .flat_map(|s| s.files.iter())
        .filter(|f| f.op.name() == "write" && f.file == "logs/f000000")
        .map(|f| f.counts.ops)
        .sum();
    assert_eq!(log_writes as i64, writes, "every write went to the log");
    // --cleanup takes the file set away with the dataset.
    run_ok(&["run", s(&file), "--out", s(&tmp.path().join("r2.db")), "--duration", "1s", "--cleanup", "--quiet"]);
    assert!(!tmp.path().join("d").exists(), "cleanup left the tree");
}

#[test]
fn a_wait_takes_its_count_of_posts_so_the_writers_keep_to_the_readers_pace() {
    // Filebench's oltp, in small: every reader's round posts once to each writer, and a
    // writer writes once per 100 posts; a flow_rate paces the readers' rounds.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("coupled.toml");
    let text = format!(
        "dir = \"{}\"\nduration = \"2s\"\n\n[dataset]\nname = \"data\"\ndepth = 0\nfiles = 4\nsizes = \"1m\"\n\n\
         [[workload]]\nname = \"readers\"\nthreads = 4\nflow_rate = 2000\n\
         flow = [\"read 4k random in data\", \"post w blocking\"]\n\n\
         [[workload]]\nname = \"writers\"\nthreads = 2\nflow = [\"write 4k random in data\", \"wait w 100 ahead 200\"]\n",
        s(&tmp.path().join("d"))
    );
    std::fs::write(&file, text).unwrap();
    let summary = json_of(&run_ok(&["run", s(&file), "--out", s(&tmp.path().join("r.db")), "--json", "--quiet"]));
    assert_eq!(summary["total"]["errors"], 0, "{summary}");
    let (reads, writes) = (ops(&summary, "read"), ops(&summary, "write"));
    // 2,000 rounds a second for 2 s: never more (a busy machine may fall behind a little).
    assert!((3000..=4004).contains(&reads), "{reads} reads at 2000 rounds/s: {summary}");
    // Each writer's first write comes at once, then one per 100 of the readers' posts.
    let per_writer = reads / 100 + 1;
    assert!((writes - 2 * per_writer).abs() <= 2, "{writes} writes for {reads} reads: {summary}");
    // Each flow has its own operations and rounds: a reader's round is one read.
    let schema: Value = serde_json::from_str(include_str!("../schema/summary.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&summary).map(|e| format!("{e} at {}", e.instance_path)).collect();
    assert!(errors.is_empty(), "summary does not match schema: {errors:#?}");
    let flows = &summary["flows"];
    assert_eq!(flows["readers"]["read"]["ops"].as_i64(), Some(reads), "{flows}");
    assert_eq!(flows["writers"]["write"]["ops"].as_i64(), Some(writes), "{flows}");
    assert!(flows["writers"].get("read").is_none(), "{flows}");
    let reader_rounds = flows["readers"]["flow"]["ops"].as_i64().unwrap();
    assert!((reads - reader_rounds).abs() <= 4, "{reader_rounds} rounds, {reads} reads: {flows}");
    let writer_rounds = flows["writers"]["flow"]["ops"].as_i64().unwrap();
    assert!((writes - writer_rounds).abs() <= 2, "{writer_rounds} rounds, {writes} writes: {flows}");
}
