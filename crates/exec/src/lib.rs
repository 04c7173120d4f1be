//! The measured core: per-worker I/O loops that own timing and accounting, the
//! per-second collector that writes results as the run goes, working-set preparation,
//! and the host description stored with every run.

pub mod clock;
pub mod errors;
pub mod host;
pub mod iogen;
pub mod limit;
pub mod prep;
mod probe;
pub mod run;
pub mod tree;
pub mod workdir;
pub mod worker;

pub use prep::{dataset, workset};
pub use run::{run, Outcome, Progress, RunConfig, RunError};

use ioscope_engine::fs::FileSystem;
use ioscope_workload::{EngineKind, Plan, Step, Workload};
use std::path::PathBuf;

/// Where a plan's files live: the file system, and the working set's directory in it.
/// Engine nfs: the target's export (mounted here) and directory (`nfs://HOST/EXPORT/DIR`);
/// otherwise the local file system and `dir`.
pub fn storage(plan: &Plan) -> Result<(Box<dyn FileSystem>, PathBuf), String> {
    if plan.engine != EngineKind::Nfs {
        return Ok((Box::new(ioscope_engine::fs::LocalFs), plan.dir.clone()));
    }
    let url = plan.target.as_deref().unwrap_or_default();
    let t = ioscope_engine_nfs::target::Target::parse(url).map_err(|e| e.to_string())?;
    let fs = ioscope_engine_nfs::fs::NfsFs::mount(&t).map_err(|e| format!("{url}: {e}"))?;
    Ok((Box::new(fs), PathBuf::from(t.url_of(&t.path))))
}

/// A workload as it runs in one step: the step's overrides (threads, block sizes, read
/// share) applied to the plan's own type.
pub fn in_step(w: &Workload, step: &Step) -> Workload {
    Workload {
        read_pct: step.read_pct.filter(|_| w.operation.transfers()).unwrap_or(w.read_pct),
        block_sizes: step.block_sizes.clone().unwrap_or_else(|| w.block_sizes.clone()),
        threads: step.threads.unwrap_or(w.threads),
        ..w.clone()
    }
}

/// A plan from a TOML snippet, validated like user input.
#[cfg(test)]
pub(crate) fn test_plan(toml: &str) -> ioscope_workload::Plan {
    let src = ioscope_workload::SourceFile { path: "test.toml".into(), text: toml.to_string() };
    ioscope_workload::build_plan(Some(&src), &Default::default())
        .unwrap_or_else(|d| panic!("{}", ioscope_workload::render_diagnostics(&d)))
}
