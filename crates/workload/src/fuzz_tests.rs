//! Hostile input thrown at the parsers (docs/robustness.md): mutated example files,
//! boundary values in every key and flag, token soup and odd bytes, as property tests with a
//! fixed seed (`ioscope_props::check`). Nothing may panic; every rejection names the file,
//! line and column (or the flag) and the expected form; what validates must also survive its
//! canonical form. The workload file parser, `--set` and flags, `import vdbench` and
//! `import fio`.

use crate::*;
use ioscope_props::proptest::prelude::*;
use ioscope_props::proptest::sample::select;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// Values at and past every limit, and of every TOML type.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "4096",
    "4097",
    "65535",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "1e308",
    "-0.0",
    "nan",
    "inf",
    "0.5",
    "\"\"",
    "\"0\"",
    "\"-1\"",
    "\"1ns\"",
    "\"30d\"",
    "\"31d\"",
    "\"99999999999999999999s\"",
    "\"1.5\"",
    "\"4k\"",
    "\"0k\"",
    "\"16p\"",
    "\"99999999999p\"",
    "\"4k:0\"",
    "\"4k:4294967296,8k:1\"",
    "\",\"",
    "\"1-4096+1/1s\"",
    "\"1-8+4294967295/1s\"",
    "\"zipf:1e308\"",
    "\"nfs://[::1/e\"",
    "\"nfs://h/e?nconnect=0\"",
    "\"nfs://h:0/e\"",
    "\"\\u0000\"",
    "\"é\"",
    "true",
    "false",
    "[]",
    "[0]",
    "[1, 2, 4096]",
    "[\"4k\", \"8k\"]",
    "{}",
    "{ text = \"HI\", map = \"nope\" }",
    "{ text = \"\", column = \"1ns\" }",
    "[{size = \"4k\", weight = 0}]",
    "1979-05-27T07:32:00Z",
    "\"agent://h:0\"",
    "\"agent://h\"",
    "\"-oProxyCommand=x\"",
    "\"u@[::1]:65536\"",
    "\"ssh://u@@h\"",
    "\"h1,h1,agent://[fd00::1]:7\"",
    "[\"h1\", \"\", 7]",
    "\"hosts:1-1024/1s\"",
    "\"hosts:0-2/1s\"",
    "\"hosts:1-4+3/1s\"",
    "\"stop\"",
    "\"continue\"",
];
const KEYS: &[&str] = &[
    "engine",
    "rw",
    "rwmix_read",
    "bs",
    "size",
    "files",
    "threads",
    "iodepth",
    "sqpoll",
    "duration",
    "dir",
    "target",
    "direct",
    "sync",
    "warmup",
    "rate_iops",
    "curve",
    "for_threads",
    "for_bs",
    "for_rwmix_read",
    "staircase",
    "force",
    "cleanup",
    "description",
    "name",
    "operation",
    "fileio",
    "fileselect",
    "skew",
    "pattern",
    "depth",
    "width",
    "sizes",
    "total_size",
    "working_set",
    "format",
    "command",
    "at",
    "timeout",
    "hosts",
    "token_file",
    "tls_ca",
    "on_host_loss",
    "host_timeout",
    "address",
    "user",
    "port",
    "identity",
    "bin",
    "ca",
];
const LINES: &[&str] = &[
    "[dataset]",
    "[[workload]]",
    "[[probe]]",
    "[[host]]",
    "address = \"h9\"",
    "address = \"agent://h9:7070\"",
    "[workload]",
    "[[dataset]]",
    "[a.b.c]",
    "engine = \"null\"",
    "engine = \"nfs\"",
    "engine = \"uring\"",
    "dir = \"/tmp/fuzz\"",
    "a.b.c.d = 1",
    "# comment",
];

fn examples() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    out.sort();
    out
}

/// One change to a file: `kind` picks what, `at` where, `pick` which value (each taken
/// modulo its range, so that any numbers are a valid change and proptest can shrink them).
#[derive(Clone, Debug)]
struct Mutation {
    kind: u8,
    at: usize,
    pick: usize,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    (0u8..8, any::<usize>(), any::<usize>()).prop_map(|(kind, at, pick)| Mutation { kind, at, pick })
}

/// `text` with mutation `m` applied.
fn mutate(m: &Mutation, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let at = m.at % (lines.len() + 1);
    let pick = |items: &[&'static str]| items[m.pick % items.len()];
    match m.kind {
        // Replace a value.
        0 | 1 => {
            if let Some(line) = lines.get_mut(at) {
                if let Some((k, _)) = line.split_once('=') {
                    *line = format!("{k}= {}", pick(VALUES));
                }
            }
        }
        // Add a key with a value.
        2 | 3 => lines.insert(at, format!("{} = {}", pick(KEYS), VALUES[(m.pick / KEYS.len()) % VALUES.len()])),
        // Add a section header or a whole line.
        4 => lines.insert(at, pick(LINES).to_string()),
        // Remove or duplicate a line.
        5 if at < lines.len() => {
            lines.remove(at);
        }
        6 if at < lines.len() => {
            let l = lines[at].clone();
            lines.insert(at, l);
        }
        5 | 6 => {}
        // Replace one char with an odd one.
        _ => {
            let odd = ['\0', '\u{1b}', '"', '[', '{', '=', '\n', 'é', '\u{feff}', '9', '-', '.'];
            let mut chars: Vec<char> = text.chars().collect();
            if !chars.is_empty() {
                let i = m.at % chars.len();
                chars[i] = odd[m.pick % odd.len()];
                return chars.into_iter().collect();
            }
        }
    }
    lines.join("\n") + "\n"
}

/// Every rejection is clear: at least one diagnostic, each naming where (the file `path`
/// with a line and column inside `text`, or a flag) and what was expected; a TOML syntax
/// error says what is wrong instead.
fn assert_clear(diags: &[Diagnostic], path: &Path, text: &str) {
    assert!(!diags.is_empty(), "rejected with no diagnostic");
    let lines = text.split('\n').count();
    for d in diags {
        let shown = d.to_string();
        assert!(!shown.trim().is_empty());
        match &d.origin {
            Origin::File { path: p, line, col, .. } => {
                assert_eq!(p, path, "{shown}");
                assert!((1..=lines).contains(line) && *col >= 1, "line {line} col {col} of {lines} lines: {shown}");
                let syntax = d.key.is_empty() && !d.value.is_empty();
                assert!(syntax || !d.expected.trim().is_empty(), "no expected form: {shown}");
            }
            Origin::Flag { flag } => {
                assert!(!flag.is_empty(), "{shown}");
                assert!(!d.expected.trim().is_empty(), "no expected form: {shown}");
            }
            Origin::Omitted { count } => assert!(*count > 0, "{shown}"),
        }
    }
    let out = render_diagnostics(diags);
    assert!(out.len() < 64 << 10, "{} bytes of diagnostics", out.len());
}

/// Builds a plan from `text` (and `flags`); a plan that builds must also give its steps,
/// hash and canonical TOML, and that TOML must build the same plan.
fn check(text: &str, flags: &Flags) {
    let file = SourceFile { path: PathBuf::from("fuzz.toml"), text: text.to_string() };
    match build_plan(Some(&file), flags) {
        Ok(plan) => {
            assert!(plan.steps().len() <= 10_000);
            // Each host's part: its steps line up with the plan's, a fixed rate's parts add up.
            let parts: Vec<Plan> = (0..plan.hosts.len().min(8)).map(|i| plan.for_host(i)).collect();
            for part in &parts {
                assert_eq!(part.steps().len(), plan.steps().len());
                let json = serde_json::to_string(part).expect("a host's plan serializes");
                assert_eq!(&serde_json::from_str::<Plan>(&json).expect("and reads back"), part);
            }
            if plan.hosts.len() <= 8 && !parts.is_empty() {
                for (k, step) in plan.steps().iter().enumerate() {
                    if let Rate::Fixed(total) = step.rate {
                        let sum: u64 = parts
                            .iter()
                            .map(|p| match p.steps()[k].rate {
                                Rate::Fixed(r) => r,
                                _ => 0,
                            })
                            .sum();
                        assert_eq!(sum, total, "step {k}");
                    }
                }
            }
            let canon = to_toml(&plan);
            let _ = plan_hash(&plan);
            let back = SourceFile { path: PathBuf::from("canon.toml"), text: canon.clone() };
            match validate_file(&back) {
                Ok(again) => assert_eq!(again, plan, "the canonical form builds another plan:\n{canon}"),
                Err(d) => panic!("the canonical form does not validate:\n{canon}\n{}", render_diagnostics(&d)),
            }
        }
        Err(d) => assert_clear(&d, &file.path, text),
    }
}

#[test]
fn mutated_example_files_never_panic_the_parser() {
    let bases = examples();
    assert!(bases.len() >= 5);
    let strategy = (0..bases.len(), prop::collection::vec(mutation(), 1..5));
    ioscope_props::check("workload: mutated example files", 3000, strategy, |(base, mutations)| {
        let text = mutations.iter().fold(bases[base].clone(), |text, m| mutate(m, &text));
        check(&text, &Flags::default());
    });
}

/// Pieces of TOML and of workload values, for token soup.
const TOKENS: &[&str] = &[
    "=", " = ", "\n", "[", "]", "[[", "]]", "{", "}", ",", ".", "\"", "'", "\"\"\"", "#", " ", "\t", "\r\n", "-", "+",
    "_", ":", "/", "\\", "\\u", "0x", "1", "k", "é", "\u{feff}", "\0", "workload", "dataset", "probe", "host",
];

/// Token soup: keys, values, TOML punctuation and odd characters in any order.
fn soup(words: &'static [&'static str]) -> impl Strategy<Value = String> {
    let token = prop_oneof![select(TOKENS), select(KEYS), select(VALUES), select(words)];
    prop::collection::vec(token, 0..40).prop_map(|t| t.concat())
}

#[test]
fn any_text_is_a_plan_or_clear_diagnostics() {
    let strategy = prop_oneof![soup(LINES), any::<String>(), "[ -~\n]{0,200}"];
    ioscope_props::check("workload: any text", 2000, strategy, |text| check(&text, &Flags::default()));
}

#[test]
fn any_flag_or_set_value_is_a_plan_or_clear_diagnostics() {
    let mut spellings: Vec<String> = crate::keys::KEYS.iter().flat_map(|k| k.spellings()).collect();
    spellings.extend(crate::keys::FIO_OPTIONS.iter().flat_map(crate::keys::fio_spellings));
    let value = || prop_oneof![select(VALUES).prop_map(|v| v.trim_matches('"').to_string()), "\\PC{0,12}", soup(LINES)];
    let flag = (select(spellings), value());
    let set = (select(KEYS), prop_oneof![Just(""), Just("workload."), Just("dataset."), Just("x.")], value())
        .prop_map(|(k, section, v)| format!("{section}{k}={v}"));
    let strategy = (prop::collection::vec(flag, 0..4), prop::collection::vec(set, 0..3), select(LINES));
    ioscope_props::check("workload: flags and --set", 2000, strategy, |(given, sets, line)| {
        let flags = Flags { given, sets };
        check(&format!("dir = \"/tmp/x\"\n{line}\n"), &flags);
    });
}

#[test]
fn boundary_values_in_every_key_and_flag_never_panic() {
    // Each key where it belongs: the top level, [dataset], [[workload]] or [[probe]].
    let place = |key: &str| -> (&str, &str) {
        let dataset = ["depth", "width", "sizes", "total_size", "working_set", "format"];
        let workload = ["name", "operation", "fileio", "fileselect", "skew", "pattern"];
        let probe = ["command", "at", "timeout"];
        let host = ["address", "user", "port", "identity", "bin", "ca"];
        if dataset.contains(&key) {
            ("dir = \"/tmp/x\"\n[dataset]\n", "dataset.")
        } else if workload.contains(&key) {
            ("engine = \"null\"\n[[workload]]\n", "workload.")
        } else if host.contains(&key) {
            ("engine = \"null\"\n[[host]]\naddress = \"c1\"\n", "host.")
        } else if probe.contains(&key) {
            ("engine = \"null\"\n[[probe]]\ncommand = \"true\"\nat = \"1s\"\n", "probe.")
        } else {
            ("engine = \"null\"\n", "")
        }
    };
    let mut failures = Vec::new();
    for key in KEYS {
        let (head, prefix) = place(key);
        for value in VALUES {
            let text = format!("{head}{key} = {value}\n");
            if catch_unwind(|| check(&text, &Flags::default())).is_err() {
                failures.push(text);
            }
            // The same value through --set, as the command line would pass it.
            let set = format!("{prefix}{key}={}", value.trim_matches('"'));
            let flags = Flags { sets: vec![set.clone()], ..Flags::default() };
            if catch_unwind(|| check(head, &flags)).is_err() {
                failures.push(set);
            }
        }
    }
    // Every flag of the key table, in every spelling, and fio's options, alone and over a file.
    let mut spellings: Vec<String> = crate::keys::KEYS.iter().flat_map(|k| k.spellings()).collect();
    spellings.extend(crate::keys::FIO_OPTIONS.iter().flat_map(crate::keys::fio_spellings));
    for value in VALUES {
        let v = value.trim_matches('"');
        for flag in &spellings {
            let flags = match flag.as_str() {
                "target" => Flags::default().with("engine", "nfs").with(flag, v),
                _ => Flags::default().with(flag, v),
            };
            if catch_unwind(AssertUnwindSafe(|| check("dir = \"/tmp/x\"\n", &flags))).is_err() {
                failures.push(format!("{flags:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} cases panicked:\n{}", failures.len(), failures.join("\n---\n"));
}

/// Odd pieces spliced into vdbench parameter files and fio job files.
const ODD: &[&str] = &[
    "=",
    ",",
    "(",
    ")",
    "0",
    "-1",
    "99999999999999999999",
    "1-999999999,1",
    "d",
    "*",
    "\n",
    "\0",
    "é",
    "rd=",
    "fwd=",
    "fsd=",
    "elapsed=0",
    "interval=0",
    "forthreads=(1-4096,d)",
    "xfersize=(4k,0)",
    "sizes=(1p,100)",
    "[",
    "]",
    "[global]",
    "bs=",
    "rw=randrw",
    "size=1p",
    "numjobs=0",
    "iodepth=99999999999",
    "stonewall",
    "include ",
    "${NOPE}",
    ";",
    "#",
    " ",
    "\\",
    "\r",
    "\u{feff}",
];

/// One splice: at `at`, replace 0, the piece's length or a few chars with piece `pick` (or
/// with nothing), all taken modulo the text's length.
fn splice(text: &str, (at, how, pick): (usize, u8, usize)) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let at = at % (chars.len() + 1);
    let piece: Vec<char> = ODD[pick % ODD.len()].chars().collect();
    let end = match how % 4 {
        0 => at,
        1 => at + piece.len(),
        _ => at + 1 + pick % 8,
    }
    .min(chars.len());
    let piece = if how % 4 == 3 { Vec::new() } else { piece };
    chars.splice(at..end, piece);
    chars.into_iter().collect()
}

fn splices() -> impl Strategy<Value = Vec<(usize, u8, usize)>> {
    prop::collection::vec((any::<usize>(), any::<u8>(), any::<usize>()), 1..5)
}

/// A vdbench import: converted TOML must validate or be rejected clearly; refused
/// parameters name a line and column inside the file and say what was expected.
fn check_vdbench(text: &str) {
    let file = SourceFile { path: PathBuf::from("fuzz.parm"), text: text.to_string() };
    if let Err(errors) = vdbench::convert(text) {
        let lines = text.split('\n').count();
        for e in &errors {
            assert!((1..=lines).contains(&e.line) && e.col >= 1 && e.len >= 1, "{e:?} in {lines} lines");
            assert!(!e.message.trim().is_empty() && !e.expected.trim().is_empty(), "{e:?}");
        }
    }
    match vdbench::import(&file) {
        Ok(toml) => {
            let out = SourceFile { path: PathBuf::from("out.toml"), text: toml };
            if let Err(d) = validate_file(&out) {
                assert_clear(&d, &out.path, &out.text);
            }
        }
        Err(d) => assert_clear(&d, &file.path, text),
    }
}

#[test]
fn mutated_vdbench_files_never_panic_the_import() {
    let seed = include_str!("../../../examples/vdbench-seed.parm");
    ioscope_props::check("vdbench: mutated seed file", 2000, splices(), |s| {
        check_vdbench(&s.iter().fold(seed.to_string(), |text, s| splice(&text, *s)));
    });
}

#[test]
fn any_vdbench_text_is_converted_or_clearly_refused() {
    let words: Vec<&str> = ODD.iter().chain(VALUES).copied().collect();
    let soup = prop::collection::vec(select(words), 0..40).prop_map(|t| t.concat());
    let strategy = prop_oneof![soup, any::<String>(), "[ -~\n]{0,200}"];
    ioscope_props::check("vdbench: any text", 2000, strategy, |text| check_vdbench(&text));
}

/// The fio job files the importer's tests use, by path.
fn fio_jobs() -> Vec<(PathBuf, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fio-jobs");
    let mut out: Vec<(PathBuf, String)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .map(|p| (p.clone(), std::fs::read_to_string(&p).unwrap()))
        .collect();
    out.sort();
    out
}

/// A fio import: a refusal lists findings, each with a message and a line of its file.
fn check_fio(path: &Path, text: &str, group: Option<usize>) {
    let dir = std::fs::canonicalize(path.parent().unwrap()).unwrap();
    // Includes are read from the test's job directory only.
    let read = move |p: &Path, _: u64| -> Result<String, fio::ReadError> {
        let file = p.display().to_string();
        let error = || std::io::Error::from(std::io::ErrorKind::NotFound);
        if !p.starts_with(&dir) {
            return Err(fio::ReadError::Unreadable { file, error: error() });
        }
        std::fs::read_to_string(p).map_err(|error| fio::ReadError::Unreadable { file, error })
    };
    match fio::convert(path, text, group, &read) {
        Ok(imported) => {
            let out = SourceFile { path: PathBuf::from("out.toml"), text: imported.toml };
            if let Err(d) = validate_file(&out) {
                assert_clear(&d, &out.path, &out.text);
            }
        }
        Err(fio::FioError::Read(e)) => assert!(!e.to_string().trim().is_empty()),
        Err(fio::FioError::Refused(findings)) => {
            assert!(findings.iter().any(|f| f.severity == fio::Severity::Error), "refused without an error");
            for f in &findings {
                assert!(!f.message.trim().is_empty() && !f.option.is_empty(), "{f:?}");
                if f.path == path {
                    assert!(f.line <= text.split('\n').count(), "{f:?}");
                }
            }
        }
    }
}

#[test]
fn mutated_fio_job_files_are_converted_or_clearly_refused() {
    let jobs = fio_jobs();
    assert!(jobs.len() >= 5);
    let strategy = (0..jobs.len(), splices(), prop::option::of(0usize..4));
    ioscope_props::check("fio: mutated job files", 1000, strategy, |(job, s, group)| {
        let (path, text) = &jobs[job];
        check_fio(path, &s.iter().fold(text.clone(), |text, s| splice(&text, *s)), group);
    });
}

/// Found by `mutated_example_files_never_panic_the_parser`: a dataset without any `dir`
/// was refused with a message that named nothing (`: error: expected ...`).
#[test]
fn a_dataset_without_a_dir_is_refused_naming_the_key() {
    let file =
        SourceFile { path: PathBuf::from("tree.toml"), text: "engine = \"posix\"\n[dataset]\nfiles = 10\n".into() };
    let d = build_plan(Some(&file), &Flags::default()).unwrap_err();
    let shown = render_diagnostics(&d);
    assert!(shown.starts_with("dataset.dir: error: expected the dataset's anchor directory"), "{shown}");
    assert_clear(&d, &file.path, &file.text);
}

/// Found by `boundary_values_in_every_key_and_flag_never_panic`: a bad field inside a
/// table given with `--set` has no place in a file to point at, and its message named nothing.
#[test]
fn a_bad_field_in_a_set_table_is_refused_naming_the_key() {
    let cases = [
        (
            "workload.pattern={ text = \"HI\", map = \"nope\" }",
            "workload.pattern.map: error: expected \"offset\" or \"size\"",
        ),
        (
            "workload.pattern={ text = \"\", column = \"1ns\" }",
            "workload.pattern.text: error: expected a text of 1 to 64",
        ),
        (
            "dataset.sizes=[{size = \"4k\", weight = 0}]",
            "dataset.sizes: error: expected a weight that is a whole number",
        ),
    ];
    for (set, first) in cases {
        let head = if set.starts_with("dataset") {
            "dir = \"/tmp/x\"\n[dataset]\n"
        } else {
            "engine = \"null\"\n[[workload]]\n"
        };
        let file = SourceFile { path: PathBuf::from("f.toml"), text: head.into() };
        let flags = Flags { sets: vec![set.to_string()], ..Flags::default() };
        let d = build_plan(Some(&file), &flags).unwrap_err();
        let shown = render_diagnostics(&d);
        assert!(shown.starts_with(first), "{set}:\n{shown}");
        assert_clear(&d, &file.path, &file.text);
    }
}

/// Found by `mutated_fio_job_files_are_converted_or_clearly_refused` (the long run,
/// bench/fuzz.py): a NUL in a stonewall group's section name went into a comment of the
/// converted file, which then was not valid TOML ("invalid comment character"), and the
/// import was refused with a finding that named no option.
#[test]
fn a_control_character_in_a_section_name_stays_out_of_the_converted_comments() {
    let text = "[global]\ndescription=scaling\nsize=1g\nruntime=10\nrw=randread\nstonewall\n[qd-1job]\nnumjobs=1\n\
                [\u{0}qd-2jobs]\nnumjobs=2\n";
    let unreadable = |p: &Path, _: u64| -> Result<String, fio::ReadError> {
        Err(fio::ReadError::Unreadable { file: p.display().to_string(), error: std::io::ErrorKind::NotFound.into() })
    };
    let imported = match fio::convert(Path::new("job.fio"), text, None, &unreadable) {
        Ok(imported) => imported,
        Err(fio::FioError::Refused(f)) => panic!("refused: {f:?}"),
        Err(e) => panic!("{e}"),
    };
    assert!(
        imported.toml.contains(
            "for_threads = [1, 2]  # one step per stonewall group: [qd-1job] job.fio:7, [?qd-2jobs] job.fio:9"
        ),
        "{}",
        imported.toml
    );
    validate_file(&SourceFile { path: PathBuf::from("out.toml"), text: imported.toml }).unwrap();
}
