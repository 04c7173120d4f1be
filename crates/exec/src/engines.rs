//! The run-time half of the engine table: how each engine is made for a worker, and the
//! file system its files live on. What engines there are, and what each can do, is plain
//! data in `ioscope_engine_table::ENGINES`; a new engine adds one arm here.

use ioscope_engine::fs::{FileSystem, LocalFs};
use ioscope_engine::null::NullEngine;
use ioscope_engine::posix::PosixEngine;
use ioscope_engine::uring::UringEngine;
use ioscope_engine::Engine;
use ioscope_engine_nfs::engine::NfsEngine;
use ioscope_engine_nfs::fs::NfsFs;
use ioscope_engine_nfs::target::Version;
use ioscope_engine_nfs::v4::{engine::Nfs41Engine, fs::Nfs41Fs};
use ioscope_engine_s3::{engine::S3Engine, fs::S3Fs};
use ioscope_engine_smb::{engine::SmbEngine, fs::SmbFs};
use ioscope_workload::{EngineKind, Plan, TargetKind};
use std::path::PathBuf;

/// Work done with a fresh engine instance. Generic, so that the core loop is compiled for
/// each engine (no virtual call per I/O).
pub(crate) trait WithEngine {
    type Out;
    fn with<E: Engine>(self, engine: E) -> Self::Out;
}

/// Makes `plan`'s engine for one worker and hands it to `f`.
pub(crate) fn with_engine<F: WithEngine>(plan: &Plan, f: F) -> F::Out {
    match (plan.engine, plan.target.as_ref().map(|t| &t.kind)) {
        (EngineKind::Posix, _) => f.with(PosixEngine::default()),
        (EngineKind::Uring, _) => f.with(UringEngine::new(plan.sqpoll)),
        (EngineKind::Null, _) => f.with(NullEngine::default()),
        (EngineKind::Nfs, Some(TargetKind::Nfs(t))) if t.version == Version::V41 => f.with(Nfs41Engine::new(t.clone())),
        (EngineKind::Nfs, Some(TargetKind::Nfs(t))) => f.with(NfsEngine::new(t.clone())),
        (EngineKind::S3, Some(TargetKind::S3(t))) => f.with(S3Engine::new(t.clone())),
        (EngineKind::Smb, Some(TargetKind::Smb(t))) => f.with(SmbEngine::new(t.clone())),
        (EngineKind::Nfs | EngineKind::S3 | EngineKind::Smb, _) => {
            unreachable!("validation gives engines nfs, s3 and smb their target")
        }
    }
}

/// Why the file system a plan's files live on could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("{url}: {reason}")]
    Mount { url: String, reason: String },
}

/// Where a plan's files live: the file system, and the working set's directory in it.
/// An engine with a target: the target's file system (an NFS export, mounted here; an S3
/// bucket; an SMB share) and directory (`nfs://HOST/EXPORT/DIR`, `smb://HOST/SHARE/DIR`); otherwise the local file system and `dir`.
pub fn storage(plan: &Plan) -> Result<(Box<dyn FileSystem>, PathBuf), StorageError> {
    let Some(target) = &plan.target else {
        return Ok((Box::new(LocalFs), plan.dir.clone()));
    };
    let fs: Box<dyn FileSystem> = match &target.kind {
        TargetKind::Nfs(t) => {
            let failed = |e: ioscope_engine_nfs::client::NfsError| StorageError::Mount {
                url: target.url.clone(),
                reason: e.to_string(),
            };
            match t.version {
                Version::V3 => Box::new(NfsFs::mount(t).map_err(failed)?),
                Version::V41 => Box::new(Nfs41Fs::mount(t).map_err(failed)?),
            }
        }
        TargetKind::S3(t) => {
            Box::new(S3Fs::connect_to(t).map_err(|reason| StorageError::Mount { url: target.url.clone(), reason })?)
        }
        TargetKind::Smb(t) => {
            Box::new(SmbFs::connect_to(t).map_err(|reason| StorageError::Mount { url: target.url.clone(), reason })?)
        }
    };
    Ok((fs, PathBuf::from(&target.root)))
}
