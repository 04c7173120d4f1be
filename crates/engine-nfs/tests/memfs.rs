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
