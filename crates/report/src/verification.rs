//! What data validation found (`--verify`, docs/verify.md): the summary's `verification`
//! section, its text lines and the `data-mismatch` verdict. Blocks checked, mismatches by
//! kind and unverified blocks come from the series of op `verify`; the run id, the cost
//! of stamping and the first mismatches from the results file's verify tables.

use crate::verdict::{Verdict, VerdictId};
use ioscope_metrics::Op;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Mismatches the summary lists (the results file keeps up to 1,000).
const LISTED: usize = 20;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VerificationSummary {
    /// fail (any mismatch fails the run) or report.
    pub mode: String,
    pub block_len: u32,
    pub run_id: String,
    /// Blocks read back and checked: verified plus mismatches.
    pub blocks_checked: u64,
    pub verified: u64,
    /// Every mismatch, and by kind (corrupt, misplaced, stale, lost).
    pub mismatches: u64,
    pub by_kind: BTreeMap<String, u64>,
    /// Blocks read that could not be checked: never written with a header (a working set
    /// laid out before verification), unknown after a failed write, or read while a write
    /// of it was in flight and found torn.
    pub unverified: u64,
    /// The first mismatch of each block (path, offset, kind), in the order found: a bad
    /// block read again and again is listed once.
    pub first_mismatches: Vec<ioscope_store::MismatchRow>,
    /// The cost: time to stamp a header into a block written, and to check a block read.
    pub stamp_ns_per_block: Option<f64>,
    pub check_ns_per_block: Option<f64>,
}

/// The verification of a run, None for one without `--verify`.
pub fn summarize(r: &ioscope_store::Results, mode: &str) -> Option<VerificationSummary> {
    let v = r.verification.as_ref()?;
    let (mut verified, mut errors, mut unverified, mut check_ns) = (0u64, 0u64, 0u64, 0u128);
    let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
    for s in &r.seconds {
        for o in s.ops.iter().filter(|o| o.op == Op::Verify) {
            verified += o.data.counts.ops;
            errors += o.data.counts.errors;
            unverified += o.data.skipped;
            check_ns += o.data.latency_ns.sum();
            for (k, n) in &o.data.errors_by_kind {
                *by_kind.entry(k.clone()).or_default() += n;
            }
        }
    }
    let (stamped, stamp_ns) = v.runs.iter().fold((0, 0), |(b, t), x| (b + x.stamped_blocks, t + x.stamp_ns));
    let recorded: u64 = v.runs.iter().map(|x| x.mismatches).sum();
    Some(VerificationSummary {
        mode: mode.to_string(),
        block_len: v.runs.first().map_or(0, |x| x.block_len),
        run_id: v.runs.first().map(|x| x.run_id.clone()).unwrap_or_default(),
        blocks_checked: verified + errors,
        verified,
        mismatches: errors.max(recorded),
        by_kind,
        unverified,
        first_mismatches: first_of_each_block(&v.mismatches),
        stamp_ns_per_block: (stamped > 0).then(|| stamp_ns as f64 / stamped as f64),
        check_ns_per_block: (verified > 0).then(|| check_ns as f64 / verified as f64),
    })
}

/// The summary's lines ("verify ...").
pub fn text_lines(v: &VerificationSummary) -> Vec<String> {
    let kinds: Vec<String> = v.by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let cost = |x: Option<f64>| x.map_or("-".to_string(), |ns| format!("{ns:.0} ns"));
    let mut out = vec![format!(
        "verify   {} blocks of {} B checked: {} verified, {} mismatches{}, {} unverified; stamp {} / check {} per block (--verify {})",
        v.blocks_checked,
        v.block_len,
        v.verified,
        v.mismatches,
        if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) },
        v.unverified,
        cost(v.stamp_ns_per_block),
        cost(v.check_ns_per_block),
        v.mode,
    )];
    if v.unverified > 0 {
        out.push(format!(
            "verify   {} block reads could not be checked: blocks laid out before verification (prepared, or written by a run without --verify) carry no header until this run writes them, and a block is unknown after a failed write or torn under a write in flight",
            v.unverified
        ));
    }
    for m in &v.first_mismatches {
        out.push(format!(
            "verify   {} at {} offset {} (second {}): expected generation {}, found {}",
            m.kind,
            m.path,
            m.offset,
            m.second,
            m.expected_generation,
            m.found_header_json.as_deref().unwrap_or("no header")
        ));
    }
    if v.mismatches > v.first_mismatches.len() as u64 {
        out.push(format!(
            "verify   ({} mismatches in all; the first 1,000 are in table verify_mismatch of the results file)",
            v.mismatches
        ));
    }
    out
}

/// `data-mismatch`: blocks read back were not what the run wrote.
pub fn verdicts(v: Option<&VerificationSummary>) -> Vec<Verdict> {
    let Some(v) = v.filter(|v| v.mismatches > 0) else { return Vec::new() };
    let kinds: Vec<String> = v.by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let mut verdict = Verdict::new(
        VerdictId::DataMismatch,
        format!(
            "data mismatch: {} of {} blocks read back were not what the run wrote ({})",
            v.mismatches,
            v.blocks_checked,
            kinds.join(", ")
        ),
    )
    .with("mismatches", v.mismatches)
    .with("blocks_checked", v.blocks_checked);
    if let Some(m) = v.first_mismatches.first() {
        verdict = verdict
            .with("first_kind", m.kind.clone())
            .with("first_path", m.path.clone())
            .with("first_offset_bytes", m.offset)
            .with("first_expected_generation", m.expected_generation.clone())
            .with(
                "first_found_header",
                m.found_header_json
                    .as_deref()
                    .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok())
                    .unwrap_or(serde_json::Value::Null),
            );
    }
    vec![verdict]
}

/// The first [`LISTED`] mismatches of distinct blocks and kinds.
fn first_of_each_block(all: &[ioscope_store::MismatchRow]) -> Vec<ioscope_store::MismatchRow> {
    let mut seen = std::collections::HashSet::new();
    all.iter()
        .filter(|m| seen.insert((m.host.clone(), m.path.clone(), m.offset, m.kind.clone())))
        .take(LISTED)
        .cloned()
        .collect()
}
