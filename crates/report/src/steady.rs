//! Steady state per step (docs/steady-state.md): when each step became steady by the rule
//! in `ioscope_metrics::steady` (the one `until_steady` applies during the run), whether it
//! fell out of steady state later and what changed, the `not-steady` and
//! `fell-out-of-steady-state` verdicts, and `warmup = "auto"`'s marking of the seconds
//! before the steady point as warm-up in the results file.

use crate::verdict::{Verdict, VerdictId};
use crate::{format, Sample, Summary};
use ioscope_metrics::steady::{self as rule, Measure, Point, Rule, DEFAULT_WINDOW_S};
use ioscope_store::{Results, StoreError};
use ioscope_workload::Plan;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map};
use std::path::Path;

/// A step's steady state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepSteady {
    pub step: u32,
    /// The rule's window, seconds.
    pub window_s: u32,
    /// Measured seconds the rule looked at (warm-up excluded, and a last second shorter
    /// than half a second).
    pub seconds: u64,
    /// `steady`, `not-steady`, or `too-short` (fewer seconds than the window: not judged).
    pub state: String,
    /// The run's second from which one window was steady; null when none was.
    pub steady_from_s: Option<u32>,
    /// With `warmup = "auto"`: the seconds before the steady point, marked warm-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_warmup_s: Option<u32>,
    /// The step ended before its planned duration, steady (`until_steady`).
    #[serde(default)]
    pub ended_early: bool,
    /// After being steady, the second a later window left the steady level, and what moved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fell_out: Option<FellOut>,
}

/// A fall out of steady state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FellOut {
    /// The run's second it happened in.
    pub second: u32,
    /// Each measure beyond the rule: the steady level and the mean of one window from then.
    pub changes: Vec<LevelChange>,
}

/// One measure's move.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LevelChange {
    /// `iops`, `bytes_per_sec` or `latency_p50_ns`.
    pub measure: String,
    pub from: f64,
    pub to: f64,
}

/// The plan as stored, if it reads.
fn plan_of(r: &Results) -> Option<Plan> {
    serde_json::from_str(&r.run.info.plan_json).ok()
}

/// The rule a run was judged by: its window, or the default.
fn rule_of(plan: Option<&Plan>) -> Rule {
    Rule::with_window(plan.and_then(Plan::steady_window_s).unwrap_or(DEFAULT_WINDOW_S))
}

/// A step's measured seconds as the rule sees them, with their run seconds.
fn points(samples: &[Sample], step: u32) -> (Vec<u32>, Vec<Point>) {
    samples
        .iter()
        .filter(|x| x.step == step && !x.warmup && x.interval_s >= 0.5)
        .map(|x| {
            let p = Point {
                iops: x.iops,
                bytes_per_sec: x.bytes_per_sec,
                latency_p50_ns: x.latency_p50_ns.map(|v| v as f64),
            };
            (x.second, p)
        })
        .unzip()
}

/// Each step's steady state, from the per-second samples of the summary.
pub(crate) fn step_states(r: &Results, samples: &[Sample]) -> Vec<StepSteady> {
    let plan = plan_of(r);
    let rule = rule_of(plan.as_ref());
    let planned: Vec<u64> =
        plan.as_ref().map_or(Vec::new(), |p| p.steps().iter().map(|s| s.duration.as_nanos() as u64).collect());
    let mut rows: Vec<(u32, u64, u64)> = r.steps.iter().map(|s| (s.index, s.warmup_ns, s.duration_ns)).collect();
    if rows.is_empty() && !samples.is_empty() {
        rows.push((0, 0, u64::MAX));
    }
    // Files that record what ended each repeat say it; earlier ones ended early only by
    // until_steady.
    let recorded = r.hosts.iter().any(|(_, c)| c["ended"].is_array());
    let until_steady = plan.as_ref().is_some_and(|p| p.until_steady_s.is_some())
        && (!recorded || !crate::ended::repeats_ended_by(&r.hosts, "steady").is_empty());
    rows.into_iter()
        .map(|(step, warmup_ns, duration_ns)| {
            let (seconds, pts) = points(samples, step);
            let from = rule::steady_from(&pts, &rule);
            let state = match from {
                Some(_) => "steady",
                None if pts.len() < rule.window_s as usize => "too-short",
                None => "not-steady",
            };
            let fell_out = from.and_then(|i| rule::fall_out(&pts, i, &rule)).map(|f| FellOut {
                second: seconds[f.at],
                changes: f
                    .changes
                    .iter()
                    .map(|c| LevelChange { measure: c.measure.key().to_string(), from: c.from, to: c.to })
                    .collect(),
            });
            StepSteady {
                step,
                window_s: rule.window_s,
                seconds: pts.len() as u64,
                state: state.to_string(),
                steady_from_s: from.map(|i| seconds[i]),
                auto_warmup_s: plan.as_ref().filter(|p| p.warmup_auto).map(|_| (warmup_ns / 1_000_000_000) as u32),
                ended_early: until_steady && planned.get(step as usize).is_some_and(|p| duration_ns < *p),
                fell_out,
            }
        })
        .collect()
}

/// `warmup = "auto"`, after the run: marks each step's seconds before its steady point as
/// warm-up in the results file (a step that never became steady keeps every second).
/// Returns the (step, first steady second) marked.
pub fn mark_auto_warmup(path: &Path) -> Result<Vec<(u32, u32)>, StoreError> {
    let r = ioscope_store::open(path)?;
    if !plan_of(&r).is_some_and(|p| p.warmup_auto) {
        return Ok(Vec::new());
    }
    let s = crate::summarize(&r, path);
    let marks: Vec<(u32, u32)> = s
        .steady
        .iter()
        .filter_map(|st| {
            let from = st.steady_from_s?;
            let first = s.samples.iter().find(|x| x.step == st.step && !x.warmup)?.second;
            (from > first).then_some((st.step, from))
        })
        .collect();
    if !marks.is_empty() {
        ioscope_store::mark_warmup(path, &marks)?;
    }
    Ok(marks)
}

/// How a step is named in a sentence: "the run" for a run of one step.
fn step_name(s: &Summary, step: u32) -> String {
    if s.steady.len() < 2 {
        return "the run".to_string();
    }
    match s.steps.iter().find(|x| x.index == step) {
        Some(x) if !x.label.is_empty() => format!("step {step} ({})", x.label),
        _ => format!("step {step}"),
    }
}

fn pct_change(from: f64, to: f64) -> f64 {
    if from > 0.0 {
        (to / from - 1.0) * 100.0
    } else {
        0.0
    }
}

/// A measure's level, as a person reads it.
fn level(measure: &str, v: f64) -> String {
    match measure {
        "iops" => format::iops(v),
        "bytes_per_sec" => format!("{}/s", format::bytes(v as u64)),
        _ => format::ns(v as u64),
    }
}

/// "IOPS fell from 52,000 to 11,000 (−79%)".
fn change_words(c: &LevelChange) -> String {
    let name = match c.measure.as_str() {
        "iops" => "IOPS",
        "bytes_per_sec" => "throughput",
        _ => "latency p50",
    };
    let verb = if c.to < c.from { "fell" } else { "rose" };
    let pct = pct_change(c.from, c.to);
    let sign = if pct < 0.0 { "−" } else { "+" };
    format!("{name} {verb} from {} to {} ({sign}{:.0}%)", level(&c.measure, c.from), level(&c.measure, c.to), pct.abs())
}

/// A measure beyond the rule in a window: which figure, its value and its limit.
struct Failed {
    measure: Measure,
    /// `slope_pct_per_s`, `range_pct`, or `mean` (a mean of zero: nothing completed).
    figure: &'static str,
    value: Option<f64>,
    limit: f64,
}

impl Failed {
    /// The measure's name in a sentence.
    fn name(&self) -> &'static str {
        match self.measure {
            Measure::Iops => "IOPS",
            Measure::BytesPerSec => "MB/s",
            Measure::LatencyP50 => "p50 latency",
        }
    }

    /// "range 180% of the mean (rule ≤ 50%)".
    fn words(&self) -> String {
        match (self.figure, self.value) {
            ("slope_pct_per_s", Some(v)) => format!(
                "slope {}{}%/s (rule ≤ {}%/s)",
                if v < 0.0 { "−" } else { "+" },
                format::float(v.abs(), 1),
                format::num(self.limit)
            ),
            ("range_pct", Some(v)) => {
                format!("range {}% of the mean (rule ≤ {}%)", format::float(v, 1), format::num(self.limit))
            }
            _ => "nothing to be steady about (a mean of zero)".to_string(),
        }
    }
}

/// "p50 latency: slope −4.5%/s (rule ≤ 2%/s) and range 86.4% of the mean (rule ≤ 50%), and
/// MB/s: ...": each measure once, worst first.
fn failures_words(failed: &[Failed]) -> String {
    let mut by_measure: Vec<(&'static str, Vec<String>)> = Vec::new();
    for f in failed {
        match by_measure.iter_mut().find(|(n, _)| *n == f.name()) {
            Some((_, w)) => w.push(f.words()),
            None => by_measure.push((f.name(), vec![f.words()])),
        }
    }
    let parts: Vec<String> = by_measure.iter().map(|(n, w)| format!("{n}: {}", w.join(" and "))).collect();
    parts.join(", and on ")
}

/// The window nearest to passing, and each figure that failed it.
struct Closest {
    /// Index of its first second in the step's points.
    start: usize,
    /// Worst first.
    failed: Vec<Failed>,
}

/// Over every window of a step that was never steady, the one whose worst figure was the
/// least beyond its limit (as a multiple of it): its failures name what kept the step
/// from being steady, never a figure within the rule.
fn closest_window(pts: &[Point], rule: &Rule) -> Option<Closest> {
    let w = rule.window_s as usize;
    let mut best: Option<(f64, Closest)> = None;
    for start in 0..(pts.len() + 1).checked_sub(w)? {
        let win = &pts[start..start + w];
        // (how far beyond, as a multiple of the limit; the failure)
        let mut failed: Vec<(f64, Failed)> = Vec::new();
        for m in Measure::ALL {
            let values: Vec<f64> = match m {
                Measure::Iops => win.iter().map(|p| p.iops).collect(),
                Measure::BytesPerSec if win.iter().all(|p| p.bytes_per_sec <= 0.0) => continue,
                Measure::BytesPerSec => win.iter().map(|p| p.bytes_per_sec).collect(),
                Measure::LatencyP50 if win.iter().all(|p| p.latency_p50_ns.is_none()) => continue,
                Measure::LatencyP50 => win.iter().map(|p| p.latency_p50_ns.unwrap_or(0.0)).collect(),
            };
            let Some(fit) = rule::Fit::of(&values) else {
                failed.push((f64::INFINITY, Failed { measure: m, figure: "mean", value: Some(0.0), limit: 0.0 }));
                continue;
            };
            let slope = fit.slope_pct_per_s.abs() / rule.slope_pct_per_s.max(1e-9);
            let range = fit.range_pct / rule.range_pct.max(1e-9);
            if slope > 1.0 {
                let f = Failed {
                    measure: m,
                    figure: "slope_pct_per_s",
                    value: Some(fit.slope_pct_per_s),
                    limit: rule.slope_pct_per_s,
                };
                failed.push((slope, f));
            }
            if range > 1.0 {
                let f = Failed { measure: m, figure: "range_pct", value: Some(fit.range_pct), limit: rule.range_pct };
                failed.push((range, f));
            }
        }
        let worst = failed.iter().map(|(x, _)| *x).fold(0.0, f64::max);
        if failed.is_empty() || best.as_ref().is_some_and(|(b, _)| *b <= worst) {
            continue;
        }
        failed.sort_by(|a, b| b.0.total_cmp(&a.0));
        best = Some((worst, Closest { start, failed: failed.into_iter().map(|(_, f)| f).collect() }));
    }
    best.map(|(_, c)| c)
}

/// The verdicts `not-steady` and `fell-out-of-steady-state`.
pub(crate) fn steady_verdicts(s: &Summary) -> Vec<Verdict> {
    let rule = Rule::with_window(s.steady.first().map_or(DEFAULT_WINDOW_S, |x| x.window_s));
    let mut out = Vec::new();
    for st in &s.steady {
        let name = step_name(s, st.step);
        if st.state == "not-steady" {
            let mine: Vec<&Sample> = s.samples.iter().filter(|x| x.step == st.step && !x.warmup).collect();
            let iops = mine.iter().map(|x| x.iops);
            let (lo, hi) = iops.fold((f64::MAX, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
            let mut e = Map::new();
            e.insert("step".into(), json!(st.step));
            e.insert("seconds".into(), json!(st.seconds));
            e.insert("window_s".into(), json!(st.window_s));
            e.insert("slope_limit_pct_per_s".into(), json!(rule.slope_pct_per_s));
            e.insert("range_limit_pct".into(), json!(rule.range_pct));
            e.insert("iops_min".into(), json!(lo.min(hi).round()));
            e.insert("iops_max".into(), json!(hi.round()));
            let (seconds, pts) = points(&s.samples, st.step);
            let why = match closest_window(&pts, &rule) {
                Some(c) => {
                    let (from, to) = (seconds[c.start], seconds[c.start + rule.window_s as usize - 1]);
                    let first = &c.failed[0];
                    e.insert("closest_window_from_second".into(), json!(from));
                    e.insert("closest_window_to_second".into(), json!(to));
                    e.insert("failed_measure".into(), json!(first.measure.key()));
                    e.insert("failed_figure".into(), json!(first.figure));
                    e.insert("failed_value".into(), json!(first.value.map(|v| (v * 10.0).round() / 10.0)));
                    e.insert("failed_limit".into(), json!(first.limit));
                    format!("; the closest window, seconds {from} to {to}, failed on {}", failures_words(&c.failed))
                }
                None => String::new(),
            };
            let auto = if st.auto_warmup_s.is_some() { "; warmup = auto excluded nothing" } else { "" };
            out.push(
                Verdict::new(
                    VerdictId::NotSteady,
                    format!(
                        "{name} never became steady: no {} s window of its {} s held IOPS, MB/s and p50 latency each \
                         within the rule (slope ≤ {}%/s, range ≤ {}% of the mean){why}{auto}",
                        st.window_s,
                        st.seconds,
                        format::num(rule.slope_pct_per_s),
                        format::num(rule.range_pct),
                    ),
                )
                .with_all(e),
            );
        }
        if let Some(f) = &st.fell_out {
            // IOPS says it; throughput only when IOPS held (the sizes changed).
            let said: Vec<&LevelChange> = f
                .changes
                .iter()
                .filter(|c| c.measure != Measure::BytesPerSec.key() || !f.changes.iter().any(|o| o.measure == "iops"))
                .collect();
            let words: Vec<String> = said.iter().map(|c| change_words(c)).collect();
            let mut e = Map::new();
            e.insert("second".into(), json!(f.second));
            e.insert("step".into(), json!(st.step));
            e.insert("steady_from_s".into(), json!(st.steady_from_s));
            for c in &f.changes {
                let (stem, unit) = match c.measure.as_str() {
                    "latency_p50_ns" => ("latency_p50", "_ns"),
                    m => (m, ""),
                };
                e.insert(format!("{stem}_steady{unit}"), json!(c.from.round()));
                e.insert(format!("{stem}_after{unit}"), json!(c.to.round()));
                e.insert(format!("{stem}_change_pct"), json!((pct_change(c.from, c.to) * 10.0).round() / 10.0));
            }
            let whose = if s.steady.len() > 1 { format!(" of {name}") } else { String::new() };
            out.push(Verdict::new(
                VerdictId::FellOutOfSteadyState,
                format!(
                    "fell out of steady state: at second {}{whose} {} (steady since second {}); the step's figures average both levels",
                    f.second,
                    words.join(" and "),
                    st.steady_from_s.map_or("-".into(), |x| x.to_string())
                ),
            )
            .with_all(e));
        }
    }
    out
}

/// One line per step for the text summary.
pub(crate) fn text_lines(s: &Summary) -> Vec<String> {
    s.steady
        .iter()
        .map(|st| {
            let who = if s.steady.len() > 1 { format!("step {}: ", st.step) } else { String::new() };
            let mut line = match (st.state.as_str(), st.steady_from_s) {
                ("steady", Some(from)) => format!("{who}steady from second {from} (window {} s)", st.window_s),
                ("too-short", _) => {
                    format!("{who}not judged: {} s measured, shorter than the {} s window", st.seconds, st.window_s)
                }
                _ => format!("{who}never steady over a {} s window", st.window_s),
            };
            if let Some(w) = st.auto_warmup_s {
                line.push_str(&format!("; warmup auto: {w} s before it excluded"));
            }
            if st.ended_early {
                line.push_str("; ended early, steady (until_steady)");
            }
            if let Some(f) = &st.fell_out {
                line.push_str(&format!("; fell out at second {}", f.second));
            }
            line
        })
        .collect()
}

#[cfg(test)]
mod window_default_tests {
    use ioscope_workload::keys::{find, KeyDefault, Section};

    /// The plan leaves `steady_window` to this rule: the key table must show the rule's own.
    #[test]
    fn the_key_tables_steady_window_default_is_the_rules_window() {
        let key = find(Section::Top, "steady_window").expect("steady_window is a key");
        assert_eq!(key.default, KeyDefault::Secs(u64::from(super::DEFAULT_WINDOW_S)));
    }
}
