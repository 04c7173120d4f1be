//! The calls between the coordinator and an agent (all `POST`, JSON both ways, over
//! [`ioscope_proto`]): what each carries. See docs/agent-protocol.md.

use ioscope_metrics::Snapshot;
use serde::{Deserialize, Serialize};

/// The protocol's version: the coordinator refuses an agent that speaks another. 2: a
/// prepare is answered at once and followed with `/v1/prepared` (version 1 answered the
/// prepare call itself once the working set was ready, however long that took).
pub const PROTOCOL: u32 = 2;

/// Most bytes of one answer the coordinator reads (its client refuses more before
/// decoding): 32 seconds of a few thousand series each.
pub const MAX_ANSWER_BYTES: usize = 16 << 20;
/// Most seconds in one answer to `/v1/seconds`.
pub const MAX_SECONDS_PER_ANSWER: usize = 32;
/// Most bytes of a text from an agent that the coordinator keeps (its host name, a
/// status detail, a first error); longer ones are cut.
pub const MAX_TEXT_BYTES: usize = 4096;
/// Most first errors an agent's `done` may carry.
pub const MAX_FIRST_ERRORS: usize = 64;

pub const HELLO: &str = "/v1/hello";
pub const CLOCK: &str = "/v1/clock";
pub const PREPARE: &str = "/v1/prepare";
pub const PREPARED: &str = "/v1/prepared";
pub const START: &str = "/v1/start";
pub const SECONDS: &str = "/v1/seconds";
pub const STOP: &str = "/v1/stop";
pub const PROBE_PREPARE: &str = "/v1/probe/prepare";
pub const PROBE_START: &str = "/v1/probe/start";
pub const PROBE_SECONDS: &str = "/v1/probe/seconds";
pub const PROBE_STOP: &str = "/v1/probe/stop";

/// The coordinator introduces itself; the agent answers with what it is.
#[derive(Debug, Serialize, Deserialize)]
pub struct Hello {
    pub version: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct HelloAnswer {
    /// `CARGO_PKG_VERSION` of the agent's binary.
    pub version: String,
    /// The agent host's kernel node name.
    pub hostname: String,
    pub pid: u32,
    /// [`PROTOCOL`] of the agent (0 from agents before version 2).
    #[serde(default)]
    pub protocol: u32,
}

/// The agent's wall clock (CLOCK_REALTIME, ns since the Unix epoch) when it answered.
#[derive(Debug, Serialize, Deserialize)]
pub struct ClockAnswer {
    pub unix_ns: i64,
}

/// The run an agent is to take part in: the canonical workload text (the agent validates
/// it itself) and which host it is.
#[derive(Debug, Serialize, Deserialize)]
pub struct Prepare {
    /// This run's id (random, from the coordinator): the agent belongs to one run at a time.
    pub run: String,
    pub workload_toml: String,
    /// The coordinator's hash of the canonical text: the agent's must be the same.
    pub workload_hash: String,
    /// This host's place in the run's host list (0-based) and its name in the results.
    pub index: usize,
    pub name: String,
    /// Where the coordinator writes the results (absolute, on its host): recorded with the
    /// agent's directory lock, so that another run refused there is told whose it is.
    pub results: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PrepareAnswer {
    /// The plan this host runs ([`crate::host_plan`]), as JSON.
    pub plan_json: String,
    /// The host's system configuration (as a local run records it).
    pub config: serde_json::Value,
    /// What preparing the working set did ("reusing 4 files, 1 GiB", ...).
    pub prepared: String,
}

/// Whether the preparation of `run` has ended, waiting up to `wait_ms` (at most 10 s)
/// for it to end.
#[derive(Debug, Serialize, Deserialize)]
pub struct PrepareWait {
    pub run: String,
    pub wait_ms: u64,
}

/// None while the agent is still preparing; a failed preparation is a refusal of the call.
#[derive(Debug, Serialize, Deserialize)]
pub struct PreparedAnswer {
    pub done: Option<PrepareAnswer>,
}

/// Start the measured run at this instant of the agent's own wall clock.
#[derive(Debug, Serialize, Deserialize)]
pub struct Start {
    /// The run prepared on the agent (see [`Prepare::run`]).
    pub run: String,
    pub at_unix_ns: i64,
}

/// Finished seconds after `after` (None: from the first), waiting up to `wait_ms` for one.
#[derive(Debug, Serialize, Deserialize)]
pub struct Seconds {
    pub after: Option<u32>,
    pub wait_ms: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct SecondsAnswer {
    /// Ascending by second.
    pub seconds: Vec<Snapshot>,
    /// The run's time zero on the agent's wall clock, once it started.
    pub started_unix_ns: Option<i64>,
    /// Set once the run has ended and every second was sent.
    pub done: Option<Done>,
}

/// How an agent's run ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Done {
    /// "completed", "failed" or "interrupted" (as the results file spells a status).
    pub status: String,
    pub detail: Option<String>,
    pub first_errors: Vec<String>,
    /// The engine set-up of worker 0 (a local run's host config "engine").
    pub engine: Option<String>,
    /// When the first I/O was issued, measured, on the agent's wall clock.
    pub first_io_unix_ns: Option<i64>,
    /// The byte counters of the interface on the route to the target at the start and
    /// end of the run (a local run's host config "nic_counters"); absent from older agents.
    #[serde(default)]
    pub nic_counters: Option<serde_json::Value>,
}

/// Load the target-side samplers (`--probe ssh://`): a probe host runs samplers, not load.
#[derive(Debug, Serialize, Deserialize)]
pub struct ProbePrepare {
    /// The host's name in the results.
    pub name: String,
    /// Process names (comm) to follow.
    pub processes: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ProbePrepareAnswer {
    /// The host's system configuration, with its `probe` object (processes, eBPF or why not).
    pub config: serde_json::Value,
}

/// Start sampling at the run's time zero, on the agent's own wall clock.
#[derive(Debug, Serialize, Deserialize)]
pub struct ProbeStart {
    pub at_unix_ns: i64,
}

/// Finished target seconds after `after` (None: from the first), waiting up to `wait_ms`.
#[derive(Debug, Serialize, Deserialize)]
pub struct ProbeSeconds {
    pub after: Option<u64>,
    pub wait_ms: u64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ProbeSecondsAnswer {
    /// Ascending by second.
    pub seconds: Vec<ioscope_metrics::TargetSecond>,
}

/// An empty request or answer.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Empty {}
