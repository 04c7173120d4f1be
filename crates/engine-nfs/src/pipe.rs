//! Many RPC calls in flight over N TCP connections (`nconnect`): calls go out round-robin,
//! replies are matched to their caller's tag by XID, and a call without a reply within
//! the timeout completes as timed out (counted by the caller, never waited on forever).
//! This is what the engine's queue depth rides on.

use crate::rpc::{encode_call_into, parse_reply, AuthSys, RpcError};
use crate::xdr::Encoder;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// A finished call: the caller's tag and the procedure's results, or why there are none.
#[derive(Debug)]
pub struct Done {
    pub tag: u64,
    pub result: Result<Vec<u8>, CallError>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("no reply within {0:?}")]
    Timeout(Duration),
    #[error("connection to {0} lost")]
    Lost(SocketAddr),
    #[error("call refused: {0}")]
    Refused(String),
}

/// Receives each finished call: its tag and the procedure's results (in place) or why
/// there are none.
pub type OnReply<'a> = dyn FnMut(u64, Result<&[u8], CallError>) + 'a;

struct Link {
    stream: TcpStream,
    /// Receive buffer: bytes `start..end` are received and not yet parsed (allocated and
    /// zeroed once, grown when a reply needs more).
    rbuf: Vec<u8>,
    start: usize,
    end: usize,
    /// A reply spread over several fragments, so far.
    partial: Vec<u8>,
    alive: bool,
}

struct InFlight {
    tag: u64,
    link: usize,
    sent: Instant,
}

pub struct Pipe {
    pub addr: SocketAddr,
    links: Vec<Link>,
    next_link: usize,
    inflight: HashMap<u32, InFlight>,
    next_xid: u32,
    credential: Vec<u8>,
    timeout: Duration,
    /// The record being sent and the poll set, kept to avoid allocations per call.
    out: Encoder,
    fds: Vec<libc::pollfd>,
}

impl Pipe {
    pub fn connect(addr: SocketAddr, connections: u32, auth: AuthSys, timeout: Duration) -> Result<Pipe, RpcError> {
        let mut links = Vec::new();
        for _ in 0..connections.max(1) {
            let io = |source| RpcError::Io { addr, source };
            let stream = TcpStream::connect_timeout(&addr, timeout).map_err(io)?;
            stream.set_nodelay(true).map_err(io)?;
            stream.set_nonblocking(true).map_err(io)?;
            links.push(Link { stream, rbuf: vec![0; 1 << 20], start: 0, end: 0, partial: Vec::new(), alive: true });
        }
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        Ok(Pipe {
            addr,
            links,
            next_link: 0,
            inflight: HashMap::new(),
            next_xid: (seed as u32).rotate_left(7) ^ std::process::id(),
            credential: auth.credential(),
            timeout,
            out: Encoder::default(),
            fds: Vec::new(),
        })
    }

    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// Every connection is closed.
    pub fn dead(&self) -> bool {
        self.links.iter().all(|l| !l.alive)
    }

    /// Sends one call on the next live connection; its reply comes from [`Pipe::poll`].
    pub fn send(&mut self, prog: u32, vers: u32, proc_: u32, args: &[u8], tag: u64) -> Result<(), CallError> {
        self.send_with(prog, vers, proc_, tag, |e| e.buf.extend_from_slice(args))
    }

    /// [`Pipe::send`] with the arguments written by `args` straight into the record.
    pub fn send_with(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        tag: u64,
        args: impl FnOnce(&mut Encoder),
    ) -> Result<(), CallError> {
        let n = self.links.len();
        let link = (0..n)
            .map(|i| (self.next_link + i) % n)
            .find(|&i| self.links[i].alive)
            .ok_or(CallError::Lost(self.addr))?;
        self.next_link = (link + 1) % n;
        let xid = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1);
        encode_call_into(&mut self.out, xid, prog, vers, proc_, &self.credential, args);
        if write_all(&mut self.links[link].stream, &self.out.buf, self.timeout).is_err() {
            self.links[link].alive = false;
            return Err(CallError::Lost(self.addr));
        }
        self.inflight.insert(xid, InFlight { tag, link, sent: Instant::now() });
        Ok(())
    }

    /// Collects finished calls into `out`: waits until at least `min` are there (or, with
    /// `wait`, no longer than that), and fails calls whose reply is overdue or whose
    /// connection died.
    pub fn poll(&mut self, min: usize, wait: Option<Duration>, out: &mut Vec<Done>) {
        self.poll_with(min, wait, &mut |tag, result| {
            out.push(Done { tag, result: result.map(|b| b.to_vec()) });
        });
    }

    /// [`Pipe::poll`] handing each finished call's results to `each` in place (no copy).
    pub fn poll_with(&mut self, min: usize, wait: Option<Duration>, each: &mut OnReply) {
        let start = Instant::now();
        let mut got = 0;
        loop {
            for i in 0..self.links.len() {
                got += self.drain(i, each);
            }
            got += self.expire(each);
            if got >= min || self.inflight.is_empty() {
                return;
            }
            let left = match wait {
                Some(w) => match w.checked_sub(start.elapsed()) {
                    Some(l) => l,
                    None => return,
                },
                None => self.timeout,
            };
            // Sleep until a connection is readable, the wait ends, or the oldest call is due.
            let due =
                self.inflight.values().map(|f| (f.sent + self.timeout).saturating_duration_since(Instant::now())).min();
            let sleep = due.map_or(left, |d| d.min(left)).max(Duration::from_millis(1));
            self.fds.clear();
            self.fds.extend(self.links.iter().filter(|l| l.alive).map(|l| libc::pollfd {
                fd: l.stream.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }));
            let (fds, ms) = (&mut self.fds, sleep.as_millis().min(60_000) as i32);
            // SAFETY: fds is a valid array of pollfd for the duration of the call.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        }
    }

    /// Reads what connection `i` has and completes every whole reply in it; returns how
    /// many calls finished.
    fn drain(&mut self, i: usize, each: &mut OnReply) -> usize {
        let mut finished = 0;
        {
            let link = &mut self.links[i];
            while link.alive {
                if link.end == link.rbuf.len() {
                    // Full: move the unparsed bytes to the front, or grow.
                    if link.start > 0 {
                        link.rbuf.copy_within(link.start..link.end, 0);
                        link.end -= link.start;
                        link.start = 0;
                    } else {
                        let n = link.rbuf.len() * 2;
                        link.rbuf.resize(n, 0);
                    }
                }
                let end = link.end;
                match link.stream.read(&mut link.rbuf[end..]) {
                    Ok(0) => link.alive = false,
                    Ok(n) => link.end += n,
                    Err(e) => match e.kind() {
                        std::io::ErrorKind::WouldBlock => break,
                        std::io::ErrorKind::Interrupted => {}
                        _ => link.alive = false,
                    },
                }
            }
        }
        // Whole fragments: a 4-byte mark, then the fragment. A reply in one fragment (the
        // usual case) is handed over where it lies.
        loop {
            let link = &mut self.links[i];
            let buf = &link.rbuf[link.start..link.end];
            if buf.len() < 4 {
                break;
            }
            let mark = u32::from_be_bytes(buf[..4].try_into().expect("4 bytes"));
            let len = (mark & 0x7fff_ffff) as usize;
            if buf.len() < 4 + len {
                break;
            }
            link.start += 4 + len;
            let last = mark & 0x8000_0000 != 0;
            let whole;
            let record: &[u8] = if last && link.partial.is_empty() {
                &buf[4..4 + len]
            } else {
                link.partial.extend_from_slice(&buf[4..4 + len]);
                if !last {
                    continue;
                }
                whole = std::mem::take(&mut link.partial);
                &whole
            };
            match parse_reply(record) {
                Ok((xid, body)) => {
                    if let Some(f) = self.inflight.remove(&xid) {
                        each(f.tag, Ok(body));
                        finished += 1;
                    }
                }
                Err(r) => {
                    if let Some(f) = r.xid.and_then(|x| self.inflight.remove(&x)) {
                        each(f.tag, Err(CallError::Refused(r.why)));
                        finished += 1;
                    }
                }
            }
        }
        let link = &mut self.links[i];
        if link.start == link.end {
            (link.start, link.end) = (0, 0);
        }
        if !self.links[i].alive {
            let lost: Vec<u32> = self.inflight.iter().filter(|(_, f)| f.link == i).map(|(x, _)| *x).collect();
            for x in lost {
                let f = self.inflight.remove(&x).expect("listed above");
                each(f.tag, Err(CallError::Lost(self.addr)));
                finished += 1;
            }
        }
        finished
    }

    fn expire(&mut self, each: &mut OnReply) -> usize {
        let now = Instant::now();
        let late: Vec<u32> =
            self.inflight.iter().filter(|(_, f)| now.duration_since(f.sent) >= self.timeout).map(|(x, _)| *x).collect();
        for x in &late {
            let f = self.inflight.remove(x).expect("listed above");
            each(f.tag, Err(CallError::Timeout(self.timeout)));
        }
        late.len()
    }
}

/// Writes a whole record on a non-blocking socket, waiting for room up to `timeout`.
fn write_all(stream: &mut TcpStream, mut data: &[u8], timeout: Duration) -> std::io::Result<()> {
    let start = Instant::now();
    while !data.is_empty() {
        match stream.write(data) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if start.elapsed() >= timeout {
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
                let mut fd = libc::pollfd { fd: stream.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
                // SAFETY: one valid pollfd.
                unsafe { libc::poll(&mut fd, 1, 100) };
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn auth() -> AuthSys {
        AuthSys { machine: "t".into(), uid: 0, gid: 0, gids: vec![] }
    }

    /// A peer that answers every call with an accepted, empty reply, in reverse order of
    /// each batch of `batch` calls, and then stops answering (to test timeouts).
    fn peer(batch: usize, answer: usize) -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut answered = 0;
            while answered < answer {
                let mut xids = Vec::new();
                for _ in 0..batch {
                    let mut mark = [0u8; 4];
                    s.read_exact(&mut mark).unwrap();
                    let mut rec = vec![0u8; (u32::from_be_bytes(mark) & 0x7fff_ffff) as usize];
                    s.read_exact(&mut rec).unwrap();
                    xids.push(u32::from_be_bytes(rec[..4].try_into().unwrap()));
                }
                for xid in xids.into_iter().rev() {
                    let mut e = crate::xdr::Encoder::default();
                    e.u32(0x8000_0000 | 28).u32(xid).u32(1).u32(0).u32(0).u32(0).u32(0).u32(xid);
                    s.write_all(&e.buf).unwrap();
                }
                answered += batch;
            }
            std::thread::sleep(Duration::from_secs(5));
        });
        addr
    }

    #[test]
    fn replies_out_of_order_reach_their_callers() {
        let addr = peer(8, 16);
        let mut p = Pipe::connect(addr, 1, auth(), Duration::from_secs(5)).unwrap();
        let mut done = Vec::new();
        for round in 0..2u64 {
            for i in 0..8 {
                p.send(100003, 3, 6, &[], round * 8 + i).unwrap();
            }
            assert_eq!(p.in_flight(), 8);
            p.poll(8, None, &mut done);
        }
        let mut tags: Vec<u64> = done.iter().map(|d| d.tag).collect();
        assert_eq!(tags[..8], [7, 6, 5, 4, 3, 2, 1, 0], "answered in reverse");
        tags.sort();
        assert_eq!(tags, (0..16).collect::<Vec<_>>());
        assert!(done.iter().all(|d| d.result.as_ref().is_ok_and(|b| b.len() == 4)));
    }

    #[test]
    fn fragmented_and_large_replies_are_reassembled() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            for body_len in [4usize, 3 << 20] {
                let mut mark = [0u8; 4];
                s.read_exact(&mut mark).unwrap();
                let mut rec = vec![0u8; (u32::from_be_bytes(mark) & 0x7fff_ffff) as usize];
                s.read_exact(&mut rec).unwrap();
                let mut e = crate::xdr::Encoder::default();
                e.buf.extend_from_slice(&rec[..4]);
                e.u32(1).u32(0).u32(0).u32(0).u32(0);
                e.buf.extend(std::iter::repeat_n(7u8, body_len));
                // Two fragments: the first without the last-fragment bit.
                let (a, b) = e.buf.split_at(10);
                let mut out = Vec::new();
                out.extend_from_slice(&(a.len() as u32).to_be_bytes());
                out.extend_from_slice(a);
                out.extend_from_slice(&(0x8000_0000 | b.len() as u32).to_be_bytes());
                out.extend_from_slice(b);
                s.write_all(&out).unwrap();
            }
            std::thread::sleep(Duration::from_secs(2));
        });
        let mut p = Pipe::connect(addr, 1, auth(), Duration::from_secs(5)).unwrap();
        let mut done = Vec::new();
        for (tag, want) in [(1u64, 4usize), (2, 3 << 20)] {
            p.send(100003, 3, 6, &[], tag).unwrap();
            p.poll(1, None, &mut done);
            let d = done.last().unwrap();
            assert_eq!(d.tag, tag);
            let body = d.result.as_ref().unwrap();
            assert_eq!(body.len(), want);
            assert!(body.iter().all(|b| *b == 7));
        }
    }

    #[test]
    fn a_silent_server_gives_timeouts_not_a_hang() {
        let addr = peer(4, 0);
        let mut p = Pipe::connect(addr, 1, auth(), Duration::from_millis(300)).unwrap();
        for i in 0..3 {
            p.send(100003, 3, 6, &[], i).unwrap();
        }
        let t = Instant::now();
        let mut done = Vec::new();
        p.poll(3, None, &mut done);
        assert!(t.elapsed() < Duration::from_secs(3));
        assert_eq!(done.len(), 3);
        assert!(done.iter().all(|d| d.result == Err(CallError::Timeout(Duration::from_millis(300)))));
        assert_eq!(p.in_flight(), 0);
    }
}
