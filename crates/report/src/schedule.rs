//! The open-loop schedule: `rate-not-held` when a run asked for a rate (`--rate-iops`)
//! and attempted less of it, or met it on average while I/Os started late (response time
//! far beyond service time).

use crate::format;
use crate::stats::round2;
use crate::verdict::{Severity, Verdict, VerdictId};
use crate::Summary;
use ioscope_metrics::{Op, StatId};
use ioscope_workload::plan::Plan;

/// An open-loop run that achieves less than this share of its target rate is saturated.
pub(crate) const RATE_SHORTFALL: f64 = 0.95;
/// An open-loop schedule fell behind when an operation's response-time p99 is at least
/// this many times its service-time p99...
const BEHIND_FACTOR: u64 = 2;
/// ...and at least this much above it (microseconds of scheduling jitter are not falling
/// behind).
const BEHIND_MIN_NS: u64 = 1_000_000;

/// `rate-not-held`, for a run whose plan asked for a rate or steps of rates (`drawing`: a
/// pattern workload idles on purpose in its blank columns: no shortfall).
pub(crate) fn rate_verdicts(s: &Summary, plan: Option<&Plan>, drawing: bool) -> Vec<Verdict> {
    let mut notes = Vec::new();
    let mut saturated = false;
    if let Some(rate) = plan.and_then(|p| p.rate_iops).filter(|_| !drawing) {
        // Failed I/Os were issued on schedule too: a shortfall they explain is no saturation.
        let per_s = |n: u64| n as f64 / s.duration_s.max(1e-9);
        let attempted_per_s = per_s(s.total.ops.saturating_add(s.total.errors));
        let asked = rate as f64;
        if s.duration_s > 0.0 && attempted_per_s < RATE_SHORTFALL * asked {
            saturated = true;
            // Picks of a file-tree operation that found nothing to act on (a create of a
            // name that exists) took their place in the schedule but issued no I/O.
            let (skipped, skipped_ops) = skipped_picks(s);
            let picks_per_s = per_s(s.total.ops.saturating_add(s.total.errors).saturating_add(skipped));
            let capacity = capacity(s, plan);
            let behind = fell_behind(s, plan);
            let late = behind.as_ref().map_or(String::new(), |b| {
                format!(
                    "; I/Os started up to about {} late at the 99th percentile ({})",
                    format::ns(b.delay_p99_ns),
                    b.words
                )
            });
            let mut v = if picks_per_s >= RATE_SHORTFALL * asked {
                // The schedule was held: the shortfall is the skipped picks, no saturation.
                // I/Os that also started late are said (a warning, as when the rate is met).
                let rest = match (&behind, &capacity) {
                    (Some(_), _) => format!(
                        "; not a saturation, but latency (measured from each I/O's intended start) includes a \
                         wait{late}"
                    ),
                    (None, Some(c)) => format!(", not a saturation ({})", c.words()),
                    (None, None) => ", not a saturation".to_string(),
                };
                let v = Verdict::new(
                    VerdictId::RateNotHeld,
                    format!(
                        "the schedule of {} IOPS was held ({} picks per second), but {} per second of them found \
                         nothing to act on and were skipped, not issued ({}: see skipped-picks): {} IOPS of I/O{rest}",
                        format::int(rate),
                        format::iops(picks_per_s),
                        format::iops(per_s(skipped)),
                        skipped_ops.join(", "),
                        format::iops(s.total.iops),
                    ),
                );
                if behind.is_some() {
                    v
                } else {
                    v.at(Severity::Info)
                }
            } else {
                let skipped_words = match skipped {
                    0 => String::new(),
                    n => format!("; {} picks per second skipped", format::iops(per_s(n))),
                };
                // Saturation only when the evidence supports it: I/Os started late, or at
                // the latency measured the I/Os in flight cannot carry the rate asked.
                let why = match (&capacity, &behind) {
                    (Some(c), None) if c.iops >= asked => format!(
                        "not for the storage's latency: {}, well above the rate asked; ioscope's pacing or the \
                         client fell short (client-bound tells whether its threads were busy)",
                        c.words()
                    ),
                    (Some(c), _) if c.iops < asked => format!(
                        "the storage or ioscope is saturated ({}), and latency (measured from each I/O's intended \
                         start) includes the queueing{late}",
                        c.words()
                    ),
                    (_, Some(_)) => format!(
                        "the storage or ioscope could not keep up, and latency (measured from each I/O's intended \
                         start) includes the queueing{late}"
                    ),
                    _ => "the storage or ioscope is saturated, and latency (measured from each I/O's intended start) \
                          includes the queueing"
                        .to_string(),
                };
                Verdict::new(
                    VerdictId::RateNotHeld,
                    format!(
                        "the target rate of {} IOPS was not reached ({} IOPS{skipped_words}): {why}",
                        format::int(rate),
                        format::iops(s.total.iops),
                    ),
                )
            };
            v = v
                .with("asked_iops", rate)
                .with("achieved_iops", round2(s.total.iops))
                .with("attempted_iops", round2(attempted_per_s))
                .with("skipped_picks_per_s", round2(per_s(skipped)))
                .with("picks_iops", round2(picks_per_s));
            if let Some(c) = capacity {
                v = v
                    .with("mean_service_time_ns", c.mean_ns)
                    .with("in_flight", c.in_flight)
                    .with("capacity_iops", round2(c.iops));
            }
            if let Some(b) = behind {
                v.evidence.extend(b.evidence);
            }
            notes.push(v);
        }
    }
    // The rate may be met on average while I/Os wait behind slow ones (a sync call, a stall)
    // and start late: response time then far exceeds service time. (A saturated run's
    // verdict above already says its latency includes the queueing.)
    let open_loop = plan.is_some_and(|p| {
        p.rate_iops.is_some() || p.steps().iter().any(|st| st.rate != ioscope_workload::plan::Rate::Max)
    });
    if open_loop && !saturated {
        if let Some(b) = fell_behind(s, plan) {
            let mut v = Verdict::new(
                VerdictId::RateNotHeld,
                format!(
                    "the open-loop schedule fell behind: I/Os started up to about {} late at the 99th percentile \
                     ({}), so their response time (latency, from the intended start) includes the wait; service \
                     time (from issue) is the storage's own",
                    format::ns(b.delay_p99_ns),
                    b.words
                ),
            );
            if let Some(rate) = plan.and_then(|p| p.rate_iops) {
                v = v.with("asked_iops", rate).with("achieved_iops", round2(s.total.iops));
            }
            v.evidence.extend(b.evidence);
            notes.push(v);
        }
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

/// Picks of file-tree operations that found nothing to act on, in all, and per operation
/// in words ("create 1,200").
fn skipped_picks(s: &Summary) -> (u64, Vec<String>) {
    let picks = |name: &str| Op::parse(name).is_some_and(|op| op.is_file_tree() && !op.serves_others());
    let of: Vec<(&String, u64)> =
        s.ops.iter().filter(|(name, o)| o.skipped > 0 && picks(name)).map(|(name, o)| (name, o.skipped)).collect();
    let total = of.iter().fold(0u64, |t, (_, n)| t.saturating_add(*n));
    (total, of.into_iter().map(|(name, n)| format!("{name} {}", format::int(n))).collect())
}

/// What the I/Os in flight could carry at the latency measured (Little's law).
struct Capacity {
    /// Mean service time (from issue) of the I/Os, over every operation in the total.
    mean_ns: u64,
    /// Worker threads times the queue depth.
    in_flight: u64,
    /// `in_flight` / mean service time.
    iops: f64,
}

impl Capacity {
    /// "at a mean service time of 1.0 ms, 18 I/Os in flight carry about 18,000 IOPS".
    fn words(&self) -> String {
        format!(
            "at a mean service time of {}, {} I/Os in flight carry about {} IOPS",
            format::ns(self.mean_ns),
            format::int(self.in_flight),
            format::iops(self.iops)
        )
    }
}

/// The rate the run's I/Os in flight could sustain at their measured mean service time
/// (from issue; the response time when none was recorded); None without either.
fn capacity(s: &Summary, plan: Option<&Plan>) -> Option<Capacity> {
    let p = plan?;
    // Each workload's threads at its own depth.
    let in_flight: u64 = (p.max_threads().iter().zip(&p.workloads))
        .map(|(t, w)| u64::from(*t).saturating_mul(u64::from(p.most_iodepth_of(w)).max(1)))
        .fold(0u64, u64::saturating_add)
        .max(1);
    let (mut sum, mut n) = (0f64, 0u64);
    for (name, o) in &s.ops {
        if Op::parse(name).is_none_or(|op| op.serves_others()) {
            continue;
        }
        let Some(d) = o.percentiles(StatId::ServiceTime).or_else(|| o.percentiles(StatId::Latency)) else { continue };
        sum += d.mean as f64 * o.ops as f64;
        n = n.saturating_add(o.ops);
    }
    let mean_ns = (sum / n.max(1) as f64).round() as u64;
    (n > 0 && mean_ns > 0).then(|| Capacity { mean_ns, in_flight, iops: in_flight as f64 * 1e9 / mean_ns as f64 })
}
