//! One numbering of seconds for the user: second 0 is the run's first second in the
//! progress lines, the verdicts, the summary, the JSON, the UI, the API and the results
//! file (docs/analytics.md, "What a second is").

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The (second, text) of each progress line of stderr (the lines under the header).
fn progress_seconds(stderr: &str) -> Vec<(u32, String)> {
    stderr
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("time    sec"))
        .skip(1)
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_time, sec) = (f.next()?, f.next()?);
            Some((sec.parse().ok()?, l.to_string()))
        })
        .collect()
}

#[test]
fn a_verdict_naming_a_second_and_the_progress_line_of_that_second_use_the_same_number() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    // Stderr is a pipe: one progress line per second.
    let child = Command::new(env!("CARGO_BIN_EXE_ioscope"))
        .args(["run", "--engine", "null", "--duration", "8s", "--progress", "lines", "--out", s(&results)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !results.exists() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(2300));
    let pid = child.id() as i32;
    // A stopped process: its collector writes one late tick, named by the late-ticks
    // verdict after the second it ends in; the progress line of that tick follows a gap.
    // SAFETY: plain kill(2) on our child.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(Duration::from_secs(3));
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines = progress_seconds(&stderr);
    assert!(!lines.is_empty(), "no progress lines in {stderr}");

    let shown = Command::new(env!("CARGO_BIN_EXE_ioscope")).args(["show", "--json", s(&results)]).output().unwrap();
    assert!(shown.status.success());
    let summary: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let late = summary["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["id"] == "late-ticks")
        .unwrap_or_else(|| panic!("no late-ticks verdict: {:#}", summary["verdicts"]));
    let named = late["evidence"]["longest_second"].as_u64().unwrap() as u32;
    assert!(late["message"].as_str().unwrap().contains(&format!("(second {named})")), "{late:#}");

    // The progress line of that second is the one after the gap: the seconds inside the
    // gap have no line (and no row), so the line before it is numbered lower by more than 1.
    let at = lines.iter().position(|(sec, _)| *sec == named).unwrap_or_else(|| panic!("second {named} in {lines:#?}"));
    assert!(at > 0 && lines[at - 1].0 + 1 < named, "the line of second {named} follows the gap: {lines:#?}");
    // And every progress line is a second the summary has, numbered the same way.
    let samples: Vec<u32> =
        summary["samples"].as_array().unwrap().iter().map(|x| x["second"].as_u64().unwrap() as u32).collect();
    for (sec, line) in &lines {
        assert!(samples.contains(sec), "progress line {line:?}: second {sec} is not in the summary's {samples:?}");
    }
}
