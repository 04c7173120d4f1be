//! Targets that hang or stall, against the real binary (docs/security.md, "Targets: hostile
//! or hung servers"; docs/exit-codes.md): an S3 endpoint that takes the preparation and
//! then never answers a read, and NFS services that trickle their replies or never end a
//! record. A run in which nothing succeeds is a failed run (exit 1, named), and no setup
//! waits on such a server past the target's `timeout`. Peers are in-process, on 127.0.0.1.

mod common;
mod skip;

use common::run::{ioscope, json_of, output_within, s};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// One HTTP/1.1 request's method, target and body length (the body read and dropped), or
/// None once the client has closed the connection.
fn request(c: &mut TcpStream, buf: &mut Vec<u8>) -> Option<(String, String, u64)> {
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut more = [0u8; 64 << 10];
        match c.read(&mut more) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&more[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut words = head.split_whitespace();
    let (method, target) = (words.next()?.to_string(), words.next()?.to_string());
    let length: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse().unwrap_or(0)))
        .unwrap_or(0);
    buf.drain(..end);
    while buf.len() < length {
        let mut more = [0u8; 64 << 10];
        match c.read(&mut more) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&more[..n]),
        }
    }
    buf.drain(..length);
    Some((method, target, length as u64))
}

fn answer(c: &mut TcpStream, status: &str, headers: &str, body: &str) -> std::io::Result<()> {
    let text = format!("HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\n\r\n{body}", body.len());
    c.write_all(text.as_bytes())
}

/// An S3 endpoint that takes everything preparing a working set asks (listings, the
/// marker, uploads) and then never answers a GET of an object's data: the connection
/// stays open and silent. It keeps each object's size (a PUT's body, or the parts of a
/// completed upload), so that a HEAD after a PUT finds the object, as on any S3. Returns
/// its port.
fn s3_that_hangs_on_reads() -> u16 {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    // Object path -> size, and path -> bytes of the parts uploaded so far.
    type Sizes = HashMap<String, u64>;
    let objects: Arc<Mutex<(Sizes, Sizes)>> = Arc::default();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            let objects = Arc::clone(&objects);
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                while let Some((method, target, length)) = request(&mut c, &mut buf) {
                    let path = target.split('?').next().unwrap_or_default().to_string();
                    let mut known = objects.lock().unwrap();
                    match method.as_str() {
                        "PUT" if target.contains("partNumber=") => *known.1.entry(path.clone()).or_default() += length,
                        "PUT" => drop(known.0.insert(path.clone(), length)),
                        "POST" if target.contains("uploadId=") => {
                            let size = known.1.remove(&path).unwrap_or(0);
                            known.0.insert(path.clone(), size);
                        }
                        "DELETE" => drop(known.0.remove(&path)),
                        _ => {}
                    }
                    let size = known.0.get(&path).copied();
                    drop(known);
                    let sent = match method.as_str() {
                        "GET" if target.contains("list-type=") => answer(
                            &mut c,
                            "200 OK",
                            "",
                            "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>",
                        ),
                        "GET" if target.contains(".json") => {
                            answer(&mut c, "404 Not Found", "", "<Error><Code>NoSuchKey</Code></Error>")
                        }
                        // A read: accepted, never answered (until the client gives up).
                        "GET" => {
                            while c.read(&mut [0u8; 4096]).is_ok_and(|n| n > 0) {}
                            return;
                        }
                        "HEAD" => match size {
                            Some(n) => c.write_all(
                                format!("HTTP/1.1 200 OK\r\nETag: \"e\"\r\nContent-Length: {n}\r\n\r\n").as_bytes(),
                            ),
                            None => answer(&mut c, "404 Not Found", "", ""),
                        },
                        "POST" if target.contains("uploads") => answer(
                            &mut c,
                            "200 OK",
                            "",
                            "<InitiateMultipartUploadResult><UploadId>u1</UploadId></InitiateMultipartUploadResult>",
                        ),
                        "POST" => answer(&mut c, "200 OK", "", "<CompleteMultipartUploadResult/>"),
                        "DELETE" => answer(&mut c, "204 No Content", "", ""),
                        _ => answer(&mut c, "200 OK", "ETag: \"e\"\r\n", ""),
                    };
                    if sent.is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

#[test]
fn a_run_whose_every_read_timed_out_against_a_hung_s3_endpoint_fails_naming_the_timeouts() {
    // timeout=1 for 6 s: a timeout every second, and no success for 5 s ends the run; with
    // timeout=3 for 4 s, a handful of timeouts (far below the 1,000 I/Os a share needs):
    // nothing succeeded, so the run failed all the same.
    for (timeout, duration, says) in
        [(1, "6s", "no I/O succeeded for 5 s in a row"), (3, "4s", "no I/O succeeded: all ")]
    {
        let port = s3_that_hangs_on_reads();
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("r.db");
        let target = format!("s3://bkt/p?endpoint=http://127.0.0.1:{port}&timeout={timeout}");
        let done = output_within(
            ioscope()
                .args(["run", "--engine", "s3", "--target", &target, "--rw", "randread", "--size", "1m"])
                .args(["--threads", "2", "--duration", duration, "--json", "--quiet", "--out", s(&out)])
                .env("AWS_ACCESS_KEY_ID", "hung")
                .env("AWS_SECRET_ACCESS_KEY", "endpoint")
                .env_remove("AWS_PROFILE")
                .env_remove("AWS_SESSION_TOKEN"),
            Duration::from_secs(60),
        );
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(1), "timeout={timeout}: {stderr}");
        let summary = json_of(&done);
        assert_eq!(summary["status"], "failed", "{stderr}");
        let detail = summary["status_detail"].as_str().unwrap();
        assert!(detail.starts_with(says) && detail.contains("read ETIMEDOUT"), "timeout={timeout}: {detail}");
        let read = &summary["ops"]["read"];
        assert_eq!(read["ops"].as_u64(), Some(0), "{read}");
        assert!(read["errors_by_kind"]["ETIMEDOUT"].as_u64().unwrap() > 0, "{read}");
        assert!(stderr.contains(says), "{stderr}");
    }
}

/// A peer that sends `piece` every `every`, from the moment it accepts, on every
/// connection, for at most 30 s.
fn nfs_peer(piece: &'static [u8], every: Duration) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            std::thread::spawn(move || {
                let start = Instant::now();
                while start.elapsed() < Duration::from_secs(30) && c.write_all(piece).is_ok() {
                    std::thread::sleep(every);
                }
            });
        }
    });
    port
}

#[test]
fn an_nfs_mount_against_a_trickling_or_fragmenting_server_fails_within_the_targets_timeout() {
    // A reply's record mark, one byte every half second; empty fragments, one every 20 ms;
    // empty fragments as fast as they go.
    let cases: [(&'static [u8], Duration, &str); 3] = [
        (&[0x80], Duration::from_millis(500), "no reply within 1s"),
        (&[0, 0, 0, 0], Duration::from_millis(20), "no reply within 1s"),
        (&[0u8; 4096], Duration::ZERO, "more than 1024 fragments"),
    ];
    for (piece, every, says) in cases {
        let port = nfs_peer(piece, every);
        let tmp = tempfile::tempdir().unwrap();
        let target = format!("nfs://127.0.0.1:{port}/export?mountport={port}&timeout=1");
        let started = Instant::now();
        let done =
            output_within(
                ioscope()
                    .args(["run", "--engine", "nfs", "--target", &target, "--rw", "randread", "--size", "1m"])
                    .args(["--duration", "2s", "--quiet", "--out", s(&tmp.path().join("r.db"))]),
                Duration::from_secs(60),
            );
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert_ne!(done.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains(&format!("MOUNT: 127.0.0.1:{port}")) && stderr.contains(says), "{stderr}");
        assert!(started.elapsed() < Duration::from_secs(20), "took {:?}: {stderr}", started.elapsed());
    }
}
