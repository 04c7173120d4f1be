//! `ioscope show` and `ioscope export`: read a results file (also one left by a killed
//! run) and print its summary or per-second series.

use crate::cli::ExportFormat;
use crate::{exit, output};
use ioscope_store::Status;
use std::path::Path;

fn open(file: &Path) -> Result<ioscope_store::Results, u8> {
    ioscope_store::open(file).map_err(|e| {
        // Every store error starts with the file's name.
        eprintln!("error: {e}");
        exit::INVALID_INPUT
    })
}

/// Prints the summary of a results file as a table or JSON.
pub fn print_summary(file: &Path, json: bool) -> u8 {
    match open(file) {
        Ok(results) => {
            print(file, &results, json);
            exit::OK
        }
        Err(code) => code,
    }
}

fn print(file: &Path, results: &ioscope_store::Results, json: bool) {
    let summary = ioscope_report::summarize(results, file);
    if json {
        output::println(&ioscope_report::render_json(&summary));
    } else {
        output::print(&ioscope_report::render_text(&summary));
    }
}

/// `ioscope show`: the summary, and what to copy to take the results elsewhere.
pub fn show(file: &Path, json: bool) -> u8 {
    let results = match open(file) {
        Ok(r) => r,
        Err(code) => return code,
    };
    print(file, &results, json);
    let wal = ioscope_store::sidecar(file, "-wal");
    if results.run.status == Status::Running {
        eprintln!(
            "note: the run is still going: until it ends, its latest seconds are in {} too; \
             to take the results elsewhere now, copy both files (or `ioscope export` them)",
            wal.display()
        );
    } else if wal.exists() {
        // A stopped run whose -wal could not be folded in (a read-only file or directory).
        eprintln!(
            "note: {} holds seconds that are not yet in {}: copy both files, or run `ioscope show` \
             where the file can be written to make it one file",
            wal.display(),
            file.display()
        );
    }
    exit::OK
}

pub fn export(file: &Path, format: ExportFormat) -> u8 {
    let results = match open(file) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match format {
        ExportFormat::Csv => output::print(&ioscope_report::export_csv(&results)),
        ExportFormat::Json => output::println(&ioscope_report::export_json(&results)),
    }
    exit::OK
}
