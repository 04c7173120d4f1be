//! How a run ended and what it ran first. Each host's configuration records each repeat that
//! ended before its planned end (`ended`: by `amount`, an end by `io_size`, `number_ios` or
//! `passes`, or by `steady`, `until_steady`) and the precondition written before it
//! (`precondition`: bytes, time, MB/s each second, errors); the summary states both.

use crate::format;
use crate::Summary;
use serde::{Deserialize, Serialize};

/// What ended the run (`ended` in the summary's JSON), for a plan with an end by amount or
/// `until_steady`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EndSummary {
    /// "amount", "steady", or "duration" (the planned end came first).
    pub by: String,
    /// The repeats that ended so (0 for a run without repeats).
    pub repeats: Vec<u32>,
    /// The amount each workload was to issue, as the plan says it ("io_size 8 GiB").
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub amount: String,
}

/// The precondition written before the run (`precondition` in the summary's JSON), over
/// the hosts that recorded one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PreconditionSummary {
    pub passes: u64,
    pub bs_bytes: u64,
    /// What it was to write and what it wrote.
    pub planned_bytes: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub mb_per_s: f64,
    /// The slowest and fastest whole second's MB/s (the last, partial second left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mb_per_s_min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mb_per_s_max: Option<f64>,
    pub errors: u64,
}

/// The repeats each host recorded as ended by `by`.
pub(crate) fn repeats_ended_by(hosts: &[(String, serde_json::Value)], by: &str) -> Vec<u32> {
    let mut out: Vec<u32> = hosts
        .iter()
        .filter_map(|(_, c)| c["ended"].as_array())
        .flatten()
        .filter(|e| e["by"].as_str() == Some(by))
        .filter_map(|e| u32::try_from(e["repeat"].as_u64()?).ok())
        .take(100_000)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The end of a run whose plan ends by amount or `until_steady`; None for one that ends on
/// time only.
pub(crate) fn summarize_end(
    hosts: &[(String, serde_json::Value)],
    plan: &ioscope_workload::Plan,
) -> Option<EndSummary> {
    if plan.amount.is_none() && plan.until_steady_s.is_none() {
        return None;
    }
    let a = &plan.amount;
    let amount = [
        a.io_size_bytes.map(|b| format!("io_size {}", format::bytes(b))),
        a.number_ios.map(|n| format!("number_ios {}", format::int(n))),
        a.passes.map(|p| format!("passes {p} ({})", format::bytes(plan.amount_bytes().unwrap_or(0)))),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    for by in ["amount", "steady"] {
        let repeats = repeats_ended_by(hosts, by);
        if !repeats.is_empty() {
            return Some(EndSummary { by: by.to_string(), repeats, amount });
        }
    }
    Some(EndSummary { by: "duration".to_string(), repeats: Vec::new(), amount })
}

/// The precondition the hosts recorded; None when none ran one.
pub(crate) fn summarize_precondition(hosts: &[(String, serde_json::Value)]) -> Option<PreconditionSummary> {
    let mut s: Option<PreconditionSummary> = None;
    for (_, c) in hosts {
        let p = &c["precondition"];
        if !p.is_object() {
            continue;
        }
        let n = |k: &str| p[k].as_u64().unwrap_or(0);
        let each: Vec<f64> =
            p["mb_per_s_each_second"].as_array().into_iter().flatten().filter_map(|v| v.as_f64()).collect();
        // The last second is partial (the writes ended within it).
        let whole = &each[..each.len().saturating_sub(1)];
        let t = s.get_or_insert_with(Default::default);
        t.passes = n("passes");
        t.bs_bytes = n("bs_bytes");
        t.planned_bytes = t.planned_bytes.saturating_add(n("planned_bytes"));
        t.bytes = t.bytes.saturating_add(n("bytes"));
        t.seconds = t.seconds.max(p["seconds"].as_f64().unwrap_or(0.0));
        t.errors = t.errors.saturating_add(
            p["errors_by_kind"].as_array().into_iter().flatten().filter_map(|e| e["count"].as_u64()).sum(),
        );
        let min = whole.iter().copied().fold(f64::INFINITY, f64::min);
        let max = whole.iter().copied().fold(0.0, f64::max);
        if !whole.is_empty() {
            t.mb_per_s_min = Some(t.mb_per_s_min.map_or(min, |m| m.min(min)));
            t.mb_per_s_max = Some(t.mb_per_s_max.map_or(max, |m| m.max(max)));
        }
    }
    if let Some(t) = s.as_mut() {
        t.mb_per_s = if t.seconds > 0.0 { t.bytes as f64 / t.seconds / 1e6 } else { 0.0 };
    }
    s
}

/// The summary's lines: `before   2x sequential write (precondition, not measured): …` and
/// `ended    by amount: every workload issued io_size 8 GiB`.
pub(crate) fn text_lines(s: &Summary) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(p) = &s.precondition {
        let range = match (p.mb_per_s_min, p.mb_per_s_max) {
            (Some(lo), Some(hi)) => {
                format!(" (each whole second {}–{} MB/s)", format::float(lo, 1), format::float(hi, 1))
            }
            _ => String::new(),
        };
        let errors = match p.errors {
            0 => "no errors".to_string(),
            n => format!("{} errors", format::int(n)),
        };
        out.push(format!(
            "before   {}x sequential write (precondition, not measured): {} of {} in {} writes in {} s, {} MB/s{range}, {errors}",
            p.passes,
            format::bytes(p.bytes),
            format::bytes(p.planned_bytes),
            format::bytes(p.bs_bytes),
            format::float(p.seconds, 2),
            format::float(p.mb_per_s, 1),
        ));
    }
    if let Some(e) = &s.ended {
        let repeats = match (s.repeats.is_some(), e.repeats.as_slice()) {
            (true, r) if !r.is_empty() => format!(
                " (repeat{} {})",
                if r.len() == 1 { "" } else { "s" },
                r.iter().map(|k| (k + 1).to_string()).collect::<Vec<_>>().join(", ")
            ),
            _ => String::new(),
        };
        let line = match e.by.as_str() {
            "amount" => format!("ended    by amount: every workload issued its {}{repeats}", e.amount),
            "steady" => format!("ended    steady, before its planned end (until_steady){repeats}"),
            _ if e.amount.is_empty() => "ended    at its planned duration, never steady (until_steady)".to_string(),
            _ => format!("ended    at its planned duration, before the amount ({}) was issued", e.amount),
        };
        out.push(line);
    }
    out
}
