//! Methodology verdicts: what limits how far a run's numbers can be trusted, worked out
//! from the summary alone (status, measured seconds, plan, hosts' configuration), each
//! with the figures that triggered it.

use crate::format;
use crate::peers::host_outliers;
use crate::stats::round2;
use crate::verdict::{Severity, Verdict, VerdictId};
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
/// A host's clock offset known less well than this (half its best round trip) is said.
const CLOCK_UNCERTAIN_NS: u64 = 1_000_000;

pub(crate) fn notes(s: &Summary) -> Vec<Verdict> {
    let mut notes = Vec::new();
    let plan: Option<Plan> = serde_json::from_value(s.workload.plan.clone()).ok();

    match s.status.as_str() {
        "interrupted" => notes.push(
            Verdict::new(
                VerdictId::Interrupted,
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
                VerdictId::Failed,
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
                VerdictId::Running,
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
        notes.push(
            Verdict::new(VerdictId::NoData, "no second was recorded: there is nothing to summarize").with("seconds", 0),
        );
    } else if measured_s < SHORT_RUN_SECONDS
        && matches!(s.status.as_str(), "completed" | "running")
        && !s.steady.iter().any(|x| x.ended_early)
    {
        // (An interrupted or failed run's note above already says how long it measured.)
        notes.push(
            Verdict::new(
                VerdictId::TooShort,
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
    // A run that ended once steady (`until_steady`) or once its amount was issued is short
    // by design; its steady or ended line says so.
    let ended_steady = s.steady.iter().any(|x| x.ended_early) || s.ended.as_ref().is_some_and(|e| e.by == "amount");
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
                VerdictId::ShorterThanPlanned,
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
            Some(note) => notes.push(Verdict::new(VerdictId::Engine, note).with("engine", p.engine.spec().name)),
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
                VerdictId::Errors,
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
    notes.extend(crate::schedule::rate_verdicts(s, plan.as_ref(), drawing));

    // Seconds in which I/Os failed and none succeeded: the target was unusable then.
    let dead: Vec<u32> = s.samples.iter().filter(|x| x.ops == 0 && x.errors > 0).map(|x| x.second).collect();
    if let (Some(first), Some(last)) = (dead.first(), dead.last()) {
        let when = if first == last { format!("second {first}") } else { format!("seconds {first} to {last}") };
        notes.push(
            Verdict::new(
                VerdictId::UnusableSeconds,
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
                    VerdictId::Stalls,
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
                VerdictId::SkippedPicks,
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
                        VerdictId::Oversubscribed,
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
                VerdictId::LateTicks,
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
    // The client's memory: a host that was only probed (the server) is judged by the
    // target-memory verdict, against every host's working set.
    let several = crate::system::load_host_records(s).count() > 1;
    let mut memory_known = false;
    for (host, config) in crate::system::load_host_records(s) {
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
                VerdictId::WorkingSetCached,
                format!(
                    "working set {}{of_files} is {} of {whose} {} RAM and I/O was buffered: {what}{}",
                    format::bytes(working_set),
                    format::pct(ratio),
                    format::bytes(ram),
                    ev.why,
                ),
            )));
        } else if ratio < 4.0 {
            notes.push(evidence(
                Verdict::new(
                    VerdictId::WorkingSetCached,
                    format!(
                        "working set {}{of_files} is only {:.1}x {whose} {} RAM and I/O was buffered: up to {} of the \
                     I/O may have hit the page cache{}",
                        format::bytes(working_set),
                        ratio,
                        format::bytes(ram),
                        format::pct(1.0 / ratio),
                        ev.why,
                    ),
                )
                .at(Severity::Info),
            ));
        }
    }
    if !memory_known {
        notes.push(
            Verdict::new(
                VerdictId::WorkingSetCached,
                format!("I/O was buffered and the host's memory size is not recorded: {what}, possibly"),
            )
            .at(Severity::Info)
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
                VerdictId::PerFileIncomplete,
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
                    VerdictId::HostLost,
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
                    VerdictId::HostFailed,
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
                    VerdictId::HostLateStart,
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
                    VerdictId::ClockUncertain,
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
