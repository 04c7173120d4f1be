//! `until_steady`: the collector feeds each measured second of the run to the steady-state
//! rule (`ioscope_metrics::steady`, the one the summary applies to the stored seconds) and
//! ends the run once its last window is steady.

use ioscope_metrics::steady::{window_steady, Point, Rule};
use ioscope_metrics::{is_sync_op, Histogram, Snapshot, SECOND_NS};
use ioscope_workload::Plan;

/// The seconds of the run so far, for the rule.
pub(crate) struct UntilSteady {
    rule: Rule,
    points: Vec<Point>,
}

impl UntilSteady {
    /// Some when the plan asks to end once steady.
    pub(crate) fn of(plan: &Plan) -> Option<UntilSteady> {
        plan.until_steady_s.map(|w| UntilSteady { rule: Rule::with_window(w), points: Vec::new() })
    }

    /// Adds a second (warm-up seconds are not the step's); true once the last window of
    /// measured seconds is steady.
    pub(crate) fn steady_after(&mut self, snap: &Snapshot) -> bool {
        if snap.warmup {
            return false;
        }
        self.points.push(point(snap));
        let w = self.rule.window_s as usize;
        self.points.len() >= w && window_steady(&self.points[self.points.len() - w..], &self.rule)
    }
}

/// A second as the rule sees it: transfers of every operation, per second of its interval.
pub(crate) fn point(snap: &Snapshot) -> Point {
    let t = snap.total();
    let mut latency = Histogram::new();
    for s in snap.ops.iter().filter(|s| !is_sync_op(s.op)) {
        latency.merge(&s.data.latency_ns);
    }
    let seconds = snap.interval_ns.max(1) as f64 / SECOND_NS as f64;
    Point {
        iops: t.ops as f64 / seconds,
        bytes_per_sec: t.bytes as f64 / seconds,
        latency_p50_ns: latency.quantile(0.5).map(|v| v as f64),
    }
}
