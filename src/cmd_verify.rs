//! `ioscope verify --journal FILE`: after a crash (of ioscope, its host or the target),
//! re-reads every block the journal says the run wrote and reports what is missing.
//!
//! The target is reopened as the journal names it: posix and uring files by their paths,
//! nfs files through ioscope's own NFSv3 client (a mount of the journal's nfs:// target,
//! one READ per block, no cache between), or its NFSv4.1 client for a `version=4.1`
//! target (a session, each file OPENed for reading). Reading is sequential and read-only.

use crate::{output, CmdResult, Failure, Kind};
use ioscope_verify::journal::{self, Contents};
use ioscope_verify::recheck::{recheck, Finding, Journaled};
use ioscope_verify::{Header, Mismatch};
use serde_json::json;
use std::path::Path;

/// Mismatches listed one by one (the counts are always exact).
const LISTED: usize = 1000;

/// One block that is not what the journal says.
struct Listed {
    file: u32,
    path: String,
    offset: u64,
    floor: u64,
    durable: u64,
    allowed: bool,
    m: Mismatch,
}

#[derive(Default)]
struct Tally {
    checked: u64,
    /// Checked blocks with a durable floor (the target promised to keep a write of them).
    durable: u64,
    intact: u64,
    /// Durable writes lost (zeroed, truncated) or stale, changed or misplaced blocks, by kind.
    failed: std::collections::BTreeMap<&'static str, u64>,
    /// Acknowledged, never promised durable, not found.
    allowed: u64,
    unreadable: u64,
    listed: Vec<Listed>,
    read_errors: Vec<String>,
}

/// Reads one block of one file of the journal's run.
trait Blocks {
    /// Fills `buf` from `offset` of file `index` (in the journal's order); returns the bytes
    /// read (fewer at the file's end; 0 for a file that is gone).
    fn read(&mut self, index: usize, offset: u64, buf: &mut [u8]) -> Result<usize, String>;
}

/// A file of the run, reopened: None when it is gone (its blocks are missing: truncated); an
/// error when it cannot be opened (its blocks are unreadable).
type Reopened<T> = Result<Option<T>, String>;

struct Posix(Vec<Reopened<std::fs::File>>);

impl Blocks for Posix {
    fn read(&mut self, index: usize, offset: u64, buf: &mut [u8]) -> Result<usize, String> {
        use std::os::unix::fs::FileExt as _;
        let f = match self.0.get(index) {
            Some(Ok(Some(f))) => f,
            Some(Err(e)) => return Err(e.clone()),
            _ => return Ok(0),
        };
        let mut done = 0;
        while done < buf.len() {
            match f.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(done)
    }
}

struct Nfs {
    session: ioscope_engine_nfs::client::Session,
    files: Vec<Reopened<ioscope_engine_nfs::proto::Fh>>,
    rtmax: u32,
}

impl Blocks for Nfs {
    fn read(&mut self, index: usize, offset: u64, buf: &mut [u8]) -> Result<usize, String> {
        let fh = match self.files.get(index) {
            Some(Ok(Some(fh))) => fh,
            Some(Err(e)) => return Err(e.clone()),
            _ => return Ok(0),
        };
        let mut done = 0;
        while done < buf.len() {
            let want = (buf.len() - done).min(self.rtmax.max(512) as usize) as u32;
            let data = self.session.read_data(fh, offset + done as u64, want).map_err(|e| e.to_string())?;
            let n = data.len().min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&data[..n]);
            done += n;
            if n < want as usize {
                break;
            }
        }
        Ok(done)
    }
}

struct Nfs41 {
    paths: ioscope_engine_nfs::v4::fs::Paths41,
    files: Vec<Reopened<ioscope_engine_nfs::v4::fs::Open>>,
}

impl Blocks for Nfs41 {
    fn read(&mut self, index: usize, offset: u64, buf: &mut [u8]) -> Result<usize, String> {
        let f = match self.files.get(index) {
            Some(Ok(Some(f))) => f,
            Some(Err(e)) => return Err(e.clone()),
            _ => return Ok(0),
        };
        let mut done = 0;
        while done < buf.len() {
            let want = (buf.len() - done).min(self.paths.rtmax.max(512) as usize) as u32;
            let (data, eof) = self.paths.read(f, offset + done as u64, want).map_err(|e| e.to_string())?;
            let n = data.len().min(buf.len() - done);
            buf[done..done + n].copy_from_slice(&data[..n]);
            done += n;
            if eof || n < want as usize {
                break;
            }
        }
        Ok(done)
    }
}

impl Drop for Nfs41 {
    fn drop(&mut self) {
        for f in self.files.iter().filter_map(|f| f.as_ref().ok().and_then(Option::as_ref)) {
            let _ = self.paths.close(f);
        }
    }
}

/// The journal's files over NFSv4.1, each OPENed for reading.
fn reopen_nfs41(target: &ioscope_engine_nfs::target::Target, c: &Contents) -> Result<Box<dyn Blocks>, Failure> {
    let d = &c.description;
    let fail = |e: ioscope_engine_nfs::client::NfsError| {
        Failure::failed(anyhow::anyhow!("{}: the target cannot be reopened: {e}", d.target))
    };
    let mut paths = ioscope_engine_nfs::v4::fs::Paths41::connect(target, 0).map_err(fail)?;
    let dir = paths.dir_of(Path::new(&target.url_of(&target.path))).map_err(fail)?;
    let files = d
        .files
        .iter()
        .map(|f| {
            let Some(name) = Path::new(&f.path).file_name().map(|n| n.to_string_lossy().into_owned()) else {
                return Err(format!("{} names no file", f.path));
            };
            match paths.open_in(&dir, &name, false, ioscope_engine_nfs::v4::proto::Create::No) {
                Ok(f) => Ok(Some(f)),
                // NFS4ERR_NOENT: the file is gone.
                Err(e) if e.status() == Some(2) => Ok(None),
                Err(e) => Err(format!("cannot open it: {e}")),
            }
        })
        .collect();
    Ok(Box::new(Nfs41 { paths, files }))
}

fn reopen(path: &Path, c: &Contents) -> Result<Box<dyn Blocks>, Failure> {
    let d = &c.description;
    match d.engine.as_str() {
        "posix" | "uring" => {
            use ioscope_workload::readfile::{self, FileError};
            let mut files = Vec::with_capacity(d.files.len());
            for f in &d.files {
                // A file or the block device a run wrote; opened without waiting, so a FIFO
                // put in its place is refused, never waited on.
                files.push(match readfile::open(Path::new(&f.path), true) {
                    Ok(file) => Ok(Some(file)),
                    Err(FileError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(FileError::Io(e)) => Err(format!("cannot open it: {e}")),
                    Err(e) => {
                        return Err(Failure::invalid(anyhow::anyhow!(
                            "{}: the journal's file {}: {e}; a run writes regular files or a block device",
                            path.display(),
                            f.path.escape_debug()
                        )))
                    }
                });
            }
            Ok(Box::new(Posix(files)))
        }
        "nfs" => {
            use ioscope_engine_nfs::client::{mount, Session};
            let target = ioscope_engine_nfs::target::Target::parse(&d.target)
                .map_err(|e| Failure::invalid(anyhow::anyhow!("the journal's target {}: {}", d.target, e.0)))?;
            if target.version == ioscope_engine_nfs::target::Version::V41 {
                return reopen_nfs41(&target, c);
            }
            let fail = |e: ioscope_engine_nfs::client::NfsError| {
                Failure::failed(anyhow::anyhow!("{}: the target cannot be reopened: {e}", d.target))
            };
            let m = mount(&target).map_err(fail)?;
            let mut session = Session::connect(&target, &m).map_err(fail)?;
            let files = d
                .files
                .iter()
                .map(|f| {
                    let Some(name) = Path::new(&f.path).file_name().map(|n| n.to_string_lossy().into_owned()) else {
                        return Err(format!("{} names no file", f.path));
                    };
                    match session.lookup(&m.dir, &name) {
                        Ok((fh, _)) => Ok(Some(fh)),
                        // NFS3ERR_NOENT: the file is gone.
                        Err(e) if e.status() == Some(2) => Ok(None),
                        Err(e) => Err(format!("cannot look it up: {e}")),
                    }
                })
                .collect();
            Ok(Box::new(Nfs { session, files, rtmax: m.fsinfo.rtmax }))
        }
        other => Err(Failure::invalid(anyhow::anyhow!(
            "the journal's run used the {other} engine; ioscope verify reopens posix, uring and nfs targets"
        ))),
    }
}

fn header_json(h: &Option<Header>) -> serde_json::Value {
    match h {
        Some(h) => json!({
            "run_id": format!("{:016x}", h.run_id),
            "file_id": h.file_id,
            "offset": h.offset,
            "generation": h.generation,
            "block_len": h.block_len,
            "time_unix_ns": h.time_unix_ns,
        }),
        None => serde_json::Value::Null,
    }
}

fn header_text(h: &Option<Header>) -> String {
    match h {
        Some(h) => format!("run {:016x} file {} offset {} generation {}", h.run_id, h.file_id, h.offset, h.generation),
        None => "no header".into(),
    }
}

/// `ioscope verify --journal FILE [--strict] [--json]`.
pub fn verify(path: &Path, strict: bool, json: bool) -> CmdResult {
    let c = journal::read(path).map_err(Failure::invalid)?;
    let d = &c.description;
    let mut blocks = reopen(path, &c)?;
    let mut t = Tally::default();
    let len = d.block_len as usize;
    let mut buf = vec![0u8; len];
    for (index, f) in d.files.iter().enumerate() {
        for block in 0..c.blocks_of(index as u32) {
            let Some((floor, durable)) = c.floors(index as u32, block) else { continue };
            if floor == 0 {
                continue;
            }
            let offset = block * u64::from(d.block_len);
            buf.fill(0);
            t.checked += 1;
            t.durable += u64::from(durable > 0);
            let got = match blocks.read(index, offset, &mut buf) {
                Ok(n) => n,
                Err(e) => {
                    t.unreadable += 1;
                    if t.read_errors.len() < LISTED {
                        t.read_errors.push(format!("{} offset {offset}: {e}", f.path));
                    }
                    continue;
                }
            };
            let j = Journaled { run_id: d.run_id, file_id: f.id, offset, block_len: d.block_len, floor, durable };
            let (mut m, allowed) = match recheck(&buf, &j) {
                Finding::Intact(_) => {
                    t.intact += 1;
                    continue;
                }
                Finding::NotDurableMissing(m) => (m, !strict),
                Finding::Failed(m) => (m, false),
            };
            // The file ends before the block (or is gone): its missing bytes read as zeros.
            if got < len && m.kind == ioscope_verify::Kind::Zeroed {
                m.kind = ioscope_verify::Kind::Truncated;
            }
            if allowed {
                t.allowed += 1;
            } else {
                *t.failed.entry(m.kind.name()).or_default() += 1;
            }
            if t.listed.len() < LISTED {
                t.listed.push(Listed { file: f.id, path: f.path.clone(), offset, floor, durable, allowed, m });
            }
        }
    }
    let failures: u64 = t.failed.values().sum::<u64>() + t.unreadable;
    if json {
        let listed: Vec<_> = t
            .listed
            .iter()
            .map(|l| {
                json!({
                    "file": l.file, "path": l.path, "offset": l.offset, "kind": l.m.kind.name(),
                    "allowed": l.allowed,
                    "expected": {"generation_at_least": l.floor, "durable_generation_at_least": l.durable},
                    "found": header_json(&l.m.found),
                })
            })
            .collect();
        let v = json!({
            "schema": "ioscope.verify-journal/1",
            "journal": path.display().to_string(),
            "run_id": format!("{:016x}", d.run_id),
            "engine": d.engine,
            "target": d.target,
            "block_len": d.block_len,
            "closed": c.closed,
            "strict": strict,
            "blocks_checked": t.checked,
            "blocks_durable": t.durable,
            "intact": t.intact,
            "failed": t.failed,
            "unreadable": t.unreadable,
            "not_durable_missing": t.allowed,
            "mismatches": listed,
            "read_errors": t.read_errors,
            "passed": failures == 0,
        });
        output::println(&serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        let mut s = format!(
            "journal {}: run {:016x}, {} {}, {} file(s), {} B blocks, {}\n",
            path.display(),
            d.run_id,
            d.engine,
            d.target,
            d.files.len(),
            d.block_len,
            if c.closed { "closed by its run" } else { "not closed (its run was killed or is still running)" }
        );
        s += &format!("  blocks checked          {} (every block with an acknowledged write)\n", t.checked);
        s += &format!("  with a durable write    {}\n", t.durable);
        s += &format!("  intact                  {}\n", t.intact);
        for kind in ioscope_verify::Kind::ALL {
            let n = t.failed.get(kind.name()).copied().unwrap_or(0);
            s += &format!("  {:<23} {n}\n", kind.name());
        }
        if t.unreadable > 0 {
            s += &format!("  unreadable              {}\n", t.unreadable);
        }
        s += &format!(
            "  not durable, not found  {} ({})\n",
            t.allowed,
            if strict {
                "--strict: counted as stale, zeroed or truncated above"
            } else {
                "acknowledged writes the target never promised to keep: allowed"
            }
        );
        for l in &t.listed {
            s += &format!(
                "  {} {} offset {}: {}, expected generation >= {} (durable >= {}), found {}\n",
                if l.allowed { "allowed" } else { "FAILED " },
                l.path,
                l.offset,
                l.m.kind.name(),
                l.floor,
                l.durable,
                header_text(&l.m.found)
            );
        }
        for e in &t.read_errors {
            s += &format!("  FAILED  {e}\n");
        }
        s += &if failures == 0 {
            "passed\n".to_string()
        } else {
            format!("FAILED: {failures} block(s) not as the run wrote them\n")
        };
        output::print(&s);
    }
    if failures == 0 {
        Ok(())
    } else {
        Err(Failure::printed(Kind::RunFailed))
    }
}

/// `run --journal FILE`, before any I/O: refused (exit 2) without --verify, with hosts
/// or a file-tree dataset, or over an existing file (a journal of another run, or not a
/// journal); a warning when it shares a file system with a posix or uring target (a
/// crash of that file system takes both).
pub fn check_journal(plan: &ioscope_workload::Plan, journal: Option<&Path>) -> CmdResult {
    let Some(path) = journal else { return Ok(()) };
    let refuse =
        |why: String| Err(Failure::said(Kind::InvalidInput, format!("error: --journal {}: {why}", path.display())));
    if plan.verify.is_off() {
        return refuse("--journal needs --verify: the journal keeps what the verifier knows of each block".into());
    }
    if !plan.hosts.is_empty() {
        return refuse(
            "a run on several hosts keeps its blocks' state per host; the journal is for a run on this host".into(),
        );
    }
    if plan.dataset.is_some() {
        return refuse("the journal covers a flat working set (size, files), not a file-tree dataset".into());
    }
    if path.exists() {
        return match journal::read(path) {
            Ok(c) => refuse(format!(
                "the journal of another run ({:016x}) is there; check it with `ioscope verify --journal {}`, then remove it or choose another file",
                c.description.run_id,
                path.display()
            )),
            Err(e) => Err(Failure::invalid(e)),
        };
    }
    let parent = match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new("."),
        Some(p) => p,
        None => Path::new("/"),
    };
    if !parent.is_dir() {
        return refuse(format!("its directory {} does not exist", parent.display()));
    }
    if plan.target.is_none() && plan.engine.spec().caps.does_io {
        use std::os::unix::fs::MetadataExt as _;
        // The target directory may not exist yet: its nearest existing ancestor is where it will be.
        let target = plan.dir.ancestors().find(|a| a.exists()).map(Path::to_path_buf);
        let dev = |p: &Path| std::fs::metadata(p).ok().map(|m| m.dev());
        if let (Some(j), Some(t)) = (dev(parent), target.as_deref().and_then(dev)) {
            if j == t {
                eprintln!(
                    "warning: --journal {} is on the same file system as the target {}: a crash of that file system takes both",
                    path.display(),
                    plan.dir.display()
                );
            }
        }
    }
    Ok(())
}
