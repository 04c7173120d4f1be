//! What a results file may hold: every value is checked as it is read, so that report,
//! web queries and plots only ever see valid data. A damaged value is an error naming the
//! table, the row and the value ("table sample, row series_id=5 second=3: min 900 > max
//! 10"); nothing is clamped, skipped or defaulted in silence.
//!
//! Bounds that keep memory in proportion to the file: the span of seconds (answers have
//! one entry per second) is at most twice the seconds stored plus [`MAX_GAP_SECONDS`] plus
//! the time the stored ticks measured (a late tick after a stopped process covers its gap),
//! and never more than [`MAX_SPAN_SECONDS`]; the sums consumers form (counts over a run,
//! intervals) fit their integer types.

use crate::StoreError;
use ioscope_metrics::histogram::{bucket_index, bucket_range, DecodeError};
use ioscope_metrics::stat::Kind;
use ioscope_metrics::{Histogram, Snapshot, STATS};
use rusqlite::types::ValueRef;
use std::path::Path;

/// Seconds a run may leave unrecorded (beyond as many as it recorded), e.g. while the
/// process was stopped. More than that in a file means a damaged second number.
pub const MAX_GAP_SECONDS: u64 = 3600;

/// The longest span of seconds a results file may have: a run lasts at most 30 days, and
/// this leaves room for the process to have been stopped for days within it.
pub const MAX_SPAN_SECONDS: u64 = 40 * 24 * 3600;

/// One value of one row, for reading with an error that says where it came from.
pub(crate) struct Cell<'a> {
    pub table: &'static str,
    /// Describes the row by its key: "series_id=5 second=3".
    pub row: &'a dyn Fn() -> String,
    pub column: &'static str,
    pub value: ValueRef<'a>,
}

/// A stored value as people read it, shortened: 42, 'text', NULL, a 12-byte blob.
pub(crate) fn show(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => format!("{f}"),
        ValueRef::Text(t) => {
            let s = String::from_utf8_lossy(t);
            let short: String = s.chars().take(40).collect();
            if short.len() < s.len() {
                format!("'{short}…'")
            } else {
                format!("'{short}'")
            }
        }
        ValueRef::Blob(b) => format!("a {}-byte blob", b.len()),
    }
}

impl Cell<'_> {
    pub fn err(&self, path: &Path, what: impl std::fmt::Display) -> StoreError {
        corrupt(path, self.table, &(self.row)(), format!("{} {what}", self.column))
    }

    fn bad(&self, path: &Path, expected: &str) -> StoreError {
        self.err(path, format_args!("is {}, expected {expected}", show(self.value)))
    }

    pub fn text(&self, path: &Path) -> Result<String, StoreError> {
        self.opt_text(path)?.ok_or_else(|| self.bad(path, "text"))
    }

    pub fn opt_text(&self, path: &Path) -> Result<Option<String>, StoreError> {
        match self.value {
            ValueRef::Null => Ok(None),
            ValueRef::Text(t) => {
                std::str::from_utf8(t).map(|s| Some(s.to_string())).map_err(|_| self.bad(path, "UTF-8 text"))
            }
            _ => Err(self.bad(path, "text")),
        }
    }

    /// A whole number in `0..=max`: an INTEGER, or decimal TEXT for values past i64.
    pub fn opt_uint(&self, path: &Path, max: u64) -> Result<Option<u64>, StoreError> {
        let v = match self.value {
            ValueRef::Null => return Ok(None),
            ValueRef::Integer(i) => u64::try_from(i).ok(),
            ValueRef::Text(t) => std::str::from_utf8(t).ok().and_then(|s| s.parse::<u64>().ok()),
            _ => None,
        };
        match v {
            Some(v) if v <= max => Ok(Some(v)),
            _ => Err(self.bad(path, &format!("a whole number from 0 to {max}"))),
        }
    }

    pub fn uint(&self, path: &Path, max: u64) -> Result<u64, StoreError> {
        self.opt_uint(path, max)?.ok_or_else(|| self.bad(path, &format!("a whole number from 0 to {max}")))
    }

    pub fn u32(&self, path: &Path) -> Result<u32, StoreError> {
        Ok(self.uint(path, u32::MAX as u64)? as u32)
    }

    pub fn opt_u32(&self, path: &Path) -> Result<Option<u32>, StoreError> {
        Ok(self.opt_uint(path, u32::MAX as u64)?.map(|v| v as u32))
    }

    /// A sum of values: up to u128, decimal TEXT past i64.
    pub fn opt_u128(&self, path: &Path) -> Result<Option<u128>, StoreError> {
        let v = match self.value {
            ValueRef::Null => return Ok(None),
            ValueRef::Integer(i) => u128::try_from(i).ok(),
            ValueRef::Text(t) => std::str::from_utf8(t).ok().and_then(|s| s.parse::<u128>().ok()),
            _ => None,
        };
        v.map(Some).ok_or_else(|| self.bad(path, "a whole number from 0"))
    }

    pub fn opt_i64(&self, path: &Path) -> Result<Option<i64>, StoreError> {
        match self.value {
            ValueRef::Null => Ok(None),
            ValueRef::Integer(i) => Ok(Some(i)),
            _ => Err(self.bad(path, "an integer")),
        }
    }

    pub fn i64(&self, path: &Path) -> Result<i64, StoreError> {
        self.opt_i64(path)?.ok_or_else(|| self.bad(path, "an integer"))
    }

    pub fn opt_i32(&self, path: &Path) -> Result<Option<i32>, StoreError> {
        match self.opt_i64(path)? {
            None => Ok(None),
            Some(i) => i32::try_from(i).map(Some).map_err(|_| self.bad(path, "a 32-bit integer")),
        }
    }

    pub fn bool(&self, path: &Path) -> Result<bool, StoreError> {
        match self.value {
            ValueRef::Integer(0) => Ok(false),
            ValueRef::Integer(1) => Ok(true),
            _ => Err(self.bad(path, "0 or 1")),
        }
    }
}

pub(crate) fn corrupt(path: &Path, table: &str, row: &str, detail: impl std::fmt::Display) -> StoreError {
    let row = if row.is_empty() { String::new() } else { format!(", row {row}") };
    StoreError::Corrupt { path: path.to_path_buf(), detail: format!("table {table}{row}: {detail}") }
}

/// Why a stored histogram does not agree with its exact count, sum, min and max.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HistogramError {
    #[error("a histogram without its sum, min and max")]
    Incomplete,
    #[error("min {min} > max {max}")]
    MinAboveMax { min: u64, max: u64 },
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("value {count} but the histogram holds {held}")]
    Count { count: u64, held: u64 },
    #[error("an empty histogram with a count")]
    Empty,
    #[error("min {min} is not in the first bucket used ({first:?})")]
    MinOutside { min: u64, first: (u64, u64) },
    #[error("max {max} is past the last bucket used ({last:?})")]
    MaxOutside { max: u64, last: (u64, u64) },
    #[error("sum {sum} is more than {count} values can add up to")]
    Sum { sum: u128, count: u64 },
}

/// A distribution's stored histogram against its exact count, sum, min and max: the
/// count is the buckets' total, min lies in the first bucket and max at most at the top
/// of the last (the recorder's max may lag a racing value, never lead), and the sum is
/// one of `count` values below 2^64.
pub(crate) fn histogram(
    blob: &[u8],
    count: u64,
    sum: Option<u128>,
    min: Option<u64>,
    max: Option<u64>,
) -> Result<Histogram, HistogramError> {
    let (Some(sum), Some(min), Some(max)) = (sum, min, max) else {
        return Err(HistogramError::Incomplete);
    };
    if min > max {
        return Err(HistogramError::MinAboveMax { min, max });
    }
    let h = Histogram::decode_sparse(blob, sum, min, max)?;
    if h.count() != count {
        return Err(HistogramError::Count { count, held: h.count() });
    }
    let (Some(first), Some(last)) = (h.nonzero().next(), h.nonzero().last()) else {
        return Err(HistogramError::Empty);
    };
    if bucket_index(min) != first.0 {
        return Err(HistogramError::MinOutside { min, first: bucket_range(first.0) });
    }
    if max > bucket_range(last.0).1 {
        return Err(HistogramError::MaxOutside { max, last: bucket_range(last.0) });
    }
    if sum > count as u128 * u64::MAX as u128 {
        return Err(HistogramError::Sum { sum, count });
    }
    Ok(h)
}

/// Checks of the whole run, once every second is read: the span of the seconds and the
/// totals consumers form. `parts` are the seconds in order (a refresh passes the seconds
/// held and the new ones).
pub(crate) fn whole(path: &Path, parts: &[&[Snapshot]]) -> Result<(), StoreError> {
    let all = || parts.iter().flat_map(|p| p.iter());
    let (Some(first), Some(last)) = (all().next(), all().last()) else { return Ok(()) };
    let mut distinct = 0u64;
    let mut measured_s = 0u64;
    let mut previous = None;
    for s in all() {
        if previous != Some(s.second) {
            distinct += 1;
            previous = Some(s.second);
        }
        measured_s = measured_s.saturating_add(s.interval_ns / 1_000_000_000);
    }
    let span = (last.second - first.second) as u64 + 1;
    let allowed = (2 * distinct + MAX_GAP_SECONDS).saturating_add(measured_s).min(MAX_SPAN_SECONDS);
    if span > allowed {
        // Name the second after the widest gap: the damaged one, most likely.
        let mut worst = (0u32, last.second);
        let mut before = first.second;
        for s in all() {
            if s.second - before > worst.0 {
                worst = (s.second - before, s.second);
            }
            before = s.second;
        }
        return Err(corrupt(
            path,
            "tick",
            &format!("second={}", worst.1),
            format_args!(
                "seconds {} to {} leave {} of {span} seconds unrecorded (at most {allowed} may be, for {distinct} recorded)",
                first.second,
                last.second,
                span - distinct
            ),
        ));
    }

    // Sums of counts and intervals must fit u64 wherever consumers add them up: checked
    // here once for the whole run (every partial sum is smaller).
    let mut totals = Totals::default();
    all().for_each(|s| totals.add(s));
    let table = |why: &str| if why.contains("intervals") { "tick" } else { "sample" };
    totals.within(u64::MAX as u128).map_err(|why| corrupt(path, table(&why), "", why))?;
    Ok(())
}

/// Sums over a run that consumers form (see [`whole`]): they must fit u64. Kept as the
/// seconds come, so that a writer of seconds from a peer (the coordinator, one per host)
/// can refuse a second that would push them past what the reader accepts.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    interval_ns: u128,
    /// ops + errors, bytes of per-op series; the same per worker and file.
    ops: [u128; 4],
    /// Values of each distribution statistic over every op.
    dists: [u128; 4],
}

impl Totals {
    pub fn add(&mut self, s: &Snapshot) {
        self.interval_ns += s.interval_ns as u128;
        for c in s.ops.iter().map(|o| o.data.counts) {
            self.ops[0] += c.ops as u128 + c.errors as u128;
            self.ops[1] += c.bytes as u128;
        }
        for c in s.workers.iter().map(|w| w.counts).chain(s.files.iter().map(|f| f.counts)) {
            self.ops[2] += c.ops as u128 + c.errors as u128;
            self.ops[3] += c.bytes as u128;
        }
        let distributions = STATS.iter().filter(|st| st.kind == Kind::Distribution);
        for o in &s.ops {
            for (t, st) in self.dists.iter_mut().zip(distributions.clone()) {
                *t += o.data.histogram(st.id).map_or(0, |h| h.count() as u128);
            }
        }
    }

    /// Every sum is at most `limit` (u64::MAX for a whole file; a share of it for one of
    /// several hosts, so that the hosts' sums together still fit).
    pub fn within(&self, limit: u128) -> Result<(), String> {
        let past = if limit == u64::MAX as u128 { "2^64".to_string() } else { limit.to_string() };
        if self.interval_ns > limit {
            return Err(format!("the intervals add up past {past} ns"));
        }
        let what = ["ops", "bytes", "per-worker or per-file ops", "per-worker or per-file bytes"];
        if let Some((_, what)) = self.ops.iter().zip(what).find(|(t, _)| **t > limit) {
            return Err(format!("the {what} add up past {past}"));
        }
        if self.dists.iter().any(|c| *c > limit) {
            return Err(format!("the histogram counts add up past {past}"));
        }
        Ok(())
    }
}

/// The rules of one second of one host that a results file must keep, as the reader
/// applies them to its rows: what [`crate::Writer::write_second`] stores of a second that
/// passes them reads back. The reader checks each second it assembles with it; the
/// coordinator checks each second an agent sends with it (and [`peer_second`]) before
/// storing it. `steps`: the run's step indexes (empty: any).
pub fn snapshot(s: &Snapshot, steps: &[u32]) -> Result<(), String> {
    second(s, steps, true)
}

/// [`snapshot`]; `histograms`: whether to check each histogram too (the reader has, row
/// by row, with [`histogram`]).
pub(crate) fn second(s: &Snapshot, steps: &[u32], histograms: bool) -> Result<(), String> {
    use ioscope_metrics::stat::StatId;
    use std::collections::HashSet;
    if s.interval_ns == 0 {
        return Err("interval_ns is 0: a second must have lasted some time".into());
    }
    if !steps.is_empty() && !steps.contains(&s.step) {
        return Err(format!("step {} is not a step of the run", s.step));
    }
    // Counters and intervals are INTEGER columns: past 2^63-1 they would not read back.
    let stored = i64::MAX as u64;
    if s.not_broken_down > stored {
        return Err(format!("not_broken_down {} is past 2^63-1", s.not_broken_down));
    }
    if s.interval_ns > stored {
        return Err(format!("interval_ns {} is past 2^63-1", s.interval_ns));
    }
    let past = |what: &str, c: &ioscope_metrics::Counts| match [c.ops, c.bytes, c.errors].into_iter().max() {
        Some(v) if v > stored => Err(format!("{what}: a count of {v} is past 2^63-1")),
        _ => Ok(()),
    };
    for o in &s.ops {
        let what = format!("workload {:?} op {:?}", o.workload, o.op.name());
        past(&what, &o.data.counts)?;
        let most = o.data.errors_by_kind.iter().map(|(_, n)| *n).chain([o.data.skipped]).max().unwrap_or(0);
        if most > stored {
            return Err(format!("{what}: a count of {most} is past 2^63-1"));
        }
    }
    for w in &s.workers {
        past(&format!("worker {} op {:?}", w.worker, w.op.name()), &w.counts)?;
    }
    for f in &s.files {
        past(&format!("file {:?} op {:?}", f.file, f.op.name()), &f.counts)?;
    }
    let mut cpu = HashSet::new();
    for w in &s.worker_cpu {
        if w.cpu_ns > stored || w.wait_ns > stored {
            return Err(format!("worker {} cpu_ns {} / wait_ns {} past 2^63-1", w.worker, w.cpu_ns, w.wait_ns));
        }
        if !cpu.insert(w.worker) {
            return Err(format!("worker {} has two CPU rows", w.worker));
        }
    }
    // A distribution as its row is read back; one an operation does not have is not
    // stored, so it must be empty.
    let dists = |what: &str, op: ioscope_metrics::Op, d: &ioscope_metrics::OpInterval| -> Result<(), String> {
        for st in STATS.iter().filter(|st| st.kind == Kind::Distribution) {
            let Some(h) = d.histogram(st.id) else { continue };
            if !st.id.applies_to(op) {
                if !h.is_empty() {
                    return Err(format!("{what}: {} values for an operation without them", st.stored));
                }
                continue;
            }
            if histograms && !h.is_empty() {
                histogram(&h.encode_sparse(), h.count(), Some(h.sum()), h.min(), h.max())
                    .map_err(|e| format!("{what} {}: {e}", st.stored))?;
            }
        }
        Ok(())
    };
    let mut seen = HashSet::new();
    for o in &s.ops {
        let what = format!("workload {:?} op {:?}", o.workload, o.op.name());
        if !seen.insert((o.workload.as_str(), o.op)) {
            return Err(format!("{what} appears twice"));
        }
        let mut kinds = HashSet::new();
        for (kind, n) in &o.data.errors_by_kind {
            if *n > 0 && !kinds.insert(kind.as_str()) {
                return Err(format!("{what}: error kind {kind:?} appears twice"));
            }
        }
        dists(&what, o.op, &o.data)?;
        let d = &o.data;
        let name = |id| ioscope_metrics::stat::stat(id).stored;
        // (The recorder derives the counts so: see ioscope_metrics::recorder.)
        if d.counts.ops != d.latency_ns.count() {
            return Err(format!(
                "{what}: {} {} but {} {} values",
                d.counts.ops,
                name(StatId::Ops),
                d.latency_ns.count(),
                name(StatId::Latency)
            ));
        }
        if d.counts.bytes as u128 != d.size_bytes.sum() {
            return Err(format!(
                "{what}: {} {} but {} values add up to {}",
                d.counts.bytes,
                name(StatId::Bytes),
                name(StatId::Size),
                d.size_bytes.sum()
            ));
        }
    }
    let mut seen = HashSet::new();
    if let Some(w) = s.workers.iter().find(|w| !seen.insert((w.worker, w.op))) {
        return Err(format!("worker {} op {:?} appears twice", w.worker, w.op.name()));
    }
    let mut seen = HashSet::new();
    if let Some(f) = s.files.iter().find(|f| !seen.insert((f.file.as_str(), f.op))) {
        return Err(format!("file {:?} op {:?} appears twice", f.file, f.op.name()));
    }
    let mut seen = HashSet::new();
    for w in &s.worker_dists {
        let what =
            format!("worker {} op {:?}", w.worker.map_or_else(|| "(other)".into(), |w| w.to_string()), w.op.name());
        if !seen.insert((w.worker, w.op)) {
            return Err(format!("{what} has two distributions"));
        }
        dists(&what, w.op, &w.data)?;
    }
    let mut seen = HashSet::new();
    for f in &s.file_dists {
        let what = format!("file {:?} op {:?}", f.file, f.op.name());
        if !seen.insert((f.file.as_str(), f.op)) {
            return Err(format!("{what} has two distributions"));
        }
        dists(&what, f.op, &f.data)?;
    }
    Ok(())
}

/// Most rows of each kind (ops, workers, files, their distributions, worker CPU) in one
/// second from a peer.
pub const MAX_ROWS_PER_SECOND: usize = 4096;
/// Most error kinds of one operation in one second from a peer (an agent's recorder names
/// at most this many: `ioscope_metrics::recorder::ERROR_KINDS`).
pub const MAX_ERROR_KINDS: usize = 512;
/// Most bytes of a name from a peer: a workload, a file, an error kind.
pub const MAX_NAME_BYTES: usize = 256;
/// Most non-empty histogram buckets in one second from a peer, over all its histograms.
pub const MAX_BUCKETS_PER_SECOND: usize = 262_144;

/// What a second from a peer (an agent) must be besides [`snapshot`]'s rules: rows,
/// error kinds, names and buckets within the limits above (what one second may cost to
/// store, read and show), and names without control characters (they reach terminals); a
/// file or error kind has a name.
pub fn peer_second(s: &Snapshot, steps: &[u32]) -> Result<(), String> {
    let rows =
        [s.ops.len(), s.workers.len(), s.files.len(), s.worker_dists.len(), s.file_dists.len(), s.worker_cpu.len()];
    if rows.iter().any(|n| *n > MAX_ROWS_PER_SECOND) {
        return Err(format!("more than {MAX_ROWS_PER_SECOND} rows of one kind in a second"));
    }
    let name = |what: &str, n: &str, empty_ok: bool| -> Result<(), String> {
        if n.len() > MAX_NAME_BYTES {
            return Err(format!("a {what} name of {} bytes (at most {MAX_NAME_BYTES})", n.len()));
        }
        if n.is_empty() && !empty_ok {
            return Err(format!("an empty {what} name"));
        }
        if n.chars().any(unprintable) {
            return Err(format!("a {what} name with control characters: {}", crate::printable(n)));
        }
        Ok(())
    };
    let mut buckets = 0usize;
    let mut count = |d: &ioscope_metrics::OpInterval| {
        buckets += [&d.latency_ns, &d.service_ns, &d.size_bytes, &d.offset_bytes]
            .iter()
            .map(|h| h.nonzero().count())
            .sum::<usize>();
    };
    for o in &s.ops {
        name("workload", &o.workload, true)?;
        if o.data.errors_by_kind.len() > MAX_ERROR_KINDS {
            return Err(format!("more than {MAX_ERROR_KINDS} error kinds of one operation in a second"));
        }
        for (k, _) in &o.data.errors_by_kind {
            name("error kind", k, false)?;
        }
        count(&o.data);
    }
    for f in &s.files {
        name("file", &f.file, false)?;
    }
    for f in &s.file_dists {
        name("file", &f.file, false)?;
        count(&f.data);
    }
    s.worker_dists.iter().for_each(|w| count(&w.data));
    if buckets > MAX_BUCKETS_PER_SECOND {
        return Err(format!("{buckets} histogram buckets in a second (at most {MAX_BUCKETS_PER_SECOND})"));
    }
    snapshot(s, steps)
}

/// A character that must not reach a terminal as it is: a control character (C0, DEL,
/// C1: escapes, newlines, carriage returns) or a bidirectional override.
pub(crate) fn unprintable(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}
