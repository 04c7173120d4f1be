//! Methodology verdicts: what limits how far a run's numbers can be trusted, worked out
//! from the summary alone (status, measured seconds, plan, hosts' configuration), each
//! with the figures that triggered it.

use crate::format;
use crate::verdict::{Severity, Verdict};
use crate::Summary;
use ioscope_workload::layout::FileSizes;
use ioscope_workload::plan::{Plan, SyncMode};

/// Runs shorter than this many measured seconds get a "too short" note.
pub const SHORT_RUN_SECONDS: u64 = 10;
/// More worker threads per CPU than this, with a collector at normal priority, may delay ticks.
const OVERSUBSCRIBED_PER_CPU: u64 = 8;
/// A tick longer than this many seconds is a gap (the collector was held up).
const LATE_TICK_S: f64 = 1.5;
/// A tick shorter than this many seconds is too short to call a stall.
const SHORT_TICK_S: f64 = 0.5;
/// An open-loop run that achieves less than this share of its target rate is saturated.
pub(crate) const RATE_SHORTFALL: f64 = 0.95;
/// An open-loop schedule fell behind when an operation's response-time p99 is at least
/// this many times its service-time p99...
const BEHIND_FACTOR: u64 = 2;
/// ...and at least this much above it (microseconds of scheduling jitter are not falling
/// behind).
const BEHIND_MIN_NS: u64 = 1_000_000;
/// A host's clock offset known less well than this (half its best round trip) is said.
const CLOCK_UNCERTAIN_NS: u64 = 1_000_000;
/// A host's throughput per thread is named when it differs from the median host's by more
/// than this share...
const HOST_THROUGHPUT_SHARE: f64 = 0.2;
/// ...and by more than this many standard errors of its own per-second values.
const HOST_NOISE_SE: f64 = 3.0;
/// A host's latency p50 or p99 is named at this many times the median host's...
const HOST_LATENCY_FACTOR: f64 = 1.5;
/// ...when at least this many of its transfers (and of the median host's) lie beyond the
/// percentile: fewer, and a percentile is one unlucky I/O.
const HOST_LATENCY_TAIL: u64 = 20;
/// Hosts are compared over at least this many seconds that all of them ran.
const HOST_MIN_SECONDS: usize = 3;

pub(crate) fn notes(s: &Summary) -> Vec<Verdict> {
    let mut notes = Vec::new();
    let plan: Option<Plan> = serde_json::from_value(s.workload.plan.clone()).ok();

    match s.status.as_str() {
        "interrupted" => notes.push(
            Verdict::new(
                "interrupted",
                Severity::Warning,
                format!(
                    "the run was interrupted ({}): the numbers cover only the {} s measured before it stopped",
                    s.status_detail.as_deref().unwrap_or("no detail recorded"),
                    format::num(s.duration_s)
                ),
            )
            .with("measured_s", s.duration_s)
            .with("planned_s", s.planned_duration_s),
        ),
        "failed" => notes.push(
            Verdict::new(
                "failed",
                Severity::Error,
                format!(
                    "the run failed ({}): the numbers cover only the {} s measured before it stopped",
                    s.status_detail.as_deref().unwrap_or("no detail recorded"),
                    format::num(s.duration_s)
                ),
            )
            .with("measured_s", s.duration_s)
            .with("planned_s", s.planned_duration_s),
        ),
        "running" => notes.push(
            Verdict::new(
                "running",
                Severity::Info,
                "the run is still running: these are the numbers so far, and until it ends its latest seconds \
                 are also in the -wal file beside the results file: to take the results elsewhere now, copy both \
                 files (or `ioscope export` them)",
            )
            .with("measured_s", s.duration_s),
        ),
        _ => {}
    }

    host_status_notes(s, &mut notes);

    // Measured time, not rows: a late tick (a stopped process) is one row of several seconds.
    let measured_s = s.seconds.max(s.duration_s.round() as u64);
    if s.seconds == 0 {
        notes.push(Verdict::new("no-data", Severity::Error, "no second was recorded: there is nothing to summarize"));
    } else if measured_s < SHORT_RUN_SECONDS
        && matches!(s.status.as_str(), "completed" | "running")
        && !s.steady.iter().any(|x| x.ended_early)
    {
        // (An interrupted or failed run's note above already says how long it measured.)
        notes.push(
            Verdict::new(
                "too-short",
                Severity::Warning,
                format!(
                    "only {} s measured: too short to tell whether the result is steady (run for minutes, not seconds)",
                    format::num(s.duration_s)
                ),
            )
            .with("measured_s", s.duration_s)
            .with("minimum_s", SHORT_RUN_SECONDS),
        );
    }
    // Warm-up is planned and excluded by design: compare with the time planned for measuring;
    // a missing quarter second or more is said (a 30 s run that measured 29 s says so).
    let plan_warmup_s: f64 = plan.as_ref().map_or(0.0, |p| p.steps().iter().map(|st| st.warmup.as_secs_f64()).sum());
    let auto_warmup_s: f64 = s.steady.iter().filter_map(|x| x.auto_warmup_s).map(f64::from).sum();
    // A run that ended once steady (`until_steady`) is short by design; its steady line says so.
    let ended_steady = s.steady.iter().any(|x| x.ended_early);
    // With repeats, the plan's time once per repeat that ran (--until-ci may stop early).
    let planned_repeats = plan.as_ref().map_or(1, |p| p.max_repeats()).max(1);
    let ran = s.repeats.as_ref().map_or(1, |r| r.count);
    let planned_measured_s =
        (s.planned_duration_s / f64::from(planned_repeats) - plan_warmup_s) * f64::from(ran) - auto_warmup_s;
    let warmup_s = plan_warmup_s * f64::from(ran) + auto_warmup_s;
    if s.status == "completed" && !ended_steady && planned_measured_s > 0.0 && s.duration_s < planned_measured_s - 0.25
    {
        let warm = if warmup_s > 0.0 {
            format!(" (warm-up of {} s not counted)", format::num(warmup_s))
        } else {
            String::new()
        };
        // A completed run stores every second it collected except a last one in which no
        // I/O completed (a pattern's blank column, workers that ended early): say so when
        // the missing time is such a tail, so the shortfall reads as what it is.
        let stored_to_s = s.samples.last().map_or(0, |x| u64::from(x.second) + 1);
        // (Repeats leave seconds between them without rows: no tail to tell apart.)
        let tail_s = match s.repeats {
            Some(_) => 0,
            None => (s.planned_duration_s.round() as u64).saturating_sub(stored_to_s),
        };
        let blank = if drawing(plan.as_ref()) { " (the pattern's blank columns)" } else { "" };
        let why = match tail_s {
            0 => String::new(),
            1 => format!(": the last second completed no I/O{blank} and has no row"),
            n => format!(": the last {n} s completed no I/O{blank} and have no row"),
        };
        notes.push(
            Verdict::new(
                "shorter-than-planned",
                Severity::Info,
                format!(
                    "measured {} s of the planned {} s{warm}{why}",
                    format::num(s.duration_s),
                    format::num(planned_measured_s)
                ),
            )
            .with("measured_s", s.duration_s)
            .with("planned_measured_s", planned_measured_s)
            .with("seconds_without_io_at_end", tail_s),
        );
    }

    if let Some(p) = &plan {
        match p.engine.spec().note {
            Some(note) => notes.push(Verdict::new("engine", Severity::Info, note).with("engine", p.engine.spec().name)),
            None => cache_notes(s, p, &mut notes),
        }
    }

    // Data mismatches (op verify) have their own verdict, data-mismatch: the reads that
    // found them succeeded.
    let mismatches = s.ops.get("verify").map_or(0, |o| o.errors);
    let io_errors = s.total.errors.saturating_sub(mismatches);
    let attempts = s.total.ops.saturating_add(io_errors);
    if io_errors > 0 {
        let per_op: Vec<String> = s
            .ops
            .iter()
            .filter(|(name, o)| o.errors > 0 && *name != "verify")
            .map(|(name, o)| {
                let mut kinds: Vec<(&String, &u64)> = o.errors_by_kind.iter().collect();
                kinds.sort_by_key(|(k, n)| (std::cmp::Reverse(**n), *k));
                match kinds.first() {
                    Some((k, _)) if kinds.len() == 1 => format!("{name} {} {k}", format::int(o.errors)),
                    Some((k, n)) => format!("{name} {} (most {k}: {})", format::int(o.errors), format::int(**n)),
                    None => format!("{name} {}", format::int(o.errors)),
                }
            })
            .collect();
        let mut by_kind = serde_json::Map::new();
        for (name, o) in s.ops.iter().filter(|(name, o)| o.errors > 0 && *name != "verify") {
            let kinds: serde_json::Map<String, serde_json::Value> =
                o.errors_by_kind.iter().map(|(k, n)| (k.clone(), (*n).into())).collect();
            by_kind.insert(name.clone(), kinds.into());
        }
        notes.push(
            Verdict::new(
                "errors",
                Severity::Error,
                format!(
                    "{} I/O errors ({} of {} attempts: {}): failed operations count as errors, not in IOPS or latency",
                    format::int(io_errors),
                    format::pct(io_errors as f64 / attempts as f64),
                    format::int(attempts),
                    per_op.join(", ")
                ),
            )
            .with("errors", io_errors)
            .with("attempts", attempts)
            .with("errors_pct", round2(io_errors as f64 / attempts as f64 * 100.0))
            .with("errors_by_op_and_kind", by_kind),
        );
    }

    // A pattern workload idles on purpose (its blank columns): neither a shortfall nor a stall.
    let drawing = drawing(plan.as_ref());
    let mut saturated = false;
    if let Some(rate) = plan.as_ref().and_then(|p| p.rate_iops).filter(|_| !drawing) {
        // Failed I/Os were issued on schedule too: a shortfall they explain is no saturation.
        let attempted_per_s = s.total.ops.saturating_add(s.total.errors) as f64 / s.duration_s.max(1e-9);
        if s.duration_s > 0.0 && attempted_per_s < RATE_SHORTFALL * rate as f64 {
            saturated = true;
            let behind = fell_behind(s, plan.as_ref());
            let late = behind.as_ref().map_or(String::new(), |b| {
                format!(
                    "; I/Os started up to about {} late at the 99th percentile ({})",
                    format::ns(b.delay_p99_ns),
                    b.words
                )
            });
            let mut v = Verdict::new(
                "rate-not-held",
                Severity::Warning,
                format!(
                    "the target rate of {} IOPS was not reached ({} IOPS): the storage or ioscope is saturated, \
                     and latency (measured from each I/O's intended start) includes the queueing{late}",
                    format::int(rate),
                    format::iops(s.total.iops)
                ),
            )
            .with("asked_iops", rate)
            .with("achieved_iops", round2(s.total.iops))
            .with("attempted_iops", round2(attempted_per_s));
            if let Some(b) = behind {
                v.evidence.extend(b.evidence);
            }
            notes.push(v);
        }
    }
    // The rate may be met on average while I/Os wait behind slow ones (a sync call, a stall)
    // and start late: response time then far exceeds service time. (A saturated run's
    // verdict above already says its latency includes the queueing.)
    let open_loop = plan.as_ref().is_some_and(|p| {
        p.rate_iops.is_some() || p.steps().iter().any(|st| st.rate != ioscope_workload::plan::Rate::Max)
    });
    if open_loop && !saturated {
        if let Some(b) = fell_behind(s, plan.as_ref()) {
            let mut v = Verdict::new(
                "rate-not-held",
                Severity::Warning,
                format!(
                    "the open-loop schedule fell behind: I/Os started up to about {} late at the 99th percentile \
                     ({}), so their response time (latency, from the intended start) includes the wait; service \
                     time (from issue) is the storage's own",
                    format::ns(b.delay_p99_ns),
                    b.words
                ),
            );
            if let Some(rate) = plan.as_ref().and_then(|p| p.rate_iops) {
                v = v.with("asked_iops", rate).with("achieved_iops", round2(s.total.iops));
            }
            v.evidence.extend(b.evidence);
            notes.push(v);
        }
    }

    // Seconds in which I/Os failed and none succeeded: the target was unusable then.
    let dead: Vec<u32> = s.samples.iter().filter(|x| x.ops == 0 && x.errors > 0).map(|x| x.second).collect();
    if let (Some(first), Some(last)) = (dead.first(), dead.last()) {
        let when = if first == last { format!("second {first}") } else { format!("seconds {first} to {last}") };
        notes.push(
            Verdict::new(
                "unusable-seconds",
                Severity::Error,
                format!(
                    "every I/O failed in {} of {} seconds ({when}): the target was unusable then",
                    dead.len(),
                    s.samples.len()
                ),
            )
            .with("seconds_all_failed", dead.len())
            .with("seconds", s.samples.len())
            .with("first_second", *first)
            .with("last_second", *last),
        );
    }
    if s.total.ops > 0 && !drawing {
        let idle = s.samples.iter().filter(|x| x.ops == 0 && x.errors == 0 && x.interval_s >= SHORT_TICK_S).count();
        if idle > 0 {
            notes.push(
                Verdict::new(
                    "stalls",
                    Severity::Warning,
                    format!("{idle} of {} seconds completed no I/O at all (stalls)", s.samples.len()),
                )
                .with("seconds_without_io", idle)
                .with("seconds", s.samples.len()),
            );
        }
    }
    for (name, o) in s.ops.iter().filter(|(_, o)| o.skipped > 0) {
        notes.push(
            Verdict::new(
                "skipped-picks",
                Severity::Info,
                format!(
                    "{name}: {} picks found {} (counted apart: neither I/O nor errors)",
                    format::int(o.skipped),
                    wanted(name)
                ),
            )
            .with("op", name.as_str())
            .with("skipped", o.skipped),
        );
    }

    // Workers far outnumbering the CPUs can starve a collector without priority.
    if let Some(p) = &plan {
        let threads: u64 = p.max_threads().iter().map(|t| u64::from(*t)).sum();
        for (host, config) in &s.system {
            let normal = config["collector_priority"].as_str().is_some_and(|c| c.starts_with("normal"));
            let cpus = config["cpus"].as_u64().unwrap_or(0).max(1);
            if normal && threads > OVERSUBSCRIBED_PER_CPU * cpus {
                notes.push(
                    Verdict::new(
                        "oversubscribed",
                        Severity::Warning,
                        format!(
                            "{threads} worker threads on {cpus} CPUs of host {host}, and ioscope had no permission to \
                             give its per-second collector priority (SCHED_FIFO or a negative nice need \
                             CAP_SYS_NICE): seconds may have been recorded late; run as root or with fewer threads"
                        ),
                    )
                    .with("host", host.as_str())
                    .with("threads", threads)
                    .with("cpus", cpus),
                );
            }
        }
    }

    // The collector woke far too late: the process was stopped (SIGSTOP, a debugger, a
    // frozen VM) or starved of CPU. The gap is one long interval, not made-up seconds.
    let late: Vec<&crate::Sample> = s.samples.iter().filter(|x| x.interval_s > LATE_TICK_S).collect();
    if let Some(longest) = late.iter().max_by(|a, b| a.interval_s.total_cmp(&b.interval_s)) {
        notes.push(
            Verdict::new(
                "late-ticks",
                Severity::Warning,
                format!(
                    "{} of {} seconds came late, the longest (second {}) covering {} s: ioscope was stopped or \
                     starved of CPU; each late tick is one interval of its real length (rates are per its length) \
                     and the seconds inside it have no row",
                    late.len(),
                    s.samples.len(),
                    longest.second,
                    format::num(longest.interval_s),
                ),
            )
            .with("late_ticks", late.len())
            .with("seconds", s.samples.len())
            .with("longest_second", longest.second)
            .with("longest_interval_s", longest.interval_s),
        );
    }
    notes
}

/// How far an open-loop schedule fell behind, in words and figures.
struct Behind {
    /// "write p99 1.3 s from the intended start against 31 ms service time".
    words: String,
    /// Per late operation: response and service time p99 and max, and their differences
    /// (how late I/Os started: `{op}_start_delay_p99_ns`, `_max_ns`).
    evidence: serde_json::Map<String, serde_json::Value>,
    /// The largest p99 response time minus p99 service time of the late operations.
    delay_p99_ns: u64,
}

/// The operations whose response-time p99 is at least [`BEHIND_FACTOR`] times and
/// [`BEHIND_MIN_NS`] above their service-time p99. The difference of the two is how late
/// I/Os started (an estimate: the two percentiles need not be of the same I/O). With a
/// fixed rate, also later than one worker's interval between intended starts: only then
/// was the next I/O due before this one started (a backlog, not a late wake-up).
fn fell_behind(s: &Summary, plan: Option<&Plan>) -> Option<Behind> {
    let interval_ns = plan.and_then(|p| {
        let threads: u64 = p.max_threads().iter().map(|t| u64::from(*t)).sum();
        Some(threads.max(1).saturating_mul(1_000_000_000) / p.rate_iops.filter(|r| *r > 0)?)
    });
    use ioscope_metrics::StatId;
    let mut words = Vec::new();
    let mut evidence = serde_json::Map::new();
    let mut delay_p99_ns = 0;
    for (name, o) in &s.ops {
        let (Some(response), Some(service)) = (o.percentiles(StatId::Latency), o.percentiles(StatId::ServiceTime))
        else {
            continue;
        };
        let (r99, s99) = (response.p99, service.p99);
        let late = r99.saturating_sub(s99);
        if r99 < s99.saturating_mul(BEHIND_FACTOR)
            || r99 < s99.saturating_add(BEHIND_MIN_NS)
            || interval_ns.is_some_and(|iv| late < iv)
        {
            continue;
        }
        delay_p99_ns = delay_p99_ns.max(r99.saturating_sub(s99));
        words.push(format!(
            "{name} p99 {} from the intended start against {} service time",
            format::ns(r99),
            format::ns(s99)
        ));
        for (key, v) in [
            ("latency_p99_ns", r99),
            ("service_time_p99_ns", s99),
            ("start_delay_p99_ns", r99.saturating_sub(s99)),
            ("latency_max_ns", response.max),
            ("service_time_max_ns", service.max),
            ("start_delay_max_ns", response.max.saturating_sub(service.max)),
        ] {
            evidence.insert(format!("{name}_{key}"), v.into());
        }
    }
    if let Some(iv) = interval_ns.filter(|_| !words.is_empty()) {
        evidence.insert("schedule_interval_per_worker_ns".into(), iv.into());
    }
    (!words.is_empty()).then(|| Behind { words: words.join("; "), evidence, delay_p99_ns })
}

/// `v` rounded to two decimals, for evidence read by people.
pub(crate) fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Whether a workload draws a pattern (and so idles on purpose in its blank columns).
fn drawing(plan: Option<&Plan>) -> bool {
    plan.is_some_and(|p| p.workloads.iter().any(|w| w.pattern.is_some()))
}

/// What a skipped pick of a file-tree operation did not find.
fn wanted(op: &str) -> &'static str {
    match op {
        "create" => "no free name to create a file under",
        "delete" => "no file to delete",
        "mkdir" => "no missing directory to make",
        "rmdir" => "no empty directory to remove",
        "copy" | "move" => "no file to copy or move, or no free name for it",
        _ => "no file to act on",
    }
}

/// Working set against each host's RAM, for buffered I/O.
fn cache_notes(s: &Summary, p: &Plan, notes: &mut Vec<Verdict>) {
    if p.direct {
        return;
    }
    let did = |op: &str| s.ops.get(op).is_some_and(|o| o.ops > 0);
    let reads = p.workloads.iter().any(|w| w.read_pct > 0) && did("read");
    let cached_writes = p.writes() && p.sync == SyncMode::None && did("write");
    // The start (cold, warm, as-is) and the latency may say a device answered (cache.rs).
    let ev = crate::cache::working_set_evidence(s, reads, cached_writes);
    let what = match (ev.reads, ev.writes) {
        (true, true) => "reads were likely served from, and writes absorbed by, the page cache",
        (true, false) => "reads were likely served from the page cache",
        (false, true) => "writes were likely absorbed by the page cache (no sync)",
        (false, false) => return,
    };
    let (working_set, of_files) = match &p.dataset {
        // The tree follows from its definition: the exact sum of the sizes of the files the
        // workloads use (a definition with more files than allowed is not walked).
        Some(d) => match FileSizes::bounded(d) {
            Some(tree) => {
                let n = tree.working_files();
                (tree.working_bytes(), format!(" ({} file{})", format::int(n), if n == 1 { "" } else { "s" }))
            }
            None => return,
        },
        None => (p.size_bytes, String::new()),
    };
    let several = s.system.len() > 1;
    let mut memory_known = false;
    for (host, config) in &s.system {
        let Some(ram) = config["memory_bytes"].as_u64().filter(|m| *m > 0) else { continue };
        memory_known = true;
        let whose = if several { format!("host {host}'s") } else { "this host's".to_string() };
        let ratio = working_set as f64 / ram as f64;
        let evidence = |v: Verdict| {
            ev.add(v)
                .with("host", host.as_str())
                .with("working_set_bytes", working_set)
                .with("client_memory_bytes", ram)
                .with("working_set_of_memory_pct", round2(ratio * 100.0))
                .with("direct", false)
        };
        if ratio <= 1.0 {
            notes.push(evidence(Verdict::new(
                "working-set-cached",
                Severity::Warning,
                format!(
                    "working set {}{of_files} is {} of {whose} {} RAM and I/O was buffered: {what}{}",
                    format::bytes(working_set),
                    format::pct(ratio),
                    format::bytes(ram),
                    ev.why,
                ),
            )));
        } else if ratio < 4.0 {
            notes.push(evidence(Verdict::new(
                "working-set-cached",
                Severity::Info,
                format!(
                    "working set {}{of_files} is only {:.1}x {whose} {} RAM and I/O was buffered: up to {} of the \
                     I/O may have hit the page cache{}",
                    format::bytes(working_set),
                    ratio,
                    format::bytes(ram),
                    format::pct(1.0 / ratio),
                    ev.why,
                ),
            )));
        }
    }
    if !memory_known {
        notes.push(
            Verdict::new(
                "working-set-cached",
                Severity::Info,
                format!("I/O was buffered and the host's memory size is not recorded: {what}, possibly"),
            )
            .with("working_set_bytes", working_set)
            .with("direct", false),
        );
    }
}

/// The verdicts that need the results file beyond the summary: the target's, hosts far
/// from their peers, per-file records a full ring dropped.
pub(crate) fn results_verdicts(s: &Summary, r: &ioscope_store::Results) -> Vec<Verdict> {
    let mut out = Vec::new();
    let client_reads = s.ops.get("read").map_or(0, |o| o.ops);
    let working_set = serde_json::from_value::<Plan>(s.workload.plan.clone()).ok().map(|p| p.size_bytes);
    out.extend(crate::target::target_notes(&s.target, client_reads, working_set));
    if s.hosts.len() > 1 {
        let bytes = s.total.bytes > 0;
        let per_thread = crate::hosts::Threads::of(r).known();
        out.extend(host_outliers(&crate::hosts::common_seconds(r, bytes), bytes, per_thread));
    }
    // Per-file records a full ring dropped (the collector fell behind): said, never hidden.
    let lost = r.seconds.iter().filter(|x| x.not_broken_down > 0);
    let (seconds, ios) = lost.fold((0u64, 0u64), |(n, t), x| (n + 1, t.saturating_add(x.not_broken_down)));
    if ios > 0 {
        out.push(
            Verdict::new(
                "per-file-incomplete",
                Severity::Info,
                format!(
                    "per-file data incomplete: {} I/O not broken down by file (the collector fell behind the \
                     workers); {seconds} s of the run have no per-file distributions (per-op numbers are whole)",
                    format::int(ios)
                ),
            )
            .with("ios_not_broken_down", ios)
            .with("seconds_without_per_file_data", seconds),
        );
    }
    out
}

/// Hosts whose agent was lost or failed, and clocks whose offset is known only roughly.
fn host_status_notes(s: &Summary, notes: &mut Vec<Verdict>) {
    for (host, h) in &s.hosts {
        let Some(a) = &h.agent else { continue };
        let detail = a.detail.as_deref().unwrap_or("no detail recorded");
        match a.status.as_deref() {
            Some("lost") => {
                let at = a.lost_at_second.map_or(String::new(), |n| format!(" at second {n}"));
                let after =
                    a.lost_at_second.map_or("after it was lost".to_string(), |_| "after that second".to_string());
                let mut v = Verdict::new(
                    "host-lost",
                    Severity::Error,
                    format!(
                        "host {host} was lost{at}: {detail}; its series end there and the totals {after} are of the \
                         other hosts"
                    ),
                )
                .with("host", host.as_str())
                .with("measured_s", h.duration_s);
                if let Some(n) = a.lost_at_second {
                    v = v.with("lost_at_second", n);
                }
                notes.push(v);
            }
            Some("failed") => notes.push(
                Verdict::new(
                    "host-failed",
                    Severity::Error,
                    format!(
                        "host {host} failed: {detail}; its numbers cover only the {} s it measured",
                        format::num(h.duration_s)
                    ),
                )
                .with("host", host.as_str())
                .with("measured_s", h.duration_s),
            ),
            _ => {}
        }
        if let Some(late) = a.start_late_ns {
            notes.push(
                Verdict::new(
                    "host-late-start",
                    Severity::Info,
                    format!(
                        "host {host} started {} after the other hosts' common start instant (opening its engines took \
                         longer than the coordinator allowed): its first second holds less load",
                        format::ns(late)
                    ),
                )
                .with("host", host.as_str())
                .with("start_late_ns", late),
            );
        }
        if let Some(u) = a.clock_uncertainty_ns.filter(|u| *u > CLOCK_UNCERTAIN_NS) {
            notes.push(
                Verdict::new(
                    "clock-uncertain",
                    Severity::Info,
                    format!(
                        "host {host}'s clock offset is known to ±{}: its seconds may be shifted by that much",
                        format::ns(u)
                    ),
                )
                .with("host", host.as_str())
                .with("clock_uncertainty_ns", u),
            );
        }
    }
}

/// The median of `v` (the mean of the middle two for an even count); None if empty.
fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Mean and standard error of the mean.
fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n.max(1.0);
    let var = if v.len() > 1 { v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (mean, (var / n.max(1.0)).sqrt())
}

/// A host that differs from the others beyond noise, in throughput per thread or in
/// latency (the seeds' one client behind a bad cable), over the seconds all hosts ran.
/// Needs three hosts: with two there is no majority to tell which one is odd.
/// `per_thread`: the rates are per thread (else per host: the plans were not readable).
pub(crate) fn host_outliers(hosts: &[crate::hosts::HostSeconds], bytes: bool, per_thread: bool) -> Vec<Verdict> {
    outliers(&HOSTS, hosts, bytes, per_thread)
}

/// What is compared with its peers, in words.
pub(crate) struct Peers {
    /// "host", "worker thread", "file".
    pub one: &'static str,
    pub many: &'static str,
    /// The evidence key naming the odd one.
    pub key: &'static str,
    /// What such a difference usually is.
    pub advice: &'static str,
}

const HOSTS: Peers = Peers {
    one: "host",
    many: "hosts",
    key: "host",
    advice:
        "a slower link, mount or CPU on one client looks like this: compare its system configuration with the others'",
};

/// Members of a group (hosts, one host's worker threads, files) that differ from the
/// others beyond noise, in throughput (per thread when `per_thread`) or latency, over the
/// seconds all of them ran. Needs three: with two there is no majority to tell which one
/// is odd.
pub(crate) fn outliers(
    peers: &Peers,
    hosts: &[crate::hosts::HostSeconds],
    bytes: bool,
    per_thread: bool,
) -> Vec<Verdict> {
    let n_seconds = hosts.iter().map(|h| h.per_thread.len()).min().unwrap_or(0);
    if hosts.len() < 3 || n_seconds < HOST_MIN_SECONDS {
        return Vec::new();
    }
    let unit = |v: f64| {
        if bytes {
            // Two decimals, more below 0.1 MB/s (a standard error is often that small).
            let mb = v / 1e6;
            format!("{} MB/s", format::float(mb, if mb.abs() >= 0.1 { 2 } else { 4 }))
        } else {
            format!("{} IOPS", format::iops(v))
        }
    };
    let means: Vec<f64> = hosts.iter().map(|h| mean_se(&h.per_thread).0).collect();
    let median_rate = median(&means).unwrap_or(0.0);
    let pct = |h: &crate::hosts::HostSeconds, q: f64| h.latency.quantile(q).map(|v| v as f64);
    let median_of = |q: f64| median(&hosts.iter().filter_map(|h| pct(h, q)).collect::<Vec<_>>());
    let (median_p50, median_p99) = (median_of(0.5), median_of(0.99));
    // Enough transfers beyond a percentile to trust it (the median host's count too).
    let counts: Vec<f64> = hosts.iter().map(|h| h.latency.count() as f64).collect();
    let median_count = median(&counts).unwrap_or(0.0);
    let trusted = |count: u64, q: f64| {
        let tail = |c: f64| c * (1.0 - q);
        tail(count as f64) >= HOST_LATENCY_TAIL as f64 && tail(median_count) >= HOST_LATENCY_TAIL as f64
    };

    let mut out = Vec::new();
    for h in hosts {
        let mut why = Vec::new();
        let mut evidence = serde_json::Map::new();
        let (mean, se) = mean_se(&h.per_thread);
        let diff = mean - median_rate;
        if median_rate > 0.0 && diff.abs() > HOST_THROUGHPUT_SHARE * median_rate && diff.abs() > HOST_NOISE_SE * se {
            let key = if bytes { "bytes_per_sec" } else { "iops" };
            let per = if per_thread { "_per_thread" } else { "" };
            evidence.insert(format!("{key}{per}"), round2(mean).into());
            evidence.insert(format!("median_{key}{per}"), round2(median_rate).into());
            evidence.insert(format!("{key}{per}_standard_error"), round2(se).into());
            evidence.insert("difference_pct".into(), round2(diff / median_rate * 100.0).into());
            why.push(format!(
                "{}{} against the median {}'s {} ({:+.0}%; the standard error of its seconds is ±{})",
                unit(mean),
                if per_thread { " per thread" } else { "" },
                peers.one,
                unit(median_rate),
                diff / median_rate * 100.0,
                unit(se)
            ));
        }
        let count = h.latency.count();
        let mut lat = Vec::new();
        for (name, q, m) in [("p50", 0.5, median_p50), ("p99", 0.99, median_p99)] {
            let (Some(v), Some(m)) = (pct(h, q), m) else { continue };
            if m > 0.0 && v > HOST_LATENCY_FACTOR * m && trusted(count, q) {
                evidence.insert(format!("latency_{name}_ns"), (v as u64).into());
                evidence.insert(format!("median_latency_{name}_ns"), (m as u64).into());
                lat.push(format!(
                    "{name} {} against the median {}'s {} ({:.1}x)",
                    format::ns(v as u64),
                    peers.one,
                    format::ns(m as u64),
                    v / m
                ));
            }
        }
        if !lat.is_empty() {
            why.push(format!("latency {}", lat.join(", ")));
        }
        if !why.is_empty() {
            let mut v = Verdict::new(
                "imbalance",
                Severity::Warning,
                format!(
                    "{} {} differs from the other {} beyond noise over the {n_seconds} s they all ran: {}; {}",
                    peers.one,
                    h.host,
                    peers.many,
                    why.join("; "),
                    peers.advice
                ),
            )
            .with(peers.key, h.host.as_str())
            .with(&format!("{}s", peers.key), hosts.len())
            .with("seconds", n_seconds);
            v.evidence.extend(evidence);
            out.push(v);
        }
    }
    out
}
