//! The dataset: a vdbench-style directory tree (fsd) that file workloads run on.
//! `depth` levels of `width` directories below an anchor, `files` files in each
//! leaf, sizes drawn from a weighted list. The shape follows from the definition alone, so
//! workers compute any file's path and size without a file list. ioscope creates the tree
//! in parallel with non-zero, incompressible data, marks it with a marker file holding the
//! definition, reuses it when the definition matches, never writes into a non-empty
//! directory it did not mark unless forced, and on cleanup removes only what it created.
//! All of it goes through a [`FileSystem`]: the tree lives in a local directory or on an
//! NFS server alike. The definition is the plan's [`Dataset`]; the marker and the parallel
//! loop are the ones of every preparation (`marker.rs`, `parallel.rs`).
//!
//! The marker names no file: the names follow from its definition (`dNN`, `fNNNNNN`),
//! which is refused on read unless it is one a plan may have (bounded depth, width,
//! files and sizes). It records the anchor's file id when the tree was made: a marker
//! copied or forged into another directory is not this tree's, and one of an earlier
//! version (no id) makes the tree usable but never removed. Cleanup walks only real
//! directories of ours below the anchor, never a link, and removes only regular files
//! with our names.

use super::marker::{self, Marker};
use super::mix;
use super::parallel::par_for;
use ioscope_engine::buffers::fill_random;
use ioscope_engine::fs::{FileSystem, FsConn, Kind};
use ioscope_workload::layout::FileSizes;
use ioscope_workload::{BlockSize, Dataset, DatasetFormat};
use serde::{Deserialize, Serialize};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

/// Name of the marker file in the anchor that says "ioscope created this tree".
pub const MARKER: &str = ".ioscope-dataset.json";

/// Whether both describe the same files on disk. The anchor's spelling, the working set
/// and the format do not change the tree, so changing them must not cost a re-format.
fn same_tree(a: &Dataset, b: &Dataset) -> bool {
    (a.depth, a.width, a.files, &a.sizes, a.total_size_bytes, a.prealloc_pct)
        == (b.depth, b.width, b.files, &b.sizes, b.total_size_bytes, b.prealloc_pct)
}

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// Preparing would write into (or clean up) data ioscope did not create.
    #[error("{path}: {reason}; ioscope only creates a dataset in an empty directory or one it marked as its own ({marker}). Pass --force to use it anyway, or choose another dataset dir", marker = MARKER)]
    NotOurs { path: PathBuf, reason: String },
    /// format = "never" and there is no matching tree.
    #[error("{path}: {reason}; format = \"never\" uses an existing dataset only. Use format = \"reuse\" to create it")]
    Missing { path: PathBuf, reason: String },
    /// Only the last part of the anchor's path is ever created.
    #[error("{path}: the parent directory {parent} does not exist; ioscope creates only the last part of the path (and removes it again with --cleanup). Create {parent} first, or check the path for a typo")]
    NoParent { path: PathBuf, parent: PathBuf },
    /// The file system has too little room for the tree.
    #[error("{path}: the dataset needs {need} more, {free} free on that file system; free some space, make the dataset smaller, or choose another dir", need = ioscope_workload::format_size(*need), free = ioscope_workload::format_size(*free))]
    NoSpace { path: PathBuf, need: u64, free: u64 },
    /// Cleanup met a marker it cannot use: it removes nothing (`--force` or not).
    #[error("{path}: {reason}; {}", marker::CLEANUP_REFUSED)]
    CleanupRefused { path: PathBuf, reason: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> DatasetError + '_ {
    move |source| DatasetError::Io { path: path.to_path_buf(), source }
}

fn digits(max_index: u64) -> usize {
    max_index.checked_ilog10().unwrap_or(0) as usize + 1
}

/// The tree's shape, derived from the spec alone (deterministic; no I/O): its files and
/// their sizes ([`FileSizes`]) and their paths.
#[derive(Clone, Debug)]
pub struct Layout {
    spec: Dataset,
    sizes: FileSizes,
    leaf_dirs: u64,
    dir_digits: usize,
    file_digits: usize,
}

impl Layout {
    pub fn new(spec: &Dataset) -> Layout {
        let per_leaf = u64::from(spec.files);
        Layout {
            spec: spec.clone(),
            sizes: FileSizes::new(spec),
            leaf_dirs: u64::from(spec.width).saturating_pow(spec.depth),
            dir_digits: digits(u64::from(spec.width.saturating_sub(1))).max(2),
            file_digits: digits(per_leaf.saturating_sub(1)).max(6),
        }
    }

    pub fn spec(&self) -> &Dataset {
        &self.spec
    }
    pub fn anchor(&self) -> &Path {
        &self.spec.dir
    }
    /// width^depth.
    pub fn leaf_dirs(&self) -> u64 {
        self.leaf_dirs
    }
    /// Files in the tree, after the total_size cap.
    pub fn files(&self) -> u64 {
        self.sizes.files()
    }
    /// Files the workloads use: the first ones up to working_set bytes (at least one).
    pub fn working_files(&self) -> u64 {
        self.sizes.working_files()
    }
    /// Sum of the sizes of all files.
    pub fn total_bytes(&self) -> u64 {
        self.sizes.total_bytes()
    }

    /// File i's size: see [`FileSizes::file_size`].
    #[inline]
    pub fn file_size(&self, i: u64) -> u64 {
        self.sizes.file_size(i)
    }

    /// Whether preparation creates file i: see [`FileSizes::preallocated`].
    #[inline]
    pub fn preallocated(&self, i: u64) -> bool {
        self.sizes.preallocated(i)
    }

    /// Files are numbered leaf by leaf.
    pub fn leaf_of(&self, i: u64) -> u64 {
        i / u64::from(self.spec.files.max(1))
    }

    /// anchor/d00/d07/f000042: one dNN level per depth, the file's index within its leaf.
    pub fn file_path(&self, i: u64) -> PathBuf {
        let per_leaf = u64::from(self.spec.files.max(1));
        self.leaf_path(i / per_leaf).join(format!("f{:0w$}", i % per_leaf, w = self.file_digits))
    }

    pub fn leaf_path(&self, leaf: u64) -> PathBuf {
        self.dir_path(self.spec.depth, leaf)
    }

    /// Directory `index` of `level` (0 = the anchor): its index written in base width.
    fn dir_path(&self, level: u32, mut index: u64) -> PathBuf {
        let width = u64::from(self.spec.width.max(1));
        let mut parts = vec![0; level as usize];
        for p in parts.iter_mut().rev() {
            (*p, index) = (index % width, index / width);
        }
        let mut path = self.spec.dir.clone();
        path.extend(parts.iter().map(|p| format!("d{p:0w$}", w = self.dir_digits)));
        path
    }

    pub fn files_in_leaf(&self, leaf: u64) -> std::ops::Range<u64> {
        let per_leaf = u64::from(self.spec.files);
        let start = leaf.saturating_mul(per_leaf).min(self.files());
        start..start.saturating_add(per_leaf).min(self.files())
    }

    /// Whether a name in one of our directories is ours: `dNN` (or `fNNNNNN` in a leaf).
    /// Files a workload created (copy, move, create) follow the same naming.
    fn our_name(&self, name: &str, leaf: bool) -> bool {
        let (prefix, w) = if leaf { ('f', self.file_digits) } else { ('d', self.dir_digits) };
        name.len() == w + 1 && name.starts_with(prefix) && name[1..].bytes().all(|b| b.is_ascii_digit())
    }

    /// A quick look that the tree is there: every leaf, and the first, last and ~100
    /// files spread over the tree exist with their size.
    fn looks_complete(&self, c: &mut dyn FsConn) -> bool {
        let mut is = |path: &Path, dir: bool, len: Option<u64>| {
            c.stat(path).ok().flatten().is_some_and(|m| m.dir == dir && len.is_none_or(|l| m.len == l))
        };
        (0..self.leaf_dirs).all(|l| is(&self.leaf_path(l), true, None))
            && (self.files() == 0
                || (0..=100)
                    .map(|k| k * (self.files() - 1) / 100)
                    .filter(|i| self.preallocated(*i))
                    .all(|i| is(&self.file_path(i), false, Some(self.file_size(i)))))
    }
}

/// What the dataset's marker adds to every marker.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Tree {
    /// All files written; an interrupted format stays ours (to clean or recreate) but is
    /// never reused.
    complete: bool,
    files: u64,
    total_bytes: u64,
    spec: Shape,
    /// The anchor's identity once ioscope had made the tree's marker in it; absent in the
    /// markers of earlier versions (their trees are not provably ioscope's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    made: Option<Made>,
}

/// The anchor's identity when ioscope made the tree.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq)]
struct Made {
    /// What [`FsConn::identify`] says of the anchor: its file id (null where there is none).
    anchor_id: Option<u64>,
}

/// The most weighted sizes a definition of ioscope's has.
const MAX_SIZES: usize = 4096;

impl marker::Body for Tree {
    const MAX_BYTES: u64 = 1 << 20;
    /// The bounds of a plan's `[dataset]` (crates/workload/src/input.rs), so that a forged
    /// definition cannot make a walk endless.
    fn check(&self) -> Result<(), String> {
        let s = &self.spec;
        let files = u64::from(s.width).checked_pow(s.depth).and_then(|d| d.checked_mul(u64::from(s.files_per_leaf)));
        if s.depth > 8 || !(1..=10_000).contains(&s.width) || !(1..=10_000_000).contains(&s.files_per_leaf) {
            return Err(format!(
                "spec depth {}, width {}, files_per_leaf {} are not a dataset's (depth 0..=8, width 1..=10000, files 1..=10000000)",
                s.depth, s.width, s.files_per_leaf
            ));
        }
        if files.is_none_or(|f| f > ioscope_workload::layout::MAX_DATASET_FILES) {
            return Err(format!(
                "spec width^depth × files_per_leaf is more than {} files",
                ioscope_workload::layout::MAX_DATASET_FILES
            ));
        }
        if s.sizes.is_empty() || s.sizes.len() > MAX_SIZES || s.sizes.iter().any(|&(b, w)| b == 0 || w == 0) {
            return Err(format!("spec sizes must be 1 to {MAX_SIZES} (bytes, weight) pairs, none 0"));
        }
        Ok(())
    }
}

impl Tree {
    /// Ok if the anchor (what identify says of it now) is the one this marker was made in.
    fn proves(&self, anchor: Option<ioscope_engine::fs::Entry>) -> Result<(), String> {
        let Some(made) = self.made else {
            return Err("the marker is of an earlier ioscope, which does not record the anchor's identity".into());
        };
        let now = anchor.and_then(|e| e.id);
        if anchor.is_none_or(|e| !matches!(e.kind, Kind::Dir | Kind::Link)) || now != made.anchor_id {
            let id = |v: Option<u64>| v.map_or("none".to_string(), |v| v.to_string());
            return Err(format!(
                "the anchor's file id is {}, the marker's {}: the marker was made in another directory",
                id(now),
                id(made.anchor_id)
            ));
        }
        Ok(())
    }
}

/// The definition as the marker records it (the file format since the first dataset, so
/// trees made by earlier versions are still recognised).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct Shape {
    anchor: PathBuf,
    depth: u32,
    width: u32,
    files_per_leaf: u32,
    /// (bytes, weight) pairs.
    sizes: Vec<(u64, u32)>,
    total_size: Option<u64>,
    working_set: Option<u64>,
    /// Share of the files preparation created (absent: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prealloc_pct: Option<u8>,
}

impl Shape {
    fn of(d: &Dataset) -> Shape {
        Shape {
            anchor: d.dir.clone(),
            depth: d.depth,
            width: d.width,
            files_per_leaf: d.files,
            sizes: d.sizes.iter().map(|b| (b.bytes, b.weight)).collect(),
            total_size: d.total_size_bytes,
            working_set: d.working_set_bytes,
            prealloc_pct: d.prealloc_pct,
        }
    }

    /// The dataset this marker describes, at `anchor` (wherever it was when it was made).
    fn at(&self, anchor: &Path) -> Dataset {
        Dataset {
            name: None,
            dir: anchor.to_path_buf(),
            depth: self.depth,
            width: self.width,
            files: self.files_per_leaf,
            sizes: self.sizes.iter().map(|&(bytes, weight)| BlockSize { bytes, weight }).collect(),
            total_size_bytes: self.total_size,
            working_set_bytes: self.working_set,
            format: DatasetFormat::Reuse,
            prealloc_pct: self.prealloc_pct,
            size_gamma: None,
        }
    }
}

/// The marker, if any; an unreadable one is refused (unless `force`: then there is none).
fn read_marker(c: &mut dyn FsConn, anchor: &Path, force: bool) -> Result<Option<Marker<Tree>>, DatasetError> {
    marker::read(c, anchor, MARKER, force).map_err(|e| DatasetError::NotOurs { path: e.path, reason: e.reason })
}

fn write_marker(c: &mut dyn FsConn, anchor: &Path, m: &Marker<Tree>) -> Result<(), DatasetError> {
    marker::write(c, anchor, MARKER, m).map_err(io_err(anchor))
}

/// What check found: reuse the tree, or create it (removing our old tree first).
struct State {
    reuse: bool,
    anchor_exists: bool,
    old: Option<Marker<Tree>>,
}

fn inspect(c: &mut dyn FsConn, layout: &Layout, force: bool) -> Result<State, DatasetError> {
    let format = layout.spec().format;
    let anchor = layout.anchor();
    let stat = c.stat(anchor).map_err(io_err(anchor))?;
    let anchor_exists = stat.is_some();
    if stat.is_some_and(|s| !s.dir) {
        return Err(io_err(anchor)(std::io::Error::other("not a directory")));
    }
    if let Some(parent) = anchor.parent().filter(|p| !anchor_exists && !p.as_os_str().is_empty()) {
        if c.stat(parent).map_err(io_err(parent))?.is_none() {
            return Err(DatasetError::NoParent { path: anchor.to_path_buf(), parent: parent.to_path_buf() });
        }
    }
    let mut old = read_marker(c, anchor, force)?;
    let same_tree = |m: &Marker<Tree>| same_tree(&m.body.spec.at(anchor), layout.spec());
    // A marker made in another directory is not this tree's; one of an earlier version
    // may be used as it is, never removed or rewritten (see `Tree::proves`).
    let proof = match &old {
        Some(m) => m.body.proves(c.identify(anchor).map_err(io_err(anchor))?),
        None => Ok(()),
    };
    let legacy = old.as_ref().is_some_and(|m| m.body.made.is_none());
    if proof.is_err() && !legacy {
        if force {
            old = None;
        } else {
            let reason = proof.clone().err().unwrap_or_default();
            return Err(DatasetError::NotOurs { path: anchor.join(MARKER), reason });
        }
    }
    let reuse = format != DatasetFormat::Always
        && old.as_ref().is_some_and(|m| m.body.complete && same_tree(m))
        && layout.looks_complete(c);
    if legacy && !reuse && format != DatasetFormat::Never {
        if !force {
            let reason = format!(
                "{}: ioscope cannot tell the tree is its own, so it neither removes nor rewrites it (remove it by hand, or pass --force to write over it)",
                proof.err().unwrap_or_default()
            );
            return Err(DatasetError::NotOurs { path: anchor.join(MARKER), reason });
        }
        old = None;
    }
    if format == DatasetFormat::Never && !reuse {
        let reason = match &old {
            None => "no dataset here".to_string(),
            Some(m) if !same_tree(m) => "the dataset here has another definition".to_string(),
            Some(_) => "the dataset here is incomplete".to_string(),
        };
        return Err(DatasetError::Missing { path: anchor.to_path_buf(), reason });
    }
    if old.is_none() && anchor_exists && !force {
        // lost+found is what a fresh file system's root holds; it does not make a mount
        // point someone's data.
        let entries = c.list(anchor).map_err(io_err(anchor))?;
        // Nor does the lock file of this run.
        if let Some((name, _)) = entries.iter().find(|(name, _)| name != "lost+found" && name != crate::workdir::LOCK) {
            let reason = format!("the directory is not empty (it holds {name:?})");
            return Err(DatasetError::NotOurs { path: anchor.to_path_buf(), reason });
        }
    }
    if !reuse {
        // Refused before the first byte, rather than a full file system and a partial tree.
        let need = layout.total_bytes().saturating_sub(old.as_ref().map_or(0, |m| m.body.total_bytes));
        let probe = if anchor_exists { anchor } else { anchor.parent().unwrap_or(anchor) };
        if let Ok(Some(free)) = c.free_bytes(probe) {
            if need > free {
                return Err(DatasetError::NoSpace { path: anchor.to_path_buf(), need, free });
            }
        }
    }
    Ok(State { reuse, anchor_exists, old })
}

/// The anchor's marker, when it is there and refused ("PATH: why"): with `--force` the
/// anchor is then taken as not ioscope's, and preparation replaces the marker with one of
/// the tree it creates (what the user is told before the run).
pub fn refused_marker(fs: &dyn FileSystem, spec: &Dataset) -> Option<String> {
    let mut c = fs.connect().ok()?;
    marker::read::<Tree>(&mut *c, &spec.dir, MARKER, false).err().map(|e| format!("{}: {}", e.path.display(), e.reason))
}

/// Checks the anchor, writing nothing: whether the existing tree can be reused. Errors if
/// the anchor holds data that is not ours (unless force), or format = "never" and no
/// matching tree.
pub fn check(fs: &dyn FileSystem, spec: &Dataset, force: bool) -> Result<bool, DatasetError> {
    let mut c = connect(fs, &spec.dir)?;
    Ok(inspect(&mut *c, &Layout::new(spec), force)?.reuse)
}

fn connect<'f>(fs: &'f dyn FileSystem, anchor: &Path) -> Result<Box<dyn FsConn + 'f>, DatasetError> {
    fs.connect().map_err(io_err(anchor))
}

/// What prepare did.
#[derive(Debug)]
pub struct Prepared {
    pub reused: bool,
    pub layout: Layout,
    /// Files created now with a verify header (generation 0) in every whole block
    /// ([`prepare_stamped`]), in no order; empty when reused or without headers.
    pub stamped: Vec<u32>,
}

/// Creates, re-creates or reuses the tree: directories, then the files, filled with
/// random data on `threads` threads. `progress(files_done, files_total, bytes_done)` is
/// called at the start, about every 100 ms, and at the end. `created_anchor`: the anchor
/// was made for this run just before (so cleanup may remove it). If creating fails (a
/// full file system, say), the tree made so far is removed again: no partial tree is
/// left and the space is given back.
pub fn prepare(
    fs: &dyn FileSystem,
    spec: &Dataset,
    force: bool,
    created_anchor: bool,
    threads: usize,
    progress: &(dyn Fn(u64, u64, u64) + Sync),
) -> Result<Prepared, DatasetError> {
    prepare_stamped(fs, spec, force, created_anchor, threads, progress, None)
}

/// As [`prepare`]; with `headers` (run id, verify block length: a run with `--verify`),
/// the files it creates carry a verify header of generation 0 in every whole block, file
/// id = the file's index (see `Prepared::stamped`).
pub fn prepare_stamped(
    fs: &dyn FileSystem,
    spec: &Dataset,
    force: bool,
    created_anchor: bool,
    threads: usize,
    progress: &(dyn Fn(u64, u64, u64) + Sync),
    headers: Option<(u64, u32)>,
) -> Result<Prepared, DatasetError> {
    let layout = Layout::new(spec);
    let anchor = layout.anchor();
    let mut c = connect(fs, anchor)?;
    let state = inspect(&mut *c, &layout, force)?;
    if state.reuse {
        return Ok(Prepared { reused: true, layout, stamped: Vec::new() });
    }
    let created_dir = match &state.old {
        Some(old) => {
            // The old tree at this anchor, wherever it was when it was made.
            let old_layout = Layout::new(&old.body.spec.at(anchor));
            remove_tree(fs, &mut *c, &old_layout, threads)?;
            old.created_dir
        }
        None => !state.anchor_exists || created_anchor,
    };
    c.create_dir_all(anchor).map_err(io_err(anchor))?;
    // Marked ours (incomplete) before the first file, so an interrupted format can be
    // cleaned up or recreated, but is not reused.
    let made = Some(Made { anchor_id: c.identify(anchor).map_err(io_err(anchor))?.and_then(|e| e.id) });
    let tree =
        Tree { complete: false, files: layout.files(), total_bytes: layout.total_bytes(), spec: Shape::of(spec), made };
    let mut marker = Marker::new(created_dir, tree);
    write_marker(&mut *c, anchor, &marker)?;
    let stamped = match create_files(fs, &mut *c, &layout, threads, progress, headers) {
        Ok(s) => s,
        Err(e) => {
            // Everything under the marker is this run's: take it away again.
            let _ = cleanup(fs, anchor);
            return Err(e);
        }
    };
    marker.body.complete = true;
    write_marker(&mut *c, anchor, &marker)?;
    Ok(Prepared { reused: false, layout, stamped })
}

/// The directories, then the files with their data (and verify headers: the files every
/// whole block of which got one are returned).
fn create_files(
    fs: &dyn FileSystem,
    c: &mut dyn FsConn,
    layout: &Layout,
    threads: usize,
    progress: &(dyn Fn(u64, u64, u64) + Sync),
    headers: Option<(u64, u32)>,
) -> Result<Vec<u32>, DatasetError> {
    let stamped = Mutex::new(Vec::new());
    let anchor = layout.anchor();
    for leaf in 0..layout.leaf_dirs() {
        let dir = layout.leaf_path(leaf);
        c.create_dir_all(&dir).map_err(io_err(&dir))?;
    }

    let total = layout.files();
    // Random per fill: two trees (two hosts' anchors on one filer) share no byte.
    let fill_seed = crate::verify::new_run_id();
    let (done, bytes, start, next_report) = (AtomicU64::new(0), AtomicU64::new(0), Instant::now(), AtomicU64::new(100));
    // Called after every chunk and file; one thread reports when 100 ms have passed.
    let tick = || {
        let (ms, due) = (start.elapsed().as_millis() as u64, next_report.load(Relaxed));
        if ms >= due && next_report.compare_exchange(due, ms + 100, Relaxed, Relaxed).is_ok() {
            progress(done.load(Relaxed), total, bytes.load(Relaxed));
        }
    };
    progress(0, total, 0);
    par_for(
        total,
        threads,
        || connect(fs, anchor),
        |c, i| {
            if !layout.preallocated(i) {
                // Left for a flow to create.
                done.fetch_add(1, Relaxed);
                return Ok(());
            }
            let path = layout.file_path(i);
            let size = layout.file_size(i);
            let file_id = u32::try_from(i).ok().filter(|_| headers.is_some());
            // Every whole block stamped: each chunk starts on a block and holds whole ones
            // (or ends the file, whose partial last block is not verified).
            let mut whole = file_id.is_some();
            // Seeded per file and offset: no two chunks are alike, so nothing dedupes. The
            // data is durable when write_file returns: before the marker says complete, and
            // so the run does not measure the write-back of the format.
            let mut fill = |off: u64, chunk: &mut [u8]| {
                fill_random(chunk, mix(mix(i) ^ off) ^ fill_seed);
                if let (Some((run_id, bl)), Some(id)) = (headers, file_id) {
                    let b = u64::from(bl.max(1));
                    if off % b == 0 && (chunk.len() as u64 % b == 0 || off + chunk.len() as u64 == size) {
                        crate::verify::stamp_laid_out(chunk, run_id, id, bl, off);
                    } else {
                        whole = false;
                    }
                }
                bytes.fetch_add(chunk.len() as u64, Relaxed);
                tick();
            };
            c.write_file(&path, size, &mut fill).map_err(io_err(&path))?;
            if let (true, Some(id)) = (whole, file_id) {
                stamped.lock().unwrap_or_else(|p| p.into_inner()).push(id);
            }
            done.fetch_add(1, Relaxed);
            tick();
            Ok(())
        },
    )?;
    progress(total, total, layout.total_bytes());
    Ok(stamped.into_inner().unwrap_or_else(|p| p.into_inner()))
}

/// What cleanup removed, and what it left.
#[derive(Debug, Default, PartialEq)]
pub struct Cleaned {
    pub files: u64,
    pub bytes: u64,
    /// Entries in our directories that ioscope did not name; left in place.
    pub kept: Vec<PathBuf>,
    pub removed_anchor: bool,
    /// Why nothing was removed, when the marker does not prove the tree is ioscope's.
    pub left: Option<String>,
}

/// Removes our files and directories per the layout (not the marker). Walks the directories
/// rather than the file list: a workload may have deleted files, or made new ones with our
/// names. Anything else is left and listed in `kept`.
fn remove_tree(
    fs: &dyn FileSystem,
    c: &mut dyn FsConn,
    layout: &Layout,
    threads: usize,
) -> Result<Cleaned, DatasetError> {
    let (files, bytes, kept) = (AtomicU64::new(0), AtomicU64::new(0), Mutex::new(Vec::new()));
    let depth = layout.spec().depth;
    par_for(
        layout.leaf_dirs(),
        threads,
        || connect(fs, layout.anchor()),
        |c, leaf| {
            let dir = layout.leaf_path(leaf);
            if !real_dirs_to(&mut **c, layout, leaf, &kept)? {
                return Ok(());
            }
            let entries = match c.list(&dir) {
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
                r => r.map_err(io_err(&dir))?,
            };
            for (name, stat) in entries {
                let path = dir.join(&name);
                if name.starts_with(MARKER) || name == crate::workdir::LOCK {
                    continue; // depth 0: the leaf is the anchor
                }
                match stat {
                    Some(m) if m.file && layout.our_name(&name, true) => {
                        match c.remove_file(&path) {
                            Err(e) if e.kind() == ErrorKind::NotFound => {} // a workload deleted it
                            r => r.map_err(io_err(&path))?,
                        }
                        files.fetch_add(1, Relaxed);
                        bytes.fetch_add(m.len, Relaxed);
                    }
                    _ => kept.lock().unwrap().push(path),
                }
            }
            if depth > 0 {
                let _ = c.remove_dir(&dir); // fails only if something was kept
            }
            Ok(())
        },
    )?;
    // The directories above the leaves, deepest first; names that are not ours are kept.
    let mut kept = kept.into_inner().unwrap();
    for level in (1..depth).rev() {
        for d in 0..u64::from(layout.spec().width).saturating_pow(level) {
            remove_dir_or_list(c, layout, &layout.dir_path(level, d), &mut kept)?;
        }
    }
    Ok(Cleaned { files: files.into_inner(), bytes: bytes.into_inner(), kept, removed_anchor: false, left: None })
}

/// Whether every directory from below the anchor down to leaf `leaf` is a directory itself
/// (a link to one is never walked: it is kept, and listed); false too if one is missing.
fn real_dirs_to(
    c: &mut dyn FsConn,
    layout: &Layout,
    leaf: u64,
    kept: &Mutex<Vec<PathBuf>>,
) -> Result<bool, DatasetError> {
    let (depth, width) = (layout.spec().depth, u64::from(layout.spec().width.max(1)));
    for level in 1..=depth {
        let path = layout.dir_path(level, leaf / width.saturating_pow(depth - level));
        match c.identify(&path).map_err(io_err(&path))? {
            Some(e) if e.kind == Kind::Dir => {}
            None => return Ok(false),
            Some(_) => {
                let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                if !kept.contains(&path) {
                    kept.push(path);
                }
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Removes a directory above the leaves; if something is left in it, lists what is not one
/// of our directories (those hold what was already listed). A link is not listed through.
fn remove_dir_or_list(
    c: &mut dyn FsConn,
    layout: &Layout,
    dir: &Path,
    kept: &mut Vec<PathBuf>,
) -> Result<bool, DatasetError> {
    if c.identify(dir).map_err(io_err(dir))?.is_some_and(|e| e.kind != Kind::Dir) {
        if !kept.iter().any(|k| k == dir) {
            kept.push(dir.to_path_buf());
        }
        return Ok(false);
    }
    match c.remove_dir(dir) {
        Err(e) if e.kind() != ErrorKind::NotFound => {
            let entries = c.list(dir).map_err(io_err(dir))?;
            kept.extend(entries.into_iter().filter(|(n, _)| !layout.our_name(n, false)).map(|(n, _)| dir.join(n)));
            Ok(false)
        }
        r => Ok(r.is_ok()),
    }
}

/// Removes the tree under `anchor`: our files and directories, the marker, and the anchor
/// if ioscope created it and nothing else is left in it. Does nothing without our marker.
pub fn cleanup(fs: &dyn FileSystem, anchor: &Path) -> Result<Cleaned, DatasetError> {
    let mut c = connect(fs, anchor)?;
    let marker = marker::read::<Tree>(&mut *c, anchor, MARKER, false)
        .map_err(|e| DatasetError::CleanupRefused { path: e.path, reason: e.reason })?;
    let Some(marker) = marker else { return Ok(Cleaned::default()) };
    if let Err(why) = marker.body.proves(c.identify(anchor).map_err(io_err(anchor))?) {
        return Ok(Cleaned { left: Some(why), ..Cleaned::default() });
    }
    let layout = Layout::new(&marker.body.spec.at(anchor));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(16);
    let mut cleaned = remove_tree(fs, &mut *c, &layout, threads)?;
    let marker_path = anchor.join(MARKER);
    c.remove_file(&marker_path).map_err(io_err(&marker_path))?;
    if marker.created_dir {
        // The run's lock file goes with the directory (the lock is held to the end anyway).
        let _ = c.remove_file(&anchor.join(crate::workdir::LOCK));
        // At depth 0 the anchor is the leaf, whose leftovers are already listed.
        let mut kept = Vec::new();
        cleaned.removed_anchor = remove_dir_or_list(&mut *c, &layout, anchor, &mut kept)?;
        cleaned.kept.extend(kept.into_iter().filter(|_| layout.spec().depth > 0));
    }
    cleaned.kept.sort();
    Ok(cleaned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ioscope_engine::fs::LocalFs;
    use std::fs;

    fn marker_at(anchor: &Path) -> Option<Marker<Tree>> {
        read_marker(&mut *LocalFs.connect().unwrap(), anchor, false).unwrap()
    }

    fn spec(anchor: &Path, depth: u32, width: u32, files: u32, sizes: &[(u64, u32)]) -> Dataset {
        Dataset {
            name: None,
            dir: anchor.to_path_buf(),
            depth,
            width,
            files,
            sizes: sizes.iter().map(|&(bytes, weight)| BlockSize { bytes, weight }).collect(),
            total_size_bytes: None,
            working_set_bytes: None,
            format: DatasetFormat::Reuse,
            prealloc_pct: None,
            size_gamma: None,
        }
    }

    /// The same definition with another format.
    fn fmt(d: &Dataset, format: DatasetFormat) -> Dataset {
        Dataset { format, ..d.clone() }
    }

    /// Every file below `dir` (relative paths), sorted.
    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                out.extend(walk(&e.path()).into_iter().map(|p| Path::new(&e.file_name()).join(p)));
            } else {
                out.push(e.file_name().into());
            }
        }
        out.sort();
        out
    }

    const NO_PROGRESS: &(dyn Fn(u64, u64, u64) + Sync) = &|_, _, _| {};

    #[test]
    fn layout_paths_and_counts() {
        let l = Layout::new(&spec(Path::new("/a"), 2, 3, 4, &[(100, 1)]));
        assert_eq!((l.leaf_dirs(), l.files(), l.working_files(), l.total_bytes()), (9, 36, 36, 3600));
        assert_eq!(l.file_path(0), Path::new("/a/d00/d00/f000000"));
        assert_eq!(l.file_path(5), Path::new("/a/d00/d01/f000001"));
        assert_eq!(l.file_path(35), Path::new("/a/d02/d02/f000003"));
        assert_eq!((l.leaf_of(13), l.leaf_path(3)), (3, PathBuf::from("/a/d01/d00")));
        assert_eq!((l.files_in_leaf(8), l.files_in_leaf(9)), (32..36, 36..36));
        let flat = Layout::new(&spec(Path::new("/a"), 0, 3, 12_345_678, &[(1, 1)]));
        assert_eq!((flat.leaf_dirs(), flat.file_path(7)), (1, PathBuf::from("/a/f00000007")));
        let wide = Layout::new(&spec(Path::new("/a"), 1, 150, 1, &[(1, 1)]));
        assert_eq!(wide.file_path(149), Path::new("/a/d149/f000000"));
    }

    #[test]
    fn sizes_follow_weights() {
        let sizes = [(8192, 60), (32768, 25), (524288, 10), (4 << 20, 5)];
        let l = Layout::new(&spec(Path::new("/a"), 1, 10, 1000, &sizes));
        assert_eq!(l.files(), 10_000);
        for (size, weight) in sizes {
            let n = (0..l.files()).filter(|&i| l.file_size(i) == size).count() as f64;
            assert!((n / 100.0 - f64::from(weight)).abs() < 2.0, "{size}: {n} of 10000 for weight {weight}");
        }
        let again = Layout::new(&spec(Path::new("/b"), 1, 10, 1000, &sizes));
        assert!((0..l.files()).all(|i| l.file_size(i) == again.file_size(i)), "sizes depend on the index only");
        assert_eq!(l.total_bytes(), (0..l.files()).map(|i| l.file_size(i)).sum::<u64>());
    }

    #[test]
    fn total_size_and_working_set_cap_the_files() {
        let mut s = spec(Path::new("/a"), 1, 2, 100, &[(1000, 1)]);
        s.total_size_bytes = Some(25_500);
        s.working_set_bytes = Some(10_999);
        let l = Layout::new(&s);
        assert_eq!((l.files(), l.total_bytes(), l.working_files()), (25, 25_000, 10));
        assert_eq!((l.files_in_leaf(0), l.files_in_leaf(1)), (0..25, 25..25));
        s.working_set_bytes = Some(1);
        assert_eq!(Layout::new(&s).working_files(), 1, "at least one file");

        let mut s = spec(Path::new("/a"), 2, 4, 100, &[(1000, 3), (7000, 1)]);
        s.total_size_bytes = Some(200_000);
        let l = Layout::new(&s);
        assert!(l.total_bytes() <= 200_000 && l.total_bytes() + l.file_size(l.files()) > 200_000);
    }

    #[test]
    fn prepare_creates_reuses_and_recreates() {
        let tmp = tempfile::tempdir().unwrap();
        let anchor = tmp.path().join("tree");
        let s = spec(&anchor, 2, 2, 3, &[(1, 1), (4096, 2), ((1 << 20) + 100, 1)]);
        assert!(!check(&LocalFs, &s, false).unwrap());
        assert!(!anchor.exists(), "check writes nothing");

        let last = Mutex::new((0, 0, 0));
        let p = prepare(&LocalFs, &s, false, false, 3, &|f, t, b| *last.lock().unwrap() = (f, t, b)).unwrap();
        let l = &p.layout;
        assert!(!p.reused);
        assert_eq!(*last.lock().unwrap(), (12, 12, l.total_bytes()));
        let mut expected: Vec<PathBuf> =
            (0..12).map(|i| l.file_path(i).strip_prefix(&anchor).unwrap().into()).collect();
        expected.push(MARKER.into());
        expected.sort();
        assert_eq!(walk(&anchor), expected, "exactly the files of the layout, and the marker");
        for i in 0..12 {
            let data = fs::read(l.file_path(i)).unwrap();
            assert_eq!(data.len() as u64, l.file_size(i));
            let zeros = data.iter().filter(|b| **b == 0).count();
            assert!(zeros <= data.len() / 64, "file {i}: {zeros} zero bytes of {}", data.len());
        }
        let marker = marker_at(&anchor).unwrap();
        assert!(marker.body.complete && marker.created_dir && marker.body.spec == Shape::of(&s));
        assert_eq!((marker.body.files, marker.body.total_bytes), (12, l.total_bytes()));

        // The same definition is reused without rewriting: a changed file stays changed.
        let probe = l.file_path(4);
        let changed = vec![7u8; l.file_size(4) as usize];
        fs::write(&probe, &changed).unwrap();
        assert!(check(&LocalFs, &s, false).unwrap());
        assert!(prepare(&LocalFs, &s, false, false, 2, NO_PROGRESS).unwrap().reused);
        assert_eq!(fs::read(&probe).unwrap(), changed);
        // Another working set is the same tree; format = always recreates it.
        let s2 = Dataset { working_set_bytes: Some(1), ..s.clone() };
        assert!(prepare(&LocalFs, &fmt(&s2, DatasetFormat::Never), false, false, 2, NO_PROGRESS).unwrap().reused);
        assert!(!prepare(&LocalFs, &fmt(&s, DatasetFormat::Always), false, false, 2, NO_PROGRESS).unwrap().reused);
        assert_ne!(fs::read(&probe).unwrap(), changed);

        // Another definition: the old tree goes, the new one comes, the anchor stays ours.
        let narrow = Dataset { width: 1, ..s.clone() };
        assert!(matches!(
            check(&LocalFs, &fmt(&narrow, DatasetFormat::Never), false),
            Err(DatasetError::Missing { .. })
        ));
        let p = prepare(&LocalFs, &narrow, false, false, 2, NO_PROGRESS).unwrap();
        assert!(!p.reused);
        assert_eq!(walk(&anchor).len(), 3 + 1);
        assert!(!anchor.join("d01").exists());
        assert!(marker_at(&anchor).unwrap().created_dir);

        // An interrupted format is ours but not reused.
        let mut m = marker_at(&anchor).unwrap();
        m.body.complete = false;
        write_marker(&mut *LocalFs.connect().unwrap(), &anchor, &m).unwrap();
        assert!(!prepare(&LocalFs, &narrow, false, false, 2, NO_PROGRESS).unwrap().reused);
        // So is one with a missing file.
        fs::remove_file(p.layout.file_path(2)).unwrap();
        assert!(!check(&LocalFs, &narrow, false).unwrap());
    }

    #[test]
    fn a_tree_marked_by_an_earlier_version_is_reused_but_never_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let anchor = tmp.path().join("tree");
        let s = spec(&anchor, 1, 2, 2, &[(4096, 3), (8192, 1)]);
        let l = prepare(&LocalFs, &s, false, false, 2, NO_PROGRESS).unwrap().layout;
        // The marker as the first datasets wrote it: no identity of the anchor.
        let old = format!(
            r#"{{"created_by": "ioscope 0.1.0", "created_dir": true, "complete": true, "files": 4, "total_bytes": {},
                "spec": {{"anchor": "{}", "depth": 1, "width": 2, "files_per_leaf": 2,
                          "sizes": [[4096, 3], [8192, 1]], "total_size": null, "working_set": null}}}}"#,
            l.total_bytes(),
            anchor.display()
        );
        fs::write(anchor.join(MARKER), old).unwrap();
        assert!(check(&LocalFs, &s, false).unwrap(), "reused");
        let e = check(&LocalFs, &fmt(&s, DatasetFormat::Always), false).unwrap_err();
        assert!(matches!(e, DatasetError::NotOurs { .. }) && e.to_string().contains("earlier ioscope"), "{e}");
        let c = cleanup(&LocalFs, &anchor).unwrap();
        assert_eq!((c.files, c.removed_anchor), (0, false));
        assert!(c.left.unwrap().contains("earlier ioscope"));
        assert_eq!(walk(&anchor).len(), 5, "nothing removed");
    }

    #[test]
    fn a_dataset_marker_from_another_directory_or_a_linked_subdirectory_never_leads_cleanup_out() {
        let tmp = tempfile::tempdir().unwrap();
        let anchor = tmp.path().join("tree");
        let s = spec(&anchor, 2, 2, 2, &[(4096, 1)]);
        prepare(&LocalFs, &s, false, false, 2, NO_PROGRESS).unwrap();
        // A victim tree shaped like ours, outside the anchor; d01 replaced by a link to it.
        let victim = tmp.path().join("victim");
        for d in ["d00", "d01"] {
            fs::create_dir_all(victim.join(d)).unwrap();
            fs::write(victim.join(d).join("f000000"), b"theirs").unwrap();
        }
        fs::remove_dir_all(anchor.join("d01")).unwrap();
        std::os::unix::fs::symlink(&victim, anchor.join("d01")).unwrap();
        let c = cleanup(&LocalFs, &anchor).unwrap();
        assert_eq!(c.files, 4, "the real half of the tree");
        assert!(c.kept.contains(&anchor.join("d01")), "{:?}", c.kept);
        assert_eq!(walk(&victim).len(), 2, "nothing removed through the link");

        // The marker copied into another directory with files of our names: not its tree.
        let other = tmp.path().join("other");
        prepare(&LocalFs, &Dataset { dir: other.clone(), ..s.clone() }, false, false, 2, NO_PROGRESS).unwrap();
        let copy = tmp.path().join("copy");
        fs::create_dir(&copy).unwrap();
        fs::copy(other.join(MARKER), copy.join(MARKER)).unwrap();
        fs::create_dir_all(copy.join("d00/d00")).unwrap();
        fs::write(copy.join("d00/d00/f000000"), b"theirs").unwrap();
        let c = cleanup(&LocalFs, &copy).unwrap();
        assert_eq!(c.files, 0);
        assert!(c.left.unwrap().contains("another directory"));
        let e = check(&LocalFs, &Dataset { dir: copy.clone(), ..s.clone() }, false).unwrap_err();
        assert!(matches!(e, DatasetError::NotOurs { .. }), "{e}");
        assert_eq!(fs::read(copy.join("d00/d00/f000000")).unwrap(), b"theirs");
        // A definition no plan has is refused on read.
        let m = fs::read_to_string(other.join(MARKER)).unwrap().replace("\"depth\": 2", "\"depth\": 4000000000");
        fs::write(other.join(MARKER), m).unwrap();
        let e = cleanup(&LocalFs, &other).unwrap_err().to_string();
        assert!(e.contains("invalid marker (spec depth 4000000000"), "{e}");
    }

    #[test]
    fn refuses_foreign_directories_unless_forced() {
        let tmp = tempfile::tempdir().unwrap();
        let anchor = tmp.path();
        fs::write(anchor.join("user.txt"), b"user data").unwrap();
        let s = spec(anchor, 1, 2, 2, &[(4096, 1)]);
        let err = check(&LocalFs, &s, false).unwrap_err();
        assert!(matches!(err, DatasetError::NotOurs { .. }), "{err}");
        assert!(err.to_string().contains("--force"), "{err}");
        assert!(prepare(&LocalFs, &fmt(&s, DatasetFormat::Always), false, false, 2, NO_PROGRESS).is_err());
        assert_eq!(walk(anchor), vec![PathBuf::from("user.txt")], "nothing written");
        assert_eq!(cleanup(&LocalFs, anchor).unwrap(), Cleaned::default(), "no marker, nothing removed");

        let p = prepare(&LocalFs, &s, true, false, 2, NO_PROGRESS).unwrap();
        assert_eq!(walk(anchor).len(), 4 + 2);
        assert!(!marker_at(anchor).unwrap().created_dir);
        let c = cleanup(&LocalFs, anchor).unwrap();
        assert_eq!((c.files, c.bytes, c.removed_anchor), (4, p.layout.total_bytes(), false));
        assert!(c.kept.is_empty(), "the user's file is not in our tree: {:?}", c.kept);
        assert_eq!(walk(anchor), vec![PathBuf::from("user.txt")]);
        assert_eq!(fs::read(anchor.join("user.txt")).unwrap(), b"user data");

        // An empty directory (or only lost+found) is fine; format = never still needs a tree.
        let empty = anchor.join("empty");
        fs::create_dir_all(empty.join("lost+found")).unwrap();
        let s = spec(&empty, 0, 1, 2, &[(10, 1)]);
        assert!(matches!(check(&LocalFs, &fmt(&s, DatasetFormat::Never), false), Err(DatasetError::Missing { .. })));
        assert!(!check(&LocalFs, &s, false).unwrap());
    }

    #[test]
    fn cleanup_removes_only_what_it_created() {
        let tmp = tempfile::tempdir().unwrap();
        let anchor = tmp.path().join("a/tree");
        let s = spec(&anchor, 2, 2, 2, &[(1000, 1)]);
        // Only the last part of the path is made.
        let err = prepare(&LocalFs, &s, false, false, 2, NO_PROGRESS).unwrap_err();
        assert!(matches!(err, DatasetError::NoParent { .. }), "{err}");
        assert!(!tmp.path().join("a").exists());
        fs::create_dir(tmp.path().join("a")).unwrap();
        let l = prepare(&LocalFs, &s, false, false, 2, NO_PROGRESS).unwrap().layout;
        // What a workload leaves: a deleted file, a copy with our naming, foreign names.
        fs::remove_file(l.file_path(0)).unwrap();
        fs::write(l.leaf_path(1).join("f000009"), [1u8; 10]).unwrap();
        let foreign = [l.leaf_path(0).join("notes.txt"), anchor.join("d00/extra"), anchor.join("keep")];
        for f in &foreign {
            fs::write(f, b"x").unwrap();
        }
        let c = cleanup(&LocalFs, &anchor).unwrap();
        assert_eq!((c.files, c.bytes, c.removed_anchor), (8, 7010, false));
        assert_eq!(c.kept, {
            let mut f = foreign.to_vec();
            f.sort();
            f
        });
        let mut left: Vec<PathBuf> = foreign.iter().map(|f| f.strip_prefix(&anchor).unwrap().into()).collect();
        left.sort();
        assert_eq!(walk(&anchor), left);
        assert!(!anchor.join("d01").exists() && !anchor.join(MARKER).exists());

        // A clean tree goes with the anchor ioscope made, not its parent.
        for depth in [0, 2] {
            let anchor = tmp.path().join(format!("b{depth}/tree"));
            fs::create_dir(anchor.parent().unwrap()).unwrap();
            prepare(&LocalFs, &Dataset { dir: anchor.clone(), depth, ..s.clone() }, false, false, 2, NO_PROGRESS)
                .unwrap();
            let c = cleanup(&LocalFs, &anchor).unwrap();
            assert_eq!((c.files, c.removed_anchor), (2 * 2u64.pow(depth), true));
            assert!(!anchor.exists() && anchor.parent().unwrap().exists());
        }
    }
}
