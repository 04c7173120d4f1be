//! The page cache at the start (`--cache`, docs/cache.md), run with the real binary: the
//! choice and what was done are in the results (summary, JSON, `show`), and `cold` really
//! drops the working set's pages (mincore on the file, from this test).

use serde_json::Value;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ioscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ioscope")).args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A directory on a real file system (the build's target directory, not a tmpfs /tmp,
/// whose pages cannot be dropped), removed at the end of the test.
fn disk_dir(name: &str) -> tempfile::TempDir {
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&base).unwrap();
    tempfile::Builder::new().prefix(name).tempdir_in(base).unwrap()
}

/// `ioscope run --json` into `dir/name.db`: the printed summary, `show --json` of the file
/// and `show`'s text.
fn run(dir: &Path, name: &str, args: &[&str]) -> (Value, Value, String) {
    let db = dir.join(format!("{name}.db"));
    let mut all = vec!["run", "--quiet", "--json", "--out", db.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = ioscope(&all);
    assert_eq!(out.status.code(), Some(0), "{all:?}\n{}", text(&out.stderr));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let shown = ioscope(&["show", "--json", db.to_str().unwrap()]);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    let shown_text = ioscope(&["show", db.to_str().unwrap()]);
    (summary, serde_json::from_slice(&shown.stdout).unwrap(), text(&shown_text.stdout))
}

/// Pages of `path` in the page cache, and its pages (mincore over a read-only mapping).
fn resident(path: &Path) -> (usize, usize) {
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    let page = 4096usize;
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    // SAFETY: a shared read-only mapping of the open file, unmapped below; only mincore
    // looks at it.
    unsafe {
        let addr = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0);
        assert_ne!(addr, libc::MAP_FAILED);
        assert_eq!(libc::mincore(addr, len, vec.as_mut_ptr()), 0);
        libc::munmap(addr, len);
    }
    (vec.iter().filter(|b| *b & 1 == 1).count(), pages)
}

/// Whether this file system lets pages be dropped (tmpfs does not).
fn can_drop(dir: &Path) -> bool {
    let p = dir.join("probe");
    std::fs::write(&p, vec![1u8; 1 << 16]).unwrap();
    let f = std::fs::File::open(&p).unwrap();
    // SAFETY: plain syscalls on an open fd.
    unsafe {
        libc::fdatasync(f.as_raw_fd());
        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
    let (r, _) = resident(&p);
    std::fs::remove_file(&p).unwrap();
    r == 0
}

#[test]
fn cache_cold_is_recorded_in_the_results_and_drops_the_working_sets_pages_before_the_run() {
    let dir = disk_dir("cache-cold");
    let ws = dir.path().join("ws");
    let base = ["--dir", ws.to_str().unwrap(), "--size", "4m", "--files", "1", "--duration", "1s"];
    // Warm: the file is read once, whole, and all of it is cached at the start.
    let mut args = base.to_vec();
    args.extend(["--rw", "randread", "--cache", "warm"]);
    let (warm, shown, _) = run(dir.path(), "warm", &args);
    assert_eq!(warm["cache"], shown["cache"], "the run and `show` agree");
    assert_eq!(warm["cache"]["mode"], "warm");
    assert_eq!(warm["cache"]["bytes_read"], 4u64 << 20);
    let file = ws.join("ioscope.0.dat");
    let dropping = can_drop(dir.path());
    if dropping {
        assert_eq!(resident(&file).0, 1024, "a read run over a warm file leaves it cached");
    }
    // Cold, with 1 write a second: the run itself touches a page or two, so what is cached
    // after it is what the drop left.
    let mut args = base.to_vec();
    args.extend(["--rw", "randwrite", "--rate-iops", "1", "--cache", "cold"]);
    let (cold, shown, shown_text) = run(dir.path(), "cold", &args);
    assert_eq!(cold["cache"], shown["cache"]);
    assert_eq!((cold["cache"]["mode"].as_str(), cold["cache"]["files"].as_u64()), (Some("cold"), Some(1)));
    assert_eq!(cold["cache"]["dropped"], 1);
    assert_eq!(cold["workload"]["plan"]["cache"], "cold");
    let host = cold["system"].as_object().unwrap().values().next().unwrap();
    assert_eq!(host["cache"]["dropped"], 1, "each host's record is in its configuration: {host:#}");
    assert!(shown_text.contains("\ncache    cold, 1 of 1 file synced and dropped in "), "{shown_text}");
    if dropping {
        assert_eq!(cold["cache"]["resident_bytes_after"], 0, "{:#}", cold["cache"]);
        let (cached, pages) = resident(&file);
        assert!(cached <= 8, "{cached} of {pages} pages cached after a cold run of a few writes");
    } else {
        eprintln!("{}: this file system keeps its pages (tmpfs): drop not checked", dir.path().display());
    }
    // as-is: nothing done, and said so.
    let mut args = base.to_vec();
    args.extend(["--rw", "randread", "--cache", "as-is"]);
    let (asis, _, shown_text) = run(dir.path(), "asis", &args);
    assert_eq!((asis["cache"]["mode"].as_str(), asis["cache"]["dropped"].as_u64()), (Some("as-is"), Some(0)));
    assert!(shown_text.contains("\ncache    as-is, nothing done; "), "{shown_text}");
}

#[test]
fn cache_warm_is_refused_before_any_io_for_an_engine_without_a_client_cache() {
    let out = ioscope(&["run", "--engine", "nfs", "--target", "nfs://127.0.0.1/export", "--cache", "warm"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("keeps no page cache on this host"), "{}", text(&out.stderr));
}
