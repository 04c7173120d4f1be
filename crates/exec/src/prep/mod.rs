//! Preparation: the data a run needs, made before it starts and removed after it with
//! `--cleanup`. Two shapes share one set of rules:
//! - the working set (`workset.rs`): flat files `ioscope.N.dat` for transfer workloads;
//! - the dataset (`dataset.rs`): a vdbench-style directory tree for file workloads.
//!
//! Both record what ioscope created in a marker file (`marker.rs`), refuse a marker they
//! cannot read (never taken for "no marker": ioscope writes only into data it created,
//! unless `--force`), fill files with random data through one parallel loop that stops at
//! the first error (`parallel.rs`), and go through a [`ioscope_engine::fs::FileSystem`],
//! so a local directory and an NFS export are prepared alike.

pub mod dataset;
pub(crate) mod marker;
pub(crate) mod parallel;
pub mod workset;

pub(crate) use ioscope_workload::layout::mix;

/// What `--cleanup` removed, and what it left because it could not prove ioscope made it.
#[derive(Debug, Default, PartialEq)]
pub struct Removed {
    pub files: u64,
    pub bytes: u64,
    /// "PATH: why", one a file (or tree) left in place.
    pub left: Vec<String>,
}

/// `--cleanup`: removes what the plan's run created (its dataset or working set), and only
/// what its marker and the files themselves prove ioscope made. Nothing for an engine
/// that does no I/O.
pub fn cleanup(plan: &ioscope_workload::Plan) -> Result<Removed, String> {
    if plan.dataset.is_none() && !plan.engine.spec().caps.does_io {
        return Ok(Removed::default());
    }
    // A block device or an existing file: nothing was created on it, nothing is removed.
    let named = crate::blockdev::is_block_device(&plan.dir) || crate::existing::is_existing_file(&plan.dir);
    if plan.dataset.is_none() && named {
        return Ok(Removed::default());
    }
    let (fs, dir) = crate::storage(plan).map_err(|e| e.to_string())?;
    match &plan.dataset {
        Some(d) => {
            // A flow's file sets first: they are directories of the dataset's anchor.
            let mut removed = Removed::default();
            for set in plan.filesets.iter().chain([d]) {
                let c = dataset::cleanup(&*fs, &set.dir).map_err(|e| e.to_string())?;
                removed.files += c.files;
                removed.bytes += c.bytes;
                removed.left.extend(c.left.map(|why| format!("{}: {why}", set.dir.display())));
            }
            Ok(removed)
        }
        None => workset::cleanup(&*fs, &dir).map_err(|e| e.to_string()).map(|c| Removed {
            files: c.files as u64,
            bytes: c.bytes,
            left: c.left.iter().map(|(p, why)| format!("{}: {why}", p.display())).collect(),
        }),
    }
}

/// What a user is told of the files cleanup left: the first few named, with the count.
pub fn left_message(left: &[String]) -> Option<String> {
    let first: Vec<&str> = left.iter().take(5).map(String::as_str).collect();
    let more = left.len().saturating_sub(first.len());
    let more = if more > 0 { format!("; and {more} more") } else { String::new() };
    (!left.is_empty()).then(|| {
        format!(
            "cleanup: left {} entr{} of the marker in place, not provably made by ioscope (remove by hand what is yours to remove): {}{more}",
            left.len(),
            if left.len() == 1 { "y" } else { "ies" },
            first.join("; ")
        )
    })
}

#[cfg(test)]
mod forged;
#[cfg(test)]
pub(crate) mod testfs;

#[cfg(test)]
mod tests {
    use super::testfs::Faulty;
    use super::{dataset, workset};
    use ioscope_engine::fs::LocalFs;
    use std::path::Path;

    /// What a user sees for a refused directory: "PATH: REASON; ...--force...".
    fn assert_refused(err: &str, marker: &Path) {
        let head = format!("{}: unreadable marker (", marker.display());
        assert!(err.starts_with(&head), "{err}");
        assert!(err.contains("--force"), "{err}");
    }

    /// What cleanup says of a marker it cannot use: that it removed nothing, and no advice
    /// to pass --force (which never makes cleanup remove anything).
    fn assert_cleanup_refused(err: &str, marker: &Path) {
        let head = format!("{}: unreadable marker (", marker.display());
        assert!(err.starts_with(&head), "{err}");
        assert!(err.contains("it removed nothing here") && !err.contains("--force"), "{err}");
    }

    #[test]
    fn an_unreadable_marker_is_refused_for_a_working_set_and_a_dataset_alike() {
        let tmp = tempfile::tempdir().unwrap();
        let (ws, ds) = (tmp.path().join("ws"), tmp.path().join("ds"));
        let p = crate::test_plan(&format!("dir = '{}'\nrw = 'randread'\nsize = '1m'\nfiles = 1", ws.display()));
        let d = crate::test_plan(&format!(
            "[dataset]\ndir = '{}'\ndepth = 0\nwidth = 1\nfiles = 2\nsizes = '4k'\n",
            ds.display()
        ))
        .dataset
        .unwrap();
        workset::prepare(&LocalFs, &mut workset::check(&LocalFs, &ws, &p).unwrap(), 1, &|_, _| {}).unwrap();
        dataset::prepare(&LocalFs, &d, false, false, 1, &|_, _, _| {}).unwrap();
        for (dir, name) in [(&ws, workset::MARKER), (&ds, dataset::MARKER)] {
            std::fs::write(dir.join(name), b"{\"created_by\": \"ioscope\", \"files\": [").unwrap();
        }
        let (wm, dm) = (ws.join(workset::MARKER), ds.join(dataset::MARKER));
        // Preparing (even a run that only reads), and cleaning up: refused, nothing touched.
        let e = workset::check(&LocalFs, &ws, &p).unwrap_err();
        assert!(matches!(e, workset::WorksetError::NotOurs { .. }), "{e}");
        assert_refused(&e.to_string(), &wm);
        assert_cleanup_refused(&workset::cleanup(&LocalFs, &ws).unwrap_err().to_string(), &wm);
        let e = dataset::check(&LocalFs, &d, false).unwrap_err();
        assert!(matches!(e, dataset::DatasetError::NotOurs { .. }), "{e}");
        assert_refused(&e.to_string(), &dm);
        assert_cleanup_refused(&dataset::cleanup(&LocalFs, &ds).unwrap_err().to_string(), &dm);
        assert!(ws.join("ioscope.0.dat").exists() && ds.join("f000001").exists(), "nothing removed");
        // --force: the directory is taken as not ours, and used.
        let forced = crate::test_plan(&format!(
            "dir = '{}'\nrw = 'randread'\nsize = '1m'\nfiles = 1\nforce = true",
            ws.display()
        ));
        assert!(workset::check(&LocalFs, &ws, &forced).is_ok());
        assert!(dataset::check(&LocalFs, &d, true).is_ok());
    }

    #[test]
    fn a_failed_write_stops_preparation_at_once_and_names_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        // Working set: 8 files of one chunk each, one writer; the third file fails.
        let ws = tmp.path().join("ws");
        let p = crate::test_plan(&format!("dir = '{}'\nrw = 'randwrite'\nsize = '8m'\nfiles = 8", ws.display()));
        let mut l = workset::check(&LocalFs, &ws, &p).unwrap();
        let bad = ws.join("ioscope.2.dat");
        let fs = Faulty::failing(bad.clone());
        let e = workset::prepare(&fs, &mut l, 1, &|_, _| {}).unwrap_err();
        assert!(e.to_string().starts_with(&format!("{}: ", bad.display())), "{e}");
        assert_eq!(fs.writes.into_inner(), 3, "no write after the failed one");
        assert_eq!(std::fs::read_dir(&ws).unwrap().count(), 0, "no partial file of ours is left");

        // Dataset: 16 files, one writer; the fifth fails.
        let ds = tmp.path().join("ds");
        let p = crate::test_plan(&format!(
            "[dataset]\ndir = '{}'\ndepth = 0\nwidth = 1\nfiles = 16\nsizes = '4k'\n",
            ds.display()
        ));
        let d = p.dataset.unwrap();
        let bad = dataset::Layout::new(&d).file_path(4);
        let fs = Faulty::failing(bad.clone());
        let e = dataset::prepare(&fs, &d, false, false, 1, &|_, _, _| {}).unwrap_err();
        assert!(e.to_string().starts_with(&format!("{}: ", bad.display())), "{e}");
        assert_eq!(fs.writes.into_inner(), 5, "no file after the failed one was written");
        assert!(!ds.join(dataset::MARKER).exists(), "the partial tree is removed");
    }
}
