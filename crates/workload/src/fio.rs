//! `ioscope import fio`: converts a fio job file (a `[global]` section and job sections,
//! `include` files and `${VAR}` expansion) into an ioscope workload file (TOML, see
//! docs/import.md, "fio").
//!
//! An `include` is data from a file, not a licence to read any file: it names a regular file
//! in the including file's own directory (no `..`, no absolute path or symlink leading out,
//! checked before anything is read), and the job file with all its includes shares one byte
//! budget and one bound on option lines, so memory stays in proportion to one job file.
//!
//! Jobs that run together (no `stonewall` between them) become the `[[workload]]`s of one
//! run; `stonewall` groups become steps when they differ only in what an ioscope step can
//! change (numjobs, iodepth, bs, the read share), else phases (`phase = N` in each job's
//! `[[workload]]`), one after another; `--group N` imports one group alone.
//! Every option without an equivalent is reported with its file and line: a warning when
//! its loss does not change what is measured (or ioscope says exactly what it does
//! instead), an error otherwise, and then nothing is produced.

use crate::canonical::toml_string;
use crate::units::{secs_literal, size_literal};
use std::collections::BTreeMap;
use std::fmt::{self, Write};
use std::path::{Path, PathBuf};

mod own;

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// Converted; the message says what differs.
    Warning,
    /// Not converted: its loss would change the measurement.
    Error,
}

/// One option (or line) of the job file that does not convert as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Finding {
    pub severity: Severity,
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// The option as written (`startdelay=4`), or the section (`[job1]`).
    pub option: String,
    /// What fio does that ioscope does not, or what ioscope does instead.
    pub message: String,
    /// The supported form, when there is one.
    pub expected: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        let path = crate::diagnostic::clip(&self.path.display().to_string(), 200);
        write!(
            f,
            "{path}:{}: {kind}: {}: {}",
            self.line,
            crate::diagnostic::clip(&self.option, 80),
            crate::diagnostic::clip(&self.message, 400)
        )?;
        if !self.expected.is_empty() {
            write!(f, "\n  = expected: {}", crate::diagnostic::clip(&self.expected, 400))?;
        }
        Ok(())
    }
}

/// Why a job file was not converted.
#[derive(Debug, thiserror::Error)]
pub enum FioError {
    /// The job file could not be read.
    #[error("{0}")]
    Read(ReadError),
    /// Options without an equivalent: every finding, warnings included, in file order.
    #[error("{} error(s); nothing was written", .0.iter().filter(|f| f.severity == Severity::Error).count())]
    Refused(Vec<Finding>),
}

/// Why a job file (or a file it includes) cannot be read; `file` is its path as shown.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{file}: error: cannot read the file: {error}")]
    Unreadable { file: String, error: std::io::Error },
    #[error("{file}: error: not a regular file ({kind}): expected a fio job file (text)")]
    NotAFile { file: String, kind: &'static str },
    #[error("{file}: error: the file is larger than {max}: expected a fio job file (text)")]
    TooLarge { file: String, max: String },
    #[error("{file}:{line}: error: this line is not UTF-8 text: expected a fio job file (text)")]
    NotText { file: String, line: usize },
}

/// A converted job file.
#[derive(Debug)]
pub struct Imported {
    pub toml: String,
    /// What differs from fio (also written as comments at the top of `toml`).
    pub warnings: Vec<Finding>,
}

/// Most files one job file may pull in with `include` (itself included), and how deep.
const MAX_FILES: usize = 64;
const MAX_INCLUDE_DEPTH: usize = 8;
/// Most warnings copied into the workload file as comments.
const MAX_NOTES: usize = 50;
/// Most job sections (fio's own limit).
const MAX_JOBS: usize = 4096;
/// Most findings kept (all of them are errors or warnings; the rest are dropped).
const MAX_FINDINGS: usize = 10_000;
/// Most [global] options copied into jobs in all.
const MAX_OPTION_COPIES: usize = 1_000_000;
/// Most entries a `bsrange` may expand to.
const MAX_RANGE_SIZES: u64 = 64;
/// Bytes a job file and every file it includes may hold in all: one budget, so that 64
/// includes of one large file cost no more than one job file.
pub const MAX_TOTAL_BYTES: u64 = crate::MAX_SOURCE_BYTES;
/// Most option and section lines (blank and comment lines are not kept) in all.
const MAX_LINES: usize = 100_000;
/// Most characters of a line of an included file echoed in a finding: enough to tell
/// which option it is, not a whole line of whatever that file holds.
const INCLUDED_EXCERPT: usize = 32;

/// Reads `path` and converts it; `group` picks one stonewall group (1-based).
pub fn import(path: &Path, group: Option<usize>) -> Result<Imported, FioError> {
    let text = read_text(path, MAX_TOTAL_BYTES).map_err(FioError::Read)?;
    convert(path, &text, group, &read_text)
}

/// A job file's text: a regular file (never waited on) of at most `max` bytes of UTF-8,
/// else why not.
fn read_text(path: &Path, max: u64) -> Result<String, ReadError> {
    use crate::readfile::FileError;
    let file = crate::diagnostic::clip(&path.display().to_string(), 200);
    let bytes = crate::readfile::read(path, max).map_err(|e| match e {
        FileError::Io(error) => ReadError::Unreadable { file: file.clone(), error },
        FileError::NotRegular(kind) => ReadError::NotAFile { file: file.clone(), kind },
        FileError::TooLarge(max) => ReadError::TooLarge { file: file.clone(), max: crate::format_size(max) },
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let line = e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|b| **b == b'\n').count() + 1;
        ReadError::NotText { file, line }
    })
}

/// Converts job file `text` (read from `path`); `read(file, max)` reads an included file
/// of at most `max` bytes (what is left of the budget), once it is known to be allowed.
pub fn convert(
    path: &Path,
    text: &str,
    group: Option<usize>,
    read: &dyn Fn(&Path, u64) -> Result<String, ReadError>,
) -> Result<Imported, FioError> {
    let mut c = Converter {
        files: vec![path.to_path_buf()],
        findings: Vec::new(),
        chosen: None,
        dropped: 0,
        has_error: false,
        budget: MAX_TOTAL_BYTES.saturating_sub(text.len() as u64),
        kept: 0,
        per_job: own::PerJob::default(),
    };
    let lines = c.lines(0, text, read, 0);
    let jobs = c.sections(&lines);
    let specs: Vec<Job> = jobs.iter().map(|j| c.resolve(j)).collect();
    let toml = c.finish(&specs, group);
    // With --group, what the other groups' own sections say does not matter.
    if let Some(chosen) = &c.chosen {
        let elsewhere = |f: &Finding| {
            f.path == path
                && jobs
                    .iter()
                    .enumerate()
                    .any(|(i, j)| !chosen.contains(&i) && (j.at.line..=j.end_line).contains(&f.line))
        };
        c.findings.retain(|f| !elsewhere(f));
        c.has_error = c.findings.iter().any(|f| f.severity == Severity::Error);
    }
    let mut findings = std::mem::take(&mut c.findings);
    // An option in [global] is read once per job: report it once.
    let mut seen = std::collections::HashSet::new();
    findings.retain(|f| seen.insert(f.clone()));
    findings.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    if c.dropped > 0 {
        let severity = if c.has_error { Severity::Error } else { Severity::Warning };
        let message = format!("{} more findings, not listed", c.dropped);
        let option = "(more)".to_string();
        findings.push(Finding {
            severity,
            path: path.to_path_buf(),
            line: 0,
            option,
            message,
            expected: String::new(),
        });
    }
    match toml {
        Some(toml) if !findings.iter().any(|f| f.severity == Severity::Error) => {
            let mut head = String::from("# Converted from a fio job file by ioscope import fio.\n");
            for f in findings.iter().take(MAX_NOTES) {
                for l in f.to_string().lines() {
                    let _ = writeln!(head, "# {}", comment_safe(l));
                }
            }
            if findings.len() > MAX_NOTES {
                let _ = writeln!(head, "# ... and {} more warnings", findings.len() - MAX_NOTES);
            }
            let toml = head + &toml;
            let invalid = not_valid(path, &c.files, &toml);
            if !invalid.is_empty() {
                findings.extend(invalid);
                return Err(FioError::Refused(findings));
            }
            Ok(Imported { toml, warnings: findings })
        }
        _ => Err(FioError::Refused(findings)),
    }
}

/// What ioscope's own validation finds in the converted file (an iodepth × bs beyond
/// ioscope's buffer limit, say), each at the fio option named in the line's comment.
fn not_valid(job_file: &Path, files: &[PathBuf], toml: &str) -> Vec<Finding> {
    let src = crate::SourceFile { path: PathBuf::from("(converted)"), text: toml.to_string() };
    let Err(diags) = crate::validate_file(&src) else { return Vec::new() };
    diags
        .into_iter()
        .map(|d| {
            let line_text = match &d.origin {
                crate::Origin::File { line, .. } => toml.lines().nth(line.saturating_sub(1)).unwrap_or(""),
                _ => "",
            };
            // "key = value  # option, path:line"
            let origin = line_text.split_once("  # ").and_then(|(_, c)| {
                let (rest, line) = c.rsplit_once(':')?;
                let (option, path) = rest.rsplit_once(", ")?;
                let path = files.iter().find(|f| f.display().to_string() == path)?;
                Some((option.to_string(), path.clone(), line.parse::<usize>().ok()?))
            });
            let (option, path, line) = origin.unwrap_or((d.key.clone(), job_file.to_path_buf(), 1));
            // No key: the converted text itself is not TOML, which is the converter's fault.
            if d.key.is_empty() {
                let message =
                    format!("the converted file is not valid TOML ({}): a bug in ioscope import fio", d.value);
                let option = "(converted file)".to_string();
                return Finding { severity: Severity::Error, path, line, option, message, expected: d.expected };
            }
            let mut message = format!("the converted {} {} is not valid in ioscope", d.key, d.value);
            if !d.message.is_empty() {
                message = format!("{message}: {}", d.message.replace('\n', "; "));
            }
            Finding { severity: Severity::Error, path, line, option, message, expected: d.expected }
        })
        .collect()
}

/// Where an option was written: index into `Converter::files`, 1-based line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct At {
    file: usize,
    line: usize,
}

/// One line of text, from the job file or an included file.
struct Line {
    at: At,
    text: String,
}

/// One `key=value` (or bare `key`) as written, `${VAR}` expanded.
#[derive(Clone)]
struct Opt {
    key: String,
    value: Option<String>,
    at: At,
}

impl Opt {
    fn shown(&self) -> String {
        match &self.value {
            Some(v) => format!("{}={v}", self.key),
            None => self.key.clone(),
        }
    }
    /// The option as a diagnostic echoes it: whole from the job file, by its name only
    /// from an included file (which may be any file of the directory, such as one of
    /// credentials: its values are never echoed).
    fn echoed(&self) -> String {
        match (&self.value, self.at.file) {
            (Some(_), 1..) => format!("{}=…", self.key),
            _ => self.shown(),
        }
    }
}

/// A job section with the `[global]` options in force where it starts.
struct Section {
    name: String,
    at: At,
    /// Last line of the section in the job file.
    end_line: usize,
    opts: Vec<Opt>,
}

/// A value with the option it came from.
#[derive(Clone, Debug)]
struct V<T> {
    v: T,
    at: At,
    from: String,
}

/// One job, resolved.
#[derive(Clone, Debug, Default)]
struct Job {
    section: String,
    at: At,
    name: Option<V<String>>,
    description: Option<V<String>>,
    /// Share of reads in percent, and whether offsets are random.
    read_pct: Option<V<u8>>,
    random: Option<V<bool>>,
    mix_read: Option<V<u8>>,
    bs: Option<V<Vec<(u64, u32)>>>,
    bssplit: Option<V<Vec<(u64, u32)>>>,
    numjobs: Option<V<u32>>,
    stonewall: bool,
    time_based: Option<V<bool>>,
    runtime_s: Option<V<u64>>,
    /// The end by amount: `io_size` (or `io_limit`), `number_ios`, `loops`.
    io_size: Option<V<u64>>,
    number_ios: Option<V<u64>>,
    loops: Option<V<u64>>,
    ramp_s: Option<V<u64>>,
    rate_iops: Option<V<u64>>,
    rate_bytes: Option<V<u64>>,
    directory: Option<V<String>>,
    filename: Option<V<String>>,
    nrfiles: Option<V<u64>>,
    size: Option<V<u64>>,
    filesize: Option<V<u64>>,
    engine: Option<V<&'static str>>,
    iodepth: Option<V<u32>>,
    direct: Option<V<bool>>,
    /// `invalidate`: fio drops each file's pages before the job unless 0 (default 1).
    invalidate: Option<V<bool>>,
    sync: Option<V<&'static str>>,
    sqpoll: Option<V<bool>>,
    unlink: Option<V<bool>>,
    /// `verify=md5|crc32c|...`: ioscope's own header and checksum (`verify = "fail"`).
    verify: Option<V<bool>>,
    target: Option<V<String>>,
    wait_for: Option<V<String>>,
    /// `rw=read:SIZE`: bytes skipped after each sequential I/O (negative: backwards).
    seq_skip: Option<V<i64>>,
    /// `random_distribution`, in the spelling ioscope reads (fio's).
    distribution: Option<V<String>>,
    /// `percentage_random`.
    pct_random: Option<V<u8>>,
    /// `rate_process=poisson`.
    poisson: Option<V<bool>>,
    /// `buffer_compress_percentage`, `buffer_compress_chunk`, `dedupe_percentage`,
    /// `zero_buffers`: the data content (see crate::content).
    compress_pct: Option<V<u8>>,
    compress_chunk: Option<V<u64>>,
    dedupe_pct: Option<V<u8>>,
    zero_buffers: Option<V<bool>>,
    /// `name` was set in [global].
    global_name: bool,
}

impl Job {
    fn threads(&self) -> u32 {
        self.numjobs.as_ref().map_or(1, |n| n.v)
    }
    /// The I/Os this job keeps in flight: its iodepth, 1 on a synchronous engine (fio's
    /// psync, the default, keeps one whatever iodepth says).
    fn step_depth(&self) -> u32 {
        match self.engine.as_ref().map_or("posix", |e| e.v) {
            "posix" => 1,
            _ => self.iodepth.as_ref().map_or(1, |d| d.v),
        }
    }
    /// `filename` names a device (`/dev/...`) and nothing sizes it: fio uses it whole.
    /// Named without a size: devices, or one existing file, used whole (fio sizes the job
    /// from what is there; so does ioscope, at the start of the run).
    fn used_whole(&self) -> bool {
        let names = || self.filename.iter().flat_map(|f| f.v.split(':').filter(|n| !n.is_empty()));
        self.size.is_none()
            && self.filesize.is_none()
            && names().next().is_some()
            && (names().all(|n| n.starts_with("/dev/")) || names().count() == 1)
    }
    fn pct(&self) -> u8 {
        match (&self.read_pct, &self.mix_read) {
            (Some(r), Some(m)) if r.v == 50 => m.v,
            (Some(r), _) => r.v,
            _ => 100,
        }
    }
    fn is_random(&self) -> bool {
        self.random.as_ref().is_some_and(|r| r.v)
    }
    fn sizes(&self) -> Vec<(u64, u32)> {
        self.bssplit.as_ref().or(self.bs.as_ref()).map_or(vec![(4096, 1)], |b| b.v.clone())
    }
    fn display_name(&self) -> String {
        self.name.as_ref().map_or(self.section.clone(), |n| n.v.clone())
    }
}

struct Converter {
    files: Vec<PathBuf>,
    findings: Vec<Finding>,
    /// With --group: the indexes of the jobs imported.
    chosen: Option<Vec<usize>>,
    /// Findings past [`MAX_FINDINGS`], counted only.
    dropped: usize,
    has_error: bool,
    /// Bytes the files still to be included may hold (see [`MAX_TOTAL_BYTES`]).
    budget: u64,
    /// Lines kept so far (see [`MAX_LINES`]).
    kept: usize,
    /// Settings the jobs of the one group set each in its own [[workload]].
    per_job: own::PerJob,
}

/// fio options that do not change what ioscope measures, with what ioscope does.
const WARN_ONLY: &[(&str, &str)] = &[
    ("group_reporting", "ioscope reports every workload and the run's total"),
    ("new_group", "ioscope reports every workload and the run's total"),
    ("thread", "ioscope runs every job as threads of one process"),
    ("threads", "ioscope runs every job as threads of one process (fio takes `threads` for `thread`)"),
    ("stats", "ioscope always records statistics"),
    ("write_bw_log", "ioscope records bandwidth every second in the results file"),
    ("write_iops_log", "ioscope records IOPS every second in the results file"),
    ("write_lat_log", "ioscope records latency histograms every second in the results file"),
    ("write_hist_log", "ioscope records latency histograms every second in the results file"),
    ("log_avg_msec", "ioscope records every second"),
    ("log_hist_msec", "ioscope records every second"),
    ("per_job_logs", "ioscope records every second in one results file"),
    ("percentile_list", "ioscope keeps whole histograms; any percentile can be read from them"),
    ("clat_percentiles", "ioscope keeps whole latency histograms"),
    ("lat_percentiles", "ioscope keeps whole latency histograms"),
    ("slat_percentiles", "ioscope keeps whole latency histograms"),
    ("significant_figures", "ioscope keeps whole latency histograms"),
    ("disable_lat", "ioscope always measures latency"),
    ("disable_clat", "ioscope always measures latency"),
    ("disable_slat", "ioscope always measures latency"),
    ("disable_bw_measurement", "ioscope always measures bandwidth"),
    ("gtod_reduce", "ioscope always takes its own timestamps"),
    ("clocksource", "ioscope uses the monotonic clock"),
    ("randrepeat", "ioscope seeds its random offsets itself"),
    ("randseed", "ioscope seeds its random offsets itself"),
    ("random_generator", "ioscope draws offsets with its own generator"),
    ("norandommap", "ioscope draws every random offset independently, as fio does with norandommap"),
    ("ratemin", "ioscope does not end a job that falls below a minimum rate; the summary shows the rate reached"),
    ("rate_min", "ioscope does not end a job that falls below a minimum rate; the summary shows the rate reached"),
    ("rate_iops_min", "ioscope does not end a job that falls below a minimum rate; the summary shows the rate reached"),
    ("ratecycle", "ioscope does not check a minimum rate"),
    ("io_submit_mode", "ioscope's open loop issues each I/O at its scheduled time and counts latency from then"),
    ("exitall", "the workloads of an ioscope step all run for its duration"),
    ("end_fsync", "ioscope does not sync at the end of a step; the last second's writes may still be in the cache"),
    ("fsync_on_close", "ioscope keeps its files open during a step and does not sync at the end"),
    ("fallocate", "ioscope writes its working set in full before the run"),
    ("overwrite", "ioscope writes its working set in full before the run, so writes overwrite"),
    ("create_on_open", "ioscope creates its working set before the run"),
    ("allow_file_create", "ioscope creates its working set before the run"),
    ("cpus_allowed", "ioscope does not pin its threads to CPUs"),
    ("cpus_allowed_policy", "ioscope does not pin its threads to CPUs"),
    ("cpumask", "ioscope does not pin its threads to CPUs"),
    ("numa_cpu_nodes", "ioscope does not pin its threads to NUMA nodes"),
    ("iodepth_batch", "ioscope's io_uring engine batches submissions itself"),
    ("iodepth_batch_submit", "ioscope's io_uring engine batches submissions itself"),
    ("iodepth_batch_complete", "ioscope's io_uring engine reaps completions itself"),
    ("iodepth_batch_complete_min", "ioscope's io_uring engine reaps completions itself"),
    ("iodepth_batch_complete_max", "ioscope's io_uring engine reaps completions itself"),
    ("iodepth_low", "ioscope keeps iodepth I/Os in flight"),
    ("fixedbufs", "ioscope's io_uring engine always registers its buffers"),
    ("registerfiles", "ioscope's io_uring engine always registers its files"),
    ("filename_format", "ioscope names its working-set files itself (ioscope.N.dat)"),
    (
        "file_service_type",
        "ioscope picks a random file for each random I/O, and walks the files in turn for sequential I/O",
    ),
    ("lockmem", "ioscope does not lock memory"),
    ("unit_base", "ioscope reports bytes"),
    ("kb_base", "ioscope reads k, m, g as powers of 1024 (kb_base=1024)"),
    ("continue_on_error", "ioscope counts errors by kind and ends the run past max_errors (default 1%)"),
    ("ignore_error", "ioscope counts errors by kind and ends the run past max_errors (default 1%)"),
    ("nice", "ioscope does not change its scheduling priority"),
    ("prio", "ioscope does not set an I/O priority"),
    ("prioclass", "ioscope does not set an I/O priority"),
    ("serialize_overlap", "ioscope does not order overlapping I/Os"),
    ("do_verify", "with verify, ioscope checks every block as it is read during the run (no separate verify pass)"),
    ("verify_pattern", "ioscope's verified blocks carry a header and random data, not a pattern"),
    ("verify_backlog", "ioscope checks every block as it is read during the run"),
    ("log_max_value", "ioscope records whole histograms every second, not a log's maximum or average"),
    ("unified_rw_reporting", "ioscope reports reads, writes and their total"),
    ("log_prio", "ioscope's per-second records have no I/O priority column"),
    ("error_dump", "ioscope counts errors by kind in the summary"),
];

/// fio options whose loss changes what is measured, with why.
const REFUSED: &[(&str, &str)] = &[
    ("startdelay", "fio starts this job later; ioscope starts every workload of a step together"),
    ("thinktime", "fio pauses between I/Os; ioscope has no think time (use rate_iops for an open loop)"),
    ("thinktime_blocks", "fio pauses between I/Os; ioscope has no think time"),
    ("thinktime_spin", "fio pauses between I/Os; ioscope has no think time"),
    ("offset", "ioscope uses its files from the start"),
    ("offset_increment", "ioscope uses its files from the start"),
    ("zonemode", "ioscope has no zoned I/O"),
    ("zonesize", "ioscope has no zoned I/O"),
    ("zonerange", "ioscope has no zoned I/O"),
    ("zoneskip", "ioscope has no zoned I/O"),
    ("buffer_pattern", "ioscope writes random data"),
    ("fadvise_hint", "ioscope gives the kernel no access hints"),
    ("ioscheduler", "ioscope does not change the device's I/O scheduler"),
    ("hipri", "ioscope's io_uring engine does not poll for completions"),
    ("mem", "ioscope allocates its own aligned buffers"),
    ("iomem", "ioscope allocates its own aligned buffers"),
    ("bs_unaligned", "ioscope aligns transfers to the smallest block size"),
    ("blockalign", "ioscope aligns transfers to the smallest block size"),
    ("ba", "ioscope aligns transfers to the smallest block size"),
    ("flow", "ioscope shares its rate by skew, not by flow tokens"),
    ("exec_prerun", "ioscope runs commands as [[probe]]s at set moments"),
    ("exec_postrun", "ioscope runs commands as [[probe]]s at set moments"),
    ("trim_percentage", "ioscope does not trim"),
    ("trim_backlog", "ioscope does not trim"),
    ("write_barrier", "ioscope has no write barriers"),
    ("sync_file_range", "ioscope syncs with fsync, fdatasync or O_DSYNC"),
    ("pre_read", "ioscope does not read its files into the cache before a step"),
    ("readfua", "ioscope has no FUA I/O"),
    ("writefua", "ioscope has no FUA I/O"),
];

/// fio engines and options that have no meaning in ioscope (another protocol, the CPU, file
/// metadata, zoned or passthrough devices): a job file naming one is refused, whatever else
/// it says. docs/import.md lists the same (a test checks that they agree).
pub const NO_MEANING: &[&str] = &[
    "ioengine=cpuio",
    "ioengine=net",
    "ioengine=netsplice",
    "ioengine=rdma",
    "ioengine=http",
    "ioengine=e4defrag",
    "ioengine=gfapi",
    "ioengine=gfapi_async",
    "ioengine=rbd",
    "ioengine=rados",
    "ioengine=page_fault",
    "ioengine=nbd",
    "ioengine=mtd",
    "ioengine=libpmem",
    "ioengine=dev-dax",
    "ioengine=ime_psync",
    "ioengine=libcufile",
    "ioengine=libhipfile",
    "ioengine=libblkio",
    "ioengine=dfs",
    "ioengine=cpp_null",
    "ioengine=exec",
    "ioengine=ftruncate",
    "ioengine=filestat",
    "ioengine=filecreate",
    "ioengine=filedelete",
    "ioengine=falloc",
    "ioengine=dirstat",
    "ioengine=dircreate",
    "ioengine=dirdelete",
    "ioengine=io_uring_cmd",
    "ioengine=sg",
    "ioengine=xnvme",
    "ioengine=spdk",
    "ioengine=libiscsi",
    "ioengine=libhdfs",
    "zonemode",
    "fdp",
    "md_per_io_size",
    "numa_mem_policy",
];

/// The directory (or block device) of the working set for fio's `filename=NAME` (inside
/// `directory` when relative), with what differs.
/// A file named without a size (fio needs it to exist): the target itself, as a device is.
fn existing_file(name: &str, directory: Option<&str>) -> (String, String) {
    let path = match (directory, Path::new(name).is_absolute()) {
        (Some(b), false) => Path::new(b).join(name),
        _ => PathBuf::from(name),
    };
    let d = path.display().to_string();
    let note = format!("{d}: an existing file is run on as it is, from offset 0 to its end (fio needs it to exist too); ioscope reads it without --force, writes into it only with --force, and never removes it");
    (d, note)
}

fn filename_dir(name: &str, directory: Option<&str>) -> (String, String) {
    if name.starts_with("/dev/") {
        // A block device is the target itself (engines posix and uring).
        let note = format!("{name}: a block device is run on as it is, from offset 0 to size (the whole device without one); ioscope refuses it without --force (a run that writes destroys its data)");
        return (name.to_string(), note);
    }
    let path = match (directory, Path::new(name).is_absolute()) {
        (Some(b), false) => Path::new(b).join(name),
        _ => PathBuf::from(name),
    };
    let parent = path.parent().map(|p| p.display().to_string()).filter(|p| !p.is_empty());
    let d = parent.unwrap_or_else(|| ".".into());
    let note = format!("ioscope keeps its working set in its own files (ioscope.N.dat) in {d}, not in {name}");
    (d, note)
}

/// The value of a [`FioMeaning::Converted`](crate::keys::FioMeaning) option as its key takes
/// it, converted as a job file's option is, with what differs (notes); None: not a valid value.
pub(crate) fn convert_option(conversion: crate::keys::Conversion, value: &str) -> Option<(String, Vec<String>)> {
    use crate::keys::Conversion;
    match conversion {
        // fio's `bssplit=4k/60,8k/40` (reads, then writes) has no equivalent: one list.
        Conversion::BlockSizeSplit => bssplit(value).map(|l| (bs_list(&l), Vec::new())),
        Conversion::WriteShare => pct(value).map(|p| ((100 - p).to_string(), Vec::new())),
        Conversion::FileName => {
            let mut found: Option<String> = None;
            let mut notes = Vec::new();
            for name in value.split(':').map(str::trim).filter(|n| !n.is_empty()) {
                let (d, note) = filename_dir(name, None);
                if found.as_ref().is_some_and(|f| *f != d) {
                    return None; // ioscope keeps its working set in one directory
                }
                found = Some(d);
                notes.push(note);
            }
            found.map(|d| (d, notes))
        }
    }
}

/// fio engines and the ioscope engine that does the same, with what differs.
pub(crate) fn engine_of(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "psync" | "sync" | "pvsync" | "pvsync2" | "vsync" => ("posix", ""),
        "io_uring" => ("uring", ""),
        "libaio" => (
            "uring",
            "ioscope runs it on io_uring (engine uring), Linux's other asynchronous interface, with the same iodepth in flight; Linux AIO blocks on buffered I/O (direct=0) where io_uring does not",
        ),
        "posixaio" => (
            "uring",
            "ioscope runs it on io_uring (engine uring) with the same iodepth in flight; glibc's POSIX AIO runs each I/O on a helper thread instead",
        ),
        "null" => ("null", ""),
        "nfs" => ("nfs", ""),
        _ => return None,
    })
}

/// The value of `$e`, or else an error at option `$o` that `$raw` is not a valid value for
/// it (expected: `$expected`), and a return from the caller.
macro_rules! need {
    ($conv:expr, $o:expr, $raw:expr, $e:expr, $expected:expr) => {
        match $e {
            Some(x) => x,
            None => return $conv.error($o, format!("`{}` is not a valid value for {}", $raw, $o.key), $expected),
        }
    };
}

impl Converter {
    fn push(&mut self, severity: Severity, at: At, option: String, message: String, expected: &str) {
        // A hostile file gets a bounded list; an error past the bound still refuses it.
        if self.findings.len() >= MAX_FINDINGS {
            self.dropped += 1;
            if severity != Severity::Error || self.has_error {
                return;
            }
            self.findings.pop();
        }
        self.has_error |= severity == Severity::Error;
        let path = self.files.get(at.file).cloned().unwrap_or_default();
        let option = if at.file == 0 { option } else { crate::diagnostic::clip(&option, INCLUDED_EXCERPT) };
        self.findings.push(Finding { severity, path, line: at.line, option, message, expected: expected.into() });
    }
    fn error(&mut self, o: &Opt, message: impl Into<String>, expected: &str) {
        self.push(Severity::Error, o.at, o.echoed(), message.into(), expected);
    }
    fn warn(&mut self, o: &Opt, message: impl Into<String>) {
        self.push(Severity::Warning, o.at, o.echoed(), message.into(), "");
    }

    /// The file's lines with `include`s replaced by the included files' lines. Blank and
    /// comment lines are not kept (nothing reads them).
    fn lines(
        &mut self,
        file: usize,
        text: &str,
        read: &dyn Fn(&Path, u64) -> Result<String, ReadError>,
        depth: usize,
    ) -> Vec<Line> {
        let mut out = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let at = At { file, line: i + 1 };
            let t = raw.trim();
            if strip_comment(t).trim().is_empty() {
                continue;
            }
            if self.kept >= MAX_LINES {
                let o = Opt { key: crate::diagnostic::clip(t, 20), value: None, at };
                self.error(
                    &o,
                    format!("the job file and its includes hold more than {MAX_LINES} option lines in all"),
                    "",
                );
                break;
            }
            let Some(name) = t.strip_prefix("include").filter(|r| r.starts_with([' ', '\t'])) else {
                self.kept += 1;
                out.push(Line { at, text: raw.to_string() });
                continue;
            };
            let name = strip_comment(name).trim();
            let o = Opt { key: "include".into(), value: Some(name.into()), at };
            if depth >= MAX_INCLUDE_DEPTH || self.files.len() >= MAX_FILES {
                self.error(&o, format!("more than {MAX_INCLUDE_DEPTH} levels or {MAX_FILES} files of includes"), "");
                continue;
            }
            let (shown, open) = match self.confine(file, name) {
                Ok(p) => p,
                Err(why) => {
                    self.error(&o, why, "include NAME, a file in the including file's directory");
                    continue;
                }
            };
            let included = match read(&open, self.budget) {
                Ok(t) => t,
                Err(ReadError::TooLarge { .. }) => {
                    let total = crate::format_size(MAX_TOTAL_BYTES);
                    self.error(&o, format!("the job file and its includes hold more than {total} in all"), "");
                    continue;
                }
                Err(e) => {
                    self.error(&o, format!("the included file cannot be read: {e}"), "");
                    continue;
                }
            };
            self.budget = self.budget.saturating_sub(included.len() as u64);
            self.files.push(shown);
            let idx = self.files.len() - 1;
            out.extend(self.lines(idx, &included, read, depth + 1));
        }
        out
    }

    /// Where `include name` in file `file` leads: (the path shown, the path to open), or
    /// why it is refused. Checked before anything is read, so a file outside the including
    /// file's directory is never opened: a `..`, an absolute path elsewhere, or a symlink
    /// (of the file or of a directory on the way) resolving outside it.
    fn confine(&self, file: usize, name: &str) -> Result<(PathBuf, PathBuf), String> {
        let base = self.files.get(file).and_then(|p| p.parent()).unwrap_or(Path::new(""));
        let named = Path::new(name);
        let dir_shown = if base.as_os_str().is_empty() { ".".to_string() } else { base.display().to_string() };
        let why = format!(
            "the included file is outside the including file's directory ({}): ioscope reads includes from there only",
            crate::diagnostic::clip(&dir_shown, 200)
        );
        if named.components().any(|c| c == std::path::Component::ParentDir) {
            return Err(why);
        }
        let shown = base.join(named);
        let dir = if base.as_os_str().is_empty() { Path::new(".") } else { base };
        let real_dir = std::fs::canonicalize(dir).map_err(|e| format!("the including file's directory: {e}"))?;
        match std::fs::canonicalize(&shown) {
            Ok(real) if real.starts_with(&real_dir) && real != real_dir => Ok((shown, real)),
            Ok(_) => Err(why),
            // An absolute name not under the directory as written is refused as it stands.
            Err(_) if named.is_absolute() && !named.starts_with(&real_dir) && !named.starts_with(dir) => Err(why),
            // Not there (or not reachable): the read says why, and nothing is read.
            Err(_) => Ok((shown.clone(), shown)),
        }
    }

    /// Splits the lines into job sections, each with the `[global]` options in force.
    fn sections(&mut self, lines: &[Line]) -> Vec<Section> {
        let mut global: Vec<Opt> = Vec::new();
        let mut jobs: Vec<Section> = Vec::new();
        let mut copied = 0usize;
        // None before the first section; Some(None) in a [global]; Some(Some(i)) in job i.
        let mut current: Option<Option<usize>> = None;
        for line in lines {
            let t = strip_comment(&line.text).trim();
            if t.is_empty() {
                continue;
            }
            if let Some(name) = t.strip_prefix('[') {
                let Some(name) = name.strip_suffix(']').map(str::trim).filter(|n| !n.is_empty()) else {
                    let o = Opt { key: t.into(), value: None, at: line.at };
                    self.error(&o, "a section header is [name]", "[global] or [jobname]");
                    continue;
                };
                if line.at.file != 0 {
                    let o = Opt { key: t.into(), value: None, at: line.at };
                    self.error(&o, "fio allows no new sections in included files", "options only");
                    continue;
                }
                // The section before this header ends on the line before it.
                if let Some(Some(i)) = current {
                    jobs[i].end_line = line.at.line.saturating_sub(1);
                }
                if name == "global" {
                    current = Some(None);
                } else {
                    // Each job holds a copy of [global]: bound the copies, not only the jobs.
                    copied = copied.saturating_add(global.len());
                    if jobs.len() == MAX_JOBS || copied > MAX_OPTION_COPIES {
                        let o = Opt { key: t.into(), value: None, at: line.at };
                        let msg = format!("more than {MAX_JOBS} jobs (fio's limit too), or [global] options × jobs above {MAX_OPTION_COPIES}");
                        self.error(&o, msg, "fewer job sections");
                        break;
                    }
                    jobs.push(Section { name: name.into(), at: line.at, end_line: usize::MAX, opts: global.clone() });
                    current = Some(Some(jobs.len() - 1));
                }
                continue;
            }
            let (key, value) = match t.split_once('=') {
                Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
                None => (t.to_string(), None),
            };
            // fio's options are lowercase; `BS=4k` is read as `bs=4k`.
            let mut o = Opt { key: key.to_ascii_lowercase(), value, at: line.at };
            if let Some(v) = &o.value {
                match expand(v) {
                    Ok((v, note)) => {
                        o.value = Some(v);
                        if let Some(note) = note {
                            self.warn(&o, note);
                        }
                    }
                    Err(e) => {
                        self.error(&o, e.to_string(), "${NAME} of a set environment variable, $ncpus or $pagesize");
                        continue;
                    }
                }
            }
            match current {
                None => self.error(&o, "an option before any section", "options inside [global] or [jobname]"),
                Some(None) => global.push(o),
                Some(Some(i)) => jobs[i].opts.push(o),
            }
        }
        if jobs.is_empty() {
            let o = Opt { key: "[jobname]".into(), value: None, at: At { file: 0, line: 1 } };
            self.error(&o, "the job file defines no job", "a section like [randread] after [global]");
        }
        jobs
    }

    /// Applies a section's options in order (later ones override earlier ones, as in fio).
    fn resolve(&mut self, s: &Section) -> Job {
        let mut j = Job { section: s.name.clone(), at: s.at, ..Job::default() };
        for o in &s.opts {
            self.apply(&mut j, o);
        }
        // A name from [global] names a lone job (as in fio's examples); jobs running
        // together keep their section names, which tell them apart.
        j.global_name = j.name.as_ref().is_some_and(|n| n.at.file == 0 && n.at.line < s.at.line);
        j
    }

    fn apply(&mut self, j: &mut Job, o: &Opt) {
        let raw = o.value.clone().unwrap_or_default();
        let word = raw.to_ascii_lowercase();
        match o.key.as_str() {
            "name" => j.name = at(o, raw),
            "description" => j.description = at(o, raw),
            "rw" | "readwrite" => {
                // `read:8k`: fio's offset modifier, a hole (or a step back) after each I/O.
                let (base, modifier) = match word.split_once(':') {
                    Some((b, m)) => (b.trim(), Some(m.trim())),
                    None => (word.as_str(), None),
                };
                j.seq_skip = None;
                if let Some(m) = modifier {
                    if base.starts_with("rand") {
                        return self.error(
                            o,
                            format!("fio draws a new random offset every {m} I/Os, sequential in between; ioscope has no fixed-length runs (percentage_random mixes sequential and random I/Os at random)"),
                            "rw without :N, or percentage_random",
                        );
                    }
                    let (neg, mag) = m.strip_prefix('-').map_or((false, m), |r| (true, r));
                    let bytes = need!(
                        self,
                        o,
                        raw,
                        size(mag).and_then(|b| i64::try_from(b).ok()),
                        "rw=read:SIZE, like read:4k or read:-8k"
                    );
                    match crate::access::check_seq_skip(if neg { -bytes } else { bytes }) {
                        Ok(skip) => j.seq_skip = at(o, skip),
                        Err(why) => return self.error(o, why, "rw=read:SIZE, a multiple of 512 bytes"),
                    }
                }
                let (pct, random) = match base {
                    "read" => (100, false),
                    "write" => (0, false),
                    "randread" => (100, true),
                    "randwrite" => (0, true),
                    "rw" | "readwrite" => (50, false),
                    "randrw" => (50, true),
                    w if w.contains("trim") => return self.error(o, "ioscope does not trim", "read, write or a mix"),
                    _ => {
                        return self.error(
                            o,
                            "not an access pattern ioscope has",
                            "read, write, randread, randwrite, rw (readwrite) or randrw",
                        );
                    }
                };
                j.read_pct = at(o, pct);
                j.random = at(o, random);
            }
            "rwmixread" => j.mix_read = at(o, need!(self, o, raw, pct(&raw), "a percentage from 0 to 100")),
            "rwmixwrite" => j.mix_read = at(o, 100 - need!(self, o, raw, pct(&raw), "a percentage from 0 to 100")),
            "bs" | "blocksize" => {
                let Some(part) = same_for_reads_and_writes(self, o, &raw) else { return };
                let size = need!(self, o, raw, size(&part).filter(|n| *n > 0), "a size like 4k");
                j.bs = at(o, vec![(size, 1)]);
                j.bssplit = None;
            }
            "bsrange" | "blocksize_range" => {
                let Some(part) = same_for_reads_and_writes(self, o, &raw) else { return };
                let (lo, hi) = need!(
                    self,
                    o,
                    raw,
                    part.split_once('-')
                        .and_then(|(a, b)| Some((size(a)?, size(b)?)))
                        .filter(|(a, b)| *a > 0 && a <= b),
                    "a range like 4k-16k"
                );
                let n = hi / lo;
                if n > MAX_RANGE_SIZES {
                    return self.error(
                        o,
                        format!(
                            "{n} sizes from {} to {}: too many for a weighted list",
                            size_literal(lo),
                            size_literal(hi)
                        ),
                        "a narrower range, or bssplit",
                    );
                }
                if n > 1 {
                    self.warn(o, format!(
                        "fio picks a size in the range at random for each I/O; ioscope draws each multiple of {} from {} to {} equally often",
                        size_literal(lo), size_literal(lo), size_literal(lo * n)
                    ));
                }
                j.bs = at(o, (1..=n).map(|k| (lo * k, 1)).collect());
                j.bssplit = None;
            }
            "bssplit" => {
                let Some(part) = same_for_reads_and_writes(self, o, &raw) else { return };
                j.bssplit = at(
                    o,
                    need!(self, o, raw, bssplit(&part), "size/percent pairs joined by colons, e.g. 4k/60:64k/40"),
                );
            }
            "numjobs" => {
                j.numjobs =
                    at(o, need!(self, o, raw, count(&raw).filter(|n| (1..=4096).contains(n)), "1 to 4096") as u32)
            }
            "stonewall" | "wait_for_previous" => j.stonewall = need!(self, o, raw, flag(&o.value), "1 or 0"),
            "time_based" => j.time_based = at(o, need!(self, o, raw, flag(&o.value), "1 or 0")),
            "runtime" | "timeout" | "ramp_time" => match secs(&word) {
                Ok(n) if o.key == "ramp_time" => j.ramp_s = at(o, n),
                Ok(n) => j.runtime_s = at(o, n),
                Err(e) => self.error(o, e, "whole seconds, e.g. 60 or 5m"),
            },
            "rate_iops" => {
                let Some(part) = same_for_reads_and_writes(self, o, &raw) else { return };
                j.rate_iops = at(o, need!(self, o, raw, count(&part).filter(|n| *n > 0), "I/Os per second, e.g. 1000"));
            }
            "rate" => {
                let Some(part) = same_for_reads_and_writes(self, o, &raw) else { return };
                j.rate_bytes = at(o, need!(self, o, raw, size(&part), "bytes per second, e.g. 10m"));
            }
            "directory" if raw.contains(':') => {
                self.error(o, "ioscope keeps its working set in one directory", "one directory")
            }
            "directory" => j.directory = at(o, raw),
            "filename" => j.filename = at(o, raw),
            "nrfiles" | "nr_files" => {
                j.nrfiles = at(o, need!(self, o, raw, count(&raw).filter(|n| *n > 0), "a number of files, e.g. 8"))
            }
            "size" if raw.ends_with('%') => self.error(
                o,
                "a share of an existing file or device: ioscope creates its working set and needs its size",
                "a size like 10g",
            ),
            "size" => j.size = at(o, need!(self, o, raw, size(&raw).filter(|n| *n > 0), "a size like 10g")),
            "filesize" => {
                let n = match raw.split_once('-') {
                    Some((a, b)) if size(a).is_some() && size(a) == size(b) => size(a),
                    Some(_) => {
                        return self.error(o, "ioscope's working-set files all have one size", "one size, e.g. 64m")
                    }
                    None => size(&raw),
                };
                j.filesize = at(o, need!(self, o, raw, n.filter(|n| *n > 0), "a size like 64m"));
            }
            _ => self.apply_run_option(j, o, &raw, &word),
        }
    }

    /// The options of how the job runs: engine, depth, direct, cache, sync, verify, target,
    /// and what has no equivalent.
    fn apply_run_option(&mut self, j: &mut Job, o: &Opt, raw: &str, word: &str) {
        match o.key.as_str() {
            // The end by amount, converted with the run's end (see `amount`).
            "io_size" | "io_limit" => {
                j.io_size = at(o, need!(self, o, raw, size(raw).filter(|n| *n > 0), "a size like 10g"))
            }
            "number_ios" => {
                j.number_ios = at(o, need!(self, o, raw, count(raw).filter(|n| *n > 0), "a number of I/Os, e.g. 100000"))
            }
            "loops" => j.loops = at(o, need!(self, o, raw, count(raw).filter(|n| (1..=u64::from(u32::MAX)).contains(n)), "1 or more")),
            "ioengine" => match engine_of(word) {
                Some((engine, note)) => {
                    if !note.is_empty() {
                        self.warn(o, note);
                    }
                    j.engine = at(o, engine);
                }
                None => self.error(
                    o,
                    format!("ioscope has no {word} engine"),
                    "psync, sync, pvsync (engine posix), io_uring or libaio (engine uring), nfs or null",
                ),
            },
            "iodepth" => {
                j.iodepth =
                    at(o, need!(self, o, raw, count(raw).filter(|n| (1..=65536).contains(n)), "1 to 65536") as u32)
            }
            "direct" => j.direct = at(o, need!(self, o, raw, flag(&o.value), "1 or 0")),
            "buffered" => j.direct = at(o, !need!(self, o, raw, flag(&o.value), "1 or 0")),
            "invalidate" => j.invalidate = at(o, need!(self, o, raw, flag(&o.value), "1 or 0")),
            "fsync" | "fdatasync" => match count(raw) {
                Some(0) => {}
                Some(1) => j.sync = at(o, if o.key == "fsync" { "fsync" } else { "fdatasync" }),
                Some(_) => self.error(
                    o,
                    format!("fio calls {} after every {raw} writes; ioscope after every write", o.key),
                    &format!("{}=1 or 0", o.key),
                ),
                None => self.error(o, "not a number of writes", &format!("{}=1", o.key)),
            },
            "sync" => match word {
                "0" | "none" => j.sync = None,
                "dsync" => j.sync = at(o, "dsync"),
                "1" | "sync" => {
                    self.warn(o, "fio opens with O_SYNC; ioscope opens with O_DSYNC (sync = \"dsync\"), which does not wait for metadata such as the modification time");
                    j.sync = at(o, "dsync");
                }
                _ => self.error(o, "not a sync mode ioscope has", "sync=1, sync=dsync or sync=0"),
            },
            "sqthread_poll" => j.sqpoll = at(o, need!(self, o, raw, flag(&o.value), "1 or 0")),
            "unlink" => j.unlink = at(o, need!(self, o, raw, flag(&o.value), "1 or 0")),
            "verify" => match word {
                "0" | "null" | "" => j.verify = at(o, false),
                "md5" | "crc64" | "crc32c" | "crc32c-intel" | "crc32" | "crc16" | "crc7" | "xxhash" | "sha1"
                | "sha256" | "sha512" | "sha3-224" | "sha3-256" | "sha3-384" | "sha3-512" | "meta" | "pattern" => {
                    self.warn(o, "ioscope stamps its own 64-byte header (run, file, offset, write number) with an XXH3-64 checksum of the whole block instead, and checks every block as it is read during the run (no separate verify pass): verify = \"fail\"");
                    j.verify = at(o, true);
                }
                _ => self.error(o, "not a fio verify method", "verify=crc32c, md5, xxhash, ... or verify=0"),
            },
            "random_distribution" => match crate::access::Distribution::parse(raw) {
                Ok(d) if d.is_uniform() => j.distribution = None,
                Ok(_) => j.distribution = at(o, word.trim().to_string()),
                Err(why) => self.error(o, why, crate::access::DISTRIBUTION_EXPECTED),
            },
            "percentage_random" => {
                let Some(part) = same_for_reads_and_writes(self, o, raw) else { return };
                j.pct_random = at(o, need!(self, o, raw, pct(&part), "a percentage from 0 to 100"));
            }
            "buffer_compress_percentage" => {
                j.compress_pct = at(o, need!(self, o, raw, pct(raw).filter(|p| *p < 100), "a percentage from 0 to 99"))
            }
            "buffer_compress_chunk" => {
                let ok = size(raw).filter(|n| (crate::content::MIN_CHUNK..=crate::content::MAX_CHUNK_OR_UNIT).contains(n));
                j.compress_chunk = at(o, need!(self, o, raw, ok, "a size from 64 to 1m"))
            }
            "dedupe_percentage" => {
                j.dedupe_pct = at(o, need!(self, o, raw, pct(raw).filter(|p| *p < 100), "a percentage from 0 to 99"))
            }
            "zero_buffers" => j.zero_buffers = at(o, need!(self, o, raw, flag(&o.value), "1 or 0")),
            "refill_buffers" | "scramble_buffers" => self.warn(o, "ioscope's write data is random and unique in every 512-byte sector of every write unless a content key says otherwise (see docs/workload.md, \"Data content\")"),
            "rate_process" => match word.trim() {
                "linear" => j.poisson = None,
                "poisson" => j.poisson = at(o, true),
                _ => self.error(o, "not a rate process fio has", "rate_process=linear or poisson"),
            },
            "nfs_url" => j.target = at(o, raw.to_string()),
            "wait_for" => j.wait_for = at(o, raw.to_string()),
            "startdelay" if matches!(word, "0" | "0s") => {}
            // fio's default, and what ioscope does: each bad block is counted and the run goes on.
            "verify_fatal" if word == "0" => self.warn(o, "ioscope counts each verification failure and goes on"),
            k => {
                if let Some((_, why)) = WARN_ONLY.iter().find(|(n, _)| *n == k) {
                    self.warn(o, *why);
                } else if let Some((_, why)) = REFUSED.iter().find(|(n, _)| *n == k) {
                    self.error(o, *why, "");
                } else if k.starts_with("verify_") {
                    self.error(o, "ioscope's verification (verify=...) has no such option", "see docs/verify.md");
                } else {
                    self.error(o, "a fio option ioscope has no equivalent for", "see docs/import.md, \"fio\"");
                }
            }
        }
    }

    /// Checks what spans jobs and writes the TOML.
    fn finish(&mut self, jobs: &[Job], pick: Option<usize>) -> Option<String> {
        if jobs.is_empty() {
            return None;
        }
        let (groups, n_groups) = self.groups(jobs, pick)?;
        let groups: Vec<Vec<&Job>> = groups.iter().map(|g| g.iter().map(|&i| &jobs[i]).collect()).collect();
        let all: Vec<&Job> = groups.iter().flatten().copied().collect();
        let mut top: Vec<(String, String, String)> = Vec::new(); // key, TOML value, where from

        self.run_settings(jobs, &all, &groups, &mut top);
        let rates = self.rates(&groups, &mut top);
        let description = all.iter().find_map(|j| j.description.clone());
        let desc = match &description {
            Some(d) => d.v.clone(),
            None => format!("fio: {}", all.iter().map(|j| j.display_name()).collect::<Vec<_>>().join(", ")),
        };
        top.insert(0, ("description".into(), toml_string(&desc), from(&description, "the job names", &self.files)));
        if let Some(u) = self.same(&all, "unlink", Some(false), |j| j.unlink.clone()).filter(|u| u.v) {
            top.push(("cleanup".into(), "true".into(), from(&Some(u), "", &self.files)));
        }
        let stepped = self.steps(&groups, &mut top)?;

        let mut out = String::new();
        if n_groups > 1 {
            let which = match pick {
                Some(n) => format!("group {n} of {n_groups} (--group {n})"),
                None if stepped == Some("phase") => format!("all {n_groups} stonewall groups, one phase each"),
                None => format!("all {n_groups} stonewall groups, one step each"),
            };
            let _ = writeln!(out, "# {which}");
        }
        for (k, v, src) in &top {
            // Every comment is made safe here too: a section name or value may hold any character.
            let comment = if src.is_empty() { String::new() } else { format!("  # {}", comment_safe(src)) };
            let _ = writeln!(out, "{k} = {v}{comment}");
        }
        let rated = top.iter().any(|(k, ..)| k == "rate_iops" || k == "curve");
        if stepped == Some("phase") {
            let phases: Vec<u32> =
                groups.iter().enumerate().flat_map(|(g, jobs)| jobs.iter().map(move |_| g as u32 + 1)).collect();
            self.write_workloads(&mut out, &all, Some(&phases), None, rates.as_ref(), rated);
        } else {
            self.write_workloads(&mut out, &groups[0], None, stepped, rates.as_ref(), rated);
        }
        Some(out)
    }

    /// The stonewall groups (a job with stonewall starts a new one), or the one `--group`
    /// picks; and how many the file has.
    fn groups(&mut self, jobs: &[Job], pick: Option<usize>) -> Option<(Vec<Vec<usize>>, usize)> {
        // wait_for naming the job just before is a stonewall; any other would start a job
        // in the middle of another group.
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (i, j) in jobs.iter().enumerate() {
            let mut stonewall = j.stonewall;
            if let Some(w) = &j.wait_for {
                let prev = i.checked_sub(1).and_then(|p| jobs.get(p));
                if prev.is_some_and(|p| p.section == w.v || p.display_name() == w.v) {
                    stonewall = true;
                } else {
                    let o = Opt { key: w.from.clone(), value: None, at: w.at };
                    self.error(&o, "fio starts this job when another ends; ioscope runs the jobs of a step together, and steps one after another", "wait_for naming the job just before (as stonewall does), or no wait_for");
                }
            }
            match groups.last_mut() {
                Some(g) if !stonewall => g.push(i),
                _ => groups.push(vec![i]),
            }
        }
        let n_groups = groups.len();
        if let Some(n) = pick {
            if n == 0 || n > n_groups {
                let at = jobs[0].at;
                let msg = format!("--group {n}: the job file has {n_groups} stonewall group(s)");
                self.push(Severity::Error, at, format!("[{}]", jobs[0].section), msg, &format!("1 to {n_groups}"));
                return None;
            }
            groups = vec![groups.swap_remove(n - 1)];
            self.chosen = Some(groups[0].clone());
        }
        Some((groups, n_groups))
    }

    /// The settings ioscope has once per run (engine, dir or target, the working set, depth,
    /// direct, cache, sync, duration, warm-up): every job must agree.
    fn run_settings(
        &mut self,
        jobs: &[Job],
        all: &[&Job],
        groups: &[Vec<&Job>],
        top: &mut Vec<(String, String, String)>,
    ) {
        let engine = self.same(all, "ioengine", Some("posix"), |j| j.engine.clone());
        let engine_v = engine.as_ref().map_or("posix", |e| e.v);
        top.push(("engine".into(), toml_string(engine_v), from(&engine, "fio's default ioengine=psync", &self.files)));
        let dir = self.working_dir(all);
        let target = self.same(all, "nfs_url", None, |j| j.target.clone());
        if engine_v == "nfs" {
            match &target {
                Some(t) => top.push(("target".into(), toml_string(&t.v), from(&target, "", &self.files))),
                None => {
                    let o = Opt { key: format!("[{}]", jobs[0].section), value: None, at: jobs[0].at };
                    self.error(&o, "ioengine=nfs needs the server", "nfs_url=nfs://HOST/EXPORT");
                }
            }
        } else if engine_v != "null" {
            let (d, src) = dir.clone().unwrap_or(((".").into(), "fio's default: the current directory".into()));
            top.push(("dir".into(), toml_string(&d), src));
        }
        self.working_set(groups, top);
        // Phases are one set of workloads, each job with its own settings, as one group's are.
        let sets = if phased(groups) { 1 } else { groups.len() };
        self.per_job = own::PerJob::of(all, sets, engine_v == "posix");
        let per = self.per_job;
        // Jobs of one group may each have their own (written in their [[workload]]).
        // Groups that step the depth get for_iodepth (see `steps`), not one run-wide depth.
        let depth_stepped =
            groups.iter().any(|g| g.iter().zip(&groups[0]).any(|(a, b)| a.step_depth() != b.step_depth()));
        let depth = if engine_v == "posix" && !per.iodepth {
            // One in flight whatever each job says: said once, for the first deeper one.
            all.iter().find_map(|j| j.iodepth.clone().filter(|d| d.v > 1))
        } else if per.iodepth || depth_stepped {
            None
        } else {
            self.same(all, "iodepth", Some(1), |j| j.iodepth.clone())
        };
        if let Some(d) = depth.filter(|d| d.v > 1) {
            if engine_v == "posix" {
                let o = Opt { key: "iodepth".into(), value: Some(d.v.to_string()), at: d.at };
                self.warn(&o, "fio keeps one I/O in flight per job with a synchronous engine whatever iodepth says, and so does ioscope's posix engine");
            } else {
                top.push(("iodepth".into(), d.v.to_string(), from(&Some(d), "", &self.files)));
            }
        }
        if let Some(s) = self.same(all, "sqthread_poll", Some(false), |j| j.sqpoll.clone()).filter(|s| s.v) {
            top.push(("sqpoll".into(), "true".into(), from(&Some(s), "", &self.files)));
        }
        if let Some(v) = self.same(all, "verify", Some(false), |j| j.verify.clone()).filter(|v| v.v) {
            top.push(("verify".into(), toml_string("fail"), from(&Some(v), "", &self.files)));
        }
        let direct = if per.direct { None } else { self.same(all, "direct", Some(false), |j| j.direct.clone()) };
        if let Some(d) = direct.filter(|d| d.v) {
            top.push(("direct".into(), "true".into(), from(&Some(d), "", &self.files)));
        }
        // fio invalidates each file's pages before a job by default: the same start, said.
        match self.same(all, "invalidate", Some(true), |j| j.invalidate.clone()) {
            Some(i) => {
                let mode = if i.v { "cold" } else { "as-is" };
                top.push(("cache".into(), toml_string(mode), from(&Some(i), "", &self.files)));
            }
            None => top.push(("cache".into(), toml_string("cold"), "fio's default: invalidate=1".into())),
        }
        let sync = if per.sync { None } else { self.same(all, "fsync/fdatasync/sync", None, |j| j.sync.clone()) };
        if let Some(s) = sync {
            if all.iter().all(|j| j.pct() == 100) {
                let o = Opt { key: s.from.clone(), value: None, at: s.at };
                self.warn(&o, "no job writes, so there is nothing to sync");
            } else {
                top.push(("sync".into(), toml_string(s.v), from(&Some(s), "", &self.files)));
            }
        }
        let runtime = self.same(all, "runtime", None, |j| j.runtime_s.clone());
        let time_based = all.iter().any(|j| j.time_based.as_ref().is_some_and(|t| t.v));
        match &runtime {
            Some(r) => {
                if r.v == 0 {
                    let o = Opt { key: r.from.clone(), value: None, at: r.at };
                    self.error(&o, "ioscope measures for at least one second", "runtime=1 or more");
                }
                // Without time_based fio ends a job after runtime or its amount, whichever
                // comes first, and so does ioscope with both.
                if !time_based && !self.amount(groups, top) {
                    let o = Opt { key: r.from.clone(), value: None, at: r.at };
                    self.warn(&o, "without time_based, fio ends a job after runtime or once it has done size of I/O, whichever comes first; ioscope runs for the whole runtime, going over its working set again");
                }
                top.push(("duration".into(), toml_string(&secs_literal(r.v)), from(&runtime, "", &self.files)));
            }
            None if !time_based && self.amount(groups, top) => {}
            None => {
                let o = Opt { key: format!("[{}]", jobs[0].section), value: None, at: jobs[0].at };
                let fio_does = if time_based {
                    "time_based without runtime: fio would run until stopped"
                } else {
                    "no runtime: fio would run each job until it has done size of I/O"
                };
                self.warn(
                    &o,
                    format!(
                        "{fio_does}; ioscope runs each step for its default duration of 60s (add runtime= to choose)"
                    ),
                );
            }
        }
        if let Some(r) = self.same(all, "ramp_time", Some(0), |j| j.ramp_s.clone()).filter(|r| r.v > 0) {
            top.push(("warmup".into(), toml_string(&secs_literal(r.v)), from(&Some(r), "", &self.files)));
        }
    }

    /// A job without time_based ends once it has done its amount: `number_ios`, else
    /// `io_size` (else `size`) × `loops`, per job clone; ioscope's `number_ios` or `io_size`
    /// count each workload's threads together, so numjobs multiplies it. Converted (pushed
    /// to `top`, true) for a run of one group whose jobs all come to the same amount.
    fn amount(&mut self, groups: &[Vec<&Job>], top: &mut Vec<(String, String, String)>) -> bool {
        let [group] = groups else { return false };
        let of = |j: &Job| -> Option<(&'static str, u64, String)> {
            let n = u64::from(j.threads());
            if let Some(ios) = &j.number_ios {
                return Some(("number_ios", ios.v.saturating_mul(n), ios.from.clone()));
            }
            let (bytes, src) = match (&j.io_size, &j.size) {
                (Some(v), _) | (None, Some(v)) => (v.v, v.from.clone()),
                // The device whole, once per loop and clone.
                (None, None) if j.used_whole() => {
                    let loops = j.loops.as_ref().map_or(1, |l| l.v);
                    let src = j.filename.as_ref().map_or(String::new(), |f| f.from.clone());
                    return Some(("passes", loops.saturating_mul(n), format!("{src}, used whole")));
                }
                (None, None) => return None,
            };
            let loops = j.loops.as_ref().map_or(1, |l| l.v);
            let src = match &j.loops {
                Some(l) => format!("{src} × {}", l.from),
                None => src,
            };
            Some(("io_size", bytes.saturating_mul(loops).saturating_mul(n), src))
        };
        let amounts: Vec<_> = group.iter().map(|j| of(j)).collect();
        let Some(Some((key, value, src))) = amounts.first().cloned() else { return false };
        if amounts.iter().any(|a| a.as_ref().map(|(k, v, _)| (*k, *v)) != Some((key, value))) {
            return false;
        }
        let threads = group[0].threads();
        let src = if threads > 1 { format!("{src} × numjobs={threads}") } else { src };
        if key == "passes" && value > u64::from(crate::plan::MAX_PASSES) {
            return false;
        }
        let literal = if key == "io_size" { toml_string(&size_literal(value)) } else { value.to_string() };
        top.push((key.into(), literal, format!("{src}: fio ends the job once it has done this much I/O")));
        true
    }

    /// The `[[workload]]` tables of the jobs of the step's group, or of every job, each in
    /// its `phases` entry; `rated`: the run has a rate (an open loop, whose arrivals
    /// may be Poisson).
    fn write_workloads(
        &mut self,
        out: &mut String,
        group: &[&Job],
        phases: Option<&[u32]>,
        stepped: Option<&str>,
        rates: Option<&Vec<String>>,
        rated: bool,
    ) {
        let mut names: Vec<String> = Vec::new();
        let lone = group.len() == 1;
        for (i, j) in group.iter().enumerate() {
            let base = if j.global_name && !lone { j.section.clone() } else { j.display_name() };
            let mut name = base.clone();
            let mut n = 2;
            while names.contains(&name) {
                name = format!("{base}-{n}");
                n += 1;
            }
            names.push(name.clone());
            let _ = writeln!(out, "\n# [{}] at {}", comment_safe(&j.section), self.place(j.at));
            let _ = writeln!(out, "[[workload]]\nname = {}", toml_string(&name));
            if let Some(p) = phases.and_then(|p| p.get(i)) {
                let _ = writeln!(out, "phase = {p}  # stonewall group {p}");
            }
            let pct = j.pct();
            let rw_src = j.read_pct.as_ref().map_or("fio's default rw=read".into(), |r| self.src(r));
            if stepped == Some("for_rwmix_read") || (pct != 0 && pct != 100) {
                let op = if pct == 0 { "write" } else { "read" };
                let fileio = if j.is_random() { "random" } else { "sequential" };
                let mix_src = j.mix_read.as_ref().map_or(String::new(), |m| format!(", {}", self.src(m)));
                let _ = writeln!(
                    out,
                    "operation = \"{op}\"  # {rw_src}{mix_src}\nrwmix_read = {pct}\nfileio = \"{fileio}\""
                );
            } else {
                let rw = match (pct, j.is_random()) {
                    (100, false) => "read",
                    (100, true) => "randread",
                    (_, false) => "write",
                    (_, true) => "randwrite",
                };
                let _ = writeln!(out, "rw = \"{rw}\"  # {rw_src}");
            }
            let bs_src = j.bssplit.as_ref().or(j.bs.as_ref()).map_or("fio's default bs=4k".into(), |b| self.src(b));
            let _ = writeln!(out, "bs = {}  # {bs_src}", toml_string(&bs_list(&j.sizes())));
            let t_src = j.numjobs.as_ref().map_or("fio's default numjobs=1".into(), |n| self.src(n));
            let _ = writeln!(out, "threads = {}  # {t_src}", j.threads());
            if let Some(skew) = rates.and_then(|r| r.get(i)) {
                let _ = writeln!(out, "skew = {skew}  # this job's share of the rate");
            }
            self.access_keys(j, rated, out);
            self.own_keys(j, out);
            self.content_keys(j, out);
        }
    }

    /// A job's data content: fio's percentages as ioscope's ratios (P% reducible is
    /// 100/(100−P)), fio's 512-byte compress chunk, and its dedup unit, the whole buffer.
    fn content_keys(&mut self, j: &Job, out: &mut String) {
        let writes = j.pct() < 100;
        if !writes {
            let given = [
                j.compress_pct.as_ref().map(|v| (&v.from, v.at)),
                j.dedupe_pct.as_ref().map(|v| (&v.from, v.at)),
                j.zero_buffers.as_ref().map(|v| (&v.from, v.at)),
                j.compress_chunk.as_ref().map(|v| (&v.from, v.at)),
            ];
            for (from, at) in given.into_iter().flatten() {
                let o = Opt { key: from.clone(), value: None, at };
                self.warn(&o, "fio shapes the data of writes, and this job only reads: not converted");
            }
            return;
        }
        if let Some(z) = j.zero_buffers.as_ref().filter(|z| z.v) {
            if j.compress_pct.is_some() || j.dedupe_pct.is_some() {
                let o = Opt { key: z.from.clone(), value: None, at: z.at };
                self.error(
                    &o,
                    "zeros with a compress or dedupe percentage: fio lets the percentages win; say which",
                    "zero_buffers=0, or no buffer_compress_percentage and dedupe_percentage",
                );
                return;
            }
            let _ = writeln!(out, "zero_buffers = true  # {}", self.src(z));
        }
        if let Some(p) = j.compress_pct.as_ref().filter(|p| p.v > 0) {
            let ratio = crate::content::ratio_of_percentage(f64::from(p.v)).unwrap_or(1.0);
            let _ = writeln!(out, "compress_ratio = {}  # {}", crate::content::ratio_literal(ratio), self.src(p));
            let chunk = j.compress_chunk.as_ref().map_or(512, |c| c.v);
            let src = j
                .compress_chunk
                .as_ref()
                .map_or("fio's default buffer_compress_chunk=512".to_string(), |c| self.src(c));
            let _ = writeln!(out, "compress_chunk = {}  # {src}", toml_string(&crate::units::size_literal(chunk)));
        }
        if let Some(p) = j.dedupe_pct.as_ref().filter(|p| p.v > 0) {
            let ratio = crate::content::ratio_of_percentage(f64::from(p.v)).unwrap_or(1.0);
            let _ = writeln!(out, "dedup_ratio = {}  # {}", crate::content::ratio_literal(ratio), self.src(p));
            match j.sizes().as_slice() {
                [(bs, _)] if bs % crate::content::MIN_UNIT == 0 && *bs <= crate::content::MAX_CHUNK_OR_UNIT => {
                    let _ = writeln!(
                        out,
                        "dedup_unit = {}  # fio dedups whole buffers of bs",
                        toml_string(&crate::units::size_literal(*bs))
                    );
                }
                _ => {
                    let o = Opt { key: p.from.clone(), value: None, at: p.at };
                    self.warn(&o, "fio dedups whole buffers, and this job's block size is not one multiple of 512 up to 1m: ioscope dedups 4k units");
                }
            }
        }
    }

    /// A job's access pattern: `rw=read:SIZE`, `random_distribution`, `percentage_random`
    /// and `rate_process`, each where fio would use it (a note where fio ignores it).
    fn access_keys(&mut self, j: &Job, rated: bool, out: &mut String) {
        if let Some(s) = &j.seq_skip {
            let skip = crate::access::seq_skip_literal(s.v);
            let _ = writeln!(out, "seq_skip = {}  # {}", toml_string(&skip), self.src(s));
        }
        let random = j.is_random();
        if let Some(d) = &j.distribution {
            if random {
                let _ = writeln!(out, "random_distribution = {}  # {}", toml_string(&d.v), self.src(d));
            } else {
                let o = Opt { key: d.from.clone(), value: None, at: d.at };
                self.warn(&o, "fio shapes random offsets only, and this job is sequential: not converted");
            }
        }
        if let Some(p) = j.pct_random.as_ref().filter(|p| p.v != 100) {
            if random {
                let _ = writeln!(out, "percentage_random = {}  # {}", p.v, self.src(p));
            } else {
                let o = Opt { key: p.from.clone(), value: None, at: p.at };
                self.warn(
                    &o,
                    "fio mixes in random offsets only for a random rw, and this job is sequential: not converted",
                );
            }
        }
        if let Some(p) = &j.poisson {
            if rated {
                let _ = writeln!(out, "arrivals = \"poisson\"  # {}", self.src(p));
            } else {
                let o = Opt { key: p.from.clone(), value: None, at: p.at };
                self.warn(
                    &o,
                    "fio times arrivals only under a rate (rate_iops or rate), and this job has none: not converted",
                );
            }
        }
    }

    fn place(&self, at: At) -> String {
        let path = self.files.get(at.file).map(|p| p.display().to_string()).unwrap_or_default();
        format!("{}:{}", comment_safe(&path), at.line)
    }
    fn src<T>(&self, v: &V<T>) -> String {
        format!("{}, {}", comment_safe(&v.from), self.place(v.at))
    }

    /// The value every job has (the first job's), with an error at each job that differs;
    /// a job without the option has fio's `default`.
    fn same<T: PartialEq + Clone + fmt::Debug>(
        &mut self,
        jobs: &[&Job],
        what: &str,
        default: Option<T>,
        get: impl Fn(&Job) -> Option<V<T>>,
    ) -> Option<V<T>> {
        let first = get(jobs[0]);
        let effective = |v: &Option<V<T>>| v.as_ref().map(|v| v.v.clone()).or_else(|| default.clone());
        for j in &jobs[1..] {
            let this = get(j);
            if effective(&this) != effective(&first) {
                let (at, shown) = match (&this, &first) {
                    (Some(t), _) => (t.at, t.from.clone()),
                    (None, Some(f)) => (j.at, format!("[{}] without {}", j.section, f.from)),
                    (None, None) => continue,
                };
                let other = match &first {
                    Some(f) => format!("{} of [{}] at {}", f.from, jobs[0].section, self.place(f.at)),
                    None => format!("[{}], which does not set it", jobs[0].section),
                };
                let o = Opt { key: shown, value: None, at };
                self.error(
                    &o,
                    format!(
                        "[{}] differs from {other}: ioscope has one {what} for all the workloads of a run",
                        j.section
                    ),
                    &format!("the same {what} in every job (or --group N to import one stonewall group)"),
                );
            }
        }
        first
    }

    /// The one directory of the working set, from `directory` and `filename`.
    fn working_dir(&mut self, jobs: &[&Job]) -> Option<(String, String)> {
        let mut found: Option<(String, String, At)> = None;
        for j in jobs {
            let base = j.directory.as_ref().map(|d| d.v.clone());
            let mut dirs: Vec<(String, String, At)> = Vec::new();
            if let Some(f) = &j.filename {
                for name in f.v.split(':').filter(|n| !n.is_empty()) {
                    let o = Opt { key: f.from.clone(), value: None, at: f.at };
                    let (d, note) = if j.used_whole() && !name.starts_with("/dev/") {
                        existing_file(name, base.as_deref())
                    } else {
                        filename_dir(name, base.as_deref())
                    };
                    self.warn(&o, note);
                    dirs.push((d, self.src(f), f.at));
                }
            } else if let Some(d) = &j.directory {
                dirs.push((d.v.clone(), self.src(d), d.at));
            }
            for (d, src, at) in dirs {
                match &found {
                    None => found = Some((d, src, at)),
                    Some((f, fsrc, _)) if *f != d => {
                        let o = Opt { key: src.clone(), value: None, at };
                        self.error(&o, format!("directory {d} differs from {f} ({fsrc}): ioscope keeps its working set in one directory"), "one directory for every job");
                    }
                    _ => {}
                }
            }
        }
        found.map(|(d, s, _)| (d, s))
    }

    /// `size` and `files` of the working set: the largest stonewall group's files, each
    /// job's own (fio gives every job and clone its own files unless filename names them).
    fn working_set(&mut self, groups: &[Vec<&Job>], top: &mut Vec<(String, String, String)>) {
        let mut best: Option<(u64, u64, String)> = None;
        let mut whole_device = false;
        for g in groups {
            let mut named: BTreeMap<String, u64> = BTreeMap::new();
            let (mut bytes, mut files) = (0u64, 0u64);
            let mut srcs: Vec<String> = Vec::new();
            let mut sizes: Vec<(u64, &Job)> = Vec::new();
            for j in g {
                let nr = j.nrfiles.as_ref().map_or(1, |n| n.v);
                let each = match (&j.filesize, &j.size) {
                    (Some(f), _) => f.v,
                    (None, Some(s)) => s.v / nr.max(1),
                    // A device named without a size is used whole, by fio and by ioscope.
                    (None, None) if j.used_whole() => {
                        whole_device = true;
                        continue;
                    }
                    (None, None) => {
                        let o = Opt { key: format!("[{}]", j.section), value: None, at: j.at };
                        self.error(&o, "no size: fio would size the job from files that already exist; ioscope creates its working set and needs its size", "size=1g (or filesize=)");
                        return;
                    }
                };
                if !sizes.iter().any(|(e, _)| *e == each) {
                    sizes.push((each, j));
                }
                if let Some(s) = j.size.as_ref().or(j.filesize.as_ref()) {
                    srcs.push(self.src(s));
                }
                match &j.filename {
                    Some(f) => {
                        for name in f.v.split(':').filter(|n| !n.is_empty()) {
                            let e = named.entry(name.to_string()).or_insert(0);
                            *e = (*e).max(each);
                        }
                    }
                    None => {
                        let n = nr.saturating_mul(u64::from(j.threads()));
                        files = files.saturating_add(n);
                        bytes = bytes.saturating_add(n.saturating_mul(each));
                    }
                }
            }
            if let [(a, ja), (b, jb), ..] = sizes.as_slice() {
                let o = Opt { key: format!("[{}]", jb.section), value: None, at: jb.at };
                let msg = format!(
                    "its files are {} each and [{}]'s {}: ioscope's working-set files all have one size, the total split evenly",
                    size_literal(*b),
                    ja.section,
                    size_literal(*a)
                );
                self.warn(&o, msg);
            }
            files = files.saturating_add(named.len() as u64);
            bytes = bytes.saturating_add(named.values().fold(0u64, |a, b| a.saturating_add(*b)));
            if best.as_ref().is_none_or(|b| bytes > b.0) {
                srcs.dedup();
                best = Some((bytes, files, srcs.join("; ")));
            }
        }
        let Some((bytes, files, src)) = best else { return };
        if whole_device {
            if bytes > 0 {
                let o = Opt { key: "size".into(), value: None, at: groups[0][0].at };
                self.error(&o, "a device or file used whole beside jobs with a size: ioscope's working set is one device, one existing file or one set of files", "a size in every job, or in none");
            }
            return;
        }
        let files = files.max(1);
        let per_file = (bytes / files).max(1);
        let src = if files > 1 { format!("{files} files of {}: {src}", size_literal(per_file)) } else { src };
        top.push(("size".into(), toml_string(&size_literal(per_file.saturating_mul(files))), src));
        if files > 1 {
            top.push((
                "files".into(),
                files.to_string(),
                "every job (and numjobs clone) has its own files in fio; in ioscope all workloads share them".into(),
            ));
        }
    }

    /// `rate_iops` over all workloads, and each workload's share (None: no rate).
    fn rates(&mut self, groups: &[Vec<&Job>], top: &mut Vec<(String, String, String)>) -> Option<Vec<String>> {
        let mut totals: Vec<(u64, Vec<u64>, String)> = Vec::new();
        for g in groups {
            let mut per_job = Vec::new();
            let mut srcs = Vec::new();
            for j in g {
                let bs = j.sizes();
                let one = match (&j.rate_iops, &j.rate_bytes) {
                    (Some(r), _) => Some((r.v, r)),
                    (None, Some(r)) => {
                        let o = Opt { key: r.from.clone(), value: None, at: r.at };
                        let [(b, _)] = bs.as_slice() else {
                            self.error(
                                &o,
                                "a rate in bytes per second with several block sizes has no one I/O rate",
                                "rate_iops=N, or one bs",
                            );
                            continue;
                        };
                        let iops = r.v / b;
                        if iops == 0 {
                            self.error(
                                &o,
                                format!(
                                    "{} bytes per second is less than one I/O of {} per second",
                                    r.v,
                                    size_literal(*b)
                                ),
                                "at least one block per second",
                            );
                            continue;
                        }
                        if r.v % b != 0 {
                            self.warn(&o, format!("{} bytes per second at bs {} is not a whole number of I/Os; ioscope runs {iops} I/Os per second", r.v, size_literal(*b)));
                        }
                        Some((iops, r))
                    }
                    (None, None) => None,
                };
                match one {
                    Some((iops, r)) => {
                        per_job.push(Some(iops.saturating_mul(u64::from(j.threads()))));
                        srcs.push(self.src(r));
                    }
                    None => per_job.push(None),
                }
            }
            if per_job.iter().all(Option::is_none) {
                totals.push((0, vec![], String::new()));
                continue;
            }
            if let Some(i) = per_job.iter().position(Option::is_none) {
                let j = g[i];
                let o = Opt { key: format!("[{}]", j.section), value: None, at: j.at };
                self.error(&o, "this job has no rate while others in its group have one: ioscope's rate is over all the workloads running together", "rate_iops in every job of the group, or in none");
                return None;
            }
            let per_job: Vec<u64> = per_job.into_iter().flatten().collect();
            srcs.dedup();
            totals.push((per_job.iter().fold(0u64, |a, b| a.saturating_add(*b)), per_job, srcs.join("; ")));
        }
        let first = totals.first()?.clone();
        if totals.iter().any(|t| t.0 != first.0) {
            let o = Opt { key: "rate_iops".into(), value: None, at: groups[1][0].at };
            self.error(
                &o,
                "the stonewall groups run at different rates; an ioscope run has one rate (or a curve)",
                "--group N to import one group",
            );
            return None;
        }
        if first.0 == 0 {
            return None;
        }
        top.push(("rate_iops".into(), first.0.to_string(), format!("{} (× numjobs, over all jobs)", first.2)));
        if first.1.windows(2).all(|w| w[0] == w[1]) {
            return None;
        }
        // Shares to 4 decimals; the last takes the rest so that they add up to 100.
        let mut shares: Vec<String> = Vec::new();
        let mut given = 0.0;
        for (i, r) in first.1.iter().enumerate() {
            let s =
                if i + 1 == first.1.len() { 100.0 - given } else { (*r as f64 * 1e6 / first.0 as f64).floor() / 1e4 };
            given += s;
            shares.push(trim_float(s));
        }
        Some(shares)
    }

    /// Several stonewall groups as steps (the groups match job for job except in one of
    /// numjobs, iodepth, bs or the read share, the same for every job of a group), else as
    /// phases ([`phased`]); at a rate, refused.
    fn steps(&mut self, groups: &[Vec<&Job>], top: &mut Vec<(String, String, String)>) -> Option<Option<&'static str>> {
        if groups.len() < 2 {
            return Some(None);
        }
        if phased(groups) {
            return Some(Some("phase"));
        }
        let g0 = &groups[0];
        let why = why_not_steps(groups);
        let varying: Vec<&StepDim> = STEP_DIMS
            .iter()
            .filter(|d| groups.iter().any(|g| g.iter().zip(g0).any(|(a, b)| (d.2)(a) != (d.2)(b))))
            .collect();
        if let Some(why) = why {
            let j = groups[1][0];
            let o = Opt { key: format!("[{}] (stonewall)", j.section), value: None, at: j.at };
            let list: Vec<String> = groups
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    let jobs: Vec<String> = g.iter().map(|j| format!("[{}] {}", j.section, rw_name(j))).collect();
                    format!("{} {}", i + 1, jobs.join(" + "))
                })
                .collect();
            self.error(
                &o,
                match groups.len() > crate::input::MAX_PHASES as usize {
                    true => format!("ioscope runs at most {} phases, and the job file runs {} stonewall groups one after another that are not steps ({why}): {}", crate::input::MAX_PHASES, groups.len(), list.join(", ")),
                    false => format!("the job file runs {} stonewall groups one after another ({}) at a rate, and {why}: ioscope runs such groups as phases, and a run with phases has no rate", groups.len(), list.join(", ")),
                },
                &format!("--group N (1 to {}) to import one group at a time", groups.len()),
            );
            return None;
        }
        let Some(d) = varying.first() else {
            let j = groups[1][0];
            let o = Opt { key: format!("[{}] (stonewall)", j.section), value: None, at: j.at };
            self.warn(&o, "the stonewall groups are alike: ioscope runs them as steps with the same settings");
            top.push((
                "for_threads".into(),
                format!("[{}]", vec![g0[0].threads().to_string(); groups.len()].join(", ")),
                "one step per stonewall group".into(),
            ));
            return Some(Some("for_threads"));
        };
        let values: Vec<String> = groups.iter().map(|g| (d.2)(g[0])).collect();
        let src = groups
            .iter()
            .map(|g| format!("[{}] {}", comment_safe(&g[0].section), self.place(g[0].at)))
            .collect::<Vec<_>>()
            .join(", ");
        top.push((d.0.into(), format!("[{}]", values.join(", ")), format!("one step per stonewall group: {src}")));
        Some(Some(d.0))
    }
}

/// What a step may change between stonewall groups: the loop key, fio's option, and the
/// job's value of it.
type StepDim = (&'static str, &'static str, fn(&Job) -> String);
const STEP_DIMS: [StepDim; 4] = [
    ("for_threads", "numjobs", |j| j.threads().to_string()),
    ("for_iodepth", "iodepth", |j| j.step_depth().to_string()),
    ("for_bs", "bs", |j| toml_string(&bs_list(&j.sizes()))),
    ("for_rwmix_read", "rw/rwmixread", |j| j.pct().to_string()),
];

/// Why several stonewall groups are not steps of one set of workloads (None: they are).
fn why_not_steps(groups: &[Vec<&Job>]) -> Option<String> {
    let g0 = groups.first()?;
    let differs = |f: &dyn Fn(&Job) -> String| groups.iter().any(|g| g.iter().zip(g0).any(|(a, b)| f(a) != f(b)));
    if groups.iter().any(|g| g.len() != g0.len()) {
        return Some("they have different numbers of jobs".into());
    } else if differs(&|j| j.is_random().to_string()) {
        return Some("some read or write sequentially and others at random".into());
    } else if differs(&|j| format!("{:?}{:?}", j.rate_iops.as_ref().map(|r| r.v), j.rate_bytes.as_ref().map(|r| r.v))) {
        return Some("they run at different rates".into());
    }
    let varying: Vec<&StepDim> = STEP_DIMS.iter().filter(|d| differs(&|j| (d.2)(j))).collect();
    if varying.len() > 1 {
        let names: Vec<&str> = varying.iter().map(|d| d.1).collect();
        return Some(format!("they differ in {} at once", names.join(" and ")));
    }
    if varying.iter().any(|d| groups.iter().any(|g| g.iter().any(|j| (d.2)(j) != (d.2)(g[0])))) {
        return Some("jobs running together differ in what the groups step".into());
    }
    None
}

/// Several stonewall groups that are not steps of one another run as phases, each with its
/// own jobs; a rate is over all of a run's workloads, so a job file with one is not phased
/// (and is refused, saying why).
fn phased(groups: &[Vec<&Job>]) -> bool {
    let rated = groups.iter().flatten().any(|j| j.rate_iops.is_some() || j.rate_bytes.is_some());
    (2..=crate::input::MAX_PHASES as usize).contains(&groups.len()) && !rated && why_not_steps(groups).is_some()
}

/// fio's name for a job's access pattern.
fn rw_name(j: &Job) -> &'static str {
    match (j.pct(), j.is_random()) {
        (100, false) => "read",
        (100, true) => "randread",
        (0, false) => "write",
        (0, true) => "randwrite",
        (_, false) => "rw",
        (_, true) => "randrw",
    }
}

/// `(value, at)` as "option, file:line", or `default` when absent.
fn from<T>(v: &Option<V<T>>, default: &str, files: &[PathBuf]) -> String {
    match v {
        Some(v) => {
            let path = files.get(v.at.file).map(|p| p.display().to_string()).unwrap_or_default();
            comment_safe(&format!("{}, {path}:{}", v.from, v.at.line))
        }
        None => default.into(),
    }
}

/// For options with separate read,write[,trim] values: the one value, or an error.
fn same_for_reads_and_writes(c: &mut Converter, o: &Opt, raw: &str) -> Option<String> {
    let parts: Vec<&str> = raw.split(',').map(str::trim).collect();
    let first = parts[0];
    if parts.iter().all(|p| p.is_empty() || *p == first) && !first.is_empty() {
        return Some(first.to_string());
    }
    c.error(o, "separate values for reads and writes: ioscope has one for both", "one value");
    None
}

/// fio cuts a line at its first `;` or `#`.
fn strip_comment(s: &str) -> &str {
    s.find([';', '#']).map_or(s, |i| &s[..i])
}

/// A `$` expansion ioscope cannot make.
#[derive(Debug, thiserror::Error)]
enum ExpandError {
    #[error("an unclosed ${{")]
    Unclosed,
    #[error("the environment variable {0} is not set (fio would put an empty value here)")]
    NotSet(String),
    #[error("fio's $mb_memory and math expressions $(...) are machine-dependent; ioscope needs a value")]
    MachineDependent,
}

/// Expands `${VAR}` from the environment and fio's `$ncpus` and `$pagesize`; the note says
/// what a machine-dependent value was taken as.
fn expand(v: &str) -> Result<(String, Option<String>), ExpandError> {
    let mut out = String::new();
    let mut note = None;
    let mut rest = v;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        if let Some(tail) = rest.strip_prefix("${") {
            let end = tail.find('}').ok_or(ExpandError::Unclosed)?;
            let name = &tail[..end];
            let value = std::env::var(name).map_err(|_| ExpandError::NotSet(name.to_string()))?;
            out.push_str(&value);
            rest = &tail[end + 1..];
        } else if let Some(tail) = rest.strip_prefix("$ncpus") {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            out.push_str(&n.to_string());
            note = Some(format!("$ncpus is taken as {n}, this machine's CPU count"));
            rest = tail;
        } else if let Some(tail) = rest.strip_prefix("$pagesize") {
            out.push_str("4096");
            note = Some("$pagesize is taken as 4096".to_string());
            rest = tail;
        } else if rest.starts_with("$mb_memory") || rest.starts_with("$(") {
            return Err(ExpandError::MachineDependent);
        } else {
            // Other `$` (filename_format's $jobnum...) are not expansions.
            out.push('$');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    Ok((out, note))
}

fn at<T>(o: &Opt, v: T) -> Option<V<T>> {
    Some(V { v, at: o.at, from: o.shown() })
}

fn flag(v: &Option<String>) -> Option<bool> {
    match v.as_deref().map(|s| s.trim().to_ascii_lowercase()).as_deref() {
        None | Some("1" | "true" | "yes" | "on") => Some(true),
        Some("0" | "false" | "no" | "off") => Some(false),
        _ => None,
    }
}

fn count(s: &str) -> Option<u64> {
    s.trim().parse().ok()
}

fn pct(s: &str) -> Option<u8> {
    s.trim().parse::<u8>().ok().filter(|p| *p <= 100)
}

/// A fio size: a number with an optional k, m, g, t or p (powers of 1024, kb_base=1024),
/// optionally followed by `b`, `ib` or `ib`.
fn size(s: &str) -> Option<u64> {
    let s = s.trim().to_ascii_lowercase();
    let s = s.strip_suffix("ib").or_else(|| s.strip_suffix('b')).unwrap_or(&s);
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit: u64 = match &s[digits.len()..] {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        "p" => 1 << 50,
        _ => return None,
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// A fio time in whole seconds (no suffix: seconds).
fn secs(s: &str) -> Result<u64, &'static str> {
    let bad = "not a time";
    let s = s.trim();
    let digits = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let n: u64 = digits.parse().map_err(|_| bad)?;
    let us: u64 = match &s[digits.len()..] {
        "" | "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        "ms" => 1_000,
        "us" => 1,
        _ => return Err(bad),
    };
    let total = n.checked_mul(us).ok_or(bad)?;
    if total % 1_000_000 != 0 {
        return Err("ioscope measures in whole seconds");
    }
    Ok(total / 1_000_000)
}

/// `4k/60:64k/40` (a size without a share takes an even part of what is left).
fn bssplit(s: &str) -> Option<Vec<(u64, u32)>> {
    let mut out: Vec<(u64, Option<u32>)> = Vec::new();
    for part in s.split(':').filter(|p| !p.trim().is_empty()) {
        let (b, p) = match part.split_once('/') {
            Some((b, p)) if p.trim().is_empty() => (size(b)?, None),
            Some((b, p)) => (size(b)?, Some(u32::from(pct(p)?))),
            None => (size(part)?, None),
        };
        if b == 0 {
            return None;
        }
        out.push((b, p));
    }
    let given: u32 = out.iter().filter_map(|(_, p)| *p).sum();
    let open = out.iter().filter(|(_, p)| p.is_none()).count() as u32;
    if given > 100 || out.is_empty() {
        return None;
    }
    let each = (100 - given).checked_div(open).unwrap_or(0);
    let list: Vec<(u64, u32)> = out.into_iter().map(|(b, p)| (b, p.unwrap_or(each))).filter(|(_, p)| *p > 0).collect();
    (!list.is_empty()).then_some(list)
}

/// A block-size list as ioscope writes it: `"4k"` or `"4k:60,64k:40"`.
fn bs_list(l: &[(u64, u32)]) -> String {
    match l {
        [(b, _)] => size_literal(*b),
        _ => l.iter().map(|(b, w)| format!("{}:{w}", size_literal(*b))).collect::<Vec<_>>().join(","),
    }
}

fn trim_float(f: f64) -> String {
    let s = format!("{f:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// Text safe in a TOML comment: one line, no control characters.
fn comment_safe(s: &str) -> String {
    s.chars().map(|c| if c.is_control() && c != '\t' { '?' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stonewall_groups_that_differ_only_in_iodepth_become_a_step_per_depth() {
        let base = "[global]\nioengine=libaio\nrw=randread\nsize=64m\nruntime=5\ntime_based\n";
        let t = run(&format!("{base}[a]\niodepth=1\n[b]\nstonewall\niodepth=8\n[c]\nstonewall\niodepth=32\n")).unwrap();
        assert!(t.toml.contains("for_iodepth = [1, 8, 32]"), "{}", t.toml);
        assert!(!t.toml.lines().any(|l| l.starts_with("iodepth = ")), "{}", t.toml);
        // On a synchronous engine fio keeps one in flight whatever iodepth says: no steps.
        let t = run("[global]\nrw=randread\nsize=64m\nruntime=5\n[a]\niodepth=1\n[b]\nstonewall\niodepth=8\n").unwrap();
        assert!(!t.toml.contains("for_iodepth"), "{}", t.toml);
        // Depth and bs at once is not one loop: the groups are phases, each job with its own depth.
        let t = run(&format!("{base}[a]\niodepth=1\n[b]\nstonewall\niodepth=8\nbs=64k\n")).unwrap().toml;
        assert!(t.contains("phase = 2") && t.contains("iodepth = 8") && !t.contains("for_iodepth"), "{t}");
        // At a rate they are refused, saying why.
        let e = run(&format!("{base}rate_iops=100\n[a]\niodepth=1\n[b]\nstonewall\niodepth=8\nbs=64k\n")).unwrap_err();
        assert!(e.iter().any(|f| f.to_string().contains("differ in iodepth and bs at once")), "{e:?}");
    }

    #[test]
    fn a_job_without_time_based_ends_at_its_amount_per_clone_times_numjobs() {
        let key = |t: &str, k: &str| {
            t.lines()
                .find_map(|l| l.strip_prefix(&format!("{k} = ")))
                .map(|v| v.split("  #").next().unwrap().to_string())
        };
        // No runtime: the amount alone; numjobs clones each do size.
        let t = run("[a]\nsize=64m\nnumjobs=2\nrw=randread\n").unwrap();
        assert_eq!(key(&t.toml, "io_size").as_deref(), Some("\"128m\""), "{}", t.toml);
        assert_eq!(key(&t.toml, "duration"), None, "{}", t.toml);
        assert!(!t.warnings.iter().any(|w| w.to_string().contains("60s")), "{:?}", t.warnings);
        // runtime without time_based: whichever comes first, as fio.
        let t = run("[a]\nsize=64m\nio_size=1g\nloops=3\nruntime=10\n").unwrap().toml;
        assert_eq!(
            (key(&t, "io_size").as_deref(), key(&t, "duration").as_deref()),
            (Some("\"3g\""), Some("\"10s\"")),
            "{t}"
        );
        let t = run("[a]\nsize=64m\nnumber_ios=1000\nnumjobs=4\n").unwrap().toml;
        assert_eq!(key(&t, "number_ios").as_deref(), Some("4000"), "{t}");
        // time_based: time only.
        let t = run("[a]\nsize=64m\ntime_based\nruntime=10\n").unwrap().toml;
        assert_eq!(key(&t, "io_size"), None, "{t}");
        // Jobs that come to different amounts cannot share one: timed, with the warning.
        let t = run("[a]\nsize=64m\nrw=randread\n[b]\nsize=64m\nnumjobs=2\nrw=randwrite\n").unwrap();
        assert_eq!(key(&t.toml, "io_size"), None, "{}", t.toml);
        assert!(t.warnings.iter().any(|w| w.to_string().contains("default duration of 60s")), "{:?}", t.warnings);
    }

    fn run(text: &str) -> Result<Imported, Vec<Finding>> {
        let read = |p: &Path, _: u64| match p.to_str() {
            Some("inc.fio") => Ok("bs=8k ; from the include\n".to_string()),
            _ => Err(ReadError::Unreadable {
                file: p.display().to_string(),
                error: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
            }),
        };
        convert(Path::new("job.fio"), text, None, &read).map_err(|e| match e {
            FioError::Refused(f) => f,
            FioError::Read(r) => panic!("{r}"),
        })
    }

    /// Typed errors keep the messages users of `ioscope import fio` read.
    #[test]
    fn expansions_and_reads_that_fail_say_why() {
        let e = |v: &str| expand(v).unwrap_err().to_string();
        assert_eq!(e("${HOME"), "an unclosed ${");
        assert_eq!(
            e("${IOSCOPE_SURELY_UNSET_VARIABLE}"),
            "the environment variable IOSCOPE_SURELY_UNSET_VARIABLE is not set (fio would put an empty value here)"
        );
        assert_eq!(
            e("$mb_memory"),
            "fio's $mb_memory and math expressions $(...) are machine-dependent; ioscope needs a value"
        );
        let bad = std::env::temp_dir().join(format!("ioscope-not-text-{}.fio", std::process::id()));
        std::fs::write(&bad, b"[a]\nrw=read\nbs=\xff\n").unwrap();
        let err = read_text(&bad, MAX_TOTAL_BYTES).unwrap_err().to_string();
        let _ = std::fs::remove_file(&bad);
        assert_eq!(
            err,
            format!("{}:3: error: this line is not UTF-8 text: expected a fio job file (text)", bad.display())
        );
        let missing = std::env::temp_dir().join("ioscope-surely-missing/job.fio");
        assert_eq!(
            read_text(&missing, MAX_TOTAL_BYTES).unwrap_err().to_string(),
            format!("{}: error: cannot read the file: No such file or directory (os error 2)", missing.display())
        );
    }

    #[test]
    fn fio_sizes_times_and_bssplit_read_as_fio_reads_them() {
        assert_eq!(
            (size("4K"), size("4kib"), size("1m"), size("512"), size("3x")),
            (Some(4096), Some(4096), Some(1 << 20), Some(512), None)
        );
        assert_eq!(
            (secs("90"), secs("2m"), secs("1500ms")),
            (Ok(90), Ok(120), Err("ioscope measures in whole seconds"))
        );
        assert_eq!(bssplit("4k/50:64k/:1m/"), Some(vec![(4096, 50), (65536, 25), (1 << 20, 25)]));
        assert_eq!(bssplit("4k/60:8k/50"), None, "more than 100%");
        assert_eq!(strip_comment("numjobs=4\t; four"), "numjobs=4\t");
    }

    #[test]
    fn comments_bare_keys_includes_and_later_globals_apply_as_in_fio() {
        let text = "# comment\n[global]\nsize=1g\ndirectory=/d\ntime_based\nruntime=10\n[a]\nrw=randread\ninclude inc.fio\n[global]\nbs=16k\n[b]\nrw=write\n";
        let t = run(text).unwrap().toml;
        // [a] got bs from the include; [b] from the second [global] (a later [global] applies to later jobs).
        assert!(t.contains("bs = \"8k\"  # bs=8k, inc.fio:1"), "{t}");
        assert!(t.contains("bs = \"16k\"  # bs=16k, job.fio:11"), "{t}");
        assert!(t.contains("duration = \"10s\""), "{t}");
    }

    #[test]
    fn every_refused_option_is_named_with_its_line() {
        let e =
            run("[global]\nsize=1g\n[a]\nthinktime=10\nfsync=4\nrw=trim\ninclude missing.fio\nfoo=1\n").unwrap_err();
        let got: Vec<(usize, &str, Severity)> = e.iter().map(|f| (f.line, f.option.as_str(), f.severity)).collect();
        assert!(got.contains(&(4, "thinktime=10", Severity::Error)), "{got:?}");
        assert!(got.contains(&(5, "fsync=4", Severity::Error)), "{got:?}");
        assert!(got.contains(&(6, "rw=trim", Severity::Error)), "{got:?}");
        assert!(got.contains(&(7, "include=missing.fio", Severity::Error)), "{got:?}");
        assert!(got.contains(&(8, "foo=1", Severity::Error)), "{got:?}");
        let e = run("[a]\nsize=1g\nnumjobs=${IOSCOPE_SURELY_UNSET_VAR}\n").unwrap_err();
        assert!(e.iter().any(|f| f.line == 3 && f.message.contains("IOSCOPE_SURELY_UNSET_VAR is not set")), "{e:?}");
        assert!(run("size=1g\n[a]\n").unwrap_err()[0].message.contains("before any section"));
    }

    #[test]
    fn a_conversion_ioscope_would_not_run_is_refused_at_the_fio_option() {
        let e = run("[a]\nsize=1g\nioengine=io_uring\nbs=16m\niodepth=128\n").unwrap_err();
        let bad: Vec<&Finding> = e.iter().filter(|f| f.severity == Severity::Error).collect();
        assert_eq!(bad.len(), 1, "{e:?}");
        assert_eq!((bad[0].line, bad[0].option.as_str(), bad[0].path.to_str()), (5, "iodepth=128", Some("job.fio")));
        assert!(bad[0].message.contains("the converted iodepth 128 is not valid"), "{}", bad[0].message);
    }

    #[test]
    fn an_imported_job_starts_with_fios_invalidate_cold_by_default_and_as_is_with_invalidate_0() {
        let t = run("[a]\nsize=256m\nrw=randwrite\nruntime=5\n").unwrap().toml;
        assert!(t.contains("cache = \"cold\"  # fio's default: invalidate=1"), "{t}");
        let t = run("[a]\nsize=256m\nrw=randwrite\nruntime=5\ninvalidate=0\n").unwrap().toml;
        assert!(t.contains("cache = \"as-is\"  # invalidate=0, job.fio:5"), "{t}");
        let t = run("[global]\ninvalidate=1\n[a]\nsize=256m\nruntime=5\n").unwrap().toml;
        assert!(t.contains("cache = \"cold\"  # invalidate=1, job.fio:2"), "{t}");
        // Jobs that disagree cannot be one run.
        let e = run("[a]\nsize=1g\nruntime=5\ninvalidate=0\n[b]\nrw=write\n").unwrap_err();
        assert!(e.iter().any(|f| f.message.contains("ioscope has one invalidate for all the workloads")), "{e:?}");
    }

    #[test]
    fn run_wide_settings_must_agree_across_stonewall_groups_and_fio_defaults_count() {
        // direct=0, iodepth=1 and psync are fio's defaults: the same as not saying them.
        let t = run("[global]\nsize=1g\nruntime=5\n[a]\ndirect=0\niodepth=1\nioengine=psync\n[b]\nrw=write\n").unwrap();
        assert!(t.toml.contains("engine = \"posix\"  # ioengine=psync, job.fio:7"), "{}", t.toml);
        // Jobs running together may differ: each workload gets its own direct.
        let t = run("[global]\nsize=1g\nruntime=5\n[a]\ndirect=1\n[b]\nrw=write\n").unwrap().toml;
        assert!(t.contains("direct = true  # direct=1, job.fio:5"), "{t}");
        assert!(t.contains("direct = false  # fio's default direct=0"), "{t}");
        // Stonewall groups are steps of the same workloads: there they must agree.
        let e = run("[global]\nsize=1g\nruntime=5\n[a]\ndirect=1\n[b]\nstonewall\nrw=write\n").unwrap_err();
        let bad: Vec<&Finding> = e.iter().filter(|f| f.severity == Severity::Error).collect();
        assert_eq!(bad.len(), 1, "{e:?}");
        assert_eq!((bad[0].line, bad[0].option.as_str()), (6, "[b] without direct=1"));
        assert!(bad[0].message.contains("differs from direct=1 of [a] at job.fio:5"), "{}", bad[0].message);
    }

    #[test]
    fn fio_verify_methods_become_ioscope_verify_with_the_approximation_said() {
        let t = run("[global]\nsize=1g\nruntime=5\ndirectory=/tmp/x\n[a]\nrw=randrw\nverify=crc32c\ndo_verify=1\n")
            .unwrap();
        assert!(t.toml.contains("verify = \"fail\""), "{}", t.toml);
        assert!(t.warnings.iter().any(|w| w.message.contains("XXH3-64")), "{:?}", t.warnings);
        let t = run("[global]\nsize=1g\nruntime=5\n[a]\nrw=randrw\nverify=0\n").unwrap();
        assert!(!t.toml.contains("verify ="), "{}", t.toml);
        let e = run("[global]\nsize=1g\nruntime=5\n[a]\nrw=randrw\nverify=sparkle\n").unwrap_err();
        assert!(e.iter().any(|f| f.message.contains("not a fio verify method")), "{e:?}");
    }

    /// Findings of importing `job` (written in `dir` as job.fio), and every file read.
    fn import_in(dir: &Path, job: &str) -> (Vec<Finding>, Vec<PathBuf>) {
        let path = dir.join("job.fio");
        std::fs::write(&path, job).unwrap();
        let opened = std::cell::RefCell::new(Vec::new());
        let read = |p: &Path, max: u64| {
            opened.borrow_mut().push(p.to_path_buf());
            read_text(p, max)
        };
        let findings = match convert(&path, job, None, &read) {
            Ok(i) => i.warnings,
            Err(FioError::Refused(f)) => f,
            Err(FioError::Read(e)) => panic!("{e}"),
        };
        (findings, opened.into_inner())
    }

    #[test]
    fn an_include_outside_the_job_files_directory_is_refused_before_it_is_read() {
        let top = tempfile::tempdir().unwrap();
        let (jobs, elsewhere) = (top.path().join("jobs"), top.path().join("secrets"));
        std::fs::create_dir_all(jobs.join("sub")).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        let secret = elsewhere.join("credentials");
        std::fs::write(&secret, "aws_secret_access_key=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY\n").unwrap();
        std::os::unix::fs::symlink(&secret, jobs.join("link.fio")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, jobs.join("dirlink")).unwrap();
        std::fs::write(jobs.join("sub/ok.fio"), "bs=8k\ninclude ../../secrets/credentials\n").unwrap();
        let job = format!(
            "[global]\nsize=1g\n[a]\nrw=read\ninclude ../secrets/credentials\ninclude {}\ninclude link.fio\n\
             include dirlink/credentials\ninclude sub/ok.fio\n",
            secret.display()
        );
        let (findings, opened) = import_in(&jobs, &job);
        let outside: Vec<(bool, usize)> = findings
            .iter()
            .filter(|f| f.message.contains("is outside") && f.severity == Severity::Error)
            .map(|f| (f.path.ends_with("ok.fio"), f.line))
            .collect();
        // Lines 5-8 of the job file, and line 2 of sub/ok.fio (`..` from an included file).
        assert_eq!(outside, vec![(false, 5), (false, 6), (false, 7), (false, 8), (true, 2)], "{findings:#?}");
        assert_eq!(
            opened,
            vec![std::fs::canonicalize(jobs.join("sub/ok.fio")).unwrap()],
            "only the file inside is read"
        );
        let all: String = findings.iter().map(|f| f.to_string() + "\n").collect();
        assert!(!all.contains("wJalrXUtnFEMI"), "{all}");
    }

    #[test]
    fn includes_share_one_byte_budget() {
        let dir = tempfile::tempdir().unwrap();
        // Each fits the bound of one file alone; together they do not.
        let half = format!("bs=4k\n{}", "\n".repeat(MAX_TOTAL_BYTES as usize / 2));
        std::fs::write(dir.path().join("big.fio"), &half).unwrap();
        let job = "[global]\nsize=1g\n[a]\nrw=read\ninclude big.fio\ninclude big.fio\ninclude big.fio\n";
        let (findings, opened) = import_in(dir.path(), job);
        let over: Vec<usize> = findings.iter().filter(|f| f.message.contains("in all")).map(|f| f.line).collect();
        assert_eq!(over, vec![6, 7], "{findings:#?}");
        assert!(findings
            .iter()
            .any(|f| f.message.contains(&format!("more than {} in all", crate::format_size(MAX_TOTAL_BYTES)))));
        assert_eq!(opened.len(), 3, "the budget left is the bound of each read");
        // Lines: a bound on option lines in all, whatever their bytes.
        let many = "bs=4k\n".repeat(MAX_LINES / 2 + 1);
        std::fs::write(dir.path().join("many.fio"), &many).unwrap();
        let job = "[global]\nsize=1g\n[a]\nrw=read\ninclude many.fio\ninclude many.fio\n";
        let (findings, _) = import_in(dir.path(), job);
        assert!(findings.iter().any(|f| f.message.contains("option lines in all")), "{findings:#?}");
    }

    #[test]
    fn a_line_of_an_included_file_is_echoed_only_as_a_short_excerpt() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!("some_unknown_option={}", "x".repeat(200));
        std::fs::write(dir.path().join("inc.fio"), format!("{long}\n")).unwrap();
        let (findings, _) = import_in(dir.path(), "[global]\nsize=1g\n[a]\nrw=read\ninclude inc.fio\n");
        let f = findings.iter().find(|f| f.path.ends_with("inc.fio")).expect("a finding in inc.fio");
        assert!(f.option.chars().count() <= INCLUDED_EXCERPT + 1, "{f}");
    }

    #[test]
    fn a_value_of_an_included_file_is_never_echoed() {
        let dir = tempfile::tempdir().unwrap();
        let secret = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY";
        std::fs::write(dir.path().join("credentials"), format!("aws_secret_access_key = {secret}\n")).unwrap();
        let (findings, _) = import_in(dir.path(), "[global]\nsize=1g\n[a]\nrw=read\ninclude credentials\n");
        let f = findings.iter().find(|f| f.path.ends_with("credentials")).expect("a finding in the included file");
        assert_eq!(f.option, "aws_secret_access_key=…", "{f}");
        assert!(findings.iter().all(|f| !f.to_string().contains(&secret[..4])), "{findings:#?}");
    }

    #[test]
    fn with_group_only_that_groups_sections_and_global_count() {
        let text = "[global]\nsize=1g\nruntime=5\n[w]\nrw=write\n[r]\nstonewall\nrw=randread\nthinktime=10\n";
        let read = |_: &Path, _: u64| Err(ReadError::NotText { file: String::new(), line: 1 });
        let g1 = convert(Path::new("job.fio"), text, Some(1), &read).unwrap();
        assert!(g1.toml.contains("rw = \"write\""), "{}", g1.toml);
        let Err(FioError::Refused(e)) = convert(Path::new("job.fio"), text, Some(2), &read) else { panic!() };
        assert!(e.iter().any(|f| f.line == 9 && f.severity == Severity::Error), "{e:?}");
        assert!(run(text).is_err(), "without --group, the groups differ in access and thinktime is refused");
    }

    #[test]
    fn mangled_job_files_are_reported_never_a_panic() {
        let base = "[global]\nioengine=libaio\niodepth=8\ndirect=1\nsize=1g\nruntime=10\ntime_based\nrate=4m\n\
                    directory=/d\nbssplit=4k/50:64k/\nbsrange=4k-16k\n[a]\nrw=randrw\nrwmixread=70\nnumjobs=2\n\
                    rate_iops=100\nfilename=x:y\nnrfiles=3\nfilesize=1m\n[b]\nstonewall\nrw=write\nfsync=1\n\
                    wait_for=a\nname=${HOME}\nramp_time=5s\ninclude inc.fio\n";
        let alphabet: Vec<char> = "=[]${}:/,-;#\n0123456789kmgpb%xa \t".chars().collect();
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n.max(1) as u64) as usize
        };
        for _ in 0..1000 {
            let mut t: Vec<char> = base.chars().collect();
            for _ in 0..1 + next(6) {
                let at = next(t.len() + 1);
                match next(3) {
                    0 => t.insert(at, alphabet[next(alphabet.len())]),
                    1 if at < t.len() => _ = t.remove(at),
                    _ => {
                        let end = (at + next(20)).min(t.len());
                        let piece: Vec<char> = t[at..end].to_vec();
                        t.splice(at..at, piece);
                    }
                }
            }
            let text: String = t.into_iter().collect();
            for group in [None, Some(1), Some(2)] {
                let read = |_: &Path, _: u64| Ok("bs=8k\n".to_string());
                let _ = convert(Path::new("job.fio"), &text, group, &read);
            }
        }
    }
}
