//! The `smb` crate (pure Rust, async on tokio) driven from a synchronous submit/reap loop,
//! as ioscope's engine would drive it from its one worker thread: the thread owns a tokio
//! runtime; "submit" pushes one request's future into a `FuturesUnordered`, and "reap"
//! runs `block_on` until at least one of them completes. With the current-thread runtime
//! the crate's own tasks (its connection's send and receive loops) run only inside that
//! `block_on`, on the worker thread itself.

use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long reap waits for one completion before calling the connection hung.
const REAP_TIMEOUT: Duration = Duration::from_secs(10);

use futures::stream::{FuturesUnordered, StreamExt};
use smb::connection::EncryptionMode;
use smb::{Client, ClientConfig, ConnectionConfig, FileAccessMask, FileCreateArgs, UncPath};

use crate::{Counts, Meter, Offsets, Op, Target, BLOCK};

pub fn run(t: &Target, meter: &mut Meter) -> Result<Counts, String> {
    let rt = if t.multi_thread_runtime {
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    }
    .map_err(|e| format!("tokio runtime: {e}"))?;
    // The crate's objects spawn tokio tasks when dropped: keep the runtime's context until
    // they are gone (locals drop in reverse order, so this outlives the client and file).
    let _context = rt.enter();

    let config = ClientConfig {
        connection: ConnectionConfig {
            port: Some(t.port),
            encryption_mode: if t.encrypt { EncryptionMode::Required } else { EncryptionMode::Allowed },
            ..Default::default()
        },
        dfs: false,
        ..Default::default()
    };
    let client = Client::new(config);
    let share = UncPath::from_str(&format!(r"\\{}\{}", t.host, t.share)).map_err(|e| format!("{e}"))?;
    let file = rt
        .block_on(async {
            client.share_connect(&share, &t.user, t.password.clone()).await?;
            let access = FileAccessMask::new().with_generic_read(true).with_generic_write(true);
            let res = client
                .create_file(&share.clone().with_path(&t.file), &FileCreateArgs::make_open_existing(access))
                .await?;
            Ok::<_, smb::Error>(res.unwrap_file())
        })
        .map_err(|e| format!("smb crate: connecting and opening {}: {e}", t.file))?;
    let file = Arc::new(file);
    if t.nodelay {
        set_nodelay_on_sockets_to(t.port)?;
    }

    let mut offsets = Offsets::new(t.file_size);
    let mut counts = Counts::default();
    let mut free: Vec<Vec<u8>> = (0..t.depth).map(|_| vec![0x5a; BLOCK]).collect();
    let mut inflight = FuturesUnordered::new();
    let op = t.op;
    meter.mark();
    let t0 = Instant::now();
    let mut submitting = true;
    loop {
        // submit(): up to the depth.
        while submitting && inflight.len() < t.depth {
            let mut buf = free.pop().expect("one buffer per slot");
            let f = Arc::clone(&file);
            let off = offsets.next_offset();
            inflight.push(async move {
                let r = match op {
                    Op::Read => f.read_block(&mut buf, off, None, false).await,
                    Op::Write => f.write_block(&buf, off, None).await,
                };
                (buf, r)
            });
        }
        if inflight.is_empty() {
            break;
        }
        // reap(min = 1, timeout): drive the runtime until one request completes. The crate
        // has no timeout of its own on a request (one run here waited for 9 minutes with
        // 16 requests in flight, the socket idle both ways): give up after REAP_TIMEOUT.
        let Ok(next) = rt.block_on(tokio::time::timeout(REAP_TIMEOUT, inflight.next())) else {
            counts.errors += inflight.len() as u64;
            counts.hung = true;
            counts.first_error.get_or_insert(format!(
                "hang: no completion within {} s, {} requests in flight",
                REAP_TIMEOUT.as_secs(),
                inflight.len()
            ));
            break;
        };
        let (buf, r) = next.expect("not empty");
        free.push(buf);
        counts.requests += 1;
        match r {
            Ok(n) if n == BLOCK => {}
            Ok(n) => {
                counts.errors += 1;
                counts.first_error.get_or_insert(format!("short transfer: {n} bytes"));
            }
            Err(e) => {
                counts.errors += 1;
                counts.first_error.get_or_insert(e.to_string());
            }
        }
        if submitting && t0.elapsed() >= t.duration {
            submitting = false; // drain what is in flight, then stop
        }
    }
    meter.stop();
    if counts.hung {
        // Closing would wait on the same connection: leave it to the process's exit.
        std::mem::forget(inflight);
        std::mem::forget(file);
        std::mem::forget(client);
        return Ok(counts);
    }
    drop(inflight);
    rt.block_on(async {
        let _ = tokio::time::timeout(REAP_TIMEOUT, async {
            let _ = file.close().await;
            let _ = client.close().await;
        })
        .await;
    });
    Ok(counts)
}

/// smb-transport 0.12.1 writes each message's 4-byte transport header and its body with
/// separate writes and leaves Nagle's algorithm on: at one request in flight, the body waits
/// for the ACK of the header, which the server delays (about 40 ms on Linux). The crate has
/// no setting for it, so `--nodelay` sets TCP_NODELAY on the connection's socket from
/// outside (found among this process's descriptors by its peer port), to measure what the
/// one-line fix in the crate would give.
fn set_nodelay_on_sockets_to(port: u16) -> Result<(), String> {
    let mut found = 0;
    for entry in std::fs::read_dir("/proc/self/fd").map_err(|e| e.to_string())?.flatten() {
        let Some(fd) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        // SAFETY: getpeername writes at most `len` bytes into the storage; setsockopt reads
        // one int. Both fail harmlessly on descriptors that are not TCP sockets.
        unsafe {
            let mut addr: libc::sockaddr_storage = std::mem::zeroed();
            let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            if libc::getpeername(fd, (&mut addr as *mut libc::sockaddr_storage).cast(), &mut len) != 0 {
                continue;
            }
            let peer_port = match addr.ss_family as i32 {
                libc::AF_INET => u16::from_be((*(&addr as *const _ as *const libc::sockaddr_in)).sin_port),
                libc::AF_INET6 => u16::from_be((*(&addr as *const _ as *const libc::sockaddr_in6)).sin6_port),
                _ => continue,
            };
            if peer_port != port {
                continue;
            }
            let one: libc::c_int = 1;
            if libc::setsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ) != 0
            {
                return Err(format!("setsockopt TCP_NODELAY: {}", std::io::Error::last_os_error()));
            }
            found += 1;
        }
    }
    if found == 0 {
        return Err(format!("--nodelay: no socket connected to port {port}"));
    }
    Ok(())
}
