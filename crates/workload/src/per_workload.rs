//! A workload's own queue depth, sync mode and O_DIRECT: the value of its [[workload]]
//! when given, else the run's. Everything that issues or sizes I/O asks these, never the
//! run-wide fields alone.

use crate::plan::{Plan, SyncMode, Workload};

impl Plan {
    /// I/Os in flight per thread of `w`.
    pub fn iodepth_of(&self, w: &Workload) -> u32 {
        w.iodepth.unwrap_or(self.iodepth)
    }
    /// What `w` does after each write.
    pub fn sync_of(&self, w: &Workload) -> SyncMode {
        w.sync.unwrap_or(self.sync)
    }
    /// Whether `w` bypasses the page cache.
    pub fn direct_of(&self, w: &Workload) -> bool {
        w.direct.unwrap_or(self.direct)
    }
    /// The most I/Os in flight per thread of `w` in any step: the deepest of `for_iodepth`'s
    /// steps (which set every workload's), else its own.
    pub fn most_iodepth_of(&self, w: &Workload) -> u32 {
        self.steps.for_iodepth.iter().copied().max().unwrap_or_else(|| self.iodepth_of(w))
    }
    /// The deepest queue of any workload in any step (at least the run's when no workload
    /// sets one).
    pub fn max_iodepth(&self) -> u32 {
        self.workloads.iter().map(|w| self.most_iodepth_of(w)).max().unwrap_or(self.iodepth)
    }
    /// Whether any workload bypasses the page cache.
    pub fn any_direct(&self) -> bool {
        self.workloads.iter().any(|w| self.direct_of(w))
    }
    /// Whether a workload's sync mode differs from the run's.
    pub fn any_sync(&self, mode: SyncMode) -> bool {
        self.workloads.iter().any(|w| self.sync_of(w) == mode)
    }
}
