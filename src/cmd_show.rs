//! `ioscope show` and `ioscope export`: read a results file (also one left by a killed
//! run) and print its summary or per-second series.

use crate::cli::ExportFormat;
use crate::{exit, output};
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
    let results = match open(file) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let summary = ioscope_report::summarize(&results, file);
    if json {
        output::println(&ioscope_report::render_json(&summary));
    } else {
        output::print(&ioscope_report::render_text(&summary));
    }
    exit::OK
}

pub fn show(file: &Path, json: bool) -> u8 {
    print_summary(file, json)
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
