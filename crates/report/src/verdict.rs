//! Verdicts: what the measurements say about how far a run's numbers can be trusted (a
//! client cache answering reads, a saturated link or client, a start that was not steady,
//! an unheld rate...), each with the measured evidence that triggered it.
//!
//! This module holds the types and the registry: one table of every verdict ioscope
//! says ([`REGISTRY`]: id, severity, what it means, the figure it names). A verdict is
//! made only from a [`VerdictId`] of that table ([`Verdict::new`]), so none can be
//! invented elsewhere; docs/verdicts.md describes each, and a test checks that every id
//! is there and has a test that builds its trap and one that builds a clean run of the
//! same shape. The verdicts of a run are worked out in `aggregate.rs`.

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

/// One row of the registry.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub id: VerdictId,
    /// The stable kebab-case name in the JSON and the text summary.
    pub name: &'static str,
    /// The severity it is said at; some are said lower when the evidence is weaker
    /// ([`Verdict::at`]), and an error of a run that did not fail is said as a warning.
    pub severity: Severity,
    /// What it means, in one line.
    pub means: &'static str,
    /// The figure that triggers it (its evidence key names the unit).
    pub figure: &'static str,
}

/// Declares [`VerdictId`] and [`REGISTRY`] from one list, so the two cannot drift apart.
macro_rules! registry {
    ($($variant:ident = $name:literal, $severity:ident, $means:literal, $figure:literal;)*) => {
        /// Every verdict's id: a verdict is made from one of these only.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum VerdictId {
            $($variant),*
        }

        /// Every verdict ioscope says, one row each, in the order of the enum.
        pub const REGISTRY: &[Entry] = &[
            $(Entry {
                id: VerdictId::$variant,
                name: $name,
                severity: Severity::$severity,
                means: $means,
                figure: $figure,
            }),*
        ];
    };
}

registry! {
    // The run and its hosts.
    Interrupted = "interrupted", Warning,
        "the run was stopped before its end: the numbers cover only what it measured", "measured_s";
    Failed = "failed", Error,
        "the run failed: the numbers cover only what it measured before", "measured_s";
    Running = "running", Info,
        "the run is still going: the numbers so far", "measured_s";
    NoData = "no-data", Error,
        "no second was recorded", "seconds";
    TooShort = "too-short", Warning,
        "too few seconds measured to tell whether the result is steady", "measured_s";
    ShorterThanPlanned = "shorter-than-planned", Info,
        "measured less time than planned", "measured_s";
    Engine = "engine", Info,
        "the engine's own note (engine null does no I/O)", "engine";
    HostLost = "host-lost", Error,
        "an agent was lost: its series end there", "lost_at_second";
    HostFailed = "host-failed", Error,
        "an agent failed: its numbers cover only what it measured", "measured_s";
    HostLateStart = "host-late-start", Info,
        "a host started after the common start instant", "start_late_ns";
    ClockUncertain = "clock-uncertain", Info,
        "a host's clock offset is known only roughly", "clock_uncertainty_ns";
    // Failures.
    Errors = "errors", Error,
        "I/Os failed: counted by kind, not in IOPS or latency", "errors_pct";
    UnusableSeconds = "unusable-seconds", Error,
        "seconds in which every I/O failed", "seconds_all_failed";
    DataMismatch = "data-mismatch", Error,
        "blocks read back were not what the run wrote (--verify)", "mismatches";
    // Measurement itself.
    Stalls = "stalls", Warning,
        "whole seconds in which no I/O completed", "seconds_without_io";
    LateTicks = "late-ticks", Warning,
        "ticks far longer than a second: ioscope was stopped or starved", "longest_interval_s";
    Oversubscribed = "oversubscribed", Warning,
        "many worker threads per CPU and a collector without priority", "threads";
    PerFileIncomplete = "per-file-incomplete", Info,
        "per-file records dropped by a full ring", "ios_not_broken_down";
    SkippedPicks = "skipped-picks", Info,
        "file-tree picks that found no file in the needed state", "skipped";
    ProbeDropped = "probe-dropped", Info,
        "the eBPF samplers missed events", "events_dropped";
    // What set the numbers.
    RateNotHeld = "rate-not-held", Warning,
        "the open-loop rate was not reached, or I/Os started late", "attempted_iops";
    ClientCache = "client-cache", Warning,
        "reads completed faster than any device: the client's page cache", "reads_below_floor_pct";
    WorkingSetCached = "working-set-cached", Warning,
        "the working set fits in memory and I/O was buffered", "working_set_of_memory_pct";
    TargetCache = "target-cache", Warning,
        "the target's disks saw few of the client's reads: its page cache", "target_disk_reads";
    ClientBound = "client-bound", Warning,
        "ioscope's worker threads, not the storage, set the pace", "busiest_thread_busy_pct";
    LinkBound = "link-bound", Warning,
        "throughput at the capacity of the interface that carries it", "share_pct";
    TargetBound = "target-bound", Info,
        "a CPU or disk of the probed target was saturated", "busy_pct";
    Imbalance = "imbalance", Warning,
        "a host, worker thread or file far from its peers beyond noise", "difference_pct";
    // Steady state.
    NotSteady = "not-steady", Warning,
        "no window of the step held within the steady-state rule", "failed_measure";
    FellOutOfSteadyState = "fell-out-of-steady-state", Warning,
        "after being steady, a later window left the steady level", "second";
}

impl VerdictId {
    /// This id's row of the registry.
    pub fn entry(self) -> &'static Entry {
        // The macro lists the rows in the order of the variants.
        &REGISTRY[self as usize]
    }

    /// The stable kebab-case name ("client-cache").
    pub fn name(self) -> &'static str {
        self.entry().name
    }
}

/// One finding, with the figures that triggered it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// A registry name: "client-cache", "link-bound", "not-steady"...
    pub id: String,
    pub severity: Severity,
    /// One sentence, as the summary prints it.
    pub message: String,
    /// Measured figures, each key naming its unit ("read_latency_p50_ns").
    pub evidence: serde_json::Map<String, serde_json::Value>,
    /// Private: a verdict is made with [`Verdict::new`] from the registry, never spelled out.
    #[serde(skip)]
    made: Made,
}

/// Only this module can name it: a [`Verdict`] is not spelled out as a struct elsewhere.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Made;

impl Verdict {
    /// A verdict of the registry's `id`, at its severity, without evidence yet (add it
    /// with [`Verdict::with`]).
    pub fn new(id: VerdictId, message: impl Into<String>) -> Self {
        let e = id.entry();
        Verdict {
            id: e.name.to_string(),
            severity: e.severity,
            message: message.into(),
            evidence: serde_json::Map::new(),
            made: Made,
        }
    }

    /// Said at a lower severity than the registry's (weaker evidence); never higher.
    pub fn at(mut self, severity: Severity) -> Self {
        self.severity = self.severity.min(severity);
        self
    }

    /// Adds one measured figure; its key names the unit ("read_latency_p50_ns").
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.evidence.insert(key.to_string(), value.into());
        self
    }

    /// Adds measured figures (see [`Verdict::with`]).
    pub fn with_all(mut self, evidence: serde_json::Map<String, serde_json::Value>) -> Self {
        self.evidence.extend(evidence);
        self
    }

    /// Whether this is a verdict of `id`.
    pub fn is(&self, id: VerdictId) -> bool {
        self.id == id.name()
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
