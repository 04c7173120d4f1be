//! fio jobs of one group that differ in iodepth, direct or sync (fsync=, fdatasync=, sync=):
//! each gets its own `iodepth`, `direct` or `sync` in its [[workload]] instead of a refusal.
//! Jobs of several stonewall groups are steps of one set of workloads, so there they must
//! still agree (checked by `Converter::same`).

use super::*;

/// Which settings the jobs of the run's one group set each for itself.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct PerJob {
    pub(super) iodepth: bool,
    pub(super) direct: bool,
    pub(super) sync: bool,
    /// Engine posix: one I/O in flight whatever iodepth says (noted, not written).
    posix: bool,
}

fn differ<T: PartialEq>(all: &[&Job], f: impl Fn(&Job) -> T) -> bool {
    all.windows(2).any(|w| f(w[0]) != f(w[1]))
}

impl PerJob {
    /// The settings whose jobs differ, when the run has one group.
    pub(super) fn of(all: &[&Job], groups: usize, posix: bool) -> Self {
        if groups != 1 {
            return Self::default();
        }
        PerJob {
            iodepth: differ(all, |j| j.iodepth.as_ref().map_or(1, |d| d.v)),
            direct: differ(all, |j| j.direct.as_ref().is_some_and(|d| d.v)),
            sync: differ(all, |j| j.sync.as_ref().map(|s| s.v)),
            posix,
        }
    }
}

impl Converter {
    /// A job's own iodepth, direct and sync, for those that differ between the jobs.
    pub(super) fn own_keys(&mut self, j: &Job, out: &mut String) {
        let per = self.per_job;
        if let (true, Some(d)) = (per.iodepth, &j.iodepth) {
            if per.posix && d.v > 1 {
                let o = Opt { key: d.from.clone(), value: None, at: d.at };
                self.warn(&o, "fio keeps one I/O in flight per job with a synchronous engine whatever iodepth says, and so does ioscope's posix engine");
            } else if !per.posix {
                let _ = writeln!(out, "iodepth = {}  # {}", d.v, self.src(d));
            }
        }
        if per.iodepth && j.iodepth.is_none() && !per.posix {
            let _ = writeln!(out, "iodepth = 1  # fio's default iodepth=1");
        }
        if per.direct {
            match &j.direct {
                Some(d) => {
                    let _ = writeln!(out, "direct = {}  # {}", d.v, self.src(d));
                }
                None => {
                    let _ = writeln!(out, "direct = false  # fio's default direct=0");
                }
            }
        }
        if let (true, Some(s)) = (per.sync, &j.sync) {
            if j.pct() == 100 {
                let o = Opt { key: s.from.clone(), value: None, at: s.at };
                self.warn(&o, "this job does not write, so there is nothing to sync");
            } else {
                let _ = writeln!(out, "sync = {}  # {}", toml_string(s.v), self.src(s));
            }
        }
    }
}
