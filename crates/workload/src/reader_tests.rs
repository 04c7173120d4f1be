//! Tests of the reader's shape: every default the key table declares is what the Plan gets
//! without the key, and no function of this crate grows past a screenful or two.

use crate::keys::{KeyDefault, Section, KEYS};
use crate::{build_plan, render_diagnostics, Flags, Plan, SourceFile};

/// The Plan of `text`, or a panic showing why it was refused.
fn plan_of(text: &str) -> Plan {
    let file = SourceFile { path: "defaults.toml".into(), text: text.to_string() };
    build_plan(Some(&file), &Flags::default())
        .unwrap_or_else(|d| panic!("refused:\n{text}\n{}", render_diagnostics(&d)))
}

/// What a key needs beside it to mean something: rwmix_read's default is the share of reads
/// of a mixed workload; the host keys are about the hosts of a many-host run.
fn context(key: &str) -> (&'static str, &'static str) {
    match key {
        "rwmix_read" => ("", "rw = \"randrw\"\n"),
        "on_host_loss" | "host_timeout" => ("hosts = [\"client1\", \"client2\"]\n", ""),
        _ => ("", ""),
    }
}

/// The smallest valid file in which `key` of `section` may be written, with `line` (`key =
/// value`, or "") in that section.
fn file_with(section: Section, key: &str, line: &str) -> Option<String> {
    let (top, rw) = context(key);
    match section {
        Section::Top => Some(format!("dir = \"/tmp/ioscope-defaults\"\n{top}{rw}{line}\n")),
        // (A dataset is there when one of its keys is.)
        Section::Dataset => Some(format!("[dataset]\ndir = \"/tmp/ioscope-defaults/tree\"\n{line}\n")),
        Section::Workload => Some(format!("dir = \"/tmp/ioscope-defaults\"\n\n[[workload]]\n{rw}{line}\n")),
        Section::Fileset => Some(format!(
            "[dataset]\ndir = \"/tmp/ioscope-defaults/tree\"\n\n[[fileset]]\nname = \"s\"\n{line}\n\n\
             [[workload]]\nflow = [\"read 4k in s\"]\n"
        )),
        // Their defaults are made from other keys (`Said`), nothing to set.
        Section::Probe | Section::Host | Section::Check => None,
    }
}

/// What a plan means, with the defaults it leaves to its own accessors applied (a size
/// left to its default is the same working set as that size written out).
fn meaning(p: Plan) -> Plan {
    // A workload's own iodepth, sync and direct default to the run's: resolved, they are one.
    let workloads = p
        .workloads
        .iter()
        .map(|w| crate::Workload {
            iodepth: Some(p.iodepth_of(w)),
            sync: Some(p.sync_of(w)),
            direct: Some(p.direct_of(w)),
            ..w.clone()
        })
        .collect();
    Plan {
        workloads,
        size_default: false,
        breakdown_top: Some(p.breakdown_top()),
        repeat: Some(p.max_repeats()),
        verify_block: Some(p.verify_block_bytes()),
        ..p
    }
}

/// Keys whose default the Plan leaves to what reads it, and where that is tied.
const APPLIED_ELSEWHERE: &[(&str, &str)] =
    &[("steady_window", "the steady-state rule's window (crates/report steady tests tie it to DEFAULT_WINDOW_S)")];

#[test]
fn every_declared_default_is_what_the_plan_gets_without_its_key() {
    let mut checked = 0;
    for key in KEYS {
        let Some(value) = key.default.toml() else { continue };
        if APPLIED_ELSEWHERE.iter().any(|(k, _)| *k == key.name) {
            let without = plan_of(&file_with(Section::Top, key.name, "").unwrap());
            assert_eq!(without.steady_window_s, None, "{}: left to the steady-state rule", key.name);
            continue;
        }
        for section in key.sections.iter().copied() {
            let Some(without) = file_with(section, key.name, "") else { continue };
            let with = file_with(section, key.name, &format!("{} = {value}", key.name)).unwrap();
            assert_eq!(
                meaning(plan_of(&without)),
                meaning(plan_of(&with)),
                "`{}` in {section:?}: the table declares {} (written {value}), the Plan without it differs",
                key.name,
                key.default
            );
            checked += 1;
        }
    }
    // Every typed default of the table was walked (a table that lost its defaults fails).
    assert!(checked >= 30, "only {checked} declared defaults checked");
}

#[test]
fn a_default_made_by_a_rule_says_so_and_every_other_is_typed() {
    for key in KEYS {
        if let KeyDefault::Said(text) = key.default {
            // A word or number written as prose would be untied from the code again.
            let typed = text.parse::<f64>().is_ok()
                || crate::units::parse_size(text).is_ok()
                || ["true", "false", "off", "none"].contains(&text);
            assert!(!typed, "`{}`'s default {text:?} is a value: declare it typed", key.name);
        }
    }
}

/// The functions of a Rust source text longer than `max` lines: (name, first line, lines).
/// rustfmt closes a function at its own indentation, which is what this counts to.
fn long_functions(text: &str, max: usize) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        let after = ["pub(crate) ", "pub(super) ", "pub ", "const ", "async ", "unsafe "]
            .iter()
            .fold(body, |b, p| b.strip_prefix(p).unwrap_or(b));
        let Some(rest) = after.strip_prefix("fn ") else { continue };
        if line.trim_end().ends_with('}') || line.trim_end().ends_with(';') {
            continue;
        }
        let close = format!("{indent}}}");
        let Some(end) = lines[i..].iter().position(|l| *l == close) else { continue };
        if end + 1 > max {
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push((name, i + 1, end + 1));
        }
    }
    out
}

#[test]
fn no_function_in_the_workload_crate_is_over_150_lines() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut dirs = vec![root];
    let mut seen = 0;
    let mut long = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                seen += 1;
                let text = std::fs::read_to_string(&path).unwrap();
                for (name, line, n) in long_functions(&text, 150) {
                    long.push(format!("{}:{line}: fn {name} has {n} lines", path.display()));
                }
            }
        }
    }
    assert!(seen > 20, "the scan found only {seen} source files");
    assert!(long.is_empty(), "functions over 150 lines (split them by concern):\n{}", long.join("\n"));
}

#[test]
fn the_long_function_scan_counts_to_the_closing_brace() {
    let body = "        let x = 1;\n".repeat(160);
    let text = format!("impl A {{\n    pub(super) fn big(&self) {{\n{body}    }}\n\n    fn small() {{}}\n}}\n");
    assert_eq!(long_functions(&text, 150), vec![("big".to_string(), 2, 162)]);
    assert!(long_functions(&text, 200).is_empty());
}
