//! An agent's probe calls (`--probe ssh://`): it loads the target-side samplers, starts
//! them at the run's time zero on its own clock, and hands out their finished seconds
//! until the coordinator has them. The agent's watchdog stops them as it stops a load.

use crate::agent::{Agent, Body};
use crate::messages::*;
use axum::extract::State;
use axum::Json;
use ioscope_metrics::TargetSecond;
use ioscope_probe::{Probe, ProbeConfig, Running};
use ioscope_proto::ApiError;
use std::time::Duration;

/// The samplers of this agent: loaded, then sampling.
#[derive(Default)]
pub(crate) struct ProbeSlot {
    ready: Option<Probe>,
    running: Option<Running>,
    /// Seconds the coordinator has not acknowledged yet.
    seconds: Vec<TargetSecond>,
}

impl ProbeSlot {
    pub(crate) fn active(&self) -> bool {
        self.running.is_some()
    }

    /// Stops sampling (the coordinator said so, or went silent).
    pub(crate) fn stop(&mut self) {
        if let Some(r) = self.running.take() {
            self.seconds.extend(r.finish(None));
        }
    }
}

/// Most seconds in one answer.
const MAX_SECONDS_PER_ANSWER: usize = 32;

pub(crate) async fn prepare(
    State(a): State<Agent>,
    Body(req): Body<ProbePrepare>,
) -> Result<Json<ProbePrepareAnswer>, ApiError> {
    a.heard();
    if req.processes.len() > 256 || req.processes.iter().any(|p| p.is_empty() || p.len() > 64 || p.contains('/')) {
        return Err(ApiError::bad_request("processes: at most 256 names (as in /proc/PID/comm)".to_string()));
    }
    if a.probe.lock().unwrap().active() {
        return Err(ApiError::conflict("this agent's samplers are running for another run".to_string()));
    }
    let cfg = ProbeConfig { host: req.name, processes: req.processes };
    // Loading eBPF programs takes a moment: not on the runtime's threads.
    let probe = tokio::task::spawn_blocking(move || Probe::new(cfg))
        .await
        .map_err(|e| ApiError::internal(format!("loading the samplers stopped: {e}")))?;
    let mut config = ioscope_exec::host::describe(None);
    config["probe"] = probe.describe();
    let mut slot = a.probe.lock().unwrap();
    slot.ready = Some(probe);
    slot.seconds.clear();
    Ok(Json(ProbePrepareAnswer { config }))
}

pub(crate) async fn start(State(a): State<Agent>, Body(req): Body<ProbeStart>) -> Result<Json<Empty>, ApiError> {
    a.heard();
    let mut slot = a.probe.lock().unwrap();
    let probe = slot.ready.take().ok_or_else(|| ApiError::conflict("no samplers prepared to start".to_string()))?;
    let t0 = ioscope_exec::clock::to_monotonic(crate::clock::unix_to_monotonic(req.at_unix_ns));
    slot.running = Some(probe.start(t0));
    Ok(Json(Empty {}))
}

pub(crate) async fn seconds(State(a): State<Agent>, Body(req): Body<ProbeSeconds>) -> Json<ProbeSecondsAnswer> {
    a.heard();
    let deadline = tokio::time::Instant::now() + Duration::from_millis(req.wait_ms.min(10_000));
    loop {
        {
            let mut slot = a.probe.lock().unwrap();
            let fresh = slot.running.as_ref().map(|r| r.take()).unwrap_or_default();
            slot.seconds.extend(fresh);
            if let Some(after) = req.after {
                slot.seconds.retain(|s| s.second > after);
            }
            let now = tokio::time::Instant::now();
            if !slot.seconds.is_empty() || slot.running.is_none() || now >= deadline {
                a.heard();
                return Json(ProbeSecondsAnswer {
                    seconds: slot.seconds.iter().take(MAX_SECONDS_PER_ANSWER).cloned().collect(),
                });
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn stop(State(a): State<Agent>, Body(_): Body<Empty>) -> Json<Empty> {
    a.heard();
    a.probe.lock().unwrap().stop();
    Json(Empty {})
}
