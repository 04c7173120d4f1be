//! Verdicts: what the measurements say about how far a run's numbers can be trusted (a
//! client cache answering reads, a saturated link or client, a start that was not steady,
//! an unheld rate...), each with the measured evidence that triggered it. Every verdict is
//! worked out from the results file alone, so `ioscope show` gives the same ones.

use serde::{Deserialize, Serialize};

/// How much a verdict limits the run's numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; the numbers stand.
    Info,
    /// The numbers may not mean what they seem (a cache, a link, a client limit).
    Warning,
    /// The numbers are incomplete or wrong for their purpose (errors, a failed run).
    Error,
}

/// One finding, with the figures that triggered it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Stable kebab-case name: "client-cache", "link-bound", "not-steady"...
    pub id: String,
    pub severity: Severity,
    /// One sentence, as the summary prints it.
    pub message: String,
    /// Measured figures, each key naming its unit ("read_latency_p50_ns").
    pub evidence: serde_json::Map<String, serde_json::Value>,
}

impl Verdict {
    /// A verdict without evidence yet (add it with [`Verdict::with`]).
    pub fn new(id: &str, severity: Severity, message: impl Into<String>) -> Self {
        Verdict { id: id.to_string(), severity, message: message.into(), evidence: serde_json::Map::new() }
    }

    /// Adds one measured figure; its key names the unit ("read_latency_p50_ns").
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.evidence.insert(key.to_string(), value.into());
        self
    }
}

impl Severity {
    /// The word the summary prints ("info", "warning", "error").
    pub fn word(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// Every verdict on a run, most severe first (in the order found within a severity): one
/// function per concern, each worked out from the summary and the results file it came from.
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
