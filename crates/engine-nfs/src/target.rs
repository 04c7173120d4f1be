//! The `nfs://` target. Its grammar is plain data in the engine table
//! (`ioscope_engine_table::nfs`), so validating a workload needs no NFS client.

pub use ioscope_engine_table::nfs::{clip, Target, TargetError, Version, MAX_NCONNECT, NFS4_PORT};
