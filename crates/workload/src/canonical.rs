//! The canonical TOML of a plan, and its hash.
//!
//! Every key, flat, in a fixed order, with exact values and comments giving units; it reads
//! back through [`crate::build_plan`] to an equal [`Plan`]. The SHA-256 of this text is the
//! workload hash stored with results, so two runs of the same workload share a hash however the
//! workload was written (flags, file, sizes as "4k" or 4096).

use crate::plan::{BlockSize, DatasetFormat, FileIo, FileSelect, MaxErrors, PatternMap, Plan, StaircaseOf, SyncMode};
use crate::units::{duration_literal, format_size, size_literal};
use sha2::{Digest, Sha256};

/// A TOML basic string.
pub(crate) fn toml_string(s: &str) -> String {
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

/// A block-size list as written in a file: "4k", or "4k:60,64k:40".
fn bs_literal(list: &[BlockSize]) -> String {
    match list {
        [one] if one.weight == 1 => size_literal(one.bytes),
        list => list.iter().map(|b| format!("{}:{}", size_literal(b.bytes), b.weight)).collect::<Vec<_>>().join(","),
    }
}

/// A number as TOML: an integer when it is one.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Aligned `key = value  # comment` lines.
#[derive(Default)]
struct Lines(Vec<(String, String)>);

impl Lines {
    fn kv(&mut self, k: &str, v: String, comment: &str) {
        self.0.push((format!("{k} = {v}"), comment.to_string()));
    }
    fn write(self, out: &mut String) {
        let width = self.0.iter().map(|(l, _)| l.len()).max().unwrap_or(0).min(32);
        for (line, comment) in self.0 {
            if comment.is_empty() {
                out.push_str(&format!("{line}\n"));
            } else {
                out.push_str(&format!("{line:<width$}  # {comment}\n"));
            }
        }
    }
}

/// The canonical TOML for a plan: every key in a fixed order with commented units; the
/// workloads always as [[workload]] tables (the one-workload form included).
pub fn to_toml(plan: &Plan) -> String {
    let mut out = String::from("# ioscope workload (canonical form)\n");
    top_lines(plan).write(&mut out);
    if let Some(d) = &plan.dataset {
        dataset_table(d, &mut out);
        for f in &plan.filesets {
            fileset_table(f, &mut out);
        }
    }
    for w in &plan.workloads {
        workload_table(w, &plan.content, &mut out);
    }
    for p in &plan.probes {
        let mut l = Lines::default();
        l.kv("name", toml_string(&p.name), "");
        l.kv("command", toml_string(&p.command), "run with sh -c");
        let at: Vec<String> = p.at.iter().map(|d| toml_string(&duration_literal(*d))).collect();
        l.kv("at", format!("[{}]", at.join(", ")), "from the start of the run");
        if let Some(t) = p.timeout {
            l.kv("timeout", toml_string(&duration_literal(t)), "");
        }
        out.push_str("\n[[probe]]\n");
        l.write(&mut out);
    }
    for h in &plan.hosts {
        let mut l = Lines::default();
        l.kv("name", toml_string(&h.name), "");
        l.kv("address", toml_string(&h.kind.address()), "");
        let paths = [
            ("identity", &h.identity, "ssh private key"),
            ("dir", &h.dir, "this host's own dir"),
            ("bin", &h.bin, "ioscope on the host"),
            ("token_file", &h.token_file, "the agent's bearer token"),
            ("ca", &h.ca, "PEM to trust for the agent's TLS"),
        ];
        for (key, path, comment) in paths {
            if let Some(p) = path {
                l.kv(key, toml_string(&p.to_string_lossy()), comment);
            }
        }
        if let Some(t) = &h.target {
            l.kv("target", toml_string(&t.url), "this host's own target");
        }
        out.push_str("\n[[host]]\n");
        l.write(&mut out);
    }
    for c in &plan.checks {
        let mut l = Lines::default();
        l.kv("expr", toml_string(c), "");
        out.push_str("\n[[check]]\n");
        l.write(&mut out);
    }
    out
}

/// The top-level keys of [`to_toml`].
fn top_lines(plan: &Plan) -> Lines {
    let mut top = Lines::default();
    top.kv("engine", toml_string(plan.engine.name()), "posix (pread/pwrite) | uring (io_uring) | null (no I/O) | nfs");
    if let Some(t) = &plan.target {
        top.kv("target", toml_string(&t.url), "NFSv3 server, export and directory");
    }
    match plan.steps.for_iodepth.is_empty() {
        true => top.kv("iodepth", plan.iodepth.to_string(), "I/Os in flight per thread"),
        false => top.kv("# iodepth", "(for_iodepth)".into(), "each step sets it"),
    }
    if plan.sqpoll {
        top.kv("sqpoll", "true".into(), "io_uring submission-queue polling");
    }
    if plan.dir.as_os_str().is_empty() {
        top.kv("# dir", "(none)".into(), "no flat working set directory");
    } else {
        top.kv("dir", toml_string(&plan.dir.to_string_lossy()), "where the files live");
    }
    if plan.dataset.is_none() {
        let size_note = format!("working set over all files = {}", format_size(plan.size_bytes));
        if plan.size_default {
            // Not given: written as a comment, so that the text means what the plan does
            // (a block device target is then used whole).
            let note = format!("not given: the default, {size_note}; a block device: all of it");
            top.kv("# size", toml_string(&size_literal(plan.size_bytes)), &note);
        } else {
            top.kv("size", toml_string(&size_literal(plan.size_bytes)), &size_note);
        }
        top.kv("files", plan.files.to_string(), "files the working set is split over");
    }
    top.kv("direct", plan.direct.to_string(), "O_DIRECT: bypass the page cache");
    top.kv("sync", toml_string(sync_name(plan.sync)), "after each write: none | fsync | fdatasync | dsync");
    top.kv("cache", toml_string(plan.cache.name()), "the page cache at the start: cold | warm | as-is");
    let st = &plan.steps;
    match &st.staircase {
        Some(s) => {
            let (prefix, what) = match s.of {
                StaircaseOf::Threads => ("", "threads START-MAX+ADD/EVERY step"),
                StaircaseOf::Hosts => ("hosts:", "hosts START-MAX+ADD/EVERY step"),
            };
            let text = format!("{prefix}{}-{}+{}/{}", s.start, s.max, s.add, duration_literal(s.every));
            top.kv("staircase", toml_string(&text), what)
        }
        None => {
            let secs = format!("{:.3}", plan.duration.as_secs_f64());
            let secs = format!("each step measures {} s", secs.trim_end_matches('0').trim_end_matches('.'));
            top.kv("duration", toml_string(&duration_literal(plan.duration)), &secs);
        }
    }
    if !plan.warmup.is_zero() {
        top.kv("warmup", toml_string(&duration_literal(plan.warmup)), "before each step, not measured");
    }
    if plan.warmup_auto {
        top.kv("warmup", toml_string("auto"), "each step's seconds before it became steady, not measured");
    }
    if let Some(w) = plan.steady_window_s.filter(|_| plan.until_steady_s.is_none()) {
        let w = duration_literal(std::time::Duration::from_secs(w.into()));
        top.kv("steady_window", toml_string(&w), "the steady-state rule's window");
    }
    if let Some(w) = plan.until_steady_s {
        let w = duration_literal(std::time::Duration::from_secs(w.into()));
        top.kv("until_steady", toml_string(&w), "the run ends once steady over this window");
    }
    if let Some(b) = plan.amount.io_size_bytes {
        top.kv("io_size", toml_string(&size_literal(b)), "each workload ends once it has issued this many bytes");
    }
    if let Some(n) = plan.amount.number_ios {
        top.kv("number_ios", n.to_string(), "each workload ends once it has issued this many I/Os");
    }
    if let Some(p) = plan.amount.passes {
        top.kv("passes", p.to_string(), "each workload ends after this many passes over the working set");
    }
    if let Some(p) = &plan.precondition {
        top.kv("precondition", toml_string(&p.literal()), "written before the run, recorded, not measured");
    }
    let own_rates = plan.workloads.iter().all(|w| w.rate_iops.is_some());
    match plan.rate_iops {
        Some(r) if own_rates => top.kv("# rate_iops", r.to_string(), "the sum of the workloads' own"),
        Some(r) => top.kv("rate_iops", r.to_string(), "I/Os per second over all workloads"),
        None => top.kv("# rate_iops", "(none)".into(), "closed loop: as fast as possible"),
    }
    let ints =
        |v: &mut dyn Iterator<Item = u64>| format!("[{}]", v.map(|x| x.to_string()).collect::<Vec<_>>().join(", "));
    if !st.curve.is_empty() {
        top.kv("curve", ints(&mut st.curve.iter().map(|x| *x as u64)), "% of the max rate, after a max step");
    }
    if !st.for_threads.is_empty() {
        top.kv("for_threads", ints(&mut st.for_threads.iter().map(|x| *x as u64)), "a step per thread count");
    }
    if !st.for_iodepth.is_empty() {
        top.kv("for_iodepth", ints(&mut st.for_iodepth.iter().map(|x| *x as u64)), "a step per queue depth");
    }
    if !st.for_bs.is_empty() {
        let list: Vec<String> = st.for_bs.iter().map(|b| toml_string(&bs_literal(b))).collect();
        top.kv("for_bs", format!("[{}]", list.join(", ")), "a step per block size");
    }
    if !st.for_read_pct.is_empty() {
        top.kv("for_rwmix_read", ints(&mut st.for_read_pct.iter().map(|x| *x as u64)), "a step per read share");
    }
    top.kv("force", plan.force.to_string(), "may write into files ioscope did not create");
    top.kv("cleanup", plan.cleanup.to_string(), "remove created files after the run");
    let max_errors = match plan.max_errors {
        MaxErrors::Count(n) => n.to_string(),
        m => toml_string(&m.to_string()),
    };
    top.kv("max_errors", max_errors, "past this many failed I/Os the run ends as failed");
    if !plan.verify.is_off() {
        top.kv("verify", toml_string(plan.verify.name()), "check every block read back: fail | report");
    }
    if let Some(b) = plan.verify_block {
        top.kv("verify_block", toml_string(&size_literal(u64::from(b))), "bytes each verify header covers");
    }
    crate::content::canonical(&plan.content, &Default::default(), &mut |k, v, c| top.kv(k, v, c));
    if let Some(n) = plan.breakdown_top {
        top.kv("breakdown_top", n.to_string(), "busiest workers and files with distributions of their own");
    }
    if let Some(n) = plan.repeat {
        top.kv("repeat", n.to_string(), "runs of the steps (with until_ci: the most)");
    }
    if let Some(u) = plan.until_ci {
        top.kv("until_ci", toml_string(&u.to_string()), "repeat until the interval is this narrow");
    }
    if !plan.hosts.is_empty() {
        top.kv("on_host_loss", toml_string(plan.on_host_loss.name()), "a lost host: stop | continue the run");
        top.kv(
            "host_timeout",
            toml_string(&duration_literal(plan.host_timeout)),
            "without a finished second, a host is lost",
        );
    }

    top
}

/// The `[dataset]` table of [`to_toml`].
fn dataset_table(d: &crate::plan::Dataset, out: &mut String) {
    let mut l = Lines::default();
    l.kv("dir", toml_string(&d.dir.to_string_lossy()), "anchor");
    if let Some(name) = &d.name {
        l.kv("name", toml_string(name), "for flow steps: in NAME");
    }
    tree_lines(d, &mut l);
    if let Some(t) = d.total_size_bytes {
        l.kv("total_size", toml_string(&size_literal(t)), "stop creating files at this total");
    }
    if let Some(w) = d.working_set_bytes {
        l.kv("working_set", toml_string(&size_literal(w)), "workloads use the first files up to this size");
    }
    let format = match d.format {
        DatasetFormat::Reuse => "reuse",
        DatasetFormat::Always => "always",
        DatasetFormat::Never => "never",
    };
    l.kv("format", toml_string(format), "reuse | always | never");
    out.push_str("\n[dataset]\n");
    l.write(out);
}

/// One `[[fileset]]` table of [`to_toml`] (its directory follows from its name).
fn fileset_table(f: &crate::plan::Dataset, out: &mut String) {
    let mut l = Lines::default();
    l.kv("name", toml_string(f.name.as_deref().unwrap_or("")), "in the dataset's anchor");
    tree_lines(f, &mut l);
    out.push_str("\n[[fileset]]\n");
    l.write(out);
}

/// The shape of a tree: depth, width, files, sizes, prealloc.
fn tree_lines(d: &crate::plan::Dataset, l: &mut Lines) {
    l.kv("depth", d.depth.to_string(), "directory levels");
    l.kv("width", d.width.to_string(), "directories per level");
    l.kv("files", d.files.to_string(), "files per leaf directory");
    match d.size_gamma {
        Some(g) => l.kv(
            "sizes",
            toml_string(&format!("gamma:{}:{}", size_literal(g.mean_bytes), number(g.shape))),
            "file sizes: gamma, mean and shape",
        ),
        None => l.kv("sizes", toml_string(&bs_literal(&d.sizes)), "file sizes, SIZE:WEIGHT"),
    }
    if let Some(p) = d.prealloc_pct {
        l.kv("prealloc", p.to_string(), "% of the files created by preparation");
    }
}

/// One `[[workload]]` table of [`to_toml`].
fn workload_table(w: &crate::plan::Workload, run_content: &crate::content::Content, out: &mut String) {
    let mut l = Lines::default();
    l.kv("name", toml_string(&w.name), "");
    if w.flow.is_empty() {
        l.kv("operation", toml_string(w.operation.name()), "");
        if w.operation.transfers() {
            l.kv("rwmix_read", w.read_pct.to_string(), "% of transfers that are reads");
        }
        l.kv("bs", toml_string(&bs_literal(&w.block_sizes)), "transfer size(s), binary (4k = 4096 B)");
        let fileio = match w.fileio {
            FileIo::Sequential => "sequential",
            FileIo::Random => "random",
        };
        l.kv("fileio", toml_string(fileio), "");
    } else {
        let steps: Vec<String> = w.flow.iter().map(|s| toml_string(&s.text())).collect();
        l.kv("flow", format!("[{}]", steps.join(", ")), "each thread's steps, in order, repeated");
        if let Some(r) = w.flow_rate {
            l.kv("flow_rate", r.to_string(), "rounds of the flow per second, all its threads");
        }
    }
    let fileselect = match w.fileselect {
        FileSelect::Random => "random".to_string(),
        FileSelect::Sequential => "sequential".to_string(),
        FileSelect::Zipf(t) => format!("zipf:{t}"),
    };
    l.kv("fileselect", toml_string(&fileselect), "");
    l.kv("threads", w.threads.to_string(), "");
    match (w.rate_iops, w.skew_pct) {
        (Some(r), _) => l.kv("rate_iops", r.to_string(), "this workload's own"),
        (None, Some(s)) => l.kv("skew", number(s), "% of the rate"),
        (None, None) => {}
    }
    if let Some(d) = w.iodepth {
        l.kv("iodepth", d.to_string(), "this workload's own");
    }
    if let Some(s) = w.sync {
        l.kv("sync", toml_string(sync_name(s)), "this workload's own");
    }
    if let Some(d) = w.direct {
        l.kv("direct", d.to_string(), "this workload's own");
    }
    if let Some(p) = w.phase {
        l.kv("phase", p.to_string(), "runs in this phase only");
    }
    if let Some(p) = &w.pattern {
        let map = match p.map {
            PatternMap::Offset => "offset",
            PatternMap::Size => "size",
        };
        let v = format!(
            "{{ text = {}, map = {}, column = {} }}",
            toml_string(&p.text),
            toml_string(map),
            toml_string(&duration_literal(p.column))
        );
        l.kv("pattern", v, "");
    }
    crate::access::canonical(&w.access, &mut |k, v, c| l.kv(k, v, c));
    crate::content::canonical(&w.content, run_content, &mut |k, v, c| l.kv(k, v, c));
    out.push_str("\n[[workload]]\n");
    l.write(out);
}

/// SHA-256 (lowercase hex) of [`to_toml`] without the checks and repeats: the workload
/// hash stored with results (the same load with other checks, or repeated, is the same
/// workload).
pub fn plan_hash(plan: &Plan) -> String {
    // A size left to its default is the same load as that size written out.
    let load = Plan { checks: Vec::new(), repeat: None, until_ci: None, size_default: false, ..plan.clone() };
    let digest = Sha256::digest(to_toml(&load).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn sync_name(s: SyncMode) -> &'static str {
    match s {
        SyncMode::None => "none",
        SyncMode::Fsync => "fsync",
        SyncMode::Fdatasync => "fdatasync",
        SyncMode::Dsync => "dsync",
    }
}
