//! Connections beyond the server's cap: one thread answers them 503 and closes them, so a
//! flood of connections costs one thread, not one each. Before closing, it reads what
//! each client still sends, for a second at most: closing with unread bytes resets the
//! connection and the client could lose the answer. At most [`MAX_WAITING`] wait; beyond
//! that the oldest is closed at once.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::time::{Duration, Instant};

pub const MAX_WAITING: usize = 1024;
const LINGER: Duration = Duration::from_secs(1);
const MESSAGE: &str = "too many connections at once; try again\n";

/// Hands refused connections to the refusing thread.
pub struct Refuser {
    tx: Option<SyncSender<TcpStream>>,
}

impl Refuser {
    /// Starts the thread (it ends when the Refuser is dropped).
    pub fn start() -> Refuser {
        let (tx, rx) = sync_channel(MAX_WAITING);
        let started = std::thread::Builder::new().name("ioscope-ui".into()).spawn(move || {
            crate::server::mark_ui_thread();
            refuse_all(&rx);
        });
        Refuser { tx: started.ok().map(|_| tx) }
    }

    /// Refuses `conn`; when the thread is behind or absent, just closes it.
    pub fn refuse(&self, conn: TcpStream) {
        if let Some(tx) = &self.tx {
            if let Err(TrySendError::Full(c) | TrySendError::Disconnected(c)) = tx.try_send(conn) {
                drop(c);
            }
        }
    }
}

fn refuse_all(rx: &Receiver<TcpStream>) {
    let answer_text = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Retry-After: 1\r\nConnection: close\r\n\r\n{MESSAGE}",
        MESSAGE.len()
    );
    let mut waiting: VecDeque<(TcpStream, Instant)> = VecDeque::new();
    let mut scratch = [0u8; 4096];
    loop {
        let wait = if waiting.is_empty() { Duration::from_secs(3600) } else { Duration::from_millis(10) };
        match rx.recv_timeout(wait) {
            Ok(conn) => answer(conn, &answer_text, &mut waiting),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        while let Ok(conn) = rx.try_recv() {
            answer(conn, &answer_text, &mut waiting);
        }
        let now = Instant::now();
        waiting.retain_mut(|(conn, since)| now.duration_since(*since) < LINGER && still_sending(conn, &mut scratch));
        while waiting.len() > MAX_WAITING {
            waiting.pop_front();
        }
    }
}

fn answer(conn: TcpStream, text: &str, waiting: &mut VecDeque<(TcpStream, Instant)>) {
    // Non-blocking: the answer fits in the socket's buffer, and a client that does not
    // read it must not hold this thread.
    if conn.set_nonblocking(true).is_err() || (&conn).write_all(text.as_bytes()).is_err() {
        return;
    }
    let _ = conn.shutdown(Shutdown::Write);
    waiting.push_back((conn, Instant::now()));
}

/// Reads and discards what has arrived; false once the client closed or failed.
fn still_sending(mut conn: &TcpStream, scratch: &mut [u8]) -> bool {
    loop {
        match conn.read(scratch) {
            Ok(0) => return false,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return false,
        }
    }
}
