//! The results file: one SQLite database per run, readable with the sqlite3 CLI.
//!
//! Crash safety is the point. [`Writer`] commits one transaction per second in WAL mode
//! with `synchronous=NORMAL`, so a run killed with SIGKILL leaves a file that opens and
//! holds every finished second. [`Writer::finish`] records the final status, checkpoints
//! and switches back to `journal_mode=DELETE` so that one self-contained file remains.
//!
//! [`open`] reads a file back (read-only, also while a run is still writing it or after
//! it was killed) into memory and works out the effective status: a file whose run row
//! still says `running` but whose process is gone was interrupted.
//!
//! Series are written and read by the statistics registry ([`ioscope_metrics::STATS`]):
//! a statistic's entry says its stored name, unit and kind, and whether it is also kept
//! per worker, per file and per kind of failure.
//!
//! The schema is in [`schema`]; `PRAGMA application_id` is [`APPLICATION_ID`] and
//! `PRAGMA user_version` is [`SCHEMA_VERSION`].

pub mod check;
mod liveness;
mod printable;
mod read;
pub mod schema;
mod write;

pub use check::MAX_GAP_SECONDS;
pub use ioscope_metrics::{Op, Snapshot};
pub use printable::printable;
pub use read::{open, refresh, sidecar};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use write::{check_new_path, mark_warmup, Finished, Writer};

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What is known about a run when it starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInfo {
    pub ioscope_version: String,
    /// The host that ran (or coordinated) the run.
    pub host: String,
    /// Process id of the ioscope process writing the file.
    pub pid: u32,
    pub command_line: String,
    pub started_unix_ms: i64,
    pub planned_duration_ns: u64,
    /// The validated plan as JSON (`ioscope_workload::Plan`).
    pub plan_json: String,
    /// The workload as given (TOML), for the record.
    pub workload_toml: String,
    pub workload_hash: String,
}

/// One step of a run, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRow {
    pub index: u32,
    /// The run of the plan's steps it belongs to (`--repeat`; 0 for the first, and for
    /// files before version 7).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeat: u32,
    /// What sets the step apart ("threads=4 rate=50%"); empty for a plain run.
    pub label: String,
    /// Threads of every workload; None = each workload its own.
    pub threads: Option<u32>,
    /// Rate asked in I/Os per second; None = max (or a curve step not yet resolved).
    pub rate_iops: Option<u64>,
    /// A curve step: its percentage of the max rate.
    pub curve_pct: Option<u8>,
    pub start_second: u32,
    pub warmup_ns: u64,
    pub duration_ns: u64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One start of a probe command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeRow {
    pub name: String,
    pub command: String,
    /// When it was started, from the start of the run.
    pub at_ns: u64,
    pub duration_ns: u64,
    /// None when it was killed by a signal or could not start.
    pub exit_code: Option<i32>,
    /// Why it has no exit code, or what it printed last on error.
    pub detail: Option<String>,
}

/// How a run ended (or that it has not).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    Completed,
    Interrupted,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status string that is none of `running`, `completed`, `interrupted`, `failed`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown run status {0:?} (expected running, completed, interrupted or failed)")]
pub struct UnknownStatus(pub String);

impl std::str::FromStr for Status {
    type Err = UnknownStatus;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "running" => Ok(Status::Running),
            "completed" => Ok(Status::Completed),
            "interrupted" => Ok(Status::Interrupted),
            "failed" => Ok(Status::Failed),
            _ => Err(UnknownStatus(s.to_string())),
        }
    }
}

/// The run row as read back, with both the stored and the effective status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRun {
    pub info: RunInfo,
    pub ended_unix_ms: Option<i64>,
    /// Status as written in the file (`running` after a kill).
    pub stored_status: Status,
    pub stored_detail: Option<String>,
    /// Effective status: `Interrupted` when the file says `running` but the run's
    /// process is gone (or ran on another host).
    pub status: Status,
    pub status_detail: Option<String>,
}

/// Data validation of one host's run (`--verify`): table `verify_run`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VerifyRun {
    pub host: String,
    /// The run id every header of the run carries, in hex.
    pub run_id: String,
    /// Bytes each header and checksum cover.
    pub block_len: u32,
    /// Blocks stamped with a header, and the time spent stamping them.
    pub stamped_blocks: u64,
    pub stamp_ns: u64,
    /// Every mismatch found (the `verify_mismatch` table keeps the first ones).
    pub mismatches: u64,
}

/// One block that failed its check: table `verify_mismatch`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MismatchRow {
    pub host: String,
    /// The run's second the read completed in.
    pub second: u32,
    /// The file's index in the working set, and its path.
    pub file: u32,
    pub path: String,
    pub offset: u64,
    /// corrupt, misplaced, stale or lost.
    pub kind: String,
    /// The generations the block could hold ("4" or "4..6"; "0" for nothing written yet).
    pub expected_generation: String,
    /// The header found, as JSON (None: no header could be read).
    pub found_header_json: Option<String>,
}

/// What verification found (absent for a run without `--verify`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verification {
    pub runs: Vec<VerifyRun>,
    pub mismatches: Vec<MismatchRow>,
}

/// Everything in a results file, in memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Results {
    pub path: PathBuf,
    pub schema_version: i32,
    pub run: StoredRun,
    /// Hosts and their configuration, by name.
    pub hosts: Vec<(String, serde_json::Value)>,
    /// Every stored second of every host, ordered by (second, host).
    pub seconds: Vec<Snapshot>,
    pub steps: Vec<StepRow>,
    pub probes: Vec<ProbeRow>,
    /// The target side's series (`--probe`, `ioscope probe`), each with its samples.
    pub target: Vec<StoredTarget>,
    /// Data validation (`--verify`); None for a run without it.
    pub verification: Option<Verification>,
}

/// A target series as stored: a statistic of the target side, its host and dimension
/// values, and its samples by second.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTarget {
    pub stat: &'static ioscope_metrics::Stat,
    pub host: String,
    /// Dimension values besides the host (`op` only when the series has one).
    pub labels: Vec<(ioscope_metrics::stat::Dim, String)>,
    /// Ascending by second.
    pub samples: Vec<TargetSample>,
}

impl StoredTarget {
    /// The value of dimension `dim` ("" when the series has none).
    pub fn label(&self, dim: ioscope_metrics::stat::Dim) -> &str {
        if dim == ioscope_metrics::stat::Dim::Host {
            return &self.host;
        }
        self.labels.iter().find(|(d, _)| *d == dim).map_or("", |(_, v)| v.as_str())
    }
}

/// One second of a target series: the time its counters were sampled over and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSample {
    pub second: u32,
    pub interval_ns: u64,
    pub value: ioscope_metrics::TargetValue,
}

impl Results {
    /// Number of distinct seconds stored (over all hosts).
    pub fn seconds_kept(&self) -> usize {
        let mut n = 0;
        let mut last = None;
        for s in &self.seconds {
            if last != Some(s.second) {
                n += 1;
                last = Some(s.second);
            }
        }
        n
    }

    /// Operations present in the run, in order of first appearance.
    pub fn ops(&self) -> Vec<Op> {
        let mut ops: Vec<Op> = Vec::new();
        for s in &self.seconds {
            for o in &s.ops {
                if !ops.contains(&o.op) {
                    ops.push(o.op);
                }
            }
        }
        ops
    }
}

/// Errors of the results file; every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: already exists; ioscope never overwrites a results file (choose another path or remove it)", .path.display())]
    Exists { path: PathBuf },
    #[error("{}: a leftover {} exists from an earlier SQLite session; remove it or choose another path", .path.display(), .leftover.display())]
    Leftover { path: PathBuf, leftover: PathBuf },
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: {source}", .path.display())]
    Sqlite { path: PathBuf, source: rusqlite::Error },
    #[error("{}: no space left on the file system (ENOSPC; SQLite: {source})", .path.display())]
    Full { path: PathBuf, source: rusqlite::Error },
    #[error("{}: not an ioscope results file ({detail})", .path.display())]
    NotResults { path: PathBuf, detail: String },
    #[error("{}: results file schema version {found} is newer than this ioscope reads ({supported}); use a newer ioscope", .path.display())]
    Version { path: PathBuf, found: i32, supported: i32 },
    #[error("{}: damaged results file: {detail}", .path.display())]
    Corrupt { path: PathBuf, detail: String },
}

impl StoreError {
    /// Whether the file refused the data written (a constraint, such as a second stored
    /// twice), rather than failed: the data's fault, not the file's.
    pub fn is_refused_data(&self) -> bool {
        matches!(self, StoreError::Sqlite { source, .. }
            if source.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation))
    }

    pub(crate) fn sqlite(path: &Path) -> impl FnOnce(rusqlite::Error) -> StoreError + '_ {
        move |source| match source.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DiskFull) => StoreError::Full { path: path.to_path_buf(), source },
            // "database disk image is malformed" alone does not say it is the file that is bad.
            Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
                StoreError::Corrupt { path: path.to_path_buf(), detail: format!("SQLite: {source}") }
            }
            _ => StoreError::Sqlite { path: path.to_path_buf(), source },
        }
    }
}

/// This machine's host name (the kernel's node name), if it can be read.
pub fn hostname() -> Option<String> {
    for f in ["/proc/sys/kernel/hostname", "/etc/hostname"] {
        if let Ok(s) = std::fs::read_to_string(f) {
            let s = s.trim();
            if !s.is_empty() {
                return Some(s.to_string());
            }
        }
    }
    std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty())
}

#[cfg(test)]
mod damage_tests;
#[cfg(test)]
mod tests;
