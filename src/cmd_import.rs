//! `ioscope import vdbench`: a vdbench parameter file to an ioscope workload file. Any
//! parameter that does not convert is reported with its line and column (exit 2), and
//! nothing is written.

use crate::cli::OutFile;
use crate::{outfile, CmdResult, Failure, Kind};
use ioscope_workload::{render_diagnostics, vdbench, SourceFile};
use std::path::Path;

pub fn vdbench(file: &Path, out: &OutFile) -> CmdResult {
    if let Some(path) = &out.out {
        outfile::check(path, out.force)?;
    }
    let source = SourceFile::read(file).map_err(|e| Failure::said(Kind::InvalidInput, e.to_string()))?;
    let toml = vdbench::import(&source).map_err(|diags| {
        eprint!("{}", render_diagnostics(&diags));
        Failure::printed(Kind::InvalidInput)
    })?;
    outfile::emit(&toml, out)?;
    if let Some(path) = &out.out {
        eprintln!("wrote {}; check it with: ioscope validate {}", path.display(), path.display());
    }
    Ok(())
}
