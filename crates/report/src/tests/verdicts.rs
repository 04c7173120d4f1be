//! Verdicts worked out from stored per-worker, per-file and CPU figures (the traps run for
//! real are in tests/verdicts.rs).

use super::*;
use ioscope_metrics::{FileCounts, WorkerCpu};

/// Four workers and four files over 6 s of reads; worker 3 and file "f3" do `slow` of the
/// others' 1000 reads a second (with a little noise so that the standard error is not 0).
fn uneven(slow: u64) -> Results {
    let mut r = results(Status::Completed);
    let mut p = plan();
    p.workloads[0].threads = 4;
    p.files = 4;
    r.run.info.plan_json = serde_json::to_string(&p).unwrap();
    r.run.info.planned_duration_ns = 6_000_000_000;
    r.seconds = (0..6)
        .map(|i| {
            let mut s = snap(i, 1_000_000_000, vec![("read", reads())]);
            let each = |k: u32| if k == 3 { slow } else { 1000 + u64::from((i + k) % 3) * 10 };
            let counts = |n: u64| Counts { ops: n, bytes: 4096 * n, errors: 0 };
            s.workers = (0..4).map(|k| WorkerCounts { worker: k, op: Op::Read, counts: counts(each(k)) }).collect();
            s.files =
                (0..4).map(|k| FileCounts { file: format!("f{k}"), op: Op::Read, counts: counts(each(k)) }).collect();
            s
        })
        .collect();
    r
}

#[test]
fn a_worker_thread_or_file_far_from_its_peers_is_an_imbalance_with_its_figures() {
    let s = summarize(&uneven(400), Path::new("r"));
    let odd: Vec<&verdict::Verdict> = s.verdicts.iter().filter(|v| v.id == "imbalance").collect();
    assert_eq!(odd.len(), 2, "{:#?}", s.verdicts);
    assert!(
        odd[0].message.starts_with("worker thread 3 differs from the other worker threads beyond noise"),
        "{odd:#?}"
    );
    assert_eq!(odd[0].evidence["worker"], "3");
    assert_eq!(odd[0].evidence["bytes_per_sec"], 400.0 * 4096.0);
    assert!(odd[0].evidence["difference_pct"].as_f64().is_some_and(|d| d < -50.0), "{odd:#?}");
    assert!(odd[1].message.starts_with("file f3 differs from the other files"), "{odd:#?}");
    assert_eq!(odd[1].evidence["file"], "f3");
    assert!(s.notes.contains(&odd[0].message), "the notes are the verdicts' messages");

    // Peers within a few percent of each other: no verdict.
    let s = summarize(&uneven(1005), Path::new("r"));
    assert!(!s.verdicts.iter().any(|v| v.id == "imbalance"), "{:#?}", s.verdicts);
}

#[test]
fn a_worker_thread_busy_all_the_time_is_client_bound_and_one_that_waits_is_not() {
    let with_cpu = |cpu_ns: u64, wait_ns: u64| {
        let mut r = results(Status::Completed);
        for s in &mut r.seconds {
            s.worker_cpu = vec![WorkerCpu { worker: 0, cpu_ns: cpu_ns * s.interval_ns / 1_000_000_000, wait_ns }];
        }
        summarize(&r, Path::new("r"))
    };
    // On a CPU 70% of the time and waiting for one 25%: it never waited for its storage.
    let s = with_cpu(700_000_000, 250_000_000);
    let v = s.verdicts.iter().find(|v| v.id == "client-bound").unwrap_or_else(|| panic!("{:#?}", s.verdicts));
    assert_eq!(v.evidence["busiest_worker"], 0);
    assert_eq!(v.evidence["threads"], 1);
    assert_eq!(v.evidence["cpus"], 2);
    assert!(v.evidence["busiest_thread_busy_pct"].as_f64().is_some_and(|b| b >= 90.0), "{v:#?}");
    assert!(v.message.starts_with("worker thread 0 was on a CPU or waiting for one"), "{}", v.message);
    // Half the time on a CPU: the rest it waited for I/O.
    let s = with_cpu(500_000_000, 10_000_000);
    assert!(!s.verdicts.iter().any(|v| v.id == "client-bound"), "{:#?}", s.verdicts);
    // No CPU figures (an older results file): no verdict either way.
    let s = summarize(&results(Status::Completed), Path::new("r"));
    assert!(!s.verdicts.iter().any(|v| v.id == "client-bound"), "{:#?}", s.verdicts);
}

#[test]
fn a_working_set_that_fits_a_probed_targets_memory_is_said_with_both_sizes() {
    use ioscope_metrics::{stat::stat, StatId, TargetValue};
    use ioscope_store::{StoredTarget, TargetSample};
    // The plan's 256 MiB working set against server "srv" (which ran no load).
    let with_available = |bytes: u64| {
        let mut r = results(Status::Completed);
        let gauge = |id: StatId, v: u64| StoredTarget {
            stat: stat(id),
            host: "srv".into(),
            labels: Vec::new(),
            samples: (0..3)
                .map(|second| TargetSample { second, interval_ns: 1_000_000_000, value: TargetValue::Gauge(v) })
                .collect(),
        };
        r.target = vec![gauge(StatId::MemAvailable, bytes), gauge(StatId::MemPageCache, 100 << 20)];
        summarize(&r, Path::new("r"))
    };
    let s = with_available(8 << 30);
    let v = s
        .verdicts
        .iter()
        .find(|v| v.id == "working-set-cached" && v.evidence.contains_key("target"))
        .unwrap_or_else(|| panic!("{:#?}", s.verdicts));
    assert_eq!(v.evidence["target"], "srv");
    assert_eq!(v.evidence["working_set_bytes"], 256u64 << 20);
    assert_eq!(v.evidence["target_available_bytes_max"], 8u64 << 30);
    assert_eq!(v.evidence["target_page_cache_bytes_max"], 100u64 << 20);
    assert!(
        v.message
            .starts_with("working set 256 MiB fits in target srv's memory (8 GiB available, page cache up to 100 MiB)"),
        "{}",
        v.message
    );
    // A server with less room than the working set: no such verdict.
    let s = with_available(128 << 20);
    assert!(!s.verdicts.iter().any(|v| v.evidence.contains_key("target")), "{:#?}", s.verdicts);
}
