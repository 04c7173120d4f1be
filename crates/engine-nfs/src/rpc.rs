//! ONC RPC v2 (RFC 5531) over TCP: calls with AUTH_SYS credentials, record marking,
//! replies matched by XID. A [`Conn`] can keep many calls outstanding: [`Conn::send`]
//! and [`Conn::recv`] are separate, and [`Conn::call`] is one of each.
//!
//! The timeout bounds each whole call, not each read: a deadline is set when the call
//! starts, and every write and read of it waits only for what is left, so a server that
//! trickles a reply, or sends fragments that never end a record, cannot hold a call (a
//! mount, a session's setup) past it. A record has at most [`MAX_FRAGMENTS`] fragments and
//! [`MAX_RECORD`] bytes.

use crate::xdr::{Decoder, Encoder, XdrError};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

const CALL: u32 = 0;
const REPLY: u32 = 1;
const AUTH_NONE: u32 = 0;
const AUTH_SYS: u32 = 1;
/// Largest record accepted from a server (a READ of 1 MiB plus headers fits easily).
pub(crate) const MAX_RECORD: usize = 8 << 20;
/// Most fragments accepted in one record. Servers send a reply in one fragment (or a few);
/// more is a peer out of step, or one spinning the client on empty fragments.
pub(crate) const MAX_FRAGMENTS: usize = 1024;

#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    #[error("{addr}: {source}")]
    Io { addr: SocketAddr, source: std::io::Error },
    #[error("{addr}: no reply within {timeout:?}")]
    Timeout { addr: SocketAddr, timeout: Duration },
    #[error("{addr}: the server closed the connection")]
    Closed { addr: SocketAddr },
    #[error("{addr}: {0}", addr = .1)]
    Xdr(XdrError, SocketAddr),
    #[error("{addr}: RPC call rejected: {why}")]
    Rejected { addr: SocketAddr, why: String },
    #[error("{addr}: record of {len} bytes is larger than {MAX_RECORD}")]
    TooLarge { addr: SocketAddr, len: usize },
    #[error("{addr}: a record of more than {MAX_FRAGMENTS} fragments (not an answer to this client)")]
    TooManyFragments { addr: SocketAddr },
    /// The first bytes of the answer cannot start an RPC reply (an HTTP or SSH server,
    /// say): `answered` is how the answer begins, made printable.
    #[error("the peer at {addr} is not an RPC server (it answered with '{answered}')")]
    NotRpc { addr: SocketAddr, answered: String },
}

/// How an answer begins, for a person: its first line, at most 40 characters, with bytes
/// that are not printable ASCII escaped, and "..." when there is more.
pub(crate) fn answer_start(bytes: &[u8]) -> String {
    let line = bytes.split(|b| *b == b'\n' || *b == b'\r').next().unwrap_or(&[]);
    let mut out: String = line.iter().take(40).flat_map(|b| std::ascii::escape_default(*b)).map(char::from).collect();
    if line.len() > 40 || line.len() < bytes.len() {
        out.push_str("...");
    }
    out
}

/// AUTH_SYS credentials (RFC 5531 appendix A).
#[derive(Clone, Debug)]
pub struct AuthSys {
    pub machine: String,
    pub uid: u32,
    pub gid: u32,
    pub gids: Vec<u32>,
}

impl AuthSys {
    /// The encoded credential (flavor and body), written once and copied into every call.
    pub fn credential(&self) -> Vec<u8> {
        let mut body = Encoder::default();
        body.u32(0).string(&self.machine).u32(self.uid).u32(self.gid).u32(self.gids.len() as u32);
        for g in &self.gids {
            body.u32(*g);
        }
        let mut e = Encoder::default();
        e.u32(AUTH_SYS).opaque(&body.buf);
        e.buf
    }
}

/// Writes a call record into `e` (cleared first): record mark, header, the encoded
/// credential, a null verifier, then the arguments appended by `args` in place. The mark
/// counts `trailing` more bytes that the caller sends right after `e` from elsewhere (a
/// write's data, sent from the I/O buffer without a copy into the record).
#[allow(clippy::too_many_arguments)]
pub fn encode_call_into(
    e: &mut Encoder,
    xid: u32,
    prog: u32,
    vers: u32,
    proc_: u32,
    credential: &[u8],
    trailing: usize,
    args: impl FnOnce(&mut Encoder),
) {
    e.buf.clear();
    e.u32(0); // record mark, filled in below
    e.u32(xid).u32(CALL).u32(2).u32(prog).u32(vers).u32(proc_);
    e.buf.extend_from_slice(credential);
    e.u32(AUTH_NONE).u32(0);
    args(e);
    let len = (e.buf.len() - 4 + trailing) as u32;
    e.buf[..4].copy_from_slice(&(0x8000_0000 | len).to_be_bytes());
}

/// Why a reply carries no results: the call's XID when it could be read, and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub xid: Option<u32>,
    pub why: String,
}

/// Splits a reply record into its XID and the procedure's results, or says why the call
/// was not executed.
pub fn parse_reply(record: &[u8]) -> Result<(u32, &[u8]), Refused> {
    let refused = |xid: Option<u32>, why: String| Refused { xid, why };
    let bad = |e: XdrError| refused(None, e.to_string());
    let mut d = Decoder::new(record);
    let xid = d.u32().map_err(bad)?;
    let bad = |e: XdrError| refused(Some(xid), e.to_string());
    if d.u32().map_err(bad)? != REPLY {
        return Err(refused(Some(xid), "not a reply".into()));
    }
    match d.u32().map_err(bad)? {
        0 => {
            let _flavor = d.u32().map_err(bad)?;
            d.opaque(400).map_err(bad)?;
            let why = match d.u32().map_err(bad)? {
                0 => return Ok((xid, &record[record.len() - d.remaining()..])),
                1 => "program unavailable".to_string(),
                2 => {
                    format!("program version mismatch (server has {}..{})", d.u32().unwrap_or(0), d.u32().unwrap_or(0))
                }
                3 => "procedure unavailable".into(),
                4 => "garbage arguments".into(),
                5 => "system error".into(),
                n => format!("accept status {n}"),
            };
            Err(refused(Some(xid), why))
        }
        _ => {
            let why = match d.u32().map_err(bad)? {
                0 => "RPC version mismatch".to_string(),
                1 => match d.u32().map_err(bad)? {
                    1 => "bad credentials (AUTH_BADCRED)".into(),
                    2 => "credentials rejected (AUTH_REJECTEDCRED)".into(),
                    5 => "AUTH_SYS refused (AUTH_TOOWEAK)".into(),
                    n => format!("authentication error {n}"),
                },
                n => format!("reject status {n}"),
            };
            Err(refused(Some(xid), why))
        }
    }
}

/// One TCP connection to one RPC program.
pub struct Conn {
    pub addr: SocketAddr,
    stream: TcpStream,
    credential: Vec<u8>,
    next_xid: u32,
    timeout: Duration,
    out: Encoder,
}

impl Conn {
    pub fn connect(addr: SocketAddr, auth: AuthSys, timeout: Duration) -> Result<Conn, RpcError> {
        let stream = TcpStream::connect_timeout(&addr, timeout).map_err(|source| RpcError::Io { addr, source })?;
        stream.set_nodelay(true).map_err(|source| RpcError::Io { addr, source })?;
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let credential = auth.credential();
        Ok(Conn {
            addr,
            stream,
            credential,
            next_xid: seed as u32 ^ std::process::id(),
            timeout,
            out: Encoder::default(),
        })
    }

    /// Sends a call and returns its XID (within the timeout).
    pub fn send(&mut self, prog: u32, vers: u32, proc_: u32, args: &[u8]) -> Result<u32, RpcError> {
        let deadline = Instant::now() + self.timeout;
        self.send_by(prog, vers, proc_, args, deadline)
    }

    fn send_by(&mut self, prog: u32, vers: u32, proc_: u32, args: &[u8], deadline: Instant) -> Result<u32, RpcError> {
        let xid = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1);
        encode_call_into(&mut self.out, xid, prog, vers, proc_, &self.credential, 0, |e| e.buf.extend_from_slice(args));
        let mut sent = 0;
        while sent < self.out.buf.len() {
            let left = self.left(deadline)?;
            self.stream.set_write_timeout(Some(left)).map_err(|e| self.io(e))?;
            match self.stream.write(&self.out.buf[sent..]) {
                Ok(0) => return Err(RpcError::Closed { addr: self.addr }),
                Ok(n) => sent += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
        Ok(xid)
    }

    /// Reads the next reply record (within the timeout): (XID, the procedure's results).
    pub fn recv(&mut self) -> Result<(u32, Vec<u8>), RpcError> {
        let deadline = Instant::now() + self.timeout;
        self.recv_by(deadline)
    }

    fn recv_by(&mut self, deadline: Instant) -> Result<(u32, Vec<u8>), RpcError> {
        let record = self.read_record(deadline)?;
        match parse_reply(&record) {
            Ok((xid, body)) => Ok((xid, body.to_vec())),
            Err(r) => Err(RpcError::Rejected { addr: self.addr, why: r.why }),
        }
    }

    /// One call, waited for: the send, and every reply read until its own, within one
    /// timeout.
    pub fn call(&mut self, prog: u32, vers: u32, proc_: u32, args: &[u8]) -> Result<Vec<u8>, RpcError> {
        let deadline = Instant::now() + self.timeout;
        let xid = self.send_by(prog, vers, proc_, args, deadline)?;
        loop {
            let (got, body) = self.recv_by(deadline)?;
            if got == xid {
                return Ok(body);
            }
        }
    }

    /// The time left until `deadline`, or the call's timeout error once it has passed.
    fn left(&self, deadline: Instant) -> Result<Duration, RpcError> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(RpcError::Timeout { addr: self.addr, timeout: self.timeout });
        }
        Ok(left)
    }

    fn io(&self, e: std::io::Error) -> RpcError {
        match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                RpcError::Timeout { addr: self.addr, timeout: self.timeout }
            }
            std::io::ErrorKind::UnexpectedEof => RpcError::Closed { addr: self.addr },
            _ => RpcError::Io { addr: self.addr, source: e },
        }
    }

    /// Fills `buf` from the socket by `deadline`: each read waits only for the time left
    /// (a system call per read to set it, which the blocking path can afford).
    fn read_by(&mut self, buf: &mut [u8], deadline: Instant) -> Result<(), RpcError> {
        let mut got = 0;
        while got < buf.len() {
            let left = self.left(deadline)?;
            self.stream.set_read_timeout(Some(left)).map_err(|e| self.io(e))?;
            match self.stream.read(&mut buf[got..]) {
                Ok(0) => return Err(RpcError::Closed { addr: self.addr }),
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.io(e)),
            }
        }
        Ok(())
    }

    fn read_record(&mut self, deadline: Instant) -> Result<Vec<u8>, RpcError> {
        let mut record = Vec::new();
        for _ in 0..MAX_FRAGMENTS {
            let mut mark = [0u8; 4];
            self.read_by(&mut mark, deadline)?;
            let bytes = mark;
            let mark = u32::from_be_bytes(mark);
            let len = (mark & 0x7fff_ffff) as usize;
            if record.is_empty() && len > MAX_RECORD {
                // No RPC server sends a first fragment this large in answer to ioscope's
                // calls; text ("HTTP", "SSH-") read as a length always is.
                return Err(self.not_rpc(bytes));
            }
            if record.len() + len > MAX_RECORD {
                return Err(RpcError::TooLarge { addr: self.addr, len: record.len() + len });
            }
            let start = record.len();
            record.resize(start + len, 0);
            self.read_by(&mut record[start..], deadline)?;
            if mark & 0x8000_0000 != 0 {
                return Ok(record);
            }
        }
        Err(RpcError::TooManyFragments { addr: self.addr })
    }

    /// The peer is not an RPC server: says how its answer begins (`first` and what else
    /// arrives within a moment).
    fn not_rpc(&mut self, first: [u8; 4]) -> RpcError {
        let mut seen = first.to_vec();
        let mut more = [0u8; 60];
        if self.stream.set_read_timeout(Some(Duration::from_millis(200))).is_ok() {
            if let Ok(n) = self.stream.read(&mut more) {
                seen.extend_from_slice(&more[..n]);
            }
        }
        RpcError::NotRpc { addr: self.addr, answered: answer_start(&seen) }
    }

    /// Maps a decoding error of this connection's reply.
    pub fn xdr(&self, e: XdrError) -> RpcError {
        RpcError::Xdr(e, self.addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> AuthSys {
        AuthSys { machine: "client".into(), uid: 1000, gid: 100, gids: vec![100, 4] }
    }

    #[test]
    fn a_call_is_one_record_with_its_header_and_credentials() {
        let mut e = Encoder::default();
        encode_call_into(&mut e, 0x01020304, 100003, 3, 6, &auth().credential(), 0, |e| {
            e.buf.extend_from_slice(&[9; 4])
        });
        let rec = e.buf;
        let mark = u32::from_be_bytes(rec[..4].try_into().unwrap());
        assert_eq!(mark, 0x8000_0000 | (rec.len() as u32 - 4), "last fragment, whole length");
        let mut d = Decoder::new(&rec[4..]);
        let header: Vec<u32> = (0..6).map(|_| d.u32().unwrap()).collect();
        assert_eq!(header, [0x01020304, CALL, 2, 100003, 3, 6]);
        assert_eq!(d.u32().unwrap(), AUTH_SYS);
        let mut body = Decoder::new(d.opaque(400).unwrap());
        assert_eq!(body.u32().unwrap(), 0, "stamp");
        assert_eq!(body.opaque(255).unwrap(), b"client");
        assert_eq!([body.u32().unwrap(), body.u32().unwrap(), body.u32().unwrap()], [1000, 100, 2]);
        assert_eq!([d.u32().unwrap(), d.u32().unwrap()], [AUTH_NONE, 0], "verifier");
        assert_eq!(d.u32().unwrap(), 0x09090909, "arguments follow");
    }

    #[test]
    fn replies_are_accepted_or_rejected_with_a_reason() {
        let mut ok = Encoder::default();
        ok.u32(42).u32(REPLY).u32(0).u32(AUTH_NONE).u32(0).u32(0).u32(7);
        assert_eq!(parse_reply(&ok.buf).unwrap(), (42, &[0, 0, 0, 7][..]));
        let mut unavailable = Encoder::default();
        unavailable.u32(43).u32(REPLY).u32(0).u32(AUTH_NONE).u32(0).u32(1);
        assert_eq!(
            parse_reply(&unavailable.buf).unwrap_err(),
            Refused { xid: Some(43), why: "program unavailable".into() }
        );
        let mut denied = Encoder::default();
        denied.u32(44).u32(REPLY).u32(1).u32(1).u32(5);
        assert!(parse_reply(&denied.buf).unwrap_err().why.contains("AUTH_TOOWEAK"));
        assert!(parse_reply(&[0, 0]).is_err());
    }

    #[test]
    fn a_peer_that_answers_http_is_named_as_not_an_rpc_server() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let mut buf = [0u8; 512];
            let _ = c.read(&mut buf);
            c.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n").unwrap();
        });
        let mut conn = Conn::connect(addr, auth(), Duration::from_secs(5)).unwrap();
        let e = conn.call(100005, 3, 0, &[]).unwrap_err();
        server.join().unwrap();
        assert!(matches!(e, RpcError::NotRpc { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!("the peer at {addr} is not an RPC server (it answered with 'HTTP/1.1 400 Bad Request...')")
        );
    }

    #[test]
    fn how_an_answer_begins_is_printable_and_short() {
        assert_eq!(answer_start(b"SSH-2.0-OpenSSH_9.2\r\n"), "SSH-2.0-OpenSSH_9.2...");
        assert_eq!(answer_start(&[0x15, 0x03, 0x01, 0x00]), "\\x15\\x03\\x01\\x00");
        assert_eq!(answer_start(&[b'a'; 100]), format!("{}...", "a".repeat(40)));
    }
}
