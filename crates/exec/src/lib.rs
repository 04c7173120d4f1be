//! The measured core: per-worker I/O loops that own timing and accounting, the
//! per-second collector that writes results as the run goes, working-set preparation,
//! and the host description stored with every run.

pub mod clock;
pub mod dataset;
mod engines;
pub mod errors;
pub mod host;
pub mod iogen;
pub mod limit;
mod probe;
pub mod run;
pub mod tree;
pub mod workdir;
pub mod worker;
pub mod workset;

pub use engines::storage;
pub use run::{run, Outcome, Progress, RunConfig, RunError};

use ioscope_workload::{BlockSize, FileIo, FileSelect, Operation, Pattern, Step, Workload};

/// A workload's parameters in one step: the step's overrides applied.
#[derive(Clone, Debug)]
pub struct Effective {
    pub operation: Operation,
    pub read_pct: u8,
    pub block_sizes: Vec<BlockSize>,
    pub fileio: FileIo,
    pub fileselect: FileSelect,
    pub threads: u32,
    pub pattern: Option<Pattern>,
}

impl Effective {
    pub fn of(w: &Workload, step: &Step) -> Self {
        Self {
            operation: w.operation,
            read_pct: step.read_pct.filter(|_| w.operation.transfers()).unwrap_or(w.read_pct),
            block_sizes: step.block_sizes.clone().unwrap_or_else(|| w.block_sizes.clone()),
            fileio: w.fileio,
            fileselect: w.fileselect,
            threads: step.threads.unwrap_or(w.threads),
            pattern: w.pattern.clone(),
        }
    }
}

/// A plan from a TOML snippet, validated like user input.
#[cfg(test)]
pub(crate) fn test_plan(toml: &str) -> ioscope_workload::Plan {
    let src = ioscope_workload::SourceFile { path: "test.toml".into(), text: toml.to_string() };
    ioscope_workload::build_plan(Some(&src), &Default::default())
        .unwrap_or_else(|d| panic!("{}", ioscope_workload::render_diagnostics(&d)))
}
