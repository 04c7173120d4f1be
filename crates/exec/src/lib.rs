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
