//! The target-side probe against a real NFS server: nfs-ganesha exporting an ext4 on a
//! loop device of its own (`scripts/nfs-ganesha.sh start-loop`), driven by the nfs engine
//! while `ioscope run --probe local` records what the server did into the run's results
//! file. The tests read that file with SQL, as a user would.
//!
//! One run serves every test here (the first test to need it starts it; the others wait).
//! It needs root (eBPF, the loop device), ioscope built with the `ebpf` feature and the
//! server: scripts/test.sh starts it and sets IOSCOPE_NFS_URL and IOSCOPE_NFS_LOOP_DEV.

use rusqlite::Connection;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod skip;
use skip::skip;

/// ganesha's process name (its threads all carry it too).
const GANESHA: &str = "ganesha.nfsd";
/// NFS WRITEs in flight at once: the run's threads × iodepth (one: each FILE_SYNC write is
/// then fsynced alone, so each reaches the loop device as a write of its own).
const IN_FLIGHT: u64 = 1;

/// The measured run: its results file and the loop device under the export.
struct Probed {
    db: PathBuf,
    disk: String,
}

impl Probed {
    fn sql(&self) -> Connection {
        Connection::open(&self.db).unwrap()
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ioscope(args: &[&str]) -> Result<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_ioscope")).args(args).output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("ioscope {args:?}: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The run every test reads, or None (after saying why) when it cannot be made here.
fn probed() -> Option<&'static Probed> {
    static RUN: OnceLock<Result<Probed, String>> = OnceLock::new();
    if unsafe { libc::geteuid() } != 0 {
        skip("the probe's eBPF samplers and the loop device need root");
        return None;
    }
    let (Ok(url), Ok(disk)) = (std::env::var("IOSCOPE_NFS_URL"), std::env::var("IOSCOPE_NFS_LOOP_DEV")) else {
        skip(
            "no NFS server on a loop device (scripts/nfs-ganesha.sh start-loop; IOSCOPE_NFS_URL, IOSCOPE_NFS_LOOP_DEV)",
        );
        return None;
    };
    match RUN.get_or_init(|| run(&url, &disk)) {
        Ok(p) => Some(p),
        Err(e) => panic!("{e}"),
    }
}

/// Writes 64 KiB FILE_SYNC writes (`--sync dsync`) for 8 s with the probe on. FILE_SYNC
/// makes ganesha fsync each write, so its data and ext4's journal reach the loop device
/// within the run (unstable writes would sit in the server's page cache for ~30 s).
/// A first run without the probe lays the file out, so that the measured run's ganesha
/// writes are the client's writes and nothing else.
fn run(url: &str, disk: &str) -> Result<Probed, String> {
    // A directory of its own under the build's scratch space, emptied at each start: the
    // run lives in a static, never dropped, so a temporary directory would stay behind.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("probe-test");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let target = format!("{url}/probe-{}", std::process::id());
    let load = ["run", "--engine", "nfs", "--target", &target, "--rw", "write", "--bs", "64k", "--size", "32m"];
    let load = [&load[..], &["--sync", "dsync", "--iodepth", "1", "--quiet"]].concat();
    let layout = dir.join("layout.db");
    ioscope(&[&load[..], &["--duration", "1s", "--out", s(&layout)]].concat())?;
    let db = dir.join("r.db");
    ioscope(
        &[&load[..], &["--duration", "8s", "--probe", "local", "--probe-process", GANESHA, "--out", s(&db)]].concat(),
    )?;
    // The UI's browser test draws this run's server worksheet (scripts/test.sh names the copy).
    if let Ok(copy) = std::env::var("IOSCOPE_SERVER_RESULTS") {
        std::fs::copy(&db, &copy)
            .map_err(|e| format!("copying {} to IOSCOPE_SERVER_RESULTS={copy}: {e}", db.display()))?;
    }
    Ok(Probed { db, disk: disk.to_string() })
}

/// Sum of a stat's per-second values (counts, for a distribution) by `group`, over the
/// series matching `filter` (SQL on `series s`).
fn sums(c: &Connection, group: &str, filter: &str) -> BTreeMap<String, u64> {
    let q = format!(
        "SELECT CAST(ifnull({group}, '') AS TEXT), sum(x.value) FROM sample x JOIN series s ON s.id = x.series_id \
         WHERE {filter} GROUP BY 1"
    );
    let mut st = c.prepare(&q).unwrap_or_else(|e| panic!("{q}: {e}"));
    let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))).unwrap();
    rows.map(|r| r.map(|(k, v)| (k, u64::try_from(v).unwrap()))).collect::<Result<_, _>>().unwrap()
}

/// Values per second of the series matching `filter`.
fn per_second(c: &Connection, filter: &str) -> BTreeMap<i64, u64> {
    sums(c, "x.second", filter).into_iter().map(|(k, v)| (k.parse().unwrap(), v)).collect()
}

fn seconds(c: &Connection, q: &str) -> BTreeSet<i64> {
    let mut st = c.prepare(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    st.query_map([], |r| r.get::<_, i64>(0)).unwrap().collect::<Result<_, _>>().unwrap()
}

/// The client's completed writes: the per-workload series (not those per worker or file).
const CLIENT_WRITES: &str =
    "s.side = 'client' AND s.stat = 'io.ops' AND s.op = 'write' AND s.workload <> '' AND s.worker IS NULL AND s.file IS NULL";

#[test]
#[ignore = "needs root, the ebpf feature and nfs-ganesha on a loop device: scripts/test.sh (start-loop)"]
fn block_io_count_of_the_loop_device_from_ebpf_agrees_with_diskstats_within_1_percent() {
    let Some(p) = probed() else { return };
    let c = p.sql();
    let disk = format!("s.side = 'target' AND s.disk = '{}'", p.disk);
    let ebpf = sums(&c, "s.op", &format!("{disk} AND s.stat = 'block.latency'"));
    let diskstats = sums(&c, "s.op", &format!("{disk} AND s.stat = 'disk.ops'"));
    let (e, d): (u64, u64) = (ebpf.values().sum(), diskstats.values().sum());
    eprintln!("{}: block.latency (eBPF) {ebpf:?} = {e}, disk.ops (diskstats) {diskstats:?} = {d}", p.disk);
    assert!(d > 1000, "the loop device {} did too little I/O to compare (diskstats: {diskstats:?})", p.disk);
    assert!(e > 0, "no block.latency series for {} (is ioscope built with the ebpf feature?)", p.disk);
    assert!(e.abs_diff(d) * 100 <= d, "eBPF counted {e} block I/Os on {}, diskstats {d}: more than 1% apart", p.disk);
    // Each op on its own too, where it has enough I/Os to compare.
    for (op, &d) in diskstats.iter().filter(|(_, &d)| d >= 1000) {
        let e = ebpf.get(op).copied().unwrap_or(0);
        assert!(e.abs_diff(d) * 100 <= d, "{op}: eBPF counted {e} block I/Os on {}, diskstats {d}", p.disk);
    }
}

/// ganesha's VFS backend writes an NFS WRITE's data with one pwritev(2) (what strace shows
/// for ganesha 4.3), then, the write being FILE_SYNC, makes it durable with one fsync, and
/// only then replies. The file was laid out by an earlier run, so the measured run sends
/// nothing else that ganesha would pwrite, and over the run its pwritev calls are the
/// client's writes. The one exact difference: a write still in flight at the run's end is
/// completed and counted in the client's last second, while ganesha's calls for it may
/// return after that second, outside the run's seconds. So for pwritev and for fsync:
/// calls = client writes − k, with 0 <= k <= the writes in flight (one).
#[test]
#[ignore = "needs root, the ebpf feature and nfs-ganesha on a loop device: scripts/test.sh (start-loop)"]
fn ganesha_pwrite_syscalls_over_the_run_equal_the_client_writes() {
    let Some(p) = probed() else { return };
    let c = p.sql();
    let by_syscall =
        sums(&c, "s.syscall", &format!("s.side = 'target' AND s.stat = 'syscall.latency' AND s.process = '{GANESHA}'"));
    let pwrites: u64 = by_syscall.iter().filter(|(k, _)| k.starts_with("pwrite")).map(|(_, v)| v).sum();
    let client: u64 = sums(&c, "s.op", CLIENT_WRITES).values().sum();
    eprintln!("ganesha syscalls {by_syscall:?}; client writes {client}");
    assert!(client > 1000, "the client wrote too little to compare: {client}");
    assert!(
        !by_syscall.is_empty(),
        "no syscall.latency series for {GANESHA} (is ioscope built with the ebpf feature?)"
    );
    let syncs: u64 = by_syscall.iter().filter(|(k, _)| k.contains("sync")).map(|(_, v)| v).sum();
    for (what, calls) in [("pwrite", pwrites), ("fsync", syncs)] {
        assert!(
            calls <= client && client - calls <= IN_FLIGHT,
            "ganesha's {what} calls ({by_syscall:?}) are not the client's {client} writes \
             (less at most the {IN_FLIGHT} in flight at the run's end)"
        );
    }
    assert!(syncs <= pwrites, "a FILE_SYNC write is written, then made durable: {by_syscall:?}");
}

#[test]
#[ignore = "needs root, the ebpf feature and nfs-ganesha on a loop device: scripts/test.sh (start-loop)"]
fn target_series_have_the_client_series_seconds_and_none_outside_the_run() {
    let Some(p) = probed() else { return };
    let c = p.sql();
    let of = |side: &str| {
        seconds(
            &c,
            &format!(
                "SELECT DISTINCT x.second FROM sample x JOIN series s ON s.id = x.series_id \
                 WHERE s.side = '{side}' ORDER BY 1"
            ),
        )
    };
    let (client, target, ticks) = (of("client"), of("target"), seconds(&c, "SELECT DISTINCT second FROM tick"));
    assert!(client.len() >= 7, "an 8 s run has its seconds: {client:?}");
    assert_eq!(target, client, "target seconds (left) are not the client's (right)");
    assert!(target.is_subset(&ticks), "target seconds {target:?} outside the run's ticks {ticks:?}");
    // The same second numbers mean the same time: every FILE_SYNC write the client saw
    // completed in a second had its data written to the loop device in that second (give
    // or take the writes in flight across the second's edge), and the device did nothing
    // like it before the run.
    let writes = per_second(&c, CLIENT_WRITES);
    let disk = per_second(
        &c,
        &format!("s.side = 'target' AND s.stat = 'disk.ops' AND s.op = 'write' AND s.disk = '{}'", p.disk),
    );
    eprintln!("client writes per second {writes:?}; {} writes per second {disk:?}", p.disk);
    for (second, &w) in &writes {
        let d = disk.get(second).copied().unwrap_or(0);
        assert!(
            d + IN_FLIGHT >= w,
            "second {second}: the client completed {w} FILE_SYNC writes, but {} only {d}",
            p.disk
        );
    }
    // The eBPF samplers' seconds too: ganesha's pwritev calls returning in a second are
    // that second's client writes, give or take one write across each of its edges (the
    // last second: also the write in flight at the end, see the pwrite test above).
    let pwritev = per_second(
        &c,
        &format!(
            "s.side = 'target' AND s.stat = 'syscall.latency' AND s.process = '{GANESHA}' AND s.syscall = 'pwritev'"
        ),
    );
    eprintln!("ganesha's pwritev per second {pwritev:?}");
    assert!(
        pwritev.keys().all(|k| writes.contains_key(k)),
        "pwritev seconds {pwritev:?} outside the client's {writes:?}"
    );
    for (second, &w) in &writes {
        let calls = pwritev.get(second).copied().unwrap_or(0);
        assert!(
            calls.abs_diff(w) <= 2 * IN_FLIGHT,
            "second {second}: the client completed {w} writes, ganesha's pwritev returned {calls} times"
        );
    }
}
