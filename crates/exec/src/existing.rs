//! An existing regular file as the target of engines posix and uring (`--dir FILE`, fio's
//! `filename=FILE` without a size): the run reads the file as it is, from offset 0 to the
//! plan's size (the whole file without one). It is not ioscope's: nothing is prepared on
//! it (no marker, no lock file), --cleanup never removes it, and a run that writes into it
//! (or preconditions it) is refused without --force. Reading needs no --force.

use ioscope_workload::{format_size, Plan};
use std::path::{Path, PathBuf};

/// Why an existing file target is refused. Found before any I/O: invalid input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum ExistingError {
    #[error("{path}: an existing file, not made by ioscope; the plan writes into it ({what}), which changes its data. Pass --force to write into it anyway, or read only (--rw read or randread)")]
    NotForced { path: PathBuf, what: &'static str },
    #[error("{path}: the plan's size is {plan}, the file holds {file}; give a --size of at most {file} (a smaller size uses the file's first bytes), or none to use it whole", plan = format_size(*plan), file = format_size(*file))]
    TooLarge { path: PathBuf, plan: u64, file: u64 },
    #[error("{path}: the file holds {file}, less than one {bs} block; give a smaller --bs", file = format_size(*file), bs = format_size(*bs))]
    SmallerThanBlock { path: PathBuf, file: u64, bs: u64 },
    #[error("{path}: an existing file is the whole working set; the plan has {files} files (use --files 1)")]
    Files { path: PathBuf, files: u32 },
}

/// The plan's existing file, as the run's results describe it.
#[derive(Clone, Debug, PartialEq)]
pub struct ExistingFile {
    pub path: PathBuf,
    pub size_bytes: u64,
}

/// Whether `path` names an existing regular file (following symbolic links: the user named it).
pub fn is_existing_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// The plan's existing file, checked against the plan; None when its `dir` is not one (or
/// the engine works elsewhere). A plan without a `size` is given the file's whole size
/// here, so that what the run records is the size it used.
pub fn resolve(plan: &mut Plan) -> Result<Option<ExistingFile>, ExistingError> {
    let caps = plan.engine.spec().caps;
    let path = plan.dir.clone();
    if plan.dataset.is_some() || !caps.does_io || caps.target.is_some() || !is_existing_file(&path) {
        return Ok(None);
    }
    let size_bytes = std::fs::metadata(&path).map_or(0, |m| m.len());
    let writes = if plan.precondition.is_some() {
        Some("its precondition writes it whole")
    } else {
        plan.writes().then_some("a workload writes")
    };
    if let (Some(what), false) = (writes, plan.force) {
        return Err(ExistingError::NotForced { path, what });
    }
    if plan.files != 1 {
        return Err(ExistingError::Files { path, files: plan.files });
    }
    if std::mem::take(&mut plan.size_default) {
        let largest = plan.max_block_bytes();
        if largest > size_bytes {
            return Err(ExistingError::SmallerThanBlock { path, file: size_bytes, bs: largest });
        }
        plan.size_bytes = size_bytes;
    }
    if plan.size_bytes > size_bytes {
        return Err(ExistingError::TooLarge { path, plan: plan.size_bytes, file: size_bytes });
    }
    Ok(Some(ExistingFile { path, size_bytes }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(args: &[&str]) -> Plan {
        let flags = args.chunks(2).fold(ioscope_workload::Flags::default(), |f, kv| f.with(kv[0], kv[1]));
        ioscope_workload::build_plan(None, &flags).unwrap()
    }

    #[test]
    fn a_file_is_read_whole_without_force_and_written_only_with_it() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("data.bin");
        std::fs::write(&f, vec![7u8; 1 << 20]).unwrap();
        let dir = f.to_str().unwrap();
        let mut p = plan(&["dir", dir, "rw", "randread"]);
        let got = resolve(&mut p).unwrap().expect("an existing file");
        assert_eq!((got.size_bytes, p.size_bytes, p.size_default), (1 << 20, 1 << 20, false));
        let mut p = plan(&["dir", dir, "rw", "randwrite"]);
        let e = resolve(&mut p).unwrap_err().to_string();
        assert!(e.contains("--force") && e.contains("a workload writes"), "{e}");
        let mut p = plan(&["dir", dir, "rw", "randwrite", "force", ""]);
        assert!(resolve(&mut p).unwrap().is_some());
        let mut p = plan(&["dir", dir, "rw", "read", "size", "2m"]);
        assert!(resolve(&mut p).unwrap_err().to_string().contains("at most 1 MiB"));
        let mut p = plan(&["dir", dir, "rw", "read", "size", "512k"]);
        resolve(&mut p).unwrap();
        assert_eq!(p.size_bytes, 512 << 10, "a smaller size uses the file's first bytes");
        let mut p = plan(&["dir", tmp.path().to_str().unwrap(), "rw", "read"]);
        assert!(resolve(&mut p).unwrap().is_none(), "a directory holds a working set");
    }
}
