//! Repeats (`--repeat N`, `--until-ci`): each step's figures over the run's repeats, with
//! their mean, Student t confidence interval and spread (docs/repeats.md), the trend test
//! that says when repeats are not independent, and `--until-ci`'s stopping rule (the run
//! and the summary use the same [`narrow_enough`]).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The repeats of a run: absent from runs without `--repeat`/`--until-ci`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepeatSummary {
    /// Repeats measured.
    pub count: u32,
    /// Confidence level of every interval, in percent (95, or `--until-ci`'s).
    pub confidence_pct: f64,
    /// Why the repeats stopped: "count" (`--repeat N`), "interval" (`--until-ci` reached its
    /// width), "max" (`--until-ci` gave up at its maximum), or "interrupted" (the run
    /// stopped early; its last repeat, which may be partial, is left out).
    pub stopped: String,
    /// Per step of the plan (the first repeat's step indexes).
    pub steps: Vec<StepRepeats>,
}

/// One step's figures over the repeats.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRepeats {
    pub step: u32,
    pub label: String,
    /// Per operation name, and "total": figure name ("iops", "bytes_per_sec",
    /// "latency_p50_ns", "latency_p99_ns") → its statistics over the repeats.
    pub ops: BTreeMap<String, BTreeMap<String, RepeatFigure>>,
    /// Said when the repeats are not independent (a trend across them), else absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trend: Option<String>,
}

/// One figure over the repeats.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RepeatFigure {
    /// One value per repeat, in repeat order.
    pub values: Vec<f64>,
    pub mean: f64,
    /// The Student t confidence interval of the mean.
    pub ci_low: f64,
    pub ci_high: f64,
    /// Half the interval's width, in percent of the mean.
    pub half_width_pct: f64,
    /// Sample standard deviation of the repeats.
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
}

use crate::{part, SecondRow};
use ioscope_metrics::{Histogram, Op, OpInterval};
use ioscope_store::{Results, StepRow};
use ioscope_workload::{UntilCi, DEFAULT_CONFIDENCE_PCT, MIN_REPEATS_UNTIL_CI};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The quantile of Student's t with `df` degrees of freedom that leaves `confidence_pct`
/// in the middle (two-sided): 4.303 for 95% and 2 degrees of freedom.
pub fn t_quantile(confidence_pct: f64, df: u32) -> f64 {
    let p = 0.5 + confidence_pct.clamp(0.0, 99.999) / 200.0;
    // df ≥ 1 always makes a valid distribution; a NaN never leaves this function.
    StudentsT::new(0.0, 1.0, f64::from(df.max(1))).map_or(f64::INFINITY, |t| t.inverse_cdf(p))
}

impl RepeatFigure {
    /// The mean of `values` (one per repeat) with its Student t interval at
    /// `confidence_pct` (mean ± t · s/√n, n − 1 degrees of freedom), their sample standard
    /// deviation and range. None with fewer than 2 values (no interval exists).
    pub fn of(values: &[f64], confidence_pct: f64) -> Option<RepeatFigure> {
        let n = values.len();
        if n < 2 || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let stddev = var.sqrt();
        let half = t_quantile(confidence_pct, (n - 1) as u32) * stddev / (n as f64).sqrt();
        let half_width_pct = if mean.abs() > 0.0 { half / mean.abs() * 100.0 } else { 0.0 };
        Some(RepeatFigure {
            values: values.to_vec(),
            mean,
            ci_low: mean - half,
            ci_high: mean + half,
            half_width_pct,
            stddev,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }
}

/// A trend across the repeats: the least-squares slope of the values against the repeat
/// number, with its t statistic (n − 2 degrees of freedom).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trend {
    /// Change per repeat, in percent of the mean.
    pub slope_pct: f64,
    pub t: f64,
}

/// Below this fitted change from the first repeat to the last, in percent of the mean, a
/// slope is not called a trend however significant (a rate-limited run's 0.01% drift).
pub const TREND_MIN_CHANGE_PCT: f64 = 1.0;

/// A trend, if the slope of `values` against the repeat number (0, 1, ...) is significant
/// at 95% (two-sided t-test, n − 2 degrees of freedom; at least 3 values) and the fitted
/// change over the repeats is at least [`TREND_MIN_CHANGE_PCT`] of the mean.
pub fn trend(values: &[f64]) -> Option<Trend> {
    let n = values.len();
    if n < 3 || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let nf = n as f64;
    let mean_x = (nf - 1.0) / 2.0;
    let mean_y = values.iter().sum::<f64>() / nf;
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for (i, y) in values.iter().enumerate() {
        let (dx, dy) = (i as f64 - mean_x, y - mean_y);
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    let slope = sxy / sxx;
    let sse = (syy - slope * sxy).max(0.0);
    let se = (sse / (nf - 2.0) / sxx).sqrt();
    let t = if se > 0.0 {
        slope / se
    } else if slope == 0.0 {
        0.0
    } else {
        f64::INFINITY.copysign(slope)
    };
    let change_pct = if mean_y.abs() > 0.0 { (slope * (nf - 1.0) / mean_y.abs() * 100.0).abs() } else { 0.0 };
    let significant = t.abs() > t_quantile(95.0, (n - 2) as u32);
    (significant && change_pct >= TREND_MIN_CHANGE_PCT)
        .then(|| Trend { slope_pct: slope / mean_y.abs().max(f64::MIN_POSITIVE) * 100.0, t })
}

/// Whether every step's headline figures have an interval narrow enough for `until`:
/// at least [`MIN_REPEATS_UNTIL_CI`] repeats, and for each step the interval of its total
/// IOPS, and of its bytes per second when bytes moved, within `until.half_width_pct` of
/// the mean. `per_repeat[r][k]` is step k's (IOPS, bytes per second) in repeat r.
pub fn narrow_enough(per_repeat: &[Vec<(f64, f64)>], until: &UntilCi) -> bool {
    let n = per_repeat.len();
    let steps = per_repeat.first().map_or(0, Vec::len);
    if n < MIN_REPEATS_UNTIL_CI as usize || per_repeat.iter().any(|r| r.len() != steps) {
        return false;
    }
    (0..steps).all(|k| {
        let iops: Vec<f64> = per_repeat.iter().map(|r| r[k].0).collect();
        let bytes: Vec<f64> = per_repeat.iter().map(|r| r[k].1).collect();
        let within = |v: &[f64]| {
            RepeatFigure::of(v, until.confidence_pct).is_some_and(|f| f.half_width_pct <= until.half_width_pct)
        };
        within(&iops) && (bytes.iter().all(|b| *b == 0.0) || within(&bytes))
    })
}

/// The steps of each repeat, in order: `groups[r][k]` is step k of repeat r. Only the
/// repeats with as many steps as the first (a run stopped in the middle of writing them
/// leaves no other kind).
pub(crate) fn repeat_groups(steps: &[StepRow]) -> Vec<Vec<&StepRow>> {
    let mut groups: Vec<Vec<&StepRow>> = Vec::new();
    for st in steps {
        match groups.last_mut() {
            Some(g) if g[0].repeat == st.repeat => g.push(st),
            _ => groups.push(vec![st]),
        }
    }
    let per = groups.first().map_or(0, Vec::len);
    groups.retain(|g| g.len() == per);
    groups
}

/// The label of a step in a run with repeats: "repeat 2 threads=4" ("repeat 2" alone for a
/// plain step).
pub fn step_label(repeat: u32, label: &str) -> String {
    match label.is_empty() {
        true => format!("repeat {repeat}"),
        false => format!("repeat {repeat} {label}"),
    }
}

/// One repeat's figures of one step: per op key and "total", figure name → value.
type Figures = BTreeMap<String, BTreeMap<String, f64>>;

fn figures_of(rows: &[&SecondRow]) -> Figures {
    let seconds = rows.iter().map(|x| x.interval_ns).sum::<u64>() as f64 / 1e9;
    let mut out: Figures = BTreeMap::new();
    let mut per_op: Vec<(Op, OpInterval)> = Vec::new();
    for (_, op, d) in rows.iter().flat_map(|x| &x.ops) {
        match per_op.iter_mut().find(|(o, _)| o == op) {
            Some((_, m)) => m.merge(d),
            None => per_op.push((*op, d.clone())),
        }
    }
    let mut put = |key: String, iops: f64, bps: f64, p50: Option<u64>, p99: Option<u64>| {
        let f = out.entry(key).or_default();
        f.insert("iops".into(), iops);
        f.insert("bytes_per_sec".into(), bps);
        if let Some(v) = p50 {
            f.insert("latency_p50_ns".into(), v as f64);
        }
        if let Some(v) = p99 {
            f.insert("latency_p99_ns".into(), v as f64);
        }
    };
    for (op, d) in per_op.iter().filter(|(_, d)| !d.is_empty()) {
        let rate = |n: u64| if seconds > 0.0 { n as f64 / seconds } else { 0.0 };
        let lat: &Histogram = &d.latency_ns;
        put(op.to_string(), rate(d.counts.ops), rate(d.counts.bytes), lat.quantile(0.5), lat.quantile(0.99));
    }
    let total = part(per_op.iter().map(|(op, d)| (*op, d)), seconds);
    put("total".into(), total.iops, total.bytes_per_sec, total.latency_p50_ns, total.latency_p99_ns);
    out
}

/// The run's repeats from its results: None for a run of one repeat.
///
/// `complete`: whether the run completed; otherwise its last repeat may have stopped
/// part-way and is left out. `until`: the plan's `until_ci` and its most repeats.
pub(crate) fn summarize(
    r: &Results,
    rows: &[SecondRow],
    complete: bool,
    until: Option<(UntilCi, u32)>,
) -> Option<RepeatSummary> {
    let mut groups = repeat_groups(&r.steps);
    if groups.len() < 2 {
        return None;
    }
    if !complete {
        groups.pop();
        if groups.len() < 2 {
            return None;
        }
    }
    let confidence_pct = until.map_or(DEFAULT_CONFIDENCE_PCT, |(u, _)| u.confidence_pct);
    // figures[r][k]: repeat r, step k.
    let figures: Vec<Vec<Figures>> = groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|st| figures_of(&rows.iter().filter(|x| x.step == st.index && !x.warmup).collect::<Vec<_>>()))
                .collect()
        })
        .collect();
    let first = groups.first()?;
    let mut steps = Vec::new();
    for (k, st) in first.iter().enumerate() {
        let mut ops: BTreeMap<String, BTreeMap<String, RepeatFigure>> = BTreeMap::new();
        let keys: std::collections::BTreeSet<&String> = figures.iter().flat_map(|f| f[k].keys()).collect();
        for key in keys {
            let names: std::collections::BTreeSet<&String> =
                figures.iter().filter_map(|f| f[k].get(key)).flat_map(|m| m.keys()).collect();
            let mut out = BTreeMap::new();
            for name in names {
                // An op without I/O in a repeat ran at 0 IOPS there; a latency it does not
                // have leaves the figure out.
                let values: Option<Vec<f64>> = figures
                    .iter()
                    .map(|f| match f[k].get(key).and_then(|m| m.get(name)) {
                        Some(v) => Some(*v),
                        None if name == "iops" || name == "bytes_per_sec" => Some(0.0),
                        None => None,
                    })
                    .collect();
                if name == "bytes_per_sec" && values.as_ref().is_some_and(|v| v.iter().all(|b| *b == 0.0)) {
                    continue;
                }
                if let Some(f) = values.and_then(|v| RepeatFigure::of(&v, confidence_pct)) {
                    out.insert(name.clone(), f);
                }
            }
            ops.insert(key.clone(), out);
        }
        let trend = ops.get("total").and_then(trend_words);
        steps.push(StepRepeats { step: st.index, label: st.label.clone(), ops, trend });
    }
    let per_repeat: Vec<Vec<(f64, f64)>> = figures
        .iter()
        .map(|f| {
            f.iter()
                .map(|s| {
                    let t = s.get("total");
                    let get = |n: &str| t.and_then(|m| m.get(n)).copied().unwrap_or(0.0);
                    (get("iops"), get("bytes_per_sec"))
                })
                .collect()
        })
        .collect();
    let count = groups.len() as u32;
    let stopped = match until {
        _ if !complete => "interrupted",
        None => "count",
        Some((_, max)) if count < max => "interval",
        Some((u, _)) if narrow_enough(&per_repeat, &u) => "interval",
        Some(_) => "max",
    };
    Some(RepeatSummary { count, confidence_pct, stopped: stopped.to_string(), steps })
}

/// "IOPS rose 2.3% per repeat (...)": the headline figures of a step's total with a trend.
fn trend_words(total: &BTreeMap<String, RepeatFigure>) -> Option<String> {
    let said: Vec<String> = [("iops", "IOPS"), ("bytes_per_sec", "MB/s"), ("latency_p99_ns", "p99 latency")]
        .iter()
        .filter_map(|(key, name)| {
            let t = trend(&total.get(*key)?.values)?;
            let way = if t.slope_pct > 0.0 { "rose" } else { "fell" };
            Some(format!("{name} {way} {:.1}% per repeat (t = {:.1})", t.slope_pct.abs(), t.t))
        })
        .collect();
    (!said.is_empty()).then(|| {
        format!(
            "{}: a trend across the repeats (least-squares slope against the repeat number, significant at 95%), \
             so they are not independent and the interval understates the uncertainty",
            said.join(", ")
        )
    })
}

/// The summary's repeats block: one line per step and headline figure of its total.
pub(crate) fn text_lines(s: &RepeatSummary, total_word: &str) -> String {
    let mut out = format!(
        "\nrepeats: {} ({}), {}% intervals (Student t on the repeat means)\n",
        s.count,
        match s.stopped.as_str() {
            "count" => "as asked",
            "interval" => "stopped: intervals narrow enough",
            "max" => "stopped at the most repeats: intervals still wider than asked",
            _ => "the run stopped early: its last repeat is left out",
        },
        crate::format::num(s.confidence_pct)
    );
    for st in &s.steps {
        let Some(total) = st.ops.get("total") else { continue };
        let prefix = if s.steps.len() > 1 { format!("step {} {}: ", st.step, st.label) } else { String::new() };
        for (key, name) in
            [("iops", "IOPS"), ("bytes_per_sec", "MB/s"), ("latency_p50_ns", "p50"), ("latency_p99_ns", "p99")]
        {
            let Some(f) = total.get(key) else { continue };
            let v = |x: f64| match key {
                "iops" => crate::format::iops(x),
                "bytes_per_sec" => crate::format::float(x / 1e6, 1),
                _ => crate::format::ns(x.max(0.0).round() as u64),
            };
            out.push_str(&format!(
                "  {prefix}{total_word} {name} {} ± {:.1}% ({}% CI {}–{}, {} repeats, min {} max {})\n",
                v(f.mean),
                f.half_width_pct,
                crate::format::num(s.confidence_pct),
                v(f.ci_low),
                v(f.ci_high),
                f.values.len(),
                v(f.min),
                v(f.max)
            ));
        }
        // With several operations, each one's IOPS too ("read IOPS 51,230 ± 1.8% ...").
        let ops: Vec<(&String, &RepeatFigure)> =
            st.ops.iter().filter(|(k, _)| *k != "total").filter_map(|(k, m)| Some((k, m.get("iops")?))).collect();
        for (op, f) in ops.iter().filter(|_| ops.len() > 1) {
            out.push_str(&format!(
                "  {prefix}{op} IOPS {} ± {:.1}% ({}% CI {}–{}, {} repeats, min {} max {})\n",
                crate::format::iops(f.mean),
                f.half_width_pct,
                crate::format::num(s.confidence_pct),
                crate::format::iops(f.ci_low),
                crate::format::iops(f.ci_high),
                f.values.len(),
                crate::format::iops(f.min),
                crate::format::iops(f.max)
            ));
        }
        if let Some(t) = &st.trend {
            out.push_str(&format!("  {prefix}note: {t}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_interval_matches_a_hand_computed_one() {
        // 10, 12, 14: mean 12, s = 2, t(0.975, 2) = 4.303 (tables), half-width
        // 4.303 · 2 / √3 = 4.9686.
        let f = RepeatFigure::of(&[10.0, 12.0, 14.0], 95.0).unwrap();
        assert_eq!((f.mean, f.stddev, f.min, f.max), (12.0, 2.0, 10.0, 14.0));
        assert!((f.ci_high - 12.0 - 4.9686).abs() < 1e-3, "{f:?}");
        assert!((f.ci_low - (12.0 - 4.9686)).abs() < 1e-3, "{f:?}");
        assert!((f.half_width_pct - 41.405).abs() < 1e-2, "{f:?}");
        // Table values of t: 12.706 (95%, 1 df), 2.262 (95%, 9 df), 1.833 (90%, 9 df).
        for (c, df, want) in [(95.0, 1, 12.706), (95.0, 9, 2.262), (90.0, 9, 1.833), (99.0, 4, 4.604)] {
            assert!((t_quantile(c, df) - want).abs() < 1e-3, "{c}% {df} df: {}", t_quantile(c, df));
        }
        // Five repeats 100, 102, 98, 101, 99: mean 100, s = 1.5811, half-width
        // 2.776 · 1.5811 / √5 = 1.963.
        let f = RepeatFigure::of(&[100.0, 102.0, 98.0, 101.0, 99.0], 95.0).unwrap();
        assert!((f.half_width_pct - 1.963).abs() < 1e-3, "{f:?}");
        assert!(RepeatFigure::of(&[5.0], 95.0).is_none(), "one repeat has no interval");
        assert_eq!(RepeatFigure::of(&[7.0, 7.0, 7.0], 95.0).unwrap().half_width_pct, 0.0);
    }

    #[test]
    fn a_trend_is_a_significant_slope_of_some_size_and_noise_is_not() {
        // Falling 5% per repeat with a little noise: slope significant.
        let t = trend(&[100.0, 95.5, 89.8, 85.2, 80.1]).expect("a trend");
        assert!(t.slope_pct < -4.0 && t.t < -10.0, "{t:?}");
        // Noise without a direction.
        assert_eq!(trend(&[100.0, 92.0, 104.0, 95.0, 101.0]), None);
        // A straight line too small to matter (0.02% over the repeats) is no trend.
        assert_eq!(trend(&[1000.0, 1000.1, 1000.2]), None);
        assert_eq!(trend(&[1.0, 2.0]), None, "two points always make a line");
    }

    #[test]
    fn the_stopping_rule_needs_three_repeats_and_every_step_within_the_width() {
        let u = UntilCi { confidence_pct: 95.0, half_width_pct: 5.0 };
        let steady = |n: usize| (0..n).map(|i| vec![(1000.0 + i as f64, 4e6), (500.0, 0.0)]).collect::<Vec<_>>();
        assert!(!narrow_enough(&steady(2), &u), "fewer than 3 repeats never stop");
        assert!(narrow_enough(&steady(3), &u));
        // One step's MB/s too wide: not yet.
        let mut wide = steady(3);
        wide[1][0].1 = 2e6;
        assert!(!narrow_enough(&wide, &u));
    }
}
