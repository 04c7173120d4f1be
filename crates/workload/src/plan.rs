//! The Plan: a validated, normalized workload that the executor runs as is.
//! Every field has a unit in its name or type; nothing here needs checking again.

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
}

impl Rw {
    pub fn is_random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw)
    }
    /// Percentage of operations that are reads (0..=100).
    pub fn default_read_pct(self) -> u8 {
        match self {
            Rw::Read | Rw::RandRead => 100,
            Rw::Write | Rw::RandWrite => 0,
            Rw::RandRw => 50,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Rw::Read => "read",
            Rw::Write => "write",
            Rw::RandRead => "randread",
            Rw::RandWrite => "randwrite",
            Rw::RandRw => "randrw",
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

/// Which engine performs the I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// pread/pwrite.
    Posix,
    /// io_uring: queued, batched submission and reaping; registered files and buffers.
    Uring,
    /// No I/O: measures the core itself.
    Null,
}

impl EngineKind {
    pub const ALL: [EngineKind; 3] = [EngineKind::Posix, EngineKind::Uring, EngineKind::Null];

    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Posix => "posix",
            EngineKind::Uring => "uring",
            EngineKind::Null => "null",
        }
    }
    /// Keeps more than one I/O in flight per thread.
    pub fn queues(self) -> bool {
        matches!(self, EngineKind::Uring | EngineKind::Null)
    }
}

/// One entry of a weighted block-size list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockSize {
    pub bytes: u64,
    /// Relative weight (the list's weights need not sum to 100).
    pub weight: u32,
}

/// The validated workload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub engine: EngineKind,
    pub rw: Rw,
    /// Share of reads in percent; 100 for read-only patterns, 0 for write-only.
    pub read_pct: u8,
    /// Block sizes with weights; one entry for a fixed size. Never empty.
    pub block_sizes: Vec<BlockSize>,
    /// Total working-set size in bytes, split evenly over `files`.
    pub size_bytes: u64,
    pub files: u32,
    pub threads: u32,
    pub iodepth: u32,
    #[serde(with = "duration_ns", rename = "duration_ns")]
    pub duration: Duration,
    pub dir: PathBuf,
    pub direct: bool,
    pub sync: SyncMode,
    /// Open-loop rate over all threads, in I/Os per second; None = closed loop (as fast as possible).
    pub rate_iops: Option<u64>,
    /// io_uring: a kernel thread polls the submission queue (no system call to submit).
    #[serde(default)]
    pub sqpoll: bool,
    /// Write into files ioscope did not create.
    pub force: bool,
    /// Remove the files ioscope created after the run.
    pub cleanup: bool,
}

impl Plan {
    /// Size of each file in bytes.
    pub fn file_size_bytes(&self) -> u64 {
        self.size_bytes / self.files as u64
    }
    /// Smallest block size: random offsets are aligned to it.
    pub fn min_block_bytes(&self) -> u64 {
        self.block_sizes.iter().map(|b| b.bytes).min().unwrap_or(1)
    }
    pub fn max_block_bytes(&self) -> u64 {
        self.block_sizes.iter().map(|b| b.bytes).max().unwrap_or(1)
    }
    pub fn writes(&self) -> bool {
        self.read_pct < 100
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
