//! Flows: the rules between a run's flow workloads and its other keys.

use super::*;

impl<'a> Ctx<'a> {
    /// The rules between a run's flows and its other keys: no verify (a flow changes its
    /// files' sizes), no run-wide rate or block-size steps, not on S3 (objects are not
    /// appended to), and a dataset that a flow changes is made anew for each run.
    pub(super) fn flow_run_rules(&mut self, top: &Top, run: &mut Run) {
        let flows: Vec<(bool, String)> = run
            .parsed()
            .iter()
            .filter(|w| !w.workload.flow.is_empty())
            .map(|w| (w.workload.writes(), w.workload.name.clone()))
            .collect();
        let Some((_, name)) = flows.first() else { return };
        let first = format!("workload `{name}`");
        if let Got::Ok(mode, loc) = &top.verify {
            if !mode.is_off() {
                let note = format!("a flow creates, appends to and deletes files, so their blocks have no fixed place to check (the flow of {first})");
                self.err(loc, "verify", "verify = \"off\" with a flow", note);
            }
        }
        for (loc, key) in [
            (top.rate.loc(), "rate_iops"),
            (top.curve.loc(), "curve"),
            (top.for_bs.loc(), "for_bs"),
            (top.for_pct.loc(), "for_rwmix_read"),
        ] {
            if !matches!(loc, Loc::Default) {
                let note = format!("a flow runs its steps one after another as fast as they complete, each with its own size (the flow of {first})");
                self.err(&loc, key, format!("no {key} with a flow"), note);
            }
        }
        if run.engine == Some(EngineKind::S3) {
            let loc = top.engine.loc();
            self.err(
                &loc,
                "engine",
                "posix, uring, nfs, smb or null for a flow",
                "S3 objects are written whole, never appended to or written in place",
            );
        }
        if flows.iter().any(|(writes, _)| *writes) {
            let format_loc = self.raw("dataset.format").map(|(_, l)| l);
            if let Some(Some(d)) = run.dataset.as_mut() {
                match format_loc {
                    None => d.format = DatasetFormat::Always,
                    Some(loc) if d.format != DatasetFormat::Always => {
                        let note = format!("the flow of {first} creates, writes or deletes files, so a tree it ran on is not the one its definition makes: each run makes it anew");
                        self.err(&loc, "dataset.format", "format = \"always\" (the default with such a flow)", note);
                    }
                    Some(_) => {}
                }
            }
        }
    }
}
