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
    if let Some(path) = out {
        if let Err(why) = check_out(path, force) {
            eprintln!("{}: error: {why}", path.display());
            return exit::INVALID_INPUT;
        }
    }
    let Some(toml) = convert(file, group) else { return exit::INVALID_INPUT };
    let Some(path) = out else {
        crate::output::print(&toml);
        return exit::OK;
    };
    match write(path, toml.as_bytes(), force) {
        Ok(()) => {
            eprintln!("wrote {}; check it with: ioscope validate {}", path.display(), path.display());
            exit::OK
        }
        Err(why) => {
            eprintln!("{}: error: {why}", path.display());
            exit::RUN_FAILED
        }
    }
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

/// Refuses to replace an existing file unless told to, and a symbolic link always.
fn check_out(out: &Path, force: bool) -> Result<(), &'static str> {
    match out.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => Err("is a symbolic link; ioscope does not write through links"),
        Ok(_) if !force => Err("file exists; use --force to replace it"),
        _ => Ok(()),
    }
}

/// A new file (O_EXCL), or with `force` an existing regular one; never through a link.
fn write(out: &Path, bytes: &[u8], force: bool) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).custom_flags(libc::O_NOFOLLOW);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    options.open(out).and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all())).map_err(|e| {
        match e.raw_os_error() {
            Some(libc::ELOOP) => "is a symbolic link; ioscope does not write through links".to_string(),
            Some(libc::EEXIST) => "file exists; use --force to replace it".to_string(),
            _ => e.to_string(),
        }
    })
}
