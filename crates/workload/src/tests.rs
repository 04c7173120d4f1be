//! Behaviour a user would notice: what builds, what is rejected, and where the error points.

use crate::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn src(text: &str) -> SourceFile {
    SourceFile { path: PathBuf::from("job.toml"), text: text.to_string() }
}

fn plan(text: &str) -> Plan {
    match validate_file(&src(text)) {
        Ok(p) => p,
        Err(d) => panic!("expected a plan, got:\n{}", render_diagnostics(&d)),
    }
}

fn errors(text: &str, flags: &Flags) -> Vec<Diagnostic> {
    match build_plan(Some(&src(text)), flags) {
        Ok(p) => panic!("expected errors, got {p:?}"),
        Err(d) => d,
    }
}

fn file_errors(text: &str) -> Vec<Diagnostic> {
    errors(text, &Flags::default())
}

/// (line, col) of a file diagnostic.
fn pos(d: &Diagnostic) -> (usize, usize) {
    match &d.origin {
        Origin::File { line, col, .. } => (*line, *col),
        Origin::Flag { .. } | Origin::Omitted { .. } => panic!("expected a file diagnostic, got {d}"),
    }
}

fn flag_of(d: &Diagnostic) -> &str {
    match &d.origin {
        Origin::Flag { flag } => flag,
        _ => panic!("expected a flag diagnostic, got {d}"),
    }
}

/// The single diagnostic for `text`.
fn one_error(text: &str) -> Diagnostic {
    let d = file_errors(text);
    assert_eq!(d.len(), 1, "{}", render_diagnostics(&d));
    d.into_iter().next().unwrap()
}

const DIR: &str = "dir = \"/tmp/x\"\n";

#[test]
fn acceptance_bad_size_unknown_key_negative_threads() {
    let text = "# demo\nbs = \"8q\"\nthraeds = 4\nthreads = -4\ndir = \"/tmp/x\"\n";
    let d = file_errors(text);
    assert_eq!(d.len(), 3, "{}", render_diagnostics(&d));

    assert_eq!(pos(&d[0]), (2, 6));
    assert_eq!((d[0].key.as_str(), d[0].value.as_str()), ("bs", "\"8q\""));
    assert_eq!(d[0].expected, "a size like 4k, 64k, 1m");

    assert_eq!(pos(&d[1]), (3, 1));
    assert_eq!(d[1].key, "thraeds");
    assert!(d[1].expected.starts_with("one of: description, engine, rw,"));
    assert!(d[1].message.contains("did you mean `threads`?"));

    assert_eq!(pos(&d[2]), (4, 11));
    assert_eq!((d[2].key.as_str(), d[2].value.as_str()), ("threads", "-4"));
    assert_eq!(d[2].expected, "a whole number from 1 to 4096");

    let out = render_diagnostics(&d);
    assert!(
        out.starts_with(
            "job.toml:2:6: error: bs \"8q\": expected a size like 4k, 64k, 1m\n  |\n2 | bs = \"8q\"\n  |      ^^^^\n"
        ),
        "{out}"
    );
    assert!(out.contains("job.toml:3:1: error: unknown key \"thraeds\": expected one of: "));
    assert!(out.contains("  = note: did you mean `threads`?"));
    assert!(out.contains(
        "job.toml:4:11: error: threads -4: expected a whole number from 1 to 4096\n  |\n4 | threads = -4\n  |           ^^"
    ), "{out}");
    assert!(out.ends_with("3 errors; nothing was run.\n"));
}

#[test]
fn defaults() {
    let p = plan(DIR);
    assert_eq!(p.engine, EngineKind::Posix);
    assert_eq!(rw_of(&p), Rw::RandRead);
    assert_eq!(p.workloads[0].read_pct, 100);
    assert_eq!(p.workloads[0].block_sizes, vec![BlockSize { bytes: 4096, weight: 1 }]);
    assert_eq!(p.size_bytes, 1 << 30);
    assert_eq!((p.files, p.workloads[0].threads, p.iodepth), (1, 1, 1));
    assert_eq!(p.duration, Duration::from_secs(60));
    assert_eq!(p.dir, Path::new("/tmp/x"));
    assert!(!p.direct && !p.force && !p.cleanup);
    assert_eq!(p.sync, SyncMode::None);
    assert_eq!(p.rate_iops, None);
}

#[test]
fn dir_is_required_except_for_the_null_engine() {
    let d = build_plan(None, &Flags::default()).unwrap_err();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].key, "dir");
    assert_eq!(flag_of(&d[0]), "--dir");
    assert_eq!(d[0].expected, "a directory path, e.g. --dir /mnt/test or dir = \"/mnt/test\"");
    let d = file_errors("threads = 2\n");
    assert_eq!(d.len(), 1);
    assert!(d[0].message.contains("job.toml"), "{}", d[0]);

    let p = plan("engine = \"null\"\n");
    assert_eq!(p.engine, EngineKind::Null);
    assert_eq!(p.dir, PathBuf::new());
    let flags = Flags::default().with("engine", "null");
    assert!(build_plan(None, &flags).is_ok());
    // An empty path is no path.
    assert_eq!(one_error("dir = \"\"\n").key, "dir");
}

#[test]
fn every_key_from_the_file() {
    let p = plan(
        "# comment\ndescription = \"all keys\"\nengine = \"posix\"\nrw = \"randrw\"\nrwmix_read = 70\n\
         bs = \"4k:3,64k:1\"\nsize = \"2g\"\nfiles = 4\nthreads = 8\niodepth = 1\nduration = \"1m30s\"\n\
         dir = \"data\"\ndirect = true\nsync = \"fdatasync\"\nrate_iops = 1000\nforce = true\ncleanup = true\n",
    );
    assert_eq!(rw_of(&p), Rw::RandRw);
    assert_eq!(p.workloads[0].read_pct, 70);
    assert_eq!(
        p.workloads[0].block_sizes,
        vec![BlockSize { bytes: 4096, weight: 3 }, BlockSize { bytes: 65536, weight: 1 }]
    );
    assert_eq!(p.size_bytes, 2 << 30);
    assert_eq!((p.files, p.workloads[0].threads), (4, 8));
    assert_eq!(p.duration, Duration::from_secs(90));
    assert_eq!(p.dir, Path::new("data"), "relative paths stay relative to the cwd");
    assert!(p.direct && p.force && p.cleanup);
    assert_eq!(p.sync, SyncMode::Fdatasync);
    assert_eq!(p.rate_iops, Some(1000));
}

#[test]
fn numbers_and_sizes_in_their_toml_types() {
    let p = plan("bs = 8192\nsize = 1048576\nduration = 5\ndir = \"/d\"\n");
    assert_eq!(p.workloads[0].block_sizes[0].bytes, 8192);
    assert_eq!(p.size_bytes, 1 << 20);
    assert_eq!(p.duration, Duration::from_secs(5));
    let d = one_error("threads = \"4\"\ndir = \"/d\"\n");
    assert_eq!(d.key, "threads");
    assert!(d.message.contains("without quotes"), "{d}");
    assert_eq!(one_error("direct = \"yes\"\ndir = \"/d\"\n").expected, "true or false");
}

#[test]
fn read_pct_follows_rw() {
    for (rw, pct) in [("read", 100), ("write", 0), ("randread", 100), ("randwrite", 0), ("randrw", 50)] {
        let p = plan(&format!("rw = \"{rw}\"\n{DIR}"));
        assert_eq!(p.workloads[0].read_pct, pct, "{rw}");
        assert_eq!(rw_of(&p).name(), rw);
    }
}

#[test]
fn weighted_block_sizes() {
    let want = vec![
        BlockSize { bytes: 4096, weight: 60 },
        BlockSize { bytes: 32 << 10, weight: 25 },
        BlockSize { bytes: 512 << 10, weight: 10 },
        BlockSize { bytes: 4 << 20, weight: 5 },
    ];
    let p = plan(&format!("bs = \"4k:60, 32k:25,512k:10,4m:5\"\n{DIR}"));
    assert_eq!(p.workloads[0].block_sizes, want);
    let p = plan(&format!(
        "bs = [{{size = \"4k\", weight = 60}}, {{size = \"32k\", weight = 25}},\n  {{size = 524288, weight = 10}}, {{size = \"4m\", weight = 5}}]\n{DIR}"
    ));
    assert_eq!(p.workloads[0].block_sizes, want);
    let p = plan(&format!(
        "{DIR}[[bs]]\nsize = \"4k\"\nweight = 60\n[[bs]]\nsize = \"32k\"\nweight = 25\n[[bs]]\nsize = \"512k\"\nweight = 10\n[[bs]]\nsize = \"4m\"\nweight = 5\n"
    ));
    assert_eq!(p.workloads[0].block_sizes, want);
    // A single size needs no weight.
    assert_eq!(
        plan(&format!("bs = [{{size = \"16k\"}}]\n{DIR}")).workloads[0].block_sizes,
        vec![BlockSize { bytes: 16384, weight: 1 }]
    );
}

#[test]
fn weighted_list_errors_point_at_the_entry() {
    let d = one_error(&format!("bs = \"4k:60,8q:40\"\n{DIR}"));
    assert_eq!(pos(&d), (1, 13));
    assert_eq!(d.value, "\"8q\"");
    let d = one_error(&format!("bs = \"4k:60,8k:0\"\n{DIR}"));
    assert_eq!(pos(&d), (1, 16));
    assert!(d.expected.contains("weight"), "{d}");
    let d = one_error(&format!("bs = \"4k:60,8k\"\n{DIR}"));
    assert!(d.expected.starts_with("SIZE:WEIGHT"), "{d}");
    let d = one_error(&format!("bs = \"4k:60,,8k:1\"\n{DIR}"));
    assert!(d.expected.contains("separated by commas"), "{d}");
    let d = one_error(&format!("bs = \"4k:-1\"\n{DIR}"));
    assert!(d.expected.contains("weight"), "{d}");
    let d = one_error(&format!("bs = [{{size = \"4k\", weight = 60}}, {{size = \"8k\", wieght = 1}}]\n{DIR}"));
    assert_eq!(d.key, "bs.wieght");
    assert!(d.message.contains("did you mean `weight`?"), "{d}");
    let d = one_error(&format!("bs = []\n{DIR}"));
    assert_eq!(d.expected, "at least one block size");
    // From a flag: the whole flag, and a note naming the entry.
    let flags = Flags::default().with("bs", "4k:1,9x:2");
    let d = errors(DIR, &flags);
    assert_eq!(d.len(), 1);
    assert_eq!(flag_of(&d[0]), "--bs");
    assert!(d[0].message.contains("in entry \"9x:2\""), "{}", d[0]);
}

#[test]
fn block_size_limits() {
    let d = one_error(&format!("bs = 0\n{DIR}"));
    assert!(d.expected.contains("from 1 byte to 256 MiB"), "{d}");
    let d = one_error(&format!("bs = \"512m\"\nsize = \"10g\"\n{DIR}"));
    assert!(d.message.contains("512 MiB"), "{d}");
    assert_eq!(plan(&format!("bs = \"256m\"\n{DIR}")).workloads[0].block_sizes[0].bytes, 256 << 20);
    assert_eq!(plan(&format!("bs = 1\n{DIR}")).workloads[0].block_sizes[0].bytes, 1);
}

#[test]
fn size_must_hold_one_largest_block_per_file() {
    let d = one_error(&format!("size = \"1m\"\nfiles = 4\nbs = \"4k:1,512k:1\"\n{DIR}"));
    assert_eq!(d.key, "size");
    assert_eq!(pos(&d), (1, 8));
    assert!(d.expected.starts_with("at least 2 MiB"), "{d}");
    assert!(plan(&format!("size = \"2m\"\nfiles = 4\nbs = \"4k:1,512k:1\"\n{DIR}")).size_bytes == 2 << 20);
    // With the default size (1 GiB) the blame goes to files.
    let d = one_error(&format!("files = 300000\nbs = \"4m\"\n{DIR}"));
    assert_eq!(d.key, "files");
    assert!(d.expected.starts_with("at most 256 files"), "{d}");
    assert_eq!(one_error(&format!("size = 0\n{DIR}")).key, "size");
}

#[test]
fn whole_number_ranges() {
    for (key, max) in [("files", 1_000_000u64), ("threads", 4096), ("iodepth", 1024)] {
        let want = format!("a whole number from 1 to {max}");
        for bad in ["0".to_string(), "-4".into(), "2.5".into(), (max + 1).to_string(), "\"many\"".into()] {
            let d = one_error(&format!("engine = \"null\"\n{key} = {bad}\n"));
            assert_eq!(d.key, key);
            assert_eq!(d.expected, want, "{key} = {bad}");
            assert_eq!(pos(&d), (2, key.len() + 4));
        }
        let p = plan(&format!("engine = \"null\"\n{key} = {max}\nsize = \"1p\"\n"));
        assert!(p.files as u64 == max || p.workloads[0].threads as u64 == max || p.iodepth as u64 == max);
    }
    assert_eq!(
        one_error(&format!("rw = \"randrw\"\nrwmix_read = 101\n{DIR}")).expected,
        "a whole number from 0 to 100"
    );
    assert_eq!(plan(&format!("rw = \"randrw\"\nrwmix_read = 0\n{DIR}")).workloads[0].read_pct, 0);
}

#[test]
fn posix_is_synchronous() {
    let d = one_error(&format!("iodepth = 8\n{DIR}"));
    assert_eq!(d.key, "iodepth");
    assert!(d.message.contains("posix is synchronous: iodepth must be 1 (use engine uring"), "{d}");
    assert_eq!(plan("engine = \"null\"\niodepth = 8\n").iodepth, 8);
    assert_eq!(plan(&format!("engine = \"uring\"\niodepth = 256\nsqpoll = true\n{DIR}")).iodepth, 256);
    let d = one_error(&format!("sqpoll = true\n{DIR}"));
    assert_eq!(d.key, "sqpoll");
    assert!(d.message.contains("io_uring option"), "{d}");
}

#[test]
fn duration_limits() {
    assert_eq!(plan(&format!("duration = \"30d\"\n{DIR}")).duration, Duration::from_secs(30 * 86400));
    assert_eq!(plan(&format!("duration = 1.0\n{DIR}")).duration, Duration::from_secs(1));
    for bad in ["0", "\"0s\"", "\"31d\"", "-5", "\"soon\"", "true"] {
        let d = one_error(&format!("duration = {bad}\n{DIR}"));
        assert_eq!(d.key, "duration", "{bad}");
        assert!(d.expected.starts_with("a whole number of seconds from 1s to 30d"), "{d}");
    }
}

#[test]
fn a_run_shorter_than_a_second_is_refused_before_any_io() {
    // In the file: at the value, with the form expected and why.
    for bad in ["\"1ns\"", "\"500ms\"", "0.5", "\"1.5s\"", "\"0s\""] {
        let d = one_error(&format!("duration = {bad}\n{DIR}"));
        assert_eq!((d.key.as_str(), pos(&d)), ("duration", (1, 12)), "{bad}");
        assert!(d.expected.starts_with("a whole number of seconds from 1s to 30d"), "{d}");
    }
    assert!(one_error(&format!("duration = \"1ns\"\n{DIR}")).message.contains("1ns is not a whole number of seconds"));
    // As a flag.
    let flags = Flags::default().with("duration", "1ns");
    let d = errors(DIR, &flags);
    assert_eq!((d.len(), flag_of(&d[0]), d[0].key.as_str()), (1, "--duration", "duration"));
    assert_eq!(d[0].to_string().lines().next().unwrap(), "--duration 1ns: error: expected a whole number of seconds from 1s to 30d, like 90s, 1m30s, 2h (a bare number is seconds)");
    // Warm-up: none, or whole seconds.
    assert_eq!(plan(&format!("warmup = 0\n{DIR}")).warmup, Duration::ZERO);
    assert_eq!(plan(&format!("warmup = \"2m\"\n{DIR}")).warmup, Duration::from_secs(120));
    let d = one_error(&format!("warmup = \"10ms\"\n{DIR}"));
    assert_eq!((d.key.as_str(), pos(&d)), ("warmup", (1, 10)));
    // A staircase's steps fill whole seconds too, and its ADD cannot wrap the thread count.
    for bad in ["1-8/1ns", "1-8/500ms", "1-8/0s", "1-8+4294967295/5s", "1-8+0/5s"] {
        let d = one_error(&format!("engine = \"null\"\nstaircase = \"{bad}\"\n"));
        assert_eq!((d.key.as_str(), pos(&d)), ("staircase", (2, 13)), "{bad}");
    }
    assert_eq!(plan("engine = \"null\"\nstaircase = \"1-8+4096/1s\"\n").steps().len(), 1);
    // Curve steps run for `duration` each: the same rule.
    let d = one_error("engine = \"null\"\ncurve = true\nduration = \"100ms\"\n");
    assert_eq!(d.key, "duration");
}

#[test]
fn a_run_longer_than_30_days_in_all_is_refused() {
    let d = one_error(&format!("duration = \"20d\"\nfor_threads = [1, 2]\n{DIR}"));
    assert_eq!((d.key.as_str(), pos(&d)), ("duration", (1, 12)));
    assert_eq!(d.expected, "a run of at most 30d in all");
    assert!(d.message.contains("2 step(s) × 20d each (warm-up included) = 40d"), "{d}");
    let d = one_error("engine = \"null\"\nwarmup = \"10d\"\nstaircase = \"1-8/1d\"\n");
    assert_eq!((d.key.as_str(), pos(&d)), ("staircase", (3, 13)));
}

#[test]
fn many_long_loops_are_counted_before_any_step_is_built() {
    // 4096 × 101 × 101 steps would take gigabytes if they were built to be counted.
    let threads: Vec<String> = (1..=4096).map(|t| t.to_string()).collect();
    let pcts: Vec<String> = (0..=100).map(|p| p.to_string()).collect();
    let curve: Vec<String> = (1..=100).map(|p| p.to_string()).collect();
    let text = format!(
        "engine = \"null\"\nduration = 1\nfor_threads = [{}]\nfor_rwmix_read = [{}]\ncurve = [{}]\n",
        threads.join(","),
        pcts.join(","),
        curve.join(",")
    );
    let d = one_error(&text);
    assert_eq!((d.key.as_str(), pos(&d), d.expected.as_str()), ("for_threads", (3, 15), "at most 10000 steps"));
    assert!(d.message.contains("the loops make 41783296"), "{d}");
}

#[test]
fn rate_iops_limits() {
    let d = one_error(&format!("threads = 8\nrate_iops = 4\n{DIR}"));
    assert_eq!(d.key, "rate_iops");
    assert_eq!(d.expected, "at least 8 (1 IOPS per thread)");
    assert_eq!(one_error(&format!("rate_iops = 100000001\n{DIR}")).expected, "a whole number from 1 to 100000000");
    assert_eq!(plan(&format!("threads = 8\nrate_iops = 8\n{DIR}")).rate_iops, Some(8));
}

#[test]
fn direct_needs_512_byte_multiples_on_posix() {
    let d = one_error(&format!("direct = true\nbs = \"4k:1,1000:1\"\n{DIR}"));
    assert_eq!(d.key, "bs");
    assert_eq!(pos(&d), (2, 12));
    assert!(d.message.contains("O_DIRECT"), "{d}");
    assert!(plan(&format!("direct = true\nbs = \"4k:1,1000:1\"\nengine = \"null\"\n{DIR}")).direct);
    assert!(plan(&format!("bs = 1000\n{DIR}")).workloads[0].block_sizes[0].bytes == 1000);
}

#[test]
fn sync_needs_writes() {
    let d = one_error(&format!("rw = \"read\"\nsync = \"fsync\"\n{DIR}"));
    assert_eq!(d.key, "sync");
    assert_eq!(pos(&d), (2, 8));
    assert!(d.message.contains("rw = read (line 1)"), "{d}");
    for rw in ["write", "randwrite", "randrw"] {
        assert_eq!(plan(&format!("rw = \"{rw}\"\nsync = \"dsync\"\n{DIR}")).sync, SyncMode::Dsync);
    }
    // The default rw is randread.
    assert!(one_error(&format!("sync = \"fdatasync\"\n{DIR}")).message.contains("the default"));
}

#[test]
fn rwmix_read_only_with_randrw() {
    let d = one_error(&format!("rw = \"randread\"\nrwmix_read = 70\n{DIR}"));
    assert_eq!(d.key, "rwmix_read");
    assert_eq!(pos(&d), (2, 14));
    assert!(d.message.contains("rwmix_read applies only to rw = randrw"), "{d}");
    assert!(d.message.contains("rw is randread (line 1)"), "{d}");
}

#[test]
fn enum_values_suggest_close_names() {
    let d = one_error(&format!("rw = \"randred\"\n{DIR}"));
    assert_eq!(d.expected, "one of: read, write, randread, randwrite, randrw, rw");
    assert!(d.message.contains("did you mean `randread`?"));
    let d = one_error(&format!("engine = \"libaio\"\n{DIR}"));
    assert!(d.message.contains("use uring"), "{d}");
    assert_eq!(plan(&format!("engine = \"io_uring\"\n{DIR}")).engine, EngineKind::Uring);
    assert_eq!(one_error(&format!("sync = \"always\"\n{DIR}")).expected, "one of: none, fsync, fdatasync, dsync");
    assert_eq!(plan(&format!("rw = \"RandWrite\"\n{DIR}")).workloads[0].rw_name(), "randwrite");
}

#[test]
fn only_known_sections() {
    let d = one_error(&format!("{DIR}[job]\nthreads = 4\n"));
    assert_eq!(d.key, "job");
    assert_eq!(pos(&d), (2, 2));
    assert!(d.message.contains("the sections are [dataset], [[workload]], [[probe]], [[host]] and [[check]]"), "{d}");
    let d = one_error(&format!("{DIR}job.threads = 4\n"));
    assert_eq!(d.key, "job");
    assert!(d.message.contains("not a section"), "{d}");
    let d = one_error(&format!("{DIR}numjobs = 4\n"));
    assert!(d.message.contains("did you mean `threads`?"), "{d}");
    // Every unknown key is reported.
    assert_eq!(file_errors(&format!("{DIR}a = 1\nb = 2\nc = 3\n")).len(), 3);
}

#[test]
fn toml_syntax_error_has_a_position() {
    let d = one_error("threads = 4\nbs = \"4k\ndir = \"/x\"\n");
    assert_eq!(d.key, "");
    let (line, _) = pos(&d);
    assert_eq!(line, 2);
    assert!(d.to_string().starts_with("job.toml:2:"), "{d}");
    assert!(d.to_string().contains("error: invalid TOML"), "{d}");
    // Duplicate keys are a TOML error too.
    let d = one_error("threads = 4\nthreads = 5\ndir = \"/x\"\n");
    assert_eq!(pos(&d).0, 2, "{d}");
}

#[test]
fn flags_override_the_file() {
    let text = "rw = \"randread\"\nbs = \"8q\"\nthreads = 2\nduration = \"1m\"\ndir = \"/from/file\"\n";
    let flags = Flags::default()
        .with("bs", "64k")
        .with("threads", "16")
        .with("duration", "10s")
        .with("dir", "/from/flag")
        .with("rw", "randwrite")
        .with("sync", "fsync")
        .with("size", "2g")
        .with("files", "2")
        .with("rate-iops", "100")
        .with("direct", "")
        .with("force", "")
        .with("cleanup", "");
    // The file's bad bs is replaced by the flag, so it is not an error.
    let p = build_plan(Some(&src(text)), &flags).unwrap();
    assert_eq!(p.workloads[0].block_sizes, vec![BlockSize { bytes: 65536, weight: 1 }]);
    assert_eq!(p.workloads[0].threads, 16);
    assert_eq!(p.duration, Duration::from_secs(10));
    assert_eq!(p.dir, Path::new("/from/flag"));
    assert_eq!((rw_of(&p), p.workloads[0].read_pct), (Rw::RandWrite, 0));
    assert_eq!(p.sync, SyncMode::Fsync);
    assert_eq!((p.size_bytes, p.files, p.rate_iops), (2 << 30, 2, Some(100)));
    assert!(p.direct && p.force && p.cleanup);

    // Flags alone, and the mix: randrw from a flag, rwmix from the file.
    let flags = Flags::default().with("rw", "randrw");
    let p = build_plan(Some(&src(&format!("rwmix_read = 30\n{DIR}"))), &flags).unwrap();
    assert_eq!(p.workloads[0].read_pct, 30);
    let flags = Flags::default().with("engine", "null").with("rwmix-read", "90").with("rw", "randrw");
    assert_eq!(build_plan(None, &flags).unwrap().workloads[0].read_pct, 90);
}

#[test]
fn flag_errors_point_at_the_flag_and_come_with_file_errors() {
    let flags = Flags::default().with("threads", "-4").with("bs", "4q").with("iodepth", "4");
    let d = errors(&format!("thraeds = 1\n{DIR}"), &flags);
    assert_eq!(d.len(), 4, "{}", render_diagnostics(&d));
    assert_eq!(d[0].key, "thraeds", "file errors come first");
    assert_eq!(flag_of(&d[1]), "--bs");
    assert_eq!(flag_of(&d[2]), "--threads");
    assert_eq!(d[2].to_string(), "--threads -4: error: expected a whole number from 1 to 4096");
    assert_eq!(flag_of(&d[3]), "--iodepth");
    assert!(render_diagnostics(&d).ends_with("4 errors; nothing was run.\n"));

    // A flag overriding a good file value with a bad one: the error is the flag's.
    let flags = Flags::default().with("rate-iops", "1").with("threads", "4");
    let d = errors(&format!("rate_iops = 1000\n{DIR}"), &flags);
    assert_eq!(d.len(), 1);
    assert_eq!(flag_of(&d[0]), "--rate-iops");
    assert_eq!(d[0].value, "1");
    let flags = Flags::default().with("direct", "");
    let d = errors(&format!("bs = 1000\n{DIR}"), &flags);
    assert!(d[0].message.contains("--direct"), "{}", d[0]);
}

#[test]
fn a_size_not_given_stays_not_given_in_the_canonical_form_and_hashes_as_the_default() {
    let default = plan(DIR);
    assert!(default.size_default && default.size_bytes == 1 << 30);
    let text = to_toml(&default);
    assert!(text.contains("# size = \"1g\""), "written as a comment, never as a given size: {text}");
    let back = validate_file(&SourceFile { path: "canon.toml".into(), text: text.clone() }).unwrap();
    assert!(back.size_default, "read back as not given: {text}");
    let given = plan(&format!("size = \"1g\"\n{DIR}"));
    assert!(!given.size_default);
    assert_eq!(plan_hash(&default), plan_hash(&given), "the same load on a directory");
}

#[test]
fn canonical_toml_round_trips() {
    let plans = [
        plan(DIR),
        plan("engine = \"null\"\niodepth = 32\nduration = \"1h30m15s\"\n"),
        plan(
            "rw = \"randrw\"\nrwmix_read = 70\nbs = \"4k:60,32k:25,512k:10,4m:5\"\nsize = 4294967296\nfiles = 4\nthreads = 4\n\
             dir = \"/tmp/with \\\"quotes\\\" and é\"\ndirect = true\nsync = \"dsync\"\nrate_iops = 12345\nforce = true\ncleanup = true\n",
        ),
        plan(&format!("rw = \"write\"\nbs = 1536\nsize = 1000000\nsync = \"fsync\"\n{DIR}")),
        plan(&format!("bs = \"16k:5\"\nrw = \"read\"\n{DIR}")),
    ];
    for p in plans {
        let text = to_toml(&p);
        let back = validate_file(&SourceFile { path: "canon.toml".into(), text: text.clone() })
            .unwrap_or_else(|d| panic!("{text}\n{}", render_diagnostics(&d)));
        assert_eq!(back, p, "{text}");
        assert_eq!(to_toml(&back), text);
    }
    let text = to_toml(&plan(&format!("size = \"1g\"\n{DIR}")));
    let keys: Vec<&str> =
        text.lines().filter(|l| !l.starts_with('#')).map(|l| l.split(" = ").next().unwrap()).collect();
    assert_eq!(
        keys,
        [
            "engine",
            "iodepth",
            "dir",
            "size",
            "files",
            "direct",
            "sync",
            "cache",
            "duration",
            "force",
            "cleanup",
            "max_errors",
            "",
            "[[workload]]",
            "name",
            "operation",
            "rwmix_read",
            "bs",
            "fileio",
            "fileselect",
            "threads"
        ]
    );
    assert!(text.contains("bs = \"4k\""), "{text}");
    assert!(text.contains("size = \"1g\""), "{text}");
    assert!(text.contains("duration = \"1m\""), "{text}");
    assert!(text.contains("# rate_iops"), "{text}");
}

#[test]
fn plan_hash_is_stable_and_tracks_values() {
    let a = plan(&format!("bs = \"4k\"\nsize = \"1g\"\n{DIR}"));
    let b = plan(&format!("# same workload, written differently\nsize = 1073741824\nbs = 4096\nduration = 60\n{DIR}"));
    assert_eq!(plan_hash(&a), plan_hash(&b));
    let h = plan_hash(&a);
    assert_eq!(h.len(), 64);
    assert!(h.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_eq!(plan_hash(&a.clone()), h);
    let mut c = a.clone();
    c.workloads[0].threads = 2;
    assert_ne!(plan_hash(&c), h);
    let mut c = a.clone();
    c.workloads[0].block_sizes[0].bytes = 8192;
    assert_ne!(plan_hash(&c), h);
    let flags = Flags::default().with("threads", "2");
    let via_flag = build_plan(Some(&src(DIR)), &flags).unwrap();
    assert_eq!(
        plan_hash(&via_flag),
        plan_hash(&{
            let mut c = a.clone();
            c.workloads[0].threads = 2;
            c
        })
    );
}

#[test]
fn description_is_free_text() {
    assert_eq!(plan(&format!("description = \"hello\"\n{DIR}")), plan(DIR));
    assert_eq!(one_error(&format!("description = 5\n{DIR}")).key, "description");
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

#[test]
fn examples_validate_and_bad_toml_shows_three_errors() {
    let mut seen = 0;
    for entry in std::fs::read_dir(examples_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("toml") {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let file = SourceFile { path: PathBuf::from(&name), text };
        let got = validate_file(&file);
        if name == "bad.toml" {
            let d = got.expect_err("bad.toml must not validate");
            assert_eq!(d.len(), 3, "{}", render_diagnostics(&d));
            let keys: Vec<&str> = d.iter().map(|d| d.key.as_str()).collect();
            assert_eq!(keys, ["bs", "thraeds", "threads"]);
        } else {
            let p = got.unwrap_or_else(|d| panic!("{name}:\n{}", render_diagnostics(&d)));
            // A dataset names its own anchor (the seed's is its original NFS mount).
            if p.dataset.is_none() {
                assert_eq!(p.dir, Path::new("/tmp/ioscope-example"), "{name}");
            }
        }
    }
    assert!(seen >= 4, "examples/ should hold the four example files");
    let mixed = std::fs::read_to_string(examples_dir().join("mixed-70-30.toml")).unwrap();
    let p = validate_file(&src(&mixed)).unwrap();
    assert_eq!(
        (rw_of(&p), p.workloads[0].read_pct, p.files, p.workloads[0].threads, p.workloads[0].block_sizes.len()),
        (Rw::RandRw, 70, 4, 4, 4)
    );
    let fsync = std::fs::read_to_string(examples_dir().join("fsync-writes.toml")).unwrap();
    let p = validate_file(&src(&fsync)).unwrap();
    assert_eq!((rw_of(&p), p.sync, p.rate_iops), (Rw::RandWrite, SyncMode::Fdatasync, Some(500)));
}

/// The Rw of a plan's one workload.
fn rw_of(p: &Plan) -> Rw {
    match p.workloads[0].rw_name() {
        "read" => Rw::Read,
        "write" => Rw::Write,
        "randread" => Rw::RandRead,
        "randwrite" => Rw::RandWrite,
        _ => Rw::RandRw,
    }
}

#[test]
fn sections_steps_and_set_build_the_plan() {
    let text = "engine = \"null\"\nwarmup = \"1s\"\nduration = \"2s\"\nfor_threads = [1, 2]\nfor_bs = [\"4k\", \"64k\"]\ncurve = [50, 100]\n\n[[workload]]\nname = \"a\"\nrwmix_read = 70\n\n[[workload]]\nname = \"b\"\nskew = 25\n";
    let p = plan(text);
    assert_eq!(p.workloads.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    // threads × bs × (a max step + 2 curve steps).
    let steps = p.steps();
    assert_eq!(steps.len(), 2 * 2 * 3);
    assert_eq!(steps[1].label(), "threads=1 bs=4k rate=50%");
    assert_eq!(steps[1].rate, Rate::Curve { pct: 50, of_step: 0 });
    assert_eq!(p.total_duration(), Duration::from_secs(12 * 3));
    // --set reaches into every [[workload]].
    let flags = Flags { sets: vec!["workload.threads=3".into()], ..Flags::default() };
    let p = build_plan(Some(&src(text)), &flags).unwrap();
    assert!(p.workloads.iter().all(|w| w.threads == 3));
    // Unknown keys in a section are named with the section and a suggestion.
    let d = one_error("engine = \"null\"\n[[workload]]\nxfersize = \"8k\"\n");
    assert_eq!((d.key.as_str(), pos(&d)), ("workload.xfersize", (3, 1)));
    assert!(d.message.contains("did you mean `bs`?"), "{d}");
    // A staircase steps threads; with duration too, both are named.
    let d = one_error("engine = \"null\"\nduration = \"5s\"\nstaircase = \"1-8/5s\"\n");
    assert!(d.message.contains("duration is also set (line 2)"), "{d}");
    assert_eq!(plan("engine = \"null\"\nstaircase = \"2-8+2/5s\"\n").steps().len(), 4);
    // Metadata operations need a dataset.
    let d = one_error("engine = \"null\"\n[[workload]]\noperation = \"create\"\n");
    assert!(d.message.contains("[dataset]"), "{d}");
}

#[test]
fn the_seed_vdbench_file_converts_into_a_valid_workload() {
    let parm =
        SourceFile { path: "seed.parm".into(), text: include_str!("../../../examples/vdbench-seed.parm").into() };
    let toml = crate::vdbench::import(&parm).unwrap_or_else(|d| panic!("{}", render_diagnostics(&d)));
    let p = plan(&toml);
    assert_eq!(p.rate_iops, Some(10_000));
    assert_eq!(p.duration, Duration::from_secs(72_000));
    let d = p.dataset.as_ref().unwrap();
    assert_eq!((d.depth, d.width, d.files, d.format), (2, 8, 10_000, DatasetFormat::Never));
    assert_eq!(
        p.workloads.iter().map(|w| (w.threads, w.skew_pct, w.fileio)).collect::<Vec<_>>(),
        [(48, Some(50.0), FileIo::Sequential), (48, Some(50.0), FileIo::Random)]
    );
}

#[test]
fn an_nfs_dataset_lives_under_the_target_and_keeps_its_nfs_spelling() {
    let top = "engine = \"nfs\"\ntarget = \"nfs://server:2049/export/run?nconnect=2\"\n[dataset]\nfiles = 3\n";
    let anchor = |dir: &str| plan(&format!("{top}{dir}")).dataset.unwrap().dir;
    assert_eq!(anchor(""), Path::new("nfs://server:2049/export/run"), "the target's directory by default");
    assert_eq!(anchor("dir = \"a/tree\"\n"), Path::new("nfs://server:2049/export/run/a/tree"));
    assert_eq!(anchor("dir = \"nfs://server:2049/export/run/t\"\n"), Path::new("nfs://server:2049/export/run/t"));
    let p = plan(&format!("{top}dir = \"t\"\n"));
    let back = validate_file(&SourceFile { path: "canon.toml".into(), text: to_toml(&p) }).unwrap();
    assert_eq!(back, p, "the canonical form reads back as the same plan");
    for dir in ["/tmp/tree", "../up", "nfs://server:2049/export/other"] {
        let d = file_errors(&format!("{top}dir = \"{dir}\"\n"));
        assert_eq!((d.len(), pos(&d[0])), (1, (5, 7)), "{dir}: {}", render_diagnostics(&d));
        assert!(d[0].to_string().contains("dataset.dir"), "{}", d[0]);
        assert!(d[0].expected.contains("under the target"), "{}", d[0]);
    }
    let d = file_errors("engine = \"uring\"\ndir = \"/tmp\"\n[dataset]\nfiles = 3\n");
    assert!(d[0].expected.contains("posix, nfs, null, s3 or smb"), "{}", d[0]);
}

#[test]
fn a_set_for_a_section_the_file_does_not_have_is_refused_not_ignored() {
    let flags = Flags { sets: vec!["workload.threads=5000".into()], ..Flags::default() };
    let d = errors(DIR, &flags);
    assert_eq!(d.len(), 1, "{}", render_diagnostics(&d));
    assert_eq!((flag_of(&d[0]), d[0].key.as_str()), ("--set", "workload.threads"));
    assert_eq!(d[0].expected, "a [[workload]] section in the workload file for workload.* keys");
    assert!(d[0].message.contains("no [[workload]] section, so `workload.threads` would change nothing"), "{}", d[0]);
    assert!(d[0].message.contains("--set threads=5000"), "{}", d[0]);
    // Without a file at all, the same.
    let flags = Flags { sets: vec!["workload.name=x".into()], ..Flags::default().with("engine", "null") };
    let d = build_plan(None, &flags).unwrap_err();
    assert_eq!((d.len(), d[0].key.as_str()), (1, "workload.name"));
    // Probes likewise.
    let flags = Flags { sets: vec!["probe.timeout=5s".into()], ..Flags::default() };
    let d = errors(DIR, &flags);
    assert_eq!((d.len(), d[0].key.as_str()), (1, "probe.timeout"));
    assert!(d[0].message.contains("no [[probe]] section"), "{}", d[0]);
    // The top-level key does apply, and with the sections present the section keys do.
    let flags = Flags { sets: vec!["threads=7".into()], ..Flags::default() };
    assert_eq!(build_plan(Some(&src(DIR)), &flags).unwrap().workloads[0].threads, 7);
    let flags = Flags { sets: vec!["workload.threads=7".into()], ..Flags::default() };
    let text = format!("{DIR}[[workload]]\nname = \"a\"\n");
    assert_eq!(build_plan(Some(&src(&text)), &flags).unwrap().workloads[0].threads, 7);
}

#[test]
fn a_dataset_too_large_to_count_is_refused_without_wrapping() {
    let d = one_error("engine = \"null\"\n[dataset]\ndir = \"/tmp/t\"\ndepth = 8\nwidth = 10000\nfiles = 10000000\n");
    assert_eq!((d.key.as_str(), pos(&d)), ("dataset.files", (6, 9)));
    assert!(d.message.contains("10000^8 × 10000000 = more than 10^38 files"), "{d}");
    let d = one_error("engine = \"null\"\n[dataset]\ndir = \"/tmp/t\"\ndepth = 3\nwidth = 1000\nfiles = 2\n");
    assert!(d.message.contains("= 2000000000 files"), "{d}");
}

#[test]
fn a_bad_pattern_value_is_named_as_a_bad_value_at_its_place() {
    let head = "engine = \"null\"\nsize = \"7m\"\n[[workload]]\n";
    let d = one_error(&format!("{head}pattern = {{ text = \"HI\", map = \"nope\" }}\n"));
    assert_eq!((d.key.as_str(), d.value.as_str(), pos(&d)), ("workload.pattern.map", "\"nope\"", (4, 32)));
    let first = d.to_string().lines().next().unwrap().to_string();
    assert_eq!(first, "job.toml:4:32: error: workload.pattern.map \"nope\": expected \"offset\" or \"size\"");
    let d = one_error(&format!("{head}pattern = {{ text = \"HI\", column = \"1ns\" }}\n"));
    assert_eq!((d.key.as_str(), pos(&d)), ("workload.pattern.column", (4, 35)));
    assert!(d.to_string().starts_with("job.toml:4:35: error: workload.pattern.column \"1ns\": expected a duration"));
    let d = one_error(&format!("{head}pattern = {{ text = \"hi~\" }}\n"));
    assert_eq!((d.key.as_str(), pos(&d)), ("workload.pattern.text", (4, 20)));
    // A misspelt key of the table is an unknown key, with a suggestion.
    let d = one_error(&format!("{head}pattern = {{ text = \"HI\", mapp = \"size\" }}\n"));
    assert!(d.to_string().contains("unknown key \"workload.pattern.mapp\""), "{d}");
    assert!(d.message.contains("did you mean `map`?"), "{d}");
}

#[test]
fn a_huge_key_or_value_is_echoed_shortened_in_every_diagnostic() {
    // A 100 KB unknown key: once in the headline, once in the source line, once in carets.
    let key = "k".repeat(100_000);
    let out = render_diagnostics(&file_errors(&format!("{key} = 1\n{DIR}")));
    assert!(out.len() < 2_000, "{} bytes:\n{out}", out.len());
    assert!(out.contains(&format!("unknown key \"{}…\"", "k".repeat(60))), "{out}");
    // A 100 KB value on a long line: the line is shown around the problem, carets under it.
    let text = format!("for_bs = [{}\"8q\"]\nengine = \"null\"\n", "\"4k\", ".repeat(20_000));
    let d = one_error(&text);
    assert_eq!(pos(&d), (1, 120_011));
    let shown = d.to_string();
    assert!(shown.len() < 1_000, "{shown}");
    let lines: Vec<&str> = shown.lines().collect();
    let caret = lines[3].chars().position(|c| c == '^').unwrap();
    assert_eq!(lines[2].chars().skip(caret).take(4).collect::<String>(), "\"8q\"", "{shown}");
    // Flags: the value is cut too.
    let flags = Flags::default().with("bs", &"9".repeat(100_000));
    let out = render_diagnostics(&errors(DIR, &flags));
    assert!(out.len() < 1_000, "{out}");
    let flags = Flags { sets: vec![format!("{key}=1")], ..Flags::default() };
    let out = render_diagnostics(&errors(DIR, &flags));
    assert!(out.len() < 1_000, "{out}");
}

#[test]
fn a_hundred_thousand_bad_values_give_a_screenful_and_the_count() {
    let zeros = vec!["0"; 100_000].join(",");
    let d = file_errors(&format!("engine = \"null\"\nfor_threads = [{zeros}]\n"));
    assert_eq!(d.len(), 51);
    assert!(matches!(d[50].origin, Origin::Omitted { count: 99_950 }));
    let out = render_diagnostics(&d);
    assert!(
        out.ends_with(
            "… and 99950 more errors, not shown (the first 50 are above)\n\n100000 errors; nothing was run.\n"
        ),
        "{}",
        &out[out.len() - 200..]
    );
}

#[test]
fn odd_bytes_in_strings_are_refused_or_shown_harmlessly() {
    // A NUL cannot be in a path, a name or a command: refused where it is written.
    let d = one_error("dir = \"/tmp/a\\u0000b\"\n");
    assert_eq!((d.key.as_str(), pos(&d)), ("dir", (1, 7)));
    assert!(d.message.contains("NUL"), "{d}");
    let d = one_error("engine = \"null\"\n[[probe]]\ncommand = \"true\\u0000\"\nat = \"1s\"\n");
    assert_eq!(d.key, "probe.command");
    // Paths longer than the system takes are refused before anything is prepared.
    for dir in [format!("/tmp/{}", "a".repeat(256)), format!("/tmp/{}", "a/".repeat(2100))] {
        let d = one_error(&format!("dir = \"{dir}\"\n"));
        assert_eq!(d.key, "dir");
        assert!(d.message.contains("at most 4095 bytes and each name in it at most 255"), "{d}");
    }
    // An escape sequence in the file is not sent to the terminal.
    let out = render_diagnostics(&file_errors("engine = \"null\"\n\u{1b}[31mred = 1\n"));
    assert!(!out.contains('\u{1b}'), "{out:?}");
    assert!(out.contains("\u{FFFD}[31mred"), "{out}");
}

#[test]
fn a_workload_file_is_read_only_if_it_is_utf8_text_of_sane_size() {
    let dir = std::env::temp_dir().join(format!("ioscope-source-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("latin1.toml");
    std::fs::write(&bad, b"engine = \"null\"\ndescription = \"caf\xe9\"\n").unwrap();
    let e = SourceFile::read(&bad).unwrap_err().to_string();
    assert!(
        e.ends_with(
            "latin1.toml:2:19: error: byte 0xe9 is not UTF-8 text: expected a workload file (TOML, which is UTF-8)"
        ),
        "{e}"
    );
    let big = dir.join("big.toml");
    std::fs::write(&big, vec![b'#'; MAX_SOURCE_BYTES as usize + 1]).unwrap();
    assert!(SourceFile::read(&big).unwrap_err().to_string().contains("larger than 4 MiB"));
    assert!(SourceFile::read(&dir).unwrap_err().to_string().contains("not a regular file (a directory)"));
    let e = SourceFile::read(&dir.join("n".repeat(100_000))).unwrap_err().to_string();
    assert!(e.len() < 400 && e.contains("…: error: cannot read the file"), "{e}");
    let good = dir.join("good.toml");
    std::fs::write(&good, "engine = \"null\"\n").unwrap();
    assert_eq!(SourceFile::read(&good).unwrap().text, "engine = \"null\"\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_probe_start_after_the_end_of_the_run_is_refused_not_skipped() {
    let text = "engine = \"null\"\nduration = \"5s\"\n[[probe]]\ncommand = \"true\"\nat = [\"1s\", \"1h\"]\n";
    let d = one_error(text);
    assert_eq!((d.key.as_str(), pos(&d)), ("probe.at", (5, 6)));
    assert!(d.message.contains("1h is not before the end of the run, which lasts 5s"), "{d}");
    // Warm-ups and steps count: 2 steps × (2s + 5s) = 14s.
    assert_eq!(
        plan("engine = \"null\"\nwarmup = 2\nduration = 5\nfor_threads = [1, 2]\n[[probe]]\ncommand = \"true\"\nat = \"13s\"\n")
            .probes[0]
            .at,
        [Duration::from_secs(13)]
    );
}

#[test]
fn max_errors_takes_a_count_a_share_or_off_and_defaults_to_one_percent() {
    use crate::MaxErrors;
    assert_eq!(plan(DIR).max_errors, MaxErrors::SharePpm(10_000));
    for (text, want) in [
        ("max_errors = 1000", MaxErrors::Count(1000)),
        ("max_errors = 0", MaxErrors::Count(0)),
        ("max_errors = \"0.05%\"", MaxErrors::SharePpm(500)),
        ("max_errors = \"100%\"", MaxErrors::SharePpm(1_000_000)),
        ("max_errors = \"off\"", MaxErrors::Off),
    ] {
        let p = plan(&format!("{text}\n{DIR}"));
        assert_eq!(p.max_errors, want, "{text}");
        // The canonical form reads back the same.
        let back = validate_file(&SourceFile { path: "c.toml".into(), text: to_toml(&p) }).unwrap();
        assert_eq!(back.max_errors, want, "{}", to_toml(&p));
    }
    let flags = Flags::default().with("max-errors", "2.5%");
    assert_eq!(build_plan(Some(&src(DIR)), &flags).unwrap().max_errors, MaxErrors::SharePpm(25_000));
    for bad in [
        "max_errors = -1",
        "max_errors = \"0%\"",
        "max_errors = \"101%\"",
        "max_errors = \"lots\"",
        "max_errors = true",
    ] {
        let d = build_plan(Some(&src(&format!("{bad}\n{DIR}"))), &Flags::default()).unwrap_err();
        let text = render_diagnostics(&d);
        assert!(text.contains("max_errors") && text.contains("a share of the I/Os"), "{bad}: {text}");
    }
    let d = build_plan(Some(&src(DIR)), &Flags::default().with("max-errors", "1e9%")).unwrap_err();
    assert!(render_diagnostics(&d).contains("--max-errors"), "{}", render_diagnostics(&d));
}

#[test]
fn an_empty_list_of_probe_times_is_refused_with_a_reason() {
    let d = one_error("engine = \"null\"\n[[probe]]\ncommand = \"true\"\nat = []\n");
    assert_eq!((d.key.as_str(), pos(&d)), ("probe.at", (4, 6)));
    assert!(d.message.contains("the list is empty"), "{d}");
    let flags = Flags { sets: vec!["probe.at=[]".into()], ..Flags::default() };
    let d = errors("engine = \"null\"\n[[probe]]\ncommand = \"true\"\nat = \"1s\"\n", &flags);
    assert_eq!((d.len(), flag_of(&d[0])), (1, "--set"));
}

#[test]
fn io_buffers_larger_than_memory_can_hold_are_refused_before_the_run() {
    // 1024 × 256 MiB per thread would fail to allocate in a worker after preparation.
    let d = one_error("engine = \"null\"\niodepth = 1024\nbs = \"256m\"\nsize = \"1g\"\n");
    assert_eq!((d.key.as_str(), pos(&d)), ("iodepth", (2, 11)));
    assert_eq!(d.expected, "iodepth × largest bs at most 1 GiB per thread");
    assert!(d.message.contains("1024 × 256 MiB"), "{d}");
    // Many threads at iodepth 1: the total.
    let d = one_error("engine = \"null\"\nthreads = 4096\nbs = \"256m\"\nsize = \"1g\"\n");
    assert_eq!((d.key.as_str(), pos(&d)), ("bs", (3, 6)));
    assert!(d.message.contains("4096 thread(s) × iodepth 1 × largest bs 256 MiB = 1 TiB"), "{d}");
    // What fits is accepted.
    assert_eq!(plan("engine = \"null\"\niodepth = 256\nbs = \"4m\"\nsize = \"1g\"\n").iodepth, 256);
}

// ---- The engine table: every capability an engine lacks is enforced ----

/// A workload file for `engine` that is valid but for what `need` adds: `top` holds
/// top-level keys, `sections` whole sections.
fn needing(engine: &ioscope_engine_table::EngineSpec, top: &str, sections: &str) -> String {
    let place = match engine.caps.target {
        Some(rule) => format!("target = \"{}\"\n", rule.example),
        None => "dir = \"/tmp/x\"\n".to_string(),
    };
    format!("engine = \"{}\"\n{place}{top}{sections}", engine.name)
}

#[test]
fn every_capability_an_engine_lacks_is_refused_at_its_place_naming_the_engine_and_the_key() {
    use ioscope_engine_table::{Capability, ENGINES};
    let some_target =
        ENGINES.iter().find_map(|e| e.caps.target).map_or("nfs://server/export".to_string(), |r| r.example.into());
    let mut checked = 0;
    for engine in ENGINES {
        assert!(validate_file(&src(&needing(engine, "", ""))).is_ok(), "{}: the base workload is valid", engine.name);
        for cap in Capability::ALL.into_iter().filter(|c| !engine.caps.has(*c)) {
            // Exhaustive: a new capability needs a workload that asks for it here.
            let text = match cap {
                Capability::Queued => needing(engine, "iodepth = 2\n", ""),
                Capability::DirectIo => needing(engine, "direct = true\n", ""),
                Capability::FileOps => needing(engine, "", "[dataset]\nfiles = 2\n"),
                Capability::Patterns => {
                    needing(engine, "size = \"7m\"\n", "[[workload]]\npattern = { text = \"HI\" }\n")
                }
                Capability::Sqpoll => needing(engine, "sqpoll = true\n", ""),
                Capability::Target => needing(engine, &format!("target = \"{some_target}\"\n"), ""),
            };
            let d = file_errors(&text);
            let named = d.iter().find(|d| {
                let shown = d.to_string();
                matches!(d.origin, Origin::File { .. }) && shown.contains(engine.name) && shown.contains(cap.key())
            });
            assert!(
                named.is_some(),
                "engine {} lacks {cap:?}: expected a file:line:col error naming the engine and `{}`, got:\n{}",
                engine.name,
                cap.key(),
                render_diagnostics(&d)
            );
            checked += 1;
        }
    }
    assert!(checked >= 6, "the current engines lack at least 6 capabilities in all ({checked})");
}

#[test]
fn every_engine_in_the_table_is_accepted_by_name_and_alias() {
    for (name, kind) in ioscope_engine_table::engine_names() {
        let spec = kind.spec();
        let text = needing(spec, "", "").replacen(&format!("\"{}\"", spec.name), &format!("\"{name}\""), 1);
        assert_eq!(plan(&text).engine, kind, "engine = \"{name}\"");
    }
}

#[test]
fn a_plans_target_is_parsed_once_and_kept_as_its_url_in_json() {
    let url = "nfs://server:2049/export/run?nconnect=2";
    let p = plan(&format!("engine = \"nfs\"\ntarget = \"{url}\"\n"));
    let t = p.target.as_ref().expect("engine nfs has its target in the plan");
    assert_eq!((t.url.as_str(), t.root.as_str()), (url, "nfs://server:2049/export/run"));
    assert!(matches!(&t.kind, TargetKind::Nfs(n) if n.nconnect == 2 && n.path == "/export/run"));
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["target"], url, "the results file keeps the target as written");
    let back: Plan = serde_json::from_value(json).unwrap();
    assert_eq!(back, p);
}

#[test]
fn a_fio_job_file_given_as_a_workload_is_named_as_one_with_the_import_command() {
    let fio = "; random reads\n[global]\nioengine=libaio\ndirect=1\n\n[job1]\nrw=randread\nbs=4k\n";
    let d = one_error(fio);
    assert!(d.to_string().contains("this looks like a fio job file"), "{d}");
    assert!(d.to_string().contains("ioscope import fio job.toml -o workload.toml"), "{d}");
    // Without [global], fio's own options set without quotes are enough.
    let d = one_error("[seq]\nrw=read\nsize=1g\n");
    assert!(d.to_string().contains("ioscope import fio"), "{d}");
    // A TOML mistake in a workload file gets no such note.
    let d = one_error("threads = 4\nbs = \"4k\ndir = \"/x\"\n");
    assert!(!d.to_string().contains("fio"), "{d}");
    let d = one_error("rw = randread\nthreads = 2\n");
    assert!(!d.to_string().contains("fio"), "one unquoted value is a TOML slip: {d}");
}

#[test]
fn check_tables_are_parsed_and_a_malformed_one_points_at_its_column() {
    let p =
        plan(&format!("{DIR}[[check]]\nexpr = \"read.latency.p99 < 2ms\"\n[[check]]\nexpr = \"total.errors == 0\"\n"));
    assert_eq!(p.checks, ["read.latency.p99 < 2ms", "total.errors == 0"]);
    // Checks are not the load: the workload's hash does not change with them.
    assert_eq!(crate::plan_hash(&p), crate::plan_hash(&plan(DIR)));
    let d = one_error(&format!("{DIR}[[check]]\nexpr = \"read.latency.p99 < 2\"\n"));
    assert_eq!(d.key, "check.expr");
    // Line 3; the value's quote is column 8, so the check's column 20 (the 2) is column 28.
    assert_eq!(pos(&d), (3, 28), "{d}");
    assert!(d.to_string().contains("time unit"), "{d}");
    let d = file_errors(&format!("{DIR}[[check]]\n"));
    assert!(d.iter().any(|d| d.to_string().contains("`check.expr` is missing")), "{}", render_diagnostics(&d));
}

#[test]
fn warmup_auto_and_until_steady_reach_the_plan_and_its_toml() {
    let p = plan("engine = \"null\"\nwarmup = \"auto\"\nuntil_steady = \"8s\"\nduration = \"60s\"\n");
    assert!(p.warmup_auto);
    assert!(p.warmup.is_zero());
    assert_eq!((p.until_steady_s, p.steady_window_s()), (Some(8), Some(8)));
    let again = plan(&crate::to_toml(&p));
    assert_eq!((again.warmup_auto, again.until_steady_s), (true, Some(8)));
}

#[test]
fn an_end_by_amount_and_a_precondition_reach_the_plan_and_its_toml() {
    let p = plan(&format!("{DIR}size = \"1g\"\nio_size = \"8g\"\nnumber_ios = 1000\npasses = 3\nprecondition = \"2X Sequential  write\"\n"));
    assert_eq!(p.amount, crate::Amount { io_size_bytes: Some(8 << 30), number_ios: Some(1000), passes: Some(3) });
    // The fewer bytes of io_size and passes × the working set.
    assert_eq!(p.amount_bytes(), Some(3 << 30));
    assert_eq!(p.precondition, Some(crate::Precondition { passes: 2, bs_bytes: 128 * 1024 }));
    // Without a duration, a step that ends by amount may last up to 24h.
    assert_eq!(p.duration, std::time::Duration::from_secs(24 * 3600));
    let again = plan(&crate::to_toml(&p));
    assert_eq!((again.amount, again.precondition, again.duration), (p.amount, p.precondition, p.duration));
    let timed = plan(&format!("{DIR}passes = 1\nduration = \"30s\"\n"));
    assert_eq!(timed.duration, std::time::Duration::from_secs(30));
}

#[test]
fn for_iodepth_makes_a_step_per_depth_after_the_thread_steps_and_is_refused_where_it_cannot_hold() {
    let p = plan(&format!("{DIR}engine = \"uring\"\nfor_threads = [1, 2]\nfor_iodepth = [1, 32]\n"));
    let labels: Vec<String> = p.steps().iter().map(|s| s.label()).collect();
    assert_eq!(labels, ["threads=1 iodepth=1", "threads=1 iodepth=32", "threads=2 iodepth=1", "threads=2 iodepth=32"]);
    assert_eq!((p.step_count(), p.max_iodepth(), p.most_iodepth_of(&p.workloads[0])), (4, 32, 32));
    let again = plan(&crate::to_toml(&p));
    assert_eq!(again.steps, p.steps);
    let d = one_error(&format!("{DIR}for_iodepth = [1, 4]\n"));
    assert!(d.key == "for_iodepth" && d.to_string().contains("at most 1 with engine posix"), "{d}");
    let d = one_error(&format!("{DIR}engine = \"uring\"\niodepth = 4\nfor_iodepth = [1, 4]\n"));
    assert!(d.to_string().contains("either iodepth or for_iodepth"), "{d}");
    let d = one_error(&format!("{DIR}engine = \"uring\"\nfor_iodepth = [1, 2000]\n"));
    assert_eq!(d.key, "for_iodepth", "{d}");
}

#[test]
fn an_end_by_amount_or_a_precondition_is_refused_where_it_cannot_hold() {
    let d = one_error(&format!("{DIR}for_threads = [1, 2]\nio_size = \"1g\"\n"));
    assert_eq!((d.key.as_str(), pos(&d).0), ("io_size", 3), "{d}");
    assert!(d.message.contains("2 steps"), "{d}");
    let d = one_error(&format!("{DIR}precondition = \"2x random write\"\n"));
    assert!(d.to_string().contains("Nx sequential write"), "{d}");
    let d = one_error(&format!("{DIR}precondition = \"17x sequential write\"\n"));
    assert_eq!(d.key, "precondition", "{d}");
    let d = one_error(&format!("{DIR}rw = \"randrw\"\nverify = \"report\"\nprecondition = \"1x sequential write\"\n"));
    assert!(d.to_string().contains("without verify"), "{d}");
    let d = one_error("engine = \"null\"\nprecondition = \"1x sequential write\"\n");
    assert!(d.to_string().contains("posix or uring"), "{d}");
    let d = one_error(&format!("{DIR}number_ios = 0\n"));
    assert_eq!(d.key, "number_ios", "{d}");
}

#[test]
fn until_steady_on_a_run_of_several_steps_is_refused_at_its_line() {
    let d = one_error("engine = \"null\"\nfor_threads = [1, 2]\nuntil_steady = \"10s\"\n");
    assert_eq!((d.key.as_str(), pos(&d).0), ("until_steady", 3), "{d}");
    assert!(d.message.contains("2 steps"), "{d}");
}

#[test]
fn a_steady_window_below_two_seconds_is_refused() {
    let d = one_error("engine = \"null\"\nsteady_window = \"1s\"\n");
    assert_eq!(d.key, "steady_window", "{d}");
}

#[test]
fn a_bad_warmup_names_auto_among_the_expected_values() {
    let d = one_error("engine = \"null\"\nwarmup = \"soon\"\n");
    assert_eq!(d.key, "warmup");
    assert!(d.expected.starts_with("auto, or 0 or a whole number of seconds"), "{d}");
}

#[test]
fn repeats_are_read_with_their_limits_and_stay_out_of_the_workload_hash() {
    let p = plan(&format!("repeat = 5\nuntil_ci = \"90:2.5%\"\n{DIR}"));
    assert_eq!(p.repeat, Some(5));
    assert_eq!(p.until_ci, Some(UntilCi { confidence_pct: 90.0, half_width_pct: 2.5 }));
    assert_eq!(p.max_repeats(), 5);
    assert_eq!(plan_hash(&p), plan_hash(&plan(DIR)), "repeating a load does not make it another workload");
    let back = validate_file(&SourceFile { path: "c.toml".into(), text: to_toml(&p) }).unwrap();
    assert_eq!((back.repeat, back.until_ci), (p.repeat, p.until_ci));
    // --until-ci alone: at most DEFAULT_MAX_REPEATS_UNTIL_CI.
    let flags = Flags::default().with("until-ci", "95:5%");
    assert_eq!(build_plan(Some(&src(DIR)), &flags).unwrap().max_repeats(), DEFAULT_MAX_REPEATS_UNTIL_CI);

    // A malformed interval: its line and column, and the expected form.
    let d = one_error(&format!("{DIR}until_ci = \"95%\"\n"));
    assert_eq!((d.key.as_str(), pos(&d)), ("until_ci", (2, 12)));
    assert!(d.expected.contains("CONFIDENCE:HALF_WIDTH%"), "{d}");
    for bad in ["95:0%", "95:5", "100:5%", "x:5%", "95:101%"] {
        let d = errors(DIR, &Flags::default().with("until-ci", bad));
        assert_eq!(flag_of(&d[0]), "--until-ci", "{bad}");
    }
    // The fewest repeats until_ci measures is 3, so a maximum below it is refused.
    let d = one_error(&format!("{DIR}repeat = 2\nuntil_ci = \"95:5%\"\n"));
    assert_eq!((d.key.as_str(), pos(&d)), ("repeat", (2, 10)));
    assert!(d.expected.contains("at least 3 with until_ci"), "{d}");
    let d = errors(DIR, &Flags::default().with("repeat", "0"));
    assert_eq!(flag_of(&d[0]), "--repeat");
    // Many hosts: refused, naming the flag.
    let flags = Flags::default().with("repeat", "3");
    let d = errors("engine = \"null\"\nhosts = [\"client1\"]\n", &flags);
    let text = render_diagnostics(&d);
    assert!(text.contains("--repeat") && text.contains("no repeats in a run with hosts"), "{text}");
    // Repeats multiply the run's length, which stays under 30 days.
    let d = one_error(&format!("{DIR}duration = \"10d\"\nrepeat = 4\n"));
    assert_eq!(d.key, "repeat");
}

#[test]
fn flags_override_a_files_duration_or_staircase_as_they_override_every_key() {
    let with = |text: &str, flag: &str, value: &str| build_plan(Some(&src(text)), &Flags::default().with(flag, value));
    // A --staircase replaces the file's duration: each step lasts the staircase's /EVERY.
    let p = with("engine = \"null\"\nduration = \"60s\"\n", "staircase", "1-4/5s")
        .expect("a staircase flag over a duration");
    assert_eq!((p.steps().len(), p.total_duration()), (4, Duration::from_secs(20)));
    // A --duration sets each step of the file's staircase.
    let p = with("engine = \"null\"\nstaircase = \"1-4/5s\"\n", "duration", "10s")
        .expect("a duration flag over a staircase");
    assert_eq!((p.steps().len(), p.total_duration()), (4, Duration::from_secs(40)));
    // Both in the file, or both as flags, still say which to keep.
    let both = Flags::default().with("staircase", "1-4/5s").with("duration", "10s");
    let d = build_plan(Some(&src("engine = \"null\"\n")), &both).unwrap_err();
    assert!(d.iter().any(|d| d.key == "staircase"), "{d:?}");
}
