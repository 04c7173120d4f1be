//! `ioscope compare A B`: the headline figures of two runs side by side, per step and per
//! operation plus the total, with the difference of B from A. When both runs have
//! repeats, the difference of the repeat means gets a Welch's t confidence interval
//! (Welch–Satterthwaite degrees of freedom); a single run on either side gets none, and
//! the comparison says the difference may be noise. See docs/compare.md.

use crate::repeat::RepeatSummary;
use crate::{format, Summary};
use ioscope_metrics::StatId;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::collections::BTreeMap;

/// The `schema` field of every [`Comparison`].
pub const COMPARE_SCHEMA: &str = "ioscope.compare/1";
/// Confidence level of every interval, in percent.
pub const CONFIDENCE_PCT: f64 = 95.0;
/// The smallest difference, in percent of A, that is reported as one: a difference is
/// significant when its whole confidence interval lies beyond ±this. Below it, storage
/// figures do not differ in a way anyone acts on, and latency percentiles come from
/// histogram buckets up to 0.78% apart (two values each within ±0.39%).
pub const MIN_EFFECT_PCT: f64 = 1.0;
/// The figures compared, as the repeats name them.
pub const FIGURES: [&str; 4] = ["iops", "bytes_per_sec", "latency_p50_ns", "latency_p99_ns"];
/// How many differing keys are listed before "…".
const MAX_LISTED: usize = 12;

/// Two runs compared: see `schema/compare.schema.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub schema: String,
    pub a: Side,
    pub b: Side,
    pub confidence_pct: f64,
    pub min_effect_pct: f64,
    /// "welch" when both runs have repeats, else "single" (no intervals).
    pub method: String,
    /// Present when the workload hashes differ.
    pub workload_differs: Option<WorkloadDifference>,
    /// What differs between the two runs' hosts and systems ("host h1: kernel: 6.1.0 vs 6.2.0").
    pub system_differs: Vec<String>,
    pub steps: Vec<StepComparison>,
    /// What a reader must know to trust the comparison (one run each, a trend, a missing step).
    pub notes: Vec<String>,
    /// The `--fail-if` conditions judged (absent without them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fail_if: Vec<FailIfResult>,
}

/// A `--fail-if` condition (fail_if.rs) judged against a comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailIfResult {
    /// As written.
    pub condition: String,
    /// True when it held in a step: the comparison fails.
    pub failed: bool,
    /// In words, per step judged: "step 0: read IOPS -7.3%: failed (significant)".
    pub message: String,
}

/// One of the two runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Side {
    pub results_file: String,
    pub status: String,
    pub host: String,
    pub started_unix_ms: i64,
    pub workload_hash: String,
    /// Repeats measured (1 for a run without `--repeat`).
    pub repeats: u32,
}

/// The workloads of the two runs differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkloadDifference {
    pub a_hash: String,
    pub b_hash: String,
    /// The plan keys whose values differ ("rate_iops", "workloads[0].threads").
    pub keys: Vec<String>,
}

/// One step (of A's numbering) in both runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepComparison {
    pub step: u32,
    pub label: String,
    pub figures: Vec<FigureComparison>,
}

/// One figure of one operation (or the total) in both runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FigureComparison {
    /// An operation name or "total".
    pub op: String,
    /// One of [`FIGURES`].
    pub figure: String,
    /// A's value: the mean of its repeats, or its single run's.
    pub a: f64,
    pub b: f64,
    pub a_repeats: u32,
    pub b_repeats: u32,
    /// B − A.
    pub difference: f64,
    /// B − A in percent of A; null when A is 0.
    pub difference_pct: Option<f64>,
    /// The confidence interval of B − A (both runs with at least 2 repeats), else null.
    pub interval: Option<Interval>,
    /// Whether the interval lies beyond ±[`MIN_EFFECT_PCT`] of A; null without an interval.
    pub significant: Option<bool>,
    /// "higher", "lower" (significant), "negligible" (the interval is within ±1%), "small"
    /// (the interval excludes 0 but not ±1%), "not-significant" (it includes 0) or "noise"
    /// (no interval: one run on a side).
    pub finding: String,
    /// The finding in one sentence.
    pub message: String,
}

/// The confidence interval of a difference of means (Welch's t).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
    /// The same in percent of A's mean; null when A's mean is 0.
    pub low_pct: Option<f64>,
    pub high_pct: Option<f64>,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value of "no difference".
    pub p_value: f64,
}

/// Welch's t-test of two samples: the difference of their means (b − a) and its interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    pub mean_a: f64,
    pub mean_b: f64,
    pub difference: f64,
    /// Standard error of the difference.
    pub se: f64,
    pub df: f64,
    /// The t quantile the interval is built with.
    pub t_crit: f64,
    pub low: f64,
    pub high: f64,
    pub p_value: f64,
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// Welch's t on samples `a` and `b` at `confidence_pct`: None unless each has at least two
/// values, all finite. Two samples without spread give an interval of zero width.
pub fn welch(a: &[f64], b: &[f64], confidence_pct: f64) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 || !a.iter().chain(b).all(|v| v.is_finite()) {
        return None;
    }
    let ((mean_a, var_a), (mean_b, var_b)) = (mean_var(a), mean_var(b));
    let (qa, qb) = (var_a / a.len() as f64, var_b / b.len() as f64);
    let se = (qa + qb).sqrt();
    let difference = mean_b - mean_a;
    // Welch–Satterthwaite; without spread on either side it is undefined, and the pooled
    // degrees of freedom stand in (the interval has zero width either way).
    let denominator = qa * qa / (a.len() as f64 - 1.0) + qb * qb / (b.len() as f64 - 1.0);
    let df = if denominator > 0.0 { (qa + qb).powi(2) / denominator } else { (a.len() + b.len() - 2) as f64 };
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    let t_crit = t.inverse_cdf(0.5 + confidence_pct / 200.0);
    let p_value = if se > 0.0 {
        2.0 * t.sf((difference / se).abs())
    } else if difference == 0.0 {
        1.0
    } else {
        0.0
    };
    let low = difference - t_crit * se;
    let high = difference + t_crit * se;
    Some(Welch { mean_a, mean_b, difference, se, df, t_crit, low, high, p_value })
}

/// One run's figures: per step, per operation and "total", per figure, the values (one per
/// repeat, or the run's single value).
struct StepFigures {
    step: u32,
    label: String,
    ops: BTreeMap<String, BTreeMap<String, Vec<f64>>>,
    trend: Option<String>,
}

fn from_repeats(r: &RepeatSummary) -> Vec<StepFigures> {
    r.steps
        .iter()
        .map(|st| StepFigures {
            step: st.step,
            label: st.label.clone(),
            ops: st
                .ops
                .iter()
                .map(|(op, figures)| {
                    let values = figures
                        .iter()
                        .filter(|(name, _)| FIGURES.contains(&name.as_str()))
                        .map(|(name, f)| {
                            let v: Vec<f64> = if f.values.is_empty() { vec![f.mean] } else { f.values.clone() };
                            (name.clone(), v.into_iter().filter(|x| x.is_finite()).collect::<Vec<f64>>())
                        })
                        .filter(|(_, v)| !v.is_empty())
                        .collect();
                    (op.clone(), values)
                })
                .collect(),
            trend: st.trend.clone(),
        })
        .collect()
}

fn one(pairs: &[(&str, Option<f64>)]) -> BTreeMap<String, Vec<f64>> {
    pairs.iter().filter_map(|(k, v)| v.filter(|x| x.is_finite()).map(|x| (k.to_string(), vec![x]))).collect()
}

/// A run without repeats: per step its total (the summary keeps no per-step operations),
/// or, for a run of one step, each operation and the total.
fn from_single(s: &Summary) -> Vec<StepFigures> {
    if !s.steps.is_empty() {
        return s
            .steps
            .iter()
            .filter(|st| st.seconds > 0)
            .map(|st| {
                let p = &st.measured;
                let total = one(&[
                    ("iops", Some(p.iops)),
                    ("bytes_per_sec", Some(p.bytes_per_sec)),
                    ("latency_p50_ns", p.latency_p50_ns.map(|v| v as f64)),
                    ("latency_p99_ns", p.latency_p99_ns.map(|v| v as f64)),
                ]);
                StepFigures {
                    step: st.index,
                    label: st.label.clone(),
                    ops: [("total".into(), total)].into(),
                    trend: None,
                }
            })
            .collect();
    }
    let mut ops = BTreeMap::new();
    for (name, o) in &s.ops {
        let lat = o.percentiles(StatId::Latency);
        ops.insert(
            name.clone(),
            one(&[
                ("iops", Some(o.iops)),
                ("bytes_per_sec", Some(o.bytes_per_sec)),
                ("latency_p50_ns", lat.map(|d| d.p50 as f64)),
                ("latency_p99_ns", lat.map(|d| d.p99 as f64)),
            ]),
        );
    }
    // The total's latency: merged over hosts when the summary has it, else the one
    // transfer operation's (never made up from several operations' percentiles).
    let transfers: Vec<_> = s
        .ops
        .iter()
        .filter(|(n, _)| ioscope_metrics::Op::parse(n).is_none_or(|op| !ioscope_metrics::is_sync_op(op)))
        .collect();
    let lat = s.total_latency_ns.as_ref().or(match transfers.as_slice() {
        [(_, o)] => o.percentiles(StatId::Latency),
        _ => None,
    });
    ops.insert(
        "total".into(),
        one(&[
            ("iops", Some(s.total.iops)),
            ("bytes_per_sec", Some(s.total.bytes_per_sec)),
            ("latency_p50_ns", lat.map(|d| d.p50 as f64)),
            ("latency_p99_ns", lat.map(|d| d.p99 as f64)),
        ]),
    );
    if s.total.ops == 0 && s.ops.is_empty() {
        return Vec::new();
    }
    vec![StepFigures { step: 0, label: String::new(), ops, trend: None }]
}

fn figures_of(s: &Summary) -> (Vec<StepFigures>, u32) {
    match &s.repeats {
        Some(r) if !r.steps.is_empty() => (from_repeats(r), r.count),
        _ => (from_single(s), 1),
    }
}

fn side(s: &Summary, repeats: u32) -> Side {
    Side {
        results_file: s.results_file.clone(),
        status: s.status.clone(),
        host: s.host.clone(),
        started_unix_ms: s.started_unix_ms,
        workload_hash: s.workload.hash.clone(),
        repeats,
    }
}

/// Operations in table order: read and write first, the rest by name, the total last.
fn op_rank(name: &str) -> (u8, &str) {
    match name {
        "read" => (0, name),
        "write" => (1, name),
        "total" => (3, name),
        _ => (2, name),
    }
}

/// A signed percentage: "+20.0%", "-0.04%".
pub fn signed_pct(p: f64) -> String {
    let sign = if p < 0.0 { "-" } else { "+" };
    let a = p.abs();
    if a >= 0.1 || a == 0.0 {
        format!("{sign}{a:.1}%")
    } else {
        format!("{sign}{a:.2}%")
    }
}

/// Compares run `b` with run `a`.
pub fn compare(a: &Summary, b: &Summary) -> Comparison {
    let (fa, na) = figures_of(a);
    let (fb, nb) = figures_of(b);
    let mut notes = Vec::new();
    let both_repeated = na >= 2 && nb >= 2;
    if !both_repeated {
        notes.push(match (na >= 2, nb >= 2) {
            (false, false) => "one run each: a difference may be noise; run both with --repeat N (at least 3) \
                               for a confidence interval of the difference"
                .to_string(),
            (true, false) => format!(
                "A has {na} repeats, B is one run: no interval; run B with --repeat N too for a confidence interval"
            ),
            _ => format!(
                "A is one run, B has {nb} repeats: no interval; run A with --repeat N too for a confidence interval"
            ),
        });
    }
    for (name, s) in [("A", a), ("B", b)] {
        if s.status != "completed" {
            notes.push(format!("{name} is {} (not completed): its figures cover only what was measured", s.status));
        }
    }
    let mut steps = Vec::new();
    for sa in &fa {
        let Some(sb) = fb.iter().find(|x| x.step == sa.step) else {
            notes.push(format!("step {} is only in A", sa.step));
            continue;
        };
        if sa.label != sb.label {
            notes.push(format!("step {}: A ran {:?}, B ran {:?}", sa.step, sa.label, sb.label));
        }
        for (name, x) in [("A", sa), ("B", sb)] {
            if let Some(t) = &x.trend {
                notes.push(format!("{name} step {}: {t}; the interval assumes independent repeats", x.step));
            }
        }
        let mut ops: Vec<&String> = sa.ops.keys().filter(|k| sb.ops.contains_key(*k)).collect();
        ops.sort_by(|x, y| op_rank(x).cmp(&op_rank(y)));
        for (only, one_side, other) in [("A", sa, sb), ("B", sb, sa)] {
            // A side with only the total (a single run of several steps) has no operations to miss.
            if other.ops.len() > 1 {
                for op in one_side.ops.keys().filter(|k| !other.ops.contains_key(*k)) {
                    notes.push(format!("step {}: {op} is only in {only}", sa.step));
                }
            }
        }
        let mut figures = Vec::new();
        for op in ops {
            for figure in FIGURES {
                let (Some(va), Some(vb)) = (sa.ops[op].get(figure), sb.ops[op].get(figure)) else { continue };
                // Operations that move no bytes: nothing to compare.
                if figure == "bytes_per_sec" && va.iter().chain(vb).all(|v| *v == 0.0) {
                    continue;
                }
                figures.push(figure_comparison(op, figure, va, vb));
            }
        }
        steps.push(StepComparison { step: sa.step, label: sa.label.clone(), figures });
    }
    for sb in fb.iter().filter(|x| !fa.iter().any(|y| y.step == x.step)) {
        notes.push(format!("step {} is only in B", sb.step));
    }
    notes.extend(load_notes(a, b));
    for (name, s) in [("A", a), ("B", b)] {
        if let Some(v) = s.verdicts.iter().find(|v| v.id == "rate-not-held") {
            notes.push(format!("{name}: {} [rate-not-held]", v.message));
        }
    }
    let workload_differs = (a.workload.hash != b.workload.hash).then(|| WorkloadDifference {
        a_hash: a.workload.hash.clone(),
        b_hash: b.workload.hash.clone(),
        keys: listed(differing_keys(&a.workload.plan, &b.workload.plan, |_| false)),
    });
    Comparison {
        schema: COMPARE_SCHEMA.to_string(),
        a: side(a, na),
        b: side(b, nb),
        confidence_pct: CONFIDENCE_PCT,
        min_effect_pct: MIN_EFFECT_PCT,
        method: if both_repeated { "welch" } else { "single" }.to_string(),
        workload_differs,
        system_differs: system_differences(a, b),
        steps,
        notes,
        fail_if: Vec::new(),
    }
}

/// Other programs' share of a host's CPUs (percentage points of all of them) that, when
/// it differs this much between the runs, is named: enough to move latency on a machine
/// whose CPUs the run needs.
pub const LOAD_DIFFERS_POINTS: f64 = 10.0;

/// Hosts in both runs whose machines were busy with other work to different degrees
/// (`machine_load` of the system record: CPU time of everything but ioscope over the run).
fn load_notes(a: &Summary, b: &Summary) -> Vec<String> {
    let other = |s: &Summary, h: &str| s.system.get(h)?["machine_load"]["other_cpu_pct"].as_f64();
    let (ka, kb): (Vec<&String>, Vec<&String>) = (a.system.keys().collect(), b.system.keys().collect());
    let pairs: Vec<(&String, &String)> = match (ka.as_slice(), kb.as_slice()) {
        ([x], [y]) => vec![(*x, *y)],
        _ => a.system.keys().filter(|h| b.system.contains_key(*h)).map(|h| (h, h)).collect(),
    };
    let mut out = Vec::new();
    for (ha, hb) in pairs {
        let (Some(x), Some(y)) = (other(a, ha), other(b, hb)) else { continue };
        if (x - y).abs() >= LOAD_DIFFERS_POINTS {
            let host = if ha == hb { format!("host {ha}") } else { format!("hosts {ha} and {hb}") };
            out.push(format!(
                "the machine's load differed: on {host}, other programs kept {x:.0}% of the CPUs busy during A and \
                 {y:.0}% during B; latency (and IOPS where the run needs CPU) may differ for that reason, not the storage's"
            ));
        }
    }
    out
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len().max(1) as f64
}

fn figure_comparison(op: &str, figure: &str, va: &[f64], vb: &[f64]) -> FigureComparison {
    let (a, b) = (mean(va), mean(vb));
    let difference = b - a;
    let pct = |x: f64| (a != 0.0).then(|| x / a.abs() * 100.0);
    let difference_pct = pct(difference);
    let direction = if difference < 0.0 { "lower" } else { "higher" };
    let size = difference_pct.map_or_else(|| format::num(difference.abs()), |p| signed_pct(p.abs()).replace('+', ""));
    let interval = welch(va, vb, CONFIDENCE_PCT).map(|w| Interval {
        low: w.low,
        high: w.high,
        low_pct: pct(w.low),
        high_pct: pct(w.high),
        df: w.df,
        p_value: w.p_value,
    });
    let (significant, finding, message) = match &interval {
        None => {
            let what = if difference == 0.0 { "B equals A".to_string() } else { format!("B is {size} {direction}") };
            let runs = if va.len() < 2 && vb.len() < 2 { "in one run each" } else { "with one run on a side" };
            (None, "noise".to_string(), format!("{what} {runs}: this may be noise (use --repeat N on both)"))
        }
        Some(i) => {
            let (low, high, band) = match (i.low_pct, i.high_pct) {
                (Some(l), Some(h)) => (l, h, MIN_EFFECT_PCT),
                _ => (i.low, i.high, 0.0),
            };
            let ci = match (i.low_pct, i.high_pct) {
                (Some(l), Some(h)) => format!("95% CI {} to {}", signed_pct(l), signed_pct(h)),
                _ => format!("95% CI {} to {}", format::num(i.low), format::num(i.high)),
            };
            if low > band || high < -band {
                (Some(true), direction.to_string(), format!("B is {size} {direction} ({ci})"))
            } else if low >= -band && high <= band {
                (Some(false), "negligible".into(), format!("no difference beyond ±{MIN_EFFECT_PCT}% ({ci})"))
            } else if low > 0.0 || high < 0.0 {
                (
                    Some(false),
                    "small".into(),
                    format!("B is {size} {direction}, but not shown to differ by more than ±{MIN_EFFECT_PCT}% ({ci})"),
                )
            } else {
                (Some(false), "not-significant".into(), format!("no significant difference ({ci} includes 0)"))
            }
        }
    };
    FigureComparison {
        op: op.to_string(),
        figure: figure.to_string(),
        a,
        b,
        a_repeats: va.len() as u32,
        b_repeats: vb.len() as u32,
        difference,
        difference_pct,
        interval,
        significant,
        finding,
        message,
    }
}

fn listed(mut keys: Vec<String>) -> Vec<String> {
    if keys.len() > MAX_LISTED {
        keys.truncate(MAX_LISTED);
        keys.push("…".into());
    }
    keys
}

/// Paths of the leaves that differ between `a` and `b` ("rate_iops", "workloads[0].threads"),
/// leaving out keys for which `skip` says so.
fn differing_keys(a: &Value, b: &Value, skip: fn(&str) -> bool) -> Vec<String> {
    fn walk(a: Option<&Value>, b: Option<&Value>, path: String, skip: fn(&str) -> bool, out: &mut Vec<String>) {
        match (a, b) {
            (Some(Value::Object(x)), Some(Value::Object(y))) => {
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort();
                keys.dedup();
                for k in keys.into_iter().filter(|k| !skip(k)) {
                    let p = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    walk(x.get(k), y.get(k), p, skip, out);
                }
            }
            (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
                for (i, (u, v)) in x.iter().zip(y).enumerate() {
                    walk(Some(u), Some(v), format!("{path}[{i}]"), skip, out);
                }
            }
            (x, y) if x == y => {}
            _ => out.push(if path.is_empty() { "(the whole plan)".into() } else { path }),
        }
    }
    let mut out = Vec::new();
    walk(Some(a), Some(b), String::new(), skip, &mut out);
    out
}

/// What changes between two runs on the same machine (free memory, load, uptime, the
/// boot, interface counters) is no difference of system; nor is the host's name, which is
/// compared as the host, or its machine id.
fn volatile(key: &str) -> bool {
    ["hostname", "machine_id", "boot_id", "nic_counters", "at_monotonic_ns"].contains(&key)
        || ["free", "available", "uptime", "load"].iter().any(|w| key.contains(w))
}

/// The part of a host's record that can change a run's figures: all of it but the
/// interfaces the run did not use (a virtual NIC another program made between two local
/// runs is no difference). The interfaces used are the route's to a network target, on
/// either side.
fn relevant(config: &Value, used_nics: &[String]) -> Value {
    let mut c = config.clone();
    if let Some(nics) = c.get_mut("nics").and_then(Value::as_object_mut) {
        nics.retain(|name, _| used_nics.contains(name));
    }
    c
}

fn short(v: Option<&Value>) -> String {
    let text = match v {
        None => "absent".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    };
    if text.chars().count() > 40 {
        format!("{}…", text.chars().take(40).collect::<String>())
    } else {
        text
    }
}

fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut at = v;
    for part in path.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((k, rest)) => (k, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        at = at.get(key)?;
        if let Some(i) = index {
            at = at.get(i)?;
        }
    }
    Some(at)
}

/// Hosts that differ, and each differing key of the systems of hosts in both runs (of the
/// one host each, when each ran on one host).
fn system_differences(a: &Summary, b: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    let (ha, hb): (Vec<&String>, Vec<&String>) = (a.system.keys().collect(), b.system.keys().collect());
    if ha != hb {
        let names = |h: &[&String]| h.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
        out.push(format!("hosts: A ran on {}, B on {}", names(&ha), names(&hb)));
    }
    let pairs: Vec<(&String, &Value, &Value)> = match (ha.as_slice(), hb.as_slice()) {
        ([x], [y]) => vec![(*x, &a.system[*x], &b.system[*y])],
        _ => ha.iter().filter(|h| b.system.contains_key(**h)).map(|h| (*h, &a.system[*h], &b.system[*h])).collect(),
    };
    let mut keys = Vec::new();
    for (host, x, y) in pairs {
        let used: Vec<String> = [x, y].iter().filter_map(|c| c["route"]["nic"].as_str().map(str::to_string)).collect();
        let (x, y) = (&relevant(x, &used), &relevant(y, &used));
        for k in differing_keys(x, y, volatile) {
            keys.push(format!("host {host}: {k}: {} vs {}", short(lookup(x, &k)), short(lookup(y, &k))));
        }
    }
    out.extend(listed(keys));
    out
}

/// A figure's name in the table.
pub(crate) fn figure_label(figure: &str) -> &str {
    match figure {
        "iops" => "IOPS",
        "bytes_per_sec" => "MB/s",
        "latency_p50_ns" => "p50",
        "latency_p99_ns" => "p99",
        other => other,
    }
}

/// A figure's value for people.
fn value(figure: &str, v: f64) -> String {
    match figure {
        "iops" => format::iops(v),
        "bytes_per_sec" => format::float(v / 1e6, 1),
        f if f.ends_with("_ns") => format::ns(v.max(0.0).round() as u64),
        _ => format::num(v),
    }
}

fn signed_value(figure: &str, v: f64) -> String {
    format!("{}{}", if v < 0.0 { "-" } else { "+" }, value(figure, v.abs()))
}

/// The comparison as a table per step, with what differs and the notes.
pub fn render_compare_text(c: &Comparison) -> String {
    let repeats = |n: u32| if n > 1 { format!("{n} repeats") } else { "one run".to_string() };
    let mut out = format!(
        "compare  A: {} ({}, {})\n         B: {} ({}, {})\n",
        c.a.results_file,
        repeats(c.a.repeats),
        c.a.status,
        c.b.results_file,
        repeats(c.b.repeats),
        c.b.status
    );
    if let Some(w) = &c.workload_differs {
        let keys = if w.keys.is_empty() { String::new() } else { format!(": {}", w.keys.join(", ")) };
        out.push_str(&format!(
            "workload differs (hash {} vs {}){keys}\n",
            short_hash(&w.a_hash),
            short_hash(&w.b_hash)
        ));
    } else {
        out.push_str("workload same (hash ");
        out.push_str(&short_hash(&c.a.workload_hash));
        out.push_str(")\n");
    }
    for d in &c.system_differs {
        out.push_str(&format!("system differs: {d}\n"));
    }
    let several = c.steps.len() > 1;
    for st in &c.steps {
        out.push('\n');
        if several || !st.label.is_empty() {
            out.push_str(format!("step {} {}", st.step, st.label).trim_end());
            out.push('\n');
        }
        let mut rows =
            vec![["figure", "A", "B", "B - A", "%", "95% CI of B - A", "significant"].map(String::from).to_vec()];
        for f in &st.figures {
            let ci = match &f.interval {
                Some(i) => match (i.low_pct, i.high_pct) {
                    (Some(l), Some(h)) => format!("{} to {}", signed_pct(l), signed_pct(h)),
                    _ => format!("{} to {}", signed_value(&f.figure, i.low), signed_value(&f.figure, i.high)),
                },
                None => "may be noise".to_string(),
            };
            rows.push(vec![
                format!("{} {}", f.op, figure_label(&f.figure)),
                value(&f.figure, f.a),
                value(&f.figure, f.b),
                signed_value(&f.figure, f.difference),
                f.difference_pct.map_or(String::new(), signed_pct),
                ci,
                match (f.significant, f.finding.as_str()) {
                    (Some(true), _) => "yes".to_string(),
                    (Some(false), "negligible") => "no (within ±1%)".to_string(),
                    (Some(false), "small") => "no (may be under 1%)".to_string(),
                    (Some(false), _) => "no".to_string(),
                    (None, _) => "-".to_string(),
                },
            ]);
        }
        out.push_str(&crate::text::table(&rows));
    }
    if c.steps.is_empty() {
        out.push_str("\nnothing to compare: no step has figures in both runs\n");
    }
    if c.method == "welch" {
        out.push_str(&format!(
            "method: Welch's t on the repeat means, {}% intervals; significant = the interval of B - A lies beyond ±{}% of A\n",
            c.confidence_pct, c.min_effect_pct
        ));
    }
    for n in &c.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    for f in &c.fail_if {
        let word = if f.failed { "FAILED" } else { "passed" };
        out.push_str(&format!("fail-if {word}: {} ({})\n", f.condition, f.message));
    }
    out
}

fn short_hash(h: &str) -> String {
    if h.chars().count() > 8 {
        format!("{}…", h.chars().take(8).collect::<String>())
    } else {
        h.to_string()
    }
}

/// The comparison as pretty JSON.
pub fn render_compare_json(c: &Comparison) -> String {
    serde_json::to_string_pretty(c).expect("a Comparison always serializes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn on_host(config: Value) -> Summary {
        let mut s = crate::link::tests::empty_summary();
        s.system.insert("client".into(), config);
        s
    }

    fn record(nics: Value, route_nic: Option<&str>) -> Value {
        json!({
            "kernel": "6.1.0", "memory_bytes": 8u64 << 30, "machine_id": "aa", "boot_id": "b1",
            "nics": nics, "route": route_nic.map(|n| json!({ "to": "server", "nic": n })),
        })
    }

    #[test]
    fn compare_names_only_the_system_differences_that_can_change_the_figures() {
        let eth0 = json!({ "mtu_bytes": 1500, "speed_mbit_per_sec": 1000 });
        // A local run: a virtual NIC another program made between the two runs, another
        // boot, other counters: none of it is a difference.
        let a = on_host(record(json!({ "eth0": eth0 }), None));
        let mut b_config = record(json!({ "eth0": eth0, "veth9f3a": { "mtu_bytes": 1500 } }), None);
        b_config["boot_id"] = json!("b2");
        b_config["nic_counters"] = json!({ "nic": "eth0", "start": { "rx_bytes": 5 } });
        assert_eq!(system_differences(&a, &on_host(b_config)), Vec::<String>::new());
        // The interface a network target's traffic took is one: its MTU changed.
        let a = on_host(record(json!({ "eth0": eth0, "eth1": eth0 }), Some("eth0")));
        let b = on_host(record(
            json!({ "eth0": { "mtu_bytes": 9000, "speed_mbit_per_sec": 1000 }, "eth1": {} }),
            Some("eth0"),
        ));
        assert_eq!(system_differences(&a, &b), ["host client: nics.eth0.mtu_bytes: 1500 vs 9000"]);
        // So are the kernel and memory, always.
        let mut c = record(json!({ "eth0": eth0 }), None);
        c["kernel"] = json!("6.2.0");
        let d = system_differences(&on_host(record(json!({ "eth0": eth0 }), None)), &on_host(c));
        assert_eq!(d, ["host client: kernel: 6.1.0 vs 6.2.0"]);
    }

    #[test]
    fn a_comparison_says_when_the_machines_load_differed_between_the_runs() {
        let loaded = |other: f64| {
            let mut c = record(json!({}), None);
            c["machine_load"] = json!({ "cpu_busy_pct": other + 5.0, "ioscope_cpu_pct": 5.0, "other_cpu_pct": other });
            on_host(c)
        };
        let c = compare(&loaded(2.0), &loaded(48.0));
        let note = c.notes.iter().find(|n| n.contains("load differed")).unwrap_or_else(|| panic!("{:#?}", c.notes));
        assert!(note.contains("2% of the CPUs busy during A and 48% during B"), "{note}");
        // The same company (within 10 points) is no note; nor is a file without the record.
        let c = compare(&loaded(2.0), &loaded(9.0));
        assert!(!c.notes.iter().any(|n| n.contains("load differed")), "{:#?}", c.notes);
        let c = compare(&on_host(record(json!({}), None)), &loaded(90.0));
        assert!(!c.notes.iter().any(|n| n.contains("load differed")), "{:#?}", c.notes);
    }
}
