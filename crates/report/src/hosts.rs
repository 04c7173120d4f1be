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
    /// Counters and rates over the seconds this host ran.
    #[serde(flatten)]
    pub totals: Totals,
    /// The time this host ran: its measured seconds (warm-up excluded) but those of the
    /// steps it sat out (a hosts staircase it had not joined yet).
    pub duration_s: f64,
    /// Seconds this host ran (as for `duration_s`).
    pub seconds: u64,
    /// Latency of its transfers (operations counted in the total), from its merged
    /// histograms; null when none completed.
    pub latency_ns: Option<Distribution>,
    /// How its agent fared; null for a local run.
    pub agent: Option<AgentSummary>,
}

/// A start later than this after the common instant is noted (the clocks' own error is
/// far smaller).
pub const START_LATE_NS: u64 = 1_000_000;

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
    /// How long after the common start instant the host's time zero came (its engines
    /// took longer to open than the coordinator allowed); None: on time or not recorded.
    #[serde(default)]
    pub start_late_ns: Option<u64>,
    /// The first second the host did not deliver, when it was lost.
    #[serde(default)]
    pub lost_at_second: Option<u32>,
}

impl AgentSummary {
    /// The `agent` object of a host's configuration, if it has one that reads.
    pub fn of(config: &serde_json::Value) -> Option<Self> {
        let agent = config.get("agent").filter(|a| a.is_object())?;
        let mut a: AgentSummary = serde_json::from_value(agent.clone()).ok()?;
        // The host's time zero and the instant asked for, both on the coordinator's clock.
        let at = |key: &str| agent.get(key).and_then(serde_json::Value::as_i64);
        if let (Some(started), Some(planned)) = (at("started_unix_ns"), at("planned_start_unix_ns")) {
            a.start_late_ns = u64::try_from(started.saturating_sub(planned)).ok().filter(|late| *late > START_LATE_NS);
        }
        Some(a)
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
    // Every load host has a row, one that was lost before its first second too; a host
    // that was only probed (`--probe HOST`: its record has the probe's) applied no load and
    // has none, unless it also ran workers.
    for (h, c) in &r.hosts {
        if c["probe"].is_object() && !agents.contains_key(h.as_str()) {
            continue;
        }
        rows.entry(h.clone()).or_insert_with(|| (Totals::default(), 0, 0, Histogram::new()));
    }
    for s in r.seconds.iter().filter(|s| !s.warmup) {
        // Seconds a host sat out (a step of a hosts staircase it has not joined yet) count
        // as its measured time too: every host's rates are over the run's time, so that the
        // host rows add up to the total and agree with the UI's by-host averages (the step
        // table gives each step's rates; the notes compare hosts over the seconds all ran).
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

/// Worker threads per host and step, from each host's plan (its own, else the run's);
/// None where no plan says. A host's own plan has 0 threads in the steps it sits out.
pub(crate) struct Threads(BTreeMap<String, BTreeMap<u32, Option<u64>>>);

impl Threads {
    pub fn of(r: &Results) -> Threads {
        let plans = host_threads(r);
        let mut out: BTreeMap<String, BTreeMap<u32, Option<u64>>> = BTreeMap::new();
        for s in &r.seconds {
            if !out.contains_key(s.host.as_str()) {
                out.insert(s.host.clone(), BTreeMap::new());
            }
            if let Some(steps) = out.get_mut(s.host.as_str()) {
                // Worked out once per host and step (a plan's steps are built on demand).
                steps
                    .entry(s.step)
                    .or_insert_with(|| plans.get(s.host.as_str()).and_then(|p| threads_in_step(p, s.step)));
            }
        }
        Threads(out)
    }

    pub fn get(&self, host: &str, step: u32) -> Option<u64> {
        self.0.get(host)?.get(&step).copied().flatten()
    }

    /// Whether every host's every step has a known thread count.
    pub fn known(&self) -> bool {
        self.0.values().flat_map(BTreeMap::values).all(Option::is_some)
    }
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
    let threads = Threads::of(r);
    let mut out: Vec<HostSeconds> = hosts
        .iter()
        .map(|h| HostSeconds { host: h.to_string(), per_thread: Vec::new(), latency: Histogram::new() })
        .collect();
    for snaps in per_second.values() {
        // A second counts only when every host delivered it (exactly once) and none sat
        // it out.
        let complete = hosts.iter().all(|h| snaps.iter().filter(|s| s.host == *h).count() == 1);
        if !complete || snaps.iter().any(|s| threads.get(&s.host, s.step) == Some(0)) {
            continue;
        }
        for s in snaps {
            let Some(row) = out.iter_mut().find(|x| x.host == s.host) else { continue };
            let t = s.total();
            let amount = if bytes { t.bytes } else { t.ops };
            let n = threads.get(&s.host, s.step).unwrap_or(1).max(1);
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
