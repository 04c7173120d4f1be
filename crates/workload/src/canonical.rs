//! The canonical TOML of a plan, and its hash.
//!
//! Every key, flat, in a fixed order, with exact values and comments giving units; it reads
//! back through [`crate::build_plan`] to an equal [`Plan`]. The SHA-256 of this text is the
//! workload hash stored with results, so two runs of the same workload share a hash however the
//! workload was written (flags, file, sizes as "4k" or 4096).

use crate::plan::{Plan, Rw, SyncMode};
use crate::units::{duration_literal, format_size, size_literal};
use sha2::{Digest, Sha256};

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The canonical TOML for a plan (every key, flat, in a fixed order, commented units).
///
/// `rwmix_read` is written only for `rw = "randrw"` (elsewhere it is implied by `rw`);
/// `dir` and `rate_iops` appear as comments when unset.
pub fn to_toml(plan: &Plan) -> String {
    // (line, trailing comment)
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut kv = |k: &str, v: String, comment: &str| lines.push((format!("{k} = {v}"), comment.to_string()));

    kv("engine", toml_string(plan.engine.name()), "posix (pread/pwrite) | uring (io_uring) | null (no I/O)");
    kv("rw", toml_string(plan.rw.name()), "read | write | randread | randwrite | randrw");
    if plan.rw == Rw::RandRw {
        kv("rwmix_read", plan.read_pct.to_string(), "% of I/Os that are reads");
    }
    let bs = match plan.block_sizes.as_slice() {
        [one] if one.weight == 1 => size_literal(one.bytes),
        list => list.iter().map(|b| format!("{}:{}", size_literal(b.bytes), b.weight)).collect::<Vec<_>>().join(","),
    };
    kv("bs", toml_string(&bs), "block size(s), binary (4k = 4096 B); SIZE:WEIGHT list for a mix");
    let size_note = format!("working set over all files = {}", format_size(plan.size_bytes));
    kv("size", toml_string(&size_literal(plan.size_bytes)), &size_note);
    kv("files", plan.files.to_string(), "files the working set is split over");
    kv("threads", plan.threads.to_string(), "worker threads");
    kv("iodepth", plan.iodepth.to_string(), "I/Os in flight per thread");
    if plan.sqpoll {
        kv("sqpoll", "true".into(), "io_uring submission-queue polling");
    }
    let secs = format!("{:.3}", plan.duration.as_secs_f64());
    let secs = format!("run time = {} s", secs.trim_end_matches('0').trim_end_matches('.'));
    kv("duration", toml_string(&duration_literal(plan.duration)), &secs);
    if plan.dir.as_os_str().is_empty() {
        kv("# dir", "(none)".into(), "engine null does no I/O");
    } else {
        kv("dir", toml_string(&plan.dir.to_string_lossy()), "where the files live");
    }
    kv("direct", plan.direct.to_string(), "O_DIRECT: bypass the page cache");
    let sync = match plan.sync {
        SyncMode::None => "none",
        SyncMode::Fsync => "fsync",
        SyncMode::Fdatasync => "fdatasync",
        SyncMode::Dsync => "dsync",
    };
    kv("sync", toml_string(sync), "after each write: none | fsync | fdatasync | dsync");
    match plan.rate_iops {
        Some(r) => kv("rate_iops", r.to_string(), "I/Os per second over all threads"),
        None => kv("# rate_iops", "(none)".into(), "closed loop: as fast as possible"),
    }
    kv("force", plan.force.to_string(), "may write into files ioscope did not create");
    kv("cleanup", plan.cleanup.to_string(), "remove created files after the run");

    let mut out = String::from("# ioscope workload (canonical form)\n");
    let width = lines.iter().map(|(l, _)| l.len()).max().unwrap_or(0).min(32);
    for (line, comment) in &lines {
        out.push_str(&format!("{line:<width$}  # {comment}\n"));
    }
    out
}

/// SHA-256 (lowercase hex) of [`to_toml`]: the workload hash stored with results.
pub fn plan_hash(plan: &Plan) -> String {
    let digest = Sha256::digest(to_toml(plan).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
