//! Workload input: fio-like flags and TOML files, parsed and validated into one [`Plan`].
//!
//! [`build_plan`] merges defaults, a workload file and flags, and returns either a [`Plan`] or
//! every [`Diagnostic`] found; [`to_toml`] and [`plan_hash`] give a plan's canonical form.

pub mod access;
mod canonical;
pub mod check;
pub mod content;
mod diagnostic;
pub mod filebench;
pub mod fio;
pub mod flow;
pub mod font;
pub mod host;
mod input;
pub mod keys;
pub mod layout;
mod per_workload;
pub mod plan;
pub mod reference;
mod units;
pub mod vdbench;

pub use canonical::{plan_hash, to_toml};
pub use diagnostic::{render_diagnostics, Diagnostic, Origin};
pub use host::{HostKind, HostShare, HostSpec, OnHostLoss};
pub use input::{build_plan, flag_notes, validate_file, Flags, ReadError, SourceFile, MAX_SOURCE_BYTES};
/// The one reader of paths given by the user or a file (its own crate, for the crates
/// below this one).
pub use ioscope_readfile as readfile;
pub use plan::{
    AbsZone, Access, Amount, Arrivals, BlockSize, CacheMode, Content, Dataset, DatasetFormat, Distribution, EngineKind,
    FileIo, FileSelect, FlowOp, FlowStep, MaxErrors, Operation, Pattern, PatternMap, Plan, Precondition, Probe, Rate,
    Rw, SizeGamma, Staircase, StaircaseOf, Step, Steps, SyncMode, Target, TargetKind, UntilCi, VerifyMode, Workload,
    Zone, AMOUNT_MAX_DURATION_S, DEFAULT_BREAKDOWN_TOP, DEFAULT_CONFIDENCE_PCT, DEFAULT_MAX_REPEATS_UNTIL_CI,
    MAX_REPEATS, MAX_VERIFY_BLOCK, MIN_REPEATS_UNTIL_CI, MIN_VERIFY_BLOCK,
};
pub use units::{format_size, parse_duration, parse_size, UnitError};

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod host_tests;
#[cfg(test)]
mod keys_tests;
#[cfg(test)]
mod per_workload_tests;
#[cfg(test)]
mod phase_tests;
#[cfg(test)]
mod reader_tests;
#[cfg(test)]
mod tests;
