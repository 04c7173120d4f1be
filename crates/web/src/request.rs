//! Bounds on one request: the request line and the headers are bounded in size and must
//! arrive within a deadline, so a client that is slow, idle or endless holds a connection
//! for a bounded time and memory. hyper reads the request head into a buffer of at most
//! [`Limits::head_buffer_bytes`] (beyond: 431) and drops a connection whose head is not
//! complete by the deadline; [`check`] then answers 414 or 431 on the exact limits.

use axum::http::{HeaderMap, Method, StatusCode, Uri};
use std::time::Duration;

/// Bounds on one request.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The request line (method, target, version); longer: 414.
    pub line_bytes: usize,
    /// All header lines together; more: 431.
    pub header_bytes: usize,
    /// From the start of a request (or the end of the previous answer on a kept-alive
    /// connection) to the end of its headers; later: the connection is dropped.
    pub request_time: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { line_bytes: 8 * 1024, header_bytes: 64 * 1024, request_time: Duration::from_secs(10) }
    }
}

impl Limits {
    /// The most hyper buffers while reading a request head: the line and the headers with
    /// room for their line ends (hyper needs at least 8 KiB).
    pub fn head_buffer_bytes(&self) -> usize {
        self.line_bytes.saturating_add(self.header_bytes).saturating_add(1024).max(8192)
    }
}

/// Why a request is refused before it is answered.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("request line longer than {0} bytes")]
    LineTooLong(usize),
    #[error("headers larger than {0} bytes")]
    HeadersTooLarge(usize),
}

impl Refusal {
    pub fn status(&self) -> StatusCode {
        match self {
            Refusal::LineTooLong(_) => StatusCode::URI_TOO_LONG,
            Refusal::HeadersTooLarge(_) => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        }
    }
}

/// Checks a parsed request head against the limits, as the bytes it was sent as.
pub fn check(method: &Method, uri: &Uri, headers: &HeaderMap, limits: &Limits) -> Result<(), Refusal> {
    // "METHOD TARGET HTTP/1.1\r\n"
    let target = uri.path_and_query().map_or(uri.path().len(), |p| p.as_str().len());
    let line = method.as_str().len() + 1 + target + " HTTP/1.1\r\n".len();
    if line > limits.line_bytes {
        return Err(Refusal::LineTooLong(limits.line_bytes));
    }
    // "Name: value\r\n" each.
    let headers_size: usize = headers.iter().map(|(n, v)| n.as_str().len() + 2 + v.len() + 2).sum();
    if headers_size > limits.header_bytes {
        return Err(Refusal::HeadersTooLarge(limits.header_bytes));
    }
    Ok(())
}
