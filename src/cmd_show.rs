//! `ioscope show` and `ioscope export`: read a results file (also one left by a killed
//! run) and print its summary or per-second series.

use crate::cli::{ExportFormat, OutFile};
use crate::{outfile, output, CmdResult, Failure};
use ioscope_store::Status;
use std::path::Path;

fn open(file: &Path) -> Result<ioscope_store::Results, Failure> {
    // Every store error starts with the file's name.
    ioscope_store::open(file).map_err(Failure::invalid)
}

/// Prints the summary of a results file as a table or JSON.
/// Prints the summary of a results file; Ok(false) when one of the run's checks failed.
pub fn print_summary(file: &Path, json: bool) -> Result<bool, Failure> {
    let results = open(file)?;
    let summary = ioscope_report::summarize(&results, file);
    output::print(&render(&summary, json));
    Ok(summary.checks.iter().all(|c| c.passed))
}

fn render(summary: &ioscope_report::Summary, json: bool) -> String {
    if json {
        format!("{}\n", ioscope_report::render_json(summary))
    } else {
        ioscope_report::render_text(summary)
    }
}

fn summary_text(file: &Path, results: &ioscope_store::Results, json: bool) -> String {
    render(&ioscope_report::summarize(results, file), json)
}

fn print(file: &Path, results: &ioscope_store::Results, json: bool) {
    output::print(&summary_text(file, results, json));
}

/// `ioscope show`: the summary, and what to copy to take the results elsewhere.
pub fn show(file: &Path, json: bool, out: &OutFile) -> CmdResult {
    if let Some(path) = &out.out {
        outfile::check(path, out.force)?;
    }
    let results = open(file)?;
    outfile::emit(&summary_text(file, &results, json), out)?;
    let wal = ioscope_store::sidecar(file, "-wal");
    // A live run's notes say what to copy; a stopped one whose -wal is still there:
    if results.run.status != Status::Running && wal.exists() {
        // A stopped run whose -wal could not be folded in (a read-only file or directory).
        eprintln!(
            "note: {} holds seconds that are not yet in {}: copy both files; once the file can be \
             written (free space, permissions), `ioscope show` makes it one file",
            wal.display(),
            file.display()
        );
    }
    Ok(())
}

/// `ioscope show --system`: each host's system record, as text or JSON.
pub fn show_system(file: &Path, json: bool, out: &OutFile) -> CmdResult {
    if let Some(path) = &out.out {
        outfile::check(path, out.force)?;
    }
    let results = open(file)?;
    let system = results.hosts.iter().cloned().collect();
    let text = if json {
        format!("{}\n", ioscope_report::render_system_json(&system))
    } else {
        ioscope_report::render_system_text(&system)
    };
    outfile::emit(&text, out)
}

/// After the results file failed during a run (a full file system): the summary of what
/// it holds, as a failed run, and which files hold it.
pub fn after_store_failure(file: &Path, why: &str, json: bool) {
    if !file.exists() {
        return;
    }
    let mut results = match ioscope_store::open(file) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: the results file cannot be read back: {e}");
            return;
        }
    };
    results.run.status = Status::Failed;
    results.run.status_detail = Some(format!("writing the {why}"));
    print(file, &results, json);
    let wal = ioscope_store::sidecar(file, "-wal");
    let seconds = results.seconds_kept();
    if wal.exists() {
        eprintln!(
            "the {seconds} second(s) measured before that are in {} and {}: keep both; once there is \
             space, `ioscope show {}` makes them one file",
            file.display(),
            wal.display(),
            file.display()
        );
    } else {
        eprintln!("the {seconds} second(s) measured before that are in {}", file.display());
    }
}

pub fn export(file: &Path, format: ExportFormat, out: &OutFile) -> CmdResult {
    if let Some(path) = &out.out {
        outfile::check(path, out.force)?;
    }
    let results = open(file)?;
    let text = match format {
        ExportFormat::Csv => ioscope_report::export_csv(&results),
        ExportFormat::Json => format!("{}\n", ioscope_report::export_json(&results)),
    };
    outfile::emit(&text, out)
}
