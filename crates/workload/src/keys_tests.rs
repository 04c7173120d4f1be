//! Tests of the key table: every key is read by the file walker and `--set`, written by
//! the canonical form, and fio's spellings give the plan the native ones give.

use crate::keys::{self, FioMeaning, Section};
use crate::{build_plan, plan_hash, render_diagnostics, to_toml, Flags, Plan, SourceFile};

fn src(text: &str) -> SourceFile {
    SourceFile { path: "job.toml".into(), text: text.to_string() }
}

/// A workload file: top-level keys, then each section table with its keys.
struct Spec {
    top: Vec<(&'static str, &'static str)>,
    tables: Vec<(Section, Vec<(&'static str, &'static str)>)>,
}

impl Spec {
    fn text(&self) -> String {
        let mut out: String = self.top.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
        for (section, keys) in &self.tables {
            let header =
                if section.is_array() { format!("[[{}]]", section.name()) } else { format!("[{}]", section.name()) };
            out.push_str(&format!("\n{header}\n"));
            out.extend(keys.iter().map(|(k, v)| format!("{k} = {v}\n")));
        }
        out
    }
    /// Every (section, key) it writes.
    fn keys(&self) -> Vec<(Section, &'static str)> {
        let top = self.top.iter().map(|(k, _)| (Section::Top, *k));
        top.chain(self.tables.iter().flat_map(|(s, keys)| keys.iter().map(move |(k, _)| (*s, *k)))).collect()
    }
}

/// Plans that together use every key of the table (the rules between keys keep some apart:
/// a staircase and a duration, a dataset and a flat working set, a pattern and NFS).
fn every_key_specs() -> Vec<Spec> {
    let mut specs = every_key_specs_but_access();
    specs.push(Spec { top: vec![("engine", "\"null\""), ("for_iodepth", "[1, 8, 32]")], tables: vec![] });
    // An end by amount and a precondition, on a run of one step over local files.
    specs.push(Spec {
        top: vec![
            ("dir", "\"/tmp/x\""),
            ("io_size", "\"8g\""),
            ("number_ios", "1000000"),
            ("passes", "2"),
            ("precondition", "\"2x sequential write\""),
        ],
        tables: vec![],
    });
    specs.extend(access_specs());
    specs.extend(content_specs());
    specs.push(own_rate_spec());
    // Phases: a write phase, then a read phase, and a workload in both.
    specs.push(Spec {
        top: vec![("dir", "\"/tmp/x\"")],
        tables: vec![
            (Section::Workload, vec![("name", "\"fill\""), ("rw", "\"write\""), ("phase", "1")]),
            (Section::Workload, vec![("name", "\"read\""), ("phase", "2")]),
            (Section::Workload, vec![("name", "\"both\"")]),
        ],
    });
    // A flow over a file set with a gamma size distribution, part of it preallocated.
    specs.push(Spec {
        top: vec![("dir", "\"/tmp/x\"")],
        tables: vec![
            (Section::Dataset, vec![("files", "100"), ("sizes", "\"gamma:16k:1.5\""), ("prealloc", "80")]),
            (
                Section::Workload,
                vec![("flow", "[\"create\", \"write_whole 64k\", \"close\", \"delete\"]"), ("flow_rate", "100")],
            ),
        ],
    });
    // Two sets: webserver's reads of a named dataset and its appends to a log fileset.
    specs.push(Spec {
        top: vec![("dir", "\"/tmp/x\"")],
        tables: vec![
            (Section::Dataset, vec![("name", "\"big\""), ("files", "100")]),
            (
                Section::Fileset,
                vec![
                    ("name", "\"logs\""),
                    ("depth", "0"),
                    ("width", "1"),
                    ("files", "1"),
                    ("sizes", "\"8k\""),
                    ("prealloc", "100"),
                ],
            ),
            (
                Section::Workload,
                vec![("flow", "[\"open in big\", \"read_whole 64k\", \"close\", \"append 8k random in logs\"]")],
            ),
        ],
    });
    specs
}

/// Each workload at its own open-loop rate.
fn own_rate_spec() -> Spec {
    Spec {
        top: vec![("engine", "\"null\"")],
        tables: vec![
            (Section::Workload, vec![("name", "\"a\""), ("rate_iops", "100")]),
            (Section::Workload, vec![("name", "\"b\""), ("rate_iops", "300")]),
        ],
    }
}

/// Data content: at the top level, and a [[workload]]'s own over it.
fn content_specs() -> Vec<Spec> {
    vec![
        Spec { top: vec![("engine", "\"null\""), ("rw", "\"randwrite\""), ("zero_buffers", "true")], tables: vec![] },
        Spec {
            top: vec![
                ("engine", "\"null\""),
                ("compress_ratio", "\"4:1\""),
                ("compress_chunk", "\"512\""),
                ("dedup_ratio", "1.5"),
                ("dedup_unit", "\"8k\""),
            ],
            tables: vec![
                (Section::Workload, vec![("rw", "\"randread\"")]),
                (
                    Section::Workload,
                    vec![
                        ("name", "\"w\""),
                        ("rw", "\"write\""),
                        ("compress_ratio", "2"),
                        ("compress_chunk", "\"4k\""),
                        ("dedup_ratio", "3"),
                        ("dedup_unit", "\"4k\""),
                        ("zero_buffers", "false"),
                    ],
                ),
            ],
        },
    ]
}

/// Access patterns: of the one workload, and of [[workload]]s.
fn access_specs() -> Vec<Spec> {
    vec![
        Spec {
            top: vec![
                ("engine", "\"null\""),
                ("rw", "\"read\""),
                ("seq_skip", "\"-8k\""),
                ("rate_iops", "1000"),
                ("arrivals", "\"poisson\""),
            ],
            tables: vec![],
        },
        Spec {
            top: vec![
                ("engine", "\"null\""),
                ("rate_iops", "1000"),
                ("random_distribution", "\"random\""),
                ("percentage_random", "100"),
            ],
            tables: vec![],
        },
        Spec {
            top: vec![("engine", "\"null\""), ("rate_iops", "1000")],
            tables: vec![
                (
                    Section::Workload,
                    vec![
                        ("rw", "\"randread\""),
                        ("random_distribution", "\"zoned:60/10:30/20:10/70\""),
                        ("percentage_random", "50"),
                        ("arrivals", "\"poisson\""),
                    ],
                ),
                (Section::Workload, vec![("name", "\"back\""), ("rw", "\"write\""), ("seq_skip", "\"4k\"")]),
                (
                    Section::Workload,
                    vec![("name", "\"z\""), ("rw", "\"randrw\""), ("random_distribution", "\"zipf:1.2:0.25\"")],
                ),
            ],
        },
    ]
}

fn every_key_specs_but_access() -> Vec<Spec> {
    vec![
        Spec {
            top: vec![
                ("description", "\"every flat key\""),
                ("engine", "\"uring\""),
                ("rw", "\"randrw\""),
                ("rwmix_read", "70"),
                ("bs", "\"4k:60,64k:40\""),
                ("size", "\"256m\""),
                ("files", "4"),
                ("threads", "2"),
                ("name", "\"job1\""),
                ("iodepth", "8"),
                ("sqpoll", "true"),
                ("duration", "\"90s\""),
                ("dir", "\"/mnt/test\""),
                ("direct", "true"),
                ("sync", "\"fdatasync\""),
                ("cache", "\"warm\""),
                ("warmup", "\"5s\""),
                ("rate_iops", "2000"),
                ("for_threads", "[1, 2]"),
                ("for_bs", "[\"4k\", \"8k\"]"),
                ("for_rwmix_read", "[0, 100]"),
                ("force", "true"),
                ("cleanup", "true"),
                ("max_errors", "\"off\""),
                ("breakdown_top", "32"),
                ("on_host_loss", "\"continue\""),
                ("host_timeout", "\"30s\""),
                ("steady_window", "\"20s\""),
            ],
            tables: vec![
                (
                    Section::Host,
                    vec![
                        ("address", "\"ssh://bench@client1\""),
                        ("name", "\"first\""),
                        ("user", "\"bench\""),
                        ("port", "2222"),
                        ("identity", "\"/root/.ssh/id_ed25519\""),
                        ("dir", "\"/mnt/first\""),
                        ("bin", "\"/usr/local/bin/ioscope\""),
                    ],
                ),
                (
                    Section::Host,
                    vec![
                        ("address", "\"agent://client2\""),
                        ("port", "7070"),
                        ("token_file", "\"/etc/ioscope/token\""),
                        ("ca", "\"/etc/ioscope/ca.pem\""),
                    ],
                ),
            ],
        },
        Spec {
            top: vec![
                ("engine", "\"null\""),
                ("hosts", "[\"client1\", \"agent://client2:7070\", \"[fd00::3]:22\"]"),
                ("token_file", "\"/etc/ioscope/token\""),
                ("tls_ca", "\"/etc/ioscope/ca.pem\""),
            ],
            tables: vec![],
        },
        // until_steady ends a run of one step, on one host.
        Spec { top: vec![("engine", "\"null\""), ("dir", "\"/tmp/x\""), ("until_steady", "\"15s\"")], tables: vec![] },
        Spec {
            top: vec![
                ("engine", "\"posix\""),
                ("dir", "\"/tmp/x\""),
                ("bs", "\"8k\""),
                ("verify", "\"report\""),
                ("verify_block", "\"4k\""),
            ],
            tables: vec![],
        },
        Spec {
            top: vec![
                ("engine", "\"null\""),
                ("dir", "\"/tmp/x\""),
                ("curve", "[50, 100]"),
                ("staircase", "\"1-2/1s\""),
                ("repeat", "5"),
                ("until_ci", "\"95:5%\""),
            ],
            tables: vec![
                (
                    Section::Workload,
                    vec![
                        ("name", "\"art\""),
                        ("operation", "\"write\""),
                        ("rwmix_read", "0"),
                        ("bs", "\"4k\""),
                        ("fileio", "\"random\""),
                        ("fileselect", "\"zipf:1.2\""),
                        ("threads", "2"),
                        ("skew", "50"),
                        ("pattern", "{ text = \"HI\", map = \"offset\" }"),
                    ],
                ),
                (Section::Workload, vec![("name", "\"other\""), ("rw", "\"rw\""), ("iodepth", "4")]),
                (
                    Section::Workload,
                    vec![("name", "\"own\""), ("rw", "\"write\""), ("sync", "\"fsync\""), ("direct", "false")],
                ),
                (
                    Section::Probe,
                    vec![("name", "\"sync\""), ("command", "\"true\""), ("at", "[\"1s\"]"), ("timeout", "\"20m\"")],
                ),
            ],
        },
        Spec {
            top: vec![
                ("engine", "\"nfs\""),
                ("target", "\"nfs://server/export/dir?nconnect=4\""),
                ("warmup", "\"auto\""),
            ],
            tables: vec![
                (
                    Section::Dataset,
                    vec![
                        ("dir", "\"tree\""),
                        ("depth", "2"),
                        ("width", "8"),
                        ("files", "10"),
                        ("sizes", "\"8k:60,32k:40\""),
                        ("total_size", "\"100m\""),
                        ("working_set", "\"10m\""),
                        ("format", "\"reuse\""),
                    ],
                ),
                (Section::Workload, vec![("operation", "\"create\""), ("fileio", "\"sequential\"")]),
                (Section::Host, vec![("address", "\"client1\""), ("target", "\"nfs://server/export/client1\"")]),
                (Section::Check, vec![("expr", "\"read.latency.p99 < 2ms\"")]),
            ],
        },
    ]
}

fn plan_of(text: &str, flags: &Flags) -> Plan {
    build_plan(Some(&src(text)), flags).unwrap_or_else(|d| panic!("{text}\n{}", render_diagnostics(&d)))
}

#[test]
fn canonical_toml_of_plans_using_every_key_reads_back_to_the_same_plan() {
    let specs = every_key_specs();
    let used: Vec<(Section, &str)> = specs.iter().flat_map(Spec::keys).collect();
    for section in Section::ALL {
        for key in keys::in_section(section) {
            assert!(used.contains(&(section, key.name)), "no plan of this test uses {section:?} `{}`", key.name);
        }
    }
    for spec in &specs {
        let plan = plan_of(&spec.text(), &Flags::default());
        let canonical = to_toml(&plan);
        let back = plan_of(&canonical, &Flags::default());
        assert_eq!(back, plan, "{canonical}");
        assert_eq!(to_toml(&back), canonical);
        assert_eq!(plan_hash(&back), plan_hash(&plan));
    }
}

#[test]
fn every_key_in_the_key_table_is_accepted_by_set_and_toml() {
    for spec in every_key_specs() {
        let text = spec.text();
        let file = plan_of(&text, &Flags::default());
        // The same values through --set, over a file that has only the sections' headers.
        let headers: String = spec
            .tables
            .iter()
            .map(|(s, _)| if s.is_array() { format!("[[{}]]\n", s.name()) } else { String::new() })
            .collect();
        let mut sets: Vec<String> = spec.top.iter().map(|(k, v)| format!("{k}={}", v.trim_matches('"'))).collect();
        for (section, keys) in &spec.tables {
            // Arrays: --set reaches every entry, so only one entry per section is checked here.
            if spec.tables.iter().filter(|(s, _)| s == section).count() > 1 {
                continue;
            }
            sets.extend(keys.iter().map(|(k, v)| {
                let v = if v.starts_with('[') || v.starts_with('{') {
                    v.to_string()
                } else {
                    v.trim_matches('"').to_string()
                };
                format!("{}.{k}={v}", section.name())
            }));
        }
        let flags = Flags { sets, ..Flags::default() };
        if spec.tables.iter().all(|(s, _)| spec.tables.iter().filter(|(t, _)| t == s).count() == 1) {
            match build_plan(Some(&src(&headers)), &flags) {
                Ok(via_set) => assert_eq!(via_set, file),
                Err(d) => panic!("{flags:?}\n{}", render_diagnostics(&d)),
            }
        }
    }
    // Each key alone is known to --set and to the file (its value may break another rule).
    for section in Section::ALL {
        for key in keys::in_section(section) {
            let name = keys::set_name(section, key);
            let flags = Flags { sets: vec![format!("{name}={}", key.example)], ..Flags::default() };
            let out = build_plan(None, &flags).err().map(|d| render_diagnostics(&d)).unwrap_or_default();
            assert!(!out.contains("a workload key (see docs/workload.md)"), "--set {name}: {out}");
            let text = match section {
                Section::Top => format!("{} = {}\n", key.name, key.example),
                s if s.is_array() => format!("[[{}]]\n{} = {}\n", s.name(), key.name, key.example),
                s => format!("[{}]\n{} = {}\n", s.name(), key.name, key.example),
            };
            let out = build_plan(Some(&src(&text)), &Flags::default()).err().map(|d| render_diagnostics(&d));
            assert!(!out.unwrap_or_default().contains("unknown key"), "{text}");
        }
    }
}

#[test]
fn fio_spellings_give_the_same_plan_and_hash_as_the_native_flags() {
    let native = [
        ("engine", "null"),
        ("threads", "2"),
        ("duration", "5s"),
        ("warmup", "2s"),
        ("rw", "rw"),
        ("rwmix-read", "70"),
        ("bs", "8k"),
        ("size", "64m"),
        ("files", "2"),
        ("iodepth", "4"),
        ("rate-iops", "100"),
        ("sync", "fsync"),
        ("dir", "/tmp/x"),
        ("direct", ""),
        ("cleanup", ""),
        ("name", "job1"),
    ];
    let fio = [
        ("ioengine", "null"),
        ("numjobs", "2"),
        ("runtime", "5"),
        ("ramp_time", "2"),
        ("readwrite", "readwrite"),
        ("rwmixread", "70"),
        ("blocksize", "8k"),
        ("size", "64m"),
        ("nrfiles", "2"),
        ("iodepth", "4"),
        ("rate_iops", "100"),
        ("fsync", "1"),
        ("directory", "/tmp/x"),
        ("direct", "1"),
        ("unlink", "1"),
        ("name", "job1"),
        ("time_based", ""),
        ("group_reporting", ""),
        ("thread", ""),
    ];
    let flags = |pairs: &[(&str, &str)]| pairs.iter().fold(Flags::default(), |f, (k, v)| f.with(k, v));
    let build = |f: &Flags| build_plan(None, f).unwrap_or_else(|d| panic!("{}", render_diagnostics(&d)));
    let (a, b) = (build(&flags(&native)), build(&flags(&fio)));
    assert_eq!(a, b);
    assert_eq!(plan_hash(&a), plan_hash(&b));
    assert_eq!(a.workloads[0].name, "job1");
    // The other spellings: `-` for `_`, fio's engine names and buffered=0.
    type Pairs<'a> = &'a [(&'a str, &'a str)];
    let more: [(Pairs, Pairs); 4] = [
        (&[("engine", "posix"), ("dir", "/x")], &[("ioengine", "psync"), ("dir", "/x")]),
        (&[("engine", "posix"), ("dir", "/x")], &[("ioengine", "pvsync"), ("dir", "/x")]),
        (&[("engine", "uring"), ("dir", "/x")], &[("ioengine", "io_uring"), ("dir", "/x")]),
        (&[("direct", ""), ("warmup", "3s"), ("dir", "/x")], &[("buffered", "0"), ("ramp-time", "3"), ("dir", "/x")]),
    ];
    for (n, f) in more {
        assert_eq!(plan_hash(&build(&flags(n))), plan_hash(&build(&flags(f))), "{n:?} {f:?}");
    }
    // `--direct=0` turns off the file's direct = true, and a later flag wins.
    let p = plan_of("direct = true\ndir = \"/x\"\n", &Flags::default().with("direct", "0"));
    assert!(!p.direct);
    let p = build(&Flags::default().with("engine", "null").with("threads", "3").with("numjobs", "5"));
    assert_eq!(p.workloads[0].threads, 5);
}

#[test]
fn fio_options_without_an_equivalent_are_refused_naming_the_option_and_why() {
    for option in keys::FIO_OPTIONS {
        let FioMeaning::Refused(why) = option.meaning else { continue };
        for spelling in keys::fio_spellings(option) {
            let flags = Flags::default().with("engine", "null").with(&spelling, "x");
            let d = build_plan(None, &flags).unwrap_err();
            let out = render_diagnostics(&d);
            assert_eq!(d.len(), 1, "{out}");
            assert!(out.starts_with(&format!("--{spelling} x: error: expected a flag ioscope has")), "{out}");
            assert!(out.contains(why), "{out}");
        }
    }
    // What ioscope does not do either is accepted when fio turns it off, refused when on.
    for option in keys::FIO_OPTIONS {
        let FioMeaning::Only { value, why } = option.meaning else { continue };
        let same = Flags::default().with("engine", "null").with(option.name, value);
        assert!(build_plan(None, &same).is_ok(), "--{}={value}", option.name);
        let d = build_plan(None, &Flags::default().with("engine", "null").with(option.name, "7")).unwrap_err();
        let out = render_diagnostics(&d);
        assert!(out.starts_with(&format!("--{} 7: error: expected --{}={value}", option.name, option.name)), "{out}");
        assert!(out.contains(why), "{out}");
    }
    // A switch with a value fio means otherwise (sync every 4 writes) is refused too.
    let d = build_plan(None, &Flags::default().with("engine", "null").with("fsync", "4")).unwrap_err();
    let out = render_diagnostics(&d);
    assert!(out.starts_with("--fsync 4: error: expected 1 or 0"), "{out}");
    // libaio is not an engine of ioscope's: use uring (fio's --ioengine=libaio is converted).
    let d = build_plan(None, &Flags::default().with("engine", "libaio")).unwrap_err();
    assert!(render_diagnostics(&d).contains("use uring for queued asynchronous I/O"), "{}", render_diagnostics(&d));
    // fio's name written in a workload file points at ioscope's.
    let d = build_plan(Some(&src("numjobs = 4\nengine = \"null\"\n")), &Flags::default()).unwrap_err();
    assert!(d[0].message.contains("did you mean `threads`?"), "{}", d[0]);
    let d = build_plan(Some(&src("time_based = 1\nengine = \"null\"\n")), &Flags::default()).unwrap_err();
    assert!(d[0].message.contains("ioscope is always time based"), "{}", d[0]);
}

#[test]
fn fio_options_the_importer_converts_are_converted_on_the_command_line_too() {
    let base = || Flags::default().with("dir", "/d").with("rw", "randrw").with("engine", "null");
    let plan = |flags: Flags| plan_hash(&build_plan(None, &flags).unwrap());
    let cases = [
        ("bssplit", "4k/60:64k/40", "bs", "4k:60,64k:40"),
        ("bssplit", "4k/50:64k/:1m/", "bs", "4k:50,64k:25,1m:25"),
        ("rwmixwrite", "30", "rwmix_read", "70"),
        ("filename", "/data/f1", "dir", "/data"),
        ("filename", "/dev/sdb", "dir", "/dev/sdb"),
        ("ioengine", "libaio", "engine", "uring"),
    ];
    for (fio, value, key, same) in cases {
        for spelling in [fio.to_string(), fio.replace('_', "-")] {
            let got = plan(base().with(&spelling, value));
            assert_eq!(got, plan(base().with(key, same)), "--{spelling} {value} is --{key} {same}");
        }
    }
    assert!(crate::flag_notes(&Flags::default().with("ioengine", "libaio"))[0].contains("io_uring"));
    // A value that does not convert is refused, naming the flag and what it takes.
    for option in keys::FIO_OPTIONS {
        let FioMeaning::Converted { expected, .. } = option.meaning else { continue };
        let d = build_plan(None, &Flags::default().with("engine", "null").with(option.name, "4k/200:x:y")).unwrap_err();
        let out = render_diagnostics(&d);
        assert_eq!(d.len(), 1, "{out}");
        let shown = format!("--{} 4k/200:x:y: error: expected {expected}", option.name);
        assert!(out.starts_with(&shown), "{out}");
    }
}

#[test]
fn by_fio_name_finds_keys_switches_and_refusals_in_either_spelling() {
    use keys::FioMatch;
    let key = |n: &str| match keys::by_fio_name(n) {
        Some(FioMatch::Key(k)) => Some(k.name),
        _ => None,
    };
    assert_eq!(key("numjobs"), Some("threads"));
    assert_eq!(key("ramp-time"), Some("warmup"));
    assert_eq!(key("RUNTIME"), Some("duration"));
    assert_eq!(key("bs"), Some("bs"));
    assert!(
        matches!(keys::by_fio_name("time-based"), Some(FioMatch::Option(o)) if matches!(o.meaning, FioMeaning::NoOp(_)))
    );
    assert!(
        matches!(keys::by_fio_name("output"), Some(FioMatch::Option(o)) if matches!(o.meaning, FioMeaning::Refused(_)))
    );
    assert!(keys::by_fio_name("no_such_option").is_none());
    let engine = keys::find(Section::Top, "engine").expect("engine");
    assert_eq!(engine.native_value("psync"), "posix");
    assert_eq!(engine.native_value("uring"), "uring");
}

#[test]
fn every_key_of_the_canonical_form_is_in_the_key_table() {
    for spec in every_key_specs() {
        let canonical = to_toml(&plan_of(&spec.text(), &Flags::default()));
        let doc = toml_edit::Document::parse(canonical.as_str()).expect("the canonical form is TOML");
        for (name, item) in doc.iter() {
            let section = Section::TABLES.into_iter().find(|s| s.name() == name);
            let tables: Vec<&dyn toml_edit::TableLike> = match (section, item) {
                (None, _) => {
                    assert!(
                        keys::find(Section::Top, name).is_some(),
                        "canonical top-level `{name}` is not in the table"
                    );
                    continue;
                }
                (Some(_), toml_edit::Item::ArrayOfTables(a)) => {
                    a.iter().map(|t| t as &dyn toml_edit::TableLike).collect()
                }
                (Some(_), item) => item.as_table_like().into_iter().collect(),
            };
            let section = section.expect("a section");
            for t in tables {
                for (key, _) in t.iter() {
                    assert!(keys::find(section, key).is_some(), "canonical `{name}.{key}` is not in the table");
                }
            }
        }
    }
    // --set with fio's name for a key says which key it is.
    let d = build_plan(None, &Flags { sets: vec!["numjobs=4".into()], ..Flags::default() }).unwrap_err();
    assert!(d[0].message.contains("did you mean `threads`?"), "{}", d[0]);
}

#[test]
fn fios_invalidate_flag_is_accepted_as_the_cache_choice_not_refused() {
    let build =
        |f: Flags| build_plan(None, &f.with("dir", "/x")).unwrap_or_else(|d| panic!("{}", render_diagnostics(&d)));
    assert_eq!(build(Flags::default()).cache, crate::CacheMode::Cold, "the default is fio's invalidate=1");
    assert_eq!(build(Flags::default().with("invalidate", "0")).cache, crate::CacheMode::AsIs);
    assert_eq!(build(Flags::default().with("invalidate", "1")).cache, crate::CacheMode::Cold);
    assert_eq!(build(Flags::default().with("invalidate", "")).cache, crate::CacheMode::Cold);
    assert_eq!(build(Flags::default().with("cache", "warm")).cache, crate::CacheMode::Warm);
    assert_eq!(build(Flags::default().with("cache", "AS-IS")).cache, crate::CacheMode::AsIs);
    let d = build_plan(None, &Flags::default().with("dir", "/x").with("cache", "hot")).unwrap_err();
    assert!(render_diagnostics(&d).contains("one of: cold, warm, as-is"), "{}", render_diagnostics(&d));
    // No client page cache to warm with an engine whose files are on a server.
    let d = build_plan(None, &Flags::default().with("engine", "nfs").with("target", "nfs://h/e").with("cache", "warm"))
        .unwrap_err();
    let out = render_diagnostics(&d);
    assert!(out.contains("keeps no page cache on this host"), "{out}");
    // The plan an agent receives (its host's part, as JSON) carries the choice.
    let warm = build(Flags::default().with("cache", "warm"));
    let sent: Plan = serde_json::from_str(&serde_json::to_string(&warm.for_host(0)).unwrap()).unwrap();
    assert_eq!(sent.cache, crate::CacheMode::Warm);
    // A plan stored before the key existed ran as-is: that is what it reads as.
    let mut json = serde_json::to_value(build(Flags::default())).unwrap();
    json.as_object_mut().unwrap().remove("cache");
    assert_eq!(serde_json::from_value::<Plan>(json).unwrap().cache, crate::CacheMode::AsIs);
}
