//! Hostile input: mutated example files, boundary values and odd bytes thrown at the
//! parser, seeded so that a failure repeats. Nothing may panic; what validates must also
//! survive its canonical form.

use crate::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

/// xorshift64*: small, seeded, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

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

/// One random change to `text`.
fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let at = rng.below(lines.len() + 1);
    match rng.below(8) {
        // Replace a value.
        0 | 1 => {
            if let Some(line) = lines.get_mut(at) {
                if let Some((k, _)) = line.split_once('=') {
                    *line = format!("{k}= {}", rng.pick(VALUES));
                }
            }
        }
        // Add a key with a value.
        2 | 3 => lines.insert(at, format!("{} = {}", rng.pick(KEYS), rng.pick(VALUES))),
        // Add a section header or a whole line.
        4 => lines.insert(at, rng.pick(LINES).to_string()),
        // Remove or duplicate a line.
        5 if at < lines.len() => {
            lines.remove(at);
        }
        5 => {}
        6 if at < lines.len() => {
            let l = lines[at].clone();
            lines.insert(at, l);
        }
        6 => {}
        // Replace one char with an odd one.
        _ => {
            let odd = ['\0', '\u{1b}', '"', '[', '{', '=', '\n', 'é', '\u{feff}', '9', '-', '.'];
            let chars: Vec<char> = text.chars().collect();
            if !chars.is_empty() {
                let i = rng.below(chars.len());
                let mut chars = chars;
                chars[i] = odd[rng.below(odd.len())];
                return chars.into_iter().collect();
            }
        }
    }
    lines.join("\n") + "\n"
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
        Err(d) => {
            assert!(!d.is_empty());
            let out = render_diagnostics(&d);
            assert!(out.len() < 64 << 10, "{} bytes of diagnostics", out.len());
        }
    }
}

#[test]
fn mutated_example_files_never_panic_the_parser() {
    let bases = examples();
    assert!(bases.len() >= 5);
    // IOSCOPE_FUZZ_CASES and IOSCOPE_FUZZ_SEED explore further than the default run.
    let env = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let cases = env("IOSCOPE_FUZZ_CASES", 3000) as usize;
    let mut rng = Rng(env("IOSCOPE_FUZZ_SEED", 0x5eed_1234_abcd_0001) | 1);
    let mut failures = Vec::new();
    for i in 0..cases {
        let mut text = bases[i % bases.len()].clone();
        for _ in 0..1 + rng.below(4) {
            text = mutate(&mut rng, &text);
        }
        let flags = Flags::default();
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| check(&text, &flags))) {
            let why = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
            failures.push(format!("case {i}: {}\n--- input ---\n{text}", why.unwrap_or_default()));
        }
    }
    assert!(failures.is_empty(), "{} of {cases} cases failed; the first:\n{}", failures.len(), failures[0]);
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

#[test]
fn mutated_vdbench_files_never_panic_the_import() {
    let seed = include_str!("../../../examples/vdbench-seed.parm");
    let odd = [
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
    ];
    let mut rng = Rng(0x0bad_cafe_0000_0001);
    let mut failures = Vec::new();
    for i in 0..2000 {
        let mut text: Vec<char> = seed.chars().collect();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(text.len() + 1);
            let piece: Vec<char> = odd[rng.below(odd.len())].chars().collect();
            let end = match rng.below(3) {
                0 => at,
                1 => (at + piece.len()).min(text.len()),
                _ => (at + 1 + rng.below(8)).min(text.len()),
            };
            let piece = if end > at && rng.below(2) == 0 { Vec::new() } else { piece };
            text.splice(at..end, piece);
        }
        let text: String = text.into_iter().collect();
        let file = SourceFile { path: PathBuf::from("fuzz.parm"), text: text.clone() };
        let run = catch_unwind(AssertUnwindSafe(|| {
            if let Ok(toml) = vdbench::import(&file) {
                let _ = validate_file(&SourceFile { path: PathBuf::from("out.toml"), text: toml });
            }
        }));
        if run.is_err() {
            failures.push(format!("case {i}:\n{text}"));
        }
    }
    assert!(failures.is_empty(), "{} cases panicked; the first:\n{}", failures.len(), failures[0]);
}
