//! `ioscope compare A B`: the headline figures of two runs side by side, with the
//! difference of B from A and, when both have repeats, its confidence interval;
//! `--fail-if` conditions on the differences fail it with exit 3.

use crate::{output, CmdResult, Failure, Kind};
use ioscope_report::fail_if::FailIf;
use std::path::Path;

fn summary(file: &Path, which: &str) -> Result<ioscope_report::Summary, Failure> {
    // Every store error starts with the file's name; which run it is, is said in front.
    let results = ioscope_store::open(file)
        .map_err(|e| Failure::invalid(anyhow::Error::new(e).context(format!("run {which} cannot be read"))))?;
    Ok(ioscope_report::summarize(&results, file))
}

/// Prints the comparison of run `b` with run `a` as a table or JSON; exit 3 when one of
/// the `fail_if` conditions holds.
pub fn compare(a: &Path, b: &Path, json: bool, fail_if: &[String]) -> CmdResult {
    let conditions = fail_if
        .iter()
        .map(|t| FailIf::parse(t).map_err(|e| Failure::invalid(anyhow::anyhow!("--fail-if {t:?}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let (a, b) = (summary(a, "A")?, summary(b, "B")?);
    let c = if json {
        let mut c = ioscope_report::compare::compare(&a, &b);
        c.fail_if = ioscope_report::fail_if::evaluate(&conditions, &c);
        output::print(&format!("{}\n", ioscope_report::compare::render_compare_json(&c)));
        c
    } else {
        // The files' strings (host names, kinds, labels) reach the terminal escaped.
        let (a, b) = (ioscope_report::for_terminal(&a), ioscope_report::for_terminal(&b));
        let mut c = ioscope_report::compare::compare(&a, &b);
        c.fail_if = ioscope_report::fail_if::evaluate(&conditions, &c);
        output::print(&ioscope_report::compare::render_compare_text(&c));
        c
    };
    match c.fail_if.iter().filter(|f| f.failed).count() {
        0 => Ok(()),
        n => Err(Failure::said(
            Kind::CheckFailed,
            format!("compare: {n} of {} --fail-if conditions failed", c.fail_if.len()),
        )),
    }
}
