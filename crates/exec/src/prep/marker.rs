//! The marker: a JSON file in a prepared directory that says "ioscope created these files",
//! with what it created. One policy for every kind of preparation: no marker means the
//! data is not ours; a marker that cannot be read or parsed is refused with the reason and
//! the file's path (we cannot tell what it claims, so it is never taken for "no marker"),
//! unless `--force`, which treats the directory as not ours. Markers are written to a
//! temporary name of the writer's own, then renamed, so a reader never sees half of one.
//!
//! What a marker says is data, never authority: it is read only if it is a regular file
//! (not a link, a FIFO or a device) within its kind's size bound, and only if every entry
//! has the shape ioscope writes ([`Body::check`]: the names it gives its files, directly
//! in the marker's directory, within a bounded count). Anything else is refused, naming
//! the marker and the entry. What the marker claims is then checked against each file's
//! own identity before anything is written or removed (`workset.rs`, `dataset.rs`).

use ioscope_engine::fs::{FsConn, Kind};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// What every marker holds, and what its kind adds (`body`, flattened into the same JSON
/// object, so the files read as before).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub(crate) struct Marker<T> {
    pub created_by: String,
    /// The directory did not exist before ioscope made it (cleanup may remove it).
    pub created_dir: bool,
    #[serde(flatten)]
    pub body: T,
}

impl<T> Marker<T> {
    pub fn new(created_dir: bool, body: T) -> Self {
        Marker { created_by: format!("ioscope {}", env!("CARGO_PKG_VERSION")), created_dir, body }
    }
}

/// What a kind of marker adds, with the rules its entries must follow.
pub(crate) trait Body: DeserializeOwned {
    /// The largest marker file of this kind ioscope writes; a larger one is refused unread.
    const MAX_BYTES: u64;
    /// Ok if every entry has a shape ioscope writes; else which entry, and why not.
    fn check(&self) -> Result<(), String>;
}

/// A name from a file, quoted and escaped for a message (control characters shown as
/// escapes), and cut to 120 characters.
pub(crate) fn quoted(name: &str) -> String {
    let cut: String = name.chars().take(120).collect();
    let more = if cut.len() < name.len() { "..." } else { "" };
    format!("{cut:?}{more}")
}

/// Why cleanup removes nothing under a marker it cannot use, `--force` or not (`--force`
/// takes such a directory as not ioscope's, so nothing in it is ioscope's to remove).
pub(crate) const CLEANUP_REFUSED: &str = "cleanup removes only the files a valid marker lists and that are still \
    the files ioscope made, so it removed nothing here (remove by hand what is yours to remove)";

/// A marker that is there but cannot be used: `reason` reads "unreadable marker (...)"
/// or "invalid marker (...)".
#[derive(Debug)]
pub(crate) struct Unreadable {
    pub path: PathBuf,
    pub reason: String,
}

/// The marker `name` in `dir`: Ok(None) if there is none (or it is unreadable and `force`
/// is set: the directory is then treated as not ours); an unreadable one is refused.
pub(crate) fn read<T: Body>(
    c: &mut dyn FsConn,
    dir: &Path,
    name: &str,
    force: bool,
) -> Result<Option<Marker<T>>, Unreadable> {
    let path = dir.join(name);
    let parsed = match parse::<T>(c, &path) {
        Ok(None) => return Ok(None),
        Ok(Some(m)) => m.body.check().map(|()| m).map_err(|e| format!("invalid marker ({e})")),
        Err(e) => Err(format!("unreadable marker ({e})")),
    };
    match parsed {
        Ok(m) => Ok(Some(m)),
        Err(_) if force => Ok(None),
        Err(reason) => Err(Unreadable { path, reason }),
    }
}

/// The marker at `path` parsed, None if nothing is there; read only if it is a regular
/// file within the kind's bound (checked before the read and after it: it may grow).
fn parse<T: Body>(c: &mut dyn FsConn, path: &Path) -> Result<Option<Marker<T>>, String> {
    let too_big = |len: u64| format!("{len} bytes, more than the {} a marker of ioscope's holds", T::MAX_BYTES);
    match c.identify(path) {
        Ok(None) => return Ok(None),
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
        Ok(Some(e)) if e.kind == Kind::Link => return Err("it is a symbolic link; a marker is never followed".into()),
        Ok(Some(e)) if e.kind != Kind::File => return Err("it is not a regular file".into()),
        Ok(Some(e)) if e.len > T::MAX_BYTES => return Err(too_big(e.len)),
        Ok(Some(_)) => {}
    }
    let text = match c.read_file(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        r => r.map_err(|e| e.to_string())?,
    };
    if text.len() as u64 > T::MAX_BYTES {
        return Err(too_big(text.len() as u64));
    }
    serde_json::from_slice(&text).map(Some).map_err(|e| e.to_string())
}

/// Writes the marker `name` in `dir` atomically.
pub(crate) fn write<T: Serialize>(c: &mut dyn FsConn, dir: &Path, name: &str, m: &Marker<T>) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(m).map_err(std::io::Error::other)?;
    write_atomically(c, &dir.join(name), text.as_bytes())
}

/// A name of its own for a temporary file next to `final_name`: two runs writing the same
/// marker never share one (the loser would find it renamed away).
pub(crate) fn temp_name(final_name: &str) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(crate::clock::monotonic_ns());
    format!("{final_name}.{}.{:016x}.tmp", std::process::id(), h.finish())
}

/// Writes `text` to a temporary file and renames it to `path` (atomic on every file
/// system we use); a failed write removes the temporary file.
pub(crate) fn write_atomically(c: &mut dyn FsConn, path: &Path, text: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().map_or_else(|| "marker".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(temp_name(&name));
    let written = c
        .write_file(&tmp, text.len() as u64, &mut |off, chunk| {
            let start = usize::try_from(off).unwrap_or(usize::MAX).min(text.len());
            let end = start.saturating_add(chunk.len()).min(text.len());
            chunk[..end - start].copy_from_slice(&text[start..end]);
        })
        .and_then(|()| c.rename(&tmp, path));
    if written.is_err() {
        let _ = c.remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use ioscope_engine::fs::{FileSystem, LocalFs};

    #[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
    struct Count {
        files: u64,
    }

    impl super::Body for Count {
        const MAX_BYTES: u64 = 4096;
        fn check(&self) -> Result<(), String> {
            (self.files < 100).then_some(()).ok_or_else(|| format!("files {} is not below 100", self.files))
        }
    }

    #[test]
    fn two_writers_of_one_marker_never_share_a_temporary_file() {
        let (a, b) = (temp_name("m.json"), temp_name("m.json"));
        assert_ne!(a, b);
        assert!(a.starts_with("m.json") && a.contains(&std::process::id().to_string()), "{a}");
        // Many writers at once, one directory: every marker write lands, none fails.
        let tmp = tempfile::tempdir().unwrap();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let mut c = LocalFs.connect().unwrap();
                    for _ in 0..20 {
                        write(&mut *c, tmp.path(), "m.json", &Marker::new(false, Count::default())).unwrap();
                    }
                });
            }
        });
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1, "only the marker, no temporary file");
    }

    #[test]
    fn a_damaged_or_unreadable_marker_is_refused_with_its_path_unless_forced() {
        let tmp = tempfile::tempdir().unwrap();
        let mut c = LocalFs.connect().unwrap();
        assert!(read::<Count>(&mut *c, tmp.path(), "m.json", false).unwrap().is_none(), "no marker");
        let m = Marker::new(true, Count { files: 3 });
        write(&mut *c, tmp.path(), "m.json", &m).unwrap();
        assert_eq!(read::<Count>(&mut *c, tmp.path(), "m.json", false).unwrap(), Some(m));

        std::fs::write(tmp.path().join("m.json"), b"{\"created_by\": ").unwrap();
        let e = read::<Count>(&mut *c, tmp.path(), "m.json", false).unwrap_err();
        assert_eq!(e.path, tmp.path().join("m.json"));
        assert!(e.reason.starts_with("unreadable marker (EOF while parsing"), "{}", e.reason);
        assert!(read::<Count>(&mut *c, tmp.path(), "m.json", true).unwrap().is_none(), "--force: not ours");
        // A marker that is a directory cannot be read at all: refused the same way.
        std::fs::remove_file(tmp.path().join("m.json")).unwrap();
        std::fs::create_dir(tmp.path().join("m.json")).unwrap();
        let e = read::<Count>(&mut *c, tmp.path(), "m.json", false).unwrap_err();
        assert!(e.reason.starts_with("unreadable marker ("), "{}", e.reason);
    }

    #[test]
    fn a_marker_that_is_a_link_too_large_or_outside_its_rules_is_refused_unread() {
        let tmp = tempfile::tempdir().unwrap();
        let mut c = LocalFs.connect().unwrap();
        let (m, real) = (tmp.path().join("m.json"), tmp.path().join("real.json"));
        std::fs::write(&real, br#"{"created_by": "ioscope", "created_dir": false, "files": 3}"#).unwrap();
        std::os::unix::fs::symlink(&real, &m).unwrap();
        let e = read::<Count>(&mut *c, tmp.path(), "m.json", false).unwrap_err();
        assert!(e.reason.contains("symbolic link"), "{}", e.reason);
        std::fs::remove_file(&m).unwrap();
        std::fs::write(&m, vec![b' '; 5000]).unwrap();
        let e = read::<Count>(&mut *c, tmp.path(), "m.json", false).unwrap_err();
        assert!(e.reason.contains("5000 bytes, more than the 4096"), "{}", e.reason);
        std::fs::write(&m, br#"{"created_by": "ioscope", "created_dir": false, "files": 300}"#).unwrap();
        let e = read::<Count>(&mut *c, tmp.path(), "m.json", false).unwrap_err();
        assert_eq!((e.path, e.reason.as_str()), (m.clone(), "invalid marker (files 300 is not below 100)"));
        assert!(read::<Count>(&mut *c, tmp.path(), "m.json", true).unwrap().is_none(), "--force: not ours");
        // A FIFO is never opened (it would block the read).
        std::fs::remove_file(&m).unwrap();
        rustix::fs::mknodat(rustix::fs::CWD, &m, rustix::fs::FileType::Fifo, 0o600.into(), 0).unwrap();
        let e = read::<Count>(&mut *c, tmp.path(), "m.json", false).unwrap_err();
        assert!(e.reason.contains("not a regular file"), "{}", e.reason);
        assert_eq!(quoted("a\n\u{1b}[31m"), "\"a\\n\\u{1b}[31m\"");
    }
}
