//! The page cache at the start of a run (`cache`, docs/cache.md): what each host's
//! configuration records was done (`system.<host>.cache`: files synced and dropped, bytes
//! read, time taken, bytes still cached after), summed for the summary, and the evidence
//! the `working-set-cached` verdict weighs: a working set that fits in memory is not
//! "likely from the cache" when the run started cold and its latency says a device
//! answered.

use crate::format;
use crate::stats::{DEVICE_BYTES_PER_NS, READ_FLOOR_NS};
use crate::target::TargetSummary;
use crate::verdict::Verdict;
use crate::Summary;
use ioscope_metrics::stat::StatId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A cold start: at most this share of the working set was still in the page cache after
/// the pages were dropped (mincore), where that was measured.
pub const COLD_RESIDENT_SHARE: f64 = 0.01;
/// The target's disks served the client's reads when they completed at least this share
/// of them (the rest may be readahead merged or its cache: most were not from memory).
pub const TARGET_DISK_SHARE: f64 = 0.5;

/// The cache step of a run, over its hosts (`cache` in the summary's JSON).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheSummary {
    /// The choice as recorded (cold, warm or as-is); as-is when not recorded.
    pub mode: String,
    /// Whether the results record what was done: files written before the step existed
    /// do not (ioscope then did nothing to the cache: as-is).
    pub recorded: bool,
    pub files: u64,
    /// Files synced and their pages dropped (cold).
    pub dropped: u64,
    /// Bytes read through the page cache (warm).
    pub bytes_read: u64,
    /// The files' size.
    pub bytes: u64,
    /// Bytes of the files in the page cache after the step, over the hosts that measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resident_bytes_after: Option<u64>,
    /// The longest host's time for the step, in seconds (preparation: not measured).
    pub seconds: f64,
    /// Each host's line, as the summary text shows it.
    pub by_host: BTreeMap<String, String>,
}

impl CacheSummary {
    /// The run started with (almost) none of its files in the page cache: measured
    /// (mincore: at most [`COLD_RESIDENT_SHARE`] of their bytes), or, where it could not
    /// be measured (a block device), every file synced and dropped.
    pub fn started_cold(&self) -> bool {
        if !self.recorded || self.files == 0 {
            return false;
        }
        match self.resident_bytes_after {
            Some(r) => (r as f64) <= self.bytes as f64 * COLD_RESIDENT_SHARE,
            None => self.mode == "cold" && self.dropped == self.files,
        }
    }
}

/// The cache step from the hosts' configurations; None for a results file with no plan.
pub(crate) fn summarize(
    system: &BTreeMap<String, serde_json::Value>,
    plan: &serde_json::Value,
) -> Option<CacheSummary> {
    plan.as_object()?;
    // Without a record the run did nothing to the cache, whatever its plan says.
    let mut s = CacheSummary { mode: "as-is".to_string(), ..CacheSummary::default() };
    let mut resident: Option<u64> = None;
    for (host, config) in system {
        let c = &config["cache"];
        if !c.is_object() {
            continue;
        }
        if !s.recorded {
            s.mode = c["mode"].as_str().unwrap_or("as-is").chars().take(16).collect();
        }
        s.recorded = true;
        let n = |k: &str| c[k].as_u64().unwrap_or(0);
        s.files = s.files.saturating_add(n("files"));
        s.dropped = s.dropped.saturating_add(n("dropped"));
        s.bytes_read = s.bytes_read.saturating_add(n("bytes_read"));
        s.bytes = s.bytes.saturating_add(n("bytes"));
        if let Some(r) = c["resident_bytes_after"].as_u64() {
            resident = Some(resident.unwrap_or(0).saturating_add(r));
        }
        s.seconds = s.seconds.max(n("ns") as f64 / 1e9);
        s.by_host.insert(host.clone(), line(c));
    }
    s.resident_bytes_after = resident;
    Some(s)
}

/// One host's record as a line: "cold: 1 file synced and its pages dropped in 0.12 s, …".
fn line(c: &serde_json::Value) -> String {
    let mode = c["mode"].as_str().unwrap_or("?");
    let n = |k: &str| c[k].as_u64().unwrap_or(0);
    let files = n("files");
    let secs = n("ns") as f64 / 1e9;
    let s = |k: u64| if k == 1 { "" } else { "s" };
    let mut out = match mode {
        "cold" if files > 0 => {
            let d = n("dropped");
            format!("cold, {d} of {files} file{} synced and dropped in {secs:.2} s", s(files))
        }
        "warm" if files > 0 => {
            format!("warm, {files} file{} read once ({}) in {secs:.2} s", s(files), format::bytes(n("bytes_read")))
        }
        "as-is" => "as-is, nothing done".to_string(),
        m => format!("{m}, nothing done"),
    };
    if let Some(r) = c["resident_bytes_after"].as_u64() {
        out.push_str(&format!("; {} of {} cached at the start", format::bytes(r), format::bytes(n("bytes"))));
    }
    if let Some(note) = c["note"].as_str() {
        // An agent's text: bounded, as every string of a results file is data.
        let note: String = note.chars().take(500).collect();
        out.push_str(&format!(" ({note})"));
    }
    out
}

/// The summary's lines: `cache    cold, 1 of 1 file synced and dropped in 0.12 s; …`.
pub(crate) fn text_lines(s: &Summary) -> Vec<String> {
    let Some(c) = &s.cache else { return Vec::new() };
    if !c.recorded {
        return vec!["cache    as-is (not recorded: this results file predates the cache step)".to_string()];
    }
    let several = c.by_host.len() > 1;
    c.by_host
        .iter()
        .map(|(h, l)| if several { format!("cache    {h}: {l}") } else { format!("cache    {l}") })
        .collect()
}

/// What the start and the latency say of one direction's claim of `working-set-cached`.
pub(crate) struct Evidence {
    /// The reads' and the writes' claims still stand.
    pub reads: bool,
    pub writes: bool,
    /// Said after the claim: the start and the figure that kept it.
    pub why: String,
    mode: String,
    figures: Vec<(String, u64)>,
}

impl Evidence {
    /// The verdict with the cache evidence added.
    pub fn add(&self, v: Verdict) -> Verdict {
        let v = v.with("cache", self.mode.as_str());
        self.figures.iter().fold(v, |v, (k, n)| v.with(k, *n))
    }
}

/// `working-set-cached` (client side): a direction (reads, writes) whose I/O can be in the
/// page cache keeps its claim unless the run started cold ([`CacheSummary::started_cold`])
/// and that direction's p50 latency is at least the floor no device beats (10 µs plus the
/// mean size at 8 GB/s, the `client-cache` floor; a page-cache hit of 4 KiB takes 1 to 3
/// µs): then most of it waited for the device, and "likely from the cache" is not what
/// the evidence says. A start that left the working set cached (as-is after preparation,
/// warm) keeps the claim whatever the latency: a slow write into cached pages is still
/// absorbed by the cache.
pub(crate) fn working_set_evidence(s: &Summary, reads: bool, writes: bool) -> Evidence {
    let cache = s.cache.clone().unwrap_or_default();
    let mode = if cache.recorded { cache.mode.clone() } else { "as-is (not recorded)".to_string() };
    let mut e = Evidence { reads, writes, why: String::new(), mode, figures: Vec::new() };
    let cold = cache.started_cold();
    let mut kept = Vec::new();
    for (op, claimed) in [("read", reads), ("write", writes)] {
        if !claimed {
            continue;
        }
        let Some(o) = s.ops.get(op) else { continue };
        let Some(p50) = o.percentiles(StatId::Latency).map(|d| d.p50) else { continue };
        let mean_size = o.bytes.checked_div(o.ops).unwrap_or(0);
        let floor = READ_FLOOR_NS.saturating_add(mean_size / DEVICE_BYTES_PER_NS);
        e.figures.push((format!("{op}_latency_p50_ns"), p50));
        e.figures.push((format!("{op}_floor_ns"), floor));
        if cold && p50 >= floor {
            match op {
                "read" => e.reads = false,
                _ => e.writes = false,
            }
        } else if cold {
            kept.push(format!("{op} p50 {} is below the {} no device beats", format::ns(p50), format::ns(floor)));
        }
    }
    if let Some(r) = cache.resident_bytes_after {
        e.figures.push(("resident_bytes_at_start".to_string(), r));
    }
    e.why = if cold {
        format!(" (the run started {}, with its pages out of the cache, yet {})", cache.mode, kept.join(" and "))
    } else if cache.recorded {
        let cached = cache.resident_bytes_after.map_or(String::new(), |r| {
            format!(", {} of its {} in the page cache", format::bytes(r), format::bytes(cache.bytes))
        });
        format!(" (the run started {}{cached})", cache.mode)
    } else {
        String::new()
    };
    e
}

/// `working-set-cached` (target side) is not said of a target whose disks completed at
/// least half as many reads as the client made: they, not its memory, served them.
pub(crate) fn target_disks_served(t: &TargetSummary, client_reads: u64) -> bool {
    let disk_reads: u64 = t.disks.values().map(|d| d.reads).fold(0, u64::saturating_add);
    !t.disks.is_empty() && client_reads > 0 && disk_reads as f64 >= client_reads as f64 * TARGET_DISK_SHARE
}

#[cfg(test)]
mod tests {
    use super::*;
    use ioscope_metrics::{Counts, Histogram, Op, OpInterval, OpSeries, Snapshot, WorkerCounts};
    use ioscope_store::{Results, RunInfo, Status, StoredRun};
    use std::path::Path;

    const MIB_256: u64 = 256 << 20;

    /// 3 s of one 4 KiB operation (`read` or `write`) of a 256 MiB working set on a host of
    /// 24 GiB, every I/O taking `latency_ns`; its configuration records `cache` (None: a
    /// results file from before the step).
    fn run(rw: &str, latency_ns: u64, cache: Option<serde_json::Value>) -> crate::Summary {
        let text = format!("dir = '/tmp/x'\nrw = '{rw}'\nsize = '256m'\nduration = '3s'\n");
        let src = ioscope_workload::SourceFile { path: "w.toml".into(), text };
        let plan = ioscope_workload::build_plan(Some(&src), &Default::default()).unwrap();
        let op = if rw == "randread" { Op::Read } else { Op::Write };
        let hist = |v: u64| {
            let mut h = Histogram::new();
            h.record_n(v, 100_000);
            h
        };
        let data = OpInterval {
            counts: Counts { ops: 100_000, bytes: 4096 * 100_000, errors: 0 },
            errors_by_kind: Vec::new(),
            skipped: 0,
            latency_ns: hist(latency_ns),
            service_ns: hist(latency_ns),
            size_bytes: hist(4096),
            offset_bytes: hist(8192),
        };
        let mut config = serde_json::json!({"cpus": 2, "memory_bytes": 24u64 << 30});
        if let Some(c) = cache {
            config["cache"] = c;
        }
        let seconds = (0..3)
            .map(|second| Snapshot {
                second,
                interval_ns: 1_000_000_000,
                step: 0,
                warmup: false,
                host: "h1".into(),
                workers: vec![WorkerCounts { worker: 0, op, counts: data.counts }],
                files: Vec::new(),
                worker_dists: Vec::new(),
                file_dists: Vec::new(),
                not_broken_down: 0,
                ops: vec![OpSeries { workload: plan.workloads[0].name.clone(), op, data: data.clone() }],
                worker_cpu: Vec::new(),
            })
            .collect();
        let r = Results {
            path: "/tmp/r.ioscope".into(),
            schema_version: ioscope_store::SCHEMA_VERSION,
            run: StoredRun {
                info: RunInfo {
                    ioscope_version: "test".into(),
                    host: "h1".into(),
                    pid: 1,
                    command_line: "ioscope run".into(),
                    started_unix_ms: 1_700_000_000_000,
                    planned_duration_ns: 3_000_000_000,
                    plan_json: serde_json::to_string(&plan).unwrap(),
                    workload_toml: String::new(),
                    workload_hash: "h".into(),
                },
                ended_unix_ms: Some(1_700_000_003_000),
                stored_status: Status::Completed,
                stored_detail: None,
                status: Status::Completed,
                status_detail: None,
            },
            hosts: vec![("h1".into(), config)],
            seconds,
            steps: Vec::new(),
            probes: Vec::new(),
            target: Vec::new(),
            verification: None,
        };
        crate::summarize(&r, Path::new("r"))
    }

    /// What the cache step of the results records: `resident` bytes cached after it.
    fn done(mode: &str, resident: u64) -> Option<serde_json::Value> {
        let dropped = u64::from(mode == "cold");
        let read = if mode == "warm" { MIB_256 } else { 0 };
        Some(serde_json::json!({"mode": mode, "files": 1, "dropped": dropped, "bytes_read": read,
            "bytes": MIB_256, "resident_bytes_after": resident, "ns": 120_000_000u64}))
    }

    fn cached(s: &crate::Summary) -> Option<&Verdict> {
        s.verdicts.iter().find(|v| v.id == "working-set-cached")
    }

    #[test]
    fn working_set_cached_is_said_of_a_run_as_is_after_preparation_whatever_its_latency() {
        // The trap: preparation left the whole file in the cache, the run left it there.
        // Buffered 4 KiB writes into its large folios take 14 µs, reads of it 1.5 µs:
        // both were the page cache.
        for (rw, latency) in [("randwrite", 14_000), ("randread", 1_500), ("randread", 1_700_000)] {
            let s = run(rw, latency, done("as-is", MIB_256));
            let v = cached(&s).unwrap_or_else(|| panic!("{rw} {latency}: {:#?}", s.verdicts));
            assert!(
                v.message.ends_with("(the run started as-is, 256 MiB of its 256 MiB in the page cache)"),
                "{}",
                v.message
            );
            assert_eq!(v.evidence["cache"], "as-is");
            assert_eq!(v.evidence["resident_bytes_at_start"], MIB_256);
            assert_eq!(s.cache.as_ref().unwrap().mode, "as-is");
        }
        // A warm start is the same evidence.
        let s = run("randread", 1_500, done("warm", MIB_256));
        assert!(cached(&s).is_some_and(|v| v.message.contains("(the run started warm, 256 MiB")), "{:#?}", s.verdicts);
    }

    #[test]
    fn working_set_cached_is_silent_on_a_cold_run_whose_latency_says_the_device_answered() {
        // The same shape started cold: pages dropped, reads at 1.7 ms (a device) and
        // buffered writes throttled to the device at 1.7 ms.
        for rw in ["randread", "randwrite"] {
            let s = run(rw, 1_700_000, done("cold", 0));
            assert!(cached(&s).is_none(), "{rw}: {:#?}", s.verdicts);
            assert!(s.cache.as_ref().unwrap().started_cold());
        }
        // Cold, but the I/O went at memory speed (the small working set cached again, or
        // writes absorbed into fresh pages): the claim stands and names the figure and rule.
        let s = run("randwrite", 1_700, done("cold", 0));
        let v = cached(&s).unwrap_or_else(|| panic!("{:#?}", s.verdicts));
        assert!(
            v.message.ends_with(
                "(the run started cold, with its pages out of the cache, yet write p50 1.7 µs is below the 10.5 µs no device beats)"
            ),
            "{}",
            v.message
        );
        assert_eq!(v.evidence["write_latency_p50_ns"].as_u64().map(|n| n / 100), Some(17));
        assert_eq!(v.evidence["write_floor_ns"], 10_512);
        // Cold chosen but the pages stayed (tmpfs cannot drop them): not a cold start.
        let s = run("randread", 1_700_000, done("cold", MIB_256));
        assert!(cached(&s).is_some(), "{:#?}", s.verdicts);
    }

    #[test]
    fn a_targets_memory_is_not_said_to_serve_reads_its_disks_completed() {
        let with_disk_reads = |reads: u64| TargetSummary {
            disks: [("vdb".to_string(), crate::DiskSummary { reads, ..Default::default() })].into(),
            ..Default::default()
        };
        assert!(target_disks_served(&with_disk_reads(60_000), 100_000), "60% of the reads reached its disks");
        assert!(!target_disks_served(&with_disk_reads(1_000), 100_000), "1%: its memory served the rest");
        assert!(!target_disks_served(&TargetSummary::default(), 100_000), "no disk figures: not known");
    }

    #[test]
    fn a_results_file_without_the_cache_step_reads_as_as_is_and_keeps_its_verdict() {
        let s = run("randread", 1_700_000, None);
        let c = s.cache.as_ref().unwrap();
        assert!(!c.recorded && c.mode == "as-is", "{c:?}");
        assert!(cached(&s).is_some(), "{:#?}", s.verdicts);
        assert_eq!(text_lines(&s), ["cache    as-is (not recorded: this results file predates the cache step)"]);
        let s = run("randread", 1_700_000, done("cold", 0));
        assert_eq!(
            text_lines(&s),
            ["cache    cold, 1 of 1 file synced and dropped in 0.12 s; 0 B of 256 MiB cached at the start"]
        );
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["cache"]["mode"], "cold");
        assert_eq!(json["cache"]["dropped"], 1);
    }
}
