//! The run's journal (`--journal FILE`): created before the results file, with what
//! `ioscope verify --journal` needs to reopen the target, and made the verifier's sink.

use crate::verify::Verifier;
use ioscope_verify::journal::{Description, Journal, JournalFile};
use ioscope_workload::Plan;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Creates the journal at `path` for the run `v` verifies and makes it `v`'s sink.
pub fn open(
    path: &Path,
    plan: &Plan,
    files: &[PathBuf],
    v: &mut Verifier,
    workload: &str,
) -> Result<Arc<Journal>, String> {
    let size = plan.file_size_bytes();
    let path_of = |f: &PathBuf| match &plan.target {
        // On an nfs target: the file's URL (`ioscope verify` looks it up by its name).
        Some(t) => format!("{}/{}", t.root.trim_end_matches('/'), f.file_name().unwrap_or_default().to_string_lossy()),
        // Absolute, so that `ioscope verify` finds it from any directory.
        None => std::path::absolute(f).unwrap_or_else(|_| f.clone()).to_string_lossy().into_owned(),
    };
    let files = files.iter().enumerate().map(|(i, f)| JournalFile { id: i as u32, path: path_of(f), size }).collect();
    let target = match &plan.target {
        Some(t) => t.url.clone(),
        None => std::path::absolute(&plan.dir).unwrap_or_else(|_| plan.dir.clone()).to_string_lossy().into_owned(),
    };
    let d = Description {
        run_id: v.run_id,
        block_len: v.block_len,
        files,
        engine: plan.engine.name().to_string(),
        target,
        workload: workload.to_string(),
    };
    let j = Arc::new(Journal::create(path, &d).map_err(|e| e.to_string())?);
    v.sink = Some(j.clone());
    Ok(j)
}
