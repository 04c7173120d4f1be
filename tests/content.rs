//! Data content as an array would see it: runs write with a compress or dedup ratio (or
//! the default), then the test reads the files back and measures them itself, compressing
//! with lz4 and counting duplicate units, against what was asked.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

fn ioscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ioscope"))
}

/// Runs `ioscope run` with `args` on the working set in `tmp` (its results in `tmp`,
/// `r1.db`, `r2.db`, ...); returns the working set's bytes.
fn written(tmp: &Path, args: &[&str]) -> Vec<u8> {
    let dir = tmp.join("d");
    let n = (1..).find(|n| !tmp.join(format!("r{n}.db")).exists()).unwrap();
    let out = ioscope()
        .arg("run")
        .arg("--dir")
        .arg(&dir)
        .args(["--size", "8m", "--duration", "1s", "--quiet", "--out"])
        .arg(tmp.join(format!("r{n}.db")))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}\n{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read(dir.join("ioscope.0.dat")).unwrap()
}

/// Original : lz4-compressed size, each piece of `piece` bytes compressed on its own.
fn lz4_ratio(data: &[u8], piece: usize) -> f64 {
    let packed: usize = data.chunks(piece).map(|c| lz4_flex::block::compress(c).len()).sum();
    data.len() as f64 / packed as f64
}

/// Units : distinct units.
fn dedup_ratio(data: &[u8], unit: usize) -> f64 {
    let units: Vec<&[u8]> = data.chunks(unit).collect();
    units.len() as f64 / units.iter().collect::<HashSet<_>>().len() as f64
}

fn within_5_percent(got: f64, want: f64, what: &str) {
    eprintln!("{what}: {got:.3} measured, {want} asked");
    assert!((got - want).abs() <= 0.05 * want, "{what}: {got:.3} measured, {want} asked");
}

#[test]
fn files_written_with_compress_2_and_4_compress_so_with_lz4_and_do_not_dedup() {
    for ratio in ["2", "4:1"] {
        let tmp = tempfile::tempdir().unwrap();
        let data = written(tmp.path(), &["--rw", "randwrite", "--bs", "64k", "--compress-ratio", ratio]);
        let want = if ratio == "2" { 2.0 } else { 4.0 };
        within_5_percent(lz4_ratio(&data, 64 << 10), want, &format!("lz4 of compress_ratio {ratio}"));
        assert_eq!(dedup_ratio(&data, 4096), 1.0, "compress_ratio {ratio}: a 4 KiB unit repeats");
    }
}

#[test]
fn files_written_with_dedup_3_have_a_third_of_their_units_distinct_and_each_incompressible() {
    let tmp = tempfile::tempdir().unwrap();
    let data = written(tmp.path(), &["--rw", "randwrite", "--bs", "16k", "--dedup-ratio", "3"]);
    within_5_percent(dedup_ratio(&data, 4096), 3.0, "4 KiB units written per distinct unit");
    // Each unit on its own is random: nothing for a compressor within a unit.
    assert!(lz4_ratio(&data, 4096) < 1.01, "a dedup unit compressed: {}", lz4_ratio(&data, 4096));
}

#[test]
fn default_data_neither_compresses_nor_dedups_after_random_writes_from_reused_buffers() {
    // 64 KiB writes from one slot buffer: every 4 KiB piece of every write must be new.
    let tmp = tempfile::tempdir().unwrap();
    let data = written(tmp.path(), &["--rw", "randwrite", "--bs", "64k"]);
    assert_eq!(dedup_ratio(&data, 4096), 1.0, "a 4 KiB unit of the default data repeats");
    assert_eq!(dedup_ratio(&data, 512), 1.0, "a 512-byte sector of the default data repeats");
    assert!(lz4_ratio(&data, 64 << 10) < 1.01, "the default data compressed: {}", lz4_ratio(&data, 64 << 10));
}

#[test]
fn default_4k_random_writes_from_one_slot_buffer_do_not_compress_across_writes() {
    // One thread at depth 1: every write comes from the same buffer, and a 1 MiB piece (a
    // 128 KiB record of an array that compresses, and more) holds hundreds of them.
    let tmp = tempfile::tempdir().unwrap();
    let data = written(tmp.path(), &["--rw", "randwrite", "--bs", "4k"]);
    let ratio = lz4_ratio(&data, 1 << 20);
    assert!(ratio < 1.01, "default 4 KiB writes compressed {ratio:.2}:1 over 1 MiB pieces");
}

/// The summary's measured content (`content` in `show --json`) of the newest results file.
fn measured(tmp: &Path) -> serde_json::Value {
    let n = (1..).take_while(|n| tmp.join(format!("r{n}.db")).exists()).last().unwrap();
    let out = ioscope().args(["show", "--json"]).arg(tmp.join(format!("r{n}.db"))).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    s["content"].clone()
}

#[test]
fn the_summary_states_the_compressibility_and_dedup_measured_from_what_was_written() {
    for (args, asked, compress, dedup) in [
        (&["--rw", "randwrite", "--bs", "4k"][..], "random (default)", 1.0, 1.0),
        (&["--rw", "randwrite", "--bs", "64k", "--compress-ratio", "2"], "compress 2:1 (4k chunks)", 2.0, 1.0),
        (&["--rw", "randwrite", "--bs", "64k", "--compress-ratio", "4"], "compress 4:1 (4k chunks)", 4.0, 1.0),
        (&["--rw", "randwrite", "--bs", "16k", "--dedup-ratio", "3"], "dedup 3:1 (4k units)", 3.0, 3.0),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let data = written(tmp.path(), args);
        let c = measured(tmp.path());
        assert_eq!(c["asked"], asked, "{c}");
        assert!(c["sample_bytes"].as_u64().unwrap() >= 4 << 20, "{c}");
        // lz4 over 1 MiB regions: a dedup unit written three times in a row compresses too.
        within_5_percent(
            c["compress_ratio"].as_f64().unwrap(),
            compress,
            &format!("{args:?}: the summary's lz4 ratio"),
        );
        within_5_percent(c["dedup_ratio"].as_f64().unwrap(), dedup, &format!("{args:?}: the summary's dedup ratio"));
        // The same as this test measures over the whole file.
        within_5_percent(c["dedup_ratio"].as_f64().unwrap(), dedup_ratio(&data, 4096), "summary against the file");
    }
}

#[test]
fn zero_buffers_lay_out_and_write_zeros() {
    let tmp = tempfile::tempdir().unwrap();
    let data = written(tmp.path(), &["--rw", "randwrite", "--bs", "4k", "--zero-buffers"]);
    assert!(data.iter().all(|b| *b == 0), "a non-zero byte under zero_buffers");
}

#[test]
fn verify_checks_every_block_of_compressible_and_dedup_data() {
    let tmp = tempfile::tempdir().unwrap();
    for (n, rw, extra) in [(1, "randrw", "--compress-ratio=2"), (2, "randread", "--compress-ratio=2")] {
        written(tmp.path(), &["--rw", rw, "--bs", "8k", "--verify", extra]);
        let json = ioscope().arg("show").arg(tmp.path().join(format!("r{n}.db"))).arg("--json").output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        let ver = &v["verification"];
        assert_eq!(ver["mismatches"], 0, "{rw}: {ver}");
        assert!(ver["verified"].as_u64().unwrap_or(0) > 100, "{rw}: {ver}");
    }
    // The laid-out files hold the content asked, headers included: still about 2:1.
    let data = std::fs::read(tmp.path().join("d/ioscope.0.dat")).unwrap();
    let r = lz4_ratio(&data, 64 << 10);
    eprintln!("lz4 of compress_ratio 2 with verify headers: {r:.3}");
    assert!(r > 1.8 && r < 2.1, "lz4 of verified compress_ratio 2: {r}");
}

#[test]
fn a_read_run_asking_for_other_content_than_the_files_hold_lays_them_out_again() {
    let tmp = tempfile::tempdir().unwrap();
    let random = written(tmp.path(), &["--rw", "randread", "--bs", "4k"]);
    assert!(lz4_ratio(&random, 64 << 10) < 1.01);
    let compressible = written(tmp.path(), &["--rw", "randread", "--bs", "4k", "--compress-ratio", "2"]);
    within_5_percent(lz4_ratio(&compressible, 64 << 10), 2.0, "the files laid out again for compress_ratio 2");
}

#[test]
fn two_working_sets_share_no_unit_by_default_or_with_dedup() {
    // Two hosts' directories on one filer are two working sets: what one writes must not
    // dedup against the other's, or the filer would report N hosts' data as one.
    for extra in [&["--rw", "randread"][..], &["--rw", "randwrite", "--dedup-ratio", "3"]] {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut both = written(a.path(), extra);
        let one = dedup_ratio(&both, 4096);
        both.extend(written(b.path(), extra));
        let two = dedup_ratio(&both, 4096);
        assert!((two - one).abs() < 0.01, "{extra:?}: {one:.3} in one working set, {two:.3} over two");
    }
}
