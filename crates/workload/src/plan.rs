//! The Plan: a validated, normalized workload that the executor runs as is.
//! Every field has a unit in its name or type; nothing here needs checking again.

pub use crate::access::{AbsZone, Access, Arrivals, Distribution, Zone};
pub use crate::content::Content;
pub use crate::flow::{FlowOp, FlowStep};
pub use crate::host::{HostKind, HostShare, HostSpec, OnHostLoss};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Access pattern and operation mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    Read,
    Write,
    RandRead,
    RandWrite,
    RandRw,
    /// Sequential mixed reads and writes (fio's `rw`, `readwrite`).
    ReadWrite,
}

impl Rw {
    /// Whether it mixes reads and writes (and so takes `rwmix_read`).
    pub fn is_mixed(self) -> bool {
        matches!(self, Rw::RandRw | Rw::ReadWrite)
    }
    pub fn is_random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }
    /// Percentage of operations that are reads (0..=100).
    pub fn default_read_pct(self) -> u8 {
        match self {
            Rw::Read | Rw::RandRead => 100,
            Rw::Write | Rw::RandWrite => 0,
            Rw::RandRw | Rw::ReadWrite => 50,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
            Rw::RandRw => "randrw",
            Rw::ReadWrite => "rw",
        }
    }
}

/// What to do after each write to make it durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncMode {
    /// Buffered writes, no sync.
    None,
    /// fsync(2) after every write.
    Fsync,
    /// fdatasync(2) after every write.
    Fdatasync,
    /// Open with O_DSYNC: every write is durable when it returns.
    Dsync,
}

/// Data validation (`verify`, `--verify`): every written block carries a header that
/// reads check (docs/verify.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyMode {
    /// No headers, no checks.
    #[default]
    Off,
    /// Check; any mismatch makes the run fail (exit 1).
    Fail,
    /// Check and report mismatches; the exit code ignores them.
    Report,
}

impl VerifyMode {
    pub fn is_off(&self) -> bool {
        *self == VerifyMode::Off
    }
    pub fn name(self) -> &'static str {
        match self {
            VerifyMode::Off => "off",
            VerifyMode::Fail => "fail",
            VerifyMode::Report => "report",
        }
    }
}

/// The page cache at the start of the measured run (`cache`, `--cache`; docs/cache.md):
/// what is done to the working set's pages after preparation and before the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMode {
    /// Each file's written data synced and its pages dropped (fio's `invalidate=1`).
    #[default]
    Cold,
    /// Each file read once through the page cache.
    Warm,
    /// Nothing done: the cache as preparation or an earlier run left it.
    AsIs,
}

impl CacheMode {
    pub fn name(self) -> &'static str {
        match self {
            CacheMode::Cold => "cold",
            CacheMode::Warm => "warm",
            CacheMode::AsIs => "as-is",
        }
    }
    /// What a plan without the key meant: ioscope before `cache` did nothing to the cache.
    pub fn before_recorded() -> CacheMode {
        CacheMode::AsIs
    }
}

/// Which engine performs the I/O, and what each can do: the engine table.
pub use ioscope_engine_table::{EngineKind, EngineSpec, Target, TargetKind};

/// One entry of a weighted block-size list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockSize {
    pub bytes: u64,
    /// Relative weight (the list's weights need not sum to 100).
    pub weight: u32,
}

/// What a workload does (vdbench fwd `operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Operation {
    /// Reads, or a read/write mix with `read_pct` below 100.
    Read,
    /// Writes, or a read/write mix with `read_pct` above 0.
    Write,
    Create,
    Delete,
    Mkdir,
    Rmdir,
    Open,
    Close,
    Getattr,
    Setattr,
    Copy,
    Move,
    /// Lists a leaf directory of the tree (READDIR; on S3, a listing under its prefix).
    List,
}

impl Operation {
    pub const ALL: [Operation; 13] = [
        Operation::Read,
        Operation::Write,
        Operation::Create,
        Operation::Delete,
        Operation::Mkdir,
        Operation::Rmdir,
        Operation::Open,
        Operation::Close,
        Operation::Getattr,
        Operation::Setattr,
        Operation::Copy,
        Operation::Move,
        Operation::List,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::Write => "write",
            Operation::Create => "create",
            Operation::Delete => "delete",
            Operation::Mkdir => "mkdir",
            Operation::Rmdir => "rmdir",
            Operation::Open => "open",
            Operation::Close => "close",
            Operation::Getattr => "getattr",
            Operation::Setattr => "setattr",
            Operation::Copy => "copy",
            Operation::Move => "move",
            Operation::List => "list",
        }
    }
    /// Reads or writes file data (the only operations on a flat working set).
    pub fn transfers(self) -> bool {
        matches!(self, Operation::Read | Operation::Write)
    }
}

/// How a workload moves through a file (vdbench `fileio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileIo {
    Sequential,
    Random,
}

/// How a workload picks the next file of a dataset (vdbench `fileselect`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileSelect {
    Random,
    Sequential,
    /// Skewed: file k (from 1) is chosen with probability proportional to 1 / k^theta.
    Zipf(f64),
}

/// What a pattern workload draws into a heat map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PatternMap {
    Offset,
    Size,
}

/// A text drawn into the offset or size heat map over time ("latency art").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pattern {
    pub text: String,
    pub map: PatternMap,
    /// Time per font column.
    #[serde(with = "duration_ns", rename = "column_ns")]
    pub column: Duration,
}

/// One workload: an operation mix run by a group of threads (vdbench fwd).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub name: String,
    pub operation: Operation,
    /// Read and write: share of reads in percent (100 = reads only, 0 = writes only).
    pub read_pct: u8,
    /// Transfer sizes with weights; one entry for a fixed size. Never empty.
    pub block_sizes: Vec<BlockSize>,
    pub fileio: FileIo,
    pub fileselect: FileSelect,
    pub threads: u32,
    /// Share of the run's rate in percent; None = an even share of what is left.
    pub skew_pct: Option<f64>,
    pub pattern: Option<Pattern>,
    /// Where in a file its I/Os go and when they are due (seq_skip, random_distribution,
    /// percentage_random, arrivals).
    #[serde(default, skip_serializing_if = "Access::is_default")]
    pub access: Access,
    /// What its writes hold (compress_ratio, dedup_ratio, zero_buffers); random by default.
    #[serde(default, skip_serializing_if = "Content::is_default")]
    pub content: Content,
    /// This workload's own I/Os in flight per thread, sync mode and O_DIRECT (`iodepth`,
    /// `sync`, `direct` in its [[workload]]); None: the run's ([`Plan::iodepth_of`]...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iodepth: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<bool>,
    /// This workload's own open-loop rate (`rate_iops` in its [[workload]]); the run's
    /// `rate_iops` is then their sum and each `skew_pct` its share (set by the reader).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_iops: Option<u64>,
    /// The phase it runs in (`phase`, 1-based): a run's phases run one after another, each
    /// with its own workloads (fio's stonewall groups); None = every phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<u32>,
    /// A flow: the steps each thread runs in order, over and over, on the dataset's files
    /// (crate::flow); empty for a workload of one operation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flow: Vec<FlowStep>,
    /// A flow's rounds per second, all its threads together (None: each round when the one
    /// before ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_rate: Option<u64>,
}

impl Workload {
    pub fn writes(&self) -> bool {
        if !self.flow.is_empty() {
            return self.flow.iter().any(|s| s.op.writes());
        }
        match self.operation {
            Operation::Read => self.read_pct < 100,
            Operation::Open
            | Operation::Close
            | Operation::Getattr
            | Operation::Mkdir
            | Operation::Rmdir
            | Operation::List => false,
            _ => true,
        }
    }
    pub fn min_block_bytes(&self) -> u64 {
        self.block_sizes.iter().map(|b| b.bytes).min().unwrap_or(1)
    }
    pub fn max_block_bytes(&self) -> u64 {
        self.block_sizes.iter().map(|b| b.bytes).max().unwrap_or(1)
    }
    /// fio's name for a transfer workload on a flat working set ("randread", "write"...).
    pub fn rw_name(&self) -> &'static str {
        let random = self.fileio == FileIo::Random;
        match (self.read_pct, random) {
            (100, false) => "read",
            (100, true) => "randread",
            (0, false) => "write",
            (0, true) => "randwrite",
            (_, true) => "randrw",
            (_, false) => "rw",
        }
    }
}

/// Whether a dataset already on disk is used, created or required.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DatasetFormat {
    /// Use a tree that matches the definition, else (re)create it.
    Reuse,
    /// Always recreate.
    Always,
    /// The tree must exist.
    Never,
}

/// A directory tree of files (vdbench fsd).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    /// The set's name, for flow steps (`in NAME`): optional on the [dataset], required on
    /// each [[fileset]].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub dir: PathBuf,
    pub depth: u32,
    pub width: u32,
    /// Files per leaf directory.
    pub files: u32,
    /// File sizes with weights.
    pub sizes: Vec<BlockSize>,
    pub total_size_bytes: Option<u64>,
    pub working_set_bytes: Option<u64>,
    pub format: DatasetFormat,
    /// Share of the files that preparation creates, in percent (Filebench's `prealloc`);
    /// None: all of them. The others are missing when the run starts, for a flow to create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prealloc_pct: Option<u8>,
    /// `sizes = "gamma:MEAN:SHAPE"`: the gamma distribution `sizes` was made from (its
    /// quantiles, [`SizeGamma::quantiles`]); None: `sizes` as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_gamma: Option<SizeGamma>,
}

/// A gamma distribution of file sizes with its mean and shape (Filebench's cvar-gamma).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeGamma {
    pub mean_bytes: u64,
    pub shape: f64,
}

impl SizeGamma {
    /// Quantiles the dataset's sizes are drawn from with equal weight: the distribution's
    /// value at the middle of each of this many equal slices of probability.
    pub const QUANTILES: u32 = 100;

    /// The sizes (1 byte at least), each of weight 1, scaled so that their mean is the
    /// distribution's: every file's size is one of them, picked by a hash of its index as
    /// from any weighted list.
    pub fn quantiles(&self) -> Vec<BlockSize> {
        use statrs::distribution::{ContinuousCDF, Gamma};
        let rate = self.shape / self.mean_bytes.max(1) as f64;
        let Ok(g) = Gamma::new(self.shape, rate) else {
            return vec![BlockSize { bytes: self.mean_bytes.max(1), weight: 1 }];
        };
        let q: Vec<f64> =
            (0..Self::QUANTILES).map(|k| g.inverse_cdf((k as f64 + 0.5) / Self::QUANTILES as f64)).collect();
        // The middles of the slices miss a little of the tail: scaled to the mean asked for.
        let scale = self.mean_bytes as f64 / (q.iter().sum::<f64>() / q.len() as f64).max(1e-9);
        q.iter().map(|x| BlockSize { bytes: ((x * scale).round() as u64).max(1), weight: 1 }).collect()
    }
}

/// A command run at set moments during the run, timed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub name: String,
    pub command: String,
    /// Start times from the start of the run, ascending.
    #[serde(with = "durations_ns", rename = "at_ns")]
    pub at: Vec<Duration>,
    #[serde(with = "opt_duration_ns", rename = "timeout_ns")]
    pub timeout: Option<Duration>,
}

/// What a staircase steps up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StaircaseOf {
    /// Threads of every workload (on every host).
    #[default]
    Threads,
    /// Hosts: the first N hosts run, the others idle (`staircase = "hosts:1-4/60s"`).
    Hosts,
}

impl StaircaseOf {
    fn is_threads(&self) -> bool {
        *self == StaircaseOf::Threads
    }
}

/// A ramp of threads (or hosts): `start`, `start + add`, ... up to `max`, each for `every`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Staircase {
    pub start: u32,
    pub add: u32,
    pub max: u32,
    #[serde(with = "duration_ns", rename = "every_ns")]
    pub every: Duration,
    /// What it steps up; threads unless written `hosts:...`.
    #[serde(default, skip_serializing_if = "StaircaseOf::is_threads")]
    pub of: StaircaseOf,
}

impl Staircase {
    /// The counts of its steps: `start`, `start + add`, ... up to `max`.
    pub fn counts(&self) -> Vec<u32> {
        // A plan read back from a results file was not validated: never loop forever or wrap.
        let add = self.add.max(1);
        std::iter::successors(Some(self.start), |t| t.checked_add(add)).take_while(|t| *t <= self.max).collect()
    }
}

/// The rate of one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// Closed loop: as fast as possible.
    Max,
    /// Open loop at this many I/Os per second over all workloads.
    Fixed(u64),
    /// Open loop at this percentage of the rate measured by the step `of_step` (a max step).
    Curve { pct: u8, of_step: u32 },
}

/// One phase of a run with fixed parameters. `None` = the workload's own value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub index: u32,
    /// Threads of every workload.
    pub threads: Option<u32>,
    /// I/Os in flight per thread of every workload (`for_iodepth`); None = each its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iodepth: Option<u32>,
    /// How many hosts run in it (the first N, in the order given); None = every host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts: Option<u32>,
    /// The phase it belongs to (1-based), in a run whose workloads name phases: only the
    /// workloads of this phase (and those without one) run in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<u32>,
    pub block_sizes: Option<Vec<BlockSize>>,
    pub read_pct: Option<u8>,
    pub rate: Rate,
    #[serde(with = "duration_ns", rename = "warmup_ns")]
    pub warmup: Duration,
    #[serde(with = "duration_ns", rename = "duration_ns")]
    pub duration: Duration,
}

impl Step {
    /// How many threads workload `w` runs in this step.
    pub fn threads_of(&self, w: &Workload) -> u32 {
        if !self.runs(w) {
            return 0;
        }
        self.threads.unwrap_or(w.threads)
    }
    /// Whether workload `w` runs in this step (it does unless it belongs to another phase).
    pub fn runs(&self, w: &Workload) -> bool {
        match (self.phase, w.phase) {
            (Some(step), Some(own)) => step == own,
            _ => true,
        }
    }
    /// "threads=4 bs=8k rate=50%": what sets this step apart (empty for a single plain step).
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if let Some(p) = self.phase {
            parts.push(format!("phase={p}"));
        }
        if let Some(h) = self.hosts {
            parts.push(format!("hosts={h}"));
        }
        if let Some(t) = self.threads {
            parts.push(format!("threads={t}"));
        }
        if let Some(d) = self.iodepth {
            parts.push(format!("iodepth={d}"));
        }
        if let Some(bs) = &self.block_sizes {
            let list: Vec<String> = bs.iter().map(|b| crate::units::size_literal(b.bytes)).collect();
            parts.push(format!("bs={}", list.join(",")));
        }
        if let Some(p) = self.read_pct {
            parts.push(format!("rwmix_read={p}"));
        }
        match self.rate {
            Rate::Max => {}
            Rate::Fixed(r) => parts.push(format!("rate={r}")),
            Rate::Curve { pct, .. } => parts.push(format!("rate={pct}%")),
        }
        parts.join(" ")
    }
}

/// The for-loops, curve and staircase that make a run's steps (see [`Plan::steps`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Steps {
    pub for_threads: Vec<u32>,
    /// I/Os in flight per thread of every workload, a step each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub for_iodepth: Vec<u32>,
    pub for_bs: Vec<Vec<BlockSize>>,
    pub for_read_pct: Vec<u8>,
    /// Percentages of the max rate; empty = no curve.
    pub curve: Vec<u8>,
    pub staircase: Option<Staircase>,
}

/// The validated workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub engine: EngineKind,
    pub iodepth: u32,
    /// io_uring: a kernel thread polls the submission queue (no system call to submit).
    pub sqpoll: bool,
    pub direct: bool,
    pub sync: SyncMode,
    /// The page cache at the start (`cache`). A plan stored before the key existed reads
    /// as `as-is`, which is what ioscope did then.
    #[serde(default = "CacheMode::before_recorded")]
    pub cache: CacheMode,
    /// Directory of the working set (and the default dataset anchor); empty for engine null.
    pub dir: PathBuf,
    /// Where an engine with a target works, parsed (engine nfs: `nfs://HOST[:PORT]/EXPORT[/DIR]?...`;
    /// the working set lives there). Written as the URL in the plan's JSON.
    #[serde(default, with = "target_url")]
    pub target: Option<Target>,
    /// Flat working set (no dataset): total size in bytes, split evenly over `files`.
    pub size_bytes: u64,
    /// `size` was not given: `size_bytes` is the default, and a block device target uses
    /// the whole device instead (resolved before the run, which records the size it used).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub size_default: bool,
    pub files: u32,
    pub dataset: Option<Dataset>,
    /// More file sets beside the dataset (`[[fileset]]`), each its own tree in a directory
    /// of the dataset's anchor named as the set, for flow steps that name them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filesets: Vec<Dataset>,
    /// Never empty.
    pub workloads: Vec<Workload>,
    /// Measured time of each step.
    #[serde(with = "duration_ns", rename = "duration_ns")]
    pub duration: Duration,
    /// Unmeasured time before each step.
    #[serde(with = "duration_ns", rename = "warmup_ns")]
    pub warmup: Duration,
    /// Fixed rate over all workloads, I/Os per second; None = max (or the curve).
    pub rate_iops: Option<u64>,
    pub steps: Steps,
    pub probes: Vec<Probe>,
    /// Write into files ioscope did not create.
    pub force: bool,
    /// Remove the files ioscope created after the run.
    pub cleanup: bool,
    /// When failed I/Os end the run as failed.
    #[serde(default)]
    pub max_errors: MaxErrors,
    /// How many of the busiest workers and files get distributions of their own each
    /// second (`breakdown_top`); None: the default, [`DEFAULT_BREAKDOWN_TOP`].
    #[serde(default)]
    pub breakdown_top: Option<u32>,
    /// The client hosts, in the order given (`[[host]]`, `--hosts`); empty = a local run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostSpec>,
    /// What a lost host does to the run (only with hosts).
    #[serde(default, skip_serializing_if = "OnHostLoss::is_stop")]
    pub on_host_loss: OnHostLoss,
    /// How long a host may deliver no finished second before it is lost, and how long an
    /// agent keeps its load going without hearing from the coordinator (only with hosts).
    #[serde(default = "crate::host::default_host_timeout", with = "duration_ns", rename = "host_timeout_ns")]
    pub host_timeout: Duration,
    /// Set by [`Plan::for_host`]: this plan is one host's part of a many-host plan, and
    /// its steps give that host's threads and rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_share: Option<HostShare>,
    /// `warmup = "auto"`: after each step, its seconds before it became steady are warm-up
    /// (`warmup` is then zero).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmup_auto: bool,
    /// `steady_window`: the window of the steady-state rule, whole seconds; None = the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_window_s: Option<u32>,
    /// `until_steady`: end the (one) step once steady over this window, whole seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_steady_s: Option<u32>,
    /// `io_size`, `number_ios`, `passes`: each workload of the (one) step stops issuing
    /// once it reaches one of them; none set: the step ends on time only.
    #[serde(default, skip_serializing_if = "Amount::is_none")]
    pub amount: Amount,
    /// `precondition`: write the working set whole before the run (recorded, not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precondition: Option<Precondition>,
    /// Conditions on the run's figures, evaluated from its summary after it (`--check`,
    /// as written: `read.latency.p99 < 2ms`; parsed by ioscope_report::check). Not part
    /// of the workload's hash: the same load with other checks is the same workload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// Runs of the plan's steps in one results file (`repeat`, `--repeat`): the count, or
    /// with `until_ci` the most; None: one run. Not part of the workload's hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// Repeat until the confidence interval of each step's headline figures is narrow
    /// enough (`until_ci`, `--until-ci 95:5%`). Not part of the workload's hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ci: Option<UntilCi>,
    /// Data validation (`verify`, `--verify`).
    #[serde(default, skip_serializing_if = "VerifyMode::is_off")]
    pub verify: VerifyMode,
    /// The verify block in bytes (`verify_block`); None: [`Plan::verify_block_bytes`]'s default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_block: Option<u32>,
    /// What the laid-out files hold (the top-level content keys); random by default.
    #[serde(default, skip_serializing_if = "Content::is_default")]
    pub content: Content,
}

/// `until_ci = "95:5%"`: repeat until the Student t interval of the repeat means, at
/// `confidence_pct`, has a half-width within `half_width_pct` of the mean.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct UntilCi {
    pub confidence_pct: f64,
    pub half_width_pct: f64,
}

impl UntilCi {
    /// Parses `CONFIDENCE:HALF_WIDTH%` ("95:5%"); the confidence from 50 to 99.9, the
    /// half-width above 0 and at most 100.
    pub fn parse(text: &str) -> Option<UntilCi> {
        let (c, w) = text.trim().split_once(':')?;
        let c: f64 = c.trim().trim_end_matches('%').trim().parse().ok()?;
        let w: f64 = w.trim().strip_suffix('%')?.trim().parse().ok()?;
        ((50.0..=99.9).contains(&c) && w > 0.0 && w <= 100.0)
            .then_some(UntilCi { confidence_pct: c, half_width_pct: w })
    }
}

impl std::fmt::Display for UntilCi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}%", self.confidence_pct, self.half_width_pct)
    }
}

/// The smallest verify block: a sector (ioscope_verify::MIN_BLOCK_LEN).
pub const MIN_VERIFY_BLOCK: u32 = 512;
/// The largest transfer of a flow step.
pub const MAX_FLOW_IO_BYTES: u64 = 64 << 20;
/// The largest verify block.
pub const MAX_VERIFY_BLOCK: u32 = 64 << 20;

/// The default verify block of these block sizes: their greatest common divisor, kept
/// within [`MIN_VERIFY_BLOCK`]..=[`MAX_VERIFY_BLOCK`].
pub fn default_verify_block(sizes: &[u64]) -> u32 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let g = sizes.iter().fold(0, |g, s| gcd(g, *s));
    g.clamp(u64::from(MIN_VERIFY_BLOCK), u64::from(MAX_VERIFY_BLOCK)) as u32
}

/// Repeats `--until-ci` always measures before it may stop.
pub const MIN_REPEATS_UNTIL_CI: u32 = 3;
/// The most repeats `--until-ci` runs when `repeat` does not say.
pub const DEFAULT_MAX_REPEATS_UNTIL_CI: u32 = 10;
/// The most repeats a plan may ask for.
pub const MAX_REPEATS: u32 = 1000;
/// The confidence of the summary's intervals without `until_ci`, in percent.
pub const DEFAULT_CONFIDENCE_PCT: f64 = 95.0;

/// An end by amount (`io_size`, `number_ios`, `passes`): each workload, its threads
/// together, stops issuing at the first of them it reaches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Amount {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_size_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub number_ios: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes: Option<u32>,
}

impl Amount {
    pub fn is_none(&self) -> bool {
        *self == Amount::default()
    }
}

/// `precondition = "2x sequential write"`: before the run, one thread per file writes it
/// whole `passes` times in `bs_bytes` sequential writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Precondition {
    pub passes: u32,
    pub bs_bytes: u64,
}

/// A precondition's writes: 128 KiB, as SNIA's PTS writes for workload-independent
/// preconditioning.
pub const PRECONDITION_BS: u64 = 128 * 1024;
/// The most passes of a precondition.
pub const MAX_PRECONDITION_PASSES: u32 = 16;
/// The most `number_ios`: 2^48.
pub const MAX_NUMBER_IOS: u64 = 1 << 48;
/// The most `passes`.
pub const MAX_PASSES: u32 = 1000;
/// The duration of a step that ends by amount and sets none: its most.
pub const AMOUNT_MAX_DURATION_S: u64 = 24 * 3600;

impl Precondition {
    /// "2x sequential write", as the key writes it.
    pub fn literal(&self) -> String {
        format!("{}x sequential write", self.passes)
    }
    /// Reads "Nx sequential write" (spaces and case free); None when it is not that form.
    pub fn parse(text: &str) -> Option<Precondition> {
        let t = text.trim().to_ascii_lowercase();
        let words: Vec<&str> = t.split_whitespace().collect();
        let [n, "sequential", "write"] = words.as_slice() else { return None };
        let passes: u32 = n.strip_suffix('x')?.parse().ok()?;
        (1..=MAX_PRECONDITION_PASSES).contains(&passes).then_some(Precondition { passes, bs_bytes: PRECONDITION_BS })
    }
}

impl Plan {
    /// The most runs of the steps: `repeat`, or with `until_ci` and no `repeat`
    /// [`DEFAULT_MAX_REPEATS_UNTIL_CI`]; 1 without either.
    pub fn max_repeats(&self) -> u32 {
        match (self.repeat, self.until_ci) {
            (Some(n), _) => n.max(1),
            (None, Some(_)) => DEFAULT_MAX_REPEATS_UNTIL_CI,
            (None, None) => 1,
        }
    }
}

/// The busiest workers and files of each second with distributions of their own when
/// `breakdown_top` is not set.
pub const DEFAULT_BREAKDOWN_TOP: u32 = 16;

impl Plan {
    /// `breakdown_top`, or its default.
    pub fn breakdown_top(&self) -> u32 {
        self.breakdown_top.unwrap_or(DEFAULT_BREAKDOWN_TOP)
    }
}

/// When failed I/Os end a run as failed (`max_errors`, `--max-errors`). With any limit
/// but `Off`, a run in which every I/O fails for some seconds in a row ends too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MaxErrors {
    /// More than this many failed I/Os.
    Count(u64),
    /// More than this share of the I/Os attempted, in parts per million.
    SharePpm(u32),
    /// Never (not even when every I/O fails).
    Off,
}

impl Default for MaxErrors {
    /// 1% of the I/Os attempted.
    fn default() -> Self {
        MaxErrors::SharePpm(10_000)
    }
}

impl std::fmt::Display for MaxErrors {
    /// As written in a workload: `1000`, `1%`, `0.05%`, `off`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            MaxErrors::Count(n) => write!(f, "{n}"),
            MaxErrors::SharePpm(ppm) => {
                let frac = format!("{:04}", ppm % 10_000);
                let frac = frac.trim_end_matches('0');
                let dot = if frac.is_empty() { "" } else { "." };
                write!(f, "{}{dot}{frac}%", ppm / 10_000)
            }
            MaxErrors::Off => f.write_str("off"),
        }
    }
}

/// Why a `max_errors` value was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MaxErrorsError {
    #[error("{0:?} is not a number")]
    NotANumber(String),
    #[error("{0} is not above 0% and at most 100%")]
    ShareOutOfRange(String),
    /// Neither a count, a share nor `off` (the expected form says the rest).
    #[error("")]
    Form,
}

impl MaxErrors {
    /// Parses `N` (a count of failed I/Os), `P%` (a share above 0 and at most 100,
    /// to 0.0001%) or `off`.
    pub fn parse(text: &str) -> Result<Self, MaxErrorsError> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("off") {
            return Ok(MaxErrors::Off);
        }
        if let Some(p) = t.strip_suffix('%') {
            let pct: f64 = p.trim().parse().map_err(|_| MaxErrorsError::NotANumber(p.to_string()))?;
            let ppm = (pct * 10_000.0).round();
            if !(1.0..=1_000_000.0).contains(&ppm) || !pct.is_finite() {
                return Err(MaxErrorsError::ShareOutOfRange(t.to_string()));
            }
            return Ok(MaxErrors::SharePpm(ppm as u32));
        }
        t.parse::<u64>().map(MaxErrors::Count).map_err(|_| MaxErrorsError::Form)
    }
}

impl Plan {
    /// Size of each flat working-set file in bytes.
    pub fn file_size_bytes(&self) -> u64 {
        self.size_bytes / self.files.max(1) as u64
    }
    /// The bytes after which each workload stops (`io_size`, or `passes` × the working
    /// set's bytes, the fewer); None: no end by bytes.
    pub fn amount_bytes(&self) -> Option<u64> {
        let set = self.file_size_bytes().saturating_mul(u64::from(self.files));
        let passes = self.amount.passes.map(|p| set.saturating_mul(u64::from(p)));
        match (self.amount.io_size_bytes, passes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    pub fn writes(&self) -> bool {
        self.workloads.iter().any(Workload::writes)
    }
    /// Every block size the plan can use (its workloads' and its for_bs steps').
    pub fn block_sizes_bytes(&self) -> Vec<u64> {
        let steps = self.steps.for_bs.iter().flatten().map(|b| b.bytes);
        self.workloads.iter().flat_map(|w| w.block_sizes.iter().map(|b| b.bytes)).chain(steps).collect()
    }

    /// The verify block: `verify_block`, or the greatest common divisor of the block sizes
    /// (every offset is a multiple of the smallest size or a sum of sizes), at least
    /// [`MIN_VERIFY_BLOCK`] (the plan's check refuses sizes that are not multiples of it).
    pub fn verify_block_bytes(&self) -> u32 {
        self.verify_block.unwrap_or_else(|| default_verify_block(&self.block_sizes_bytes()))
    }

    pub fn max_block_bytes(&self) -> u64 {
        let steps = self.steps.for_bs.iter().flatten().map(|b| b.bytes);
        self.workloads.iter().map(Workload::max_block_bytes).chain(steps).max().unwrap_or(1)
    }

    /// The steps in run order: hosts or threads (the staircase or for_threads), then
    /// iodepth, then bs, then rwmix_read, then rate (innermost). In one host's part ([`Plan::for_host`]), a
    /// step the host sits out has 0 threads, and a fixed rate is the host's part of it.
    pub fn steps(&self) -> Vec<Step> {
        let s = &self.steps;
        let (threads, hosts, duration): (Vec<Option<u32>>, Vec<Option<u32>>, Duration) =
            match (&s.staircase, s.for_threads.is_empty()) {
                (Some(st), _) if st.of == StaircaseOf::Hosts => {
                    (vec![None], st.counts().into_iter().map(Some).collect(), st.every)
                }
                (Some(st), _) => (st.counts().into_iter().map(Some).collect(), vec![None], st.every),
                (None, false) => (s.for_threads.iter().copied().map(Some).collect(), vec![None], self.duration),
                (None, true) => (vec![None], vec![None], self.duration),
            };
        let depths: Vec<Option<u32>> =
            if s.for_iodepth.is_empty() { vec![None] } else { s.for_iodepth.iter().copied().map(Some).collect() };
        let bss: Vec<Option<Vec<BlockSize>>> =
            if s.for_bs.is_empty() { vec![None] } else { s.for_bs.iter().cloned().map(Some).collect() };
        let pcts: Vec<Option<u8>> =
            if s.for_read_pct.is_empty() { vec![None] } else { s.for_read_pct.iter().copied().map(Some).collect() };
        let mut out: Vec<Step> = Vec::new();
        let threads_depths: Vec<(Option<u32>, Option<u32>)> =
            threads.iter().flat_map(|t| depths.iter().map(move |d| (*t, *d))).collect();
        let phases: Vec<Option<u32>> = match self.phases() {
            0 => vec![None],
            n => (1..=n).map(Some).collect(),
        };
        let phases_hosts: Vec<(Option<u32>, Option<u32>)> =
            phases.iter().flat_map(|p| hosts.iter().map(move |h| (*p, *h))).collect();
        for (phase, h) in &phases_hosts {
            for (t, d) in &threads_depths {
                for bs in &bss {
                    for pct in &pcts {
                        let push = |out: &mut Vec<Step>, rate| {
                            let index = out.len() as u32;
                            out.push(Step {
                                index,
                                threads: *t,
                                iodepth: *d,
                                hosts: *h,
                                phase: *phase,
                                block_sizes: bs.clone(),
                                read_pct: *pct,
                                rate,
                                warmup: self.warmup,
                                duration,
                            })
                        };
                        if s.curve.is_empty() {
                            push(&mut out, self.rate_iops.map_or(Rate::Max, Rate::Fixed));
                        } else {
                            let of_step = out.len() as u32;
                            push(&mut out, Rate::Max);
                            for pct in &s.curve {
                                push(&mut out, Rate::Curve { pct: *pct, of_step });
                            }
                        }
                    }
                }
            }
        }
        if let Some(share) = self.host_share {
            for step in &mut out {
                if !share.is_active(step.hosts) {
                    // Idle through the step, so that this host's seconds stay aligned.
                    step.threads = Some(0);
                }
                if let Rate::Fixed(r) = step.rate {
                    step.rate = Rate::Fixed(share.rate_part(r, step.hosts));
                }
            }
        }
        out
    }

    /// How many steps [`Plan::steps`] makes, counted without making them (saturating).
    pub fn step_count(&self) -> u64 {
        let s = &self.steps;
        let threads = match &s.staircase {
            Some(st) => st.counts().len(),
            None => s.for_threads.len().max(1),
        };
        let rates = if s.curve.is_empty() { 1 } else { 1 + s.curve.len() };
        let phases = self.phases().max(1) as usize;
        [phases, threads, s.for_iodepth.len().max(1), s.for_bs.len().max(1), s.for_read_pct.len().max(1), rates]
            .into_iter()
            .fold(1u64, |n, k| n.saturating_mul(k as u64))
    }

    /// How many phases the run has: the highest `phase` of its workloads (0: none named).
    pub fn phases(&self) -> u32 {
        self.workloads.iter().filter_map(|w| w.phase).max().unwrap_or(0)
    }

    /// Warm-up and measured time of every step.
    pub fn total_duration(&self) -> Duration {
        self.steps().iter().map(|s| s.warmup + s.duration).sum()
    }

    /// The window of the steady-state rule when the plan sets one (`until_steady`, else
    /// `steady_window`); None: the rule's default.
    pub fn steady_window_s(&self) -> Option<u32> {
        self.until_steady_s.or(self.steady_window_s)
    }

    /// The largest thread count of each workload over all steps.
    pub fn max_threads(&self) -> Vec<u32> {
        let steps = self.steps();
        self.workloads.iter().map(|w| steps.iter().map(|s| s.threads_of(w)).max().unwrap_or(w.threads)).collect()
    }

    /// The plan host `index` (0-based, in the order given) runs: its own `dir` and `target`
    /// in place of the plan's (a dataset anchored under them moves with them), no hosts of
    /// its own, and steps ([`Plan::steps`]) in which it idles while a hosts staircase has
    /// not reached it and runs its part of a fixed rate. Every step is kept, so each host's
    /// seconds line up with the others'. A curve step stays a percentage of this host's
    /// own max step. An index past the hosts (or a plan without hosts) is the plan itself,
    /// run as the only host.
    pub fn for_host(&self, index: usize) -> Plan {
        let mut p = self.clone();
        p.hosts.clear();
        let Some(host) = self.hosts.get(index) else {
            return p;
        };
        p.host_share = Some(HostShare { index: index as u32, hosts: self.hosts.len() as u32 });
        if let Some(dir) = &host.dir {
            if let Some(d) = p.dataset.as_mut().filter(|_| !self.dir.as_os_str().is_empty()) {
                if let Ok(rest) = d.dir.strip_prefix(&self.dir) {
                    d.dir = dir.join(rest);
                }
            }
            p.dir = dir.clone();
        }
        if let Some(target) = &host.target {
            if let (Some(d), Some(old)) = (p.dataset.as_mut(), &self.target) {
                if let Ok(rest) = d.dir.strip_prefix(&old.root) {
                    d.dir = PathBuf::from(&target.root).join(rest);
                }
            }
            p.target = Some(target.clone());
        }
        p
    }
}

mod duration_ns {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_nanos() as u64)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_nanos(u64::deserialize(d)?))
    }
}

mod durations_ns {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &[Duration], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(d.iter().map(|d| d.as_nanos() as u64))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Duration>, D::Error> {
        Ok(Vec::<u64>::deserialize(d)?.into_iter().map(Duration::from_nanos).collect())
    }
}

mod opt_duration_ns {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_nanos() as u64)),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_nanos))
    }
}

impl FileIo {
    pub fn from_random(random: bool) -> Self {
        if random {
            FileIo::Random
        } else {
            FileIo::Sequential
        }
    }
}

/// A plan's target in JSON: the URL as written (parsed again when read back).
pub(crate) mod target_url {
    use super::Target;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(t: &Option<Target>, s: S) -> Result<S::Ok, S::Error> {
        t.as_ref().map(|t| t.url.as_str()).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Target>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(url) => Target::parse_any(&url).map(Some).map_err(serde::de::Error::custom),
        }
    }
}
