//! Per-second exports: one row per second (all hosts merged), totals first, then each
//! operation present in the run (`workload.op` when the run had several workloads). CSV
//! for spreadsheets, JSON for programs. The totals count what the summary's total row
//! counts ([`crate::Summary::total_label`]: not fsync, fdatasync, open or close, which have
//! their own columns); their names stay the same in every run, for programs.

use crate::{active_ops, active_workload_ops, per_second_by, several_workloads, SecondRow};
use ioscope_metrics::OpInterval;
use ioscope_store::Results;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
struct Row {
    second: u32,
    step: u32,
    warmup: bool,
    interval_s: f64,
    ops_total: u64,
    iops: f64,
    bytes_per_sec: f64,
    errors: u64,
    ops: BTreeMap<String, OpRow>,
}

#[derive(Serialize)]
struct OpRow {
    ops: u64,
    iops: f64,
    bytes_per_sec: f64,
    errors: u64,
    /// JSON only: failed I/Os by kind, and file-tree picks that found nothing.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    errors_by_kind: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "is_zero")]
    skipped: u64,
    lat_mean_ns: Option<u64>,
    lat_p50_ns: Option<u64>,
    lat_p99_ns: Option<u64>,
    lat_max_ns: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn rate(n: u64, s: f64) -> f64 {
    if s > 0.0 {
        n as f64 / s
    } else {
        0.0
    }
}

fn op_row(d: Option<&OpInterval>, interval_s: f64) -> OpRow {
    let empty = OpInterval::empty();
    let d = d.unwrap_or(&empty);
    let h = &d.latency_ns;
    OpRow {
        ops: d.counts.ops,
        iops: rate(d.counts.ops, interval_s),
        bytes_per_sec: rate(d.counts.bytes, interval_s),
        errors: d.counts.errors,
        errors_by_kind: d.errors_by_kind.iter().cloned().collect(),
        skipped: d.skipped,
        lat_mean_ns: h.mean().map(|m| m.round() as u64),
        lat_p50_ns: h.quantile(0.5),
        lat_p99_ns: h.quantile(0.99),
        lat_max_ns: h.max(),
    }
}

fn rows(r: &Results) -> (Vec<String>, Vec<(Row, Vec<OpRow>)>) {
    let split = several_workloads(r);
    let names = if split { active_workload_ops(r) } else { active_ops(r).iter().map(|op| op.to_string()).collect() };
    let rows = per_second_by(r, split)
        .iter()
        .map(|sr: &SecondRow| {
            let (o, b, e) = sr.total();
            let interval_s = sr.interval_ns as f64 / 1e9;
            let per_op: Vec<OpRow> = names.iter().map(|n| op_row(sr.op(n), interval_s)).collect();
            let row = Row {
                second: sr.second,
                step: sr.step,
                warmup: sr.warmup,
                interval_s,
                ops_total: o,
                iops: rate(o, interval_s),
                bytes_per_sec: rate(b, interval_s),
                errors: e,
                ops: BTreeMap::new(),
            };
            (row, per_op)
        })
        .collect();
    (names, rows)
}

/// A float without needless digits: "1000", "1.5", "333.333".
fn num(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn opt(v: Option<u64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// One CSV row per second: `second,step,warmup,interval_s,ops_total,iops,bytes_per_sec,errors`, then
/// per operation `<op>_iops,<op>_bytes_per_sec,<op>_errors,<op>_lat_mean_ns,<op>_lat_p50_ns,
/// <op>_lat_p99_ns,<op>_lat_max_ns` (latency cells empty when nothing completed).
pub fn export_csv(r: &Results) -> String {
    let (names, rows) = rows(r);
    let mut header: Vec<String> =
        ["second", "step", "warmup", "interval_s", "ops_total", "iops", "bytes_per_sec", "errors"]
            .map(String::from)
            .to_vec();
    for n in &names {
        for col in ["iops", "bytes_per_sec", "errors", "lat_mean_ns", "lat_p50_ns", "lat_p99_ns", "lat_max_ns"] {
            header.push(csv_field(&format!("{n}_{col}")));
        }
    }
    let mut out = header.join(",");
    out.push('\n');
    for (row, ops) in rows {
        let mut cells = vec![
            row.second.to_string(),
            row.step.to_string(),
            u8::from(row.warmup).to_string(),
            num(row.interval_s, 9),
            row.ops_total.to_string(),
            num(row.iops, 3),
            num(row.bytes_per_sec, 3),
            row.errors.to_string(),
        ];
        for o in ops {
            cells.extend([
                num(o.iops, 3),
                num(o.bytes_per_sec, 3),
                o.errors.to_string(),
                opt(o.lat_mean_ns),
                opt(o.lat_p50_ns),
                opt(o.lat_p99_ns),
                opt(o.lat_max_ns),
            ]);
        }
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// The same rows as [`export_csv`] as a pretty JSON array; per-operation columns are
/// nested under `ops.<op>` (with `ops` counts too), latency `null` when nothing completed.
pub fn export_json(r: &Results) -> String {
    let (names, rows) = rows(r);
    let rows: Vec<Row> = rows
        .into_iter()
        .map(|(mut row, ops)| {
            row.ops = names.iter().cloned().zip(ops).collect();
            row
        })
        .collect();
    serde_json::to_string_pretty(&rows).expect("rows always serialize")
}
