//! The measured core: per-worker I/O loops that own timing and accounting, the
//! per-second collector that writes results as the run goes, working-set preparation,
//! and the host description stored with every run.

pub mod clock;
pub mod host;
pub mod iogen;
pub mod run;
pub mod worker;
pub mod workset;

pub use run::{run, Outcome, Progress, RunConfig, RunError};

/// A plan from a TOML snippet, validated like user input.
#[cfg(test)]
pub(crate) fn test_plan(toml: &str) -> ioscope_workload::Plan {
    let src = ioscope_workload::SourceFile { path: "test.toml".into(), text: toml.to_string() };
    ioscope_workload::build_plan(Some(&src), &Default::default())
        .unwrap_or_else(|d| panic!("{}", ioscope_workload::render_diagnostics(&d)))
}
