//! Runs from several hosts: per-host rows from each host's own histograms, totals merged
//! from all of them, the agents' status and clocks, and the host that differs from the
//! others beyond noise named in the notes.

use super::*;

/// A second of `host`: `ops` 4 KiB reads, `slow` of them at `slow_ns` and the rest at `fast_ns`.
fn host_second(host: &str, second: u32, ops: u64, fast_ns: u64, slow: u64, slow_ns: u64) -> Snapshot {
    let d = OpInterval {
        counts: Counts { ops, bytes: 4096 * ops, errors: 0 },
        errors_by_kind: Vec::new(),
        skipped: 0,
        latency_ns: hist(&[(fast_ns, ops - slow), (slow_ns, slow)]),
        service_ns: hist(&[(fast_ns, ops)]),
        size_bytes: hist(&[(4096, ops)]),
        offset_bytes: hist(&[(0, ops)]),
    };
    Snapshot { host: host.into(), ..snap(second, 1_000_000_000, vec![("read", d)]) }
}

/// A run of hosts h1..hN; `second(host index, second)` makes each host's seconds.
fn run_of(hosts: usize, seconds: u32, second: impl Fn(usize, u32) -> Snapshot) -> Results {
    let mut r = results(Status::Completed);
    r.hosts = (1..=hosts).map(|i| (format!("h{i}"), serde_json::json!({"cpus": 2}))).collect();
    r.seconds = (0..seconds).flat_map(|s| (0..hosts).map(move |h| (h, s))).map(|(h, s)| second(h, s)).collect();
    r.run.info.planned_duration_ns = u64::from(seconds) * 1_000_000_000;
    r
}

fn agent(index: u32, status: &str) -> serde_json::Value {
    serde_json::json!({"index": index, "address": format!("10.99.0.{}", 11 + index), "transport": "ssh",
        "status": status, "detail": null, "clock_offset_ns": -1234, "clock_uncertainty_ns": 40_000,
        "rtt_ns": 80_000, "lost_at_second": null, "plan_json": serde_json::to_string(&plan()).unwrap()})
}

#[test]
fn totals_merge_every_hosts_histograms_and_never_average_their_percentiles() {
    // h1: 1000 reads at 100 µs; h2: 1000 reads, 10% of them at 10 ms.
    let r = run_of(2, 3, |h, s| match h {
        0 => host_second("h1", s, 1000, 100_000, 0, 0),
        _ => host_second("h2", s, 1000, 100_000, 100, 10_000_000),
    });
    let s = summarize(&r, Path::new("r"));
    let (h1, h2) = (&s.hosts["h1"], &s.hosts["h2"]);
    let l1 = h1.latency_ns.as_ref().unwrap();
    let l2 = h2.latency_ns.as_ref().unwrap();
    // Each host's percentiles are its own histogram's.
    assert_eq!((l1.p50, l1.p99, l1.max), (100_000, 100_000, 100_000), "clamped to the exact max");
    assert!(l2.p99 > 9_900_000, "{l2:?}");
    // The total's are those of all hosts' histograms merged: 5% of the reads at 10 ms put
    // its p99 at 10 ms (an average of the hosts' p99s would say about 5 ms).
    let mut all = Histogram::new();
    for x in &r.seconds {
        all.merge(&x.ops[0].data.latency_ns);
    }
    let total = s.total_latency_ns.as_ref().unwrap();
    assert_eq!(total, &Distribution::of(&all).unwrap());
    assert!(total.p90.abs_diff(100_000) <= 500, "p90 of the merged reads is the fast mode: {total:?}");
    assert!(total.p99 > 9_900_000, "{total:?}");
    assert!(total.p99.abs_diff((l1.p99 + l2.p99) / 2) > 4_000_000, "not an average of percentiles");
    assert_eq!(s.ops["read"].percentiles(StatId::Latency).unwrap(), total, "the read row is the same merge");
    // Counters add up, rates are per each host's own measured time.
    assert_eq!(h1.totals.ops + h2.totals.ops, s.total.ops);
    assert_eq!((h1.totals.iops, h1.seconds, h1.duration_s), (1000.0, 3, 3.0));
    assert_eq!(s.by_host["h2"], h2.totals);

    let text = render_text(&s);
    let row = |label: &str| text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("{label}: {text}"));
    assert!(row("total ").contains(&format::ns(total.p99)), "{text}");
    assert!(row("host h1 ").contains("100 µs"), "{text}");
    assert!(row("host h2 ").contains(&format::ns(l2.p99)), "{text}");
    assert!(!text.contains("clock offset"), "no agents, no agent table: {text}");
    let json = serde_json::to_value(&s).unwrap();
    assert!(validate(&json).is_empty(), "{:#?}", validate(&json));
    assert_eq!(json["hosts"]["h2"]["latency_ns"]["p99"], l2.p99);
    assert_eq!(json["total_latency_ns"]["p99"], total.p99);
}

#[test]
fn a_local_run_of_one_host_has_no_host_rows_and_summarizes_as_before() {
    let s = summarize(&results(Status::Completed), Path::new("r"));
    assert!(s.hosts.is_empty() && s.total_latency_ns.is_none());
    let json = serde_json::to_value(&s).unwrap();
    assert!(json.get("hosts").is_none() && json.get("total_latency_ns").is_none(), "{json:#}");
    let text = render_text(&s);
    assert!(!text.contains("host h1") && !text.contains("clock offset"), "{text}");
    let total = text.lines().find(|l| l.starts_with("total")).unwrap();
    assert!(!total.contains("µs"), "the total row has no latency, as before: {total}");
}

#[test]
fn agents_status_clock_offset_and_a_lost_host_are_shown_and_noted() {
    let mut r = run_of(4, 5, |h, s| host_second(&format!("h{}", h + 1), s, 1000, 100_000, 0, 0));
    // h3 was lost at second 3; h2's clock is known only to ±2.1 ms.
    r.seconds.retain(|x| !(x.host == "h3" && x.second >= 3));
    for (i, (host, config)) in r.hosts.iter_mut().enumerate() {
        config["agent"] = agent(i as u32, if host == "h3" { "lost" } else { "completed" });
    }
    r.hosts[2].1["agent"]["lost_at_second"] = 3.into();
    r.hosts[2].1["agent"]["detail"] = "no answer from the agent for 10 s (link down?)".into();
    r.hosts[1].1["agent"]["clock_uncertainty_ns"] = 2_100_000.into();
    // h4 started 12 ms after the common instant; h1 within the 1 ms the clocks allow.
    for (i, late) in [(3usize, 12_000_000i64), (0, 400_000)] {
        r.hosts[i].1["agent"]["planned_start_unix_ns"] = 1_700_000_000_000_000_000i64.into();
        r.hosts[i].1["agent"]["started_unix_ns"] = (1_700_000_000_000_000_000i64 + late).into();
    }
    let s = summarize(&r, Path::new("r"));
    let a = s.hosts["h3"].agent.as_ref().unwrap();
    assert_eq!((a.status.as_deref(), a.lost_at_second, a.clock_offset_ns), (Some("lost"), Some(3), Some(-1234)));
    assert_eq!(s.hosts["h3"].seconds, 3);
    for want in [
        "host h3 was lost at second 3: no answer from the agent for 10 s (link down?); its series end there and \
         the totals after that second are of the other hosts",
        "host h2's clock offset is known to ±2.1 ms: its seconds may be shifted by that much",
        "host h4 started 12.0 ms after the other hosts' common start instant (opening its engines took longer than \
         the coordinator allowed): its first second holds less load",
    ] {
        assert!(s.notes.iter().any(|n| n == want), "want {want:?} in {:#?}", s.notes);
    }
    assert!(!s.notes.iter().any(|n| n.contains("h1's clock")), "±40 µs is no note: {:#?}", s.notes);
    assert!(!s.notes.iter().any(|n| n.contains("host h1 started")), "0.4 ms late is no note: {:#?}", s.notes);
    assert!(!s.notes.iter().any(|n| n.contains("differs")), "equal hosts: {:#?}", s.notes);

    let text = render_text(&s);
    let line = |start: &str| text.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start}: {text}"));
    assert!(text.contains("\n\nhost  ") && line("host  ").contains("clock offset"), "{text}");
    let h3 = text.lines().find(|l| l.starts_with("h3 ")).unwrap_or_else(|| panic!("{text}"));
    for part in ["lost", "10.99.0.13 (ssh)", "-1.2 µs ± 40.0 µs", "80.0 µs", "second 3"] {
        assert!(h3.contains(part), "{part} in {h3:?}\n{text}");
    }
    assert!(line("h2 ").contains("± 2.1 ms"), "{text}");
    let json = serde_json::to_value(&s).unwrap();
    assert!(validate(&json).is_empty(), "{:#?}", validate(&json));
    assert_eq!(json["hosts"]["h3"]["agent"]["lost_at_second"], 3);
    assert_eq!(serde_json::from_value::<Summary>(json.clone()).unwrap(), s);
    // The schema describes the host rows: wrong ones are refused.
    let mut bad = json;
    bad["hosts"]["h1"]["agent"]["clock_uncertainty_ns"] = (-1).into();
    bad["hosts"]["h2"].as_object_mut().unwrap().remove("latency_ns");
    bad["hosts"]["h4"]["iops"] = "fast".into();
    assert_eq!(validate(&bad).len(), 3, "{:#?}", validate(&bad));
}

#[test]
fn a_damaged_agent_object_still_summarizes() {
    let mut r = run_of(2, 3, |h, s| host_second(&format!("h{}", h + 1), s, 100, 100_000, 0, 0));
    r.hosts[0].1["agent"] = serde_json::json!({"status": 7, "clock_offset_ns": "x"});
    r.hosts[1].1["agent"] = serde_json::json!({"index": 1, "plan_json": "not a plan"});
    let s = summarize(&r, Path::new("r"));
    assert!(s.hosts["h1"].agent.is_none(), "unreadable: no agent row");
    assert_eq!(s.hosts["h2"].agent.as_ref().unwrap().index, Some(1));
    render_text(&s);
}

/// Four hosts, 10 s: per second, host `h` does `ops(h, s)` reads with latencies `lat(h)`.
fn four_hosts(ops: impl Fn(usize, u32) -> u64, lat: impl Fn(usize) -> (u64, u64, u64)) -> Results {
    run_of(4, 10, |h, s| {
        let (fast, slow, slow_ns) = lat(h);
        let n = ops(h, s);
        host_second(&format!("h{}", h + 1), s, n, fast, slow.min(n), slow_ns)
    })
}

fn host_notes(r: &Results) -> Vec<String> {
    summarize(r, Path::new("r")).notes.into_iter().filter(|n| n.contains("differs from the other hosts")).collect()
}

fn four(ops: impl Fn(usize, u32) -> u64, lat: impl Fn(usize) -> (u64, u64, u64)) -> Vec<String> {
    host_notes(&four_hosts(ops, lat))
}

#[test]
fn a_host_with_a_fifth_of_the_throughput_per_thread_is_named_with_its_numbers() {
    // The one client behind a bad cable: h4 moves a tenth of the others' bytes.
    let wobble = |s: u32| if s % 2 == 0 { 50 } else { 0 };
    let notes = four(|h, s| if h == 3 { 100 + wobble(s) / 10 } else { 1000 + wobble(s) }, |_| (100_000, 0, 0));
    assert_eq!(notes.len(), 1, "{notes:#?}");
    let n = &notes[0];
    assert!(n.starts_with("host h4 differs from the other hosts beyond noise over the 10 s they all ran: "), "{n}");
    // Bytes per second per thread (2 threads): 105 x 4096 / 2 against 1025 x 4096 / 2.
    assert!(n.contains("0.21 MB/s per thread against the median host's 2.10 MB/s (-90%"), "{n}");
    assert!(!n.contains("latency"), "{n}");
    // Without a readable plan the threads are unknown: per host, and said so.
    let mut r = four_hosts(|h, _| if h == 3 { 100 } else { 1000 }, |_| (100_000, 0, 0));
    r.run.info.plan_json = "{}".into();
    let notes = host_notes(&r);
    assert!(notes[0].contains(": 0.41 MB/s against the median host's 4.10 MB/s (-90%"), "{notes:#?}");
}

#[test]
fn a_host_with_higher_latency_is_named_with_its_percentiles() {
    // Same throughput; h2's reads take 3x as long at the median and 10x at p99.
    let notes = four(|_, _| 1000, |h| if h == 1 { (300_000, 20, 1_000_000) } else { (100_000, 5, 200_000) });
    assert_eq!(notes.len(), 1, "{notes:#?}");
    let n = &notes[0];
    assert!(n.starts_with("host h2 differs"), "{n}");
    assert!(n.contains("latency p50 300 µs against the median host's 100 µs (3.0x), p99 1.0 ms against"), "{n}");
    assert!(!n.contains("per thread"), "{n}");
}

#[test]
fn differences_within_noise_name_no_host() {
    // h1 is 25% faster on average but its seconds swing wildly: within 3 standard errors.
    let swing = [300u64, 1500, 400, 2000, 200, 1800, 600, 1700, 300, 1700];
    let notes = four(|h, s| if h == 0 { swing[s as usize] } else { 850 + u64::from(s % 3) * 50 }, |_| (100_000, 0, 0));
    assert!(notes.is_empty(), "{notes:#?}");
    // Steady hosts 10% apart: real but small, no note.
    let notes = four(|h, _| if h == 2 { 900 } else { 1000 }, |_| (100_000, 0, 0));
    assert!(notes.is_empty(), "{notes:#?}");
    // A p99 twice the others' made of 2 I/Os a second (20 in all, under the 2,000 a p99
    // needs to rest on 20): no note.
    let notes = four(|_, _| 100, |h| if h == 3 { (100_000, 2, 5_000_000) } else { (100_000, 0, 0) });
    assert!(notes.is_empty(), "{notes:#?}");
    // Two hosts: no majority to tell which one is odd.
    let r =
        run_of(2, 10, |h, s| host_second(&format!("h{}", h + 1), s, if h == 0 { 100 } else { 1000 }, 100_000, 0, 0));
    assert!(!summarize(&r, Path::new("r")).notes.iter().any(|n| n.contains("differs")));
}

#[test]
fn a_host_that_sat_out_the_first_step_of_a_hosts_staircase_adds_up_with_the_others_and_is_not_named() {
    // h4 joins at step 1: its own plan has 0 threads in step 0, where it delivers empty
    // seconds to keep the timeline aligned.
    let mut r = run_of(4, 20, |h, s| {
        let idle = h == 3 && s < 10;
        Snapshot { step: s / 10, ..host_second(&format!("h{}", h + 1), s, if idle { 0 } else { 1000 }, 100_000, 0, 0) }
    });
    let step = |first: u32| Plan {
        steps: ioscope_workload::plan::Steps { for_threads: vec![first, 2], ..Default::default() },
        ..plan()
    };
    for (i, (host, config)) in r.hosts.iter_mut().enumerate() {
        config["agent"] = agent(i as u32, "completed");
        let own = if host == "h4" { step(0) } else { step(2) };
        config["agent"]["plan_json"] = serde_json::to_string(&own).unwrap().into();
    }
    let s = summarize(&r, Path::new("r"));
    let h4 = &s.hosts["h4"];
    // Over the run's 20 s, as the total and the UI's by-host averages: the rows add up.
    assert_eq!((h4.seconds, h4.duration_s, h4.totals.iops), (20, 20.0, 500.0));
    assert_eq!(s.by_host["h4"], h4.totals);
    assert_eq!(s.hosts["h1"].totals.iops, 1000.0);
    let rows: f64 = s.hosts.values().map(|h| h.totals.iops).sum();
    assert_eq!(rows, s.total.iops, "the host rows add up to the total");
    assert!(!s.notes.iter().any(|n| n.contains("differs")), "{:#?}", s.notes);
    // Without its plan saying it sat out, the empty seconds would be slow ones: the check
    // above is what keeps h4 from being named.
    r.hosts[3].1["agent"]["plan_json"] = serde_json::to_string(&step(2)).unwrap().into();
    let s = summarize(&r, Path::new("r"));
    assert_eq!(s.hosts["h4"].seconds, 20);
    assert!(s.notes.iter().any(|n| n.starts_with("host h4 differs")), "{:#?}", s.notes);
}
