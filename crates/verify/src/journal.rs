//! The journal (`--journal FILE`): the acknowledged and durable floor of every verified
//! block of a run, in a file that outlives a crash of ioscope, of its host or of the
//! target, so that `ioscope verify --journal FILE` can re-read every block afterwards.
//!
//! Layout (little-endian):
//!
//! | bytes                 | field                                                         |
//! |-----------------------|---------------------------------------------------------------|
//! | 0..8                  | magic `IOSCJRNL`                                              |
//! | 8..12                 | version (1)                                                   |
//! | 12..16                | length of the description (JSON) at byte 64                   |
//! | 16..24                | run id (the one in every block header the run writes)         |
//! | 24..28                | block length                                                  |
//! | 28..32                | state: 1 the run is writing, 2 the run closed its journal     |
//! | 32..40                | table offset (a multiple of 4096)                             |
//! | 40..48                | table entries (blocks)                                        |
//! | 48..56                | XXH3-64 of the description                                    |
//! | 56..64                | reserved, zero                                                |
//! | 64..                  | description: files (id, path, size), engine, target, workload |
//! | table offset..        | per block, at index first block of its file + block: acknowledged floor (u32), durable floor (u32) |
//!
//! The table is mapped `MAP_SHARED`: a store into it is in the file's page cache at once,
//! so a kill of ioscope (SIGKILL included) loses none. A thread writes the mapping back to
//! stable storage when it is dirty, at most every [`COMMIT_INTERVAL`] (group commit: one
//! msync covers every store made before it started); [`Journal::barrier`] starts one at
//! once and waits for a sync that started after the call,
//! so a durable floor is on stable storage before the core counts its durability point
//! done. See docs/verify.md, "Journal", for the guarantees.
//!
//! Every floor only rises, and a durable floor is never above the acknowledged one (a
//! durable store raises the acknowledged floor first), so a reader can refuse a journal that
//! says otherwise as damaged, as it refuses a state other than writing or closed.

use crate::sink::Sink;
use memmap2::MmapRaw;
use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub const MAGIC: [u8; 8] = *b"IOSCJRNL";
pub const VERSION: u32 = 1;
const HEADER_LEN: usize = 64;
const ENTRY_LEN: u64 = 8;
const PAGE: u64 = 4096;
const STATE_WRITING: u32 = 1;
const STATE_CLOSED: u32 = 2;
/// The longest description a journal may carry (the workload text is most of it).
const MAX_DESCRIPTION: u32 = 16 << 20;
/// How long the sync thread sleeps when nothing is dirty and nobody waits.
pub const IDLE_POLL: Duration = Duration::from_millis(5);
/// The most often acknowledged floors alone are written back (a barrier does not wait for
/// it). Each write-back write-protects the table's pages, so the next store into each page
/// takes a page fault (and may wait for that page's write to the device): writing back
/// continuously cost a page-cache run most of its speed.
pub const COMMIT_INTERVAL: Duration = Duration::from_millis(50);

/// One file of the run, as the journal names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalFile {
    /// The file id in the block headers.
    pub id: u32,
    /// The path the run used (absolute for posix and uring; under the export for nfs).
    pub path: String,
    /// Bytes; the table holds `size / block_len` blocks of it.
    pub size: u64,
}

/// What the journal says of its run, enough for `ioscope verify` to reopen the target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Description {
    pub run_id: u64,
    pub block_len: u32,
    pub files: Vec<JournalFile>,
    /// The engine's name (posix, uring, nfs).
    pub engine: String,
    /// The target as the workload names it (a directory, or an nfs:// URL).
    pub target: String,
    /// The workload, in its canonical text.
    pub workload: String,
}

impl Description {
    /// Index of each file's first block in the table, and one past the last.
    fn first(&self) -> Vec<u64> {
        let len = u64::from(self.block_len.max(1));
        let mut first = Vec::with_capacity(self.files.len() + 1);
        let mut total = 0u64;
        for f in &self.files {
            first.push(total);
            total = total.saturating_add(f.size / len);
        }
        first.push(total);
        first
    }
}

/// Why a journal cannot be created or read.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not an ioscope journal ({why})")]
    NotAJournal { path: PathBuf, why: String },
    #[error("{path}: not a regular file ({kind}): expected an ioscope journal")]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{path}: a damaged journal: {why}")]
    Damaged { path: PathBuf, why: String },
    #[error("{path}: the journal of another run ({run_id:016x}) is there; remove it or choose another file")]
    OtherRun { path: PathBuf, run_id: u64 },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> JournalError + '_ {
    move |source| JournalError::Io { path: path.to_path_buf(), source }
}

/// A journal being written by a run. It is the run's [`Sink`].
pub struct Journal {
    inner: Arc<Inner>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

struct Inner {
    map: MmapRaw,
    table_offset: usize,
    first: Vec<u64>,
    /// A store since the last sync started.
    dirty: AtomicBool,
    sync: Mutex<SyncState>,
    cv: Condvar,
    /// The first error of a sync, if any: the guarantee no longer holds.
    failed: Mutex<Option<String>>,
}

#[derive(Default)]
struct SyncState {
    /// Syncs started and finished (each numbered 1, 2, ...).
    started: u64,
    finished: u64,
    /// The sync number a barrier waits for.
    wanted: u64,
    stop: bool,
}

impl Journal {
    /// Creates the journal at `path` for the run `d` describes, before any I/O of the run.
    /// A file already there is refused, whatever it is (the journal of another run, or
    /// not a journal): nothing is overwritten.
    pub fn create(path: &Path, d: &Description) -> Result<Journal, JournalError> {
        if path.exists() {
            return Err(match read_header(path) {
                Ok((run_id, _)) => JournalError::OtherRun { path: path.to_path_buf(), run_id },
                Err(e) => e,
            });
        }
        let description = serde_json::to_vec(d).map_err(|e| io(path)(std::io::Error::other(e)))?;
        if description.len() as u64 > u64::from(MAX_DESCRIPTION) {
            return Err(io(path)(std::io::Error::other("the run's description is too long for a journal")));
        }
        let first = d.first();
        let entries = *first.last().unwrap_or(&0);
        let table_offset = (HEADER_LEN as u64 + description.len() as u64).div_ceil(PAGE) * PAGE;
        let len = table_offset + entries * ENTRY_LEN;
        let mut head = vec![0u8; HEADER_LEN];
        head[0..8].copy_from_slice(&MAGIC);
        head[8..12].copy_from_slice(&VERSION.to_le_bytes());
        head[12..16].copy_from_slice(&(description.len() as u32).to_le_bytes());
        head[16..24].copy_from_slice(&d.run_id.to_le_bytes());
        head[24..28].copy_from_slice(&d.block_len.to_le_bytes());
        head[28..32].copy_from_slice(&STATE_WRITING.to_le_bytes());
        head[32..40].copy_from_slice(&table_offset.to_le_bytes());
        head[40..48].copy_from_slice(&entries.to_le_bytes());
        head[48..56].copy_from_slice(&xxhash_rust::xxh3::xxh3_64(&description).to_le_bytes());
        let mut file = OpenOptions::new().read(true).write(true).create_new(true).open(path).map_err(io(path))?;
        let made = (|| {
            file.write_all(&head)?;
            file.write_all(&description)?;
            file.set_len(len)?;
            file.sync_all()?;
            // The file's name must survive a crash of the host too.
            if let Some(dir) = path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p }) {
                File::open(dir)?.sync_all()?;
            }
            Ok::<_, std::io::Error>(())
        })();
        if let Err(e) = made {
            let _ = std::fs::remove_file(path);
            return Err(io(path)(e));
        }
        let map = MmapRaw::map_raw(&file).map_err(io(path))?;
        let inner = Arc::new(Inner {
            map,
            table_offset: table_offset as usize,
            first,
            dirty: AtomicBool::new(false),
            sync: Mutex::new(SyncState::default()),
            cv: Condvar::new(),
            failed: Mutex::new(None),
        });
        let worker = inner.clone();
        let thread =
            std::thread::Builder::new().name("journal-sync".into()).spawn(move || worker.run()).map_err(io(path))?;
        Ok(Journal { inner, thread: Mutex::new(Some(thread)) })
    }

    /// The first failure to write the journal back to stable storage, if any.
    pub fn failure(&self) -> Option<String> {
        self.inner.failed.lock().clone()
    }

    /// Stops the sync thread, writes everything back and marks the journal closed.
    /// Called once the run's I/O has ended; a second call does nothing.
    pub fn close(&self) -> Result<(), String> {
        let Some(thread) = self.thread.lock().take() else { return Ok(()) };
        self.inner.sync.lock().stop = true;
        self.inner.cv.notify_all();
        let _ = thread.join();
        self.inner.flush();
        // SAFETY: bytes 28..32 of the mapping are the header's state field, 4-aligned.
        unsafe { &*(self.inner.map.as_mut_ptr().add(28) as *const AtomicU32) }
            .store(STATE_CLOSED.to_le(), Ordering::Release);
        self.inner.flush();
        self.failure().map_or(Ok(()), Err)
    }

    fn entry(&self, file: u32, block: u64) -> Option<(&AtomicU32, &AtomicU32)> {
        let inner = &*self.inner;
        let (start, end) = (inner.first.get(file as usize)?, inner.first.get(file as usize + 1)?);
        if block >= end - start {
            return None;
        }
        let at = inner.table_offset + ((start + block) * ENTRY_LEN) as usize;
        if at + ENTRY_LEN as usize > inner.map.len() {
            return None;
        }
        // SAFETY: `at` is inside the mapping (checked above) and 8-aligned (the table starts
        // on a page and entries are 8 bytes); the mapping lives as long as `self`, and the
        // table is only ever accessed through these atomics.
        unsafe {
            let p = inner.map.as_mut_ptr().add(at);
            Some((&*(p as *const AtomicU32), &*(p.add(4) as *const AtomicU32)))
        }
    }
}

impl Inner {
    fn flush(&self) {
        if let Err(e) = self.map.flush() {
            self.failed.lock().get_or_insert_with(|| format!("writing the journal back failed: {e}"));
        }
    }

    /// The group commit: syncs whenever a store or a barrier asks for it.
    fn run(&self) {
        let interval = COMMIT_INTERVAL;
        let mut last = std::time::Instant::now();
        loop {
            let number = {
                let mut s = self.sync.lock();
                loop {
                    // A barrier waits: sync now.
                    if s.wanted > s.started {
                        break;
                    }
                    let dirty = self.dirty.load(Ordering::SeqCst);
                    let due = last.elapsed() >= interval;
                    if dirty && (due || s.stop) {
                        break;
                    }
                    if s.stop {
                        return;
                    }
                    let wait = if dirty { interval.saturating_sub(last.elapsed()) } else { IDLE_POLL };
                    self.cv.wait_for(&mut s, wait.max(Duration::from_micros(100)));
                }
                s.started += 1;
                s.started
            };
            last = std::time::Instant::now();
            // Every store made before this point is covered by the sync below. The fence
            // pairs with the one in `mark_dirty`: either a store's writer sees `dirty`
            // cleared (and sets it again, for the next sync) or this sync sees its store.
            self.dirty.store(false, Ordering::SeqCst);
            std::sync::atomic::fence(Ordering::SeqCst);
            self.flush();
            self.sync.lock().finished = number;
            self.cv.notify_all();
        }
    }
}

impl Journal {
    /// After a store into the table: the next sync must cover it. Written only when not
    /// set already, so that workers do not fight over the flag's cache line.
    fn mark_dirty(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if !self.inner.dirty.load(Ordering::SeqCst) {
            self.inner.dirty.store(true, Ordering::SeqCst);
        }
    }
}

/// Raises a little-endian floor in the table to `generation`, never lowers it: two
/// workers' stores of one block may arrive in either order.
fn raise(floor: &AtomicU32, generation: u64) {
    let g = generation.min(u64::from(u32::MAX)) as u32;
    let _ = floor.fetch_update(Ordering::Release, Ordering::Acquire, |v| (u32::from_le(v) < g).then_some(g.to_le()));
}

impl Sink for Journal {
    fn floor(&self, file: u32, block: u64, generation: u64) {
        if let Some((floor, _)) = self.entry(file, block) {
            raise(floor, generation);
            self.mark_dirty();
        }
    }

    fn durable(&self, file: u32, block: u64, generation: u64) {
        if let Some((floor, durable)) = self.entry(file, block) {
            // A durable write was acknowledged: its floor may not have been stored yet (the
            // worker that completed it stores it outside the block's lock), and a kill in
            // between must not leave a durable floor above the acknowledged one.
            raise(floor, generation);
            raise(durable, generation);
            self.mark_dirty();
        }
    }

    fn barrier(&self) {
        let mut s = self.inner.sync.lock();
        if s.stop {
            drop(s);
            self.inner.flush();
            return;
        }
        let need = s.started + 1;
        s.wanted = s.wanted.max(need);
        self.inner.cv.notify_all();
        while s.finished < need && !s.stop {
            self.inner.cv.wait(&mut s);
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// A journal read back: its run, and each block's floors.
#[derive(Debug)]
pub struct Contents {
    pub description: Description,
    /// The run closed its journal (it ended, well or not, without being killed).
    pub closed: bool,
    first: Vec<u64>,
    /// (acknowledged floor, durable floor) per block.
    entries: Vec<(u32, u32)>,
}

impl Contents {
    /// The floors of one block: (acknowledged, durable); None outside the files.
    pub fn floors(&self, file: u32, block: u64) -> Option<(u64, u64)> {
        let (start, end) = (self.first.get(file as usize)?, self.first.get(file as usize + 1)?);
        if block >= end - start {
            return None;
        }
        self.entries.get((start + block) as usize).map(|&(f, d)| (u64::from(f), u64::from(d)))
    }

    /// Blocks of one file in the table.
    pub fn blocks_of(&self, file: u32) -> u64 {
        match (self.first.get(file as usize), self.first.get(file as usize + 1)) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        }
    }
}

fn not_a_journal(path: &Path, why: impl Into<String>) -> JournalError {
    JournalError::NotAJournal { path: path.to_path_buf(), why: why.into() }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).and_then(|s| s.try_into().ok()).map(u32::from_le_bytes).unwrap_or(0)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8).and_then(|s| s.try_into().ok()).map(u64::from_le_bytes).unwrap_or(0)
}

/// The run id and version in a journal's header.
fn read_header(path: &Path) -> Result<(u64, u32), JournalError> {
    use std::io::Read as _;
    let mut head = [0u8; HEADER_LEN];
    let mut f = open(path)?;
    f.read_exact(&mut head).map_err(|_| not_a_journal(path, "shorter than a journal's header"))?;
    if head[0..8] != MAGIC {
        return Err(not_a_journal(path, "no journal magic at its start"));
    }
    Ok((u64_at(&head, 16), u32_at(&head, 8)))
}

/// Opens a journal to read: a regular file (a FIFO is refused, not waited on).
fn open(path: &Path) -> Result<File, JournalError> {
    use ioscope_workload::readfile::{self, FileError};
    readfile::open(path, false).map_err(|e| match e {
        FileError::Io(source) => JournalError::Io { path: path.to_path_buf(), source },
        FileError::NotRegular(kind) => JournalError::NotAFile { path: path.to_path_buf(), kind },
        other => not_a_journal(path, other.to_string()),
    })
}

/// Reads a journal: its description and every block's floors. Whatever the file holds,
/// this returns an error naming what is wrong rather than trusting it. What is read is
/// bounded by the file: the header, a description of at most [`MAX_DESCRIPTION`], and a
/// table that must lie within the file's length before it is read.
pub fn read(path: &Path) -> Result<Contents, JournalError> {
    use std::io::{Read as _, Seek as _};
    let mut file = open(path)?;
    let file_len = file.metadata().map_err(io(path))?.len();
    let mut head = [0u8; HEADER_LEN];
    file.read_exact(&mut head).map_err(|_| not_a_journal(path, "shorter than a journal's header"))?;
    if head[0..8] != MAGIC {
        return Err(not_a_journal(path, "no journal magic at its start"));
    }
    let version = u32_at(&head, 8);
    if version != VERSION {
        return Err(not_a_journal(path, format!("version {version}; this ioscope reads version {VERSION}")));
    }
    let state = u32_at(&head, 28);
    if state != STATE_WRITING && state != STATE_CLOSED {
        return Err(JournalError::Damaged {
            path: path.to_path_buf(),
            why: format!("state {state} (a run writes {STATE_WRITING}, writing, or {STATE_CLOSED}, closed)"),
        });
    }
    let len = u32_at(&head, 12);
    if len > MAX_DESCRIPTION {
        return Err(not_a_journal(path, format!("a description of {len} bytes")));
    }
    let mut text = Vec::new();
    (&mut file).take(u64::from(len)).read_to_end(&mut text).map_err(io(path))?;
    if text.len() != len as usize {
        return Err(not_a_journal(path, "cut short in its description"));
    }
    if xxhash_rust::xxh3::xxh3_64(&text) != u64_at(&head, 48) {
        return Err(not_a_journal(path, "its description does not match its checksum"));
    }
    let description: Description = serde_json::from_slice(&text)
        .map_err(|e| not_a_journal(path, format!("its description does not read: {e}")))?;
    if description.run_id != u64_at(&head, 16) || description.block_len != u32_at(&head, 24) {
        return Err(not_a_journal(path, "its header and description disagree"));
    }
    if description.block_len < crate::MIN_BLOCK_LEN {
        return Err(not_a_journal(path, format!("a block length of {} bytes", description.block_len)));
    }
    let first = description.first();
    let entries = *first.last().unwrap_or(&0);
    let table_offset = u64_at(&head, 32);
    if entries != u64_at(&head, 40) || table_offset % PAGE != 0 || table_offset < (HEADER_LEN as u64 + u64::from(len)) {
        return Err(not_a_journal(path, "its table does not match its files"));
    }
    let cut_short =
        || not_a_journal(path, format!("cut short: its table of {entries} blocks ends past the file's end"));
    let table_len = entries.checked_mul(ENTRY_LEN).ok_or_else(cut_short)?;
    if table_offset.checked_add(table_len).is_none_or(|end| end > file_len) {
        return Err(cut_short());
    }
    file.seek(std::io::SeekFrom::Start(table_offset)).map_err(io(path))?;
    let mut table = Vec::new();
    file.take(table_len).read_to_end(&mut table).map_err(io(path))?;
    if table.len() as u64 != table_len {
        return Err(cut_short());
    }
    let entries: Vec<(u32, u32)> =
        table.chunks_exact(ENTRY_LEN as usize).map(|e| (u32_at(e, 0), u32_at(e, 4))).collect();
    check_floors(path, &description, &first, &entries)?;
    Ok(Contents { description, closed: state == STATE_CLOSED, first, entries })
}

/// A durable floor above the acknowledged one (0 included) is never written (see the
/// module's docs): the journal is damaged, and the first such entry is named.
fn check_floors(path: &Path, d: &Description, first: &[u64], entries: &[(u32, u32)]) -> Result<(), JournalError> {
    let mut bad = entries.iter().enumerate().filter(|(_, (ack, durable))| durable > ack);
    let Some((at, &(ack, durable))) = bad.next() else { return Ok(()) };
    let more = bad.count();
    let at = at as u64;
    let file = first.partition_point(|&f| f <= at).saturating_sub(1);
    let (name, block) = match (d.files.get(file), first.get(file)) {
        (Some(f), Some(&start)) => (f.path.chars().take(200).collect::<String>(), at - start),
        _ => ("?".to_string(), at),
    };
    let name = name.escape_debug();
    let also = if more > 0 { format!(" ({more} more entries like it)") } else { String::new() };
    Err(JournalError::Damaged {
        path: path.to_path_buf(),
        why: format!(
            "{name} block {block}: a durable floor of generation {durable} above its acknowledged floor of {ack}, which a run never writes{also}"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn description() -> Description {
        Description {
            run_id: 0x1234,
            block_len: 4096,
            files: vec![
                JournalFile { id: 0, path: "/t/f0".into(), size: 4 * 4096 },
                JournalFile { id: 1, path: "/t/f1".into(), size: 2 * 4096 + 7 },
            ],
            engine: "posix".into(),
            target: "/t".into(),
            workload: "[target]\ndir = \"/t\"\n".into(),
        }
    }

    #[test]
    fn every_floor_stored_is_read_back_at_its_file_and_block() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let j = Journal::create(&path, &description()).unwrap();
        j.floor(0, 3, 7);
        j.durable(0, 3, 5);
        j.floor(1, 0, 2);
        j.floor(1, 2, 9); // past the file's last whole block: ignored, not indexed
        j.floor(5, 0, 9); // no such file
        j.barrier();
        let c = read(&path).unwrap();
        assert_eq!(c.description, description());
        assert!(!c.closed, "the run has not closed it yet");
        assert_eq!(c.floors(0, 3), Some((7, 5)));
        assert_eq!(c.floors(1, 0), Some((2, 0)));
        assert_eq!(c.floors(0, 0), Some((0, 0)));
        assert_eq!((c.blocks_of(1), c.floors(1, 2)), (2, None));
        j.close().unwrap();
        assert!(read(&path).unwrap().closed);
    }

    #[test]
    fn a_store_is_in_the_file_before_any_sync_so_a_killed_run_loses_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let j = Journal::create(&path, &description()).unwrap();
        // Stop the sync thread first: what a reader sees now came through the page cache.
        j.inner.sync.lock().stop = true;
        j.inner.cv.notify_all();
        let _ = j.thread.lock().take().map(|t| t.join());
        j.floor(0, 1, 3);
        assert_eq!(read(&path).unwrap().floors(0, 1), Some((3, 0)));
        std::mem::forget(j); // as a SIGKILL would: no close, no flush
    }

    #[test]
    fn a_barrier_waits_for_a_sync_that_started_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::create(&dir.path().join("j"), &description()).unwrap();
        for g in 1..50 {
            j.durable(0, 0, g);
            let before = j.inner.sync.lock().started;
            j.barrier();
            let s = j.inner.sync.lock();
            assert!(s.finished > before, "barrier returned before a sync that started after it finished");
        }
        assert_eq!(j.failure(), None);
    }

    #[test]
    fn an_existing_file_is_refused_and_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        drop(Journal::create(&path, &description()).unwrap());
        let again = Journal::create(&path, &Description { run_id: 99, ..description() });
        assert!(matches!(again, Err(JournalError::OtherRun { run_id: 0x1234, .. })), "{:?}", again.err());
        let other = dir.path().join("notes.txt");
        std::fs::write(&other, "mine").unwrap();
        let e = Journal::create(&other, &description()).err().unwrap().to_string();
        assert!(e.contains("not an ioscope journal"), "{e}");
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "mine");
    }

    #[test]
    fn a_damaged_journal_is_refused_with_what_is_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        drop(Journal::create(&path, &description()).unwrap());
        let good = std::fs::read(&path).unwrap();
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("shorter than", good[..10].to_vec()),
            ("cut short", good[..good.len() - 1].to_vec()),
            ("checksum", {
                let mut b = good.clone();
                b[HEADER_LEN + 3] ^= 1;
                b
            }),
            ("version", {
                let mut b = good.clone();
                b[8] = 9;
                b
            }),
            ("description of", {
                let mut b = good.clone();
                b[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
                b
            }),
        ];
        for (want, bytes) in cases {
            std::fs::write(&path, &bytes).unwrap();
            let e = read(&path).unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    /// The journal at `path` with its bytes changed by `edit`.
    fn damaged(path: &Path, edit: impl Fn(&mut Vec<u8>)) -> String {
        let mut bytes = std::fs::read(path).unwrap();
        edit(&mut bytes);
        let damaged = path.with_extension("damaged");
        std::fs::write(&damaged, &bytes).unwrap();
        read(&damaged).unwrap_err().to_string()
    }

    #[test]
    fn a_journal_state_other_than_writing_or_closed_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        drop(Journal::create(&path, &description()).unwrap());
        for state in [0u32, 3, 99, u32::MAX] {
            let e = damaged(&path, |b| b[28..32].copy_from_slice(&state.to_le_bytes()));
            assert!(e.contains("a damaged journal") && e.contains(&format!("state {state} ")), "{e}");
        }
    }

    #[test]
    fn an_entry_with_a_durable_floor_but_no_acknowledged_floor_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let j = Journal::create(&path, &description()).unwrap();
        j.floor(0, 1, 4);
        j.durable(0, 1, 4);
        drop(j);
        let c = read(&path).unwrap();
        // File 1's block 1 is entry 4 + 1: durable 3, acknowledged 0.
        let at = c.first[1] as usize + 1;
        let table = PAGE as usize;
        let e = damaged(&path, |b| b[table + at * 8 + 4..table + at * 8 + 8].copy_from_slice(&3u32.to_le_bytes()));
        assert!(
            e.contains(
                "a damaged journal: /t/f1 block 1: a durable floor of generation 3 above its acknowledged floor of 0"
            ),
            "{e}"
        );
        // Above a non-zero acknowledged floor too, and every such entry is counted.
        let e = damaged(&path, |b| {
            b[table + 8 + 4..table + 8 + 8].copy_from_slice(&5u32.to_le_bytes());
            b[table + at * 8 + 4..table + at * 8 + 8].copy_from_slice(&3u32.to_le_bytes());
        });
        assert!(
            e.contains("/t/f0 block 1: a durable floor of generation 5 above its acknowledged floor of 4,")
                && e.contains("(1 more entries"),
            "{e}"
        );
    }

    #[test]
    fn a_durable_store_raises_the_acknowledged_floor_and_no_floor_goes_down() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j");
        let j = Journal::create(&path, &description()).unwrap();
        // The worker that acknowledged generation 6 has not stored its floor yet.
        j.durable(0, 2, 6);
        j.floor(0, 2, 6);
        // Two workers' stores arriving out of order.
        j.floor(0, 3, 9);
        j.floor(0, 3, 8);
        j.durable(0, 3, 9);
        j.durable(0, 3, 7);
        j.barrier();
        let c = read(&path).unwrap();
        assert_eq!((c.floors(0, 2), c.floors(0, 3)), (Some((6, 6)), Some((9, 9))));
    }

    #[test]
    fn a_fifo_is_refused_as_a_journal_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let e = read(&fifo).unwrap_err().to_string();
        assert!(e.contains("not a regular file (a FIFO)"), "{e}");
        assert!(Journal::create(&fifo, &description()).err().unwrap().to_string().contains("a FIFO"));
    }
}
