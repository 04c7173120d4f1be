//! Damaged bytes (docs/robustness.md): a real small results file written by [`Writer`],
//! then bits flipped, byte ranges overwritten, zeroed or copied from elsewhere, and the file
//! truncated, at random. Reading it through the public reader ([`open`], [`refresh`]) gives
//! the run or an error that names the file and says what is wrong; it never panics.
//! `tests/damaged.rs` damages values inside valid SQLite; this damages the bytes under it.

use crate::tests::{hist, hosts, run_info, snapshot};
use crate::*;
use ioscope_props::proptest::prelude::*;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// A results file's bytes: a finished run, and a run caught while writing (the file and
/// its `-wal`, as a killed run leaves them).
struct Bases {
    finished: Vec<u8>,
    running: (Vec<u8>, Vec<u8>),
}

fn bases() -> &'static Bases {
    static BASES: OnceLock<Bases> = OnceLock::new();
    BASES.get_or_init(|| {
        use ioscope_metrics::stat::{Dim, StatId};
        use ioscope_metrics::{TargetSecond, TargetSeries, TargetValue};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("base.ioscope");
        // Another host's pid: a copy caught mid-run reads as a run that was interrupted.
        let mut w = Writer::create(&path, &run_info(1, "h1.invalid"), &hosts()).unwrap();
        let steps: Vec<StepRow> = (0..2)
            .map(|i| StepRow {
                index: i,
                repeat: 0,
                label: format!("threads={}", i + 1),
                threads: Some(i + 1),
                rate_iops: Some(100),
                curve_pct: None,
                start_second: 2 * i,
                warmup_ns: 0,
                duration_ns: 2_000_000_000,
            })
            .collect();
        w.write_steps(&steps).unwrap();
        let disk = [(Dim::Disk, "loop3"), (Dim::Op, "write")];
        let mut running = None;
        for second in 0..4u32 {
            w.write_second(&snapshot(second, "h1")).unwrap();
            let series = vec![
                TargetSeries::new(StatId::DiskOps, &disk, TargetValue::Count(100 + u64::from(second))),
                TargetSeries::new(StatId::MemDirty, &[], TargetValue::Gauge(4096)),
                TargetSeries::new(StatId::BlockLatency, &disk, TargetValue::Dist(hist([1000, 2000]))),
            ];
            w.write_target(&TargetSecond {
                host: "server".into(),
                second: u64::from(second),
                interval_ns: 1 << 30,
                series,
            })
            .unwrap();
            if second == 2 {
                let wal = std::fs::read(crate::sidecar(&path, "-wal")).unwrap();
                running = Some((std::fs::read(&path).unwrap(), wal));
            }
        }
        let probe = ProbeRow {
            name: "tick".into(),
            command: "true".into(),
            at_ns: 1,
            duration_ns: 2,
            exit_code: None,
            detail: Some("killed".into()),
        };
        w.write_probe(&probe).unwrap();
        w.finish(Status::Completed, Some("done"), 1_700_000_004_000).unwrap();
        let finished = std::fs::read(&path).unwrap();
        assert_eq!(open(&path).unwrap().seconds_kept(), 4, "the base file reads back");
        Bases { finished, running: running.unwrap() }
    })
}

/// One change to a file's bytes; positions and lengths are taken modulo the file's size,
/// often near the start (the SQLite header and the schema live in the first pages).
#[derive(Clone, Debug)]
enum Damage {
    /// XOR the byte at `at` with `mask` (not 0).
    Flip { at: usize, mask: u8 },
    /// `len` bytes from `at` set to `byte`.
    Fill { at: usize, len: usize, byte: u8 },
    /// `bytes` written at `at`.
    Overwrite { at: usize, bytes: Vec<u8> },
    /// `len` bytes from `from` copied over those at `at` (a page in the wrong place).
    Copy { from: usize, at: usize, len: usize },
    /// The file cut to `at` bytes.
    Truncate { at: usize },
}

fn position() -> impl Strategy<Value = usize> {
    prop_oneof![1 => 0usize..128, 1 => 0usize..8192, 3 => any::<usize>()]
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        4 => (position(), 1u8..=255).prop_map(|(at, mask)| Damage::Flip { at, mask }),
        2 => (position(), 1usize..4096, prop_oneof![Just(0u8), Just(0xff), any::<u8>()])
            .prop_map(|(at, len, byte)| Damage::Fill { at, len, byte }),
        2 => (position(), prop::collection::vec(any::<u8>(), 1..64)).prop_map(|(at, bytes)| Damage::Overwrite { at, bytes }),
        1 => (position(), position(), prop_oneof![Just(4096usize), 1usize..8192])
            .prop_map(|(from, at, len)| Damage::Copy { from, at, len }),
        1 => position().prop_map(|at| Damage::Truncate { at }),
    ]
}

fn apply(bytes: &mut Vec<u8>, d: &Damage) {
    let n = bytes.len().max(1);
    match d {
        Damage::Flip { at, mask } => {
            if let Some(b) = bytes.get_mut(at % n) {
                *b ^= mask;
            }
        }
        Damage::Fill { at, len, byte } => {
            let at = at % n;
            let end = (at + len).min(bytes.len());
            bytes[at.min(end)..end].fill(*byte);
        }
        Damage::Overwrite { at, bytes: new } => {
            let at = at % n;
            let end = (at + new.len()).min(bytes.len());
            bytes[at.min(end)..end].copy_from_slice(&new[..end - at.min(end)]);
        }
        Damage::Copy { from, at, len } => {
            let (from, at) = (from % n, at % n);
            let len = (*len).min(bytes.len().saturating_sub(from)).min(bytes.len().saturating_sub(at));
            bytes.copy_within(from..from + len, at);
        }
        Damage::Truncate { at } => bytes.truncate(at % n),
    }
}

/// A damaged copy: which file of which base, and what was done to it.
#[derive(Clone, Debug)]
struct Case {
    /// 0: the finished file; 1: the running file; 2: the running file's `-wal`.
    target: u8,
    damage: Vec<Damage>,
}

fn case() -> impl Strategy<Value = Case> {
    (0u8..3, prop::collection::vec(damage(), 1..4)).prop_map(|(target, damage)| Case { target, damage })
}

/// An error from reading `path` names it and says what is wrong.
fn assert_clear(e: &StoreError, path: &Path) {
    let shown = e.to_string();
    let name = path.display().to_string();
    assert!(shown.starts_with(&name), "the message does not name the file: {shown}");
    assert!(shown[name.len()..].trim_start_matches(':').trim().len() >= 3, "the message says nothing: {shown}");
}

/// Writes `case`'s files under `dir`, reads them back, checks the outcome.
fn check(dir: &Path, n: u64, case: &Case) {
    let b = bases();
    let path = dir.join(format!("damaged-{n}.ioscope"));
    let (mut db, mut wal) = match case.target {
        0 => (b.finished.clone(), None),
        _ => (b.running.0.clone(), Some(b.running.1.clone())),
    };
    let victim = if case.target == 2 { wal.as_mut().unwrap() } else { &mut db };
    for d in &case.damage {
        apply(victim, d);
    }
    std::fs::write(&path, &db).unwrap();
    if let Some(wal) = &wal {
        std::fs::write(crate::sidecar(&path, "-wal"), wal).unwrap();
    }
    match open(&path) {
        Ok(r) => {
            // What the readers above use: every second, its operations, the status.
            let _ = (r.seconds_kept(), r.ops(), r.run.status.as_str());
            // Refreshing from the damaged file again reads every table once more.
            let mut again = r.clone();
            if let Err(e) = refresh(&mut again) {
                assert_clear(&e, &path);
            }
        }
        Err(e) => assert_clear(&e, &path),
    }
    // A run read before the damage, refreshed from the damaged file (a live view whose
    // file went bad under it).
    let fine = dir.join(format!("fine-{n}.ioscope"));
    std::fs::write(&fine, &b.finished).unwrap();
    let mut live = open(&fine).unwrap();
    live.path = path.clone();
    if let Err(e) = refresh(&mut live) {
        assert_clear(&e, &path);
    }
    for p in [path.clone(), fine, crate::sidecar(&path, "-wal"), crate::sidecar(&path, "-shm")] {
        let _ = std::fs::remove_file(p);
    }
}

#[test]
fn damaged_bytes_in_a_results_file_give_the_run_or_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let n = AtomicU64::new(0);
    ioscope_props::check("store: damaged results file bytes", 400, case(), |case| {
        check(dir.path(), n.fetch_add(1, Ordering::Relaxed), &case);
    });
}

/// Found by `damaged_bytes_in_a_results_file_give_the_run_or_a_clear_error`: a page of the
/// file overwritten was reported as "database disk image is malformed", which does not say
/// that it is the results file that is damaged.
#[test]
fn a_results_file_with_a_page_zeroed_is_reported_as_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zeroed.ioscope");
    let mut bytes = bases().finished.clone();
    let pages = bytes.len() / 4096;
    assert!(pages >= 4);
    let mut damaged = 0;
    for page in 1..pages {
        let mut copy = bytes.clone();
        copy[page * 4096..(page + 1) * 4096].fill(0);
        std::fs::write(&path, &copy).unwrap();
        if let Err(e) = open(&path) {
            let shown = e.to_string();
            assert!(!shown.contains("malformed") || shown.contains("damaged results file"), "{shown}");
            damaged += usize::from(shown.contains("damaged results file"));
        }
    }
    assert!(damaged > 0, "no zeroed page was reported as damage");
    bytes.truncate(4096);
    std::fs::write(&path, &bytes).unwrap();
    let e = open(&path).unwrap_err().to_string();
    assert!(e.starts_with(&path.display().to_string()), "{e}");
}
