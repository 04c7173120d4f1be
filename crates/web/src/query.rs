//! Queries over a run's per-second series: keep the rows whose dimension values match a
//! filter, break them down by one dimension, and answer per second as rates (counters),
//! percentiles or heat-map columns (distributions), or probe durations (events).
//!
//! Every answer is an exact aggregate of the stored data: counters add, histograms merge
//! by bucket addition, so a breakdown's parts always sum to its whole.

use ioscope_metrics::histogram::bucket_range;
use ioscope_metrics::stat::{all as all_stats, Side};
use ioscope_metrics::TargetValue;
use ioscope_metrics::{
    FileCounts, FileDists, Histogram, OpSeries, Snapshot, WorkerCounts, WorkerDists, OTHER, RELATIVE_ERROR,
};
use ioscope_store::{Results, StoredTarget};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The most `where` terms a query may have (each row is compared with each).
pub const MAX_FILTER_TERMS: usize = 256;

/// A value from a client as quoted in an error message: at most 64 characters of it.
pub fn echo(value: &str) -> String {
    const MAX_CHARS: usize = 64;
    match value.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{:?}... ({} bytes)", &value[..cut], value.len()),
        None => format!("{value:?}"),
    }
}

// The statistics and their dimensions are the metrics crate's registry.
pub use ioscope_metrics::stat::{by_name as stat, Dim, Kind, Offered, Stat, STATS};

/// A query the run cannot answer: the message names the parameter, the value and what
/// was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("missing parameter stat")]
    MissingStat,
    #[error("unknown statistic {} (expected one of {})", echo(.0), names(all_stats().map(|s| s.name)))]
    UnknownStat(String),
    #[error("unknown dimension {} (expected one of {})", echo(.0), names(Dim::ALL.iter().map(|d| d.name())))]
    UnknownDim(String),
    #[error("{} cannot be broken down by {dim} (it has: {})", .stat.name, names(.stat.dims.iter().map(|d| d.name())))]
    NotByDim { stat: &'static Stat, dim: String },
    #[error("{} and {} cannot be combined: {why}", .a.name(), .b.name())]
    Combined { a: Dim, b: Dim, why: &'static str },
    #[error("where {}: expected DIMENSION:VALUE", echo(.0))]
    NotATerm(String),
    #[error("where: at most {MAX_FILTER_TERMS} DIMENSION:VALUE terms")]
    TooManyTerms,
    #[error("{key}={}: expected a second of the run, a whole number (0, 1, ...)", echo(.value))]
    NotASecond { key: &'static str, value: String },
    #[error("from={from} is after to={to}: expected from <= to")]
    Reversed { from: u32, to: u32 },
    #[error("from={from} is after the run's last second: expected a second in {first}..={last}")]
    FromAfterRun { from: u32, first: u32, last: u32 },
    #[error("to={to} is before the run's first second: expected a second in {first}..={last}")]
    ToBeforeRun { to: u32, first: u32, last: u32 },
    #[error("{} is not a distribution; heat maps are for {}", .0.name, distributions())]
    NotADistribution(&'static Stat),
    #[error("encoding={}: expected json or packed", echo(.0))]
    UnknownEncoding(String),
}

fn names<'a>(list: impl Iterator<Item = &'a str>) -> String {
    list.collect::<Vec<_>>().join(", ")
}

/// "latency, service_time, size and offset".
fn distributions() -> String {
    let list: Vec<&str> = all_stats().filter(|s| s.kind == Kind::Distribution).map(|s| s.name).collect();
    match list.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => list.join(""),
    }
}

/// A parsed query: see docs/api.md.
#[derive(Debug)]
pub struct Query {
    pub stat: &'static Stat,
    pub by: Option<Dim>,
    /// (dimension, value): values of one dimension are alternatives, dimensions all apply.
    pub filter: Vec<(Dim, String)>,
    pub from: Option<u32>,
    pub to: Option<u32>,
}

impl Query {
    pub fn new(stat_name: &str) -> Result<Self, QueryError> {
        let stat = stat(stat_name).ok_or_else(|| QueryError::UnknownStat(stat_name.to_string()))?;
        Ok(Query { stat, by: None, filter: Vec::new(), from: None, to: None })
    }

    /// From URL query parameters (already percent-decoded).
    pub fn parse<'a>(params: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, QueryError> {
        let params: Vec<(&str, &str)> = params.into_iter().collect();
        let get = |k: &str| params.iter().rev().find(|(key, _)| *key == k).map(|(_, v)| *v).filter(|v| !v.is_empty());
        let mut q = Query::new(get("stat").ok_or(QueryError::MissingStat)?)?;
        if let Some(by) = get("by") {
            q = q.by(by)?;
        }
        if let Some(w) = get("where") {
            q = q.filter(w)?;
        }
        let second = |key: &'static str| -> Result<Option<u32>, QueryError> {
            get(key)
                .map(|v| v.parse::<u32>().map_err(|_| QueryError::NotASecond { key, value: v.to_string() }))
                .transpose()
        };
        q.from = second("from")?;
        q.to = second("to")?;
        Ok(q)
    }

    pub fn by(mut self, dim: &str) -> Result<Self, QueryError> {
        self.by = Some(self.dimension(dim)?);
        self.check_sources()?;
        Ok(self)
    }

    /// Adds filters written `dim:value;dim:value`.
    pub fn filter(mut self, spec: &str) -> Result<Self, QueryError> {
        for part in spec.split(';').filter(|p| !p.is_empty()) {
            let (d, v) = part.split_once(':').ok_or_else(|| QueryError::NotATerm(part.to_string()))?;
            let dim = self.dimension(d)?;
            if !self.filter.iter().any(|(fd, fv)| *fd == dim && fv == v) {
                self.filter.push((dim, v.to_string()));
            }
            // Every row is matched against every term: their number is bounded.
            if self.filter.len() > MAX_FILTER_TERMS {
                return Err(QueryError::TooManyTerms);
            }
        }
        self.check_sources()?;
        Ok(self)
    }

    /// The filter as written in URLs: `dim:value;dim:value`.
    pub fn where_string(&self) -> String {
        self.filter.iter().map(|(d, v)| format!("{}:{v}", d.name())).collect::<Vec<_>>().join(";")
    }

    fn dimension(&self, name: &str) -> Result<Dim, QueryError> {
        let dim = Dim::parse(name).ok_or_else(|| QueryError::UnknownDim(name.to_string()))?;
        if !self.stat.has(dim) {
            return Err(QueryError::NotByDim { stat: self.stat, dim: name.to_string() });
        }
        Ok(dim)
    }

    fn uses(&self, dim: Dim) -> bool {
        self.by == Some(dim) || self.filter.iter().any(|(d, _)| *d == dim)
    }

    /// Per-worker and per-file rows are separate counter sets: neither carries a
    /// workload, and they cannot be split by each other.
    fn check_sources(&self) -> Result<(), QueryError> {
        for (a, b, why) in [
            (Dim::Worker, Dim::Workload, "per-worker series carry no workload"),
            (Dim::File, Dim::Workload, "per-file series carry no workload"),
            (Dim::Worker, Dim::File, "series are kept per worker and per file, not per both"),
            (Dim::Error, Dim::Worker, "error kinds are kept per operation, not per worker"),
            (Dim::Error, Dim::File, "error kinds are kept per operation, not per file"),
        ] {
            if self.uses(a) && self.uses(b) {
                return Err(QueryError::Combined { a, b, why });
            }
        }
        Ok(())
    }

    fn matches(&self, row: &Row) -> bool {
        let mut dims: Vec<Dim> = self.filter.iter().map(|(d, _)| *d).collect();
        dims.sort_by_key(|d| d.name());
        dims.dedup();
        dims.iter().all(|&d| {
            let value = row.value(d);
            self.filter.iter().any(|(fd, fv)| *fd == d && value.as_deref() == Some(fv.as_str()))
        })
    }
}

/// One stored row of one second: a per-op series, a per-worker or per-file counter set,
/// the distributions of one of the busiest workers or files (or of the rest, "(other)"),
/// or one kind of an op's failed I/Os (None: those of no recorded kind, in files written
/// before kinds were stored).
enum Row<'a> {
    Op(&'a Snapshot, &'a OpSeries),
    Worker(&'a Snapshot, &'a WorkerCounts),
    File(&'a Snapshot, &'a FileCounts),
    WorkerDists(&'a Snapshot, &'a WorkerDists),
    FileDists(&'a Snapshot, &'a FileDists),
    Error(&'a Snapshot, &'a OpSeries, Option<&'a (String, u64)>),
}

impl<'a> Row<'a> {
    fn snapshot(&self) -> &'a Snapshot {
        match *self {
            Row::Op(s, _)
            | Row::Worker(s, _)
            | Row::File(s, _)
            | Row::WorkerDists(s, _)
            | Row::FileDists(s, _)
            | Row::Error(s, _, _) => s,
        }
    }

    fn value(&self, dim: Dim) -> Option<String> {
        let s = self.snapshot();
        match (dim, self) {
            (Dim::Op, Row::Op(_, o) | Row::Error(_, o, _)) => Some(o.op.to_string()),
            (Dim::Op, Row::Worker(_, w)) => Some(w.op.to_string()),
            (Dim::Op, Row::File(_, f)) => Some(f.op.to_string()),
            (Dim::Op, Row::WorkerDists(_, w)) => Some(w.op.to_string()),
            (Dim::Op, Row::FileDists(_, f)) => Some(f.op.to_string()),
            (Dim::File, Row::File(_, f)) => Some(f.file.clone()),
            (Dim::File, Row::FileDists(_, f)) => Some(f.file.clone()),
            (Dim::Worker, Row::WorkerDists(_, w)) => {
                Some(w.worker.map_or_else(|| OTHER.to_string(), |n| n.to_string()))
            }
            (Dim::Workload, Row::Op(_, o) | Row::Error(_, o, _)) => Some(workload_name(&o.workload).to_string()),
            (Dim::Error, Row::Error(_, _, kind)) => Some(kind.map_or("unrecorded", |k| k.0.as_str()).to_string()),
            (Dim::Host, _) => Some(s.host.clone()),
            (Dim::Step, _) => Some(s.step.to_string()),
            (Dim::Worker, Row::Worker(_, w)) => Some(w.worker.to_string()),
            _ => None,
        }
    }

    fn counter(&self, stat: &Stat) -> u64 {
        match self {
            Row::Op(_, o) => o.data.count(stat.id),
            Row::Worker(_, w) => w.counts.get(stat.id),
            Row::File(_, f) => f.counts.get(stat.id),
            // A kind's failures, or those of no recorded kind: what its series counts.
            Row::Error(_, o, kind) if stat.has(Dim::Error) => {
                let named: u64 = o.data.errors_by_kind.iter().map(|k| k.1).sum();
                Some(kind.map_or(o.data.counts.errors.saturating_sub(named), |k| k.1))
            }
            Row::Error(..) | Row::WorkerDists(..) | Row::FileDists(..) => None,
        }
        .unwrap_or(0)
    }

    /// Whether the row's operation has the statistic's quantity ([`ioscope_metrics::stat::StatId::applies_to`]): an
    /// operation without a size or offset is no series of those (not an empty one, nor a row
    /// of zeros in files written before they stopped recording them).
    fn has_quantity(&self, stat: &Stat) -> bool {
        match *self {
            Row::Op(_, o) => stat.id.applies_to(o.op),
            Row::WorkerDists(_, w) => stat.id.applies_to(w.op),
            Row::FileDists(_, f) => stat.id.applies_to(f.op),
            Row::Worker(..) | Row::File(..) | Row::Error(..) => true,
        }
    }

    fn histogram(&self, stat: &Stat) -> Option<&'a Histogram> {
        match *self {
            Row::Op(_, o) => o.data.histogram(stat.id),
            Row::WorkerDists(_, w) => w.data.histogram(stat.id),
            Row::FileDists(_, f) => f.data.histogram(stat.id),
            Row::Worker(..) | Row::File(..) | Row::Error(..) => None,
        }
    }
}

/// The name shown for a workload (a run of one unnamed workload stores "").
pub fn workload_name(stored: &str) -> &str {
    if stored.is_empty() {
        "main"
    } else {
        stored
    }
}

/// First and last stored second, or None when nothing is stored yet.
pub fn second_range(r: &Results) -> Option<(u32, u32)> {
    let client = r.seconds.first().zip(r.seconds.last()).map(|(a, b)| (a.second, b.second));
    let target = r.target.iter().filter_map(|t| Some((t.samples.first()?.second, t.samples.last()?.second)));
    client.into_iter().chain(target).reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
}

/// Refuses a query whose `from`/`to` cannot be answered from the run: a range that ends
/// before it starts, or starts after the run's last second (a `to` beyond it is clamped).
pub fn check_range(r: &Results, q: &Query) -> Result<(), QueryError> {
    let (first, last) = second_range(r).unwrap_or((0, 0));
    match (q.from, q.to) {
        (Some(from), Some(to)) if from > to => Err(QueryError::Reversed { from, to }),
        (Some(from), _) if from > last => Err(QueryError::FromAfterRun { from, first, last }),
        (_, Some(to)) if to < first => Err(QueryError::ToBeforeRun { to, first, last }),
        _ => Ok(()),
    }
}

/// The seconds a query covers, and their snapshots grouped by second.
struct Range<'a> {
    from: u32,
    to: u32,
    by_second: Vec<&'a [Snapshot]>,
    /// The run's target series (read by queries of target statistics).
    target: &'a [StoredTarget],
}

impl<'a> Range<'a> {
    /// The query's seconds within the run's: `from` and `to` are clamped to the stored
    /// seconds, so nothing is allocated for seconds the run does not have, whatever a
    /// client asks ([`check_range`] refuses what cannot be answered).
    fn of(r: &'a Results, q: &Query) -> Range<'a> {
        let (first, last) = second_range(r).unwrap_or((0, 0));
        // min/max rather than clamp: clamp panics when its bounds are reversed.
        let from = q.from.unwrap_or(first).max(first).min(last);
        let to = q.to.unwrap_or(last).min(last).max(from);
        let by_second = r.seconds.chunk_by(|a, b| a.second == b.second).filter(|c| (from..=to).contains(&c[0].second));
        Range { from, to, by_second: by_second.collect(), target: &r.target }
    }

    fn len(&self) -> usize {
        (self.to - self.from) as usize + 1
    }

    fn index(&self, second: u32) -> usize {
        (second - self.from) as usize
    }

    /// The target series a query of a target statistic reads: its statistic's, matching
    /// the filter.
    fn target_rows(&self, q: &'a Query) -> impl Iterator<Item = &'a StoredTarget> + 'a {
        self.target.iter().filter(move |t| {
            std::ptr::eq(t.stat, q.stat)
                && q.filter
                    .iter()
                    .map(|(d, _)| *d)
                    .all(|d| q.filter.iter().any(|(fd, fv)| *fd == d && t.label(d) == fv))
        })
    }

    /// The samples of a target series within the range, with their index.
    fn target_samples(
        &self,
        t: &'a StoredTarget,
    ) -> impl Iterator<Item = (usize, &'a ioscope_store::TargetSample)> + '_ {
        t.samples.iter().filter(|x| (self.from..=self.to).contains(&x.second)).map(|x| (self.index(x.second), x))
    }

    fn rows(&self, q: &Query, group: &'a [Snapshot]) -> Vec<Row<'a>> {
        let (workers, files, errors) = (q.uses(Dim::Worker), q.uses(Dim::File), q.uses(Dim::Error));
        let dists = q.stat.kind == Kind::Distribution;
        let mut rows = Vec::new();
        for s in group {
            if dists && workers {
                rows.extend(s.worker_dists.iter().map(|w| Row::WorkerDists(s, w)));
            } else if dists && files {
                rows.extend(s.file_dists.iter().map(|f| Row::FileDists(s, f)));
            } else if errors {
                for o in &s.ops {
                    rows.extend(o.data.errors_by_kind.iter().map(|k| Row::Error(s, o, Some(k))));
                    let named: u64 = o.data.errors_by_kind.iter().map(|k| k.1).sum();
                    if o.data.counts.errors > named {
                        rows.push(Row::Error(s, o, None));
                    }
                }
            } else if workers {
                rows.extend(s.workers.iter().map(|w| Row::Worker(s, w)));
            } else if files {
                rows.extend(s.files.iter().map(|f| Row::File(s, f)));
            } else {
                rows.extend(s.ops.iter().map(|o| Row::Op(s, o)));
            }
        }
        rows.retain(|row| q.matches(row));
        rows
    }

    /// `seconds`, `step` and `warmup` arrays (step/warmup null for a second not stored).
    fn axis(&self) -> (Vec<u32>, Vec<Option<u32>>, Vec<Option<bool>>) {
        let n = self.len();
        let mut step = vec![None; n];
        let mut warmup = vec![None; n];
        for g in &self.by_second {
            let i = self.index(g[0].second);
            step[i] = Some(g[0].step);
            warmup[i] = Some(g.iter().any(|s| s.warmup));
        }
        ((self.from..=self.to).collect(), step, warmup)
    }
}

/// Breakdown keys in a stable order: numeric when every key is a number, otherwise in
/// order of first appearance; "(other)" (the workers or files without a row of their own)
/// last either way.
#[derive(Default)]
struct Keys {
    names: Vec<String>,
    /// Where each name is in `names` (a file tree's run can have many files).
    at: std::collections::HashMap<String, usize>,
}

impl Keys {
    fn index(&mut self, name: String) -> usize {
        if let Some(&i) = self.at.get(&name) {
            return i;
        }
        self.names.push(name.clone());
        self.at.insert(name, self.names.len() - 1);
        self.names.len() - 1
    }

    /// The order to present keys in (indices into `names`).
    fn order(&self) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.names.len()).filter(|&i| self.names[i] != OTHER).collect();
        if idx.iter().all(|&i| self.names[i].parse::<u64>().is_ok()) {
            idx.sort_by_key(|&i| self.names[i].parse::<u64>().unwrap_or(0));
        }
        idx.extend(self.names.iter().position(|n| n == OTHER));
        idx
    }
}

fn key_of(q: &Query, row: &Row) -> String {
    match q.by {
        Some(d) => row.value(d).unwrap_or_default(),
        None => "all".to_string(),
    }
}

/// The fields every series and heat-map answer starts with: what was asked and the seconds.
struct Head {
    stat: &'static str,
    unit: String,
    kind: &'static str,
    by: Option<&'static str>,
    filter: String,
    from: u32,
    to: u32,
    seconds: Vec<u32>,
    step: Vec<Option<u32>>,
    warmup: Vec<Option<bool>>,
}

fn head(q: &Query, r: &Range) -> Head {
    let (seconds, step, warmup) = r.axis();
    Head {
        stat: q.stat.name,
        unit: q.stat.answer_unit(),
        kind: q.stat.kind.name(),
        by: q.by.map(Dim::name),
        filter: q.where_string(),
        from: r.from,
        to: r.to,
        seconds,
        step,
        warmup,
    }
}

/// `GET /api/v1/runs/{id}/series` (docs/api.md). The fields are in alphabetical order, the
/// order the answer has always been written in.
#[derive(Serialize, Debug)]
pub struct SeriesAnswer {
    /// The dimension broken down by (null: one series keyed `all`).
    pub by: Option<&'static str>,
    pub from: u32,
    /// `counter`, `distribution` or `event`.
    pub kind: &'static str,
    /// Every second from `from` to `to`.
    pub seconds: Vec<u32>,
    /// One per breakdown value, in presentation order.
    pub series: Vec<Series>,
    pub stat: &'static str,
    /// Per second, its step (null: nothing stored that second).
    pub step: Vec<Option<u32>>,
    pub to: u32,
    pub unit: String,
    /// Per second, whether it was warm-up (null: nothing stored that second).
    pub warmup: Vec<Option<bool>>,
    /// The filter as asked, `dim:value;dim:value`.
    #[serde(rename = "where")]
    pub filter: String,
}

/// One breakdown value's series, by the statistic's kind. Per-second arrays hold null for
/// a second with no stored value.
#[derive(Serialize, Debug)]
#[serde(untagged)]
pub enum Series {
    /// A counter: per-second rates and the whole count.
    Counter { key: String, total: u64, values: Vec<Option<f64>> },
    /// A distribution: per-second counts, percentiles and maxima.
    Distribution {
        count: Vec<Option<u64>>,
        key: String,
        max: Vec<Option<u64>>,
        p50: Vec<Option<u64>>,
        p90: Vec<Option<u64>>,
        p99: Vec<Option<u64>>,
        p999: Vec<Option<u64>>,
        total: u64,
    },
    /// Probes: per second, the longest run started in it (ns), and how many ran.
    Event { key: String, total: u64, values: Vec<Option<u64>> },
    /// A gauge (target memory): per-second levels and their mean over the seconds stored.
    Gauge { key: String, mean: Option<f64>, values: Vec<Option<u64>> },
}

/// `GET /api/v1/runs/{id}/series`.
pub fn series(results: &Results, q: &Query) -> SeriesAnswer {
    let range = Range::of(results, q);
    let series = match q.stat.kind {
        Kind::Counter if q.stat.side == Side::Target => target_counter_series(&range, q),
        Kind::Counter => counter_series(&range, q),
        Kind::Gauge => gauge_series(&range, q),
        Kind::Distribution => distribution_series(&range, q),
        Kind::Event => probe_series(results, &range, q),
    };
    let h = head(q, &range);
    SeriesAnswer {
        by: h.by,
        from: h.from,
        kind: h.kind,
        seconds: h.seconds,
        series,
        stat: h.stat,
        step: h.step,
        to: h.to,
        unit: h.unit,
        warmup: h.warmup,
        filter: h.filter,
    }
}

fn counter_series(range: &Range, q: &Query) -> Vec<Series> {
    let n = range.len();
    let mut keys = Keys::default();
    let mut values: Vec<Vec<f64>> = Vec::new();
    let mut totals: Vec<u64> = Vec::new();
    let mut present = vec![false; n];
    for group in &range.by_second {
        let i = range.index(group[0].second);
        present[i] = true;
        for row in range.rows(q, group) {
            let k = keys.index(key_of(q, &row));
            if k == values.len() {
                values.push(vec![0.0; n]);
                totals.push(0);
            }
            let count = row.counter(q.stat);
            let interval = row.snapshot().interval_ns.max(1) as f64;
            values[k][i] += count as f64 * 1e9 / interval;
            totals[k] += count;
        }
    }
    keys.order()
        .into_iter()
        .map(|k| Series::Counter {
            key: keys.names[k].clone(),
            total: totals[k],
            values: values[k].iter().zip(&present).map(|(v, p)| p.then(|| round3(*v))).collect(),
        })
        .collect()
}

/// A target counter: per second, the sum of its series' rates over the interval each was
/// sampled over, divided as the statistic is answered (percent of a CPU, requests in flight).
fn target_counter_series(range: &Range, q: &Query) -> Vec<Series> {
    let n = range.len();
    let mut keys = Keys::default();
    let mut values: Vec<Vec<Option<f64>>> = Vec::new();
    let mut totals: Vec<u64> = Vec::new();
    for t in range.target_rows(q) {
        let k = keys.index(target_key(q, t));
        if k == values.len() {
            values.push(vec![None; n]);
            totals.push(0);
        }
        for (i, x) in range.target_samples(t) {
            let TargetValue::Count(count) = x.value else { continue };
            let rate = count as f64 * 1e9 / x.interval_ns.max(1) as f64 / q.stat.answer_divisor();
            *values[k][i].get_or_insert(0.0) += rate;
            totals[k] = totals[k].saturating_add(count);
        }
    }
    keys.order()
        .into_iter()
        .map(|k| Series::Counter {
            key: keys.names[k].clone(),
            total: totals[k],
            values: values[k].iter().map(|v| v.map(round3)).collect(),
        })
        .collect()
}

/// A gauge: per second, the sum of its series' levels; `mean` over the seconds stored.
fn gauge_series(range: &Range, q: &Query) -> Vec<Series> {
    let n = range.len();
    let mut keys = Keys::default();
    let mut values: Vec<Vec<Option<u64>>> = Vec::new();
    for t in range.target_rows(q) {
        let k = keys.index(target_key(q, t));
        if k == values.len() {
            values.push(vec![None; n]);
        }
        for (i, x) in range.target_samples(t) {
            let TargetValue::Gauge(level) = x.value else { continue };
            let v = values[k][i].get_or_insert(0);
            *v = v.saturating_add(level);
        }
    }
    keys.order()
        .into_iter()
        .map(|k| {
            let stored: Vec<u64> = values[k].iter().flatten().copied().collect();
            let mean =
                (!stored.is_empty()).then(|| stored.iter().map(|&v| v as f64).sum::<f64>() / stored.len() as f64);
            Series::Gauge {
                key: keys.names[k].clone(),
                mean: mean.map(f64::round),
                values: std::mem::take(&mut values[k]),
            }
        })
        .collect()
}

/// A target series' breakdown key.
fn target_key(q: &Query, t: &StoredTarget) -> String {
    match q.by {
        Some(d) => t.label(d).to_string(),
        None => "all".to_string(),
    }
}

/// Merges each key's histograms per second and hands them to `each(key, second index, h)`.
fn per_second_histograms(range: &Range, q: &Query, keys: &mut Keys, mut each: impl FnMut(usize, usize, &Histogram)) {
    if q.stat.side == Side::Target {
        let mut merged: BTreeMap<(usize, usize), Histogram> = BTreeMap::new();
        for t in range.target_rows(q) {
            let k = keys.index(target_key(q, t));
            for (i, x) in range.target_samples(t) {
                if let TargetValue::Dist(h) = &x.value {
                    merged.entry((i, k)).or_default().merge(h);
                }
            }
        }
        for ((i, k), h) in merged {
            each(k, i, &h);
        }
        return;
    }
    for group in &range.by_second {
        let i = range.index(group[0].second);
        let mut parts: BTreeMap<usize, Vec<&Histogram>> = BTreeMap::new();
        for row in range.rows(q, group).into_iter().filter(|r| r.has_quantity(q.stat)) {
            let k = keys.index(key_of(q, &row));
            if let Some(h) = row.histogram(q.stat) {
                parts.entry(k).or_default().push(h);
            }
        }
        for (k, hs) in parts {
            if hs.len() == 1 {
                each(k, i, hs[0]);
            } else {
                let mut merged = Histogram::new();
                hs.iter().for_each(|h| merged.merge(h));
                each(k, i, &merged);
            }
        }
    }
}

fn distribution_series(range: &Range, q: &Query) -> Vec<Series> {
    let n = range.len();
    let mut keys = Keys::default();
    /// One key's arrays: count, p50, p90, p99, p999, max.
    struct Acc {
        count: Vec<Option<u64>>,
        total: u64,
        q: [Vec<Option<u64>>; 4],
        max: Vec<Option<u64>>,
    }
    let new_acc =
        || Acc { count: vec![None; n], total: 0, q: std::array::from_fn(|_| vec![None; n]), max: vec![None; n] };
    let mut accs: Vec<Acc> = Vec::new();
    per_second_histograms(range, q, &mut keys, |k, i, h| {
        while accs.len() <= k {
            accs.push(new_acc());
        }
        let a = &mut accs[k];
        a.count[i] = Some(h.count());
        a.total += h.count();
        for (j, p) in [0.5, 0.9, 0.99, 0.999].into_iter().enumerate() {
            a.q[j][i] = h.quantile(p);
        }
        a.max[i] = h.max();
    });
    // A key whose rows held no histogram has empty arrays.
    accs.resize_with(keys.names.len(), new_acc);
    let mut accs: Vec<Option<Acc>> = accs.into_iter().map(Some).collect();
    keys.order()
        .into_iter()
        .filter_map(|k| {
            let a = accs[k].take()?;
            let [p50, p90, p99, p999] = a.q;
            Some(Series::Distribution {
                count: a.count,
                key: keys.names[k].clone(),
                max: a.max,
                p50,
                p90,
                p99,
                p999,
                total: a.total,
            })
        })
        .collect()
}

fn probe_series(results: &Results, range: &Range, q: &Query) -> Vec<Series> {
    let n = range.len();
    let mut keys = Keys::default();
    let mut values: Vec<Vec<Option<u64>>> = Vec::new();
    let mut totals: Vec<u64> = Vec::new();
    for p in &results.probes {
        let second = (p.at_ns / 1_000_000_000) as u32;
        if !(range.from..=range.to).contains(&second) {
            continue;
        }
        if q.filter.iter().any(|(d, _)| *d == Dim::Probe) && !q.filter.iter().any(|(_, v)| *v == p.name) {
            continue;
        }
        let key = if q.by.is_some() { p.name.clone() } else { "all".into() };
        let k = keys.index(key);
        if k == values.len() {
            values.push(vec![None; n]);
            totals.push(0);
        }
        let i = range.index(second);
        let longest = values[k][i].unwrap_or(0).max(p.duration_ns);
        values[k][i] = Some(longest);
        totals[k] += 1;
    }
    keys.order()
        .into_iter()
        .map(|k| Series::Event { key: keys.names[k].clone(), total: totals[k], values: std::mem::take(&mut values[k]) })
        .collect()
}

/// A distribution's heat map: per breakdown value and second, the non-empty buckets.
pub struct HeatMap {
    pub from: u32,
    pub seconds: usize,
    /// Every bucket used by any series, ascending: inclusive value bounds.
    pub buckets: Vec<(u64, u64)>,
    /// In presentation order.
    pub series: Vec<HeatSeries>,
}

pub struct HeatSeries {
    pub key: String,
    pub total: u64,
    /// Per second: (index into `buckets`, count) pairs, ascending.
    pub columns: Vec<Vec<(u32, u64)>>,
}

/// The heat map of a distribution query.
pub fn heat_map(results: &Results, q: &Query) -> Result<HeatMap, QueryError> {
    if q.stat.kind != Kind::Distribution {
        return Err(QueryError::NotADistribution(q.stat));
    }
    let range = Range::of(results, q);
    let n = range.len();
    let mut keys = Keys::default();
    // Per key: per second, (bucket index, count) pairs in ascending bucket order.
    let mut cols: Vec<Vec<Vec<(usize, u64)>>> = Vec::new();
    let mut totals: Vec<u64> = Vec::new();
    let mut used = BTreeSet::new();
    per_second_histograms(&range, q, &mut keys, |k, i, h| {
        while cols.len() <= k {
            cols.push(vec![Vec::new(); n]);
            totals.push(0);
        }
        let cells: Vec<(usize, u64)> = h.nonzero().collect();
        used.extend(cells.iter().map(|c| c.0));
        totals[k] += h.count();
        cols[k][i] = cells;
    });
    while cols.len() < keys.names.len() {
        cols.push(vec![Vec::new(); n]);
        totals.push(0);
    }
    let used: Vec<usize> = used.into_iter().collect();
    let mut position = vec![0u32; used.last().map_or(0, |b| b + 1)];
    for (p, &b) in used.iter().enumerate() {
        position[b] = p as u32;
    }
    let series = keys
        .order()
        .into_iter()
        .map(|k| HeatSeries {
            key: keys.names[k].clone(),
            total: totals[k],
            columns: cols[k].iter().map(|c| c.iter().map(|&(b, count)| (position[b], count)).collect()).collect(),
        })
        .collect();
    Ok(HeatMap { from: range.from, seconds: n, buckets: used.iter().map(|&b| bucket_range(b)).collect(), series })
}

/// `GET /api/v1/runs/{id}/heatmap` (docs/api.md), in either encoding: `S` is a series in
/// it. The fields are in alphabetical order with `series` last, the order the answer has
/// always been written in.
#[derive(Serialize, Debug)]
pub struct HeatmapAnswer<S> {
    /// Every bucket used by any series, ascending: inclusive value bounds.
    pub buckets: Vec<(u64, u64)>,
    pub by: Option<&'static str>,
    /// Seconds per column when more than one (`column_seconds`, [`crate::columns`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column_seconds: Option<u32>,
    /// `packed` for the compact encoding; absent for nested arrays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<&'static str>,
    pub from: u32,
    pub kind: &'static str,
    pub relative_error: f64,
    pub seconds: Vec<u32>,
    pub stat: &'static str,
    pub step: Vec<Option<u32>>,
    pub to: u32,
    pub unit: String,
    pub warmup: Vec<Option<bool>>,
    #[serde(rename = "where")]
    pub filter: String,
    pub series: Vec<S>,
}

/// A heat map's answer with its series written as `series` makes them (shared by the
/// encodings).
pub fn heatmap_answer<S>(
    results: &Results,
    q: &Query,
    map: HeatMap,
    encoding: Option<&'static str>,
    series: impl FnOnce(Vec<HeatSeries>) -> Vec<S>,
) -> HeatmapAnswer<S> {
    let h = head(q, &Range::of(results, q));
    HeatmapAnswer {
        buckets: map.buckets,
        by: h.by,
        column_seconds: None,
        encoding,
        from: h.from,
        kind: h.kind,
        relative_error: RELATIVE_ERROR,
        seconds: h.seconds,
        stat: h.stat,
        step: h.step,
        to: h.to,
        unit: h.unit,
        warmup: h.warmup,
        filter: h.filter,
        series: series(map.series),
    }
}

/// A heat map's series in the JSON encoding: per second, the non-empty cells as one flat
/// array `[bucket, count, bucket, count, ...]`.
#[derive(Serialize, Debug)]
pub struct HeatCells {
    pub key: String,
    pub total: u64,
    #[serde(serialize_with = "flat_columns")]
    pub columns: Vec<Vec<(u32, u64)>>,
}

/// Writes each column's (bucket, count) pairs as one flat array: an hour of seconds is
/// millions of numbers, written straight to the text with no value tree.
fn flat_columns<S: serde::Serializer>(columns: &[Vec<(u32, u64)>], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    struct Flat<'a>(&'a [(u32, u64)]);
    impl Serialize for Flat<'_> {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(self.0.len() * 2))?;
            for &(bucket, count) in self.0 {
                seq.serialize_element(&bucket)?;
                seq.serialize_element(&count)?;
            }
            seq.end()
        }
    }
    let mut seq = s.serialize_seq(Some(columns.len()))?;
    for col in columns {
        seq.serialize_element(&Flat(col))?;
    }
    seq.end()
}

/// `GET /api/v1/runs/{id}/heatmap` in the JSON encoding.
pub fn heatmap(results: &Results, q: &Query) -> Result<HeatmapAnswer<HeatCells>, QueryError> {
    let map = heat_map(results, q)?;
    Ok(heatmap_answer(results, q, map, None, |series| {
        series.into_iter().map(|s| HeatCells { key: s.key, total: s.total, columns: s.columns }).collect()
    }))
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Every value each dimension takes in the run (the `dimensions` of a run's detail, for
/// the UI's pickers). Alphabetical, the order the answer has always been written in.
#[derive(Serialize, Debug, Default)]
pub struct DimensionValues {
    pub cpu: Vec<String>,
    pub disk: Vec<String>,
    pub error: Vec<String>,
    pub file: Vec<String>,
    pub host: Vec<String>,
    pub mode: Vec<String>,
    pub nic: Vec<String>,
    pub op: Vec<String>,
    pub probe: Vec<String>,
    pub process: Vec<String>,
    pub step: Vec<String>,
    pub syscall: Vec<String>,
    pub worker: Vec<String>,
    pub workload: Vec<String>,
}

impl DimensionValues {
    /// The values of dimension `dim`.
    pub fn of(&self, dim: Dim) -> &[String] {
        match dim {
            Dim::Error => &self.error,
            Dim::File => &self.file,
            Dim::Host => &self.host,
            Dim::Op => &self.op,
            Dim::Probe => &self.probe,
            Dim::Step => &self.step,
            Dim::Worker => &self.worker,
            Dim::Workload => &self.workload,
            Dim::Cpu => &self.cpu,
            Dim::Mode => &self.mode,
            Dim::Nic => &self.nic,
            Dim::Disk => &self.disk,
            Dim::Process => &self.process,
            Dim::Syscall => &self.syscall,
        }
    }
}

/// Every value each dimension takes in the run.
pub fn dimension_values(r: &Results) -> DimensionValues {
    let mut d = DimensionValues::default();
    let mut workers = BTreeSet::new();
    let mut other_worker = false;
    // Kinds and files are listed sorted: a set, not a search of the list per value (a
    // results file may hold thousands of each a second).
    let (mut errors, mut files) = (BTreeSet::new(), BTreeSet::new());
    let mut steps: BTreeSet<u32> = r.steps.iter().map(|s| s.index).collect();
    let push = |v: &mut Vec<String>, s: &str| {
        if !v.iter().any(|x| x == s) {
            v.push(s.to_string());
        }
    };
    for s in &r.seconds {
        push(&mut d.host, &s.host);
        steps.insert(s.step);
        for o in &s.ops {
            push(&mut d.op, o.op.name());
            push(&mut d.workload, workload_name(&o.workload));
            errors.extend(o.data.errors_by_kind.iter().map(|(kind, _)| kind.as_str()));
        }
        workers.extend(s.workers.iter().map(|w| w.worker));
        files.extend(s.files.iter().map(|f| f.file.as_str()));
        files.extend(s.file_dists.iter().map(|f| f.file.as_str()));
        other_worker |= s.worker_dists.iter().any(|w| w.worker.is_none());
    }
    d.file = files.into_iter().map(str::to_string).collect();
    // "(other)" last, like in breakdowns.
    if let Some(i) = d.file.iter().position(|f| f == OTHER) {
        let other = d.file.remove(i);
        d.file.push(other);
    }
    d.error = errors.into_iter().map(str::to_string).collect();
    for p in &r.probes {
        push(&mut d.probe, &p.name);
    }
    // The target side's own dimensions, in the order the samplers wrote them.
    for t in &r.target {
        push(&mut d.host, &t.host);
        for (dim, v) in &t.labels {
            let list = match dim {
                Dim::Cpu => &mut d.cpu,
                Dim::Mode => &mut d.mode,
                Dim::Nic => &mut d.nic,
                Dim::Disk => &mut d.disk,
                Dim::Process => &mut d.process,
                Dim::Syscall => &mut d.syscall,
                Dim::Op => &mut d.op,
                _ => continue,
            };
            push(list, v);
        }
    }
    d.step = steps.into_iter().map(|x| x.to_string()).collect();
    d.worker = workers.into_iter().map(|x| x.to_string()).collect();
    if other_worker {
        d.worker.push(OTHER.to_string());
    }
    d
}

/// Whether the run offers a statistic: some only ever have values in some runs.
/// Whether the run holds `stat` broken down by `dim`: per-worker and per-file
/// distributions exist only in runs that broke them down (not with `breakdown_top = 0`,
/// not per file on engine null, not in files written before schema 5), and per-file
/// counters only where files were counted. A run still being written offers every
/// dimension its statistic has (its first seconds may not show them yet).
fn has_dimension(r: &Results, stat: &Stat, dim: Dim) -> bool {
    if r.run.status == ioscope_store::Status::Running {
        return true;
    }
    let distribution = stat.kind == ioscope_metrics::stat::Kind::Distribution;
    if stat.side == Side::Target {
        return dim == Dim::Host || r.target.iter().any(|t| std::ptr::eq(t.stat, stat) && !t.label(dim).is_empty());
    }
    match dim {
        Dim::Worker if distribution => r.seconds.iter().any(|s| !s.worker_dists.is_empty()),
        Dim::File if distribution => r.seconds.iter().any(|s| !s.file_dists.is_empty()),
        Dim::File => r.seconds.iter().any(|s| !s.files.is_empty()),
        _ => true,
    }
}

pub fn offered(r: &Results, stat: &Stat) -> bool {
    match stat.offered {
        Offered::Always => true,
        Offered::WithFileTreeOps => r.ops().iter().any(|op| op.is_file_tree()),
        Offered::WithProbes => !r.probes.is_empty(),
        Offered::WithTargetSeries => r.target.iter().any(|t| std::ptr::eq(t.stat, stat)),
    }
}

/// A statistic in a run's detail (`stats`, the UI's statistic picker), from the registry.
/// Alphabetical, the order the answer has always been written in.
#[derive(Serialize, Debug)]
pub struct StatEntry {
    pub dimensions: Vec<&'static str>,
    /// `client` (what ioscope's workers saw) or `target` (what the server did).
    pub side: &'static str,
    /// `counter`, `distribution` or `event`.
    pub kind: &'static str,
    pub label: &'static str,
    pub name: &'static str,
    /// The unit of answers (`ops/s`, `ns`, ...).
    pub unit: String,
}

/// Every statistic the run offers.
pub fn stat_list(r: &Results) -> Vec<StatEntry> {
    all_stats()
        .filter(|s| offered(r, s))
        .map(|s| StatEntry {
            dimensions: s.dims.iter().filter(|d| has_dimension(r, s, **d)).map(|d| d.name()).collect(),
            side: s.side.name(),
            kind: s.kind.name(),
            label: s.label,
            name: s.name,
            unit: s.answer_unit(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Typed errors keep the messages clients and scripts have read so far.
    #[test]
    fn query_errors_name_the_parameter_the_value_and_the_expected_form() {
        let err = |r: Result<Query, QueryError>| r.unwrap_err().to_string();
        assert_eq!(
            err(Query::new("iops")),
            "unknown statistic \"iops\" (expected one of ops, bytes, errors, skipped, latency, service_time, size, \
             offset, probe, cpu, process_cpu, page_cache, dirty, available, net_rx_bytes, net_tx_bytes, \
             net_rx_packets, net_tx_packets, net_drops, disk_ops, disk_bytes, disk_busy, disk_queue, block_latency, \
             block_size, block_offset, syscall_latency, probe_cpu, probe_dropped)"
        );
        assert_eq!(err(Query::parse([("by", "op")])), "missing parameter stat");
        assert_eq!(
            err(Query::parse([("stat", "ops"), ("from", "x")])),
            "from=\"x\": expected a second of the run, a whole number (0, 1, ...)"
        );
        assert_eq!(
            err(Query::new("probe").and_then(|q| q.by("worker"))),
            "probe cannot be broken down by worker (it has: probe)"
        );
        assert_eq!(err(Query::new("ops").and_then(|q| q.filter("op"))), "where \"op\": expected DIMENSION:VALUE");
        assert_eq!(
            err(Query::new("ops").and_then(|q| q.by("nope"))),
            "unknown dimension \"nope\" (expected one of op, workload, host, step, worker, file, error, probe, cpu, mode, \
             nic, disk, process, syscall)"
        );
        assert_eq!(
            QueryError::NotADistribution(stat("ops").unwrap()).to_string(),
            "ops is not a distribution; heat maps are for latency, service_time, size, offset, block_latency, block_size, \
             block_offset and syscall_latency"
        );
    }
}
