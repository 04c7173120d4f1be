//! The working set: the files a run reads and writes. ioscope creates them itself
//! (filled in parallel with non-zero, incompressible data), records them in a marker
//! file in the directory, reuses them when the layout matches, never writes into files
//! it did not create unless forced, and removes only its own files on cleanup. All of it
//! goes through a [`FileSystem`]: a local directory or an NFS server's alike. The marker
//! and the parallel fill are the ones of every preparation (`marker.rs`, `parallel.rs`).
//!
//! The marker is a claim, checked twice: on read, every entry must be a name ioscope gives
//! (`ioscope.N.dat`, so directly in the marker's directory); before a file is rewritten or
//! removed, the file itself must be what the entry recorded when ioscope made it (a
//! regular file, not a link, with the same file id and a size the entry allows). An entry
//! that fails is not ioscope's: it is never written into, removed, or copied into the
//! marker written back. Entries of markers from earlier versions record no identity: their
//! files may still be read, never rewritten or removed (cleanup says so).

use super::marker::{self, quoted, Marker};
use super::parallel::par_for;
use ioscope_engine::buffers::fill_random;
use ioscope_engine::fs::{Entry, FileSystem, FsConn, Kind};
use ioscope_workload::{Content, Plan};
use serde::{Deserialize, Serialize};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Name of the marker file that says "ioscope created these files".
pub const MARKER: &str = ".ioscope-workset.json";

#[derive(Debug, thiserror::Error)]
pub enum WorksetError {
    /// The plan would write into data ioscope did not create.
    #[error("{path}: {reason}; ioscope writes only into files it created (listed in {marker}). Pass --force to write into it anyway, or choose another --dir (--target for engines nfs and s3)", marker = MARKER)]
    NotOurs { path: PathBuf, reason: String },
    /// Only the last part of the path is ever created.
    #[error("{dir}: the parent directory {parent} does not exist; ioscope creates only the last part of the path (and removes it again with --cleanup). Create {parent} first, or check the path for a typo")]
    NoParent { dir: PathBuf, parent: PathBuf },
    /// The file system has too little room for what preparation would write.
    #[error("{dir}: the working set needs {need} more, {free} free on that file system; free some space, lower --size, or choose another --dir", need = ioscope_workload::format_size(*need), free = ioscope_workload::format_size(*free))]
    NoSpace { dir: PathBuf, need: u64, free: u64 },
    /// A link, FIFO or device where the working set's file goes.
    #[error("{path}: {what}; ioscope reads and writes only regular files of its own, never through a link or into a device or FIFO, --force or not. Remove it, or choose another --dir")]
    NotAFile { path: PathBuf, what: &'static str },
    /// Cleanup met a marker it cannot use: it removes nothing (`--force` or not).
    #[error("{path}: {reason}; {}", marker::CLEANUP_REFUSED)]
    CleanupRefused { path: PathBuf, reason: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> WorksetError + '_ {
    move |source| WorksetError::Io { path: path.to_path_buf(), source }
}

/// What the working set's marker adds to every marker: the files ioscope created.
#[derive(Serialize, Deserialize, Default, Debug, Clone, PartialEq)]
struct Files {
    files: Vec<MarkerFile>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct MarkerFile {
    name: String,
    size_bytes: u64,
    /// Fully written with data.
    complete: bool,
    /// What the file system said of the file once ioscope had created it; absent in the
    /// markers of earlier versions (their files are not provably ioscope's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    made: Option<Made>,
    /// Every whole block of this many bytes carries a verify header (the fill stamps one,
    /// and every run that wrote since wrote headers of this block length); absent: not
    /// known (a marker of an earlier version, or a run wrote without them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    verify_block: Option<u32>,
    /// The data content the fill wrote (random in markers of earlier versions); None: not
    /// one content (a run wrote another since). A run asking for another is refilled.
    #[serde(default = "random_content", skip_serializing_if = "is_random_content")]
    content: Option<Content>,
}

fn random_content() -> Option<Content> {
    Some(Content::default())
}
fn is_random_content(c: &Option<Content>) -> bool {
    *c == random_content()
}

/// A file's identity when ioscope made it.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Made {
    /// The file system's file id (inode, NFS fileid); null where it has none (S3).
    file_id: Option<u64>,
}

/// The most files a plan has (`files`, 1..=1,000,000), so the most a marker lists.
const MAX_FILES: usize = 1_000_000;

impl marker::Body for Files {
    /// An entry as written (pretty, with the largest numbers) is under 256 bytes.
    const MAX_BYTES: u64 = 256 * MAX_FILES as u64 + 4096;
    fn check(&self) -> Result<(), String> {
        if self.files.len() > MAX_FILES {
            return Err(format!("{} files listed, more than the {MAX_FILES} a working set has", self.files.len()));
        }
        let mut seen = std::collections::HashSet::with_capacity(self.files.len());
        for (k, f) in self.files.iter().enumerate() {
            let Some(i) = file_index(&f.name) else {
                return Err(format!(
                    "files[{k}].name {} is not a name ioscope gives its files (ioscope.N.dat, directly in the marker's directory)",
                    quoted(&f.name)
                ));
            };
            if !seen.insert(i) {
                return Err(format!("files[{k}].name {} is listed twice", quoted(&f.name)));
            }
            if let Some(b) = f.verify_block.filter(|b| !valid_verify_block(*b)) {
                return Err(format!(
                    "files[{k}].verify_block {b} is not a verify block ioscope stamps (a multiple of 512 bytes from 512 to 64 MiB that divides {CHUNK})"
                ));
            }
        }
        Ok(())
    }
}

/// A verify block the fill can have stamped: the plan's bounds, and whole blocks per chunk.
fn valid_verify_block(b: u32) -> bool {
    (ioscope_workload::MIN_VERIFY_BLOCK..=ioscope_workload::MAX_VERIFY_BLOCK).contains(&b)
        && b % ioscope_workload::MIN_VERIFY_BLOCK == 0
        && stamps_headers(b)
}

/// N of a name `ioscope.N.dat` as [`file_name`] writes it (decimal, no sign, no leading
/// zero): no other name, and so no separator, `..`, or control character, is ever ours.
fn file_index(name: &str) -> Option<u32> {
    let n = name.strip_prefix("ioscope.")?.strip_suffix(".dat")?;
    let canonical = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'));
    canonical.then(|| n.parse().ok()).flatten()
}

impl MarkerFile {
    /// Ok if `now` (what is at the entry's name) is the file this entry says ioscope made;
    /// else why not.
    fn proves(&self, now: &Entry) -> Result<(), String> {
        let Some(made) = self.made else {
            return Err("listed by a marker of an earlier ioscope, which does not record the file's identity".into());
        };
        match now.kind {
            Kind::File => {}
            Kind::Link => return Err("it is a symbolic link, not the file ioscope made".into()),
            _ => return Err("it is not a regular file".into()),
        }
        if made.file_id != now.id {
            let id = |v: Option<u64>| v.map_or("none".to_string(), |v| v.to_string());
            return Err(format!("its file id is {}, the marker's {} (another file)", id(now.id), id(made.file_id)));
        }
        let fits = if self.complete { now.len == self.size_bytes } else { now.len <= self.size_bytes };
        if !fits {
            return Err(format!("it holds {} bytes, the marker says {}", now.len, self.size_bytes));
        }
        Ok(())
    }
}

/// What has to happen before the run, decided without writing anything.
#[derive(Debug)]
pub struct Layout {
    pub dir: PathBuf,
    pub files: Vec<PathBuf>,
    pub file_size_bytes: u64,
    /// Indexes of files that must be (re)written before the run.
    pub to_fill: Vec<usize>,
    /// Of those, files ioscope did not create (rewritten with --force): a failed
    /// preparation leaves them in place.
    foreign: Vec<usize>,
    dir_exists: bool,
    marker: Marker<Files>,
    /// (run id, verify block) to stamp a header of generation 0 into each block the fill
    /// writes (see [`crate::verify::LaidOut`]): always, when the plan's verify block divides
    /// a fill chunk, so that a later `--verify` run finds a header in every block.
    pub verify_headers: Option<(u64, u32)>,
    /// The verify block the run's writes stamp headers of (None: the run writes without
    /// headers, or does not write): what the marker records for its files after the run.
    run_writes: Option<Option<u32>>,
    /// The content the fill writes (the plan's top-level content keys).
    content: Content,
    /// The contents the run's writing workloads write.
    run_contents: Vec<Content>,
    /// With `--force`: the marker found, refused ("PATH: why"), so the directory is taken
    /// as not ioscope's. The fill replaces it with a marker of the files it creates (and
    /// then clears this); a run that creates none leaves it as it is (see
    /// [`Layout::refused_note`]).
    pub refused_marker: Option<String>,
}

impl Layout {
    pub fn bytes_to_fill(&self) -> u64 {
        self.to_fill.len() as u64 * self.file_size_bytes
    }

    /// The files (indexes) every whole block of `block_len` bytes of which carries a verify
    /// header, as the marker records it (after [`prepare`]: the files filled now too). A
    /// claim of the marker, checked by reading: a block without its header is a mismatch.
    pub fn carrying_headers(&self, block_len: u32) -> Vec<u32> {
        (0..self.files.len() as u32)
            .filter(|&i| {
                let name = file_name(i);
                self.marker.body.files.iter().any(|f| f.name == name && f.complete && f.verify_block == Some(block_len))
            })
            .collect()
    }

    /// The directory was made for this run just before `check` (so cleanup may remove it).
    pub fn set_created_dir(&mut self) {
        self.marker.created_dir = true;
    }

    /// What a user is told, before the run, of a marker `--force` refused: that it was
    /// refused and why, and what happens to it and to the files instead.
    pub fn refused_note(&self) -> Option<String> {
        let refused = self.refused_marker.as_ref()?;
        let after = if self.to_fill.is_empty() {
            "this run creates no file, so the marker is left as it is and --cleanup will remove nothing"
        } else {
            "the marker is replaced by one listing only the files this run creates (what --cleanup may remove)"
        };
        Some(format!(
            "note: {refused}; with --force the directory is taken as not ioscope's: nothing that marker lists is \
             removed, and {after}"
        ))
    }
}

fn file_name(i: u32) -> String {
    format!("ioscope.{i}.dat")
}

/// The marker, if any; an unreadable one is refused.
fn read_marker(c: &mut dyn FsConn, dir: &Path) -> Result<Option<Marker<Files>>, marker::Unreadable> {
    marker::read(c, dir, MARKER, false)
}

fn connect<'f>(fs: &'f dyn FileSystem, dir: &Path) -> Result<Box<dyn FsConn + 'f>, WorksetError> {
    fs.connect().map_err(io_err(dir))
}

/// Checks `dir` against the plan. Writes nothing.
pub fn check(fs: &dyn FileSystem, dir: &Path, plan: &Plan) -> Result<Layout, WorksetError> {
    let dir = dir.to_path_buf();
    let mut c = connect(fs, &dir)?;
    let stat = c.stat(&dir).map_err(io_err(&dir))?;
    let dir_exists = stat.is_some();
    if stat.is_some_and(|s| !s.dir) {
        return Err(WorksetError::Io { path: dir, source: std::io::Error::other("not a directory") });
    }
    if let Some(parent) = dir.parent().filter(|p| !dir_exists && !p.as_os_str().is_empty()) {
        if c.stat(parent).map_err(io_err(parent))?.is_none() {
            return Err(WorksetError::NoParent { parent: parent.to_path_buf(), dir });
        }
    }
    // A marker refused is a refusal, unless --force: then the directory is not ours, and
    // the user is told (the marker is replaced only by one of files this run creates).
    let (found, refused_marker) = match read_marker(&mut *c, &dir) {
        Ok(m) => (m, None),
        Err(e) if plan.force => (None, Some(format!("{}: {}", e.path.display(), e.reason))),
        Err(e) => return Err(WorksetError::NotOurs { path: e.path, reason: e.reason }),
    };
    let mut marker = found.unwrap_or_else(|| Marker::new(!dir_exists, Files::default()));
    // What is at each name the marker lists, and whether it is the file the entry recorded:
    // only those stay ours (and in the marker written back).
    let mut at = std::collections::HashMap::new();
    if dir_exists {
        for f in &marker.body.files {
            let path = dir.join(&f.name);
            at.insert(f.name.clone(), c.identify(&path).map_err(io_err(&path))?);
        }
    }
    marker.body.files.retain(|f| at.get(&f.name).copied().flatten().is_some_and(|e| f.proves(&e).is_ok()));
    let size = plan.file_size_bytes();
    let mut files = Vec::new();
    let mut to_fill = Vec::new();
    let mut foreign = Vec::new();
    // What filling needs beyond what the files to be rewritten hold now.
    let mut need = 0u64;
    for i in 0..plan.files {
        let name = file_name(i);
        let path = dir.join(&name);
        let ours = marker.body.files.iter().find(|f| f.name == name);
        let entry = match at.remove(&name) {
            Some(e) => e,
            None if dir_exists => c.identify(&path).map_err(io_err(&path))?,
            None => None,
        };
        // A link is read through (a run that only reads does no harm), never written through.
        let existing = match entry {
            Some(e) if e.kind == Kind::Link => c.stat(&path).map_err(io_err(&path))?,
            Some(e) => {
                Some(ioscope_engine::fs::Stat { dir: e.kind == Kind::Dir, file: e.kind == Kind::File, len: e.len })
            }
            None => None,
        };
        let held = existing.map_or(0, |m| m.len);
        if let Some(e) = entry.filter(|e| e.kind != Kind::File) {
            let what = match e.kind {
                Kind::Link => "a symbolic link",
                Kind::Dir => "a directory",
                _ => "not a regular file",
            };
            let too_small = existing.is_none_or(|m| m.len < size || !m.file);
            if plan.writes() || too_small {
                return Err(WorksetError::NotAFile { path, what });
            }
        }
        match (ours, existing) {
            (Some(f), Some(m))
                if f.complete && f.size_bytes == size && m.len == size && f.content == Some(plan.content) => {}
            (Some(_), _) | (None, None) => {
                to_fill.push(i as usize);
                need = need.saturating_add(size.saturating_sub(held));
            }
            (None, Some(m)) => {
                let reason = if m.len < size {
                    Some(format!("exists with {} bytes, the plan needs {size} (it would be rewritten)", m.len))
                } else if plan.writes() {
                    Some("exists and the workload writes".to_string())
                } else {
                    None // reading a file that is large enough does no harm
                };
                if let Some(reason) = reason {
                    if !plan.force {
                        return Err(WorksetError::NotOurs { path, reason });
                    }
                    if m.len < size {
                        to_fill.push(i as usize);
                        foreign.push(i as usize);
                        need = need.saturating_add(size - m.len);
                    }
                }
            }
        }
        files.push(path);
    }
    // Refused before the first byte, rather than a full file system and a partial file.
    let probe = if dir_exists { dir.as_path() } else { dir.parent().unwrap_or(&dir) };
    if let Ok(Some(free)) = c.free_bytes(probe) {
        if need > free {
            return Err(WorksetError::NoSpace { dir, need, free });
        }
    }
    Ok(Layout {
        dir,
        files,
        file_size_bytes: size,
        to_fill,
        foreign,
        dir_exists,
        marker,
        verify_headers: stamps_headers(plan.verify_block_bytes())
            .then(|| (crate::verify::new_run_id(), plan.verify_block_bytes())),
        run_writes: plan.writes().then(|| (!plan.verify.is_off()).then(|| plan.verify_block_bytes())),
        content: plan.content,
        run_contents: plan.workloads.iter().filter(|w| w.writes()).map(|w| w.content).collect(),
        refused_marker,
    })
}

fn write_marker(c: &mut dyn FsConn, dir: &Path, m: &Marker<Files>) -> Result<(), WorksetError> {
    marker::write(c, dir, MARKER, m).map_err(io_err(dir))
}

/// Creates the directory and fills the files that need it, with `threads` writers.
/// `progress` is called with (bytes written, total) now and then. If filling fails (a
/// full file system, say), the files this run was writing are removed again, except
/// files ioscope did not create, so no partial file is left and the space is given back.
pub fn prepare(
    fs: &dyn FileSystem,
    layout: &mut Layout,
    threads: usize,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<(), WorksetError> {
    let filled = fill(fs, layout, threads, progress);
    if filled.is_err() && !layout.to_fill.is_empty() {
        undo(fs, layout);
    }
    filled
}

/// Removes the files of `to_fill` that are ours and drops them from the marker, with the
/// files not ours (left in place, and to their owner, as before the run).
fn undo(fs: &dyn FileSystem, layout: &mut Layout) {
    let Ok(mut c) = connect(fs, &layout.dir) else { return };
    for &i in &layout.to_fill {
        let path = &layout.files[i];
        let ours = !layout.foreign.contains(&i);
        if !ours || c.remove_file(path).is_ok() || c.stat(path).is_ok_and(|s| s.is_none()) {
            let name = file_name(i as u32);
            layout.marker.body.files.retain(|f| f.name != name);
        }
    }
    let marker = layout.dir.join(MARKER);
    if layout.refused_marker.is_some() {
        // Failed before this run's marker replaced the refused one: that one is not ours.
    } else if layout.marker.body.files.is_empty() {
        let _ = c.remove_file(&marker);
    } else {
        let _ = write_marker(&mut *c, &layout.dir, &layout.marker);
    }
}

/// Bytes the fill writes at a time.
const CHUNK: u64 = ioscope_engine::fs::FILL_CHUNK;

/// Whether the fill can stamp verify headers in blocks of `block_len` (with `--verify`):
/// each chunk it writes must hold whole blocks.
pub fn stamps_headers(block_len: u32) -> bool {
    block_len > 0 && CHUNK % u64::from(block_len) == 0
}

fn fill(
    fs: &dyn FileSystem,
    layout: &mut Layout,
    threads: usize,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<(), WorksetError> {
    let mut c = connect(fs, &layout.dir)?;
    if !layout.dir_exists {
        c.create_dir_all(&layout.dir).map_err(io_err(&layout.dir))?;
        layout.dir_exists = true;
    }
    // Nothing to fill: the marker as it is stays (one whose entries did not prove ours is
    // not rewritten without them), unless the run's writes end what it says of headers.
    if layout.to_fill.is_empty() {
        return forget_headers(&mut *c, layout);
    }
    // Create the files, then mark them ours (incomplete) with the identity each has now,
    // before the data: an interrupted fill is still ours, to rewrite or remove.
    let size = layout.file_size_bytes;
    let opened: Vec<&PathBuf> = layout.to_fill.iter().map(|&i| &layout.files[i]).collect();
    for (&i, path) in layout.to_fill.iter().zip(&opened) {
        c.create_empty(path).map_err(io_err(path))?;
        let made = match c.identify(path).map_err(io_err(path))? {
            Some(e) if e.kind == Kind::File => Made { file_id: e.id },
            _ => return Err(io_err(path)(std::io::Error::other("the file just created is not a regular file"))),
        };
        let name = file_name(i as u32);
        layout.marker.body.files.retain(|f| f.name != name);
        layout.marker.body.files.push(MarkerFile {
            name,
            size_bytes: size,
            complete: false,
            made: Some(made),
            verify_block: None,
            content: None,
        });
    }
    write_marker(&mut *c, &layout.dir, &layout.marker)?;
    // The refused marker is gone, replaced by this one.
    layout.refused_marker = None;

    // Every file in 8 MiB chunks, taken by the writers in turn; the first error stops them.
    let file_ids: Vec<u32> = layout.to_fill.iter().map(|&i| i as u32).collect();
    // Headers only where chunks hold whole verify blocks (a verify block divides a chunk).
    let headers = layout.verify_headers.filter(|(_, bl)| stamps_headers(*bl));
    let per_file = size.div_ceil(CHUNK);
    let filler_random = layout.content.is_random();
    // Random per fill: two working sets (two hosts' directories on one filer) share no byte.
    let fill_seed = crate::verify::new_run_id();
    let set_seed = crate::content::working_set_seed(&layout.dir);
    let written = std::sync::atomic::AtomicU64::new(0);
    let total = layout.bytes_to_fill();
    let dir = &layout.dir;
    par_for(
        (opened.len() as u64).saturating_mul(per_file),
        threads,
        || Ok((connect(fs, dir)?, vec![0u8; CHUNK.min(size) as usize])),
        |(c, buf), k| {
            let (f, off) = (k / per_file, k % per_file * CHUNK);
            let Some(path) = usize::try_from(f).ok().and_then(|f| opened.get(f)) else { return Ok(()) };
            let chunk = &mut buf[..CHUNK.min(size - off) as usize];
            // Seeded per chunk: no two chunks are alike, so nothing dedupes.
            if filler_random {
                fill_random(chunk, super::mix(k) ^ off ^ fill_seed);
            } else {
                let file = usize::try_from(f).ok().and_then(|f| layout.to_fill.get(f)).map_or(0, |&i| i as u32);
                let tag = super::mix(k) ^ off ^ fill_seed;
                crate::content::Filler::new(&layout.content, tag, set_seed).fill(file, off, chunk);
            }
            if let (Some((run_id, bl)), Some(&file_id)) =
                (headers, usize::try_from(f).ok().and_then(|f| file_ids.get(f)))
            {
                crate::verify::stamp_laid_out(chunk, run_id, file_id, bl, off);
            }
            c.write_at(path, off, chunk).map_err(io_err(path))?;
            let len = chunk.len() as u64;
            progress(written.fetch_add(len, std::sync::atomic::Ordering::Relaxed) + len, total);
            Ok(())
        },
    )?;
    for path in &opened {
        c.sync(path).map_err(io_err(path))?;
    }
    let stamped = headers.map(|(_, bl)| bl);
    let filled: Vec<String> = layout.to_fill.iter().map(|&i| file_name(i as u32)).collect();
    for f in layout.marker.body.files.iter_mut() {
        f.complete = true;
        if filled.contains(&f.name) {
            f.verify_block = stamped;
            f.content = Some(layout.content);
        }
    }
    write_marker(&mut *c, &layout.dir, &layout.marker)?;
    layout.to_fill.clear();
    forget_headers(&mut *c, layout)
}

/// Before a run that writes without headers of the block length the marker records (no
/// `--verify`, or another verify block): its files no longer carry them in every block,
/// so the marker stops saying so, before the first write (an interrupted run leaves no
/// false claim). A later `--verify` run then counts their blocks unverified until written.
fn forget_headers(c: &mut dyn FsConn, layout: &mut Layout) -> Result<(), WorksetError> {
    let Some(writes) = layout.run_writes else { return Ok(()) };
    // (and, likewise, a run that writes another content than the files hold)
    let ours: Vec<String> = (0..layout.files.len() as u32).map(file_name).collect();
    let mut changed = false;
    for f in layout.marker.body.files.iter_mut().filter(|f| ours.contains(&f.name)) {
        if f.verify_block.is_some() && f.verify_block != writes {
            f.verify_block = None;
            changed = true;
        }
        if f.content.is_some() && layout.run_contents.iter().any(|c| Some(*c) != f.content) {
            f.content = None;
            changed = true;
        }
    }
    if changed {
        write_marker(c, &layout.dir, &layout.marker)?;
    }
    Ok(())
}

/// What cleanup removed, and what it left.
#[derive(Debug, Default)]
pub struct Cleaned {
    pub files: usize,
    pub bytes: u64,
    pub removed_dir: bool,
    /// Files the marker lists that are not provably ioscope's, left in place (with the
    /// marker): each with why.
    pub left: Vec<(PathBuf, String)>,
}

/// Removes the files listed in the directory's marker that are still the files ioscope
/// made (see [`MarkerFile::proves`]), then the marker if nothing it lists was left, and
/// the directory if ioscope created it and it is now empty. Touches nothing else.
pub fn cleanup(fs: &dyn FileSystem, dir: &Path) -> Result<Cleaned, WorksetError> {
    let mut c = connect(fs, dir)?;
    let marker =
        read_marker(&mut *c, dir).map_err(|e| WorksetError::CleanupRefused { path: e.path, reason: e.reason })?;
    let Some(marker) = marker else { return Ok(Cleaned::default()) };
    let mut cleaned = Cleaned::default();
    for f in &marker.body.files {
        let path = dir.join(&f.name);
        let Some(now) = c.identify(&path).map_err(io_err(&path))? else { continue };
        if let Err(why) = f.proves(&now) {
            cleaned.left.push((path, why));
            continue;
        }
        match c.remove_file(&path) {
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            r => r.map_err(io_err(&path))?,
        }
        cleaned.files += 1;
        cleaned.bytes += now.len;
    }
    // A marker none of whose files proved ours may not be ours either: it stays.
    if !cleaned.left.is_empty() || (cleaned.files == 0 && !marker.body.files.is_empty()) {
        return Ok(cleaned);
    }
    let marker_path = dir.join(MARKER);
    c.remove_file(&marker_path).map_err(io_err(&marker_path))?;
    if marker.created_dir {
        // The run's lock file goes with the directory (the lock is held to the end anyway).
        let _ = c.remove_file(&dir.join(crate::workdir::LOCK));
        cleaned.removed_dir = c.remove_dir(dir).is_ok();
    }
    Ok(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prep::testfs::Faulty;
    use ioscope_engine::fs::LocalFs;
    use std::fs;

    fn plan(dir: &Path, rw: &str, size: &str, force: bool) -> Plan {
        crate::test_plan(&format!(
            "dir = '{}'\nrw = '{rw}'\nsize = '{size}'\nfiles = 2\nforce = {force}",
            dir.display()
        ))
    }

    #[test]
    fn creates_fills_reuses_and_cleans_up() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("ws");
        let p = plan(&dir, "randwrite", "20m", false);
        let mut l = check(&LocalFs, &dir, &p).unwrap();
        assert!(!dir.exists(), "check writes nothing");
        assert_eq!(l.to_fill, vec![0, 1]);
        prepare(&LocalFs, &mut l, 2, &|_, _| {}).unwrap();
        let data = fs::read(dir.join("ioscope.0.dat")).unwrap();
        assert_eq!(data.len(), 10 << 20);
        let zeros = data.iter().filter(|b| **b == 0).count();
        // Random bytes are zero 1 in 256; each block's verify header adds about 30 (its
        // generation 0, the high bytes of small fields) per verify block.
        assert!(zeros < data.len() / 64, "data is random, not zeros ({zeros} zero bytes)");
        let h = ioscope_verify::Header::parse(&data[4096..]).expect("every block carries a verify header");
        assert_eq!((h.offset, h.generation, h.block_len), (4096, 0, p.verify_block_bytes()));
        assert_ne!(data[..4096], data[8 << 20..(8 << 20) + 4096], "chunks differ");

        // A matching layout is reused without rewriting.
        assert!(check(&LocalFs, &dir, &p).unwrap().to_fill.is_empty());
        // A different size is ours to rewrite.
        assert_eq!(check(&LocalFs, &dir, &plan(&dir, "randwrite", "40m", false)).unwrap().to_fill, vec![0, 1]);

        let other = dir.join("keep.txt");
        fs::write(&other, b"user data").unwrap();
        let c = cleanup(&LocalFs, &dir).unwrap();
        assert_eq!((c.files, c.bytes), (2, 20 << 20));
        assert!(!c.removed_dir, "the user's file keeps the directory");
        assert_eq!(fs::read(&other).unwrap(), b"user data");
        assert!(!dir.join(MARKER).exists());
    }

    #[test]
    fn a_working_set_marked_by_an_earlier_version_is_read_but_never_rewritten_or_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let p = plan(dir, "randwrite", "2m", false);
        prepare(&LocalFs, &mut check(&LocalFs, dir, &p).unwrap(), 1, &|_, _| {}).unwrap();
        // The marker as the first working sets wrote it: no identity of the files.
        let old = r#"{"created_by": "ioscope", "created_dir": false, "files": [
            {"name": "ioscope.0.dat", "size_bytes": 1048576, "complete": true},
            {"name": "ioscope.1.dat", "size_bytes": 1048576, "complete": true}]}"#;
        fs::write(dir.join(MARKER), old).unwrap();
        let reads = plan(dir, "randread", "2m", false);
        assert!(check(&LocalFs, dir, &reads).unwrap().to_fill.is_empty(), "reused for reads");
        let e = check(&LocalFs, dir, &p).unwrap_err();
        assert!(matches!(e, WorksetError::NotOurs { .. }) && e.to_string().contains("--force"), "{e}");
        let c = cleanup(&LocalFs, dir).unwrap();
        assert_eq!((c.files, c.left.len()), (0, 2), "{:?}", c.left);
        assert!(c.left[0].1.contains("earlier ioscope"), "{:?}", c.left);
        assert!(dir.join("ioscope.0.dat").exists() && dir.join(MARKER).exists(), "nothing removed");
    }

    #[test]
    fn cleanup_removes_only_the_files_the_marker_recorded_and_only_while_they_are_those_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let p = plan(dir, "randwrite", "2m", false);
        prepare(&LocalFs, &mut check(&LocalFs, dir, &p).unwrap(), 1, &|_, _| {}).unwrap();
        // ioscope.0.dat replaced by another file of the same size; ioscope.1.dat by a link.
        let victim = tmp.path().join("victim");
        fs::write(&victim, vec![5u8; 1 << 20]).unwrap();
        fs::remove_file(dir.join("ioscope.0.dat")).unwrap();
        fs::write(dir.join("ioscope.0.dat"), vec![6u8; 1 << 20]).unwrap();
        fs::remove_file(dir.join("ioscope.1.dat")).unwrap();
        std::os::unix::fs::symlink(&victim, dir.join("ioscope.1.dat")).unwrap();
        // Preparing again: neither is ours (a writing run is refused), nor in the marker.
        let e = check(&LocalFs, dir, &p).unwrap_err();
        assert!(e.to_string().contains("ioscope.0.dat"), "{e}");
        let c = cleanup(&LocalFs, dir).unwrap();
        assert_eq!(c.files, 0);
        let why: Vec<&str> = c.left.iter().map(|(_, w)| w.as_str()).collect();
        assert!(why[0].contains("file id") && why[1].contains("symbolic link"), "{why:?}");
        assert_eq!(fs::read(dir.join("ioscope.0.dat")).unwrap(), vec![6u8; 1 << 20]);
        assert_eq!(fs::read(&victim).unwrap(), vec![5u8; 1 << 20]);
        // A link where a writing run puts a file: refused even with --force.
        fs::remove_file(dir.join("ioscope.0.dat")).unwrap();
        let e = check(&LocalFs, dir, &plan(dir, "randwrite", "2m", true)).unwrap_err();
        assert!(matches!(e, WorksetError::NotAFile { .. }), "{e}");
        assert!(e.to_string().contains("ioscope.1.dat: a symbolic link"), "{e}");
    }

    #[test]
    fn a_dir_whose_parent_is_missing_is_refused_before_anything_is_made() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("typo/ws");
        let err = check(&LocalFs, &dir, &plan(&dir, "randwrite", "20m", false)).unwrap_err();
        assert!(matches!(err, WorksetError::NoParent { .. }), "{err}");
        assert!(err.to_string().contains("does not exist"), "{err}");
        assert!(!tmp.path().join("typo").exists());
    }

    #[test]
    fn refuses_to_write_into_foreign_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::write(dir.join("ioscope.0.dat"), vec![1u8; 10 << 20]).unwrap();
        fs::write(dir.join("ioscope.1.dat"), vec![1u8; 10 << 20]).unwrap();
        let err = check(&LocalFs, dir, &plan(dir, "randwrite", "20m", false)).unwrap_err();
        assert!(matches!(err, WorksetError::NotOurs { .. }), "{err}");
        assert!(err.to_string().contains("--force"));
        // Reading them is harmless, and --force allows writing.
        assert!(check(&LocalFs, dir, &plan(dir, "randread", "20m", false)).unwrap().to_fill.is_empty());
        assert!(check(&LocalFs, dir, &plan(dir, "randwrite", "20m", true)).is_ok());
        // Too small to read without rewriting: refused too.
        assert!(check(&LocalFs, dir, &plan(dir, "randread", "40m", false)).is_err());
        // Nothing was written or removed.
        assert!(!dir.join(MARKER).exists());
        assert_eq!(cleanup(&LocalFs, dir).unwrap().files, 0);
        assert!(dir.join("ioscope.0.dat").exists());
    }

    #[test]
    fn a_full_file_system_while_filling_leaves_no_partial_file_of_ours_and_keeps_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::write(dir.join("keep.txt"), b"user data").unwrap();
        // A file ioscope did not create, too small: rewritten only because of force.
        fs::write(dir.join("ioscope.1.dat"), b"theirs").unwrap();
        let p = plan(dir, "randwrite", "40m", true);
        let mut l = check(&LocalFs, dir, &p).unwrap();
        assert_eq!(l.to_fill, vec![0, 1]);
        let full = Faulty::full_after(12 << 20);
        let err = prepare(&full, &mut l, 2, &|_, _| {}).unwrap_err();
        assert!(err.to_string().contains("No space left on device"), "{err}");
        let mut left: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        left.sort();
        // Ours (ioscope.0.dat, partial) is gone, with the marker; the forced file stays.
        assert_eq!(left, ["ioscope.1.dat", "keep.txt"]);
        assert_eq!(fs::read(dir.join("keep.txt")).unwrap(), b"user data");
    }
}
