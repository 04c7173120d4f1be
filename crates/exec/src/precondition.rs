//! `precondition = "2x sequential write"`: before the run is measured, one thread per file
//! writes the working set whole N times in sequential writes, as SNIA's PTS preconditions an
//! SSD before steady state. It goes through the measured core (the same engine, depth and
//! `direct`), but its seconds are tallied into the host's configuration, not the run's.

use crate::run::{measure, Measure, Sink};
use ioscope_metrics::Snapshot;
use ioscope_store::{ProbeRow, Status};
use ioscope_workload::{Access, BlockSize, FileIo, Operation, Plan, Precondition, Steps, VerifyMode};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// The seconds of a precondition, tallied.
#[derive(Default)]
struct Tally {
    /// Bytes written in each second.
    bytes_per_second: Vec<u64>,
    ops: u64,
    bytes: u64,
    errors: Vec<(String, u64)>,
    measured_ns: u64,
}

impl Sink for Tally {
    type Error = std::convert::Infallible;
    fn started(&mut self, _: u64, _: Option<&str>) -> Result<(), Self::Error> {
        Ok(())
    }
    fn step_rate(&mut self, _: u32, _: u64) -> Result<(), Self::Error> {
        Ok(())
    }
    fn probe(&mut self, _: &ProbeRow) -> Result<(), Self::Error> {
        Ok(())
    }
    fn second(&mut self, snap: &Snapshot) -> Result<(), Self::Error> {
        let t = snap.total();
        self.bytes_per_second.push(t.bytes);
        (self.ops, self.bytes) = (self.ops + t.ops, self.bytes + t.bytes);
        self.measured_ns += snap.interval_ns;
        for o in &snap.ops {
            ioscope_metrics::snapshot::merge_kinds(&mut self.errors, &o.data.errors_by_kind);
        }
        Ok(())
    }
}

/// The block of a precondition's writes over files of `file_size` bytes: 128 KiB, halved
/// until it divides the file size (a whole pass then covers every byte), at least 512.
pub fn block_bytes(p: &Precondition, file_size: u64) -> u64 {
    let mut bs = p.bs_bytes.max(512);
    while bs > 512 && (file_size % bs != 0 || bs > file_size) {
        bs /= 2;
    }
    bs
}

/// The plan of the precondition's writes: one sequential writer per file, at the run's
/// engine, depth and `direct`, until each has written its file `passes` times over.
fn plan_of(plan: &Plan, p: &Precondition) -> Option<Plan> {
    let mut w = plan.workloads.first()?.clone();
    w.name = String::new();
    w.operation = Operation::Write;
    w.read_pct = 0;
    w.block_sizes = vec![BlockSize { bytes: block_bytes(p, plan.file_size_bytes()), weight: 1 }];
    w.fileio = FileIo::Sequential;
    w.threads = plan.files.max(1);
    (w.skew_pct, w.pattern, w.rate_iops, w.iodepth, w.sync, w.direct) = (None, None, None, None, None, None);
    w.access = Access::default();
    w.content = plan.content;
    let mut pre = plan.clone();
    pre.workloads = vec![w];
    pre.steps = Steps::default();
    pre.duration = Duration::from_secs(ioscope_workload::AMOUNT_MAX_DURATION_S);
    pre.warmup = Duration::ZERO;
    pre.rate_iops = None;
    pre.amount = Default::default();
    pre.precondition = None;
    (pre.until_steady_s, pre.until_ci, pre.repeat, pre.warmup_auto) = (None, None, None, false);
    pre.probes.clear();
    pre.checks.clear();
    pre.verify = VerifyMode::Off;
    Some(pre)
}

/// Writes the working set `p.passes` times; what it did, as the host's configuration
/// records it (`precondition`), or why it failed.
pub fn run(
    plan: &Plan,
    p: &Precondition,
    files: &[PathBuf],
    interrupt: &AtomicBool,
) -> Result<serde_json::Value, String> {
    let pre = plan_of(plan, p).ok_or("the plan has no workload")?;
    let file_size = plan.file_size_bytes();
    let bs = block_bytes(p, file_size);
    let per_file = file_size / bs * bs;
    let mut tally = Tally::default();
    let mut quiet = |_: &crate::run::Progress| {};
    let m = measure(
        &pre,
        files,
        &mut tally,
        Measure {
            host: crate::host::hostname(),
            interrupt,
            on_second: &mut quiet,
            dataset: None,
            start_at_ns: None,
            whole_seconds_after_ns: None,
            verifier: None,
            worker_budget_bytes: Some(per_file.saturating_mul(u64::from(p.passes))),
        },
    );
    let seconds = tally.measured_ns as f64 / 1e9;
    let record = serde_json::json!({
        "passes": p.passes,
        "bs_bytes": bs,
        "planned_bytes": per_file.saturating_mul(u64::from(p.passes)).saturating_mul(files.len() as u64),
        "bytes": tally.bytes,
        "ops": tally.ops,
        "seconds": seconds,
        "mb_per_s": if seconds > 0.0 { tally.bytes as f64 / seconds / 1e6 } else { 0.0 },
        "mb_per_s_each_second": tally.bytes_per_second.iter().map(|b| *b as f64 / 1e6).collect::<Vec<_>>(),
        "errors_by_kind": tally.errors.iter().map(|(k, n)| serde_json::json!({"kind": k, "count": n})).collect::<Vec<_>>(),
        "status": m.status.as_str(),
    });
    let errors: u64 = tally.errors.iter().map(|(_, n)| n).sum();
    match m.status {
        Status::Completed if errors == 0 => Ok(record),
        Status::Completed => Err(format!(
            "{errors} write(s) failed ({}); first {}",
            tally.errors.iter().map(|(k, n)| format!("{k}: {n}")).collect::<Vec<_>>().join(", "),
            m.first_errors.first().map_or("", String::as_str)
        )),
        _ => Err(m.detail.unwrap_or_else(|| m.status.as_str().to_string())),
    }
}
