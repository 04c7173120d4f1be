//! Reading one HTTP request with limits: the request line and the headers are bounded in
//! size and must arrive within a deadline, so a client that is slow, idle or endless holds
//! a connection for a bounded time and memory. Only what the server uses is kept.

use std::io::{self, BufRead, BufReader, Read};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// Bounds on one request.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The request line (method, target, version); longer: 414.
    pub line_bytes: usize,
    /// All header lines together; more: 431.
    pub header_bytes: usize,
    /// From accepting the connection to the end of the headers; later: dropped.
    pub request_time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { line_bytes: 8 * 1024, header_bytes: 64 * 1024, request_time: Duration::from_secs(10) }
    }
}

/// What the server uses of a request.
#[derive(Debug, Default)]
pub struct Request {
    pub method: String,
    pub target: String,
    /// Every `Host` header (HTTP/1.1 has exactly one).
    pub hosts: Vec<String>,
    /// `name=value` pairs of every `Cookie` header.
    pub cookies: Vec<String>,
}

/// Why no request was read.
#[derive(Debug)]
pub enum Failure {
    /// Answer with this status and message, then close.
    Refuse(u16, String),
    /// The client closed, went idle past the deadline or failed: close without answering.
    Gone,
}

/// Reads a request's line and headers from `conn` (any body is left unread).
pub fn read(conn: &TcpStream, limits: &Limits) -> Result<Request, Failure> {
    let deadline = Instant::now() + limits.request_time;
    let mut reader = BufReader::with_capacity(8 * 1024, Deadline { conn, until: deadline });
    let line = match read_line(&mut reader, limits.line_bytes) {
        Ok(Line::Complete(l)) => l,
        Ok(Line::TooLong) => {
            return Err(Failure::Refuse(414, format!("request line longer than {} bytes", limits.line_bytes)))
        }
        Ok(Line::End) | Err(_) => return Err(Failure::Gone),
    };
    let line = String::from_utf8_lossy(&line).into_owned();
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(Failure::Refuse(400, "expected a request line: METHOD TARGET HTTP/1.1".into()));
    };
    let mut request = Request { method: method.into(), target: target.into(), ..Request::default() };
    let mut budget = limits.header_bytes;
    loop {
        let header = match read_line(&mut reader, budget) {
            Ok(Line::Complete(h)) => h,
            Ok(Line::TooLong) => {
                return Err(Failure::Refuse(431, format!("headers larger than {} bytes", limits.header_bytes)))
            }
            Ok(Line::End) | Err(_) => return Err(Failure::Gone),
        };
        budget = budget.saturating_sub(header.len());
        if header == b"\r\n" || header == b"\n" {
            return Ok(request);
        }
        let header = String::from_utf8_lossy(&header);
        let Some((name, value)) = header.split_once(':') else { continue };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("host") {
            request.hosts.push(value.to_string());
        } else if name.eq_ignore_ascii_case("cookie") {
            request.cookies.extend(value.split(';').map(|c| c.trim().to_string()));
        }
    }
}

enum Line {
    /// A line with its newline, within the limit.
    Complete(Vec<u8>),
    /// More than the limit without a newline.
    TooLong,
    /// The connection ended first.
    End,
}

fn read_line(reader: &mut impl BufRead, max_bytes: usize) -> io::Result<Line> {
    let mut line = Vec::new();
    reader.take(max_bytes as u64 + 1).read_until(b'\n', &mut line)?;
    Ok(if line.len() > max_bytes {
        Line::TooLong
    } else if line.last() == Some(&b'\n') {
        Line::Complete(line)
    } else {
        Line::End
    })
}

/// Reads from a connection until a fixed instant, however the bytes trickle in.
struct Deadline<'a> {
    conn: &'a TcpStream,
    until: Instant,
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.conn.set_read_timeout(Some(left))?;
        (&mut &*self.conn).read(buf)
    }
}

/// Closes after an answer was written: first the sending side, then reads what the client
/// still sends (a refused request's rest) for a bounded time and amount, because closing
/// with unread bytes resets the connection and the client may lose the answer.
pub fn linger(conn: &TcpStream) {
    const MAX_BYTES: u64 = 1 << 20;
    let _ = conn.shutdown(Shutdown::Write);
    let mut rest = Deadline { conn, until: Instant::now() + Duration::from_secs(2) }.take(MAX_BYTES);
    let _ = io::copy(&mut rest, &mut io::sink());
}
