//! The page cache at the start of a run (`cache`, docs/cache.md): after preparation and
//! before the measured run, each of this host's files is made `cold` (its written data
//! synced, its cached pages dropped: fio's `invalidate=1`), `warm` (read once, whole,
//! through the page cache) or left `as-is`. What was done is returned for the results
//! file: the host's configuration keeps it under `cache`, and the summary shows it.
//!
//! Preparation writes in 8 MiB chunks, and on kernels with large folios (ext4 since Linux
//! 6.16) those leave the file's pages in folios of up to 2 MiB; a later 4 KiB buffered
//! write into one walks the whole folio's block buffers, several times slower than into a
//! 4 KiB page (docs/cache.md has the figures). Dropping the pages is what gives every run
//! the same start, whatever preparation or an earlier run left.

use ioscope_workload::{CacheMode, Plan};
use serde::Serialize;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Instant;

/// Bytes read at a time to warm a file.
const WARM_CHUNK: usize = 1 << 20;
/// Pages looked at per mincore call (1 GiB of 4 KiB pages): bounds the vector it fills.
const MINCORE_WINDOW: usize = 1 << 18;

/// What the cache step did on one host, as recorded (`system.<host>.cache`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CacheDone {
    /// The plan's choice: cold, warm or as-is.
    pub mode: String,
    /// Files the step went over (the working set, the dataset's working files, the device).
    pub files: u64,
    /// Files whose data was synced and pages dropped (cold).
    pub dropped: u64,
    /// Bytes read through the page cache (warm).
    pub bytes_read: u64,
    /// Bytes of the files still in the page cache after the step, where it could be
    /// measured (mincore over each regular file); None when not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resident_bytes_after: Option<u64>,
    /// The files' size in bytes.
    pub bytes: u64,
    /// Time the step took (preparation: not part of any measured second).
    pub ns: u64,
    /// Why nothing was done, or what could not be (a file that failed, an engine with no
    /// client cache); None when the step did what it says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl CacheDone {
    /// As stored in the host's configuration (read back by ioscope_report::cache).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// The cache step for `plan` on this host's `files` (the working set or block device), or
/// the dataset's working files. Never fails the run: a file it cannot sync, drop or read is
/// named in the note (the run then starts from a cache state not fully as chosen, and says so).
pub fn apply(plan: &Plan, files: &[PathBuf], dataset: Option<&crate::dataset::Layout>) -> CacheDone {
    let started = Instant::now();
    let mut done = CacheDone { mode: plan.cache.name().to_string(), ..CacheDone::default() };
    let caps = plan.engine.spec().caps;
    if !caps.does_io {
        done.note = Some(format!("engine {} does no I/O: nothing to do", plan.engine.name()));
        return done;
    }
    if !caps.local_files() {
        // The files are on a server reached through ioscope's own client: no client cache.
        done.note = Some(match plan.cache {
            CacheMode::AsIs => format!("engine {}: no client cache", plan.engine.name()),
            _ => format!(
                "engine {} keeps no client cache: nothing dropped on this host (the server's cache is not touched)",
                plan.engine.name()
            ),
        });
        return done;
    }
    let paths: Vec<PathBuf> = match dataset {
        // The dataset's working set, and a flow's file sets.
        Some(d) => {
            let sets = plan.filesets.iter().map(crate::dataset::Layout::new);
            let mut paths: Vec<PathBuf> = (0..d.working_files()).map(|i| d.file_path(i)).collect();
            sets.for_each(|l| paths.extend((0..l.working_files()).map(|i| l.file_path(i))));
            paths
        }
        None => files.to_vec(),
    };
    done.files = paths.len() as u64;
    let mut failed: Vec<String> = Vec::new();
    let mut missing = 0u64;
    let mut resident = Some(0u64);
    for path in &paths {
        let file = match File::open(path) {
            Ok(f) => f,
            // A dataset file a file workload removed or has yet to create: nothing cached.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && dataset.is_some() => {
                missing += 1;
                continue;
            }
            Err(e) => {
                failed.push(format!("{}: {e}", path.display()));
                resident = None;
                continue;
            }
        };
        let len = file_len(&file).unwrap_or(0);
        done.bytes = done.bytes.saturating_add(len);
        let step = match plan.cache {
            CacheMode::Cold => drop_pages(&file).map(|()| done.dropped += 1),
            CacheMode::Warm => read_whole(&file).map(|n| done.bytes_read = done.bytes_read.saturating_add(n)),
            CacheMode::AsIs => Ok(()),
        };
        if let Err(e) = step {
            failed.push(format!("{}: {e}", path.display()));
        }
        resident = match (resident, resident_bytes(&file, len)) {
            (Some(r), Some(n)) => Some(r.saturating_add(n)),
            _ => None,
        };
    }
    done.resident_bytes_after = resident;
    let mut notes = Vec::new();
    if missing > 0 {
        notes.push(format!("{missing} dataset file(s) absent"));
    }
    if !failed.is_empty() {
        let more = failed.len().saturating_sub(3);
        let first: Vec<&str> = failed.iter().take(3).map(String::as_str).collect();
        let more = if more > 0 { format!("; and {more} more") } else { String::new() };
        notes.push(format!("{} file(s) not made {}: {}{more}", failed.len(), plan.cache.name(), first.join("; ")));
    }
    done.note = (!notes.is_empty()).then(|| notes.join("; "));
    done.ns = started.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
    done
}

/// A regular file's length, or a block device's size.
fn file_len(file: &File) -> std::io::Result<u64> {
    use std::os::unix::fs::FileTypeExt;
    let meta = file.metadata()?;
    if meta.file_type().is_block_device() {
        let mut f = file;
        return std::io::Seek::seek(&mut f, std::io::SeekFrom::End(0));
    }
    Ok(meta.len())
}

/// Written data to the device (a dirty page is never dropped), then every cached page of
/// the file dropped, as fio's invalidate does. On a block device's fd the same two calls
/// write back and drop the device's own cache.
fn drop_pages(file: &File) -> std::io::Result<()> {
    rustix::fs::fdatasync(file)?;
    rustix::fs::fadvise(file, 0, None, rustix::fs::Advice::DontNeed)?;
    Ok(())
}

/// Reads the file once, whole, through the page cache; the bytes read.
fn read_whole(file: &File) -> std::io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; WARM_CHUNK];
    let mut at = 0u64;
    loop {
        match file.read_at(&mut buf, at) {
            Ok(0) => return Ok(at),
            Ok(n) => at = at.saturating_add(n as u64),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Bytes of a regular file in the page cache (mincore over a read-only mapping, a window
/// at a time); None where it cannot be told (not a regular file, a mapping refused).
pub fn resident_bytes(file: &File, len: u64) -> Option<u64> {
    let page = page_size_if_regular(file)?;
    let mut resident = 0u64;
    let mut at = 0u64;
    let mut vec = Vec::new();
    while at < len {
        let bytes = (len - at).min(MINCORE_WINDOW as u64 * page);
        mincore(file, at, bytes, page, &mut vec)?;
        let n = vec.iter().filter(|b| *b & 1 == 1).count() as u64;
        resident = resident.saturating_add((n * page).min(bytes));
        at += bytes;
    }
    Some(resident)
}

/// Which pages of `offset..offset + len` of a regular file are in the page cache (one flag
/// per page; `offset` a multiple of the page size, `len` at most 1 GiB); None where it
/// cannot be told.
pub fn resident_pages(file: &File, offset: u64, len: u64) -> Option<Vec<bool>> {
    let page = page_size_if_regular(file)?;
    if offset % page != 0 || len > MINCORE_WINDOW as u64 * page {
        return None;
    }
    let mut vec = Vec::new();
    mincore(file, offset, len, page, &mut vec)?;
    Some(vec.iter().map(|b| *b & 1 == 1).collect())
}

/// Drops the pages of `offset..offset + len` from the page cache (those not dirty).
pub fn drop_range(file: &File, offset: u64, len: u64) {
    if let Some(len) = std::num::NonZeroU64::new(len) {
        let _ = rustix::fs::fadvise(file, offset, Some(len), rustix::fs::Advice::DontNeed);
    }
}

/// The page size, for a regular file (mincore tells nothing of other files).
fn page_size_if_regular(file: &File) -> Option<u64> {
    if !file.metadata().ok()?.file_type().is_file() {
        return None;
    }
    // SAFETY: sysconf reads a constant of the system.
    u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok().filter(|p| *p > 0)
}

/// mincore over `bytes` bytes of `file` from `at` (a multiple of `page`) into `vec`, one
/// byte per page.
fn mincore(file: &File, at: u64, bytes: u64, page: u64, vec: &mut Vec<u8>) -> Option<()> {
    let pages = bytes.div_ceil(page) as usize;
    // SAFETY: a fresh shared read-only mapping of the file, unmapped below; nothing
    // reads through it (mincore only asks which of its pages are resident).
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes as usize,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            at as libc::off_t,
        )
    };
    if addr == libc::MAP_FAILED {
        return None;
    }
    vec.clear();
    vec.resize(pages, 0u8);
    // SAFETY: addr maps `bytes` bytes; vec holds one byte per page of them.
    let rc = unsafe { libc::mincore(addr, bytes as usize, vec.as_mut_ptr()) };
    // SAFETY: the mapping made above, of that length.
    unsafe { libc::munmap(addr, bytes as usize) };
    (rc == 0).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_drops_a_written_files_pages_and_warm_reads_it_whole() {
        // Wherever the test's directory is: on tmpfs pages cannot be dropped, which the
        // record then says (resident after); on a disk file system they are gone.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ioscope.0.dat");
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        let files = vec![path.clone()];
        let warm = crate::test_plan(&format!("dir = '{}'\nsize = '1m'\ncache = 'warm'", dir.path().display()));
        let w = apply(&warm, &files, None);
        assert_eq!(
            (w.mode.as_str(), w.files, w.bytes_read, w.bytes, w.note.as_deref()),
            ("warm", 1, 1 << 20, 1 << 20, None)
        );
        assert_eq!(w.resident_bytes_after, Some(1 << 20), "read whole, so all of it is cached");
        let cold = crate::test_plan(&format!("dir = '{}'\nsize = '1m'", dir.path().display()));
        let c = apply(&cold, &files, None);
        assert_eq!((c.mode.as_str(), c.files, c.dropped, c.bytes_read, c.note.as_deref()), ("cold", 1, 1, 0, None));
        assert!(c.resident_bytes_after.is_some(), "{c:?}");
        assert_eq!(c.to_json()["mode"], "cold");
    }

    #[test]
    fn a_file_that_cannot_be_opened_is_named_and_the_step_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("ioscope.0.dat");
        std::fs::write(&ok, vec![1u8; 8192]).unwrap();
        let gone = dir.path().join("ioscope.1.dat");
        let plan = crate::test_plan(&format!("dir = '{}'\nsize = '16k'\nfiles = 2", dir.path().display()));
        let done = apply(&plan, &[gone.clone(), ok], None);
        assert_eq!((done.files, done.dropped), (2, 1));
        let note = done.note.unwrap();
        assert!(note.starts_with("1 file(s) not made cold: ") && note.contains(&gone.display().to_string()), "{note}");
    }
}
