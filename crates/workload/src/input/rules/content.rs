//! Data content: the top-level keys shape the laid-out files and are each workload's
//! default; a [[workload]]'s own keys shape its writes (see [`crate::content`]).

use super::*;

impl<'a> Ctx<'a> {
    /// Reads the run's content and each workload's; a workload whose content is wrong
    /// becomes None (the plan fails with the problem reported).
    pub(super) fn content_rules(&mut self, run: &mut Run) {
        run.content = self.top_content();
        let Some(top) = run.content else { return };
        let n = run.n;
        for (i, slot) in run.workloads.iter_mut().enumerate() {
            let Some(w) = slot.as_mut() else { continue };
            let content = if n == 0 { Some(top) } else { self.workload_content(i, &top, w.workload.writes()) };
            match content {
                Some(c) => w.workload.content = c,
                None => *slot = None,
            }
        }
    }
}
