//! `--cleanup` with forged markers, through the real binary and through an agent: a
//! marker names only files directly in its own directory, and cleanup removes only files
//! the marker and the file's own identity both say ioscope made. Every victim (outside the
//! directory, outside the agent's root, or a file of the user's in the directory) keeps
//! its content and its mtime: it is neither removed nor opened for write.

mod common;
mod skip;

use common::run::ioscope;
use serde_json::{json, Value};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A victim's content and mtime (seconds, nanoseconds), to compare after.
type Seen = (Vec<u8>, i64, i64);

fn seen(p: &Path) -> Seen {
    let m = std::fs::metadata(p).unwrap_or_else(|e| panic!("victim {} is gone: {e}", p.display()));
    (std::fs::read(p).unwrap(), m.mtime(), m.mtime_nsec())
}

fn victim(p: &Path, byte: u8) -> (PathBuf, Seen) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, vec![byte; 64 << 10]).unwrap();
    (p.to_path_buf(), seen(p))
}

fn assert_untouched(victims: &[(PathBuf, Seen)], what: &str) {
    for (p, before) in victims {
        assert!(&seen(p) == before, "{what}: {} was changed", p.display());
    }
}

fn marker(files: &[Value]) -> String {
    json!({ "created_by": "ioscope", "created_dir": false, "files": files }).to_string()
}

fn entry(name: &str) -> Value {
    json!({ "name": name, "size_bytes": 65536, "complete": true })
}

fn run(dir: &Path, db: &Path, rw: &str, cleanup: bool) -> Output {
    let mut c = ioscope();
    c.args(["run", "--size", "64k", "--rw", rw, "--duration", "1s", "--dir"]).arg(dir).arg("--out").arg(db);
    if cleanup {
        c.arg("--cleanup");
    }
    c.output().unwrap()
}

#[test]
fn cleanup_never_removes_a_file_the_marker_names_outside_its_directory_or_not_made_by_ioscope() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ws");
    std::fs::create_dir(&dir).unwrap();
    let victims = [
        victim(&tmp.path().join("victim/file.dat"), 1),
        victim(&dir.join("notes.txt"), 2),
        victim(&dir.join("ioscope.0.dat"), 3),
    ];
    let abs = victims[0].0.display().to_string();
    let m = dir.join(".ioscope-workset.json");
    // Traversal, an absolute path, a user's file of the directory: refused before any I/O,
    // naming the marker and the entry.
    for bad in ["../victim/file.dat", abs.as_str(), "notes.txt"] {
        std::fs::write(&m, marker(&[entry("ioscope.0.dat"), entry(bad)])).unwrap();
        let db = tmp.path().join(format!("r{}.db", bad.len()));
        let out = run(&dir, &db, "randwrite", true);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "{bad}: {said}");
        assert!(said.contains(&m.display().to_string()) && said.contains(&format!("{bad:?}")), "{said}");
        assert!(said.contains("invalid marker"), "{said}");
        assert_untouched(&victims, bad);
    }
    // Names of ours, but files ioscope did not make (a marker of an earlier version records
    // no identity): read by a run that only reads, left by cleanup, which says so.
    std::fs::write(&m, marker(&[entry("ioscope.0.dat")])).unwrap();
    let out = run(&dir, &tmp.path().join("read.db"), "randread", true);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("cleanup: removed 0 file(s)") && said.contains("not provably made by ioscope"), "{said}");
    assert!(said.contains(&dir.join("ioscope.0.dat").display().to_string()), "{said}");
    assert_untouched(&victims, "a read run with --cleanup");
    // A writing run would write into it: refused.
    let out = run(&dir, &tmp.path().join("write.db"), "randwrite", true);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_untouched(&victims, "a write run");
}

#[test]
fn a_forged_entry_is_never_copied_into_the_marker_a_run_writes_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ws");
    std::fs::create_dir(&dir).unwrap();
    let victims = [victim(&dir.join("ioscope.1.dat"), 4)];
    let m = dir.join(".ioscope-workset.json");
    let mut forged = entry("ioscope.1.dat");
    forged["made"] = json!({ "file_id": 12345 });
    std::fs::write(&m, marker(&[forged])).unwrap();
    let out = run(&dir, &tmp.path().join("r.db"), "randwrite", false);
    assert!(out.status.success(), "{}", text(&out));
    let written: Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
    let names: Vec<&str> = written["files"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ioscope.0.dat"], "{written}");
    // Cleanup now removes ioscope's own file, and only it.
    let out = run(&dir, &tmp.path().join("r2.db"), "randwrite", true);
    let said = text(&out);
    assert!(out.status.success() && said.contains("cleanup: removed 1 file(s)"), "{said}");
    assert!(!dir.join("ioscope.0.dat").exists() && !m.exists(), "{said}");
    assert_untouched(&victims, "a run with a forged entry");
}

/// `--force` over a marker that is refused: the run says so (not "pass --force", which was
/// given), writes a marker of the files it created in its place, and cleanup removes those
/// and nothing else; a run that created nothing leaves the forged marker as it was.
#[test]
fn a_forced_run_over_a_forged_marker_says_it_was_refused_and_leaves_a_true_marker() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("ws");
    std::fs::create_dir(&dir).unwrap();
    let victims = [victim(&tmp.path().join("victim/file.dat"), 1), victim(&dir.join("notes.txt"), 2)];
    let m = dir.join(".ioscope-workset.json");
    let forged = marker(&[entry("../victim/file.dat")]);
    let forced = |db: &str, rw: &str, cleanup: bool| {
        let mut c = ioscope();
        c.args(["run", "--size", "64k", "--rw", rw, "--duration", "1s", "--force", "--dir"]).arg(&dir);
        c.arg("--out").arg(tmp.path().join(db));
        if cleanup {
            c.arg("--cleanup");
        }
        c.output().unwrap()
    };
    let refused = format!("note: {}: invalid marker (files[0].name \"../victim/file.dat\"", m.display());

    // Without --cleanup: the forged marker is replaced by one of the file the run made.
    std::fs::write(&m, &forged).unwrap();
    let out = forced("a.db", "randwrite", false);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains(&refused) && said.contains("with --force the directory is taken as not ioscope's"), "{said}");
    assert!(said.contains("replaced by one listing only the files this run creates"), "{said}");
    assert!(!said.contains("Pass --force"), "{said}");
    let written: Value = serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
    let files = written["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{written}");
    assert_eq!(files[0]["name"], "ioscope.0.dat", "{written}");
    assert!(files[0]["made"]["file_id"].is_u64(), "{written}");
    std::fs::remove_file(dir.join("ioscope.0.dat")).unwrap();

    // With --cleanup: what it made is removed, with its marker; nothing else.
    std::fs::write(&m, &forged).unwrap();
    let out = forced("b.db", "randwrite", true);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains(&refused) && said.contains("cleanup: removed 1 file(s)"), "{said}");
    assert!(!said.contains("--force to") && !said.contains("cleanup failed"), "{said}");
    assert!(!m.exists() && !dir.join("ioscope.0.dat").exists(), "{said}");
    assert_untouched(&victims, "a forced run with --cleanup");

    // A file of the user's at our name, only read: the run creates nothing, so the forged
    // marker stays, and cleanup removes nothing and says why, with no advice to force.
    let users = victim(&dir.join("ioscope.0.dat"), 3);
    std::fs::write(&m, &forged).unwrap();
    let out = forced("c.db", "randread", true);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&refused) && said.contains("this run creates no file, so the marker is left as it is"),
        "{said}"
    );
    assert!(said.contains("it removed nothing here") && !said.contains("Pass --force"), "{said}");
    assert_eq!(std::fs::read_to_string(&m).unwrap(), forged);
    assert_untouched(&victims, "a forced read run with --cleanup");
    assert_untouched(&[users], "the user's file at our name, read");

    // A dataset's marker refused under --force: said so, replaced by the tree's own.
    let anchor = tmp.path().join("ds");
    std::fs::create_dir(&anchor).unwrap();
    let dm = anchor.join(".ioscope-dataset.json");
    std::fs::write(&dm, b"{\"created_by\": \"ioscope\", \"spec\": [").unwrap();
    let toml = tmp.path().join("ds.toml");
    let workload = format!(
        "rw = \"read\"\nduration = \"1s\"\nforce = true\n[dataset]\ndir = \"{}\"\ndepth = 0\nwidth = 1\nfiles = 2\nsizes = \"4k\"\n",
        anchor.display()
    );
    std::fs::write(&toml, workload).unwrap();
    let out = ioscope().arg("run").arg(&toml).arg("--out").arg(tmp.path().join("d.db")).output().unwrap();
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let note = format!("note: {}: unreadable marker (", dm.display());
    assert!(said.contains(&note) && said.contains("replaced by one of the tree this run creates"), "{said}");
    let written: Value = serde_json::from_slice(&std::fs::read(&dm).unwrap()).unwrap();
    assert!(written["made"]["anchor_id"].is_u64(), "{written}");
}

/// splitmix64, to pick the forged entries.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A random forged marker: traversal, absolute paths, links, the user's files, control
/// characters, random identities, sometimes a huge list.
/// `up` climbs from the marker's directory to the one that holds `outside`.
fn forged(state: &mut u64, up: &str, outside: &Path) -> String {
    let names = [
        format!("{up}outside/victim.dat"),
        outside.join("victim.dat").display().to_string(),
        "notes.txt".into(),
        "ioscope.3.dat".into(),
        "ioscope.4.dat".into(),
        "ioscope.3.dat\u{1b}[31m".into(),
        "sub/../ioscope.3.dat".into(),
        "ioscope.03.dat".into(),
    ];
    let n = if next(state) % 4 == 0 { 50_000 } else { 1 + next(state) % 6 };
    let files: Vec<Value> = (0..n)
        .map(|_| {
            let mut e = entry(&names[(next(state) % names.len() as u64) as usize]);
            if next(state) % 2 == 0 {
                e["made"] = json!({ "file_id": next(state) });
            }
            e
        })
        .collect();
    marker(&files)
}

#[test]
fn random_forged_markers_through_run_cleanup_remove_or_write_nothing_of_the_users() {
    let seed = std::env::var("IOSCOPE_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    eprintln!("seed {seed} (IOSCOPE_TEST_SEED={seed} replays it)");
    let mut state = seed;
    let tmp = tempfile::tempdir().unwrap();
    let (dir, outside) = (tmp.path().join("ws"), tmp.path().join("outside"));
    std::fs::create_dir(&dir).unwrap();
    let victims = [
        victim(&outside.join("victim.dat"), 5),
        victim(&dir.join("notes.txt"), 6),
        victim(&dir.join("ioscope.3.dat"), 7),
    ];
    std::os::unix::fs::symlink(outside.join("victim.dat"), dir.join("ioscope.4.dat")).unwrap();
    for case in 0..5 {
        std::fs::write(dir.join(".ioscope-workset.json"), forged(&mut state, "../", &outside)).unwrap();
        let rw = if case % 2 == 0 { "randwrite" } else { "randread" };
        let out = run(&dir, &tmp.path().join(format!("{case}.db")), rw, true);
        assert!(matches!(out.status.code(), Some(0 | 2)), "seed {seed} case {case}: {}", text(&out));
        assert_untouched(&victims, &format!("seed {seed} case {case}"));
        assert!(dir.join("ioscope.4.dat").is_symlink(), "seed {seed} case {case}: the link stays");
    }
}

/// `ioscope agent --listen 127.0.0.1:0 --root ROOT` and the address it listens on.
struct Agent {
    child: std::process::Child,
    addr: String,
    /// What the agent wrote to stderr after its first line (read on, so it never blocks
    /// or fails writing).
    said: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent(token: &Path, root: &Path) -> Agent {
    use std::io::{BufRead, BufReader};
    let mut child = ioscope()
        .args(["agent", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(token)
        .arg("--root")
        .arg(root)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    stderr.read_line(&mut line).unwrap();
    let addr = line.split_whitespace().nth(3).unwrap_or_else(|| panic!("agent said {line:?}")).to_string();
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let into = said.clone();
    std::thread::spawn(move || {
        for l in stderr.lines().map_while(Result::ok) {
            into.lock().unwrap().push_str(&(l + "\n"));
        }
    });
    Agent { child, addr, said }
}

#[test]
fn an_agent_with_cleanup_never_removes_a_file_a_forged_marker_names_outside_its_root() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let token = tmp.path().join("token");
    std::fs::write(&token, "a-token-of-the-fleet-0123456789\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let a = agent(&token, &root);
    let run = |rw: &str, cleanup: bool, db: &str| {
        let mut c = ioscope();
        c.args(["run", "--size", "64k", "--rw", rw, "--duration", "1s", "--dir", "ws", "--hosts"])
            .arg(format!("agent://{}", a.addr))
            .arg("--token-file")
            .arg(&token)
            .arg("--out")
            .arg(tmp.path().join(db));
        if cleanup {
            c.arg("--cleanup");
        }
        c.output().unwrap()
    };
    // A first run makes the host's directory (ROOT/ws/HOST) and its working set.
    let out = run("randread", false, "first.db");
    assert!(out.status.success(), "{}", text(&out));
    let host_dir = std::fs::read_dir(root.join("ws")).unwrap().next().unwrap().unwrap().path();
    assert!(host_dir.join("ioscope.0.dat").exists(), "{}", host_dir.display());
    let victims = [victim(&tmp.path().join("outside/victim.dat"), 8), victim(&host_dir.join("notes.txt"), 9)];
    let m = host_dir.join(".ioscope-workset.json");
    let up = "../".repeat(host_dir.strip_prefix(tmp.path()).unwrap().components().count());
    // Traversal out of the root, an absolute path, a user's file: refused, nothing touched.
    let bad = [format!("{up}outside/victim.dat"), victims[0].0.display().to_string(), "notes.txt".into()];
    for b in &bad {
        std::fs::write(&m, marker(&[entry(b)])).unwrap();
        let out = run("randread", true, "forged.db");
        assert_ne!(out.status.code(), Some(0), "{b}: {}", text(&out));
        assert!(text(&out).contains("invalid marker"), "{}", text(&out));
        assert_untouched(&victims, b);
    }
    // A valid name whose file the marker cannot prove is ioscope's: the agent reads it and
    // its cleanup leaves it.
    std::fs::write(&m, marker(&[entry("ioscope.0.dat")])).unwrap();
    let out = run("randread", true, "legacy.db");
    assert!(out.status.success(), "{}", text(&out));
    assert!(host_dir.join("ioscope.0.dat").exists() && m.exists(), "left in place");
    assert_untouched(&victims, "an agent's cleanup");
    let said = a.said.lock().unwrap().clone();
    assert!(said.contains("agent: cleanup: left 1 entry") && said.contains("ioscope.0.dat"), "{said}");
}

#[test]
fn random_forged_markers_through_an_agent_with_cleanup_remove_or_write_nothing_of_the_users() {
    use std::os::unix::fs::PermissionsExt;
    let seed = std::env::var("IOSCOPE_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64)
    });
    eprintln!("seed {seed} (IOSCOPE_TEST_SEED={seed} replays it)");
    let mut state = seed;
    let tmp = tempfile::tempdir().unwrap();
    let token = tmp.path().join("token");
    std::fs::write(&token, "a-token-of-the-fleet-0123456789\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let root = tmp.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let a = agent(&token, &root);
    let run = |rw: &str, db: &str, cleanup: &[&str]| {
        let mut c = ioscope();
        c.args(["run", "--size", "64k", "--rw", rw, "--duration", "1s", "--dir", "ws"])
            .args(cleanup)
            .arg("--hosts")
            .arg(format!("agent://{}", a.addr))
            .arg("--token-file")
            .arg(&token)
            .arg("--out")
            .arg(tmp.path().join(db));
        c.output().unwrap()
    };
    // A first run makes the host's directory (ROOT/ws/HOST).
    let out = run("randwrite", "first.db", &[]);
    assert!(out.status.success(), "{}", text(&out));
    let host_dir = std::fs::read_dir(root.join("ws")).unwrap().next().unwrap().unwrap().path();
    // The generator's traversal climbs from the host's directory to the victim outside.
    let outside = tmp.path().join("outside");
    let up = "../".repeat(host_dir.strip_prefix(tmp.path()).unwrap().components().count());
    let victims = [
        victim(&outside.join("victim.dat"), 5),
        victim(&host_dir.join("notes.txt"), 6),
        victim(&host_dir.join("ioscope.3.dat"), 7),
    ];
    std::os::unix::fs::symlink(outside.join("victim.dat"), host_dir.join("ioscope.4.dat")).unwrap();
    for case in 0..4 {
        std::fs::write(host_dir.join(".ioscope-workset.json"), forged(&mut state, &up, &outside)).unwrap();
        let rw = if case % 2 == 0 { "randwrite" } else { "randread" };
        let out = run(rw, &format!("{case}.db"), &["--cleanup"]);
        assert!(matches!(out.status.code(), Some(0..=2)), "seed {seed} case {case}: {}", text(&out));
        assert_untouched(&victims, &format!("seed {seed} case {case}"));
        assert!(host_dir.join("ioscope.4.dat").is_symlink(), "seed {seed} case {case}: the link stays");
    }
}
