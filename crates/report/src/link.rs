//! Verdicts on what else than the target may have been measured: the link that carries
//! the traffic (`link-bound`: throughput within 10% of the interface's capacity, from the
//! system record) and the target's own resources (`target-bound`: a CPU or disk of a
//! probed host saturated at the knee, or over a run without steps). Both read only the
//! results file: the host records (capacity, byte counters) and the target series.

use crate::verdict::{Verdict, VerdictId};
use crate::{format, Summary, TargetSummary};
use ioscope_store::Results;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Throughput at or above this share of the interface's capacity is link-bound...
const LINK_SHARE_PCT: f64 = 90.0;
/// ...up to this share: well above it, the bytes cannot have crossed this link at all
/// (a client cache answered, which is another verdict's business).
const LINK_SHARE_MAX_PCT: f64 = 115.0;
/// A CPU (all of a host's) or disk at least this busy is saturated.
const BUSY_PCT: f64 = 90.0;

/// The throughput one host moved, in bits per second, and how it was measured.
struct Measured {
    bits_per_sec: f64,
    source: &'static str,
}

/// Bytes on the wire: the interface's counters at the start and end of the measured run
/// (the busier direction), when the run recorded them for `nic`.
fn wire(config: &Value, nic: &str) -> Option<Measured> {
    let c = &config["nic_counters"];
    if c["nic"].as_str()? != nic {
        return None;
    }
    let (start, end) = (&c["start"], &c["end"]);
    let ns = end["at_monotonic_ns"].as_u64()?.checked_sub(start["at_monotonic_ns"].as_u64()?)?;
    if ns < 100_000_000 {
        return None; // too short a window to call a rate
    }
    let delta = |k: &str| end[k].as_u64()?.checked_sub(start[k].as_u64()?);
    let bytes = delta("rx_bytes").max(delta("tx_bytes"))?;
    Some(Measured { bits_per_sec: bytes as f64 * 8.0 / (ns as f64 / 1e9), source: "nic counters" })
}

/// The workload's own bytes per second on `host`: its best step when the run had steps
/// (one host only: steps are not kept per host), else its total.
fn workload(s: &Summary, host: &str) -> Option<Measured> {
    let total =
        s.by_host.get(host).map(|t| t.bytes_per_sec).or((s.system.len() == 1).then_some(s.total.bytes_per_sec))?;
    let best_step =
        if s.by_host.len() <= 1 { s.steps.iter().map(|st| st.measured.bytes_per_sec).fold(0.0, f64::max) } else { 0.0 };
    let bytes = total.max(best_step);
    (bytes > 0.0).then_some(Measured { bits_per_sec: bytes * 8.0, source: "workload" })
}

/// `link-bound`: per host whose record names the interface on the route to the target
/// and its capacity (min of sysfs speed and a tc shaper's rate).
pub(crate) fn link_verdicts(s: &Summary) -> Vec<Verdict> {
    let mut out = Vec::new();
    for (host, config) in &s.system {
        let Some(nic) = config["route"]["nic"].as_str() else { continue };
        let record = &config["nics"][nic];
        let Some(capacity) = record["capacity_bits_per_sec"].as_u64().filter(|c| *c > 0) else { continue };
        let source = record["capacity_source"].as_str().unwrap_or("unknown");
        // Both are lower bounds of what the link carried: the wire counts headers and any
        // other traffic on the link (which loads it all the same) but its window may hold
        // idle time (a run's tail, a host that started late); the workload's bytes are
        // payload only, over exactly its measured seconds (its busiest step with steps).
        // The larger is the better bound.
        let (on_wire, payload) = (wire(config, nic), workload(s, host));
        let figure = |m: &Option<Measured>| m.as_ref().map(|m| m.bits_per_sec.round() as u64);
        let (wire_bits, payload_bits) = (figure(&on_wire), figure(&payload));
        let measured = match (on_wire, payload) {
            (Some(w), Some(l)) => {
                if l.bits_per_sec > w.bits_per_sec {
                    l
                } else {
                    w
                }
            }
            (Some(m), None) | (None, Some(m)) => m,
            (None, None) => continue,
        };
        let share = measured.bits_per_sec / capacity as f64 * 100.0;
        if !(LINK_SHARE_PCT..=LINK_SHARE_MAX_PCT).contains(&share) {
            continue;
        }
        let to = config["route"]["to"].as_str().unwrap_or("the target");
        let mut evidence = Map::new();
        evidence.insert("host".into(), json!(host));
        evidence.insert("nic".into(), json!(nic));
        evidence.insert("capacity_bits_per_sec".into(), json!(capacity));
        evidence.insert("capacity_source".into(), json!(source));
        evidence.insert("measured_bits_per_sec".into(), json!(measured.bits_per_sec.round() as u64));
        evidence.insert("measured_source".into(), json!(measured.source));
        evidence.insert("wire_bits_per_sec".into(), json!(wire_bits));
        evidence.insert("workload_bits_per_sec".into(), json!(payload_bits));
        evidence.insert("share_pct".into(), json!((share * 10.0).round() / 10.0));
        out.push(
            Verdict::new(
                VerdictId::LinkBound,
                format!(
                "{host}: {} moved {} of the {} of {nic} ({source}), the interface that carries the traffic to {to}: \
                 the link, not the target, set this throughput",
                if measured.source == "workload" { "the workload" } else { "the interface" },
                format::pct(share / 100.0),
                bits(capacity as f64),
            ),
            )
            .with_all(evidence),
        );
    }
    out
}

/// "100 Mbit/s".
fn bits(v: f64) -> String {
    if v >= 1e9 {
        format!("{} Gbit/s", format::num(v / 1e9))
    } else {
        format!("{} Mbit/s", format::num(v / 1e6))
    }
}

/// `target-bound`: a probed host's CPUs or one of its disks busy ≥ 90% (mean) at the
/// knee's step, or over the run when it had no steps.
pub(crate) fn target_verdicts(s: &Summary, r: &Results) -> Vec<Verdict> {
    if s.target.is_empty() {
        return Vec::new();
    }
    let (sections, step): (BTreeMap<String, TargetSummary>, Option<(u32, String)>) = match (&s.knee, s.steps.is_empty())
    {
        (_, true) => (s.target.clone(), None),
        (Some(knee), false) => {
            let seconds: BTreeSet<u32> =
                s.samples.iter().filter(|x| x.step == knee.step && !x.warmup).map(|x| x.second).collect();
            (crate::target::target_summaries_where(r, &|x| seconds.contains(&x)), Some((knee.step, knee.label.clone())))
        }
        // Steps without a knee: no point where the target could have been the limit.
        (None, false) => return Vec::new(),
    };
    let load_hosts: BTreeSet<&str> = r.seconds.iter().filter(|x| !x.ops.is_empty()).map(|x| x.host.as_str()).collect();
    let mut out = Vec::new();
    for (host, t) in &sections {
        let mut busy: Vec<(String, f64)> = Vec::new();
        if let (Some(c), n @ 1..) = (&t.cpu_percent, t.cpus) {
            busy.push(("cpu".into(), c.mean / f64::from(n)));
        }
        for (disk, d) in &t.disks {
            if let Some(u) = &d.util_percent {
                busy.push((format!("disk {disk}"), u.mean));
            }
        }
        for (resource, pct) in busy.into_iter().filter(|(_, p)| *p >= BUSY_PCT) {
            let mut evidence = Map::new();
            evidence.insert("host".into(), json!(host));
            evidence.insert("resource".into(), json!(resource));
            evidence.insert("busy_pct".into(), json!((pct * 10.0).round() / 10.0));
            let at = match &step {
                Some((index, label)) => {
                    evidence.insert("step".into(), json!(index));
                    format!(" at the knee (step {label})")
                }
                None => " over the run".to_string(),
            };
            let shared = load_on_machine_of(s, host, &load_hosts);
            evidence.insert("load_on_same_host".into(), json!(shared));
            out.push(
                Verdict::new(
                    VerdictId::TargetBound,
                    format!(
                        "target {host}: {resource} was {} busy{at}: {}",
                        format::pct(pct.min(100.0) / 100.0),
                        match shared {
                            Some(true) => "the limit was this machine's (ioscope's workers ran on it too)",
                            Some(false) => "the target, not the client or the link, was the limit",
                            None => {
                                "the target or ioscope's workers were the limit (whether they ran on this machine \
                                 is not known: a host's record has no machine id)"
                            }
                        }
                    ),
                )
                .with_all(evidence),
            );
        }
    }
    out
}

/// Whether a load host ran on the machine of probed host `host`: the same machine and
/// boot id in their records ([`crate::system::machine_of`]), whatever their names (four
/// agents reached by ssh under other names may all run on the probed machine). None when
/// the probed host's record or every load host's has no id (files of earlier versions).
fn load_on_machine_of(s: &Summary, host: &str, load_hosts: &BTreeSet<&str>) -> Option<bool> {
    let probed = crate::system::machine_of(s.system.get(host)?)?;
    let ids: Vec<_> = load_hosts.iter().filter_map(|h| crate::system::machine_of(s.system.get(*h)?)).collect();
    (!ids.is_empty()).then(|| ids.contains(&probed))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A results file with nothing in it but its run row.
    fn empty_results() -> Results {
        use ioscope_store::{RunInfo, Status, StoredRun};
        Results {
            path: "/tmp/r.ioscope".into(),
            schema_version: 1,
            run: StoredRun {
                info: RunInfo {
                    ioscope_version: "0.1.0-test".into(),
                    host: "client".into(),
                    pid: 42,
                    command_line: "ioscope run".into(),
                    started_unix_ms: 1_700_000_000_000,
                    planned_duration_ns: 10_000_000_000,
                    plan_json: "{}".into(),
                    workload_toml: String::new(),
                    workload_hash: String::new(),
                },
                ended_unix_ms: None,
                stored_status: Status::Completed,
                stored_detail: None,
                status: Status::Completed,
                status_detail: None,
            },
            hosts: Vec::new(),
            seconds: Vec::new(),
            steps: Vec::new(),
            probes: Vec::new(),
            target: Vec::new(),
            verification: None,
        }
    }

    /// The summary of a results file with nothing but its run row (for other modules' tests).
    pub(crate) fn empty_summary() -> Summary {
        crate::summarize(&empty_results(), std::path::Path::new("/tmp/r.ioscope"))
    }

    fn host(config: Value, bytes_per_sec: f64) -> Summary {
        let mut s = empty_summary();
        s.system.insert("client".into(), config);
        s.by_host.insert("client".into(), crate::Totals { bytes_per_sec, ..Default::default() });
        s
    }

    fn shaped(counters: Value) -> Value {
        json!({
            "route": { "to": "10.77.0.2", "nic": "eth0" },
            "nics": { "eth0": { "capacity_bits_per_sec": 100_000_000u64, "capacity_source": "tc" } },
            "nic_counters": counters,
        })
    }

    #[test]
    fn a_run_at_the_shaped_rate_is_link_bound_with_the_wire_as_evidence() {
        // 10 s moving 118 MB in: 94.4 Mbit/s against 100 Mbit/s from tc.
        let counters = json!({
            "nic": "eth0",
            "start": { "rx_bytes": 1000, "tx_bytes": 5000, "at_monotonic_ns": 1_000_000_000u64 },
            "end": { "rx_bytes": 118_001_000u64, "tx_bytes": 2_005_000, "at_monotonic_ns": 11_000_000_000u64 },
        });
        let v = link_verdicts(&host(shaped(counters), 11.5e6));
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].id, "link-bound");
        assert_eq!(v[0].evidence["nic"], "eth0");
        assert_eq!(v[0].evidence["capacity_bits_per_sec"], 100_000_000);
        assert_eq!(v[0].evidence["capacity_source"], "tc");
        assert_eq!(v[0].evidence["measured_source"], "nic counters");
        assert_eq!(
            (v[0].evidence["wire_bits_per_sec"].as_u64(), v[0].evidence["workload_bits_per_sec"].as_u64()),
            (Some(94_400_000), Some(92_000_000))
        );
        assert_eq!(v[0].evidence["measured_bits_per_sec"], 94_400_000);
        assert_eq!(v[0].evidence["share_pct"], 94.4);
        assert!(v[0].message.contains("eth0"), "{}", v[0].message);
    }

    #[test]
    fn a_run_well_below_the_capacity_or_without_a_route_is_not_link_bound() {
        assert!(link_verdicts(&host(shaped(Value::Null), 5e6)).is_empty());
        // Without counters, the workload's bytes decide: 95% of 100 Mbit/s.
        let v = link_verdicts(&host(shaped(Value::Null), 11.9e6));
        assert_eq!(v[0].evidence["measured_source"], "workload");
        // Far above the link: the bytes never crossed it (a cache), not link-bound.
        assert!(link_verdicts(&host(shaped(Value::Null), 50e6)).is_empty());
        let local = json!({ "route": null, "nics": { "eth0": { "capacity_bits_per_sec": 1 } } });
        assert!(link_verdicts(&host(local, 1e9)).is_empty());
    }

    #[test]
    fn a_saturated_target_disk_over_a_run_without_steps_is_target_bound() {
        let mut s = empty_summary();
        let mut t = TargetSummary { cpus: 2, ..Default::default() };
        t.cpu_percent = Some(crate::MeanMax { mean: 40.0, max: 60.0 });
        t.disks.insert(
            "loop3".into(),
            crate::DiskSummary { util_percent: Some(crate::MeanMax { mean: 97.0, max: 100.0 }), ..Default::default() },
        );
        s.target.insert("server".into(), t);
        let v = target_verdicts(&s, &empty_results());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].id, "target-bound");
        assert_eq!(v[0].evidence["resource"], "disk loop3");
        assert_eq!(v[0].evidence["busy_pct"], 97.0);
        // CPUs at 20% of two: not saturated, no verdict for them.
        assert!(v.iter().all(|x| x.evidence["resource"] != "cpu"));
        s.target.clear();
        assert!(target_verdicts(&s, &empty_results()).is_empty());
    }

    #[test]
    fn whether_the_load_ran_on_the_probed_machine_comes_from_machine_ids_never_from_names() {
        let mut s = empty_summary();
        let id = |m: &str, b: &str| json!({ "machine_id": m, "boot_id": b });
        s.system.insert("vm".into(), id("aa11", "b-1"));
        // Four agents reached under other names, all on the probed machine.
        for c in ["c1", "c2", "c3", "c4"] {
            s.system.insert(c.into(), id("aa11", "b-1"));
        }
        let agents: BTreeSet<&str> = ["c1", "c2", "c3", "c4"].into();
        assert_eq!(load_on_machine_of(&s, "vm", &agents), Some(true));
        // Other machines, one of them named as the probed host's name would suggest.
        for c in ["c1", "c2", "c3", "c4"] {
            s.system.insert(c.into(), id("cc22", "b-2"));
        }
        s.system.insert("vm-client".into(), id("dd33", "b-3"));
        let mut others = agents.clone();
        others.insert("vm-client");
        assert_eq!(load_on_machine_of(&s, "vm", &others), Some(false));
        // The same machine after a reboot is another boot: the run did not share it.
        s.system.insert("c1".into(), id("aa11", "b-9"));
        assert_eq!(load_on_machine_of(&s, "vm", &agents), Some(false));
        // A name alone says nothing: a record without ids is unknown, not "same host".
        s.system.insert("vm".into(), json!({ "hostname": "vm" }));
        let named: BTreeSet<&str> = ["vm"].into();
        assert_eq!(load_on_machine_of(&s, "vm", &named), None);
    }

    #[test]
    fn with_steps_the_disk_is_judged_at_the_knee_not_over_the_run() {
        use ioscope_metrics::stat::{Dim, StatId};
        use ioscope_store::{StoredTarget, TargetSample};
        // Six seconds, two per step; the disk 30%, 95% then 100% busy.
        let busy_ns = [300_000_000u64, 300_000_000, 950_000_000, 950_000_000, 1_000_000_000, 1_000_000_000];
        let mut r = empty_results();
        let series = |id: StatId, labels: Vec<(Dim, String)>, value: &dyn Fn(usize) -> u64| StoredTarget {
            stat: ioscope_metrics::stat::stat(id),
            host: "server".into(),
            labels,
            samples: (0..6u32)
                .map(|second| TargetSample {
                    second,
                    interval_ns: 1_000_000_000,
                    value: ioscope_metrics::TargetValue::Count(value(second as usize)),
                })
                .collect(),
        };
        r.target.push(series(StatId::DiskBusy, vec![(Dim::Disk, "sdb".into())], &|i| busy_ns[i]));
        let reads = vec![(Dim::Disk, "sdb".into()), (Dim::Op, "read".into())];
        r.target.push(series(StatId::DiskOps, reads, &|_| 1000));
        let mut s = empty_summary();
        s.target = crate::target::target_summaries(&r);
        s.samples = (0..6u32)
            .map(|second| crate::Sample {
                second,
                step: second / 2,
                warmup: false,
                interval_s: 1.0,
                ops: 1,
                iops: 1.0,
                bytes_per_sec: 0.0,
                errors: 0,
                latency_p50_ns: None,
                latency_p99_ns: None,
                latency_max_ns: None,
            })
            .collect();
        s.steps = (0..3u32)
            .map(|index| crate::StepSummary {
                index,
                repeat: 0,
                label: format!("threads={}", index + 1),
                threads: Some(index + 1),
                rate_iops: None,
                seconds: 2,
                measured: Default::default(),
            })
            .collect();
        let knee =
            |step: u32| Some(crate::Knee { step, label: format!("threads={}", step + 1), reason: String::new() });
        s.knee = knee(1);
        let v = target_verdicts(&s, &r);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].evidence["resource"], "disk sdb");
        assert_eq!(v[0].evidence["busy_pct"], 95.0);
        assert_eq!(v[0].evidence["step"], 1);
        assert!(v[0].message.contains("at the knee (step threads=2)"), "{}", v[0].message);
        // At a knee where the disk was 30% busy, the later saturation is not the knee's.
        s.knee = knee(0);
        assert!(target_verdicts(&s, &r).is_empty());
        s.knee = None;
        assert!(target_verdicts(&s, &r).is_empty(), "steps without a knee");
    }
}
