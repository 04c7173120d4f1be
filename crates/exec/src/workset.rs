//! The working set: the files a run reads and writes. ioscope creates them itself
//! (filled in parallel with non-zero, incompressible data), records them in a marker
//! file in the directory, reuses them when the layout matches, never writes into files
//! it did not create unless forced, and removes only its own files on cleanup.

use ioscope_engine::buffers::fill_random;
use ioscope_workload::Plan;
use serde::{Deserialize, Serialize};
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Name of the marker file that says "ioscope created these files".
pub const MARKER: &str = ".ioscope-workset.json";

#[derive(Debug, thiserror::Error)]
pub enum WorksetError {
    /// The plan would write into data ioscope did not create.
    #[error("{path}: {reason}; ioscope only writes into files it created (listed in {marker}). Pass --force to write into it anyway, or choose another --dir", marker = MARKER)]
    NotOurs { path: PathBuf, reason: String },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> WorksetError + '_ {
    move |source| WorksetError::Io { path: path.to_path_buf(), source }
}

#[derive(Serialize, Deserialize, Default, Debug, Clone, PartialEq)]
struct Marker {
    created_by: String,
    /// The directory did not exist before ioscope made it (cleanup may remove it).
    created_dir: bool,
    files: Vec<MarkerFile>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
struct MarkerFile {
    name: String,
    size_bytes: u64,
    /// Fully written with data.
    complete: bool,
}

/// What has to happen before the run, decided without writing anything.
#[derive(Debug)]
pub struct Layout {
    pub dir: PathBuf,
    pub files: Vec<PathBuf>,
    pub file_size_bytes: u64,
    /// Indexes of files that must be (re)written before the run.
    pub to_fill: Vec<usize>,
    dir_exists: bool,
    marker: Marker,
}

impl Layout {
    pub fn bytes_to_fill(&self) -> u64 {
        self.to_fill.len() as u64 * self.file_size_bytes
    }
}

fn file_name(i: u32) -> String {
    format!("ioscope.{i}.dat")
}

fn read_marker(dir: &Path) -> Option<Marker> {
    let text = fs::read_to_string(dir.join(MARKER)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Checks the directory against the plan. Writes nothing.
pub fn check(plan: &Plan) -> Result<Layout, WorksetError> {
    let dir = plan.dir.clone();
    let dir_exists = dir.exists();
    if dir_exists && !dir.is_dir() {
        return Err(WorksetError::Io { path: dir, source: std::io::Error::other("not a directory") });
    }
    let marker =
        read_marker(&dir).unwrap_or(Marker { created_by: "ioscope".into(), created_dir: !dir_exists, files: vec![] });
    let size = plan.file_size_bytes();
    let mut files = Vec::new();
    let mut to_fill = Vec::new();
    for i in 0..plan.files {
        let name = file_name(i);
        let path = dir.join(&name);
        let ours = marker.files.iter().find(|f| f.name == name);
        let existing = fs::metadata(&path).ok();
        match (ours, existing) {
            (Some(f), Some(m)) if f.complete && f.size_bytes == size && m.len() == size => {}
            (Some(_), _) | (None, None) => to_fill.push(i as usize),
            (None, Some(m)) => {
                let reason = if m.len() < size {
                    Some(format!("exists with {} bytes, the plan needs {size} (it would be rewritten)", m.len()))
                } else if plan.writes() {
                    Some("exists and the workload writes".to_string())
                } else {
                    None // reading a file that is large enough does no harm
                };
                if let Some(reason) = reason {
                    if !plan.force {
                        return Err(WorksetError::NotOurs { path, reason });
                    }
                    to_fill.extend((m.len() < size).then_some(i as usize));
                }
            }
        }
        files.push(path);
    }
    Ok(Layout { dir, files, file_size_bytes: size, to_fill, dir_exists, marker })
}

fn write_marker(dir: &Path, marker: &Marker) -> Result<(), WorksetError> {
    let tmp = dir.join(format!("{MARKER}.tmp"));
    let text = serde_json::to_string_pretty(marker).expect("marker serializes");
    fs::write(&tmp, text).map_err(io_err(&tmp))?;
    fs::rename(&tmp, dir.join(MARKER)).map_err(io_err(dir))
}

/// Creates the directory and fills the files that need it, with `threads` writers.
/// `progress` is called with (bytes written, total) now and then.
pub fn prepare(layout: &mut Layout, threads: usize, progress: &(dyn Fn(u64, u64) + Sync)) -> Result<(), WorksetError> {
    if !layout.dir_exists {
        fs::create_dir_all(&layout.dir).map_err(io_err(&layout.dir))?;
        layout.dir_exists = true;
    }
    if layout.to_fill.is_empty() && layout.marker.files.len() >= layout.files.len() {
        return Ok(());
    }
    // Mark the files as ours (incomplete) before writing, so an interrupted fill is still ours.
    for &i in &layout.to_fill {
        let name = file_name(i as u32);
        layout.marker.files.retain(|f| f.name != name);
        layout.marker.files.push(MarkerFile { name, size_bytes: layout.file_size_bytes, complete: false });
    }
    write_marker(&layout.dir, &layout.marker)?;

    // Split every file into 8 MiB chunks and let the writers take chunks in turn.
    const CHUNK: u64 = 8 << 20;
    let size = layout.file_size_bytes;
    let mut opened = Vec::new();
    for &i in &layout.to_fill {
        let path = &layout.files[i];
        let f = OpenOptions::new().create(true).write(true).truncate(true).open(path).map_err(io_err(path))?;
        f.set_len(0).map_err(io_err(path))?;
        opened.push((path.clone(), f));
    }
    let chunks: Vec<(usize, u64)> =
        (0..opened.len()).flat_map(|f| (0..size.div_ceil(CHUNK)).map(move |c| (f, c * CHUNK))).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let written = std::sync::atomic::AtomicU64::new(0);
    let total = layout.bytes_to_fill();
    let first_error = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for w in 0..threads.max(1) {
            let (chunks, next, written, opened, first_error) = (&chunks, &next, &written, &opened, &first_error);
            s.spawn(move || {
                let mut buf = vec![0u8; CHUNK as usize];
                loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&(f, off)) = chunks.get(k) else { break };
                    let len = CHUNK.min(size - off) as usize;
                    fill_random(&mut buf[..len], (w as u64) << 48 ^ k as u64 ^ off);
                    let (path, file): &(PathBuf, File) = &opened[f];
                    if let Err(e) = file.write_all_at(&buf[..len], off) {
                        first_error.lock().unwrap().get_or_insert(WorksetError::Io { path: path.clone(), source: e });
                        break;
                    }
                    let done = written.fetch_add(len as u64, std::sync::atomic::Ordering::Relaxed) + len as u64;
                    progress(done, total);
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().unwrap() {
        return Err(e);
    }
    for (path, f) in &opened {
        f.sync_all().map_err(io_err(path))?;
    }
    for f in layout.marker.files.iter_mut() {
        f.complete = true;
    }
    write_marker(&layout.dir, &layout.marker)?;
    layout.to_fill.clear();
    Ok(())
}

/// What cleanup removed.
#[derive(Debug, Default)]
pub struct Cleaned {
    pub files: usize,
    pub bytes: u64,
    pub removed_dir: bool,
}

/// Removes the files listed in the directory's marker, the marker, and the directory
/// if ioscope created it and it is now empty. Touches nothing else.
pub fn cleanup(dir: &Path) -> Result<Cleaned, WorksetError> {
    let Some(marker) = read_marker(dir) else { return Ok(Cleaned::default()) };
    let mut c = Cleaned::default();
    for f in &marker.files {
        let path = dir.join(&f.name);
        if let Ok(m) = fs::metadata(&path) {
            fs::remove_file(&path).map_err(io_err(&path))?;
            c.files += 1;
            c.bytes += m.len();
        }
    }
    let marker_path = dir.join(MARKER);
    fs::remove_file(&marker_path).map_err(io_err(&marker_path))?;
    if marker.created_dir && fs::remove_dir(dir).is_ok() {
        c.removed_dir = true;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let mut l = check(&p).unwrap();
        assert!(!dir.exists(), "check writes nothing");
        assert_eq!(l.to_fill, vec![0, 1]);
        prepare(&mut l, 2, &|_, _| {}).unwrap();
        let data = fs::read(dir.join("ioscope.0.dat")).unwrap();
        assert_eq!(data.len(), 10 << 20);
        let zeros = data.iter().filter(|b| **b == 0).count();
        assert!(zeros < data.len() / 128, "data is random, not zeros ({zeros} zero bytes)");
        assert_ne!(data[..4096], data[8 << 20..(8 << 20) + 4096], "chunks differ");

        // A matching layout is reused without rewriting.
        assert!(check(&p).unwrap().to_fill.is_empty());
        // A different size is ours to rewrite.
        assert_eq!(check(&plan(&dir, "randwrite", "40m", false)).unwrap().to_fill, vec![0, 1]);

        let other = dir.join("keep.txt");
        fs::write(&other, b"user data").unwrap();
        let c = cleanup(&dir).unwrap();
        assert_eq!((c.files, c.bytes), (2, 20 << 20));
        assert!(!c.removed_dir, "the user's file keeps the directory");
        assert_eq!(fs::read(&other).unwrap(), b"user data");
        assert!(!dir.join(MARKER).exists());
    }

    #[test]
    fn refuses_to_write_into_foreign_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        fs::write(dir.join("ioscope.0.dat"), vec![1u8; 10 << 20]).unwrap();
        fs::write(dir.join("ioscope.1.dat"), vec![1u8; 10 << 20]).unwrap();
        let err = check(&plan(dir, "randwrite", "20m", false)).unwrap_err();
        assert!(matches!(err, WorksetError::NotOurs { .. }), "{err}");
        assert!(err.to_string().contains("--force"));
        // Reading them is harmless, and --force allows writing.
        assert!(check(&plan(dir, "randread", "20m", false)).unwrap().to_fill.is_empty());
        assert!(check(&plan(dir, "randwrite", "20m", true)).is_ok());
        // Too small to read without rewriting: refused too.
        assert!(check(&plan(dir, "randread", "40m", false)).is_err());
        // Nothing was written or removed.
        assert!(!dir.join(MARKER).exists());
        assert_eq!(cleanup(dir).unwrap().files, 0);
        assert!(dir.join("ioscope.0.dat").exists());
    }
}
