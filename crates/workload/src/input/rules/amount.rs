//! Ends by amount (`io_size`, `number_ios`, `passes`) and the precondition: what they may be
//! combined with.

use super::*;

impl<'a> Ctx<'a> {
    /// An end by amount, or a precondition, on a run of one step on one host over the flat
    /// working set; a precondition writes local files or a device, without verify.
    pub(super) fn amount_rules(&mut self, plan: &Plan, top: &Top, run: &Run) {
        let amount_loc = [top.io_size.loc(), top.number_ios.loc(), top.passes.loc()]
            .into_iter()
            .zip(["io_size", "number_ios", "passes"])
            .find(|(l, _)| !matches!(l, Loc::Default));
        if let Some((loc, key)) = amount_loc {
            let steps = plan.step_count();
            if steps > 1 {
                let note = format!("the loops or staircase make {steps} steps; an end by amount ends the step it is in, so only a run of one step takes it");
                self.err(&loc, key, format!("{key} on a run of one step"), note);
            }
            if !plan.hosts.is_empty() {
                let note = "each host would count its own I/Os; run it on one host";
                self.err(&loc, key, format!("{key} on a run without hosts"), note);
            }
            if run.has_dataset || run.patterned {
                let note =
                    "a [dataset] or a pattern sets its own I/Os over time; an amount is for the flat working set";
                self.err(&loc, key, format!("{key} without a [dataset] or a pattern"), note);
            }
        }
        if let Got::Ok(_, loc) = &top.precondition {
            if !plan.hosts.is_empty() || run.has_dataset {
                let note = "the precondition writes this host's working set whole, file by file";
                self.err(loc, "precondition", "a precondition on a run without hosts or a [dataset]", note);
            }
            if plan.verify != VerifyMode::Off {
                let note = "its writes carry no verify header, so the blocks verify would read back are not its own";
                self.err(loc, "precondition", "a precondition without verify", note);
            }
            if plan.target.is_some() || plan.engine == EngineKind::Null {
                let note = format!(
                    "the {} engine has no device or local files to write whole",
                    ENGINES[plan.engine as usize].name
                );
                self.err(loc, "precondition", "a precondition with the posix or uring engine", note);
            }
        }
    }
}
