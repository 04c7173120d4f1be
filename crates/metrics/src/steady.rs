//! The steady-state rule (docs/steady-state.md), one definition for the run (which may end
//! a step once it is steady, `until_steady`) and the summary (when each step became steady,
//! whether it fell out later).
//!
//! Like fio's `steadystate` with both of its criteria at once, over a window of whole
//! seconds and for each measure of a second (IOPS; MB/s when bytes move; p50 transfer
//! latency when I/O completed): the least-squares slope of the window, as a share of the
//! window's mean, is within [`Rule::slope_pct_per_s`] (fio's `iops_slope`), and the range
//! (max − min) is within [`Rule::range_pct`] of the mean (fio's `iops`).

/// Default window: seconds a step must be steady over.
pub const DEFAULT_WINDOW_S: u32 = 10;
/// Default slope limit: the fitted line may drift at most 2% of the mean per second.
pub const DEFAULT_SLOPE_PCT_PER_S: f64 = 2.0;
/// Default range limit: max − min at most 50% of the mean (every second within about ±25%).
pub const DEFAULT_RANGE_PCT: f64 = 50.0;

/// The rule's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rule {
    pub window_s: u32,
    pub slope_pct_per_s: f64,
    pub range_pct: f64,
}

impl Default for Rule {
    fn default() -> Self {
        Rule { window_s: DEFAULT_WINDOW_S, slope_pct_per_s: DEFAULT_SLOPE_PCT_PER_S, range_pct: DEFAULT_RANGE_PCT }
    }
}

impl Rule {
    /// The default rule over another window (at least 2 s: a slope needs two points).
    pub fn with_window(window_s: u32) -> Rule {
        Rule { window_s: window_s.max(2), ..Rule::default() }
    }
    /// How far a later window may move from the steady level before the step has fallen
    /// out of steady state: the range limit, as a share of the steady level. A level that
    /// far away could not have shared one steady window with the steady one, and the
    /// slower swings of a shared or busy machine (±40% seen on a loaded test machine) stay
    /// inside it.
    pub fn level_band_pct(&self) -> f64 {
        self.range_pct
    }
    fn window(&self) -> usize {
        self.window_s.max(2) as usize
    }
}

/// One second of a step, over all operations and hosts: transfers only (reads and writes).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Point {
    pub iops: f64,
    pub bytes_per_sec: f64,
    /// p50 response time of the second's transfers; None when none completed.
    pub latency_p50_ns: Option<f64>,
}

/// What the rule looks at in a second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    Iops,
    BytesPerSec,
    LatencyP50,
}

impl Measure {
    pub const ALL: [Measure; 3] = [Measure::Iops, Measure::BytesPerSec, Measure::LatencyP50];
    /// Its name in evidence keys and messages.
    pub fn key(self) -> &'static str {
        match self {
            Measure::Iops => "iops",
            Measure::BytesPerSec => "bytes_per_sec",
            Measure::LatencyP50 => "latency_p50_ns",
        }
    }
    fn of(self, p: &Point) -> Option<f64> {
        match self {
            Measure::Iops => Some(p.iops),
            Measure::BytesPerSec => Some(p.bytes_per_sec),
            Measure::LatencyP50 => p.latency_p50_ns,
        }
    }
    /// The window's values, when the measure applies to it: IOPS always, MB/s when bytes
    /// moved, latency when every second has one (a second without any is not steady).
    fn values(self, w: &[Point]) -> Option<Vec<f64>> {
        match self {
            Measure::BytesPerSec if w.iter().all(|p| p.bytes_per_sec <= 0.0) => None,
            Measure::LatencyP50 if w.iter().all(|p| p.latency_p50_ns.is_none()) => None,
            _ => Some(w.iter().map(|p| self.of(p).unwrap_or(0.0)).collect()),
        }
    }
}

/// One measure over one window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    pub mean: f64,
    /// Least-squares slope as a share of the mean, % per second (signed).
    pub slope_pct_per_s: f64,
    /// (max − min) as a share of the mean, %.
    pub range_pct: f64,
}

impl Fit {
    /// None for an empty window or a mean of zero (nothing to be steady about).
    pub fn of(values: &[f64]) -> Option<Fit> {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        if values.is_empty() || mean.is_nan() || mean <= 0.0 || !mean.is_finite() {
            return None;
        }
        let xm = (n - 1.0) / 2.0;
        let sxx: f64 = (0..values.len()).map(|i| (i as f64 - xm).powi(2)).sum();
        let sxy: f64 = values.iter().enumerate().map(|(i, y)| (i as f64 - xm) * (y - mean)).sum();
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        let (lo, hi) = values.iter().fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
        Some(Fit { mean, slope_pct_per_s: slope / mean * 100.0, range_pct: (hi - lo) / mean * 100.0 })
    }
    fn passes(&self, rule: &Rule) -> bool {
        self.slope_pct_per_s.abs() <= rule.slope_pct_per_s && self.range_pct <= rule.range_pct
    }
}

/// Whether `w` (exactly one window of seconds) is steady: every measure that applies passes.
pub fn window_steady(w: &[Point], rule: &Rule) -> bool {
    if w.len() != rule.window() {
        return false;
    }
    Measure::ALL.iter().all(|m| match m.values(w) {
        None => true,
        Some(v) => Fit::of(&v).is_some_and(|f| f.passes(rule)),
    })
}

/// The first second (index into `points`) from which one window is steady; None if no
/// window is (or the step is shorter than a window).
pub fn steady_from(points: &[Point], rule: &Rule) -> Option<usize> {
    let w = rule.window();
    (0..points.len().checked_sub(w)? + 1).find(|&i| window_steady(&points[i..i + w], rule))
}

/// What changed when a step fell out of steady state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change {
    pub measure: Measure,
    /// The steady level (the mean of the first steady window).
    pub from: f64,
    /// The mean from the named second over (at most) one window.
    pub to: f64,
}

/// A fall out of steady state: the second (index into `points`) and what moved.
#[derive(Clone, Debug, PartialEq)]
pub struct FallOut {
    pub at: usize,
    pub changes: Vec<Change>,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// After the window steady from `from`, the first later window (at least half a window
/// long, at the step's end) whose median of some measure lies outside the steady level
/// (the steady window's mean) ± [`Rule::level_band_pct`]; the median, so that one stalled
/// second is not a fall out. The second named is the first in that window that is outside
/// the band on the same side and from which the rest of the window stays so (median): for
/// a step change, the second it happened. What changed compares the steady level with the
/// mean of one window from that second.
pub fn fall_out(points: &[Point], from: usize, rule: &Rule) -> Option<FallOut> {
    let w = rule.window();
    let steady = points.get(from..from + w)?;
    let band = rule.level_band_pct() / 100.0;
    let levels: Vec<(Measure, f64)> =
        Measure::ALL.iter().filter_map(|m| Some((*m, Fit::of(&m.values(steady)?)?.mean))).collect();
    // Outside the band: +1 above, -1 below, 0 inside.
    let side = |v: f64, level: f64| {
        if v > level * (1.0 + band) {
            1
        } else if v < level * (1.0 - band) {
            -1
        } else {
            0
        }
    };
    let min_len = (w / 2).max(1);
    let mut t = from + w;
    while t + min_len <= points.len() {
        let win = &points[t..(t + w).min(points.len())];
        for (m, level) in &levels {
            let Some(v) = m.values(win) else { continue };
            let dir = side(median(&v), *level);
            if dir == 0 {
                continue;
            }
            let at = (0..v.len()).find(|&i| side(v[i], *level) == dir && side(median(&v[i..]), *level) == dir);
            let s = t + at.unwrap_or(0);
            let after = &points[s..(s + w).min(points.len())];
            let changes = levels
                .iter()
                .filter_map(|(m, level)| {
                    let to = mean(&m.values(after)?);
                    (side(to, *level) != 0).then_some(Change { measure: *m, from: *level, to })
                })
                .collect();
            return Some(FallOut { at: s, changes });
        }
        t += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn points(iops: &[f64]) -> Vec<Point> {
        iops.iter().map(|i| Point { iops: *i, bytes_per_sec: i * 4096.0, latency_p50_ns: Some(1e9 / i) }).collect()
    }

    /// A deterministic ±`pct`% wobble, the same every run.
    fn noisy(n: usize, level: f64, pct: f64) -> Vec<f64> {
        (0..n).map(|i| level * (1.0 + pct / 100.0 * ((i * 7 % 11) as f64 / 5.0 - 1.0))).collect()
    }

    #[test]
    fn a_flat_series_is_steady_from_its_first_second() {
        let p = points(&[1000.0; 30]);
        assert_eq!(steady_from(&p, &Rule::default()), Some(0));
    }

    #[test]
    fn a_noisy_but_level_series_is_steady() {
        let p = points(&noisy(30, 50_000.0, 15.0));
        assert_eq!(steady_from(&p, &Rule::default()), Some(0));
        assert_eq!(fall_out(&p, 0, &Rule::default()), None);
    }

    #[test]
    fn a_ramp_is_steady_only_once_it_levels_off() {
        // Climbs 10% of the final level a second for 10 s, then holds.
        let mut v: Vec<f64> = (1..=10).map(|i| 1000.0 * i as f64).collect();
        v.extend([10_000.0; 20]);
        let from = steady_from(&points(&v), &Rule::default()).expect("levels off");
        assert!((7..=10).contains(&from), "steady from {from}");
    }

    #[test]
    fn a_series_that_keeps_climbing_is_never_steady() {
        let v: Vec<f64> = (1..=40).map(|i| 1000.0 * 1.05f64.powi(i)).collect();
        assert_eq!(steady_from(&points(&v), &Rule::default()), None);
    }

    #[test]
    fn a_step_shorter_than_the_window_is_not_judged_steady() {
        assert_eq!(steady_from(&points(&[1000.0; 9]), &Rule::default()), None);
    }

    #[test]
    fn a_series_swinging_wider_than_the_range_is_not_steady() {
        let v: Vec<f64> = (0..30).map(|i| if i % 2 == 0 { 1000.0 } else { 2000.0 }).collect();
        assert_eq!(steady_from(&points(&v), &Rule::default()), None);
    }

    #[test]
    fn a_step_change_names_the_second_it_happened_and_what_changed() {
        let mut v = noisy(31, 52_000.0, 10.0);
        v.extend(noisy(20, 11_000.0, 10.0));
        let p = points(&v);
        let rule = Rule::default();
        let from = steady_from(&p, &rule).expect("steady at first");
        let f = fall_out(&p, from, &rule).expect("falls out");
        assert_eq!(f.at, 31);
        let iops = f.changes.iter().find(|c| c.measure == Measure::Iops).expect("IOPS changed");
        assert!(iops.from > 45_000.0 && iops.to < 13_000.0, "{iops:?}");
        let lat = f.changes.iter().find(|c| c.measure == Measure::LatencyP50).expect("latency changed");
        assert!(lat.to > lat.from * 3.0, "{lat:?}");
    }

    #[test]
    fn one_slow_second_is_not_a_fall_out() {
        let mut v = vec![10_000.0; 40];
        v[25] = 2_000.0;
        let p = points(&v);
        assert_eq!(fall_out(&p, 0, &Rule::default()), None);
    }

    #[test]
    fn a_drop_in_the_last_half_window_is_still_found() {
        let mut v = vec![10_000.0; 25];
        v.extend([3_000.0; 6]);
        let f = fall_out(&points(&v), 0, &Rule::default()).expect("falls out");
        assert_eq!(f.at, 25);
    }

    #[test]
    fn seconds_without_io_are_not_steady() {
        assert_eq!(steady_from(&points(&[0.0; 20]), &Rule::default()), None);
        let mut p = points(&[1000.0; 20]);
        p[3].latency_p50_ns = None;
        assert_eq!(steady_from(&p, &Rule::default()), Some(4));
    }
}
