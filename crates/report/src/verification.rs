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
    /// Every bad block (a block read again and again is one), and by kind (checksum, torn,
    /// header-destroyed, misplaced, stale, unissued, zeroed, truncated).
    pub mismatches: u64,
    pub by_kind: BTreeMap<String, u64>,
    /// Blocks read that could not be checked: not known to carry a header of this verify
    /// block (a working set laid out by an earlier version, or written since by a run
    /// without --verify or with another verify block; a reused dataset), or unknown after a
    /// failed write.
    pub unverified: u64,
    /// The first mismatch of each block (path, offset, kind), in the order found: a bad
    /// block read again and again is listed once.
    pub first_mismatches: Vec<BadBlock>,
    /// The cost: time to stamp a header into a block written, and to check a block read.
    pub stamp_ns_per_block: Option<f64>,
    pub check_ns_per_block: Option<f64>,
}

/// A bad block as the summary lists it: its row of the results file, and what was found
/// in it, in words ([`describe`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BadBlock {
    #[serde(flatten)]
    pub row: ioscope_store::MismatchRow,
    pub found: String,
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
    let block_len = v.runs.first().map_or(0, |x| x.block_len);
    Some(VerificationSummary {
        mode: mode.to_string(),
        block_len,
        run_id: v.runs.first().map(|x| x.run_id.clone()).unwrap_or_default(),
        blocks_checked: verified + errors,
        verified,
        mismatches: errors.max(recorded),
        by_kind,
        unverified,
        first_mismatches: first_of_each_block(&v.mismatches)
            .into_iter()
            .map(|row| BadBlock { found: describe(&row, block_len), row })
            .collect(),
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
            "verify   {} block reads could not be checked: blocks not known to carry a header of this verify block (a working set laid out by an earlier ioscope, or written since by a run without --verify or with another verify block; a reused dataset) are checked once this run writes them, and a block is unknown after a failed write",
            v.unverified
        ));
    }
    for b in &v.first_mismatches {
        let m = &b.row;
        out.push(format!("verify   {} at {} offset {} (second {}): {}", m.kind, m.path, m.offset, m.second, b.found));
    }
    if v.mismatches > v.first_mismatches.len() as u64 {
        out.push(format!(
            "verify   ({} mismatches in all; the first 1,000 are in table verify_mismatch of the results file)",
            v.mismatches
        ));
    }
    out
}

/// What was found in a bad block, in words: what the kind means with the figures of this one.
pub fn describe(m: &ioscope_store::MismatchRow, block_len: u32) -> String {
    let found: Option<serde_json::Value> = m.found_header_json.as_deref().and_then(|j| serde_json::from_str(j).ok());
    let f = |k: &str| found.as_ref().map(|h| h[k].to_string()).unwrap_or_else(|| "?".into());
    let exp = &m.expected_generation;
    // "generation 117" of this run's writes; an earlier run's header says whose it is.
    let generation = match found.as_ref().map(|h| &h["this_run"]) {
        Some(serde_json::Value::Bool(false)) => {
            format!("generation {} of earlier run {}", f("generation"), f("run_id"))
        }
        _ => format!("generation {}", f("generation")),
    };
    let range = found
        .as_ref()
        .and_then(|h| Some((h["first_changed_byte_in"][0].as_u64()?, h["first_changed_byte_in"][1].as_u64()?)));
    let changed = found.as_ref().and_then(|h| h["changed_segments"].as_array().map(Vec::len));
    match (m.kind.as_str(), &found) {
        ("checksum", Some(_)) => match (range, changed) {
            (Some((a, b)), Some(n)) => format!(
                "the header is this block's ({generation}, expected {exp}) but the checksum fails: the first changed byte is in bytes {a}..{b} of the {block_len}-byte block ({n} of 8 eighths changed)"
            ),
            _ => format!(
                "the header is this block's ({generation}, expected {exp}) but the checksum fails; where in the block is not known (a header of an earlier version, without segment tags)"
            ),
        },
        ("torn", Some(_)) => format!(
            "the head of the block is the write of {generation} (expected {exp}) and its tail is not: the bytes from byte {} on differ, as a torn write leaves a block",
            range.map_or("?".to_string(), |(a, _)| a.to_string())
        ),
        ("header-destroyed", None) => format!(
            "no header where the block's was (its first bytes are not ioscope's header, nor zeros); expected generation {exp}"
        ),
        ("header-destroyed", Some(_)) => format!(
            "the header's bytes were overwritten: they name file {} offset {} and the checksum fails; expected generation {exp}",
            f("file"),
            f("offset")
        ),
        ("zeroed", _) => format!("the block is all zeros; expected generation {exp}"),
        ("truncated", _) => format!("the file ends before the block; expected generation {exp}"),
        ("misplaced", Some(_)) => format!(
            "the header of file {} offset {} ({} bytes), written there, not here; expected generation {exp}",
            f("file"),
            f("offset"),
            f("block_len")
        ),
        ("stale", Some(_)) => format!(
            "generation {} of run {}, older than the last write acknowledged (expected {exp})",
            f("generation"),
            f("run_id")
        ),
        ("unissued", Some(_)) => {
            format!("generation {}, a write this run never issued (it issued up to {exp})", f("generation"))
        }
        _ => format!(
            "expected generation {exp}, found {}",
            m.found_header_json.as_deref().unwrap_or("no header")
        ),
    }
}

/// `data-mismatch`: blocks read back were not what the run wrote.
pub fn verdicts(v: Option<&VerificationSummary>) -> Vec<Verdict> {
    let Some(v) = v.filter(|v| v.mismatches > 0) else { return Vec::new() };
    let kinds: Vec<String> = v.by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let mut verdict = Verdict::new(
        VerdictId::DataMismatch,
        format!(
            "data mismatch: {} read back {} not what the run wrote ({}; {} block reads checked)",
            if v.mismatches == 1 { "1 block".to_string() } else { format!("{} blocks", v.mismatches) },
            if v.mismatches == 1 { "was" } else { "were" },
            kinds.join(", "),
            v.blocks_checked,
        ),
    )
    .with("mismatches", v.mismatches)
    .with("blocks_checked", v.blocks_checked);
    if let Some(b) = v.first_mismatches.first() {
        let m = &b.row;
        verdict = verdict
            .with("first_kind", m.kind.clone())
            .with("first_found", b.found.clone())
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

/// The first [`LISTED`] mismatches of distinct blocks (a results file of an earlier
/// version may hold one row per read of a bad block).
fn first_of_each_block(all: &[ioscope_store::MismatchRow]) -> Vec<ioscope_store::MismatchRow> {
    let mut seen = std::collections::HashSet::new();
    all.iter().filter(|m| seen.insert((m.host.clone(), m.path.clone(), m.offset))).take(LISTED).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str, offset: u64, found: Option<&str>) -> ioscope_store::MismatchRow {
        ioscope_store::MismatchRow {
            host: "h".into(),
            second: 2,
            file: 0,
            path: "/d/ioscope.0.dat".into(),
            offset,
            kind: kind.into(),
            expected_generation: "117".into(),
            found_header_json: found.map(str::to_string),
        }
    }

    #[test]
    fn a_mismatch_inside_a_block_says_the_checksum_failed_and_where_in_the_block() {
        let found = r#"{"run_id":"00000000000000aa","this_run":true,"file":0,"offset":8192,"block_len":4096,"generation":117,"time_unix_ns":1,"checksum_ok":false,"first_changed_byte_in":[2560,3072],"changed_segments":[5],"segment_bytes":512}"#;
        let said = describe(&row("checksum", 8192, Some(found)), 4096);
        assert!(said.contains("generation 117") && said.contains("checksum fails"), "{said}");
        assert!(said.contains("bytes 2560..3072 of the 4096-byte block (1 of 8 eighths changed)"), "{said}");
        let said = describe(&row("header-destroyed", 40960, None), 4096);
        assert!(said.contains("no header where the block's was"), "{said}");
        assert!(describe(&row("zeroed", 0, None), 4096).contains("all zeros"));
    }

    #[test]
    fn one_bad_block_read_three_times_is_listed_once() {
        // A results file of an earlier version kept a row per read of a bad block.
        let rows: Vec<_> = (0..3).map(|_| row("checksum", 8192, None)).chain([row("zeroed", 4096, None)]).collect();
        let first = first_of_each_block(&rows);
        assert_eq!(first.iter().map(|m| m.offset).collect::<Vec<_>>(), [8192, 4096]);
    }
}
