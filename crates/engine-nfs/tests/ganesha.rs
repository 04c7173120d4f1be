//! The client against a real nfs-ganesha. Start one with scripts/nfs-ganesha.sh, whose
//! last line is the URL, then:
//!   IOSCOPE_NFS_URL=nfs://10.77.0.2/export cargo test -p ioscope-engine-nfs -- --ignored

use ioscope_engine_nfs::client::{mount, NfsError, Session};
use ioscope_engine_nfs::proto::Stable;
use ioscope_engine_nfs::target::Target;

fn data(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
#[ignore = "needs nfs-ganesha: IOSCOPE_NFS_URL=... (see the file's header)"]
fn writes_read_back_identical_and_metadata_calls_work_on_ganesha() {
    let url = std::env::var("IOSCOPE_NFS_URL").expect("IOSCOPE_NFS_URL");
    let t = Target::parse(&url).unwrap();
    let m = mount(&t).unwrap();
    assert!(m.fsinfo.rtmax >= 4096 && m.fsinfo.wtmax >= 4096, "{:?}", m.fsinfo);
    let mut s = Session::connect(&t, &m).unwrap();

    let name = format!("ioscope-client-test-{}", std::process::id());
    let dir = s.mkdir(&m.dir, &name, 0o755).unwrap();
    let f = s.create(&dir, "data", 0o644).unwrap();
    let blocks: Vec<Vec<u8>> = (0..3).map(|i| data(65536, i + 1)).collect();
    for (i, b) in blocks.iter().enumerate() {
        assert_eq!(s.write(&f, i as u64 * 65536, Stable::Unstable, b).unwrap(), 65536);
    }
    s.commit(&f).unwrap();
    assert_eq!(s.getattr(&f).unwrap().size, 3 * 65536);
    for (i, b) in blocks.iter().enumerate() {
        assert_eq!(&s.read_data(&f, i as u64 * 65536, 65536).unwrap(), b, "block {i}");
    }
    let (n, eof) = s.read(&f, 3 * 65536 - 100, 4096).unwrap();
    assert_eq!((n, eof), (100, true));
    // And through another client: libnfs-utils' nfs-cat.
    let out = std::process::Command::new("nfs-cat").arg(format!("{}/{name}/data", url.trim_end_matches('/'))).output();
    let out = out.expect("nfs-cat (Debian libnfs-utils) runs");
    assert!(out.status.success(), "nfs-cat: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout == blocks.concat(), "nfs-cat read {} bytes that differ", out.stdout.len());

    let names: Vec<String> = s.readdirplus(&dir).unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(names, ["data"]);
    s.setattr(&f, None, Some(0)).unwrap();
    assert_eq!(s.getattr(&f).unwrap().size, 0);
    let missing = s.lookup(&dir, "nope").unwrap_err();
    assert!(matches!(missing, NfsError::Status { status: 2, .. }), "{missing}");
    assert_eq!(missing.to_string(), "LOOKUP: NFS3ERR_NOENT");
    let not_empty = s.rmdir(&m.dir, &name).unwrap_err();
    assert_eq!(not_empty.to_string(), "RMDIR: NFS3ERR_NOTEMPTY");
    s.remove(&dir, "data").unwrap();
    s.rmdir(&m.dir, &name).unwrap();
}

#[test]
#[ignore = "needs nfs-ganesha: IOSCOPE_NFS_URL=... (see the file's header)"]
fn thirty_two_reads_in_flight_over_two_connections_all_complete() {
    use ioscope_engine_nfs::client::auth_of;
    use ioscope_engine_nfs::pipe::Pipe;
    use ioscope_engine_nfs::proto::{self, proc3, NFS_PROG};
    use ioscope_engine_nfs::xdr::Encoder;
    use std::time::{Duration, Instant};

    let url = std::env::var("IOSCOPE_NFS_URL").expect("IOSCOPE_NFS_URL");
    let t = Target::parse(&format!("{url}?nconnect=2")).unwrap();
    let m = mount(&t).unwrap();
    let mut s = Session::connect(&t, &m).unwrap();
    let name = format!("ioscope-pipe-test-{}", std::process::id());
    let f = s.create(&m.dir, &name, 0o644).unwrap();
    for i in 0..16u64 {
        s.write(&f, i * 65536, Stable::Unstable, &data(65536, i + 7)).unwrap();
    }
    s.commit(&f).unwrap();

    let mut p = Pipe::connect(m.nfs_addr, t.nconnect, auth_of(&t), t.timeout).unwrap();
    let read = |p: &mut Pipe, tag: u64| {
        let mut e = Encoder::default();
        proto::read_args(&mut e, &f, (tag * 4096 * 7) % (1 << 20), 4096);
        p.send(NFS_PROG, 3, proc3::READ, &e.buf, tag).unwrap();
    };
    let mut next = 0u64;
    while next < 32 {
        read(&mut p, next);
        next += 1;
    }
    let (mut done, mut completed, start) = (Vec::new(), 0u64, Instant::now());
    while completed < 5000 {
        done.clear();
        p.poll(1, Some(Duration::from_secs(30)), &mut done);
        assert!(!done.is_empty(), "no reply in 30 s");
        for d in &done {
            let body = d.result.as_ref().expect("a reply");
            assert_eq!(proto::read_res(body).unwrap().map(|r| r.0), Ok(4096), "tag {}", d.tag);
            completed += 1;
            read(&mut p, next);
            next += 1;
        }
        assert_eq!(p.in_flight(), 32, "the queue stays full");
    }
    eprintln!("{completed} reads of 4 KiB at QD32 over 2 connections in {:?}", start.elapsed());
    s.remove(&m.dir, &name).unwrap();
}

#[test]
#[ignore = "needs nfs-ganesha: IOSCOPE_NFS_URL=... (see the file's header)"]
fn the_engine_writes_commits_and_reads_with_32_in_flight() {
    use ioscope_engine::{Completion, Engine, Io, IoBuffers, Op, OpenSpec, Submitted};
    use ioscope_engine_nfs::engine::NfsEngine;

    let url = std::env::var("IOSCOPE_NFS_URL").expect("IOSCOPE_NFS_URL");
    let t = Target::parse(&format!("{url}?nconnect=2")).unwrap();
    let m = mount(&t).unwrap();
    let mut s = Session::connect(&t, &m).unwrap();
    let name = format!("ioscope-engine-test-{}", std::process::id());
    let f = s.create(&m.dir, &name, 0o644).unwrap();

    let mut buffers = IoBuffers::new(32, 4096, 42);
    let spec = OpenSpec { files: vec![name.clone().into()], write: true, queue_depth: 32, ..Default::default() };
    let mut engine = NfsEngine::new(t.clone());
    engine.open(&spec, &buffers).unwrap();
    assert!(engine.describe().contains("UNSTABLE + COMMIT"), "{}", engine.describe());

    let run = |engine: &mut NfsEngine, buffers: &mut IoBuffers, op: Op| -> Vec<Completion> {
        for slot in 0..32u32 {
            let io = Io { op, file: 0, offset: slot as u64 * 4096, len: 4096, slot };
            assert_eq!(engine.submit(&io, buffers), Submitted::Queued);
        }
        let mut out = Vec::new();
        while out.len() < 32 {
            engine.reap(32 - out.len(), Some(10_000_000_000), &mut out).unwrap();
        }
        out
    };
    let writes = run(&mut engine, &mut buffers, Op::Write);
    assert!(writes.iter().all(|c| c.result == 4096), "{writes:?}");
    let commit = Io { op: Op::Fsync, file: 0, offset: 0, len: 0, slot: 0 };
    assert_eq!(engine.submit(&commit, &mut buffers), Submitted::Queued);
    let mut out = Vec::new();
    engine.reap(1, Some(10_000_000_000), &mut out).unwrap();
    assert_eq!(out, [Completion { slot: 0, result: 0 }]);

    // What the engine wrote reads back identical, slot by slot.
    let on_server = s.read_data(&f, 0, 32 * 4096).unwrap();
    for slot in 0..32u32 {
        let at = slot as usize * 4096;
        assert!(on_server[at..at + 4096] == buffers.slot(slot)[..4096], "slot {slot}");
    }
    assert!(on_server.iter().any(|b| *b != 0), "non-zero data");
    let reads = run(&mut engine, &mut buffers, Op::Read);
    assert!(reads.iter().all(|c| c.result == 4096), "{reads:?}");
    // A file removed behind the engine's back: the server's status, by name.
    s.remove(&m.dir, &name).unwrap();
    let read = Io { op: Op::Read, file: 0, offset: 0, len: 4096, slot: 0 };
    assert_eq!(engine.submit(&read, &mut buffers), Submitted::Queued);
    let mut out = Vec::new();
    engine.reap(1, Some(10_000_000_000), &mut out).unwrap();
    assert!(out[0].result < 0, "{out:?}");
    assert_eq!(engine.error_text(out[0].result), "NFS3ERR_STALE");
    engine.close();
}
