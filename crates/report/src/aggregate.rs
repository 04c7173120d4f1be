//! The verdicts of a run: every concern's verdicts, most severe first. Each concern
//! (notes, schedule, steady, link, client, target, verification) works out its own from
//! the summary and the results file it came from; this module only collects and orders
//! them, so `ioscope show` gives the same ones as the run.

use crate::verdict::{Severity, Verdict};

/// Every verdict on a run, most severe first (in the order found within a severity).
pub fn verdicts(s: &crate::Summary, r: &ioscope_store::Results) -> Vec<Verdict> {
    let plan: Option<ioscope_workload::Plan> = serde_json::from_value(s.workload.plan.clone()).ok();
    let mut v = crate::verification::verdicts(s.verification.as_ref());
    v.extend(crate::notes::notes(s));
    v.extend(crate::notes::results_verdicts(s, r));
    v.extend(crate::steady::steady_verdicts(s));
    v.extend(crate::link::link_verdicts(s));
    v.extend(crate::link::target_verdicts(s, r));
    v.extend(crate::client::client_bound(s, r, plan.as_ref()));
    if let Some(p) = &plan {
        v.extend(crate::client::client_cache(s, r, p));
        v.extend(crate::client::target_memory(s, r, p));
        v.extend(crate::client::imbalance(s, r, p));
    }
    v.sort_by_key(|x| std::cmp::Reverse(x.severity));
    // An error is said of a failed run only (exit 1): a run that completed or was
    // interrupted, by its own rules (failures within max_errors, `--verify report`,
    // `on_host_loss = "continue"`), gets the same finding as a warning (still first), so
    // that status, exit code and severity tell one story.
    if s.status != "failed" {
        v.iter_mut().filter(|x| x.severity == Severity::Error).for_each(|x| x.severity = Severity::Warning);
    }
    v
}
