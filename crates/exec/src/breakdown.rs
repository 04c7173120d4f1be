//! The run's side of the breakdown of distributions by worker and by file (the types are
//! in `ioscope_metrics::breakdown`): which runs break down by file, the workers' rings,
//! and the collector's draining of them into each second's snapshot.

use crate::tree::Tree;
use ioscope_engine::OP_KINDS;
use ioscope_metrics::breakdown::{ring_capacity, FileBreakdown, FileRing, WorkerTop};
use ioscope_metrics::Snapshot;
use ioscope_workload::Plan;

/// How long the collector may sleep between drains of the rings (a ring holds a few ms of
/// a fast worker's I/O).
pub(crate) const DRAIN_EVERY_NS: u64 = 5_000_000;

/// Whether a run breaks its distributions down by file: `breakdown_top` is not 0 and the
/// engine does I/O (engine null has no files to tell apart, and its tens of millions of
/// I/O per second per worker would only overflow the rings).
fn by_files(plan: &Plan) -> bool {
    plan.breakdown_top() > 0 && plan.engine.spec().caps.does_io
}

/// One ring per worker, or none when the run does not break down by file.
pub(crate) fn rings(plan: &Plan, workers: usize) -> Vec<FileRing> {
    match by_files(plan) {
        true => (0..workers).map(|_| FileRing::new(ring_capacity(workers))).collect(),
        false => Vec::new(),
    }
}

/// The results file's meta `breakdown`: how this run's distributions are broken down.
pub fn meta(plan: &Plan) -> String {
    match (plan.breakdown_top(), by_files(plan)) {
        (0, _) => "off (breakdown_top = 0): distributions per operation only".to_string(),
        (n, true) => format!(
            "breakdown_top = {n}: each second, the {n} workers and the {n} files with the most I/O of each \
             operation have their own distributions, the rest are merged into worker -1 / file '(other)'"
        ),
        (n, false) => format!(
            "breakdown_top = {n}: each second, the {n} workers with the most I/O of each operation have their \
             own distributions, the rest are merged into worker -1; not per file (the engine does no I/O)"
        ),
    }
}

/// The collector's side: the busiest workers of the second being read, and the per-file
/// histograms the rings are drained into.
pub(crate) struct Collector<'a> {
    pub(crate) by_worker: WorkerTop,
    by_file: FileBreakdown,
    rings: &'a [FileRing],
    tree: Option<&'a Tree>,
    /// Names of a flat working set's files, by index.
    file_names: &'a [String],
}

impl<'a> Collector<'a> {
    pub(crate) fn new(plan: &Plan, rings: &'a [FileRing], tree: Option<&'a Tree>, file_names: &'a [String]) -> Self {
        let top = plan.breakdown_top() as usize;
        Collector {
            by_worker: WorkerTop::new(top, OP_KINDS),
            by_file: FileBreakdown::new(top, tree.is_some(), OP_KINDS, rings.len()),
            rings,
            tree,
            file_names,
        }
    }

    /// The longest sleep between two drains.
    pub(crate) fn drain_every_ns(&self, otherwise: u64) -> u64 {
        if self.rings.is_empty() {
            otherwise
        } else {
            otherwise.min(DRAIN_EVERY_NS)
        }
    }

    /// Drains the rings into `second`, the second being collected (between its reads);
    /// `read`: per worker, its reader's [`ioscope_metrics::WorkerReader::read_through`].
    pub(crate) fn drain(&mut self, second: u32, read: &[[u64; 2]]) {
        self.by_file.drain(self.rings, read, second, u64::MAX, false);
    }

    /// Fills `snap` with its per-worker distributions (what the reads of the recorders
    /// since the last call offered to `by_worker`) and per-file distributions (and a file
    /// tree's per-file counters): the I/O that the reads of the recorders for this second
    /// had (`read`, as for [`Self::drain`]), so the same I/Os as its counters.
    pub(crate) fn fill(&mut self, snap: &mut Snapshot, read: &[[u64; 2]]) {
        snap.worker_dists = self.by_worker.finish();
        self.by_file.drain(self.rings, read, snap.second, u64::MAX, true);
        let (tree, names) = (self.tree, self.file_names);
        let per_file = self.by_file.close(|i| match tree {
            // A tree file is named by its path below the dataset's directory (a file set's:
            // the set's name, then its own).
            Some(t) => {
                let path = t.file_path(i as u64);
                path.strip_prefix(t.layout.anchor()).unwrap_or(&path).display().to_string()
            }
            None => names.get(i as usize).cloned().unwrap_or_else(|| i.to_string()),
        });
        snap.file_dists = per_file.dists;
        snap.not_broken_down = per_file.not_broken_down;
        if tree.is_some() {
            snap.files = per_file.counts;
        }
    }
}
