//! The client and the engine against an in-process NFSv3 server (nfs3_server's in-memory
//! file system): fast, no root, no network namespace. CI also runs tests/ganesha.rs
//! against a real nfs-ganesha.

use ioscope_engine::{Engine, Io, IoBuffers, Op, OpenSpec, Submitted};
use ioscope_engine_nfs::client::{mount, mount_creating, NfsError, Session};
use ioscope_engine_nfs::engine::NfsEngine;
use ioscope_engine_nfs::proto::Stable;
use ioscope_engine_nfs::target::Target;
use nfs3_server::tcp::{NFSTcp, NFSTcpListener};

/// Starts a server on 127.0.0.1 and returns its port (MOUNT and NFS share it).
fn memfs_server() -> u16 {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async move {
            let fs = nfs3_server::memfs::MemFs::new(nfs3_server::memfs::MemFsConfig::default()).unwrap();
            let listener = NFSTcpListener::bind("127.0.0.1:0", fs).await.unwrap();
            tx.send(listener.get_listen_port()).unwrap();
            listener.handle_forever().await.unwrap();
        });
    });
    rx.recv().unwrap()
}

fn target(port: u16, dir: &str) -> Target {
    Target::parse(&format!("nfs://127.0.0.1:{port}/{dir}?mountport={port}&nconnect=2&timeout=5")).unwrap()
}

#[test]
fn the_client_creates_writes_reads_lists_and_removes() {
    let port = memfs_server();
    let t = target(port, "work");
    assert!(mount(&t).is_err(), "the directory does not exist yet");
    let m = mount_creating(&t).unwrap();
    let mut s = Session::connect(&t, &m).unwrap();
    let f = s.create(&m.dir, "data", 0o644).unwrap();
    let block: Vec<u8> = (0..65536u32).map(|i| (i * 7 + 3) as u8).collect();
    assert_eq!(s.write(&f, 0, Stable::Unstable, &block).unwrap(), 65536);
    s.commit(&f).unwrap();
    assert_eq!(s.read_data(&f, 0, 65536).unwrap(), block);
    assert_eq!(s.getattr(&f).unwrap().size, 65536);
    let names: Vec<String> = s.readdirplus(&m.dir).unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["data"]);
    let missing = s.lookup(&m.dir, "nope").unwrap_err();
    assert!(matches!(missing, NfsError::Status { status: 2, .. }), "{missing}");
    s.remove(&m.dir, "data").unwrap();
    assert!(s.readdirplus(&m.dir).unwrap().is_empty());
}

#[test]
fn the_engine_keeps_16_in_flight_and_what_it_writes_reads_back() {
    let port = memfs_server();
    let t = target(port, "engine");
    let m = mount_creating(&t).unwrap();
    let mut s = Session::connect(&t, &m).unwrap();
    let f = s.create(&m.dir, "ioscope.0.dat", 0o644).unwrap();
    // The in-memory server takes no write past the end of a file: give it its size first.
    s.setattr(&f, None, Some(16 * 4096)).unwrap();
    let mut buffers = IoBuffers::new(16, 4096, 9);
    let spec = OpenSpec { files: vec!["ioscope.0.dat".into()], write: true, queue_depth: 16, ..Default::default() };
    let mut engine = NfsEngine::new(t);
    engine.open(&spec, &buffers).unwrap();
    for op in [Op::Write, Op::Read] {
        for slot in 0..16u32 {
            let io = Io { op, file: 0, offset: slot as u64 * 4096, len: 4096, slot };
            assert_eq!(engine.submit(&io, &mut buffers), Submitted::Queued);
        }
        let mut out = Vec::new();
        while out.len() < 16 {
            engine.reap(16 - out.len(), Some(5_000_000_000), &mut out).unwrap();
        }
        assert!(out.iter().all(|c| c.result == 4096), "{op:?}: {out:?}");
    }
    let data = s.read_data(&f, 0, 16 * 4096).unwrap();
    for slot in 0..16u32 {
        let at = slot as usize * 4096;
        assert!(data[at..at + 4096] == buffers.slot(slot)[..4096], "slot {slot}");
    }
    assert!(engine.lost().is_none());
    engine.close(); // COMMITs the file written UNSTABLE
    assert_eq!(s.read_data(&f, 0, 4096).unwrap(), buffers.slot(0)[..4096]);
}

#[test]
fn paths_create_list_rename_and_remove_a_tree() {
    use ioscope_engine::fs::{FileSystem, Stat};
    use ioscope_engine_nfs::fs::NfsFs;
    use std::io::ErrorKind;
    use std::path::PathBuf;
    let port = memfs_server();
    let t = target(port, "tree");
    let base = PathBuf::from(format!("nfs://127.0.0.1:{port}/tree"));
    let nfs = NfsFs::mount(&t).unwrap();
    let mut c = nfs.connect().unwrap();
    assert_eq!(c.stat(&base).unwrap(), None, "the target's directory is not there yet");
    c.create_dir_all(&base.join("d0/d1")).unwrap();
    c.create_dir_all(&base.join("d0/d1")).unwrap();
    assert!(c.stat(&base.join("d0/d1")).unwrap().is_some_and(|s| s.dir));
    let file = base.join("d0/d1/f0");
    let byte = |at: u64| (at / 65536 + 1) as u8;
    let mut fill = |off: u64, chunk: &mut [u8]| chunk.iter_mut().zip(off..).for_each(|(b, at)| *b = byte(at));
    c.write_file(&file, 300_000, &mut fill).unwrap();
    assert_eq!(c.stat(&file).unwrap(), Some(Stat { dir: false, file: true, len: 300_000 }));
    let data = c.read_file(&file).unwrap();
    assert_eq!(data.len(), 300_000);
    assert!(data.iter().zip(0..).all(|(b, at)| *b == byte(at)));
    // Written again: truncated and rewritten.
    c.write_file(&file, 10, &mut |_, chunk| chunk.fill(9)).unwrap();
    assert_eq!(c.read_file(&file).unwrap(), [9u8; 10]);
    c.rename(&file, &base.join("d0/d1/f1")).unwrap();
    let listed = c.list(&base.join("d0/d1")).unwrap();
    assert_eq!(listed, [("f1".to_string(), Some(Stat { dir: false, file: true, len: 10 }))]);
    let err = c.remove_dir(&base.join("d0")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DirectoryNotEmpty, "{err}");
    assert_eq!(c.remove_file(&file).unwrap_err().kind(), ErrorKind::NotFound);
    c.remove_file(&base.join("d0/d1/f1")).unwrap();
    c.remove_dir(&base.join("d0/d1")).unwrap();
    c.remove_dir(&base.join("d0")).unwrap();
    assert!(c.list(&base).unwrap().is_empty());
}

#[test]
fn the_engine_does_file_and_directory_operations_by_path() {
    use ioscope_engine::FileReq;
    let port = memfs_server();
    let t = target(port, "ops");
    mount_creating(&t).unwrap();
    let base = std::path::PathBuf::from(format!("nfs://127.0.0.1:{port}/ops"));
    let mut buffers = IoBuffers::new(1, 65536, 3);
    let mut engine = NfsEngine::new(t);
    engine.open(&OpenSpec { queue_depth: 1, write: true, ..Default::default() }, &buffers).unwrap();
    let (dir, a, b) = (base.join("d"), base.join("d/a"), base.join("d/b"));
    let req = |op, path| FileReq { op, path, to: None, file: 0, write: false, size: 0 };
    let mut run = |e: &mut NfsEngine, r: FileReq<'_>| e.file_op(&r, &mut buffers);
    assert_eq!(run(&mut engine, req(Op::Mkdir, &dir)), 0);
    assert_eq!(run(&mut engine, FileReq { size: 100_000, ..req(Op::Create, &a) }), 100_000);
    let exists = run(&mut engine, FileReq { size: 1, ..req(Op::Create, &a) });
    assert_eq!(engine.error_text(exists), "NFS3ERR_EXIST", "create never replaces a file");
    assert_eq!(run(&mut engine, req(Op::Getattr, &a)), 0);
    assert_eq!(run(&mut engine, req(Op::Setattr, &a)), 0);
    assert_eq!(run(&mut engine, FileReq { to: Some(&b), ..req(Op::Copy, &a) }), 100_000);
    let taken = run(&mut engine, FileReq { to: Some(&b), ..req(Op::Move, &a) });
    assert_eq!(engine.error_text(taken), "NFS3ERR_EXIST", "move never replaces a file");
    assert_eq!(run(&mut engine, req(Op::Delete, &a)), 0);
    assert_eq!(run(&mut engine, FileReq { to: Some(&a), ..req(Op::Move, &b) }), 0);
    // Open, read what create wrote (slot 0's data repeated), write, close (COMMIT).
    let expected = buffers.slot(0)[..4096].to_vec();
    assert_eq!(engine.file_op(&FileReq { write: true, ..req(Op::Open, &a) }, &mut buffers), 0);
    let io = Io { op: Op::Read, file: 0, offset: 65536, len: 4096, slot: 0 };
    assert_eq!(engine.submit(&io, &mut buffers), Submitted::Queued);
    let mut out = Vec::new();
    engine.reap(1, Some(5_000_000_000), &mut out).unwrap();
    assert_eq!(out[0].result, 4096);
    assert_eq!(buffers.slot(0)[..4096], expected[..]);
    let mut run = |e: &mut NfsEngine, r: FileReq<'_>| e.file_op(&r, &mut buffers);
    assert_eq!(run(&mut engine, req(Op::Close, &a)), 0);
    let gone = run(&mut engine, req(Op::Rmdir, &dir));
    assert_eq!(engine.error_text(gone), "NFS3ERR_NOTEMPTY");
    assert_eq!(run(&mut engine, req(Op::Delete, &a)), 0);
    let missing = run(&mut engine, req(Op::Getattr, &a));
    assert!(["NFS3ERR_NOENT", "NFS3ERR_STALE"].contains(&engine.error_text(missing).as_str()));
    assert_eq!(run(&mut engine, req(Op::Rmdir, &dir)), 0);
    assert!(engine.lost().is_none());
}
