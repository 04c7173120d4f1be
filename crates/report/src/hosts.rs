//! Per-host rows of a run from several hosts (or run by an agent): each host's counters,
//! rates and transfer latency from its own merged histograms, and how its agent fared
//! (status, clock offset, loss), read from the `agent` object of its stored configuration.
//! Also the per-second data the notes compare hosts with.

use crate::{rate, Distribution, Totals};
use ioscope_metrics::{Histogram, Snapshot};
use ioscope_store::Results;
use ioscope_workload::plan::Plan;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One host of the run: see `hosts` in `schema/summary.schema.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostSummary {
    /// Counters and rates over this host's own measured time.
    #[serde(flatten)]
    pub totals: Totals,
    /// This host's measured time (warm-up excluded).
    pub duration_s: f64,
    /// Seconds this host stored (warm-up excluded).
    pub seconds: u64,
    /// Latency of its transfers (operations counted in the total), from its merged
    /// histograms; null when none completed.
    pub latency_ns: Option<Distribution>,
    /// How its agent fared; null for a local run.
    pub agent: Option<AgentSummary>,
}

/// The `agent` object the coordinator stores with each host's configuration. Every field
/// is optional here: a damaged or older file must still summarize.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentSummary {
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default)]
    pub address: Option<String>,
    /// "ssh" or "listen".
    #[serde(default)]
    pub transport: Option<String>,
    /// completed, failed, lost or interrupted.
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub detail: Option<String>,
    /// The agent's clock minus the coordinator's.
    #[serde(default)]
    pub clock_offset_ns: Option<i64>,
    /// How far the offset may be off: half the best round trip.
    #[serde(default)]
    pub clock_uncertainty_ns: Option<u64>,
    #[serde(default)]
    pub rtt_ns: Option<u64>,
    #[serde(default)]
    pub start_spread_ns: Option<i64>,
    /// The first second the host did not deliver, when it was lost.
    #[serde(default)]
    pub lost_at_second: Option<u32>,
}

impl AgentSummary {
    /// The `agent` object of a host's configuration, if it has one that reads.
    pub fn of(config: &serde_json::Value) -> Option<Self> {
        let agent = config.get("agent").filter(|a| a.is_object())?;
        serde_json::from_value(agent.clone()).ok()
    }
}

/// Transfer latency of one host's second (the total's operations, as in the samples).
fn transfer_latency(s: &Snapshot, into: &mut Histogram) {
    for o in s.ops.iter().filter(|o| !ioscope_metrics::is_sync_op(o.op)) {
        into.merge(&o.data.latency_ns);
    }
}

/// Per-host rows, for runs of several hosts or with agents; empty for a local run of one
/// host (its summary stays as it always was).
pub(crate) fn host_rows(r: &Results) -> BTreeMap<String, HostSummary> {
    let agents: BTreeMap<&str, AgentSummary> =
        r.hosts.iter().filter_map(|(h, c)| Some((h.as_str(), AgentSummary::of(c)?))).collect();
    let mut rows: BTreeMap<String, (Totals, u64, u64, Histogram)> = BTreeMap::new();
    for (h, _) in &r.hosts {
        rows.entry(h.clone()).or_insert_with(|| (Totals::default(), 0, 0, Histogram::new()));
    }
    for s in r.seconds.iter().filter(|s| !s.warmup) {
        let e = rows.entry(s.host.clone()).or_insert_with(|| (Totals::default(), 0, 0, Histogram::new()));
        let t = s.total();
        e.0.ops = e.0.ops.saturating_add(t.ops);
        e.0.bytes = e.0.bytes.saturating_add(t.bytes);
        e.0.errors = e.0.errors.saturating_add(t.errors);
        e.1 = e.1.saturating_add(s.interval_ns);
        e.2 += 1;
        transfer_latency(s, &mut e.3);
    }
    if rows.len() < 2 && agents.is_empty() {
        return BTreeMap::new();
    }
    rows.into_iter()
        .map(|(h, (mut t, ns, seconds, lat))| {
            let duration_s = ns as f64 / 1e9;
            t.iops = rate(t.ops, duration_s);
            t.bytes_per_sec = rate(t.bytes, duration_s);
            let agent = agents.get(h.as_str()).cloned();
            (h, HostSummary { totals: t, duration_s, seconds, latency_ns: Distribution::of(&lat), agent })
        })
        .collect()
}

/// What the notes compare hosts with: each host's throughput per thread in every
/// measured second that every host with data ran (so that a host that joined a staircase
/// late, or was lost, is compared over the same load), and its transfer latency then.
pub(crate) struct HostSeconds {
    pub host: String,
    /// Per second: bytes per second per thread (ops per second when the run moved no
    /// bytes); per host when the threads are not known (see [`threads_known`]).
    pub per_thread: Vec<f64>,
    pub latency: Histogram,
}

/// Whether every host's plan (its own, else the run's) says how many threads it ran.
pub(crate) fn threads_known(r: &Results) -> bool {
    let plans = host_threads(r);
    let pairs: std::collections::BTreeSet<(&str, u32)> = r.seconds.iter().map(|s| (s.host.as_str(), s.step)).collect();
    pairs.into_iter().all(|(h, step)| plans.get(h).is_some_and(|p| threads_in_step(p, step).is_some()))
}

/// The seconds every host ran, per host; `bytes` picks bytes (else ops) per second.
pub(crate) fn common_seconds(r: &Results, bytes: bool) -> Vec<HostSeconds> {
    let measured: Vec<&Snapshot> = r.seconds.iter().filter(|s| !s.warmup && s.interval_ns > 0).collect();
    let mut hosts: Vec<&str> = measured.iter().map(|s| s.host.as_str()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let mut per_second: BTreeMap<u32, Vec<&Snapshot>> = BTreeMap::new();
    for s in &measured {
        per_second.entry(s.second).or_default().push(s);
    }
    let plans = host_threads(r);
    // Threads per host and step, worked out once (a plan's steps are built on demand).
    let mut threads: BTreeMap<(&str, u32), Option<u64>> = BTreeMap::new();
    let mut out: Vec<HostSeconds> = hosts
        .iter()
        .map(|h| HostSeconds { host: h.to_string(), per_thread: Vec::new(), latency: Histogram::new() })
        .collect();
    for snaps in per_second.values() {
        // A second counts only when every host delivered it (exactly once).
        let complete = hosts.iter().all(|h| snaps.iter().filter(|s| s.host == *h).count() == 1);
        if !complete {
            continue;
        }
        for s in snaps {
            let Some(row) = out.iter_mut().find(|x| x.host == s.host) else { continue };
            let t = s.total();
            let amount = if bytes { t.bytes } else { t.ops };
            let n = *threads
                .entry((s.host.as_str(), s.step))
                .or_insert_with(|| plans.get(s.host.as_str()).and_then(|p| threads_in_step(p, s.step)));
            let n = n.unwrap_or(1).max(1);
            row.per_thread.push(rate(amount, s.interval_ns as f64 / 1e9) / n as f64);
            transfer_latency(s, &mut row.latency);
        }
    }
    out
}

/// Each host's plan: the one its agent ran, else the run's.
fn host_threads(r: &Results) -> BTreeMap<&str, Plan> {
    let run: Option<Plan> = serde_json::from_str(&r.run.info.plan_json).ok();
    let mut out = BTreeMap::new();
    for s in &r.seconds {
        if out.contains_key(s.host.as_str()) {
            continue;
        }
        let own = r
            .hosts
            .iter()
            .find(|(h, _)| *h == s.host)
            .and_then(|(_, c)| c.get("agent")?.get("plan_json")?.as_str().map(str::to_string))
            .and_then(|text| serde_json::from_str::<Plan>(&text).ok());
        if let Some(p) = own.or_else(|| run.clone()) {
            out.insert(s.host.as_str(), p);
        }
    }
    out
}

/// Worker threads of every workload in step `step` of `p`.
fn threads_in_step(p: &Plan, step: u32) -> Option<u64> {
    let steps = p.steps();
    let st = steps.iter().find(|x| x.index == step)?;
    Some(p.workloads.iter().map(|w| u64::from(st.threads_of(w))).sum())
}
