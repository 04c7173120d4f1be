//! Forged markers against preparation and cleanup: a few hundred random markers (names
//! with traversal, absolute paths, links, other files of the directory, control
//! characters, huge lists, huge or linked marker files, random identities), each given to
//! check, prepare and cleanup of a working set and of a dataset. No file ioscope did not
//! create is ever removed or written: every victim keeps its content and its mtime.
//! The seed is printed; IOSCOPE_TEST_SEED=N replays one.

use super::{dataset, workset};
use ioscope_engine::fs::LocalFs;
use serde_json::{json, Value};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// splitmix64: small, seeded, good enough to pick cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<'a, T>(&mut self, of: &'a [T]) -> &'a T {
        &of[self.below(of.len() as u64) as usize]
    }
    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

/// What a victim is: its content (or link target) and its mtime, to compare after.
#[derive(Debug, PartialEq)]
struct Seen {
    link: Option<PathBuf>,
    data: Option<Vec<u8>>,
    mtime_ns: i64,
    ino: u64,
}

fn seen(p: &Path) -> Seen {
    let m = fs::symlink_metadata(p).unwrap_or_else(|e| panic!("victim {} is gone: {e}", p.display()));
    let link = m.file_type().is_symlink().then(|| fs::read_link(p).unwrap());
    let data = m.file_type().is_file().then(|| fs::read(p).unwrap());
    Seen { link, data, mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(), ino: m.ino() }
}

/// The victims: files outside the marker's directory, and files of the user's in it
/// (some with the names ioscope gives its own, some links and hard links).
struct Scene {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    ds: PathBuf,
    victims: Vec<(PathBuf, Seen)>,
}

fn scene() -> Scene {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let (outside, ws, ds) = (root.join("outside"), root.join("ws"), root.join("ds"));
    for d in [&outside, &ws, &ds, &outside.join("d00/d00"), &ws.join("sub"), &ds.join("d01/d00")] {
        fs::create_dir_all(d).unwrap();
    }
    let mut paths = Vec::new();
    let mut file = |p: PathBuf, len: usize, byte: u8| {
        fs::write(&p, vec![byte; len]).unwrap();
        paths.push(p);
    };
    file(outside.join("victim.dat"), 1 << 16, 1);
    file(outside.join("hard.dat"), 1 << 16, 2);
    file(outside.join("d00/d00/f000000"), 100, 3);
    file(outside.join("ioscope.0.dat"), 1 << 16, 4);
    file(ws.join("notes.txt"), 10, 5);
    file(ws.join("ioscope.3.dat"), 1 << 16, 6);
    file(ws.join("sub/ioscope.0.dat"), 1 << 16, 7);
    file(ws.join(".ioscope.lock.x"), 3, 8);
    file(ds.join("d01/d00/f000000"), 100, 9);
    file(ds.join("notes.txt"), 10, 10);
    let mut link = |target: &Path, at: PathBuf| {
        std::os::unix::fs::symlink(target, &at).unwrap();
        paths.push(at);
    };
    link(&outside.join("victim.dat"), ws.join("ioscope.4.dat"));
    link(&outside, ws.join("ioscope.7.dat"));
    link(&outside, ds.join("d00"));
    fs::hard_link(outside.join("hard.dat"), ws.join("ioscope.5.dat")).unwrap();
    paths.push(ws.join("ioscope.5.dat"));
    let fifo = ws.join("ioscope.6.dat");
    rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, 0o600.into(), 0).unwrap();
    paths.push(fifo);
    let victims = paths.into_iter().map(|p| (p.clone(), seen(&p))).collect();
    Scene { _tmp: tmp, ws, ds, victims }
}

/// A name a forger might put in a marker.
fn forged_name(r: &mut Rng, s: &Scene) -> String {
    let outside = s.ws.parent().unwrap().join("outside");
    let fixed = [
        "../outside/victim.dat".to_string(),
        "../outside/ioscope.0.dat".to_string(),
        outside.join("victim.dat").display().to_string(),
        outside.join("ioscope.0.dat").display().to_string(),
        "notes.txt".into(),
        "sub/ioscope.0.dat".into(),
        "./ioscope.3.dat".into(),
        "ioscope.3.dat".into(),
        "ioscope.4.dat".into(),
        "ioscope.5.dat".into(),
        "ioscope.6.dat".into(),
        "ioscope.7.dat".into(),
        "ioscope.7.dat/victim.dat".into(),
        "ioscope.03.dat".into(),
        "ioscope.+3.dat".into(),
        "ioscope.3.dat\0".into(),
        "ioscope.3.dat/..".into(),
        ".ioscope.lock.x".into(),
        ".ioscope-workset.json".into(),
        "..".into(),
        ".".into(),
        "".into(),
        "/".into(),
        "ioscope.99999999999.dat".into(),
    ];
    match r.below(4) {
        0 => {
            let len = r.below(300) as usize;
            (0..len).map(|_| char::from_u32(r.below(0x250) as u32).unwrap_or('x')).collect()
        }
        1 => format!("ioscope.{}.dat", r.below(10)),
        _ => r.pick(&fixed).clone(),
    }
}

/// A forged identity: none (an earlier version's marker), null, a random id, or a
/// victim's raw inode number.
fn forged_made(r: &mut Rng, s: &Scene) -> Option<Value> {
    match r.below(5) {
        0 => None,
        1 => Some(json!({ "file_id": null })),
        2 => Some(json!({ "file_id": r.next() })),
        3 => Some(json!({ "file_id": r.pick(&s.victims).1.ino })),
        _ => Some(json!({ "file_id": "x" })),
    }
}

/// Writes a forged marker `name` in `dir`: a JSON body, or a damaged, huge, linked marker.
fn plant(r: &mut Rng, s: &Scene, dir: &Path, name: &str, body: Value) {
    let path = dir.join(name);
    let _ = fs::remove_file(&path);
    match r.below(12) {
        0 => {
            // Huge: a sparse file far beyond any marker's bound, refused unread.
            let f = fs::File::create(&path).unwrap();
            f.set_len(1 << 30).unwrap();
        }
        1 => {
            let real = s.ws.parent().unwrap().join(format!("real-{}", r.next()));
            fs::write(&real, body.to_string()).unwrap();
            std::os::unix::fs::symlink(&real, &path).unwrap();
        }
        2 => {
            let text = body.to_string();
            fs::write(&path, &text.as_bytes()[..r.below(text.len() as u64) as usize]).unwrap();
        }
        _ => fs::write(&path, body.to_string()).unwrap(),
    }
}

fn workset_marker(r: &mut Rng, s: &Scene) -> Value {
    let n = if r.chance(40) { 20_000 + r.below(5000) } else { r.below(12) };
    let files: Vec<Value> = (0..n)
        .map(|_| {
            let any = r.next();
            let mut f = json!({
                "name": forged_name(r, s),
                "size_bytes": *r.pick(&[0, 1 << 16, 1 << 15, any]),
                "complete": r.chance(2),
            });
            if let Some(m) = forged_made(r, s) {
                f["made"] = m;
            }
            f
        })
        .collect();
    json!({ "created_by": "ioscope", "created_dir": r.chance(2), "files": files })
}

fn dataset_marker(r: &mut Rng, s: &Scene) -> Value {
    let any = r.next();
    let anchor_id = if r.chance(2) { json!(fs::symlink_metadata(&s.ds).unwrap().ino()) } else { json!(any) };
    let many = Value::Array(vec![json!([1, 1]); 5000]);
    let sizes = r.pick(&[json!([[100, 1]]), json!([]), json!([[0, 0]]), many]).clone();
    let mut m = json!({
        "created_by": "ioscope",
        "created_dir": r.chance(2),
        "complete": r.chance(2),
        "files": any,
        "total_bytes": any,
        "spec": {
            "anchor": forged_name(r, s),
            "depth": *r.pick(&[0u64, 1, 2, 9, u64::from(u32::MAX)]),
            "width": *r.pick(&[0u64, 1, 2, 10_001, u64::from(u32::MAX)]),
            "files_per_leaf": *r.pick(&[0u64, 1, 2, 10_000_001]),
            "sizes": sizes,
            "total_size": null,
            "working_set": null,
        },
    });
    if !r.chance(4) {
        m["made"] = json!({ "anchor_id": anchor_id });
    }
    m
}

fn assert_untouched(s: &Scene, seed: u64, case: u64) {
    for (p, before) in &s.victims {
        assert_eq!(&seen(p), before, "seed {seed}, case {case}: {} was changed", p.display());
    }
}

#[test]
fn forged_markers_never_make_preparation_or_cleanup_remove_or_write_a_file_ioscope_did_not_create() {
    let seed = std::env::var("IOSCOPE_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    eprintln!("forged markers: seed {seed} (IOSCOPE_TEST_SEED={seed} replays it)");
    let mut r = Rng(seed);
    let s = scene();
    // Three files ioscope makes (beside the forged entries), and eight, which meet the
    // user's files of our names (refused for writing, read as they are).
    let ws_plan = |rw: &str, files: u32| {
        let size = 64 * u64::from(files);
        crate::test_plan(&format!("dir = '{}'\nrw = '{rw}'\nsize = '{size}k'\nfiles = {files}", s.ws.display()))
    };
    let (writes, reads) = (ws_plan("randwrite", 3), ws_plan("randread", 8));
    // How often ioscope made its own files and removed them again: the happy path ran too.
    let (mut prepared, mut removed) = (0, 0);
    for case in 0..300 {
        let body = workset_marker(&mut r, &s);
        plant(&mut r, &s, &s.ws, workset::MARKER, body);
        for p in [&writes, &reads] {
            if let Ok(mut l) = workset::check(&LocalFs, &s.ws, p) {
                prepared += u32::from(workset::prepare(&LocalFs, &mut l, 2, &|_, _| {}).is_ok());
            }
        }
        removed += workset::cleanup(&LocalFs, &s.ws).map_or(0, |c| c.files);
        assert_untouched(&s, seed, case);
        let _ = fs::remove_file(s.ws.join(workset::MARKER));
    }
    for case in 300..500 {
        let body = dataset_marker(&mut r, &s);
        plant(&mut r, &s, &s.ds, dataset::MARKER, body);
        let spec = crate::test_plan(&format!(
            "[dataset]\ndir = '{}'\ndepth = 2\nwidth = 2\nfiles = 1\nsizes = '100'\n",
            s.ds.display()
        ))
        .dataset
        .unwrap();
        let _ = dataset::check(&LocalFs, &spec, false);
        let _ = dataset::prepare(&LocalFs, &spec, false, false, 2, &|_, _, _| {});
        let _ = dataset::cleanup(&LocalFs, &s.ds);
        assert_untouched(&s, seed, case);
        let _ = fs::remove_file(s.ds.join(dataset::MARKER));
    }
    assert!(prepared > 0 && removed > 0, "seed {seed}: prepared {prepared} times, removed {removed} files");
}
