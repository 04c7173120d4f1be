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
        self.fileset_rules(run);
        self.wait_post_rules(run);
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

impl<'a> Ctx<'a> {
    /// File sets: names that differ, each named by a flow step, every step's set one of
    /// them, and not on many hosts (each host's tree would need its own).
    fn fileset_rules(&mut self, run: &Run) {
        let Some(sets) = run.filesets.as_ref() else { return };
        let mut names: Vec<&str> = Vec::new();
        if let Some(Some(Dataset { name: Some(n), .. })) = &run.dataset {
            names.push(n);
        }
        for (set, loc) in sets {
            let name = set.name.as_deref().unwrap_or("");
            if names.contains(&name) {
                self.err(loc, "fileset.name", "a name no other set has", format!("`{name}` is taken"));
            }
            names.push(name);
        }
        let parsed = run.parsed();
        for w in &parsed {
            for step in w.workload.flow.iter().filter_map(|s| s.set.map(|n| (s, n))) {
                if !names.contains(&step.1.as_str()) {
                    let known = if names.is_empty() { "none is named".to_string() } else { names.join(", ") };
                    let note = format!("the step `{}` names no set (sets: {known}); the dataset is named with name in [dataset], others are [[fileset]] tables", step.0.text());
                    self.err(
                        &w.flow_loc,
                        "workload.flow",
                        "`in NAME` with the name of the dataset or a [[fileset]]",
                        note,
                    );
                }
            }
        }
        for (set, loc) in sets {
            let name = set.name.as_deref().unwrap_or("");
            let named =
                parsed.iter().any(|w| w.workload.flow.iter().any(|s| s.set.is_some_and(|n| n.as_str() == name)));
            if !named {
                let note = format!("the fileset `{name}` would be made and never used");
                self.err(loc, "fileset.name", format!("a flow step that names it (\"read 8k in {name}\")"), note);
            }
            if run.hosts.as_ref().is_some_and(|h| !h.is_empty()) {
                let note = "each host runs on a dataset of its own, and a fileset of the run's would be shared";
                self.err(loc, "fileset.name", "no [[fileset]] with hosts", note);
            }
        }
    }

    /// Waits and posts: every name waited on is posted to by some flow, and every name
    /// posted to is waited on (a wait nobody posts to would wait to the end of the run).
    fn wait_post_rules(&mut self, run: &Run) {
        let parsed = run.parsed();
        let steps = || parsed.iter().flat_map(|w| w.workload.flow.iter().map(move |s| (w, s)));
        for (w, s) in steps() {
            let Some(name) = s.sem else { continue };
            let (other, what) = match s.op {
                crate::flow::FlowOp::Wait => (crate::flow::FlowOp::Post, "posts to"),
                _ => (crate::flow::FlowOp::Wait, "waits on"),
            };
            if !steps().any(|(_, t)| t.op == other && t.sem == Some(name)) {
                let note =
                    format!("no flow's step {what} `{}`, so `{}` would wait or post in vain", name.as_str(), s.text());
                self.err(
                    &w.flow_loc,
                    "workload.flow",
                    format!("a `{}` step for `{}`", other.name(), name.as_str()),
                    note,
                );
            }
        }
    }
}
