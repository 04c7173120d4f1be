//! Checks evaluated: each of a run's checks (`--check`, parsed by
//! ioscope_workload::check) against its summary's figures, so a check agrees with every
//! other view of the figure it names (docs/checks.md).

use crate::{format, Distribution, Summary};
use ioscope_metrics::StatId;
use ioscope_workload::check::{Check, Figure, Part, Scope};
use serde::{Deserialize, Serialize};

/// A check evaluated against a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// As written.
    pub check: String,
    pub passed: bool,
    /// The figure as measured, in `unit`; null when the run has none (no such
    /// operation, nothing completed): such a check fails.
    pub measured: Option<f64>,
    /// The threshold, in `unit`.
    pub threshold: f64,
    /// `ns`, `bytes/s` or `count`.
    pub unit: String,
    /// In words: "read latency p99 1.3 ms < 2.0 ms", or why nothing was measured.
    pub message: String,
}

/// Evaluates a check against a run's summary; `total_latency` is the latency of the
/// total's operations, merged from every operation's histogram.
pub fn evaluate(c: &Check, s: &Summary, total_latency: Option<&Distribution>) -> CheckResult {
    let unit = c.figure.unit();
    let result = |measured: Option<f64>, message: String| CheckResult {
        check: c.text.clone(),
        passed: measured.is_some_and(|m| c.cmp.holds(m, c.threshold)),
        measured,
        threshold: c.threshold,
        unit: unit.to_string(),
        message,
    };
    let scope_name = match &c.scope {
        Scope::Total => s.total_label.clone(),
        Scope::Op(op) => op.clone(),
    };
    let measured = match (&c.scope, c.figure) {
        (Scope::Op(op), _) if !s.ops.contains_key(op) => {
            let ops: Vec<&str> = s.ops.keys().map(String::as_str).collect();
            return result(
                None,
                format!("failed: the run has no {op} operations (it has: {}), so nothing was measured", ops.join(", ")),
            );
        }
        (Scope::Total, Figure::Iops) => Some(s.total.iops),
        (Scope::Total, Figure::BytesPerSec) => Some(s.total.bytes_per_sec),
        (Scope::Total, Figure::Ops) => Some(s.total.ops as f64),
        (Scope::Total, Figure::Errors) => Some(s.total.errors as f64),
        (Scope::Total, Figure::Latency(part)) => total_latency.map(|d| part_of(part, d)),
        (Scope::Total, Figure::ServiceTime(_)) => None, // refused by parse
        (Scope::Op(op), figure) => {
            let o = &s.ops[op];
            match figure {
                Figure::Iops => Some(o.iops),
                Figure::BytesPerSec => Some(o.bytes_per_sec),
                Figure::Ops => Some(o.ops as f64),
                Figure::Errors => Some(o.errors as f64),
                Figure::Latency(part) => o.percentiles(StatId::Latency).map(|d| part_of(part, d)),
                Figure::ServiceTime(part) => o.percentiles(StatId::ServiceTime).map(|d| part_of(part, d)),
            }
        }
    };
    let shown = |v: f64| match unit {
        "ns" => format::ns(v.max(0.0).round() as u64),
        "bytes/s" => format!("{}/s", format::bytes(v.max(0.0).round() as u64)),
        _ => trim_number(v),
    };
    let what = format!("{scope_name} {}", c.figure.words());
    let message = match measured {
        Some(m) => {
            let verdict = if c.cmp.holds(m, c.threshold) { "passed" } else { "failed" };
            format!("{verdict}: {what} {} {} {}", shown(m), c.cmp.symbol(), shown(c.threshold))
        }
        None => format!("failed: {what} was not measured in this run"),
    };
    result(measured, message)
}

/// The checks of the run's plan, evaluated; one that does not parse (a results file edited
/// by hand: `ioscope run` refuses them) fails, saying why.
pub(crate) fn evaluate_all(s: &Summary, total_latency: Option<&Distribution>) -> Vec<CheckResult> {
    let Some(texts) = s.workload.plan.get("checks").and_then(|c| c.as_array()) else { return Vec::new() };
    texts
        .iter()
        .map(|t| {
            let text = t.as_str().unwrap_or_default();
            match Check::parse(text) {
                Ok(c) => evaluate(&c, s, total_latency),
                Err(e) => CheckResult {
                    check: text.to_string(),
                    passed: false,
                    measured: None,
                    threshold: 0.0,
                    unit: String::new(),
                    message: format!("failed: the check does not parse ({e})"),
                },
            }
        })
        .collect()
}

/// A count with thousands separators: "36,528,026", "0", "0.5".
fn trim_number(v: f64) -> String {
    if v.abs() < 1.0 && v.fract() != 0.0 {
        format!("{v:.1}")
    } else if v.abs() < 1e18 {
        let sign = if v < 0.0 { "-" } else { "" };
        format!("{sign}{}", format::int(v.abs().round() as u64))
    } else {
        format!("{v:.0}")
    }
}

/// The value of one part of a distribution.
fn part_of(part: Part, d: &Distribution) -> f64 {
    (match part {
        Part::Mean => d.mean,
        Part::Min => d.min,
        Part::P50 => d.p50,
        Part::P90 => d.p90,
        Part::P99 => d.p99,
        Part::P999 => d.p999,
        Part::Max => d.max,
    }) as f64
}
