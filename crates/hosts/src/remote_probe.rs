//! `--probe ssh://HOST`: target-side samplers on another host, through an agent started
//! over ssh as for `--hosts` (the same copy of this binary, the same token and protocol).
//! Its seconds are cut from the run's time zero, sent to the agent on its own clock.

use crate::clock::Offset;
use crate::coordinator::{end_sessions, measure_clock, reach, Host};
use crate::messages::*;
use ioscope_exec::TargetFeed;
use ioscope_metrics::TargetSecond;
use ioscope_workload::{HostKind, HostSpec};
use std::sync::mpsc;
use std::time::Duration;

/// How long a call to the probe's agent may take (ssh set-up and copying the binary have
/// their own limits).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a long poll for seconds waits on the agent.
const POLL_WAIT_MS: u64 = 1000;
/// A clock known to no better than this cannot cut the same seconds as the run's.
const MAX_UNCERTAINTY_NS: u64 = 50_000_000;

/// Samplers on a host reached over ssh.
pub struct RemoteProbe {
    /// Its own runtime: the caller may be a local run (no runtime) or the coordinator's.
    rt: Option<tokio::runtime::Runtime>,
    host: Option<Host>,
    name: String,
    config: serde_json::Value,
    offset: Offset,
    rx: Option<mpsc::Receiver<Result<TargetSecond, String>>>,
    /// The last second received, and why the samplers were lost, if they were.
    last: Option<u64>,
    lost: Option<String>,
    /// The run's time zero (CLOCK_MONOTONIC), once started.
    t0_ns: Option<u64>,
}

impl RemoteProbe {
    /// Reaches the host, measures its clock and loads its samplers (before the run, so
    /// that loading takes none of its time).
    pub fn connect(
        user: Option<String>,
        host: &str,
        port: Option<u16>,
        processes: &[String],
    ) -> Result<RemoteProbe, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the probe's runtime: {e}"))?;
        let spec = HostSpec {
            name: host.to_string(),
            kind: HostKind::Ssh { user, host: host.to_string(), port },
            identity: None,
            dir: None,
            target: None,
            bin: None,
            token_file: None,
            ca: None,
        };
        let (mut h, offset, config) = rt.block_on(async {
            let (h, _said) = reach(0, &spec, CALL_TIMEOUT).await.map_err(|e| e.to_string())?;
            let offset = measure_clock(&h.client).await.map_err(|e| format!("probe {host}: clock: {e}"))?;
            if offset.uncertainty_ns > MAX_UNCERTAINTY_NS {
                return Err(format!(
                    "probe {host}: its clock is known only to ±{} ms (at most ±{} ms cuts the run's seconds)",
                    offset.uncertainty_ns / 1_000_000,
                    MAX_UNCERTAINTY_NS / 1_000_000
                ));
            }
            let req = ProbePrepare { name: spec.name.clone(), processes: processes.to_vec() };
            let a: ProbePrepareAnswer = h
                .client
                .call(PROBE_PREPARE, &req, CALL_TIMEOUT)
                .await
                .map_err(|e| format!("probe {host}: loading the samplers: {e}"))?;
            Ok::<_, String>((h, offset, a.config))
        })?;
        h.offset = offset;
        let mut config = config;
        config["probe"]["clock_offset_ns"] = offset.offset_ns.into();
        config["probe"]["clock_uncertainty_ns"] = offset.uncertainty_ns.into();
        config["probe"]["transport"] = "ssh".into();
        Ok(RemoteProbe {
            rt: Some(rt),
            name: h.name.clone(),
            host: Some(h),
            config,
            offset,
            rx: None,
            last: None,
            lost: None,
            t0_ns: None,
        })
    }

    /// Why the kernel samplers do not run there (said once by the caller).
    pub fn kernel_unavailable(&self) -> Option<String> {
        self.config["probe"]["kernel_unavailable"].as_str().map(str::to_string)
    }

    fn stop(&mut self) {
        let (Some(h), Some(rt)) = (self.host.take(), self.rt.as_ref()) else { return };
        let mut hosts = vec![h];
        let end = async {
            let _ = hosts[0].client.call::<_, Empty>(PROBE_STOP, &Empty {}, Duration::from_secs(5)).await;
            end_sessions(&mut hosts).await;
        };
        // Called from the coordinator's runtime too: its thread may block here.
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::task::block_in_place(|| rt.block_on(end));
        } else {
            rt.block_on(end);
        }
    }
}

impl TargetFeed for RemoteProbe {
    fn host(&self) -> (String, serde_json::Value) {
        (self.name.clone(), self.config.clone())
    }

    fn start(&mut self, t0_monotonic_ns: u64) {
        let Some(h) = &self.host else { return };
        self.t0_ns = Some(t0_monotonic_ns);
        // The run's time zero on this host's wall clock, then on the agent's.
        let ahead = t0_monotonic_ns as i64 - ioscope_probe::driver::monotonic_ns() as i64;
        let at = crate::clock::unix_ns().saturating_add(ahead).saturating_add(self.offset.offset_ns);
        let client = h.client.clone();
        let (tx, rx) = mpsc::channel();
        self.rx = Some(rx);
        let Some(rt) = &self.rt else { return };
        rt.spawn(async move {
            if let Err(e) = client.call::<_, Empty>(PROBE_START, &ProbeStart { at_unix_ns: at }, CALL_TIMEOUT).await {
                let _ = tx.send(Err(format!("starting the samplers: {e}")));
                return;
            }
            let mut after = None;
            loop {
                let req = ProbeSeconds { after, wait_ms: POLL_WAIT_MS };
                let timeout = Duration::from_millis(POLL_WAIT_MS) + CALL_TIMEOUT;
                match client.call::<_, ProbeSecondsAnswer>(PROBE_SECONDS, &req, timeout).await {
                    Ok(a) => {
                        for s in a.seconds {
                            // Only forward, and only what a second of the run can be.
                            if after.is_some_and(|x| s.second <= x) || s.second > u64::from(u32::MAX) {
                                continue;
                            }
                            after = Some(s.second);
                            if tx.send(Ok(s)).is_err() {
                                return;
                            }
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(format!("the probe's agent stopped answering: {e}")));
                        return;
                    }
                }
            }
        });
    }

    fn take(&mut self) -> Vec<TargetSecond> {
        let mut out = Vec::new();
        // A second that has not ended yet cannot have been measured.
        let now = ioscope_probe::driver::monotonic_ns().saturating_sub(self.t0_ns.unwrap_or(u64::MAX));
        let ended = now / 1_000_000_000;
        for r in self.rx.iter().flat_map(|rx| rx.try_iter()) {
            let r = r.and_then(|s| {
                if s.second < ended.saturating_add(1) {
                    Ok(s)
                } else {
                    Err(format!("the agent sent second {} before it ended", s.second))
                }
            });
            if self.lost.is_some() {
                continue;
            }
            match r {
                Ok(mut s) => {
                    self.last = Some(s.second);
                    s.host = self.name.clone();
                    out.push(s);
                }
                Err(why) => {
                    if self.lost.is_none() {
                        eprintln!("probe {}: {why}; its series end here", self.name);
                    }
                    self.lost = Some(why);
                }
            }
        }
        out
    }

    fn finish(mut self: Box<Self>, last: Option<u64>) -> Vec<TargetSecond> {
        let mut out = Vec::new();
        // Wait (a little) for the run's last second to arrive.
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        while let Some(n) = last {
            out.extend(self.take());
            if self.lost.is_some() || self.last.is_some_and(|x| x >= n) || std::time::Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.stop();
        out.retain(|s| last.is_some_and(|n| s.second <= n));
        out
    }
}

impl Drop for RemoteProbe {
    fn drop(&mut self) {
        self.stop();
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}
