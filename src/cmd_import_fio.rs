//! `ioscope import fio`: a fio job file to an ioscope workload file. Options that convert
//! with a difference are warned about; options whose loss would change the measurement
//! are errors (exit 2), and then nothing is written.

use crate::exit;
use ioscope_workload::fio::{self, FioError};
use std::path::Path;

/// Most findings printed.
const MAX_SHOWN: usize = 50;

pub fn fio(file: &Path, out: Option<&Path>, force: bool, group: Option<usize>) -> u8 {
    // A bad output path is found before the job file is read.
    if let Some(out) = out {
        if let Err(code) = crate::cmd_ui::check_out(out, force) {
            return code;
        }
    }
    let imported = match fio::import(file, group) {
        Ok(i) => i,
        Err(FioError::Read(e)) => {
            eprintln!("{e}");
            return exit::INVALID_INPUT;
        }
        Err(FioError::Refused(findings)) => {
            // A screenful, not a million lines for a hostile file.
            for f in findings.iter().take(MAX_SHOWN) {
                eprintln!("{f}");
            }
            if findings.len() > MAX_SHOWN {
                eprintln!("... and {} more", findings.len() - MAX_SHOWN);
            }
            let n = findings.iter().filter(|f| f.severity == fio::Severity::Error).count();
            eprintln!("{n} error{}; nothing was written.", if n == 1 { "" } else { "s" });
            return exit::INVALID_INPUT;
        }
    };
    for w in imported.warnings.iter().take(MAX_SHOWN) {
        eprintln!("{w}");
    }
    if imported.warnings.len() > MAX_SHOWN {
        eprintln!("... and {} more warnings", imported.warnings.len() - MAX_SHOWN);
    }
    match out {
        None => {
            crate::output::print(&imported.toml);
            exit::OK
        }
        Some(path) => {
            let code = crate::cmd_ui::write(path, imported.toml.as_bytes(), force);
            if code == exit::OK {
                eprintln!("wrote {}; check it with: ioscope validate {}", path.display(), path.display());
            }
            code
        }
    }
}
