//! Measurement: the log-linear histogram layout, per-worker recorders written on the
//! I/O path, the per-second snapshots the collector builds from them, and the registries
//! of operations ([`Op`]) and statistics ([`stat::STATS`]) every other crate reads.

pub mod breakdown;
pub mod histogram;
pub mod op;
pub mod recorder;
pub mod snapshot;
pub mod stat;
pub mod steady;
pub mod target;

pub use histogram::{Histogram, RELATIVE_ERROR};
pub use op::{Op, OP_KINDS};
pub use recorder::{
    Counts, KindNamer, OpInterval, OpRecorder, Slot, SlotWriter, WorkerReader, WorkerRecorder, ERROR_KINDS, SECOND_NS,
};
pub use snapshot::{
    is_sync_op, FileCounts, FileDists, OpSeries, Snapshot, WorkerCounts, WorkerCpu, WorkerDists, OTHER,
};
pub use stat::{Side, Stat, StatId, STATS, TARGET_STATS};
pub use target::{TargetSecond, TargetSeries, TargetValue};
