//! Connections beyond the server's cap are answered 503 and closed. Each costs a small
//! task, not a thread; at most [`MAX_WAITING`] are being refused at once, beyond that a
//! connection is closed at once. Before closing, the refusal reads what the client still
//! sends, for a second at most: closing with unread bytes resets the connection and the
//! client could lose the answer.

use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

pub const MAX_WAITING: usize = 1024;
const LINGER: Duration = Duration::from_secs(1);
const MESSAGE: &str = "too many connections at once; try again\n";

/// Refuses connections, a bounded number at once.
#[derive(Clone)]
pub struct Refuser {
    waiting: Arc<Semaphore>,
}

impl Refuser {
    pub fn new() -> Refuser {
        Refuser { waiting: Arc::new(Semaphore::new(MAX_WAITING)) }
    }

    /// Answers `conn` 503 and closes it; when too many are being refused, just closes it.
    pub fn refuse(&self, conn: TcpStream) {
        let Ok(permit) = Arc::clone(&self.waiting).try_acquire_owned() else { return };
        tokio::spawn(async move {
            let _ = tokio::time::timeout(LINGER, answer(conn)).await;
            drop(permit);
        });
    }
}

async fn answer(mut conn: TcpStream) {
    let text = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Retry-After: 1\r\nConnection: close\r\n\r\n{MESSAGE}",
        MESSAGE.len()
    );
    if conn.write_all(text.as_bytes()).await.is_err() || conn.shutdown().await.is_err() {
        return;
    }
    let mut scratch = [0u8; 4096];
    while let Ok(n) = conn.read(&mut scratch).await {
        if n == 0 {
            break;
        }
    }
}
