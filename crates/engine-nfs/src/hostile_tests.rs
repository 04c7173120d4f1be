//! Hostile servers against the real client code (docs/security.md, "Targets: hostile or
//! hung servers"): peers on 127.0.0.1 that never end a record, trickle a reply, answer
//! other calls, or take a request slowly. The target's `timeout` bounds each whole call
//! (a mount's, a session setup's, an I/O's), so each fails within it, named, and nothing
//! waits on such a peer for longer. The bounds asserted on waits are generous (x5 and
//! more): these test that the wait ends, not how fast.

use crate::client::mount;
use crate::pipe::{CallError, Pipe};
use crate::rpc::{AuthSys, Conn};
use crate::target::Target;
use crate::v4::session::Calls;
use crate::xdr::Encoder;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// How long a hostile peer keeps at it before it gives up (and closes): well past every
/// bound below, so that a client that waited for it would fail the test, not hang it.
const PEER_LIFE: Duration = Duration::from_secs(30);

/// What a hostile peer sends on each connection, without waiting for a call.
#[derive(Clone, Copy)]
enum Hostile {
    /// Zero-length fragments, none of them the last, as fast as the socket takes them.
    EmptyFragments,
    /// The same, one every 20 ms (fewer than a record's fragment limit within a second).
    SlowEmptyFragments,
    /// A reply record of 400 bytes, at 2 bytes a second.
    Trickle,
    /// Whole, valid replies, each to an XID no call has: a reply to "another call" every
    /// 20 ms.
    OtherXids,
}

/// A peer on 127.0.0.1 that behaves as `how` on every connection it accepts.
fn hostile(how: Hostile) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(s) = s else { return };
            std::thread::spawn(move || misbehave(s, how));
        }
    });
    addr
}

fn misbehave(mut s: TcpStream, how: Hostile) {
    let start = Instant::now();
    let mut reply = Encoder::default();
    reply.u32(0x8000_0000 | 400);
    reply.buf.resize(404, 0);
    let mut xid = 0x5eed_0000u32;
    while start.elapsed() < PEER_LIFE {
        let sent = match how {
            Hostile::EmptyFragments => s.write_all(&[0u8; 4096]),
            Hostile::SlowEmptyFragments => {
                std::thread::sleep(Duration::from_millis(20));
                s.write_all(&[0u8; 4])
            }
            Hostile::Trickle => {
                let at = (start.elapsed().as_millis() / 500) as usize;
                std::thread::sleep(Duration::from_millis(500));
                s.write_all(&reply.buf[at.min(403)..at.min(403) + 1])
            }
            Hostile::OtherXids => {
                std::thread::sleep(Duration::from_millis(20));
                xid = xid.wrapping_add(1);
                let mut e = Encoder::default();
                e.u32(0x8000_0000 | 24).u32(xid).u32(1).u32(0).u32(0).u32(0).u32(0);
                s.write_all(&e.buf)
            }
        };
        if sent.is_err() {
            return;
        }
    }
}

fn target(url: &str) -> Target {
    Target::parse(url).unwrap()
}

/// Mounts `nfs://127.0.0.1:P/export` with the MOUNT service at the hostile peer and
/// `timeout=1`: the error and how long it took.
fn mount_against(how: Hostile) -> (String, Duration) {
    let port = hostile(how).port();
    let t = Instant::now();
    let e = mount(&target(&format!("nfs://127.0.0.1:{port}/export?mountport={port}&timeout=1"))).unwrap_err();
    (e.to_string(), t.elapsed())
}

#[test]
fn a_mount_port_sending_empty_fragments_forever_fails_the_mount_at_the_fragment_limit() {
    let (e, took) = mount_against(Hostile::EmptyFragments);
    assert!(e.starts_with("MOUNT: 127.0.0.1:") && e.contains("more than 1024 fragments"), "{e}");
    assert!(took < Duration::from_secs(10), "took {took:?}: {e}");
}

#[test]
fn a_mount_port_sending_empty_fragments_slowly_times_the_mount_out_within_its_timeout() {
    let (e, took) = mount_against(Hostile::SlowEmptyFragments);
    assert!(e.starts_with("MOUNT: 127.0.0.1:") && e.ends_with("no reply within 1s"), "{e}");
    assert!(took < Duration::from_secs(10), "took {took:?}: {e}");
}

#[test]
fn a_mount_reply_trickled_at_two_bytes_a_second_times_the_mount_out_within_its_timeout() {
    let (e, took) = mount_against(Hostile::Trickle);
    assert!(e.starts_with("MOUNT: 127.0.0.1:") && e.ends_with("no reply within 1s"), "{e}");
    assert!(took < Duration::from_secs(10), "took {took:?}: {e}");
}

#[test]
fn replies_to_other_calls_do_not_hold_a_call_past_its_timeout() {
    let (e, took) = mount_against(Hostile::OtherXids);
    assert!(e.starts_with("MOUNT: 127.0.0.1:") && e.ends_with("no reply within 1s"), "{e}");
    assert!(took < Duration::from_secs(10), "took {took:?}: {e}");
}

#[test]
fn an_nfs41_session_setup_against_a_trickling_or_fragmenting_server_fails_within_its_timeout() {
    for how in [Hostile::Trickle, Hostile::SlowEmptyFragments, Hostile::EmptyFragments] {
        let port = hostile(how).port();
        let t = Instant::now();
        let e = Calls::establish(&target(&format!("nfs://127.0.0.1:{port}/export?version=4.1&timeout=1")), 4)
            .err()
            .expect("no session with such a server")
            .to_string();
        let took = t.elapsed();
        assert!(e.starts_with("NFSv4.1: 127.0.0.1:"), "{e}");
        assert!(e.ends_with("no reply within 1s") || e.contains("more than 1024 fragments"), "{e}");
        assert!(took < Duration::from_secs(10), "took {took:?}: {e}");
    }
}

#[test]
fn a_blocking_call_gives_up_at_its_deadline_whatever_the_reads_get() {
    for how in [Hostile::Trickle, Hostile::SlowEmptyFragments, Hostile::OtherXids] {
        let auth = AuthSys { machine: "t".into(), uid: 0, gid: 0, gids: vec![] };
        let mut c = Conn::connect(hostile(how), auth, Duration::from_millis(500)).unwrap();
        let t = Instant::now();
        let e = c.call(100003, 3, 0, &[]).unwrap_err();
        assert!(e.to_string().ends_with("no reply within 500ms"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
    }
}

fn auth() -> AuthSys {
    AuthSys { machine: "t".into(), uid: 0, gid: 0, gids: vec![] }
}

#[test]
fn empty_fragments_that_never_end_a_record_drop_the_pipes_connection() {
    let addr = hostile(Hostile::EmptyFragments);
    let mut p = Pipe::connect(addr, 1, auth(), Duration::from_secs(30)).unwrap();
    p.send(100003, 3, 6, &[], 1).unwrap();
    let (t, mut done) = (Instant::now(), Vec::new());
    p.poll(1, None, &mut done);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].result, Err(CallError::Lost(addr)), "dropped, not waited on for the timeout");
    assert!(t.elapsed() < Duration::from_secs(10), "took {:?}", t.elapsed());
}

#[test]
fn a_reply_trickled_in_times_the_pipes_call_out_at_its_deadline() {
    let mut p = Pipe::connect(hostile(Hostile::Trickle), 1, auth(), Duration::from_secs(1)).unwrap();
    p.send(100003, 3, 6, &[], 1).unwrap();
    let (t, mut done) = (Instant::now(), Vec::new());
    p.poll(1, None, &mut done);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].result, Err(CallError::Timeout(Duration::from_secs(1))));
    assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
}

#[test]
fn a_server_taking_a_write_slowly_does_not_hold_its_send_past_the_timeout() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        // 16 KiB every 100 ms: each send makes some progress, none ends the record.
        let (start, mut buf) = (Instant::now(), vec![0u8; 16 << 10]);
        while start.elapsed() < PEER_LIFE {
            std::thread::sleep(Duration::from_millis(100));
            if s.read(&mut buf).map_or(true, |n| n == 0) {
                return;
            }
        }
    });
    let data = vec![7u8; 64 << 20];
    let mut p = Pipe::connect(addr, 1, auth(), Duration::from_secs(1)).unwrap();
    let t = Instant::now();
    let sent = p.send_with_data(
        100003,
        3,
        7,
        1,
        |e| {
            e.u32(data.len() as u32);
        },
        &data,
    );
    assert_eq!(sent, Err(CallError::Lost(addr)), "the connection is out of step: dropped");
    assert!(t.elapsed() < Duration::from_secs(10), "took {:?}", t.elapsed());
}
