//! The engine table, like fio's `ioengine_ops`: one entry per engine with its name, a
//! one-line description (help and docs list it), its capabilities and how its target is
//! written and parsed. Plain data without I/O, so the workload crate validates a plan
//! against it without depending on any engine; the executor (`ioscope-exec`, `engines.rs`)
//! adds how each engine is started and where its files live.
//!
//! Adding an engine: its module (the `Engine` implementation, and here its target grammar
//! if it has one), a variant of [`EngineKind`], and its line in [`ENGINES`].

pub mod nfs;
pub mod query;
pub mod s3;
pub mod smb;

use serde::{Deserialize, Serialize};

/// Which engine performs the I/O: the key of [`ENGINES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Posix,
    Uring,
    Nfs,
    Null,
    S3,
    Smb,
}

/// Every engine, one line each, in [`EngineKind`] order (checked at compile time below).
pub const ENGINES: &[EngineSpec] = &[POSIX, URING, nfs::SPEC, NULL, s3::SPEC, smb::SPEC];

const _: () = {
    let mut i = 0;
    while i < ENGINES.len() {
        assert!(ENGINES[i].kind as usize == i, "ENGINES must list the engines in EngineKind order");
        i += 1;
    }
};

const POSIX: EngineSpec = EngineSpec {
    kind: EngineKind::Posix,
    name: "posix",
    aliases: &[],
    description: "pread/pwrite, one I/O at a time per thread",
    caps: Capabilities { max_queue_depth: 1, file_ops: true, patterns: true, ..Capabilities::LOCAL },
    note: None,
    cache: None,
};

const URING: EngineSpec = EngineSpec {
    kind: EngineKind::Uring,
    name: "uring",
    aliases: &["io_uring"],
    description: "io_uring, --iodepth I/Os in flight per thread",
    caps: Capabilities { sqpoll: true, ..Capabilities::LOCAL },
    note: None,
    cache: None,
};

const NULL: EngineSpec = EngineSpec {
    kind: EngineKind::Null,
    name: "null",
    aliases: &[],
    description: "no I/O; measures ioscope itself",
    caps: Capabilities { does_io: false, direct_align_bytes: 0, file_ops: true, patterns: true, ..Capabilities::LOCAL },
    note: Some("engine null performs no I/O: the numbers measure ioscope itself, not storage"),
    cache: None,
};

impl EngineKind {
    /// Every engine, in table order.
    pub fn all() -> impl Iterator<Item = EngineKind> {
        ENGINES.iter().map(|e| e.kind)
    }
    /// This engine's entry in [`ENGINES`].
    pub fn spec(self) -> &'static EngineSpec {
        &ENGINES[self as usize]
    }
    pub fn name(self) -> &'static str {
        self.spec().name
    }
    /// Keeps more than one I/O in flight per thread.
    pub fn queues(self) -> bool {
        self.spec().caps.queued()
    }
}

/// One engine: what validation, help, docs and the summary know of it.
#[derive(Clone, Copy, Debug)]
pub struct EngineSpec {
    pub kind: EngineKind,
    /// As written in `--engine` and `engine = "..."`.
    pub name: &'static str,
    /// Other spellings accepted for it (fio's `io_uring`).
    pub aliases: &'static [&'static str],
    /// One line, for help and docs.
    pub description: &'static str,
    pub caps: Capabilities,
    /// A note the summary always prints for runs on this engine (instead of the page-cache notes).
    pub note: Option<&'static str>,
    /// How the summary names the caching, when the engine decides it (else "direct" or "buffered").
    pub cache: Option<&'static str>,
}

/// What an engine can do; validation refuses a plan that needs more.
#[derive(Clone, Copy, Debug)]
pub struct Capabilities {
    /// Largest iodepth: 1 for a synchronous engine (every submit completes before it
    /// returns), more for one that keeps I/Os in flight.
    pub max_queue_depth: u32,
    /// Accepts `direct = true`.
    pub direct_io: bool,
    /// Block-size multiple that `direct = true` needs (O_DIRECT); 0 if none.
    pub direct_align_bytes: u64,
    /// File and directory operations (`[dataset]` workloads: open, create, delete, mkdir ...).
    pub file_ops: bool,
    /// Pattern workloads (drawn column by column, one I/O at a time per thread).
    pub patterns: bool,
    /// `sqpoll`: a kernel thread polls the submission queue.
    pub sqpoll: bool,
    /// Reads and writes a working set (false: no I/O, so no files and no directory needed).
    pub does_io: bool,
    /// Works on a server named by a target URL (`--target`), not in a local `--dir`.
    pub target: Option<TargetRule>,
    /// Objects, not files: a write replaces a whole object, there are no directories to
    /// make or remove, no attributes to set and no per-write sync.
    pub objects: bool,
}

impl Capabilities {
    /// A local engine with queued I/O, O_DIRECT and no extras: the base the entries adjust.
    pub const LOCAL: Capabilities = Capabilities {
        max_queue_depth: 1024,
        direct_io: true,
        direct_align_bytes: 512,
        file_ops: false,
        patterns: false,
        sqpoll: false,
        does_io: true,
        target: None,
        objects: false,
    };

    pub fn queued(&self) -> bool {
        self.max_queue_depth > 1
    }
    /// Whether the engine has `c`.
    pub fn has(&self, c: Capability) -> bool {
        match c {
            Capability::Queued => self.queued(),
            Capability::DirectIo => self.direct_io,
            Capability::FileOps => self.file_ops,
            Capability::Patterns => self.patterns,
            Capability::Sqpoll => self.sqpoll,
            Capability::Target => self.target.is_some(),
        }
    }
    /// Its files are in a local directory (`--dir`) that it reads and writes.
    pub fn local_files(&self) -> bool {
        self.does_io && self.target.is_none()
    }
}

/// A capability a plan can need, by the workload key that asks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    Queued,
    DirectIo,
    FileOps,
    Patterns,
    Sqpoll,
    Target,
}

impl Capability {
    pub const ALL: [Capability; 6] = [
        Capability::Queued,
        Capability::DirectIo,
        Capability::FileOps,
        Capability::Patterns,
        Capability::Sqpoll,
        Capability::Target,
    ];
    /// The workload key (or section) that needs it: every refusal names it.
    pub fn key(self) -> &'static str {
        match self {
            Capability::Queued => "iodepth",
            Capability::DirectIo => "direct",
            Capability::FileOps => "[dataset]",
            Capability::Patterns => "pattern",
            Capability::Sqpoll => "sqpoll",
            Capability::Target => "target",
        }
    }
    /// The engines that have it, as a list for a message: "posix, nfs or null".
    pub fn engines_with(self) -> String {
        or_list(ENGINES.iter().filter(|e| e.caps.has(self)).map(|e| e.name))
    }
}

/// How an engine's target is written and parsed.
#[derive(Clone, Copy, Debug)]
pub struct TargetRule {
    /// The form expected, for errors.
    pub expected: &'static str,
    /// Why a target is needed, when none was given.
    pub missing: &'static str,
    /// A valid target, for docs and tests.
    pub example: &'static str,
    pub parse: fn(&str) -> Result<Target, InvalidTarget>,
}

/// What is wrong with a target (the form expected is the rule's `expected`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidTarget(pub String);

/// A target as written and as parsed (once, when the plan is validated).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// As the user wrote it (the canonical workload keeps it so).
    pub url: String,
    /// Where the files are, as a URL without options (`nfs://HOST[:PORT]/EXPORT/DIR`):
    /// paths under the target (a dataset's anchor) are spelt under it.
    pub root: String,
    pub kind: TargetKind,
}

/// A parsed target, by engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetKind {
    Nfs(nfs::Target),
    S3(s3::Target),
    Smb(smb::Target),
}

impl Target {
    /// Parses `url` with the first engine whose target grammar takes it (a plan read back
    /// from its JSON).
    pub fn parse_any(url: &str) -> Result<Target, InvalidTarget> {
        let mut first_err = None;
        for rule in ENGINES.iter().filter_map(|e| e.caps.target) {
            match (rule.parse)(url) {
                Ok(t) => return Ok(t),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        Err(first_err.unwrap_or_else(|| InvalidTarget("no engine takes a target".to_string())))
    }
}

/// Every name `--engine` accepts, aliases included, with its engine, in table order.
pub fn engine_names() -> impl Iterator<Item = (&'static str, EngineKind)> {
    ENGINES.iter().flat_map(|e| std::iter::once(e.name).chain(e.aliases.iter().copied()).map(move |n| (n, e.kind)))
}

/// The `--engine` help: every engine with its description.
pub fn engine_help() -> String {
    let list: Vec<String> = ENGINES.iter().map(|e| format!("{} ({})", e.name, e.description)).collect();
    format!("Engine: {}", list.join(", "))
}

/// "a", "a or b", "a, b or c".
fn or_list<'a>(items: impl Iterator<Item = &'a str>) -> String {
    let items: Vec<&str> = items.collect();
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_is_found_by_its_kind_and_names_are_unique() {
        for e in ENGINES {
            assert_eq!(e.kind.spec().name, e.name);
        }
        let names: Vec<&str> = engine_names().map(|(n, _)| n).collect();
        for n in &names {
            assert_eq!(names.iter().filter(|m| *m == n).count(), 1, "{n} is listed twice");
        }
    }

    #[test]
    fn lists_read_like_prose() {
        assert_eq!(or_list(["a"].into_iter()), "a");
        assert_eq!(or_list(["a", "b"].into_iter()), "a or b");
        assert_eq!(or_list(["a", "b", "c"].into_iter()), "a, b or c");
    }
}
