//! Notes and labels that keep the summary's words true: a file tree's working set, an
//! open-loop schedule that fell behind, and what the total row counts.

use super::*;
use ioscope_workload::layout::FileSizes;
use ioscope_workload::{Dataset, DatasetFormat};

/// The rsync example's tree: 16 leaves of 50 files, mostly small, a few of 4 MiB.
fn rsync_tree() -> Dataset {
    Dataset {
        name: None,
        dir: PathBuf::from("/tmp/tree"),
        depth: 2,
        width: 4,
        files: 50,
        sizes: [(8 << 10, 60), (32 << 10, 25), (512 << 10, 10), (4 << 20, 5)]
            .map(|(bytes, weight)| BlockSize { bytes, weight })
            .to_vec(),
        total_size_bytes: None,
        working_set_bytes: None,
        format: DatasetFormat::Reuse,
        prealloc_pct: None,
        size_gamma: None,
    }
}

fn notes_with(p: Plan, r: Results) -> Vec<String> {
    let mut r = r;
    r.run.info.plan_json = serde_json::to_string(&p).unwrap();
    summarize(&r, Path::new("r")).notes
}

#[test]
fn the_page_cache_note_gives_a_file_trees_exact_size_not_files_times_the_largest() {
    let tree = rsync_tree();
    let exact = FileSizes::new(&tree).working_bytes();
    // The sizes' weights put the tree near 800 x 270 KiB, far below 800 x 4 MiB.
    assert!(exact > 100 << 20 && exact < 400 << 20, "{exact}");
    let notes = notes_with(Plan { dataset: Some(tree), ..plan() }, results(Status::Completed));
    let want = format!("working set {} (800 files) is ", format::bytes(exact));
    assert!(notes.iter().any(|n| n.starts_with(&want)), "want {want:?} in {notes:#?}");
    assert!(!notes.iter().any(|n| n.contains("3.1 GiB")), "{notes:#?}");

    // A working_set takes the first files up to that size: their sizes, not the cap.
    let part = Dataset { working_set_bytes: Some(10 << 20), ..rsync_tree() };
    let sizes = FileSizes::new(&part);
    let notes = notes_with(Plan { dataset: Some(part), ..plan() }, results(Status::Completed));
    let want = format!(
        "working set {} ({} files) is ",
        format::bytes(sizes.working_bytes()),
        format::int(sizes.working_files())
    );
    assert!(sizes.working_bytes() <= 10 << 20);
    assert!(notes.iter().any(|n| n.starts_with(&want)), "want {want:?} in {notes:#?}");
}

/// Writes at 500 a second, each followed by an fdatasync: responses wait behind the syncs.
fn behind() -> Results {
    let mut r = results(Status::Completed);
    let slow = |response_ns: u64, service_ns: u64| OpInterval {
        counts: Counts { ops: 500, bytes: 4096 * 500, errors: 0 },
        errors_by_kind: Vec::new(),
        skipped: 0,
        latency_ns: hist(&[(100_000, 490), (response_ns, 10)]),
        service_ns: hist(&[(100_000, 490), (service_ns, 10)]),
        size_bytes: hist(&[(4096, 500)]),
        offset_bytes: hist(&[(0, 500)]),
    };
    r.seconds = (0..3)
        .map(|i| {
            snap(
                i,
                1_000_000_000,
                vec![("write", slow(1_300_000_000, 215_000)), ("fdatasync", slow(2_000_000, 1_800_000))],
            )
        })
        .collect();
    r
}

#[test]
fn an_open_loop_run_whose_responses_far_exceed_its_service_times_says_the_schedule_fell_behind() {
    let open = Plan { rate_iops: Some(500), ..plan() };
    let notes = notes_with(open.clone(), behind());
    let note = notes.iter().find(|n| n.starts_with("the open-loop schedule fell behind")).unwrap_or_else(|| {
        panic!("no note in {notes:#?}");
    });
    assert!(note.contains("write p99 1.3 s from the intended start against 215 µs service time"), "{note}");
    assert!(note.contains("includes the wait"), "{note}");
    // fdatasync's response is near its service time: not behind.
    assert!(!note.contains("fdatasync"), "{note}");
    // A step rate is open loop too.
    let mut curve = plan();
    curve.steps.curve = vec![50];
    let stepped = notes_with(curve, behind());
    assert!(stepped.iter().any(|n| n.starts_with("the open-loop schedule fell behind")), "{stepped:#?}");

    // Closed loop, or responses close to service times: no note.
    let closed = notes_with(plan(), behind());
    assert!(!closed.iter().any(|n| n.contains("fell behind")), "{closed:#?}");
    let on_time = notes_with(open, results(Status::Completed));
    assert!(!on_time.iter().any(|n| n.contains("fell behind")), "{on_time:#?}");
}

#[test]
fn the_total_row_says_what_it_counts_when_sync_operations_are_left_out() {
    assert_eq!(total_label(["read", "write"]), "total");
    assert_eq!(total_label(["fsync", "write", "read"]), "total (read+write)");
    assert_eq!(total_label(["close", "open", "read"]), "total (read)");
    assert_eq!(total_label(["fdatasync"]), "total (without fdatasync)");

    let s = summarize(&behind(), Path::new("r"));
    assert_eq!(s.total_label, "total (write)");
    assert_eq!(s.total.ops, 1500, "fdatasync is not in the total");
    let json: serde_json::Value = serde_json::from_str(&render_json(&s)).unwrap();
    assert_eq!(json["total_label"], "total (write)");
    let text = render_text(&s);
    assert!(text.lines().any(|l| l.starts_with("total (write)  ")), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("total ") && !l.starts_with("total (write)")), "{text}");
    // Without such operations the row is plain "total".
    assert_eq!(summarize(&results(Status::Completed), Path::new("r")).total_label, "total");
}

#[test]
fn a_shortfall_that_is_a_last_second_without_io_says_so() {
    // A 30 s latency-art run: its last column is blank, so its last second completed no
    // I/O and was not stored.
    let mut art = plan();
    art.duration = Duration::from_secs(30);
    art.workloads[0].pattern = Some(ioscope_workload::Pattern {
        text: "HELLO".into(),
        map: ioscope_workload::PatternMap::Offset,
        column: Duration::from_secs(1),
    });
    let mut r = results(Status::Completed);
    r.run.info.planned_duration_ns = 30_000_000_000;
    r.seconds = (0..29).map(|i| snap(i, 1_000_000_000, vec![("read", reads())])).collect();
    let notes = notes_with(art.clone(), r.clone());
    assert!(
        notes.iter().any(|n| n
            == "measured 29 s of the planned 30 s: the last second completed no I/O (the pattern's blank columns) \
                and has no row"),
        "{notes:#?}"
    );
    // Without a pattern the tail is said without the reason.
    let plain = notes_with(Plan { duration: Duration::from_secs(30), ..plan() }, r.clone());
    let want = "measured 29 s of the planned 30 s: the last second completed no I/O and has no row";
    assert!(plain.iter().any(|n| n == want), "{plain:#?}");
    // Every second stored but shorter ones: the shortfall alone, no made-up reason.
    r.seconds = (0..30).map(|i| snap(i, 960_000_000, vec![("read", reads())])).collect();
    let short = notes_with(art, r);
    assert!(short.iter().any(|n| n == "measured 28.8 s of the planned 30 s"), "{short:#?}");
}

#[test]
fn a_rate_not_reached_says_how_late_ios_started_in_words_and_evidence() {
    let mut r = behind();
    let p = Plan { rate_iops: Some(2000), ..plan() };
    r.run.info.plan_json = serde_json::to_string(&p).unwrap();
    let s = summarize(&r, Path::new("r"));
    let v = s.verdicts.iter().find(|v| v.id == "rate-not-held").unwrap_or_else(|| panic!("{:#?}", s.verdicts));
    assert!(v.message.starts_with("the target rate of 2,000 IOPS was not reached (500 IOPS)"), "{}", v.message);
    assert!(v.message.contains("I/Os started up to about 1.3 s late at the 99th percentile"), "{}", v.message);
    assert_eq!(v.evidence["asked_iops"], 2000);
    assert_eq!(v.evidence["achieved_iops"], 500.0);
    let late = v.evidence["write_start_delay_p99_ns"].as_u64().unwrap();
    let (response, service) = (
        v.evidence["write_latency_p99_ns"].as_u64().unwrap(),
        v.evidence["write_service_time_p99_ns"].as_u64().unwrap(),
    );
    assert_eq!(late, response - service);
    // One verdict per concern: not also a "fell behind" one.
    assert_eq!(s.verdicts.iter().filter(|v| v.id == "rate-not-held").count(), 1);
}
