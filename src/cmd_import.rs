//! `ioscope import vdbench` and `ioscope import filebench`: a vdbench parameter file or a
//! Filebench workload to an ioscope workload file. Any
//! parameter that does not convert is reported with its line and column (exit 2), and
//! nothing is written.

use crate::cli::OutFile;
use crate::{outfile, CmdResult, Failure, Kind};
use ioscope_workload::{filebench, render_diagnostics, vdbench, Diagnostic, SourceFile};
use std::path::Path;

pub fn vdbench(file: &Path, out: &OutFile) -> CmdResult {
    import(file, out, vdbench::import)
}

pub fn filebench(file: &Path, out: &OutFile) -> CmdResult {
    import(file, out, filebench::import)
}

fn import(file: &Path, out: &OutFile, convert: fn(&SourceFile) -> Result<String, Vec<Diagnostic>>) -> CmdResult {
    if let Some(path) = &out.out {
        outfile::check(path, out.force)?;
    }
    let source = SourceFile::read(file).map_err(|e| Failure::said(Kind::InvalidInput, e.to_string()))?;
    let toml = convert(&source).map_err(|diags| {
        eprint!("{}", render_diagnostics(&diags));
        Failure::printed(Kind::InvalidInput)
    })?;
    outfile::emit(&toml, out)?;
    if let Some(path) = &out.out {
        eprintln!("wrote {}; check it with: ioscope validate {}", path.display(), path.display());
    }
    Ok(())
}
