//! A block device as the target (`--dir /dev/loopN`): loop devices over files in a
//! tempdir (root needed), detached again by a guard even when a test fails. What ioscope
//! wrote is read back from the backing file; refusals leave the device untouched.

mod skip;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const DEVICE_BYTES: u64 = 32 << 20;

/// A loop device over a file in its own tempdir; detached on drop.
struct Loop {
    dev: String,
    backing: PathBuf,
    _dir: tempfile::TempDir,
}

impl Loop {
    /// None (after saying why) when loop devices cannot be made here.
    fn new() -> Option<Loop> {
        Loop::with(&[])
    }

    /// A loop device with 4096-byte logical blocks, as many NVMe drives have.
    fn with_4096_byte_sectors() -> Option<Loop> {
        Loop::with(&["--sector-size", "4096"])
    }

    fn with(losetup_args: &[&str]) -> Option<Loop> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            skip::skip("loop devices need root");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let backing = dir.path().join("backing");
        std::fs::File::create(&backing).unwrap().set_len(DEVICE_BYTES).unwrap();
        let out = match Command::new("losetup").args(["-f", "--show"]).args(losetup_args).arg(&backing).output() {
            Ok(o) if o.status.success() => o,
            other => {
                skip::skip(&format!("losetup cannot attach a loop device: {other:?}"));
                return None;
            }
        };
        let dev = String::from_utf8(out.stdout).unwrap().trim().to_string();
        Some(Loop { dev, backing, _dir: dir })
    }

    fn results(&self, name: &str) -> PathBuf {
        self._dir.path().join(name)
    }

    /// The backing file's bytes, after the device's page cache is written to it (a buffered
    /// run's writes may still be there: io_uring closes its files after the process ends).
    fn backing_bytes(&self) -> Vec<u8> {
        std::fs::File::open(&self.dev).and_then(|f| f.sync_all()).unwrap();
        std::fs::read(&self.backing).unwrap()
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
    }
}

fn ioscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ioscope")).args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn run(l: &Loop, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["run", "--dir", &l.dev, "--files", "1", "--duration", "1s", "--quiet", "-o"];
    let out = out.to_str().unwrap();
    args.push(out);
    args.extend_from_slice(extra);
    ioscope(&args)
}

/// 4 KiB blocks of `data[..limit]` that are not all zero, and whether each is incompressible
/// (no byte value more than 2% of a block: random data, not a pattern).
fn written_blocks(data: &[u8], limit: usize) -> (usize, usize) {
    let mut written = 0;
    let mut random = 0;
    for b in data[..limit].chunks(4096).filter(|b| b.iter().any(|x| *x != 0)) {
        written += 1;
        let mut counts = [0usize; 256];
        b.iter().for_each(|x| counts[*x as usize] += 1);
        if counts.iter().all(|c| *c <= b.len() / 50) {
            random += 1;
        }
    }
    (written, random)
}

#[test]
fn a_block_device_is_written_with_and_without_direct_on_posix_and_uring_within_the_plans_size() {
    let size = 8usize << 20;
    for (engine, depth) in [("posix", "1"), ("uring", "4")] {
        for direct in ["--direct=0", "--direct=1"] {
            let Some(l) = Loop::new() else { return };
            let out = l.results("r.db");
            // --cleanup: nothing of ioscope's to remove from a device, and the data stays.
            let o = run(
                &l,
                &out,
                &[
                    "--force",
                    "--cleanup",
                    "--engine",
                    engine,
                    direct,
                    "--rw",
                    "write",
                    "--size",
                    "8m",
                    "--iodepth",
                    depth,
                ],
            );
            assert!(o.status.success() && !text(&o).contains("cleanup failed"), "{engine} {direct}: {}", text(&o));
            let data = l.backing_bytes();
            let (written, random) = written_blocks(&data, size);
            assert!(written > 0, "{engine} {direct}: nothing reached the device");
            assert_eq!(random, written, "{engine} {direct}: every written block holds random data");
            assert!(
                data[size..].iter().all(|b| *b == 0),
                "{engine} {direct}: a write past the plan's size (the device's first 8 MiB)"
            );
        }
    }
}

#[test]
fn a_block_device_is_refused_without_force_and_nothing_is_written_on_it() {
    let Some(l) = Loop::new() else { return };
    let out = l.results("r.db");
    let o = run(&l, &out, &["--rw", "randwrite", "--size", "8m"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains(&l.dev) && t.contains("--force") && t.contains("destroys the data"), "{t}");
    assert!(l.backing_bytes().iter().all(|b| *b == 0), "not a byte written (no marker, no lock file)");
    assert!(!out.exists(), "no results file for a refused run");
}

#[test]
fn a_size_larger_than_the_block_device_is_refused() {
    let Some(l) = Loop::new() else { return };
    let out = l.results("r.db");
    let o = run(&l, &out, &["--force", "--rw", "randwrite", "--size", "64m"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("64 MiB") && t.contains("32 MiB"), "names both sizes: {t}");
    assert!(l.backing_bytes().iter().all(|b| *b == 0));
}

#[test]
fn show_describes_the_block_device_a_run_used() {
    let Some(l) = Loop::new() else { return };
    let out = l.results("r.db");
    let o = run(&l, &out, &["--force", "--rw", "randread", "--size", "4m", "--direct"]);
    assert!(o.status.success(), "{}", text(&o));
    let s = ioscope(&["show", "--system", out.to_str().unwrap()]);
    assert!(s.status.success(), "{}", text(&s));
    let t = text(&s);
    let name = l.dev.trim_start_matches("/dev/");
    assert!(t.contains(&format!("{}: block device {name}", l.dev)), "{t}");
    assert!(t.contains("32 MiB") && t.contains("logical/physical block 512/") && t.contains("scheduler "), "{t}");
}

#[test]
fn target_names_a_block_device_as_dir_does() {
    let Some(l) = Loop::new() else { return };
    let out = l.results("r.db");
    let o = out.to_str().unwrap();
    let args = ["run", "--target", &l.dev, "--engine", "uring", "--direct", "--rw", "randwrite", "--size", "4m"];
    let refused = ioscope(&[&args[..], &["--duration", "1s", "--quiet", "-o", o]].concat());
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(text(&refused).contains("--force"), "{}", text(&refused));
    let ran = ioscope(&[&args[..], &["--force", "--duration", "1s", "--quiet", "-o", o]].concat());
    assert!(ran.status.success(), "{}", text(&ran));
    let (written, random) = written_blocks(&l.backing_bytes(), 4 << 20);
    assert!(written > 0 && random == written, "{written} blocks written, {random} random");
}

#[test]
fn a_block_device_run_records_the_devices_own_statistics_per_second() {
    let Some(l) = Loop::new() else { return };
    let out = l.results("r.db");
    let o = run(&l, &out, &["--force", "--rw", "randwrite", "--size", "4m", "--direct"]);
    assert!(o.status.success(), "{}", text(&o));
    let db = rusqlite::Connection::open(&out).unwrap();
    let name = l.dev.trim_start_matches("/dev/");
    let (seconds, ops): (i64, i64) = db
        .query_row(
            "SELECT count(*), ifnull(sum(value), 0) FROM sample JOIN series s ON s.id = series_id \
             WHERE s.side = 'target' AND s.disk = ?1 AND s.stat = 'disk.ops' AND s.op = 'write'",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(seconds >= 1, "no per-second diskstats of {name} in the run");
    assert!(ops > 0, "the device's own counters saw no writes");
}

/// `ioscope show --json`'s summary of a results file.
fn summary(out: &Path) -> serde_json::Value {
    let s = ioscope(&["show", "--json", out.to_str().unwrap()]);
    assert!(s.status.success(), "{}", text(&s));
    serde_json::from_slice(&s.stdout).unwrap()
}

#[test]
fn a_block_device_without_a_size_is_used_whole_and_every_view_states_that_size() {
    let Some(l) = Loop::new() else { return };
    let out = l.results("r.db");
    // Two 16 MiB writes fill the 32 MiB device; the default size (1 GiB) would be refused.
    let o = run(&l, &out, &["--force", "--rw", "write", "--bs", "16m"]);
    assert!(o.status.success(), "{}", text(&o));
    let data = l.backing_bytes();
    let half = DEVICE_BYTES as usize / 2;
    assert!(written_blocks(&data, half).0 > 0, "nothing written in the device's first half");
    assert!(data[half..].iter().any(|b| *b != 0), "nothing written in the device's last 16 MiB");
    let plan = &summary(&out)["workload"]["plan"];
    assert_eq!(plan["size_bytes"], DEVICE_BYTES, "{plan}");
    assert!(plan.get("size_default").is_none(), "the recorded plan holds the size used: {plan}");
    let shown = ioscope(&["show", out.to_str().unwrap()]);
    assert!(text(&shown).contains("size 32 MiB x 1 file"), "{}", text(&shown));
    let html = l.results("r.html");
    let r = ioscope(&["report", "-o", html.to_str().unwrap(), out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r));
    let report = std::fs::read_to_string(&html).unwrap();
    assert!(report.contains("working set over all files = 32 MiB"), "the report's workload states the size used");
}

#[test]
fn direct_io_on_a_device_with_4096_byte_logical_blocks_is_refused_below_that_block_size() {
    let Some(l) = Loop::with_4096_byte_sectors() else { return };
    let out = l.results("r.db");
    let o = run(&l, &out, &["--force", "--direct", "--rw", "randwrite", "--bs", "2k", "--size", "4m"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains(&l.dev) && t.contains("logical block size, 4096 bytes") && t.contains("2048 bytes"), "{t}");
    assert!(l.backing_bytes().iter().all(|b| *b == 0), "refused before any I/O");
    assert!(!out.exists(), "no results file for a refused run");
    // Buffered, the page cache aligns the I/O: 2 KiB blocks are fine.
    let buffered = run(&l, &out, &["--force", "--direct=0", "--rw", "randwrite", "--bs", "2k", "--size", "4m"]);
    assert!(buffered.status.success(), "{}", text(&buffered));
}

#[test]
fn direct_io_on_a_device_with_4096_byte_logical_blocks_keeps_every_offset_aligned() {
    let Some(l) = Loop::with_4096_byte_sectors() else { return };
    let out = l.results("r.db");
    // 32 MiB over 3 sequential streams: each starts near a third of the device, which is
    // no multiple of 4096; an unaligned offset fails with EINVAL.
    let o =
        run(&l, &out, &["--force", "--direct", "--rw", "read", "--bs", "4k", "--threads", "3", "--max-errors", "0"]);
    assert!(o.status.success(), "{}", text(&o));
    let total = &summary(&out)["total"];
    assert_eq!(total["errors"], 0, "{total}");
    assert!(total["ops"].as_u64().unwrap() > 0, "{total}");
}

#[test]
fn a_block_device_in_use_is_refused_even_with_force_and_nothing_is_written_on_it() {
    use std::os::unix::fs::OpenOptionsExt;
    let Some(l) = Loop::new() else { return };
    // An exclusive opener, as a mount or a RAID member holds the device.
    let held = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_EXCL).open(&l.dev).unwrap();
    let out = l.results("r.db");
    let o = run(&l, &out, &["--force", "--rw", "randwrite", "--size", "8m"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains(&l.dev) && t.contains("in use (mounted"), "{t}");
    assert!(!out.exists(), "no results file for a refused run");
    drop(held);
    assert!(l.backing_bytes().iter().all(|b| *b == 0), "not a byte written");
}

#[test]
fn a_second_run_on_a_block_device_while_the_first_runs_is_refused() {
    let Some(l) = Loop::new() else { return };
    let first_out = l.results("first.db");
    let mut first = Command::new(env!("CARGO_BIN_EXE_ioscope"))
        .args(["run", "--dir", &l.dev, "--force", "--rw", "randread", "--duration", "4s", "--quiet", "-o"])
        .arg(&first_out)
        .spawn()
        .unwrap();
    // The first run has claimed the device once its results file exists.
    let start = std::time::Instant::now();
    while !first_out.exists() && start.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let second_out = l.results("second.db");
    let o = run(&l, &second_out, &["--force", "--rw", "randwrite"]);
    assert!(first.wait().unwrap().success());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("in use"), "{}", text(&o));
    assert!(!second_out.exists());
    assert!(l.backing_bytes().iter().all(|b| *b == 0), "the first run only read, the second wrote nothing");
}

#[test]
fn a_precondition_writes_the_device_whole_twice_then_the_run_measures_until_steady_and_the_summary_shows_both() {
    let Some(l) = Loop::new() else { return };
    let out = l.results("r.db");
    let args = [
        "run",
        "--dir",
        &l.dev,
        "--quiet",
        "-o",
        out.to_str().unwrap(),
        "--force",
        "--direct",
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--precondition",
        "2x sequential write",
        "--until-steady",
        "3s",
        "--duration",
        "20s",
    ];
    let o = ioscope(&args);
    assert!(o.status.success(), "{}", text(&o));
    // The run only read: every block of the device holds the precondition's random data.
    let data = l.backing_bytes();
    let (written, random) = written_blocks(&data, data.len());
    let blocks = DEVICE_BYTES as usize / 4096;
    assert_eq!((written, random), (blocks, blocks), "every 4 KiB block written with incompressible data");
    let j = summary(&out);
    let schema: serde_json::Value = serde_json::from_str(include_str!("../schema/summary.schema.json")).unwrap();
    let errors: Vec<String> =
        jsonschema::validator_for(&schema).unwrap().iter_errors(&j).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "the summary matches its schema: {errors:?}");
    let p = &j["precondition"];
    assert_eq!(p["passes"], 2, "{p}");
    assert_eq!(p["bs_bytes"], 128 * 1024, "{p}");
    assert_eq!(p["planned_bytes"], 2 * DEVICE_BYTES, "{p}");
    assert_eq!(p["bytes"], 2 * DEVICE_BYTES, "twice the device, no more: {p}");
    assert_eq!(p["errors"], 0, "{p}");
    // The measured phase is the reads alone: the precondition's writes are not its seconds.
    assert!(j["ops"].get("write").is_none_or(|w| w["ops"] == 0), "{}", j["ops"]);
    assert!(j["ops"]["read"]["ops"].as_u64().unwrap() > 0);
    let ended = j["ended"]["by"].as_str().unwrap();
    assert!(ended == "steady" || ended == "duration", "{}", j["ended"]);
    if ended == "steady" {
        assert_eq!(j["steady"][0]["state"], "steady", "{}", j["steady"]);
        assert!(j["duration_s"].as_f64().unwrap() < 20.0);
    }
    let shown = text(&ioscope(&["show", out.to_str().unwrap()]));
    assert!(
        shown.contains("before   2x sequential write (precondition, not measured): 64 MiB of 64 MiB in 128 KiB writes"),
        "{shown}"
    );
    assert!(shown.contains("ended    "), "{shown}");
    assert!(shown.contains("steady   "), "{shown}");
}

#[test]
fn a_fio_job_naming_a_device_without_a_size_imports_and_writes_the_device_whole_once_as_fio_does() {
    let Some(l) = Loop::new() else { return };
    let (job, toml, out) = (l.results("fill.fio"), l.results("fill.toml"), l.results("fill.db"));
    std::fs::write(&job, format!("[fill]\nrw=write\nbs=1m\ndirect=1\nfilename={}\n", l.dev)).unwrap();
    let o = ioscope(&["import", "fio", job.to_str().unwrap(), "-o", toml.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(std::fs::read_to_string(&toml).unwrap().contains("passes = 1"), "the device whole, once");
    let o = ioscope(&["run", toml.to_str().unwrap(), "--force", "--quiet", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o));
    let j = summary(&out);
    assert_eq!(j["ops"]["write"]["bytes"], DEVICE_BYTES, "{}", j["ops"]);
    assert_eq!(j["ended"]["by"], "amount");
    let data = l.backing_bytes();
    let blocks = DEVICE_BYTES as usize / 4096;
    assert_eq!(written_blocks(&data, data.len()), (blocks, blocks), "every block written once, with random data");
}
