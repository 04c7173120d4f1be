//! What a run measured, for people and programs: the [`Summary`] (versioned JSON with a
//! JSON Schema in `schema/summary.schema.json`), the terminal summary ([`render_text`]),
//! and per-second exports ([`export_csv`], [`export_json`]).
//!
//! Every number is derived from the stored counters and histograms only: rates divide
//! counts by the measured intervals, percentiles come from the merged log-linear
//! histograms (within [`ioscope_metrics::RELATIVE_ERROR`]), means from their exact sums.

mod aggregate;
pub mod cache;
pub mod check;
mod client;
pub mod compare;
pub mod content;
pub mod ended;
mod export;
pub mod fail_if;
pub mod format;
mod hosts;
mod link;
mod notes;
mod peers;
pub mod repeat;
mod schedule;
mod stats;
pub mod steady;
mod system;
mod target;
mod text;
pub mod verdict;
pub mod verification;

pub use export::{export_csv, export_json};
pub use hosts::{AgentSummary, HostSummary};
pub use system::{render_system_json, render_system_text};
pub use target::{DiskSummary, MeanMax, NicSummary, ProcessSummary, SyscallSummary, TargetSummary};
pub use text::{for_terminal, render_text};

use ioscope_metrics::stat::{self, Reported, StatId};
use ioscope_metrics::{Counts, Histogram, Op, OpInterval, STATS};
use ioscope_store::Results;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The `schema` field of every [`Summary`].
pub const SUMMARY_SCHEMA: &str = "ioscope.summary/1";

/// A run in numbers: see `schema/summary.schema.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    /// Effective status: running, completed, interrupted or failed.
    pub status: String,
    pub status_detail: Option<String>,
    /// Status as written in the file (`running` for a killed run).
    pub stored_status: String,
    pub results_file: String,
    pub ioscope_version: String,
    /// The host that ran (or coordinated) the run.
    pub host: String,
    pub command_line: String,
    pub started_unix_ms: i64,
    pub ended_unix_ms: Option<i64>,
    pub planned_duration_s: f64,
    /// Measured duration: sum of the stored intervals (the longest host's, if several).
    pub duration_s: f64,
    /// Number of seconds stored.
    pub seconds: u64,
    pub total: Totals,
    /// What `total` counts, as its row is labelled: `total`, or `total (read+write)` when
    /// the run had operations that serve others (fsync, fdatasync, open, close), which
    /// have their own rows but are not in the total's ops, IOPS and bytes (their errors
    /// are in its errors).
    #[serde(default = "total_word")]
    pub total_label: String,
    /// Per operation (only operations that completed or failed at least once).
    pub ops: BTreeMap<String, OpSummary>,
    /// Percentiles are within this fraction of the true value.
    pub latency_relative_error: f64,
    /// One entry per second, all hosts and operations together.
    pub samples: Vec<Sample>,
    /// Totals per host, each over its own measured duration (with host rows: the seconds
    /// it ran, as in `hosts`).
    pub by_host: BTreeMap<String, Totals>,
    /// Per host, for runs of several hosts or with agents (absent for a local run of one
    /// host): counters, rates and transfer latency from each host's own histograms, and
    /// its agent's status and clock.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hosts: BTreeMap<String, HostSummary>,
    /// Latency of the total's operations, merged over every host's histograms (never an
    /// average of the hosts' percentiles); present with `hosts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_latency_ns: Option<Distribution>,
    /// Each host's configuration as stored.
    pub system: BTreeMap<String, serde_json::Value>,
    pub workload: Workload,
    /// Per workload, when the run had more than one (measured seconds only; with phases, a
    /// workload of one phase over the seconds of its phase's steps).
    pub workloads: BTreeMap<String, PartSummary>,
    /// Per flow workload, when the run had more than one workload: its operations, each as
    /// in `ops` (measured seconds, the run's duration), with `flow` its rounds (Filebench's
    /// ops/s per flowop and per flow). Absent otherwise (`ops` is then the flow's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flows: BTreeMap<String, BTreeMap<String, OpSummary>>,
    /// Per step, when the run had more than one (measured seconds only).
    pub steps: Vec<StepSummary>,
    /// Per step (also for a run of one): when it became steady, whether it fell out later
    /// (docs/steady-state.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steady: Vec<steady::StepSteady>,
    /// Where throughput stops rising while latency climbs, for runs with steps.
    pub knee: Option<Knee>,
    /// Each start of each probe command.
    pub probes: Vec<ProbeSummary>,
    /// Per probed host (`--probe`, `ioscope probe`): what the target did over the measured
    /// seconds. Absent without target series.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub target: BTreeMap<String, TargetSummary>,
    /// The verdicts' messages, in their order (kept for readers of the notes).
    pub notes: Vec<String>,
    /// The run's checks (`--check`), each evaluated from this summary's figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<check::CheckResult>,
    /// What the measurements say about how far these numbers can be trusted, with evidence,
    /// most severe first (docs/verdicts.md).
    #[serde(default)]
    pub verdicts: Vec<verdict::Verdict>,
    /// The run's repeats (`--repeat`, `--until-ci`): absent without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<repeat::RepeatSummary>,
    /// Data validation (`--verify`): absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<verification::VerificationSummary>,
    /// The page cache at the start (`--cache`) and what was done to it, over the hosts
    /// (docs/cache.md); absent when the plan cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<cache::CacheSummary>,
    /// What ended a run with an end by amount or `until_steady` (absent for a run that
    /// ends on time only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<ended::EndSummary>,
    /// The precondition written before the run (`precondition`), not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precondition: Option<ended::PreconditionSummary>,
    /// The data content asked and what the working set held after the run, measured from
    /// a sample read back (absent where it was not measured: remote targets, datasets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<content::ContentSummary>,
}

/// Throughput and transfer latency of a part of a run (a workload, a step).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PartSummary {
    pub iops: f64,
    pub bytes_per_sec: f64,
    pub ops: u64,
    pub errors: u64,
    pub latency_p50_ns: Option<u64>,
    pub latency_p99_ns: Option<u64>,
}

/// One step of a staircase, curve or for-loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    pub index: u32,
    /// The repeat the step belongs to (`--repeat`; absent for repeat 0); its label then
    /// starts with it ("repeat 2 threads=4").
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeat: u32,
    pub label: String,
    /// Threads of every workload; null = each its own.
    pub threads: Option<u32>,
    /// The rate asked, I/Os per second; null = max.
    pub rate_iops: Option<u64>,
    /// Seconds measured (warm-up excluded).
    pub seconds: u64,
    #[serde(flatten)]
    pub measured: PartSummary,
}

/// The knee of a staircase or curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Knee {
    /// The last step whose throughput was worth its latency.
    pub step: u32,
    pub label: String,
    /// What happened at the next step, in words.
    pub reason: String,
}

/// One start of a probe command.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProbeSummary {
    pub name: String,
    pub command: String,
    /// When it started, from the start of the run.
    pub at_s: f64,
    pub duration_s: f64,
    /// null when it was killed or could not start (see detail).
    pub exit_code: Option<i32>,
    pub detail: Option<String>,
}

/// The knee is the first step at this share of the peak throughput...
const KNEE_OF_PEAK: f64 = 0.9;
/// ...after which p99 latency rises by more than this factor...
const KNEE_P99_RISE: f64 = 1.2;
/// ...over at least this p99: below it (a page cache, a null engine) a rise is a few
/// microseconds of timer and scheduling noise, and a factor of a tiny base means nothing.
pub const KNEE_P99_FLOOR_NS: u64 = 10_000;

/// The knee: the first step, in order of load, that reaches 90% of the run's peak
/// throughput, provided p99 latency climbs by more than 20% (over a floor of
/// [`KNEE_P99_FLOOR_NS`]) in the steps after it. Below it, more load still buys
/// throughput; beyond it, mostly queueing. Using a share of the peak (rather than "the
/// next step gains less than x%") keeps one noisy step from hiding or faking a knee.
///
/// Order of load: the steps' order, except for a curve, whose first step runs at the max
/// rate and the others at shares of it: the max step is its highest load and comes last.
pub fn find_knee(steps: &[StepSummary]) -> Option<Knee> {
    let mut points: Vec<&StepSummary> =
        steps.iter().filter(|s| s.seconds > 0 && s.measured.latency_p99_ns.is_some()).collect();
    let curve = points.iter().filter(|s| s.rate_iops.is_none()).count() == 1 && points.len() > 1;
    if curve {
        points.sort_by_key(|s| s.rate_iops.unwrap_or(u64::MAX));
    }
    let p99 = |s: &StepSummary| s.measured.latency_p99_ns.unwrap_or(0);
    let peak = points.iter().map(|s| s.measured.iops).fold(0.0, f64::max);
    let k = points.iter().position(|s| s.measured.iops >= KNEE_OF_PEAK * peak)?;
    let (a, later) = (points[k], &points[k + 1..]);
    let worst = later.iter().max_by_key(|b| p99(b))?;
    let base = p99(a).max(KNEE_P99_FLOOR_NS);
    if (p99(worst) as f64) <= base as f64 * KNEE_P99_RISE {
        return None;
    }
    let gain = (peak / a.measured.iops.max(1e-9) - 1.0) * 100.0;
    // The values, and their ratio only over the floor (a ratio of a few µs means nothing).
    let factor = match p99(a) >= KNEE_P99_FLOOR_NS {
        true => format!(", {}x", format::float(p99(worst) as f64 / p99(a) as f64, 1)),
        false => String::new(),
    };
    Some(Knee {
        step: a.index,
        label: step_name(a),
        reason: format!(
            "{} IOPS at p99 {}, {:.0}% of the peak; beyond it IOPS rose at most {gain:+.0}% while p99 latency rose \
             to {} (step {} {}{factor})",
            format::iops(a.measured.iops),
            format::ns(p99(a)),
            a.measured.iops / peak.max(1e-9) * 100.0,
            format::ns(p99(worst)),
            worst.index,
            step_name(worst),
        ),
    })
}

/// A step's label, never empty: a step that sets nothing apart (a curve's max step) is
/// named by its rate.
fn step_name(s: &StepSummary) -> String {
    match (s.label.is_empty(), s.rate_iops) {
        (false, _) => s.label.clone(),
        (true, None) => "rate=max".to_string(),
        (true, Some(r)) => format!("rate={r}"),
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn total_word() -> String {
    "total".to_string()
}

/// The label of the total row (see [`Summary::total_label`]): the operations it counts,
/// read and write first, when some that ran are left out of it.
pub fn total_label<'a>(ops: impl IntoIterator<Item = &'a str>) -> String {
    let mut counted = Vec::new();
    let mut left_out = Vec::new();
    for name in ops {
        match Op::parse(name) {
            Some(op) if op.serves_others() => left_out.push(name),
            _ => counted.push(name),
        }
    }
    if left_out.is_empty() {
        return total_word();
    }
    let rank = |n: &&str| match *n {
        "read" => 0,
        "write" => 1,
        _ => 2,
    };
    counted.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
    if counted.is_empty() {
        format!("total (without {})", left_out.join("+"))
    } else {
        format!("total ({})", counted.join("+"))
    }
}

/// Counters and rates.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub iops: f64,
    pub bytes_per_sec: f64,
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
}

/// One operation over the whole run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpSummary {
    pub iops: f64,
    pub bytes_per_sec: f64,
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    /// Failed I/Os by kind ("ENOSPC", "NFS3ERR_STALE", "short read"...): they add up to
    /// `errors` (empty for results files written before kinds were recorded).
    #[serde(default)]
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Operations that found no file in the state they need (file-tree workloads): neither
    /// I/O nor errors.
    #[serde(default)]
    pub skipped: u64,
    /// Each distribution the statistics registry reports per operation, under the name
    /// it gives (`latency_ns`: response time from the intended start, `service_time_ns`:
    /// from issue, `size_bytes`); null when nothing completed.
    #[serde(flatten)]
    pub distributions: BTreeMap<String, Option<DistributionSummary>>,
}

/// A distribution of one operation as the registry says to report it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DistributionSummary {
    /// [`Reported::Percentiles`].
    Percentiles(Distribution),
    /// [`Reported::Range`].
    Range(SizeStats),
}

impl OpSummary {
    /// The percentiles of a statistic reported so ([`Reported::Percentiles`]).
    pub fn percentiles(&self, id: StatId) -> Option<&Distribution> {
        match self.distribution(id)? {
            DistributionSummary::Percentiles(d) => Some(d),
            DistributionSummary::Range(_) => None,
        }
    }

    /// The mean, min and max of a statistic reported so ([`Reported::Range`]).
    pub fn range(&self, id: StatId) -> Option<&SizeStats> {
        match self.distribution(id)? {
            DistributionSummary::Range(r) => Some(r),
            DistributionSummary::Percentiles(_) => None,
        }
    }

    fn distribution(&self, id: StatId) -> Option<&DistributionSummary> {
        match stat::stat(id).reported {
            Reported::Percentiles(field) | Reported::Range(field) => self.distributions.get(field)?.as_ref(),
            _ => None,
        }
    }

    /// The distributions of `d` the registry reports per operation, by their field names.
    fn distributions_of(d: &OpInterval) -> BTreeMap<String, Option<DistributionSummary>> {
        let mut out = BTreeMap::new();
        for st in STATS {
            let Some(h) = d.histogram(st.id) else { continue };
            let (field, value) = match st.reported {
                Reported::Percentiles(field) => (field, Distribution::of(h).map(DistributionSummary::Percentiles)),
                Reported::Range(field) => (field, SizeStats::of(h).map(DistributionSummary::Range)),
                Reported::Count(_) | Reported::Events(_) | Reported::PerSecondOnly => continue,
            };
            out.insert(field.to_string(), value);
        }
        out
    }
}

/// A distribution in integers: exact mean (rounded), min and max; percentiles from the histogram.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distribution {
    pub mean: u64,
    pub min: u64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeStats {
    pub mean: u64,
    pub min: u64,
    pub max: u64,
}

impl SizeStats {
    pub fn of(h: &Histogram) -> Option<Self> {
        Some(SizeStats { mean: h.mean()?.round() as u64, min: h.min()?, max: h.max()? })
    }
}

/// One second, all hosts together; totals and latency cover transfers (see [`ioscope_metrics::is_sync_op`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub second: u32,
    pub step: u32,
    /// A warm-up second: not in the totals.
    pub warmup: bool,
    pub interval_s: f64,
    pub ops: u64,
    pub iops: f64,
    pub bytes_per_sec: f64,
    pub errors: u64,
    pub latency_p50_ns: Option<u64>,
    pub latency_p99_ns: Option<u64>,
    pub latency_max_ns: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub hash: String,
    /// The validated plan (JSON as stored; a string if it was not valid JSON).
    pub plan: serde_json::Value,
    /// The workload file as given.
    pub toml: String,
}

impl Distribution {
    pub fn of(h: &Histogram) -> Option<Self> {
        Some(Distribution {
            mean: h.mean()?.round() as u64,
            min: h.min()?,
            p50: h.quantile(0.5)?,
            p90: h.quantile(0.9)?,
            p99: h.quantile(0.99)?,
            p999: h.quantile(0.999)?,
            max: h.max()?,
        })
    }
}

/// One second merged over hosts: the longest host interval, and per-op data in run order.
pub(crate) struct SecondRow {
    pub second: u32,
    pub step: u32,
    pub warmup: bool,
    pub interval_ns: u64,
    /// (key, op, data): keys are "op", or "workload.op" when split by workload.
    pub ops: Vec<(String, Op, OpInterval)>,
}

impl SecondRow {
    pub fn total(&self) -> (u64, u64, u64) {
        let mut t = Counts::default();
        for (_, op, d) in &self.ops {
            t.add_to_total(*op, &d.counts);
        }
        (t.ops, t.bytes, t.errors)
    }
    pub fn op(&self, key: &str) -> Option<&OpInterval> {
        self.ops.iter().find(|(k, _, _)| k == key).map(|(_, _, d)| d)
    }
}

/// Operations that completed or failed at least once, in order of first appearance.
pub(crate) fn active_ops(r: &Results) -> Vec<Op> {
    r.ops()
        .into_iter()
        .filter(|op| r.seconds.iter().flat_map(|s| &s.ops).any(|o| o.op == *op && !o.data.is_empty()))
        .collect()
}

/// Whether the run had several workloads (its series are then split by workload).
pub(crate) fn several_workloads(r: &Results) -> bool {
    let first = r.seconds.iter().flat_map(|s| &s.ops).next().map(|o| &o.workload);
    r.seconds.iter().flat_map(|s| &s.ops).any(|o| Some(&o.workload) != first)
}

/// Keys "workload.op" of the operations that completed or failed at least once.
pub(crate) fn active_workload_ops(r: &Results) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for o in r.seconds.iter().flat_map(|s| &s.ops).filter(|o| !o.data.is_empty()) {
        let key = format!("{}.{}", o.workload, o.op);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// Seconds merged over hosts, in order; per op, or per "workload.op" when `by_workload`.
pub(crate) fn per_second_by(r: &Results, by_workload: bool) -> Vec<SecondRow> {
    let mut rows: Vec<SecondRow> = Vec::new();
    for s in &r.seconds {
        if rows.last().map(|l| l.second) != Some(s.second) {
            rows.push(SecondRow { second: s.second, step: s.step, warmup: s.warmup, interval_ns: 0, ops: Vec::new() });
        }
        let row = rows.last_mut().expect("pushed above");
        row.interval_ns = row.interval_ns.max(s.interval_ns);
        for o in &s.ops {
            let key = if by_workload { format!("{}.{}", o.workload, o.op) } else { o.op.to_string() };
            match row.ops.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, _, d)) => d.merge(&o.data),
                None => row.ops.push((key, o.op, o.data.clone())),
            }
        }
    }
    rows
}

/// Seconds merged over hosts, in order.
pub(crate) fn per_second(r: &Results) -> Vec<SecondRow> {
    let mut rows: Vec<SecondRow> = Vec::new();
    for s in &r.seconds {
        if rows.last().map(|l| l.second) != Some(s.second) {
            rows.push(SecondRow { second: s.second, step: s.step, warmup: s.warmup, interval_ns: 0, ops: Vec::new() });
        }
        let row = rows.last_mut().expect("pushed above");
        row.interval_ns = row.interval_ns.max(s.interval_ns);
        for o in &s.ops {
            match row.ops.iter_mut().find(|(_, op, _)| *op == o.op) {
                Some((_, _, d)) => d.merge(&o.data),
                None => row.ops.push((o.op.to_string(), o.op, o.data.clone())),
            }
        }
    }
    rows
}

fn rate(count: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

fn totals(ops: u64, bytes: u64, errors: u64, seconds: f64) -> Totals {
    Totals { iops: rate(ops, seconds), bytes_per_sec: rate(bytes, seconds), ops, bytes, errors }
}

/// Measured duration per host, in seconds (warm-up excluded).
fn host_durations(r: &Results) -> BTreeMap<String, f64> {
    let mut d: BTreeMap<String, u64> = BTreeMap::new();
    for s in r.seconds.iter().filter(|s| !s.warmup) {
        *d.entry(s.host.clone()).or_default() += s.interval_ns;
    }
    d.into_iter().map(|(h, ns)| (h, ns as f64 / 1e9)).collect()
}

/// Summarizes a results file read with [`ioscope_store::open`].
pub fn summarize(r: &Results, results_path: &Path) -> Summary {
    let durations = host_durations(r);
    let duration_s = durations.values().copied().fold(0.0, f64::max);

    let names = active_ops(r);
    let mut merged: Vec<OpInterval> = names.iter().map(|_| OpInterval::empty()).collect();
    let mut by_host_counts: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for s in r.seconds.iter().filter(|s| !s.warmup) {
        let t = s.total();
        let e = by_host_counts.entry(s.host.clone()).or_default();
        *e = (e.0 + t.ops, e.1 + t.bytes, e.2 + t.errors);
        for o in &s.ops {
            if let Some(i) = names.iter().position(|op| *op == o.op) {
                merged[i].merge(&o.data);
            }
        }
    }

    let mut ops = BTreeMap::new();
    let mut total = OpInterval::empty();
    for (op, d) in names.iter().zip(&merged) {
        let c = d.counts;
        total.counts.add_to_total(*op, &c);
        if !ioscope_metrics::is_sync_op(*op) {
            total.latency_ns.merge(&d.latency_ns);
        }
        ops.insert(op.to_string(), op_summary(d, duration_s));
    }

    let rows = per_second(r);
    let samples = rows
        .iter()
        .map(|row| {
            let (o, b, e) = row.total();
            let mut lat = Histogram::new();
            for (_, _, d) in row.ops.iter().filter(|(_, op, _)| !ioscope_metrics::is_sync_op(*op)) {
                lat.merge(&d.latency_ns);
            }
            let interval_s = row.interval_ns as f64 / 1e9;
            Sample {
                second: row.second,
                step: row.step,
                warmup: row.warmup,
                interval_s,
                ops: o,
                iops: rate(o, interval_s),
                bytes_per_sec: rate(b, interval_s),
                errors: e,
                latency_p50_ns: lat.quantile(0.5),
                latency_p99_ns: lat.quantile(0.99),
                latency_max_ns: lat.max(),
            }
        })
        .collect();

    let info = &r.run.info;
    let mut s = Summary {
        schema: SUMMARY_SCHEMA.to_string(),
        status: r.run.status.as_str().to_string(),
        status_detail: r.run.status_detail.clone(),
        stored_status: r.run.stored_status.as_str().to_string(),
        results_file: results_path.display().to_string(),
        ioscope_version: info.ioscope_version.clone(),
        host: info.host.clone(),
        command_line: info.command_line.clone(),
        started_unix_ms: info.started_unix_ms,
        ended_unix_ms: r.run.ended_unix_ms,
        planned_duration_s: info.planned_duration_ns as f64 / 1e9,
        duration_s,
        seconds: r.seconds_kept() as u64,
        total: totals(total.counts.ops, total.counts.bytes, total.counts.errors, duration_s),
        total_label: total_label(ops.keys().map(String::as_str)),
        ops,
        latency_relative_error: ioscope_metrics::RELATIVE_ERROR,
        samples,
        by_host: by_host_counts
            .into_iter()
            .map(|(h, (o, b, e))| {
                let d = durations.get(&h).copied().unwrap_or(0.0);
                (h, totals(o, b, e, d))
            })
            .collect(),
        hosts: hosts::host_rows(r),
        total_latency_ns: None,
        system: r.hosts.iter().cloned().collect(),
        workload: Workload {
            hash: info.workload_hash.clone(),
            plan: serde_json::from_str(&info.plan_json)
                .unwrap_or_else(|_| serde_json::Value::String(info.plan_json.clone())),
            toml: info.workload_toml.clone(),
        },
        workloads: workload_parts(r),
        flows: flow_ops(r, duration_s),
        steps: step_parts(r, &rows),
        steady: Vec::new(),
        knee: None,
        probes: r
            .probes
            .iter()
            .map(|p| ProbeSummary {
                name: p.name.clone(),
                command: p.command.clone(),
                at_s: p.at_ns as f64 / 1e9,
                duration_s: p.duration_ns as f64 / 1e9,
                exit_code: p.exit_code,
                detail: p.detail.clone(),
            })
            .collect(),
        target: target::target_summaries(r),
        notes: Vec::new(),
        checks: Vec::new(),
        verdicts: Vec::new(),
        repeats: None,
        verification: None,
        cache: None,
        ended: None,
        precondition: None,
        content: None,
    };
    // With repeats, the knee is the first repeat's (each repeat runs the same steps).
    let first_repeat: Vec<StepSummary> = s.steps.iter().filter(|st| st.repeat == 0).cloned().collect();
    s.knee = find_knee(&first_repeat);
    let plan = serde_json::from_value::<ioscope_workload::Plan>(s.workload.plan.clone()).ok();
    let until = plan.as_ref().and_then(|p| Some((p.until_ci?, p.max_repeats())));
    s.repeats = repeat::summarize(r, &rows, r.run.status == ioscope_store::Status::Completed, until);
    s.steady = steady::step_states(r, &s.samples);
    let mode = plan.as_ref().map_or("fail", |p| p.verify.name());
    s.verification = verification::summarize(r, mode);
    s.cache = cache::summarize(&s.system, &s.workload.plan);
    s.ended = plan.as_ref().and_then(|p| ended::summarize_end(&r.hosts, p));
    s.precondition = ended::summarize_precondition(&r.hosts);
    s.content = plan.as_ref().and_then(|p| content::summarize(&r.hosts, p));
    let total_latency = Distribution::of(&total.latency_ns);
    s.checks = check::evaluate_all(&s, total_latency.as_ref());
    if !s.hosts.is_empty() {
        s.total_latency_ns = Distribution::of(&total.latency_ns);
        // The same counters and rates as the host rows (over the seconds each host ran).
        s.by_host = s.hosts.iter().filter(|(_, h)| h.seconds > 0).map(|(n, h)| (n.clone(), h.totals.clone())).collect();
    }
    s.verdicts = aggregate::verdicts(&s, r);
    // One truth: the notes are the verdicts' messages.
    s.notes = s.verdicts.iter().map(|v| v.message.clone()).collect();
    s
}

/// One operation's figures from its merged data over `seconds` of measured time.
fn op_summary(d: &OpInterval, seconds: f64) -> OpSummary {
    let c = d.counts;
    OpSummary {
        iops: rate(c.ops, seconds),
        bytes_per_sec: rate(c.bytes, seconds),
        ops: c.ops,
        bytes: c.bytes,
        errors: c.errors,
        errors_by_kind: d.errors_by_kind.iter().cloned().collect(),
        skipped: d.skipped,
        distributions: OpSummary::distributions_of(d),
    }
}

/// Per flow workload (one whose rounds were recorded) of a run of several workloads, its
/// operations over the measured seconds.
fn flow_ops(r: &Results, seconds: f64) -> BTreeMap<String, BTreeMap<String, OpSummary>> {
    if !several_workloads(r) {
        return BTreeMap::new();
    }
    let measured = || r.seconds.iter().filter(|s| !s.warmup).flat_map(|s| &s.ops);
    let mut flows: BTreeMap<String, BTreeMap<Op, OpInterval>> = BTreeMap::new();
    for o in measured().filter(|o| o.op == Op::Flow) {
        flows.entry(o.workload.clone()).or_default();
    }
    for o in measured().filter(|o| !o.data.is_empty()) {
        if let Some(ops) = flows.get_mut(&o.workload) {
            ops.entry(o.op).or_insert_with(OpInterval::empty).merge(&o.data);
        }
    }
    flows
        .into_iter()
        .map(|(w, ops)| (w, ops.iter().map(|(op, d)| (op.to_string(), op_summary(d, seconds))).collect()))
        .collect()
}

/// Counts and transfer latency of `ops` over `seconds` of measured time.
fn part<'a>(ops: impl Iterator<Item = (Op, &'a OpInterval)>, seconds: f64) -> PartSummary {
    let (mut c, mut lat) = (Counts::default(), Histogram::new());
    for (op, d) in ops {
        c.add_to_total(op, &d.counts);
        if !ioscope_metrics::is_sync_op(op) {
            lat.merge(&d.latency_ns);
        }
    }
    PartSummary {
        iops: rate(c.ops, seconds),
        bytes_per_sec: rate(c.bytes, seconds),
        ops: c.ops,
        errors: c.errors,
        latency_p50_ns: lat.quantile(0.5),
        latency_p99_ns: lat.quantile(0.99),
    }
}

/// Per workload over the measured seconds (of the steps it runs in, in a run with phases),
/// for runs of several workloads.
fn workload_parts(r: &Results) -> BTreeMap<String, PartSummary> {
    let measured: Vec<_> = r.seconds.iter().filter(|s| !s.warmup).collect();
    let mut names: Vec<&str> = Vec::new();
    for o in measured.iter().flat_map(|s| &s.ops) {
        if !names.contains(&o.workload.as_str()) {
            names.push(&o.workload);
        }
    }
    if names.len() < 2 {
        return BTreeMap::new();
    }
    let seconds = host_durations(r).values().copied().fold(0.0, f64::max);
    use ioscope_workload::Plan;
    let phased: Option<Plan> = serde_json::from_str(&r.run.info.plan_json).ok().filter(|p: &Plan| p.phases() > 0);
    let steps = phased.as_ref().map(Plan::steps).unwrap_or_default();
    names
        .iter()
        .map(|name| {
            let ops = measured.iter().flat_map(|s| &s.ops).filter(|o| o.workload == *name);
            // A workload of one phase is rated over the seconds of its phase's steps.
            let own = phased.as_ref().and_then(|p| p.workloads.iter().find(|w| w.name == *name));
            let seconds = match own {
                Some(w) => {
                    let mut by_host: BTreeMap<&str, u64> = BTreeMap::new();
                    let its = |step: u32| steps.iter().any(|st| st.index == step && st.runs(w));
                    for s in measured.iter().filter(|s| its(s.step)) {
                        *by_host.entry(&s.host).or_default() += s.interval_ns;
                    }
                    by_host.values().copied().max().unwrap_or(0) as f64 / 1e9
                }
                None => seconds,
            };
            (name.to_string(), part(ops.map(|o| (o.op, &o.data)), seconds))
        })
        .collect()
}

/// Per step over its measured seconds, for runs of several steps.
fn step_parts(r: &Results, rows: &[SecondRow]) -> Vec<StepSummary> {
    if r.steps.len() < 2 {
        return Vec::new();
    }
    let repeats = r.steps.iter().any(|st| st.repeat > 0);
    r.steps
        .iter()
        .map(|st| {
            let mine: Vec<&SecondRow> = rows.iter().filter(|x| x.step == st.index && !x.warmup).collect();
            let seconds = mine.iter().map(|x| x.interval_ns).sum::<u64>() as f64 / 1e9;
            let ops = mine.iter().flat_map(|x| x.ops.iter().map(|(_, op, d)| (*op, d)));
            StepSummary {
                index: st.index,
                repeat: st.repeat,
                label: if repeats { repeat::step_label(st.repeat, &st.label) } else { st.label.clone() },
                threads: st.threads,
                rate_iops: st.rate_iops,
                seconds: mine.len() as u64,
                measured: part(ops, seconds),
            }
        })
        .collect()
}

/// The summary as pretty JSON.
pub fn render_json(s: &Summary) -> String {
    serde_json::to_string_pretty(s).expect("a Summary always serializes")
}

#[cfg(test)]
mod tests;
