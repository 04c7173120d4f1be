//! This process's stdin and stdout as one async byte stream, for [`crate::serve_stream`]
//! under ssh. Pipes and sockets (what sshd gives a command) are read and written without
//! blocking, on the runtime's own reactor: no blocking thread is left waiting on stdin when
//! the connection ends otherwise (tokio's `stdin()` keeps one, and dropping the runtime then
//! waits until stdin closes), and each call costs less CPU. Anything else (a terminal, a
//! file) falls back to tokio's `stdin()` and `stdout()`.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;
use tokio::io::{AsyncRead, AsyncWrite, Join};

/// The read half of [`stdio`].
pub type StdinHalf = Box<dyn AsyncRead + Send + Unpin>;
/// The write half of [`stdio`].
pub type StdoutHalf = Box<dyn AsyncWrite + Send + Unpin>;

/// Stdin and stdout joined, non-blocking when they are pipes or sockets (else, or when that
/// fails, tokio's blocking-thread ones). Must be called within a tokio runtime with I/O
/// enabled; fails only when stdin or stdout is closed. Sets O_NONBLOCK on them (shared with any process
/// that holds the same pipe end): nothing else in this process should use stdout afterwards.
pub fn stdio() -> io::Result<Join<StdinHalf, StdoutHalf>> {
    let stdin = io::stdin().as_fd().try_clone_to_owned()?;
    let stdout = io::stdout().as_fd().try_clone_to_owned()?;
    let reader: StdinHalf = match kind(&stdin) {
        Kind::Fifo => tokio::net::unix::pipe::Receiver::from_owned_fd(stdin).map(boxed_reader),
        Kind::Socket => socket(stdin).map(boxed_reader),
        Kind::Other => Err(io::ErrorKind::Unsupported.into()),
    }
    .unwrap_or_else(|_| Box::new(tokio::io::stdin()));
    let writer: StdoutHalf = match kind(&stdout) {
        Kind::Fifo => tokio::net::unix::pipe::Sender::from_owned_fd(stdout).map(boxed_writer),
        Kind::Socket => socket(stdout).map(boxed_writer),
        Kind::Other => Err(io::ErrorKind::Unsupported.into()),
    }
    .unwrap_or_else(|_| Box::new(tokio::io::stdout()));
    Ok(tokio::io::join(reader, writer))
}

fn boxed_reader(r: impl AsyncRead + Send + Unpin + 'static) -> StdinHalf {
    Box::new(r)
}

fn boxed_writer(w: impl AsyncWrite + Send + Unpin + 'static) -> StdoutHalf {
    Box::new(w)
}

enum Kind {
    Fifo,
    Socket,
    Other,
}

fn kind(fd: &OwnedFd) -> Kind {
    let file_type = fd.try_clone().and_then(|fd| File::from(fd).metadata()).map(|m| m.file_type());
    match file_type {
        Ok(t) if t.is_fifo() => Kind::Fifo,
        Ok(t) if t.is_socket() => Kind::Socket,
        _ => Kind::Other,
    }
}

/// A Unix stream socket (sshd without pipes gives one socketpair for stdin and stdout).
fn socket(fd: OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let socket = std::os::unix::net::UnixStream::from(fd);
    socket.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(socket)
}
