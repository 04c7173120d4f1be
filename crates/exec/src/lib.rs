//! The measured core: per-worker I/O loops that own timing and accounting, the
//! per-second collector that writes results as the run goes, working-set preparation,
//! and the host description stored with every run.

pub mod access;
pub mod amount;
pub mod blockdev;
pub mod breakdown;
pub mod cache;
pub mod clock;
pub mod content;
pub mod content_sample;
mod cpu;
mod engines;
pub mod errors;
pub mod existing;
pub mod flow;
pub mod host;
pub mod iogen;
pub mod journal;
pub mod limit;
pub mod precondition;
pub mod prep;
mod probe;
pub mod run;
mod steady;
pub mod system;
pub mod tree;
pub mod verify;
pub mod workdir;
pub mod worker;

pub use engines::{storage, StorageError};
pub use prep::{dataset, workset};
pub use run::{
    measure, run, step_rows, LocalProbe, Measure, Measured, Outcome, Progress, RunConfig, RunError, Sink, TargetFeed,
};

use ioscope_workload::{Step, Workload};

/// A workload as it runs in one step: the step's overrides (threads, block sizes, read
/// share) applied to the plan's own type.
pub fn in_step(w: &Workload, step: &Step) -> Workload {
    Workload {
        read_pct: step.read_pct.filter(|_| w.operation.transfers()).unwrap_or(w.read_pct),
        block_sizes: step.block_sizes.clone().unwrap_or_else(|| w.block_sizes.clone()),
        threads: step.threads_of(w),
        iodepth: step.iodepth.or(w.iodepth),
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
