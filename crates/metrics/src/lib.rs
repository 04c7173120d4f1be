//! Measurement: the log-linear histogram layout, per-worker recorders written on the
//! I/O path, and the per-second snapshots the collector builds from them.

pub mod histogram;
pub mod recorder;
pub mod snapshot;

pub use histogram::{Histogram, RELATIVE_ERROR};
pub use recorder::{Counts, KindNamer, OpInterval, OpRecorder, WorkerReader, WorkerRecorder, ERROR_KINDS};
pub use snapshot::{is_sync_op, FileCounts, OpSeries, Snapshot, WorkerCounts};
