//! The data content of a run: what the plan asked for (random by default, or compress,
//! dedup, zeros) and what the working set held after it, measured by reading a sample back
//! (each host's `content_measured`, crates/exec/src/content_sample.rs): lz4's ratio and the
//! share of duplicate dedup units.

use crate::format;
use crate::Summary;
use serde::{Deserialize, Serialize};

/// `content` in the summary's JSON.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ContentSummary {
    /// What the plan asked, as the workload line says it ("compress 2:1 (4k chunks)"), or
    /// "random (default)".
    pub asked: String,
    /// Bytes read back over the hosts, and lz4's bytes in : bytes out of them.
    pub sample_bytes: u64,
    pub compress_ratio: f64,
    /// Dedup units read : distinct units among them.
    pub dedup_ratio: f64,
    pub dedup_unit_bytes: u64,
    /// Regions that could not be read back (a file shorter than planned, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// The content the hosts measured; None when none did (a remote target, a dataset, a
/// results file from before the measurement).
pub(crate) fn summarize(
    hosts: &[(String, serde_json::Value)],
    plan: &ioscope_workload::Plan,
) -> Option<ContentSummary> {
    let mut asked: Vec<String> = plan.content.describe();
    for w in &plan.workloads {
        asked.extend(w.content.describe().into_iter().filter(|d| !asked.contains(d)).collect::<Vec<_>>());
    }
    let mut asked = if asked.is_empty() { "random (default)".to_string() } else { asked.join(", ") };
    // An existing file (not ioscope's) holds its own data: nothing was asked of what a run
    // that only reads it finds there.
    if hosts.iter().any(|(_, c)| c["target"]["existing_file_bytes"].is_u64()) {
        asked = if plan.writes() || plan.precondition.is_some() {
            format!("{asked} for the writes, over an existing file's own data")
        } else {
            "nothing (an existing file, read as it is: its own data)".to_string()
        };
    }
    let mut s = ContentSummary { asked, ..Default::default() };
    let (mut compressed, mut units, mut distinct, mut any) = (0u64, 0u64, 0u64, false);
    for (host, c) in hosts {
        let m = &c["content_measured"];
        if !m.is_object() {
            continue;
        }
        any = true;
        let n = |k: &str| m[k].as_u64().unwrap_or(0);
        s.sample_bytes = s.sample_bytes.saturating_add(n("sample_bytes"));
        compressed = compressed.saturating_add(n("compressed_bytes"));
        units = units.saturating_add(n("units"));
        distinct = distinct.saturating_add(n("distinct_units"));
        s.dedup_unit_bytes = n("dedup_unit_bytes");
        // A host's words are data: bounded, and named with the host.
        for e in m["errors"].as_array().into_iter().flatten().filter_map(|e| e.as_str()).take(4) {
            if s.errors.len() < 16 {
                s.errors.push(format!("{host}: {}", e.chars().take(300).collect::<String>()));
            }
        }
    }
    if !any {
        return None;
    }
    let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    s.compress_ratio = ratio(s.sample_bytes, compressed);
    s.dedup_ratio = ratio(units, distinct);
    Some(s)
}

/// The summary's line: `data     asked compress 2:1 (4k chunks); measured over 16 MiB read
/// back: compresses 2.01:1 (lz4), dedups 1.00:1 (4 KiB units)`.
pub(crate) fn text_lines(s: &Summary) -> Vec<String> {
    let Some(c) = &s.content else { return Vec::new() };
    let mut line = format!("data     asked {}; ", c.asked);
    if c.sample_bytes == 0 {
        line.push_str("nothing could be read back to measure it");
    } else {
        line.push_str(&format!(
            "measured over {} read back: compresses {}:1 (lz4), dedups {}:1 ({} units)",
            format::bytes(c.sample_bytes),
            format::float(c.compress_ratio, 2),
            format::float(c.dedup_ratio, 2),
            format::bytes(c.dedup_unit_bytes)
        ));
    }
    if let Some(e) = c.errors.first() {
        line.push_str(&format!(" ({} region(s) unread; first: {e})", c.errors.len()));
    }
    vec![line]
}
