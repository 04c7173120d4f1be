//! A bound on how long an answer may wait for a client that does not read: a write that
//! cannot progress for [`WRITE_STALL`] fails, and the connection (and its slot) is freed.
//! A slow reader that keeps taking bytes is not cut off, and an open event stream with
//! nothing to send costs nothing.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

pub const WRITE_STALL: Duration = Duration::from_secs(30);

pub struct WriteDeadline<IO> {
    io: IO,
    stalled_since: Option<Pin<Box<Sleep>>>,
}

impl<IO> WriteDeadline<IO> {
    pub fn new(io: IO) -> Self {
        WriteDeadline { io, stalled_since: None }
    }

    /// After a write returned Pending: Ready(error) once it has been stuck too long.
    fn stalled(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let sleep = self.stalled_since.get_or_insert_with(|| Box::pin(tokio::time::sleep(WRITE_STALL)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(io::Error::new(io::ErrorKind::TimedOut, "the client stopped reading")),
            Poll::Pending => Poll::Pending,
        }
    }

    fn write_poll<T>(&mut self, cx: &mut Context<'_>, polled: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        match polled {
            Poll::Ready(r) => {
                self.stalled_since = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.stalled(cx).map(Err),
        }
    }
}

use std::future::Future;

impl<IO: AsyncRead + Unpin> AsyncRead for WriteDeadline<IO> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<IO> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.write_poll(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.write_poll(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_flush(cx);
        self.write_poll(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_shutdown(cx);
        self.write_poll(cx, polled)
    }
}
