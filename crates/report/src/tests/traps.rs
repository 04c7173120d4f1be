//! Each verdict's trap and a clean run of the same shape: a run built to have what the
//! verdict is about (it must be said, with its figure), and the same run without it, or
//! just short of the rule (it must stay silent). `registry.rs` checks that every id of
//! the registry has both.

use super::*;
use crate::verdict::{Verdict, VerdictId, REGISTRY};
use crate::{DiskSummary, HostSummary, TargetSummary};

/// A clean run: 12 whole seconds of 1,000 reads and 100 writes each, direct I/O, no errors,
/// as planned.
fn clean_run() -> Results {
    let mut r = results(Status::Completed);
    set_plan(&mut r, Plan { direct: true, duration: Duration::from_secs(12), ..plan() });
    r.run.info.planned_duration_ns = 12_000_000_000;
    r.seconds = (0..12).map(|i| snap(i, 1_000_000_000, vec![("read", reads()), ("write", writes(100, 0))])).collect();
    r
}

fn set_plan(r: &mut Results, p: Plan) {
    r.run.info.plan_json = serde_json::to_string(&p).unwrap();
}

fn summary(r: &Results) -> Summary {
    summarize(r, Path::new("/tmp/r.ioscope"))
}

/// The verdict `id` of the run, if said.
fn said(r: &Results, id: VerdictId) -> Option<Verdict> {
    summary(r).verdicts.into_iter().find(|v| v.is(id))
}

/// The verdict `id` of a summary edited after summarizing (hosts, target, verification).
fn said_of(s: &Summary, r: &Results, id: VerdictId) -> Option<Verdict> {
    crate::aggregate::verdicts(s, r).into_iter().find(|v| v.is(id))
}

#[test]
fn a_clean_run_of_twelve_whole_seconds_has_no_verdict_at_all() {
    let r = clean_run();
    let s = summary(&r);
    assert!(s.verdicts.is_empty(), "{:#?}", s.verdicts);
    for e in REGISTRY {
        assert!(said(&r, e.id).is_none(), "{}", e.name);
    }
}

#[test]
fn interrupted_is_said_of_a_run_stopped_before_its_end_only() {
    let mut r = clean_run();
    assert!(said(&r, VerdictId::Interrupted).is_none());
    r.run.status = Status::Interrupted;
    r.run.status_detail = Some("interrupted by signal 2".into());
    let v = said(&r, VerdictId::Interrupted).expect("interrupted");
    assert_eq!((v.severity, v.evidence["measured_s"].as_f64()), (Severity::Warning, Some(12.0)));
    assert!(v.message.contains("interrupted by signal 2"), "{}", v.message);
}

#[test]
fn failed_is_said_of_a_failed_run_only_as_an_error() {
    let mut r = clean_run();
    assert!(said(&r, VerdictId::Failed).is_none());
    r.run.status = Status::Failed;
    r.run.status_detail = Some("too many failed I/Os".into());
    let v = said(&r, VerdictId::Failed).expect("failed");
    assert_eq!((v.severity, v.evidence["measured_s"].as_f64()), (Severity::Error, Some(12.0)));
}

#[test]
fn running_is_said_of_a_run_still_going_only() {
    let mut r = clean_run();
    assert!(said(&r, VerdictId::Running).is_none());
    r.run.status = Status::Running;
    let v = said(&r, VerdictId::Running).expect("running");
    assert_eq!(v.severity, Severity::Info);
}

#[test]
fn no_data_is_said_of_a_run_without_a_second_only() {
    let mut r = clean_run();
    r.seconds.truncate(1);
    assert!(said(&r, VerdictId::NoData).is_none(), "one second is data");
    r.seconds.clear();
    let v = said(&r, VerdictId::NoData).expect("no-data");
    assert_eq!(v.evidence["seconds"], 0);
}

#[test]
fn too_short_is_said_below_ten_measured_seconds_and_not_at_ten() {
    let mut r = clean_run();
    set_plan(&mut r, Plan { direct: true, duration: Duration::from_secs(10), ..plan() });
    r.run.info.planned_duration_ns = 10_000_000_000;
    r.seconds.truncate(10);
    assert!(said(&r, VerdictId::TooShort).is_none());
    set_plan(&mut r, Plan { direct: true, duration: Duration::from_secs(9), ..plan() });
    r.run.info.planned_duration_ns = 9_000_000_000;
    r.seconds.truncate(9);
    let v = said(&r, VerdictId::TooShort).expect("too-short");
    assert_eq!((v.evidence["measured_s"].as_f64(), v.evidence["minimum_s"].as_u64()), (Some(9.0), Some(10)));
}

#[test]
fn shorter_than_planned_is_said_of_a_missing_second_not_of_a_whole_run() {
    let mut r = clean_run();
    assert!(said(&r, VerdictId::ShorterThanPlanned).is_none());
    r.seconds.truncate(11);
    let v = said(&r, VerdictId::ShorterThanPlanned).expect("shorter-than-planned");
    assert_eq!(
        (v.evidence["measured_s"].as_f64(), v.evidence["planned_measured_s"].as_f64()),
        (Some(11.0), Some(12.0))
    );
}

#[test]
fn engine_is_said_of_an_engine_with_a_note_only() {
    let mut r = clean_run();
    assert!(said(&r, VerdictId::Engine).is_none());
    set_plan(&mut r, Plan { engine: EngineKind::Null, direct: true, duration: Duration::from_secs(12), ..plan() });
    let v = said(&r, VerdictId::Engine).expect("engine");
    assert_eq!(v.evidence["engine"], "null");
}

/// The clean run's summary with two agents' hosts, `agent` of the second edited.
fn with_agents(edit: impl FnOnce(&mut crate::AgentSummary)) -> (Summary, Results) {
    let r = clean_run();
    let mut s = summary(&r);
    let agent = crate::AgentSummary { status: Some("completed".into()), ..Default::default() };
    let mut other = agent.clone();
    edit(&mut other);
    let host =
        |a: crate::AgentSummary| HostSummary { duration_s: 12.0, seconds: 12, agent: Some(a), ..Default::default() };
    s.hosts.insert("h1".into(), host(agent));
    s.hosts.insert("h2".into(), host(other));
    (s, r)
}

#[test]
fn host_lost_is_said_of_a_lost_agent_with_its_second_only() {
    let (s, r) = with_agents(|_| {});
    assert!(said_of(&s, &r, VerdictId::HostLost).is_none());
    let (s, r) = with_agents(|a| {
        a.status = Some("lost".into());
        a.lost_at_second = Some(5);
    });
    let v = said_of(&s, &r, VerdictId::HostLost).expect("host-lost");
    assert_eq!((v.evidence["host"].as_str(), v.evidence["lost_at_second"].as_u64()), (Some("h2"), Some(5)));
    assert!(v.message.contains("at second 5"), "{}", v.message);
}

#[test]
fn host_failed_is_said_of_a_failed_agent_only() {
    let (s, r) = with_agents(|_| {});
    assert!(said_of(&s, &r, VerdictId::HostFailed).is_none());
    let (s, r) = with_agents(|a| a.status = Some("failed".into()));
    let v = said_of(&s, &r, VerdictId::HostFailed).expect("host-failed");
    assert_eq!(v.evidence["host"], "h2");
}

#[test]
fn host_late_start_is_said_of_a_host_that_started_late_only() {
    let (s, r) = with_agents(|_| {});
    assert!(said_of(&s, &r, VerdictId::HostLateStart).is_none());
    let (s, r) = with_agents(|a| a.start_late_ns = Some(40_000_000));
    let v = said_of(&s, &r, VerdictId::HostLateStart).expect("host-late-start");
    assert_eq!(v.evidence["start_late_ns"], 40_000_000);
}

#[test]
fn clock_uncertain_is_said_beyond_one_millisecond_and_not_within_it() {
    let (s, r) = with_agents(|a| a.clock_uncertainty_ns = Some(1_000_000));
    assert!(said_of(&s, &r, VerdictId::ClockUncertain).is_none());
    let (s, r) = with_agents(|a| a.clock_uncertainty_ns = Some(4_000_000));
    let v = said_of(&s, &r, VerdictId::ClockUncertain).expect("clock-uncertain");
    assert_eq!(v.evidence["clock_uncertainty_ns"], 4_000_000);
}

#[test]
fn errors_are_said_of_failed_ios_by_kind_only() {
    let mut r = clean_run();
    assert!(said(&r, VerdictId::Errors).is_none());
    r.seconds[3] = snap(3, 1_000_000_000, vec![("read", reads()), ("write", writes(98, 2))]);
    let v = said(&r, VerdictId::Errors).expect("errors");
    assert_eq!(v.evidence["errors_by_op_and_kind"]["write"]["EROFS"], 2);
    assert_eq!(v.severity, Severity::Warning, "a completed run: a warning");
}

#[test]
fn unusable_seconds_are_seconds_in_which_every_io_failed_not_some() {
    let mut r = clean_run();
    r.seconds[3] = snap(3, 1_000_000_000, vec![("read", reads()), ("write", writes(0, 5))]);
    assert!(said(&r, VerdictId::UnusableSeconds).is_none(), "the reads of second 3 succeeded");
    r.seconds[3] = snap(3, 1_000_000_000, vec![("write", writes(0, 5))]);
    let v = said(&r, VerdictId::UnusableSeconds).expect("unusable-seconds");
    assert_eq!((v.evidence["first_second"].as_u64(), v.evidence["seconds_all_failed"].as_u64()), (Some(3), Some(1)));
    assert!(v.message.contains("(second 3)"), "{}", v.message);
}

#[test]
fn data_mismatch_is_said_of_a_block_read_back_wrong_only() {
    let r = clean_run();
    let mut s = summary(&r);
    let checked = crate::verification::VerificationSummary {
        mode: "fail".into(),
        block_len: 4096,
        blocks_checked: 100,
        verified: 100,
        ..Default::default()
    };
    s.verification = Some(checked.clone());
    assert!(said_of(&s, &r, VerdictId::DataMismatch).is_none());
    let mut bad = checked;
    bad.verified = 99;
    bad.mismatches = 1;
    bad.by_kind.insert("corrupt".into(), 1);
    s.verification = Some(bad);
    let v = said_of(&s, &r, VerdictId::DataMismatch).expect("data-mismatch");
    assert_eq!((v.evidence["mismatches"].as_u64(), v.evidence["blocks_checked"].as_u64()), (Some(1), Some(100)));
}

#[test]
fn stalls_are_whole_seconds_without_io_not_a_short_last_tick() {
    let mut r = clean_run();
    r.seconds.push(snap(12, 300_000_000, vec![("read", OpInterval::empty())]));
    assert!(said(&r, VerdictId::Stalls).is_none(), "a 0.3 s last tick is too short to call a stall");
    r.seconds[5] = snap(5, 1_000_000_000, vec![("read", OpInterval::empty()), ("write", OpInterval::empty())]);
    let v = said(&r, VerdictId::Stalls).expect("stalls");
    assert_eq!(v.evidence["seconds_without_io"], 1);
}

#[test]
fn late_ticks_are_ticks_beyond_one_and_a_half_seconds_with_the_second_named() {
    let mut r = clean_run();
    r.seconds[6].interval_ns = 1_400_000_000;
    assert!(said(&r, VerdictId::LateTicks).is_none());
    r.seconds[6].interval_ns = 3_000_000_000;
    let v = said(&r, VerdictId::LateTicks).expect("late-ticks");
    assert_eq!(
        (v.evidence["longest_second"].as_u64(), v.evidence["longest_interval_s"].as_f64()),
        (Some(6), Some(3.0))
    );
    assert!(v.message.contains("(second 6)"), "{}", v.message);
}

#[test]
fn oversubscribed_is_more_than_eight_threads_per_cpu_without_collector_priority() {
    let mut r = clean_run();
    r.hosts[0].1["collector_priority"] = "normal (no CAP_SYS_NICE)".into();
    let threads = |n: u32| {
        let mut p = Plan { direct: true, duration: Duration::from_secs(12), ..plan() };
        p.workloads[0].threads = n;
        p
    };
    set_plan(&mut r, threads(16));
    assert!(said(&r, VerdictId::Oversubscribed).is_none(), "8 per CPU of 2");
    set_plan(&mut r, threads(17));
    let v = said(&r, VerdictId::Oversubscribed).expect("oversubscribed");
    assert_eq!((v.evidence["threads"].as_u64(), v.evidence["cpus"].as_u64()), (Some(17), Some(2)));
}

#[test]
fn per_file_incomplete_is_said_of_io_a_full_ring_left_out_only() {
    let mut r = clean_run();
    assert!(said(&r, VerdictId::PerFileIncomplete).is_none());
    r.seconds[2].not_broken_down = 77;
    let v = said(&r, VerdictId::PerFileIncomplete).expect("per-file-incomplete");
    assert_eq!(v.evidence["ios_not_broken_down"], 77);
}

#[test]
fn skipped_picks_are_said_of_picks_that_found_nothing_only() {
    let creates = |skipped: u64| {
        let mut d = writes(10, 0);
        d.skipped = skipped;
        d
    };
    let mut r = clean_run();
    r.seconds[1].ops.push(OpSeries { workload: "randrw".into(), op: Op::Create, data: creates(0) });
    assert!(said(&r, VerdictId::SkippedPicks).is_none());
    r.seconds[1].ops.last_mut().unwrap().data = creates(4);
    let v = said(&r, VerdictId::SkippedPicks).expect("skipped-picks");
    assert_eq!((v.evidence["op"].as_str(), v.evidence["skipped"].as_u64()), (Some("create"), Some(4)));
}

/// The clean run's summary with a probed target `server`.
fn with_target(t: TargetSummary) -> (Summary, Results) {
    let r = clean_run();
    let mut s = summary(&r);
    s.target.insert("server".into(), t);
    (s, r)
}

#[test]
fn probe_dropped_is_said_of_events_the_samplers_missed_only() {
    let (s, r) = with_target(TargetSummary::default());
    assert!(said_of(&s, &r, VerdictId::ProbeDropped).is_none());
    let (s, r) = with_target(TargetSummary { probe_dropped: 9, ..Default::default() });
    let v = said_of(&s, &r, VerdictId::ProbeDropped).expect("probe-dropped");
    assert_eq!(v.evidence["events_dropped"], 9);
}

#[test]
fn target_cache_is_said_when_the_targets_disks_saw_under_a_tenth_of_the_reads() {
    let disk = |reads: u64| {
        let mut t = TargetSummary::default();
        t.disks.insert("sdb".into(), DiskSummary { reads, ..Default::default() });
        t
    };
    // The clean run reads 12,000 times.
    let (s, r) = with_target(disk(1_200));
    assert!(said_of(&s, &r, VerdictId::TargetCache).is_none(), "a tenth reached the disk");
    let (s, r) = with_target(disk(1_199));
    let v = said_of(&s, &r, VerdictId::TargetCache).expect("target-cache");
    assert_eq!(
        (v.evidence["target_disk_reads"].as_u64(), v.evidence["client_reads"].as_u64()),
        (Some(1_199), Some(12_000))
    );
}

#[test]
fn rate_not_held_is_silent_when_the_rate_asked_was_reached() {
    // The clean run does 1,100 IOPS: a rate of 1,100 asked is held; 1,200 is not.
    let mut r = clean_run();
    let rate = |iops: u64| Plan { direct: true, duration: Duration::from_secs(12), rate_iops: Some(iops), ..plan() };
    set_plan(&mut r, rate(1_100));
    assert!(said(&r, VerdictId::RateNotHeld).is_none());
    set_plan(&mut r, rate(1_200));
    let v = said(&r, VerdictId::RateNotHeld).expect("rate-not-held");
    assert_eq!(
        (v.evidence["asked_iops"].as_u64(), v.evidence["attempted_iops"].as_f64()),
        (Some(1_200), Some(1_100.0))
    );
}

#[test]
fn client_cache_is_said_of_buffered_reads_faster_than_a_device_not_of_device_speed_ones() {
    let mut r = clean_run();
    // Buffered now, with a working set far beyond memory (no working-set verdict).
    set_plan(&mut r, Plan { duration: Duration::from_secs(12), size_bytes: 1 << 40, ..plan() });
    let v = said(&r, VerdictId::ClientCache).expect("client-cache: reads of 2 µs");
    assert_eq!(v.evidence["reads_below_floor_pct"], 99.0);
    // The same reads at device speed (80 µs and more): silent.
    for x in &mut r.seconds {
        x.ops[0].data.latency_ns = hist(&[(80_000, 900), (100_000, 100)]);
    }
    assert!(said(&r, VerdictId::ClientCache).is_none());
}

#[test]
fn working_set_cached_is_said_of_buffered_io_on_a_working_set_that_fits_in_memory() {
    let mut r = clean_run();
    // 256 MiB against the host's 23.4 GiB, buffered: said.
    set_plan(&mut r, Plan { duration: Duration::from_secs(12), ..plan() });
    let v = said(&r, VerdictId::WorkingSetCached).expect("working-set-cached");
    assert_eq!(v.evidence["working_set_bytes"], 256u64 << 20);
    // The same working set with direct I/O: silent.
    set_plan(&mut r, Plan { direct: true, duration: Duration::from_secs(12), ..plan() });
    assert!(said(&r, VerdictId::WorkingSetCached).is_none());
}

#[test]
fn working_set_cached_on_a_probed_server_counts_the_working_set_of_every_host() {
    // Four hosts with 256 MiB each (each its own files): the server holds 1 GiB.
    let hosts: Vec<ioscope_workload::host::HostSpec> = (1..=4)
        .map(|i| ioscope_workload::host::HostSpec {
            name: format!("c{i}"),
            kind: ioscope_workload::host::HostKind::Agent { host: format!("10.0.0.{i}"), port: 7000 },
            identity: None,
            dir: None,
            target: None,
            bin: None,
            token_file: None,
            ca: None,
        })
        .collect();
    let p = Plan { hosts, duration: Duration::from_secs(12), ..plan() };
    let memory = |available_mib: u64| {
        let mut t = TargetSummary::default();
        let m = (available_mib << 20) as f64;
        t.memory_bytes.insert("available".into(), crate::MeanMax { mean: m, max: m });
        t
    };
    let (s, r) = with_target(memory(600));
    // 600 MiB available holds one host's 256 MiB but not the four hosts' 1 GiB: silent.
    assert!(crate::client::target_memory(&s, &r, &p).is_empty());
    let one = crate::client::target_memory(&s, &r, &plan());
    assert!(one.iter().any(|v| v.is(VerdictId::WorkingSetCached)), "one host's 256 MiB fits: {one:?}");
    let (s, r) = with_target(memory(2048));
    let v = crate::client::target_memory(&s, &r, &p);
    assert_eq!(v[0].evidence["working_set_bytes"], 1u64 << 30, "{v:?}");
    assert!(v[0].message.contains("working set 1 GiB (4 hosts x 256 MiB) fits in target server's memory"), "{v:?}");
}

/// `n` seconds of reads whose IOPS and p50 latency second `i` has.
fn paced_with(n: u32, second: impl Fn(u32) -> (u64, u64)) -> Vec<Snapshot> {
    (0..n)
        .map(|i| {
            let (ops, p50_ns) = second(i);
            let mut d = writes(ops, 0);
            d.latency_ns = hist(&[(p50_ns, ops)]);
            snap(i, 1_000_000_000, vec![("read", d)])
        })
        .collect()
}

#[test]
fn not_steady_names_the_figure_that_failed_the_rule_with_its_value_and_limit() {
    // The seed's case: IOPS from 9,480 to 10,520 (within the rule), p50 latency swinging
    // between 100 µs and 1 ms each second (far beyond it).
    let mut r = clean_run();
    let iops = |i: u32| if i % 2 == 0 { 9_480 } else { 10_520 };
    r.seconds = paced_with(30, |i| (iops(i), if i % 2 == 0 { 100_000 } else { 1_000_000 }));
    let v = said(&r, VerdictId::NotSteady).expect("not-steady");
    assert_eq!(v.evidence["failed_measure"], "latency_p50_ns");
    assert_eq!(v.evidence["failed_figure"], "range_pct");
    assert_eq!(v.evidence["failed_limit"], 50.0);
    assert!(v.evidence["failed_value"].as_f64().is_some_and(|x| x > 150.0), "{:?}", v.evidence);
    assert!(v.message.contains("failed on p50 latency: range 16"), "{}", v.message);
    assert!(v.message.contains("% of the mean (rule ≤ 50%)"), "{}", v.message);
    assert!(!v.message.contains("IOPS ranged"), "no figure within the rule is quoted as the reason: {}", v.message);
    assert!(!v.message.contains("on IOPS"), "{}", v.message);
    // A ramp: IOPS climbing 5% a second fails the slope, named with its sign.
    r.seconds = paced_with(30, |i| (10_000 + 500 * u64::from(i), 100_000));
    let v = said(&r, VerdictId::NotSteady).expect("not-steady");
    assert_eq!(
        (v.evidence["failed_measure"].as_str(), v.evidence["failed_figure"].as_str()),
        (Some("iops"), Some("slope_pct_per_s"))
    );
    assert!(v.message.contains("failed on IOPS: slope +"), "{}", v.message);
    assert!(v.message.contains("%/s (rule ≤ 2%/s)"), "{}", v.message);
}

#[test]
fn not_steady_is_silent_for_a_run_of_the_same_shape_whose_latency_holds() {
    let mut r = clean_run();
    let iops = |i: u32| if i % 2 == 0 { 9_480 } else { 10_520 };
    r.seconds = paced_with(30, |i| (iops(i), 100_000));
    assert!(said(&r, VerdictId::NotSteady).is_none());
    assert_eq!(summary(&r).steady[0].state, "steady");
}

/// The clean run's 1,000 reads a second at `read_ns` each, by 18 threads, at `asked` IOPS,
/// with `skipped` create picks a second that found nothing to act on.
fn rate_run(asked: u64, skipped: u64, read_ns: u64) -> Summary {
    summary(&rate_results(asked, skipped, read_ns))
}

fn rate_results(asked: u64, skipped: u64, read_ns: u64) -> Results {
    let mut r = clean_run();
    let mut p = Plan { direct: true, duration: Duration::from_secs(12), rate_iops: Some(asked), ..plan() };
    p.workloads[0].threads = 18;
    set_plan(&mut r, p);
    for x in &mut r.seconds {
        x.ops.retain(|o| o.op == Op::Read);
        x.ops[0].data.latency_ns = hist(&[(read_ns, 1000)]);
        x.ops[0].data.service_ns = hist(&[(read_ns, 1000)]);
        let mut d = writes(0, 0);
        d.skipped = skipped;
        x.ops.push(OpSeries { workload: "randrw".into(), op: Op::Create, data: d });
    }
    r
}

#[test]
fn rate_not_held_whose_shortfall_is_the_skipped_picks_says_so_at_info_and_blames_no_saturation() {
    // examples/s3-mixed.toml's case: the schedule asks 1,100/s; 100 picks a second are
    // creates of names that exist, skipped; the rest at 1 ms.
    let s = rate_run(1_100, 100, 1_000_000);
    let v = s.verdicts.iter().find(|v| v.is(VerdictId::RateNotHeld)).expect("rate-not-held");
    assert_eq!(v.severity, Severity::Info);
    assert!(!v.message.contains("saturated"), "{}", v.message);
    assert!(v.message.contains("100 per second of them found nothing to act on and were skipped"), "{}", v.message);
    assert!(v.message.contains("create 1,200"), "{}", v.message);
    assert_eq!(
        (v.evidence["skipped_picks_per_s"].as_f64(), v.evidence["picks_iops"].as_f64()),
        (Some(100.0), Some(1_100.0))
    );
    // The same with 2% of the reads started 100 ms late: still the skipped picks, no
    // saturation, and the late starts said, as a warning.
    let mut r = rate_results(1_100, 100, 1_000_000);
    for x in &mut r.seconds {
        x.ops[0].data.latency_ns = hist(&[(1_000_000, 980), (100_000_000, 20)]);
    }
    let s = summary(&r);
    let v = s.verdicts.iter().find(|v| v.is(VerdictId::RateNotHeld)).expect("rate-not-held");
    assert_eq!(v.severity, Severity::Warning);
    assert!(v.message.contains("were skipped") && !v.message.contains("saturated"), "{}", v.message);
    assert!(v.message.contains("I/Os started up to about 98.9 ms late"), "{}", v.message);
    // Without skipped picks, the same run meets its rate: silent.
    let s = rate_run(1_000, 0, 1_000_000);
    assert!(!s.verdicts.iter().any(|v| v.is(VerdictId::RateNotHeld)), "{:#?}", s.verdicts);
}

#[test]
fn rate_not_held_blames_saturation_only_when_the_latency_shows_the_ios_in_flight_cannot_carry_the_rate() {
    // 1,000 IOPS of the 2,000 asked at 1 ms: 18 threads carry 18,000/s at that latency.
    let s = rate_run(2_000, 0, 1_000_000);
    let v = s.verdicts.iter().find(|v| v.is(VerdictId::RateNotHeld)).expect("rate-not-held");
    assert_eq!(v.severity, Severity::Warning);
    assert!(v.message.starts_with("the target rate of 2,000 IOPS was not reached (1,000 IOPS)"), "{}", v.message);
    assert!(!v.message.contains("saturated"), "{}", v.message);
    assert!(v.message.contains("not for the storage's latency"), "{}", v.message);
    assert_eq!(v.evidence["capacity_iops"], 18_000.0);
    // At 20 ms a read, 18 in flight carry 900/s: the storage is the limit.
    let s = rate_run(2_000, 0, 20_000_000);
    let v = s.verdicts.iter().find(|v| v.is(VerdictId::RateNotHeld)).expect("rate-not-held");
    assert!(v.message.contains("the storage or ioscope is saturated (at a mean service time of"), "{}", v.message);
}
