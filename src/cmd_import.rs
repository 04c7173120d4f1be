//! `ioscope import vdbench`: a vdbench parameter file to an ioscope workload file. Any
//! parameter that does not convert is reported with its line and column (exit 2), and
//! nothing is written.

use crate::exit;
use ioscope_workload::{render_diagnostics, vdbench, SourceFile};
use std::io::Write;
use std::path::Path;

pub fn vdbench(file: &Path, out: Option<&Path>) -> u8 {
    let source = match SourceFile::read(file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return exit::INVALID_INPUT;
        }
    };
    let toml = match vdbench::import(&source) {
        Ok(t) => t,
        Err(diags) => {
            eprint!("{}", render_diagnostics(&diags));
            return exit::INVALID_INPUT;
        }
    };
    match out {
        None => {
            crate::output::print(&toml);
            exit::OK
        }
        Some(path) => {
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .and_then(|mut f| f.write_all(toml.as_bytes()));
            match written {
                Ok(()) => {
                    eprintln!("wrote {}; check it with: ioscope validate {}", path.display(), path.display());
                    exit::OK
                }
                Err(e) => {
                    eprintln!("{}: error: {e} (ioscope never overwrites a file)", path.display());
                    exit::INVALID_INPUT
                }
            }
        }
    }
}
