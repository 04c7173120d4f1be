//! The NFSv4.1 client against a real nfs-ganesha (it serves NFSv4.1 on port 2049 without
//! the portmapper). Start one with scripts/nfs-ganesha.sh, whose last line is the URL, then:
//!   IOSCOPE_NFS_URL=nfs://10.77.0.2/export cargo test -p ioscope-engine-nfs -- --ignored
//! The lease test needs a short lease: IOSCOPE_NFS_LEASE_S=10 scripts/nfs-ganesha.sh start.

use ioscope_engine::fs::FileSystem;
use ioscope_engine::{Completion, Engine, Io, IoBuffers, Op, OpenSpec, Submitted};
use ioscope_engine_nfs::target::Target;
use ioscope_engine_nfs::v4::engine::Nfs41Engine;
use ioscope_engine_nfs::v4::fs::{Nfs41Fs, Paths41};
use ioscope_engine_nfs::v4::session::{Calls, Renewal};
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

fn target(options: &str) -> Target {
    let url = std::env::var("IOSCOPE_NFS_URL").expect("IOSCOPE_NFS_URL");
    Target::parse(&format!("{url}?version=4.1{options}")).unwrap()
}

fn path_of(t: &Target, name: &str) -> PathBuf {
    PathBuf::from(format!("{}/{name}", t.url_of(&t.path)))
}

#[test]
#[ignore = "needs nfs-ganesha: IOSCOPE_NFS_URL=... (see the file's header)"]
fn nfs41_engine_writes_commits_and_reads_32_in_flight_and_tears_its_session_down() {
    let t = target("&nconnect=2");
    let mut paths = Paths41::connect(&t, 0).unwrap();
    let name = format!("ioscope-engine41-test-{}", std::process::id());
    let file = path_of(&t, &name);
    assert_eq!(paths.create_new(&file, 0, &[]).unwrap(), 0);

    let mut buffers = IoBuffers::new(32, 4096, 42);
    let spec = OpenSpec { files: vec![name.clone().into()], write: true, queue_depth: 32, ..Default::default() };
    let mut engine = Nfs41Engine::new(t.clone());
    engine.open(&spec, &buffers).unwrap();
    let described = engine.describe();
    assert!(described.starts_with("nfs v4.1 ") && described.contains("UNSTABLE4 + COMMIT"), "{described}");

    let run = |engine: &mut Nfs41Engine, buffers: &mut IoBuffers, op: Op| -> Vec<Completion> {
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
    // Twice each: every slot's sequence id moves on.
    for _ in 0..2 {
        let writes = run(&mut engine, &mut buffers, Op::Write);
        assert!(writes.iter().all(|c| c.result == 4096), "{writes:?}");
    }
    let commit = Io { op: Op::Fsync, file: 0, offset: 0, len: 0, slot: 3 };
    assert_eq!(engine.submit(&commit, &mut buffers), Submitted::Queued);
    let mut out = Vec::new();
    engine.reap(1, Some(10_000_000_000), &mut out).unwrap();
    assert_eq!(out, [Completion { slot: 3, result: 0 }]);

    // What the engine wrote reads back identical through another client's OPEN and READ.
    let f = paths.open(&file, false).unwrap();
    let (on_server, _) = paths.read(&f, 0, 32 * 4096).unwrap();
    paths.close(&f).unwrap();
    assert_eq!(on_server.len(), 32 * 4096);
    for slot in 0..32u32 {
        let at = slot as usize * 4096;
        assert!(on_server[at..at + 4096] == buffers.slot(slot)[..4096], "slot {slot}");
    }
    for _ in 0..2 {
        let reads = run(&mut engine, &mut buffers, Op::Read);
        assert!(reads.iter().all(|c| c.result == 4096), "{reads:?}");
    }
    engine.close();
    assert_eq!(engine.teardown_failure(), None, "CLOSE, DESTROY_SESSION and DESTROY_CLIENTID succeeded");
    paths.remove(&file).unwrap();
    assert!(paths.teardown().is_none());
}

#[test]
#[ignore = "needs nfs-ganesha: IOSCOPE_NFS_URL=... (see the file's header)"]
fn nfs41_a_queue_depth_beyond_the_slots_granted_is_refused_with_the_numbers() {
    let e = Calls::establish(&target(""), 5000).err().expect("no server grants 5002 slots").to_string();
    assert!(e.contains("session slots") && e.contains("needs 5002") && e.contains("lower --iodepth"), "{e}");
}

#[test]
#[ignore = "needs nfs-ganesha: IOSCOPE_NFS_URL=... (see the file's header)"]
fn nfs41_a_destroyed_session_and_client_are_gone_from_the_server() {
    let t = target("");
    let mut calls = Calls::establish(&t, 0).unwrap();
    calls.renew().unwrap();
    let info = calls.info.clone();
    assert!(calls.destroy().is_none(), "DESTROY_SESSION and DESTROY_CLIENTID answered NFS4_OK");
    let mut late = Calls::on_session(&t, &info, 0).unwrap();
    let e = late.renew().unwrap_err();
    assert_eq!(e.status(), Some(10052), "NFS4ERR_BADSESSION: {e}");
}

#[test]
#[ignore = "needs nfs-ganesha with a short lease: IOSCOPE_NFS_LEASE_S=10 (see the file's header)"]
fn nfs41_a_session_idle_past_its_lease_is_kept_by_renewal_and_expires_without() {
    let t = target("");
    let mut renewed = Calls::establish(&t, 0).unwrap();
    let lease = renewed.info.lease;
    if lease > Duration::from_secs(20) {
        let required = std::env::var("IOSCOPE_TEST_REQUIRE_ALL").is_ok_and(|v| v == "1");
        assert!(!required, "the server's lease is {lease:?}: start it with IOSCOPE_NFS_LEASE_S=10");
        eprintln!("skipped: the server's lease is {lease:?} (IOSCOPE_NFS_LEASE_S=10 to run this)");
        return;
    }
    let mut idle = Calls::establish(&t, 0).unwrap();
    let activity = Arc::new(AtomicU64::new(0));
    let mut renewal = Renewal::start(&t, &renewed.info, 1, activity).unwrap();
    // A connection of the file system (as preparation keeps one while others fill the
    // files): it keeps its own lease.
    let fs = Nfs41Fs::mount(&t).unwrap();
    let mut kept = fs.connect().unwrap();
    // Past the lease, and past the server's next sweep of expired clients.
    std::thread::sleep(lease * 2 + Duration::from_secs(5));
    renewed.renew().expect("the renewed session is alive");
    kept.list(std::path::Path::new(&t.url_of(&t.path))).expect("the file system's idle connection is alive");
    drop(kept);
    assert!(renewal.renewals.load(std::sync::atomic::Ordering::Relaxed) >= 2);
    renewal.stop();
    let e = idle.renew().unwrap_err();
    // The server expired the client (its session with it, or the client only).
    assert!(matches!(e.status(), Some(10011 | 10052 | 10022 | 10078)), "{e}");
    eprintln!("a session idle for {:?} (lease {lease:?}): {e}", lease * 2 + Duration::from_secs(5));
    idle.forget();
}
