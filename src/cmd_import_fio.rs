//! `ioscope import fio`: a fio job file to an ioscope workload file. Options that convert
//! with a difference are warned about; options whose loss would change the measurement
//! are errors (exit 2), and then nothing is written.

use crate::cli::OutFile;
use crate::{outfile, CmdResult, Failure, Kind};
use ioscope_workload::fio::{self, FioError};
use std::path::Path;

/// Most findings printed.
const MAX_SHOWN: usize = 50;

pub fn fio(file: &Path, out: &OutFile, group: Option<usize>) -> CmdResult {
    // A bad output path is found before the job file is read.
    if let Some(path) = &out.out {
        outfile::check(path, out.force)?;
    }
    let toml = convert(file, group).ok_or(Failure::printed(Kind::InvalidInput))?;
    outfile::emit(&toml, out)?;
    if let Some(path) = &out.out {
        eprintln!("wrote {}; check it with: ioscope validate {}", path.display(), path.display());
    }
    Ok(())
}

/// The workload file, with the warnings printed; None when the import was refused (the
/// reasons are printed).
pub fn convert(file: &Path, group: Option<usize>) -> Option<String> {
    match fio::import(file, group) {
        Ok(imported) => {
            print_findings(&imported.warnings);
            Some(imported.toml)
        }
        Err(FioError::Read(e)) => {
            eprintln!("{e}");
            None
        }
        Err(FioError::Refused(findings)) => {
            print_findings(&findings);
            let n = findings.iter().filter(|f| f.severity == fio::Severity::Error).count();
            eprintln!("{n} error{}; nothing was written.", if n == 1 { "" } else { "s" });
            None
        }
    }
}

/// A screenful, not a million lines for a hostile file.
fn print_findings(findings: &[fio::Finding]) {
    for f in findings.iter().take(MAX_SHOWN) {
        eprintln!("{f}");
    }
    if findings.len() > MAX_SHOWN {
        eprintln!("... and {} more", findings.len() - MAX_SHOWN);
    }
}
