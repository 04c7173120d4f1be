//! The page cache at the start of a run (`cache`, docs/cache.md): what each host's
//! configuration records was done (`system.<host>.cache`: files synced and dropped, bytes
//! read, time taken, bytes still cached after), summed for the summary, and the evidence
//! the `working-set-cached` verdict weighs: a working set that fits in memory is not
//! "likely from the cache" when the run started cold and its latency says a device
//! answered.

use crate::client::{DEVICE_BYTES_PER_NS, READ_FLOOR_NS};
use crate::format;
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
    /// The plan's choice: cold, warm or as-is.
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
    /// Every file was synced and dropped, and (where measured) almost nothing stayed cached.
    pub fn started_cold(&self) -> bool {
        let resident_ok = self
            .resident_bytes_after
            .is_none_or(|r| self.bytes == 0 || (r as f64) <= self.bytes as f64 * COLD_RESIDENT_SHARE);
        self.recorded && self.mode == "cold" && self.files > 0 && self.dropped == self.files && resident_ok
    }
}

/// The cache step from the hosts' configurations; None for a results file with no plan.
pub(crate) fn summarize(system: &BTreeMap<String, serde_json::Value>, plan: &serde_json::Value) -> Option<CacheSummary> {
    let mode = plan.get("cache").and_then(|m| m.as_str()).unwrap_or("as-is").to_string();
    if plan.as_object().is_none() {
        return None;
    }
    let mut s = CacheSummary { mode, ..CacheSummary::default() };
    let mut resident: Option<u64> = None;
    for (host, config) in system {
        let c = &config["cache"];
        if !c.is_object() {
            continue;
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
/// page cache keeps its claim unless the run started cold (every file synced and dropped)
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
        format!(" (the run started cold, yet {})", kept.join(" and "))
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
