//! `ioscope import fio` on the corpus in tests/fio-jobs: job files written for these tests,
//! fio's own documentation examples (fio-docs/, credited in each file) and job files out of
//! ioscope's scope (out-of-scope/), which must be refused with a message naming the option.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const CORPUS: &str = "tests/fio-jobs";

fn ioscope() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ioscope"));
    // What the corpus's ${VAR}s expand to.
    c.env("IOSCOPE_FIO_TEST_DIR", "/mnt/test").env("SIZE", "64m").env("NUMJOBS", "4");
    c
}

fn import(file: &str, extra: &[&str]) -> Output {
    ioscope().args(["import", "fio", &format!("{CORPUS}/{file}")]).args(extra).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Converts `file` and checks that the result validates; returns the TOML and what
/// `validate` says of it ("ok (uring a + b, 6 threads, 2 steps, 1m)").
fn convert(file: &str, extra: &[&str]) -> (String, String) {
    let out = import(file, extra);
    assert_eq!(out.status.code(), Some(0), "{file} {extra:?}: {}", stderr(&out));
    let toml = String::from_utf8(out.stdout).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("w.toml");
    std::fs::write(&path, &toml).unwrap();
    let v = ioscope().arg("validate").arg(&path).output().unwrap();
    assert_eq!(v.status.code(), Some(0), "{file} {extra:?} does not validate: {}\n{toml}", stderr(&v));
    (toml, String::from_utf8_lossy(&v.stdout).into_owned() + &stderr(&v))
}

/// The values of `key` in the TOML, in order (trailing comments dropped).
fn values(toml: &str, key: &str) -> Vec<String> {
    let prefix = format!("{key} = ");
    toml.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.split("  #").next().unwrap_or(v).trim().to_string())
        .collect()
}

fn value(toml: &str, key: &str) -> String {
    let v = values(toml, key);
    assert_eq!(v.len(), 1, "one {key} expected in:\n{toml}");
    v[0].clone()
}

fn fio_files(dir: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(Path::new(CORPUS).join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "fio"))
        // Include fragments are not job files of their own.
        .filter(|p| !p.to_str().unwrap().ends_with("-include.fio"))
        .collect();
    files.sort();
    files
}

/// Job files whose stonewall groups differ in more than an ioscope step can, with their
/// number of groups: each group is imported on its own.
const BY_GROUP: [(&str, usize); 3] =
    [("fio-docs/ssd-test.fio", 4), ("fio-docs/tiobench-example.fio", 4), ("fio-docs/nfs.fio", 2)];

#[test]
fn every_fio_corpus_file_converts_to_a_workload_that_validates() {
    let mut converted = 0;
    for dir in ["", "fio-docs"] {
        for path in fio_files(dir) {
            let name = path.strip_prefix(CORPUS).unwrap().to_str().unwrap().trim_start_matches('/').to_string();
            match BY_GROUP.iter().find(|(f, _)| *f == name) {
                Some((_, groups)) => {
                    for g in 1..=*groups {
                        convert(&name, &["--group", &g.to_string()]);
                    }
                }
                None => _ = convert(&name, &[]),
            }
            converted += 1;
        }
    }
    assert!(converted >= 20, "only {converted} corpus files");
}

#[test]
fn fio_corpus_conversions_keep_threads_block_sizes_mixes_and_steps() {
    // numjobs=4 gives 4 threads; rwmixread=70 a 70% read share; io_uring queues 8 deep.
    let (t, _) = convert("randrw-70-30-numjobs.fio", &[]);
    assert_eq!((value(&t, "threads"), value(&t, "rwmix_read")), ("4".into(), "70".into()));
    assert_eq!(
        (value(&t, "engine"), value(&t, "iodepth"), value(&t, "direct")),
        ("\"uring\"".into(), "8".into(), "true".into())
    );
    // Every numjobs clone has its own 512m file in fio: 4 files, 2g.
    assert_eq!((value(&t, "files"), value(&t, "size")), ("4".into(), "\"2g\"".into()));

    // stonewall: two phases, write then read, as two steps.
    let (t, v) = convert("stonewall-write-then-read.fio", &[]);
    assert_eq!(value(&t, "for_rwmix_read"), "[0, 100]");
    assert!(v.contains("2 steps"), "{v}");
    let (t, v) = convert("stonewall-thread-scaling.fio", &[]);
    assert_eq!(value(&t, "for_threads"), "[1, 2, 4, 8]");
    assert!(v.contains("4 steps"), "{v}");

    // bssplit weights are kept; a size without a share takes the rest.
    let (t, _) = convert("bssplit-mixed.fio", &[]);
    assert_eq!(value(&t, "bs"), "\"4k:50,16k:25,64k:15,256k:10\"");
    assert_eq!(value(&t, "rwmix_read"), "80");
    let (t, _) = convert("fio-docs/iometer-file-access-server.fio", &[]);
    assert_eq!(value(&t, "bs"), "\"512:10,1k:5,2k:5,4k:60,8k:2,16k:4,32k:4,64k:10\"");
    let (t, _) = convert("bsrange-reads.fio", &[]);
    assert_eq!(value(&t, "bs"), "\"4k:1,8k:1,12k:1,16k:1\"");

    // Per-job rates add up (rate_iops × numjobs, and a byte rate over bs) and are shared by skew.
    let (t, _) = convert("rate-limited-open-loop.fio", &[]);
    assert_eq!(value(&t, "rate_iops"), "4024");
    assert_eq!(values(&t, "skew"), ["74.5526", "25.4474"]);

    // libaio runs on io_uring at the same depth; runtime and ramp_time are the step's times.
    let (t, _) = convert("seq-bandwidth-libaio-qd32.fio", &[]);
    assert_eq!(
        (value(&t, "iodepth"), value(&t, "bs"), value(&t, "rw")),
        ("32".into(), "\"1m\"".into(), "\"read\"".into())
    );
    assert_eq!((value(&t, "dir"), value(&t, "duration")), ("\"/mnt/test\"".into(), "\"2m\"".into()));
    let (t, _) = convert("time-based-ramp.fio", &[]);
    assert_eq!((value(&t, "duration"), value(&t, "warmup")), ("\"5m\"".into(), "\"30s\"".into()));
    assert_eq!((value(&t, "files"), value(&t, "size")), ("4".into(), "\"1g\"".into()));

    // fdatasync=1 syncs after every write; one named file is shared by its four readers.
    let (t, _) = convert("fsync-database-writes.fio", &[]);
    assert_eq!(value(&t, "sync"), "\"fdatasync\"");
    let (t, _) = convert("filename-with-size.fio", &[]);
    assert_eq!((value(&t, "size"), value(&t, "threads")), ("\"4g\"".into(), "4".into()));
    assert!(values(&t, "files").is_empty(), "{t}");
    let (t, _) = convert("directory-nrfiles.fio", &[]);
    assert_eq!((value(&t, "files"), value(&t, "size")), ("128".into(), "\"128m\"".into()));

    // Jobs without stonewall run together, each with its section's settings over [global]'s.
    let (t, v) = convert("global-heavy-inherit.fio", &[]);
    assert_eq!(values(&t, "name"), ["\"index-lookups\"", "\"log-appends\"", "\"cache-refresh\""]);
    assert_eq!(values(&t, "bs"), ["\"4k\"", "\"64k\"", "\"4k\""]);
    assert_eq!(values(&t, "threads"), ["1", "1", "2"]);
    assert!(v.contains("4 threads"), "{v}");
    // Includes and ${VAR}s are read.
    let (t, _) = convert("include-and-env.fio", &[]);
    assert_eq!((value(&t, "dir"), value(&t, "sync")), ("\"/mnt/test\"".into(), "\"fsync\"".into()));
    // rw=rw is a sequential mix; numjobs clones share the one named file.
    let (t, _) = convert("fio-docs/fio-seq-RW.fio", &[]);
    assert_eq!(
        (value(&t, "fileio"), value(&t, "rwmix_read"), value(&t, "threads")),
        ("\"sequential\"".into(), "60".into(), "4".into())
    );
    assert_eq!((value(&t, "size"), value(&t, "bs")), ("\"10g\"".into(), "\"256k\"".into()));
    let (t, _) = convert("fio-docs/howto-env-random-writers.fio", &[]);
    assert_eq!((value(&t, "threads"), value(&t, "size")), ("4".into(), "\"256m\"".into()));
}

#[test]
fn converted_fio_files_say_where_each_part_came_from() {
    let (t, _) = convert("global-heavy-inherit.fio", &[]);
    assert!(t.contains("# [log-appends] at tests/fio-jobs/global-heavy-inherit.fio:20"), "{t}");
    assert!(t.contains("bs = \"64k\"  # bs=64k, tests/fio-jobs/global-heavy-inherit.fio:22"), "{t}");
    assert!(t.contains("iodepth = 8  # iodepth=8, tests/fio-jobs/global-heavy-inherit.fio:6"), "{t}");
}

#[test]
fn fio_options_that_do_not_change_the_measurement_are_warned_about_and_converted() {
    let out = import("global-heavy-inherit.fio", &[]);
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(err.contains("global-heavy-inherit.fio:13: warning: group_reporting:"), "{err}");
    assert!(err.contains("global-heavy-inherit.fio:5: warning: ioengine=libaio: ioscope runs it on io_uring"), "{err}");
    // The warnings are in the file too, as comments.
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("# tests/fio-jobs/global-heavy-inherit.fio:13: warning: group_reporting"));
}

#[test]
fn a_fio_job_on_a_block_device_becomes_a_run_on_that_device_that_needs_force() {
    let out = import("blockdev-randread.fio", &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(t.contains("dir = \"/dev/nvme0n1\"  # filename=/dev/nvme0n1"), "{t}");
    assert!(t.contains("size = \"1g\""), "{t}");
    assert!(!t.lines().any(|l| l.starts_with("force")), "never forced on the user's behalf: {t}");
    assert!(
        err.contains("blockdev-randread.fio:5: warning: filename=/dev/nvme0n1") && err.contains("--force"),
        "{err}"
    );
}

#[test]
fn out_of_scope_fio_files_are_refused_with_exit_2_naming_the_option() {
    let cases = [
        ("rbd.fio", "rbd.fio:3: error: ioengine=rbd: ioscope has no rbd engine"),
        ("netio.fio", "netio.fio:3: error: ioengine=net: ioscope has no net engine"),
        ("sg-write.fio", "sg-write.fio:4: error: ioengine=sg"),
        ("startdelay-clients.fio", "startdelay-clients.fio:13: error: startdelay=4:"),
        ("verify-writes.fio", "error: verify_fatal=1: ioscope's verification (verify=...) has no such option"),
    ];
    let tmp = tempfile::tempdir().unwrap();
    for (file, says) in cases {
        let out_file = tmp.path().join(format!("{file}.toml"));
        let out = import(&format!("out-of-scope/{file}"), &["-o", out_file.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{file}: {err}");
        assert!(err.contains(says), "{file}: expected {says:?} in:\n{err}");
        assert!(err.contains("nothing was written"), "{err}");
        assert!(!out_file.exists(), "{file}: a refused import wrote its output");
        assert!(out.stdout.is_empty());
    }
    assert_eq!(fio_files("out-of-scope").len(), 5, "every out-of-scope file has a case above");
}

#[test]
fn fio_access_patterns_convert_to_seq_skip_random_distribution_percentage_random_and_arrivals() {
    let (t, _) = convert("fio-docs/backwards-read.fio", &[]);
    assert_eq!((value(&t, "rw"), value(&t, "seq_skip")), ("\"read\"".into(), "\"-8k\"".into()));
    let (t, _) = convert("fio-docs/zipf.fio", &[]);
    assert_eq!((value(&t, "rw"), value(&t, "random_distribution")), ("\"randread\"".into(), "\"zipf:0.5\"".into()));
    let (t, _) = convert("fio-docs/poisson-rate-submission.fio", &[]);
    assert_eq!((value(&t, "rate_iops"), value(&t, "arrivals")), ("50".into(), "\"poisson\"".into()));
    let tmp = tempfile::tempdir().unwrap();
    let job = |name: &str, body: &str| {
        let p = tmp.path().join(name);
        std::fs::write(&p, format!("[job]\nioengine=null\nsize=64m\nruntime=5\n{body}")).unwrap();
        ioscope().args(["import", "fio"]).arg(&p).output().unwrap()
    };
    // Holes, zones and a share of random I/Os, each as fio writes it.
    let out = job("mix.fio", "rw=randread\npercentage_random=30\nrandom_distribution=zoned:60/10:30/20:10/70\n");
    let t = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(value(&t, "percentage_random"), "30");
    assert_eq!(value(&t, "random_distribution"), "\"zoned:60/10:30/20:10/70\"");
    let out = job("holes.fio", "rw=write:4k\n");
    assert_eq!(value(&String::from_utf8_lossy(&out.stdout), "seq_skip"), "\"4k\"", "{}", stderr(&out));
    // What fio ignores is said and not converted; what ioscope cannot do is refused.
    let out = job("seq-zipf.fio", "rw=read\nrandom_distribution=zipf:1.2\n");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("random_distribution=zipf:1.2: fio shapes random offsets only"), "{}", stderr(&out));
    for (body, says) in [
        ("rw=randread:8\n", "error: rw=randread:8: fio draws a new random offset every 8 I/Os"),
        ("rw=read:1000\n", "error: rw=read:1000: 1000 bytes is not a multiple of 512"),
        (
            "rw=randread\nrandom_distribution=zipf:0\n",
            "error: random_distribution=zipf:0: the theta of zipf is above 0",
        ),
        (
            "rw=randread\nrandom_distribution=zoned:50/10,50/90\n",
            "error: random_distribution=zoned:50/10,50/90: one distribution for reads and writes",
        ),
        ("rw=randread\nrate_process=burst\n", "error: rate_process=burst: not a rate process fio has"),
    ] {
        let out = job("bad.fio", body);
        assert_eq!(out.status.code(), Some(2), "{body}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{body}: expected {says:?} in {}", stderr(&out));
    }
}

#[test]
fn stonewall_groups_that_are_not_steps_are_phases_and_import_one_group_at_a_time_too() {
    // Read, random read, write, random write, one after another: a phase each.
    let (t, _) = convert("fio-docs/ssd-test.fio", &[]);
    assert!(t.contains("# all 4 stonewall groups, one phase each"), "{t}");
    let phases: Vec<&str> = t.lines().filter(|l| l.starts_with("phase = ")).collect();
    assert_eq!(phases.len(), 4, "{t}");
    assert!(phases[3].starts_with("phase = 4"), "{t}");
    // A rate is over a run's workloads and phases split them: refused, saying how to import.
    let tmp = tempfile::tempdir().unwrap();
    let rated = tmp.path().join("rated.fio");
    let text = std::fs::read_to_string(format!("{CORPUS}/fio-docs/ssd-test.fio")).unwrap();
    std::fs::write(&rated, text.replace("[global]\n", "[global]\nrate_iops=100\n")).unwrap();
    let out = ioscope().args(["import", "fio"]).arg(&rated).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("(stonewall): the job file runs 4 stonewall groups one after another"), "{err}");
    assert!(err.contains("a run with phases has no rate") && err.contains("--group N (1 to 4)"), "{err}");
    let (t, _) = convert("fio-docs/ssd-test.fio", &["--group", "2"]);
    assert_eq!((value(&t, "name"), value(&t, "rw")), ("\"rand-read\"".into(), "\"randread\"".into()));
    assert_eq!(value(&t, "dir"), "\"/mount-point-of-ssd\"");
    let (t, _) = convert("fio-docs/tiobench-example.fio", &["--group", "3"]);
    assert_eq!(
        (value(&t, "rw"), value(&t, "threads"), value(&t, "size")),
        ("\"read\"".into(), "4".into(), "\"2g\"".into())
    );
    // fio's libnfs engine is ioscope's nfs engine; wait_for the job before is a stonewall.
    let (t, _) = convert("fio-docs/nfs.fio", &["--group", "2"]);
    assert_eq!((value(&t, "engine"), value(&t, "target")), ("\"nfs\"".into(), "\"nfs://127.0.0.1/nfs\"".into()));
    assert_eq!(
        (value(&t, "rw"), value(&t, "threads"), value(&t, "iodepth")),
        ("\"randread\"".into(), "10".into(), "10".into())
    );
    let out = import("fio-docs/ssd-test.fio", &["--group", "5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--group 5: the job file has 4 stonewall group(s)"), "{}", stderr(&out));
}

#[test]
fn import_fio_out_refuses_to_replace_a_file_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    let out_file = tmp.path().join("w.toml");
    std::fs::write(&out_file, "keep me").unwrap();
    let o = out_file.to_str().unwrap();
    let out = import("randread-qd1-latency.fio", &["-o", o]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("file exists; use --force to replace it"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&out_file).unwrap(), "keep me");
    let out = import("randread-qd1-latency.fio", &["-o", o, "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = ioscope().arg("validate").arg(&out_file).output().unwrap();
    assert_eq!(v.status.code(), Some(0), "{}", stderr(&v));
}

#[test]
fn an_imported_write_then_read_job_file_runs_as_a_write_step_then_a_read_step() {
    let tmp = tempfile::tempdir().unwrap();
    let toml = tmp.path().join("phases.toml");
    let out = import("stonewall-write-then-read.fio", &["-o", toml.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Scaled down from the command line: a small working set here, 1 s per step.
    let dir = tmp.path().join("w");
    let results = tmp.path().join("r.db");
    let run = ioscope()
        .arg("run")
        .arg(&toml)
        .args(["--size", "4m", "--duration", "1s", "--json", "--quiet", "--dir"])
        .arg(&dir)
        .arg("--out")
        .arg(&results)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let summary: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    let steps = summary["steps"].as_array().unwrap();
    let labels: Vec<&str> = steps.iter().map(|s| s["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["rwmix_read=0", "rwmix_read=100"]);
    for s in steps {
        assert!(s["ops"].as_u64().unwrap() > 0 && s["errors"].as_u64() == Some(0), "{s}");
    }
}

#[test]
fn fio_jobs_of_one_group_with_iodepth_4_and_32_import_to_workloads_of_their_own_depth() {
    let (t, v) = convert("aio-read-depths.fio", &[]);
    assert_eq!(values(&t, "iodepth"), ["4", "32"], "each job's own, in its [[workload]]:\n{t}");
    assert!(v.contains(": ok (uring file1 + file2"), "{v}");
    // direct and fsync differing between the jobs of a group go the same way.
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("mixed.fio");
    let text = "[global]\nioengine=io_uring\nsize=64m\nruntime=5\ndirectory=/mnt/test\n\n[log]\nrw=write\nfsync=1\niodepth=1\n\n[data]\nrw=randread\ndirect=1\niodepth=16\n";
    std::fs::write(&p, text).unwrap();
    let out = ioscope().args(["import", "fio"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(values(&t, "iodepth"), ["1", "16"], "{t}");
    assert_eq!(values(&t, "direct"), ["false", "true"], "{t}");
    assert_eq!(values(&t, "sync"), ["\"fsync\""], "{t}");
    // Stonewall groups that differ in depth alone are a step per depth (for_iodepth).
    std::fs::write(&p, "[a]\nioengine=io_uring\nsize=64m\nruntime=5\nrw=randread\niodepth=4\n[b]\nstonewall\nioengine=io_uring\nsize=64m\nruntime=5\nrw=randread\niodepth=32\n").unwrap();
    let out = ioscope().args(["import", "fio"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(values(&t, "for_iodepth"), ["[4, 32]"], "{t}");
    // A depth that differs within a group and between groups is not one loop: phases, each
    // job at its own depth.
    std::fs::write(&p, "[global]\nioengine=io_uring\nsize=64m\nruntime=5\nrw=randread\n[a]\niodepth=4\n[a2]\niodepth=8\n[b]\nstonewall\niodepth=32\n[b2]\niodepth=8\n").unwrap();
    let out = ioscope().args(["import", "fio"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(values(&t, "iodepth"), ["4", "8", "32", "8"], "{t}");
    assert_eq!(values(&t, "phase"), ["1", "1", "2", "2"], "{t}");
}
