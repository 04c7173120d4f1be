//! `ioscope compare A B`: the headline figures of two runs side by side, with the
//! difference of B from A and, when both have repeats, its confidence interval.

use crate::{output, CmdResult, Failure};
use std::path::Path;

fn summary(file: &Path, which: &str) -> Result<ioscope_report::Summary, Failure> {
    // Every store error starts with the file's name; which run it is, is said in front.
    let results = ioscope_store::open(file)
        .map_err(|e| Failure::invalid(anyhow::Error::new(e).context(format!("run {which} cannot be read"))))?;
    Ok(ioscope_report::summarize(&results, file))
}

/// Prints the comparison of run `b` with run `a` as a table or JSON.
pub fn compare(a: &Path, b: &Path, json: bool) -> CmdResult {
    let (a, b) = (summary(a, "A")?, summary(b, "B")?);
    if json {
        let c = ioscope_report::compare::compare(&a, &b);
        output::print(&format!("{}\n", ioscope_report::compare::render_compare_json(&c)));
    } else {
        // The files' strings (host names, kinds, labels) reach the terminal escaped.
        let (a, b) = (ioscope_report::for_terminal(&a), ioscope_report::for_terminal(&b));
        let c = ioscope_report::compare::compare(&a, &b);
        output::print(&ioscope_report::compare::render_compare_text(&c));
    }
    Ok(())
}
