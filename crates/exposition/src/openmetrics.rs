//! Cumulative values and their OpenMetrics text (application/openmetrics-text 1.0.0).
//!
//! ioscope records per-second values (a counter's count in the second, a histogram of the
//! second); Prometheus wants totals since the start. [`Exposition`] adds every second it is
//! given into totals per series, and [`Exposition::render`] writes them: counters as
//! `_total`, gauges as their last level, histograms as cumulative `_bucket{le=...}` with
//! `_count` and `_sum`. Names: `ioscope_<stored name, . as _>_<unit>`, nanoseconds as
//! seconds (`ioscope_cpu_time_seconds_total`, `ioscope_block_latency_seconds`).
//!
//! Bucket bounds are fixed per unit, so `rate()` works across scrapes, and each one is the
//! last value of one of ioscope's log-linear buckets (`2^k - 1`: every bucket lies wholly
//! below `2^k` or at or above it), so the cumulative counts are exact, not estimates.

use ioscope_metrics::histogram::bucket_range;
use ioscope_metrics::stat::{self, Dim, Kind, StatId};
use ioscope_metrics::{Histogram, OpSeries, TargetSecond, TargetValue};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The answer's Content-Type.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// `2^first - 1`, `2^(first+1) - 1`, ... (N bounds).
const fn below_powers_of_two<const N: usize>(first: u32) -> [u64; N] {
    let mut bounds = [0u64; N];
    let mut i = 0;
    while i < N {
        bounds[i] = (1u64 << (first + i as u32)) - 1;
        i += 1;
    }
    bounds
}

/// Nanoseconds: below 1.024 µs, 2.048 µs, ... 68.7 s (2^10 - 1 ns to 2^36 - 1 ns).
pub const NS_BOUNDS: [u64; 27] = below_powers_of_two::<27>(10);
/// Bytes: below 512 B, 1 KiB, ... 1 TiB (2^9 - 1 to 2^40 - 1; offsets on a disk go far).
pub const BYTES_BOUNDS: [u64; 32] = below_powers_of_two::<32>(9);

/// How a unit is exposed: its name in metric names and what a stored value is divided by.
struct Unit {
    name: &'static str,
    divisor: u64,
    bounds: &'static [u64],
}

fn unit(stored_unit: &'static str) -> Unit {
    match stored_unit {
        "ns" => Unit { name: "seconds", divisor: 1_000_000_000, bounds: &NS_BOUNDS },
        "bytes" => Unit { name: "bytes", divisor: 1, bounds: &BYTES_BOUNDS },
        other => Unit { name: other, divisor: 1, bounds: &[] },
    }
}

/// The metric family name of a statistic: `ioscope_disk_ops`, `ioscope_block_latency_seconds`
/// (counters' samples add `_total`).
pub fn family_name(s: &stat::Stat) -> String {
    let unit = unit(s.unit).name;
    let mut name = format!("ioscope_{}", s.stored.replace('.', "_"));
    if !name.ends_with(&format!("_{unit}")) {
        name.push('_');
        name.push_str(unit);
    }
    name
}

/// The label names of a statistic's dimensions (host first, then its own, in its order).
fn label_name(dim: Dim) -> &'static str {
    dim.name()
}

/// A series' total so far.
#[derive(Clone, Debug)]
enum Total {
    Counter(u128),
    Gauge(u64),
    /// Counts per bound (not cumulative; the last slot is above every bound) and the sum.
    Histogram {
        slots: Vec<u64>,
        sum: u128,
    },
}

/// One series: its label pairs, in the order they are written.
type Labels = Vec<(&'static str, String)>;

/// Totals since the first second given, per statistic and label set.
#[derive(Debug, Default)]
pub struct Exposition {
    series: BTreeMap<StatKey, BTreeMap<Labels, Total>>,
    /// Seconds added, for `ioscope_seconds_total`: Prometheus sees the exposition is alive.
    seconds: u64,
}

/// Orders families as the registry lists them (client, then target).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct StatKey(usize);

impl StatKey {
    fn of(id: StatId) -> StatKey {
        StatKey(stat::all().position(|s| s.id == id).unwrap_or(usize::MAX))
    }
    fn stat(self) -> Option<&'static stat::Stat> {
        stat::all().nth(self.0)
    }
}

impl Exposition {
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Adds one second of a host's target series (`ioscope probe`).
    pub fn add_target(&mut self, second: &TargetSecond) {
        for s in &second.series {
            let st = stat::stat(s.stat);
            let mut labels: Labels = Vec::with_capacity(s.labels.len() + 1);
            if !second.host.is_empty() {
                labels.push((label_name(Dim::Host), second.host.clone()));
            }
            // The statistic's order, whatever order the series came in.
            for dim in st.dims.iter().filter(|d| **d != Dim::Host) {
                let value = s.label(*dim);
                if !value.is_empty() {
                    labels.push((label_name(*dim), value.to_string()));
                }
            }
            // A value of another kind than its statistic's cannot be exposed under its
            // TYPE (the wire refuses them; a local sampler never makes one).
            match (&s.value, st.kind) {
                (TargetValue::Count(n), Kind::Counter) => self.add_count(s.stat, labels, *n),
                (TargetValue::Gauge(n), Kind::Gauge) => self.set_gauge(s.stat, labels, *n),
                (TargetValue::Dist(h), Kind::Distribution) => self.add_histogram(s.stat, labels, h),
                _ => {}
            }
        }
        self.seconds += 1;
    }

    /// Adds one second of a run's client series: per operation and workload, its counters
    /// (`io.ops`, `io.bytes`, `io.errors`, `io.skipped`) and distributions (`io.latency`,
    /// ...), under `host` (empty: no host label).
    pub fn add_client(&mut self, host: &str, ops: &[OpSeries]) {
        for o in ops {
            let mut labels: Labels = Vec::with_capacity(3);
            if !host.is_empty() {
                labels.push((label_name(Dim::Host), host.to_string()));
            }
            labels.push((label_name(Dim::Op), o.op.name().to_string()));
            if !o.workload.is_empty() {
                labels.push((label_name(Dim::Workload), o.workload.clone()));
            }
            for st in ioscope_metrics::STATS {
                match st.kind {
                    Kind::Counter => {
                        // Sparse counters (skipped) appear once they are not zero.
                        match o.data.count(st.id) {
                            Some(0) if st.sparse => {}
                            Some(n) => self.add_count(st.id, labels.clone(), n),
                            None => {}
                        }
                    }
                    Kind::Distribution if st.id.applies_to(o.op) => {
                        if let Some(h) = o.data.histogram(st.id) {
                            self.add_histogram(st.id, labels.clone(), h);
                        }
                    }
                    _ => {}
                }
            }
        }
        self.seconds += 1;
    }

    fn add_count(&mut self, id: StatId, labels: Labels, n: u64) {
        let total = self.series.entry(StatKey::of(id)).or_default().entry(labels).or_insert(Total::Counter(0));
        if let Total::Counter(t) = total {
            *t = t.saturating_add(u128::from(n));
        }
    }

    fn set_gauge(&mut self, id: StatId, labels: Labels, n: u64) {
        self.series.entry(StatKey::of(id)).or_default().insert(labels, Total::Gauge(n));
    }

    fn add_histogram(&mut self, id: StatId, labels: Labels, h: &Histogram) {
        let bounds = unit(stat::stat(id).unit).bounds;
        let total = self
            .series
            .entry(StatKey::of(id))
            .or_default()
            .entry(labels)
            .or_insert_with(|| Total::Histogram { slots: vec![0; bounds.len() + 1], sum: 0 });
        let Total::Histogram { slots, sum } = total else { return };
        for (index, count) in h.nonzero() {
            // The first bound at or above the bucket's last value: every value of the
            // bucket is at or below it, and none of the bucket is at or below the one
            // before (bounds are bucket ends), so the count lands in exactly one slot.
            let (_, high) = bucket_range(index);
            let slot = bounds.partition_point(|b| *b < high);
            if let Some(s) = slots.get_mut(slot) {
                *s = s.saturating_add(count);
            }
        }
        *sum = sum.saturating_add(h.sum());
    }

    /// The OpenMetrics text of every series so far, ending in `# EOF`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# TYPE ioscope_seconds counter\n# UNIT ioscope_seconds seconds\n");
        out.push_str("# HELP ioscope_seconds Seconds of values added to this exposition.\n");
        let _ = writeln!(out, "ioscope_seconds_total {}", self.seconds);
        for (key, series) in &self.series {
            let Some(st) = key.stat() else { continue };
            let name = family_name(st);
            let u = unit(st.unit);
            let (kind, help) = match st.kind {
                Kind::Counter => ("counter", st.label.to_string()),
                Kind::Gauge => ("gauge", st.label.to_string()),
                _ => (
                    "histogram",
                    format!(
                        "{}. Buckets are exact: each le is 2^k-1 {} (the last value of an ioscope bucket), so a bucket counts the values below 2^k.",
                        st.label, st.unit
                    ),
                ),
            };
            let _ = writeln!(out, "# TYPE {name} {kind}");
            let _ = writeln!(out, "# UNIT {name} {}", u.name);
            let _ = writeln!(out, "# HELP {name} {}", escape_help(&help));
            for (labels, total) in series {
                match total {
                    Total::Counter(t) => {
                        let _ = writeln!(out, "{name}_total{} {}", braces(labels, None), scaled(*t, u.divisor));
                    }
                    Total::Gauge(v) => {
                        let _ = writeln!(out, "{name}{} {}", braces(labels, None), scaled(u128::from(*v), u.divisor));
                    }
                    Total::Histogram { slots, sum } => {
                        let mut cumulative = 0u64;
                        for (i, count) in slots.iter().enumerate() {
                            cumulative = cumulative.saturating_add(*count);
                            let le = u.bounds.get(i).map_or_else(|| "+Inf".to_string(), |b| le_text(*b, u.divisor));
                            let _ = writeln!(out, "{name}_bucket{} {cumulative}", braces(labels, Some(&le)));
                        }
                        let _ = writeln!(out, "{name}_count{} {cumulative}", braces(labels, None));
                        let _ = writeln!(out, "{name}_sum{} {}", braces(labels, None), scaled(*sum, u.divisor));
                    }
                }
            }
        }
        out.push_str("# EOF\n");
        out
    }
}

/// `{a="x",b="y"}` (with `le` last), or nothing for no labels.
fn braces(labels: &Labels, le: Option<&str>) -> String {
    let mut pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape_label(v))).collect();
    if let Some(le) = le {
        pairs.push(format!("le=\"{le}\""));
    }
    if pairs.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", pairs.join(","))
    }
}

/// A value in the exposed unit: an integer as it is, nanoseconds as seconds.
fn scaled(v: u128, divisor: u64) -> String {
    if divisor == 1 {
        v.to_string()
    } else {
        // Whole and fractional parts apart: exact for any total (f64 would round a
        // counter past 2^53 ns, 104 days of CPU time).
        let d = u128::from(divisor);
        let (whole, frac) = (v / d, v % d);
        let width = divisor.ilog10() as usize;
        let frac = format!("{frac:0width$}");
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            format!("{whole}")
        } else {
            format!("{whole}.{frac}")
        }
    }
}

/// A bucket bound as OpenMetrics' canonical number: a float (`511.0`, `0.000001023`).
fn le_text(bound: u64, divisor: u64) -> String {
    let text = scaled(u128::from(bound), divisor);
    if text.contains('.') {
        text
    } else {
        format!("{text}.0")
    }
}

/// A label value as the spec escapes it: backslash, double quote and line feed.
fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// HELP text: backslash, double quote and line feed escaped, as label values.
fn escape_help(v: &str) -> String {
    escape_label(v)
}

#[cfg(test)]
#[path = "openmetrics_tests.rs"]
mod tests;
