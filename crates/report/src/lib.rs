//! What a run measured, for people and programs: the [`Summary`] (versioned JSON with a
//! JSON Schema in `schema/summary.schema.json`), the terminal summary ([`render_text`]),
//! and per-second exports ([`export_csv`], [`export_json`]).
//!
//! Every number is derived from the stored counters and histograms only: rates divide
//! counts by the measured intervals, percentiles come from the merged log-linear
//! histograms (within [`ioscope_metrics::RELATIVE_ERROR`]), means from their exact sums.

mod export;
pub mod format;
mod notes;
mod text;

pub use export::{export_csv, export_json};
pub use text::render_text;

use ioscope_metrics::{Counts, Histogram, OpInterval};
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
    /// Per operation (only operations that completed or failed at least once).
    pub ops: BTreeMap<String, OpSummary>,
    /// Percentiles are within this fraction of the true value.
    pub latency_relative_error: f64,
    /// One entry per second, all hosts and operations together.
    pub samples: Vec<Sample>,
    /// Totals per host, each over its own measured duration.
    pub by_host: BTreeMap<String, Totals>,
    /// Each host's configuration as stored.
    pub system: BTreeMap<String, serde_json::Value>,
    pub workload: Workload,
    /// Methodology: what limits how far these numbers can be trusted.
    pub notes: Vec<String>,
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
    /// Response time from the intended start; null when nothing completed.
    pub latency_ns: Option<Distribution>,
    /// Service time from issue; null when nothing completed.
    pub service_time_ns: Option<Distribution>,
    pub size_bytes: Option<SizeStats>,
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

/// One second, all hosts together; totals and latency cover transfers (see [`ioscope_metrics::is_sync_op`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub second: u32,
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
    pub interval_ns: u64,
    pub ops: Vec<(String, OpInterval)>,
}

impl SecondRow {
    pub fn total(&self) -> (u64, u64, u64) {
        let mut t = Counts::default();
        for (op, d) in &self.ops {
            t.add_to_total(op, &d.counts);
        }
        (t.ops, t.bytes, t.errors)
    }
    pub fn op(&self, name: &str) -> Option<&OpInterval> {
        self.ops.iter().find(|(n, _)| n == name).map(|(_, d)| d)
    }
}

/// Operations that completed or failed at least once, in order of first appearance.
pub(crate) fn active_ops(r: &Results) -> Vec<String> {
    r.op_names()
        .into_iter()
        .filter(|name| r.seconds.iter().flat_map(|s| &s.ops).any(|o| &o.op == name && !o.data.is_empty()))
        .collect()
}

/// Seconds merged over hosts, in order.
pub(crate) fn per_second(r: &Results) -> Vec<SecondRow> {
    let mut rows: Vec<SecondRow> = Vec::new();
    for s in &r.seconds {
        if rows.last().map(|l| l.second) != Some(s.second) {
            rows.push(SecondRow { second: s.second, interval_ns: 0, ops: Vec::new() });
        }
        let row = rows.last_mut().expect("pushed above");
        row.interval_ns = row.interval_ns.max(s.interval_ns);
        for o in &s.ops {
            match row.ops.iter_mut().find(|(n, _)| *n == o.op) {
                Some((_, d)) => d.merge(&o.data),
                None => row.ops.push((o.op.clone(), o.data.clone())),
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

/// Measured duration per host, in seconds.
fn host_durations(r: &Results) -> BTreeMap<String, f64> {
    let mut d: BTreeMap<String, u64> = BTreeMap::new();
    for s in &r.seconds {
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
    for s in &r.seconds {
        let t = s.total();
        let e = by_host_counts.entry(s.host.clone()).or_default();
        *e = (e.0 + t.ops, e.1 + t.bytes, e.2 + t.errors);
        for o in &s.ops {
            if let Some(i) = names.iter().position(|n| *n == o.op) {
                merged[i].merge(&o.data);
            }
        }
    }

    let mut ops = BTreeMap::new();
    let mut total = OpInterval::empty();
    for (name, d) in names.iter().zip(&merged) {
        let c = d.counts;
        total.counts.add_to_total(name, &c);
        ops.insert(
            name.clone(),
            OpSummary {
                iops: rate(c.ops, duration_s),
                bytes_per_sec: rate(c.bytes, duration_s),
                ops: c.ops,
                bytes: c.bytes,
                errors: c.errors,
                latency_ns: Distribution::of(&d.latency_ns),
                service_time_ns: Distribution::of(&d.service_ns),
                size_bytes: d.size_bytes.mean().map(|mean| SizeStats {
                    mean: mean.round() as u64,
                    min: d.size_bytes.min().unwrap_or(0),
                    max: d.size_bytes.max().unwrap_or(0),
                }),
            },
        );
    }

    let samples = per_second(r)
        .into_iter()
        .map(|row| {
            let (o, b, e) = row.total();
            let mut lat = Histogram::new();
            for (_, d) in row.ops.iter().filter(|(op, _)| !ioscope_metrics::is_sync_op(op)) {
                lat.merge(&d.latency_ns);
            }
            let interval_s = row.interval_ns as f64 / 1e9;
            Sample {
                second: row.second,
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
        system: r.hosts.iter().cloned().collect(),
        workload: Workload {
            hash: info.workload_hash.clone(),
            plan: serde_json::from_str(&info.plan_json)
                .unwrap_or_else(|_| serde_json::Value::String(info.plan_json.clone())),
            toml: info.workload_toml.clone(),
        },
        notes: Vec::new(),
    };
    s.notes = notes::notes(&s);
    s
}

/// The summary as pretty JSON.
pub fn render_json(s: &Summary) -> String {
    serde_json::to_string_pretty(s).expect("a Summary always serializes")
}

#[cfg(test)]
mod tests;
