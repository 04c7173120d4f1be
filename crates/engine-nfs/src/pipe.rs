//! Many RPC calls in flight over N TCP connections (`nconnect`): calls go out round-robin,
//! replies are matched to their caller's tag by XID, and a call without a reply within
//! the timeout completes as timed out (counted by the caller, never waited on forever).
//! This is what the engine's queue depth rides on. The timeout is a deadline for the whole
//! call, from the start of its send: a reply that trickles in, or fragments that never end
//! a record (at most [`MAX_FRAGMENTS`] are taken, then the connection is dropped), do not
//! move it; opening the connections is bounded by one timeout too.
//!
//! Built for few system calls per call, since CPU per operation is what a benchmark client
//! is judged on: a call is one vectored write (a WRITE's data goes from the caller's buffer,
//! not copied into the record first); waiting on one connection is one blocking read with
//! the socket's receive timeout, and on several one poll, then one read of each readable
//! connection (never a read that finds nothing).
//!
//! A large READ's data need not pass through the receive buffer: a call sent with a
//! [`Landing`] has its reply's head read first (a bounded read), and the data then read
//! from the socket straight into the caller's buffer ([`Pipe::poll_replies`] says so).

use crate::rpc::{encode_call_into, parse_reply, AuthSys, RpcError, MAX_FRAGMENTS, MAX_RECORD};
use crate::xdr::{pad, Encoder};
use std::collections::HashMap;
use std::io::{IoSlice, Read};
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

/// Receives each finished call as [`OnReply`] does, saying whether its data landed.
pub type OnLandedReply<'a> = dyn FnMut(u64, Result<Reply<'_>, CallError>) + 'a;

/// A finished call's results, in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply<'a> {
    /// The procedure's results; when its data landed, they end where the data began.
    pub body: &'a [u8],
    /// Bytes of data read straight into the call's [`Landing`] buffer, if any were.
    pub landed: Option<usize>,
}

/// Finds the data in a reply from its results' first bytes: (where the data begins in
/// the results, its length), or None when those bytes do not show it.
pub type Split = fn(&[u8]) -> Option<(usize, usize)>;

/// Where a call's reply data is read to: a buffer of the caller's, and how to find the
/// data in the reply. The data lands only if it is the end of a large one-fragment record
/// (then only its XDR padding follows it) and fits the buffer; otherwise the reply comes
/// whole, as without a landing.
#[derive(Debug, Clone, Copy)]
pub struct Landing {
    at: usize,
    cap: usize,
    split: Split,
}

impl Landing {
    /// # Safety
    /// `at..at + cap` must be valid for writes and used by nothing else from the call's
    /// send until its completion (reply or failure) is handed to the poll callback: the
    /// pipe writes there meanwhile (as a kernel does into an in-flight read's buffer).
    pub unsafe fn new(at: *mut u8, cap: usize, split: Split) -> Landing {
        Landing { at: at as usize, cap, split }
    }
}

/// Fragments from this size on (with their mark) are read up to their end and no further.
const LARGE_FRAGMENT: usize = 64 << 10;

/// Bytes of a record read before deciding whether its data can land (its RPC header and
/// the procedure's head fit in them with room to spare).
const PEEK: usize = 1024;

/// The most a read of landing data waits for before it returns (SO_RCVLOWAT).
const LOW_WATER_MAX: usize = 4 << 20;

/// Landings of more than four times this are read in two halves, the first copied while
/// the second arrives. Reading the data only once all is in adds the whole copy to every
/// call's time (a quarter fewer 1 MiB reads at QD1; all but the last 128 KiB first: still
/// a quarter fewer than in halves); reading each packet burst as it comes costs a wake-up
/// and a system call each (about half the client's CPU per 1 MiB read).
const LAND_PART: usize = 128 << 10;

/// A reply whose data is being read into its caller's buffer.
struct Landed {
    xid: u32,
    /// Where the data goes; 0 once the call has failed (timed out): the rest is dropped.
    at: usize,
    len: usize,
    got: usize,
    /// XDR padding after the data.
    pad: usize,
}

/// One connection. Its socket is blocking, with send and receive timeouts: a read blocks
/// only when the pipe means to wait on it, otherwise only readable sockets are read.
struct Link {
    stream: TcpStream,
    /// Receive buffer: bytes `start..end` are received and not yet parsed (allocated and
    /// zeroed once, grown when a reply needs more).
    rbuf: Vec<u8>,
    start: usize,
    end: usize,
    /// A reply spread over several fragments, so far, and how many fragments it has had
    /// (empty ones too).
    partial: Vec<u8>,
    fragments: usize,
    alive: bool,
    /// The socket's receive timeout (SO_RCVTIMEO) as last set.
    read_timeout: Duration,
    /// The reply whose data is being read into its caller's buffer, and its results up to
    /// the data.
    landing: Option<Landed>,
    head: Vec<u8>,
    /// Bytes of padding after landed data still to skip.
    skip: usize,
    /// The pending fragment's data cannot land: it is read whole into `rbuf`.
    plain: bool,
    /// The socket's SO_RCVLOWAT as last set: how many bytes wake a read (or poll).
    low_water: usize,
}

impl Link {
    /// Makes a blocking read return within `wait`. The timeout is changed (a system call)
    /// only when it would oversleep or is less than half the wait: at a steady queue depth
    /// the wait is nearly the same every time, so it is rarely set.
    fn wait_at_most(&mut self, wait: Duration) {
        if (self.read_timeout > wait || self.read_timeout < wait / 2)
            && self.stream.set_read_timeout(Some(wait)).is_ok()
        {
            self.read_timeout = wait;
        }
    }

    /// Moves the unparsed bytes to the front of the buffer.
    fn move_unparsed_to_front(&mut self) {
        self.rbuf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
    }

    /// Makes a read (or poll) wait for `bytes` (SO_RCVLOWAT): a landing's data is read when
    /// all of it is in (one wake-up and one system call, not one per packet burst), any
    /// other read as soon as anything is. Changed (a system call) only when it differs.
    fn wake_at(&mut self, bytes: usize) {
        let bytes = bytes.clamp(1, i32::MAX as usize);
        if bytes == self.low_water {
            return;
        }
        let v = bytes as libc::c_int;
        // SAFETY: v is a valid c_int for the duration of the call; the descriptor is the
        // stream's own.
        let r = unsafe {
            libc::setsockopt(
                self.stream.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVLOWAT,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            self.low_water = bytes;
        }
    }

    /// One read of what the connection has, blocking up to the receive timeout when it
    /// has nothing; marks the connection dead when it is closed or broken. With `limit`,
    /// no further than that many bytes past the unparsed ones' start.
    fn fill(&mut self, limit: Option<usize>) {
        self.wake_at(1);
        let limit = limit.filter(|l| self.start + l > self.end);
        if limit.is_some_and(|l| self.start + l > self.rbuf.len()) {
            self.move_unparsed_to_front();
        }
        // The unparsed bytes are the start of a fragment still arriving. When its mark is
        // in and it is large, read no further than its end: then it ends the buffer and the
        // next reply starts at the front, instead of its first part (up to a whole large
        // reply) being moved there.
        let pending = &self.rbuf[self.start..self.end];
        let fragment =
            pending.get(..4).map(|m| 4 + (u32::from_be_bytes(m.try_into().expect("4 bytes")) & 0x7fff_ffff) as usize);
        let mut stop = self.rbuf.len();
        if fragment.is_some_and(|len| len > 4 + MAX_RECORD) {
            // Not a reply to anything sent here: the connection is out of step.
            self.alive = false;
            return;
        }
        if let Some(len) = fragment.filter(|len| *len >= LARGE_FRAGMENT) {
            if self.start + len > self.rbuf.len() {
                self.move_unparsed_to_front();
                if len > self.rbuf.len() {
                    self.rbuf.resize(len, 0);
                }
            }
            stop = self.start + len;
        } else if self.end == self.rbuf.len() {
            // Full: move the unparsed bytes to the front, or grow.
            if self.start > 0 {
                self.move_unparsed_to_front();
            } else {
                let n = self.rbuf.len() * 2;
                self.rbuf.resize(n, 0);
            }
            stop = self.rbuf.len();
        }
        if let Some(l) = limit {
            stop = stop.min(self.start + l);
        }
        match self.stream.read(&mut self.rbuf[self.end..stop]) {
            Ok(0) => self.alive = false,
            Ok(n) => self.end += n,
            Err(e) => self.read_failed(e),
        }
    }

    fn read_failed(&mut self, e: std::io::Error) {
        match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted => {}
            _ => self.alive = false,
        }
    }

    /// Sets the low-water mark for what the connection reads next: the first half of a
    /// large landing's data (copied while the second arrives), then the rest; otherwise
    /// any byte.
    fn arm(&mut self) {
        let bytes = self.landing.as_ref().map_or(1, |l| {
            let left = l.len - l.got;
            let part = if l.len > 4 * LAND_PART && l.got < l.len / 2 { l.len / 2 - l.got } else { left };
            part.min(LOW_WATER_MAX)
        });
        self.wake_at(bytes);
    }

    /// One read, not waiting, of the landing reply's data, straight into its buffer (into
    /// the receive buffer once its call failed); what follows the data (its padding and
    /// the next reply's head, at most [`PEEK`] bytes and a little) goes to the receive
    /// buffer in the same system call. Called once poll found the data in (all of it, by
    /// the low-water mark [`Link::arm`] set): a blocking read would not wake up, since
    /// the kernel compares the mark with what is left after its first partial copy.
    fn fill_landing(&mut self) {
        let Some(l) = self.landing.as_mut() else { return };
        // All unparsed bytes were data: the receive buffer is empty.
        (self.start, self.end) = (0, 0);
        let tail = (PEEK + 8).min(self.rbuf.len());
        let (head_room, rest) = self.rbuf.split_at_mut(tail);
        let want = l.len - l.got;
        let first = if l.at == 0 {
            // The call failed: drop its data into the spare part of the buffer.
            libc::iovec { iov_base: rest.as_mut_ptr().cast(), iov_len: want.min(rest.len()) }
        } else {
            libc::iovec { iov_base: (l.at + l.got) as *mut libc::c_void, iov_len: want }
        };
        let mut iov = [first, libc::iovec { iov_base: head_room.as_mut_ptr().cast(), iov_len: head_room.len() }];
        // SAFETY: msghdr is plain data, valid when zeroed (no name, no control data).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = iov.len() as _;
        // SAFETY: both iovecs are valid for writes of their lengths: the first is the
        // landing buffer's unwritten part (Landing::new's contract: the caller's until the
        // call completes, and it has not) or part of `rbuf`, the second the front of
        // `rbuf`; they do not overlap. The descriptor is the stream's own.
        let n = unsafe { libc::recvmsg(self.stream.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
        match n {
            0 => self.alive = false,
            n if n < 0 => self.read_failed(std::io::Error::last_os_error()),
            n => {
                let into_first = (n as usize).min(first.iov_len);
                l.got += into_first;
                self.end = n as usize - into_first;
            }
        }
    }
}

struct InFlight {
    tag: u64,
    link: usize,
    sent: Instant,
    landing: Option<Landing>,
}

pub struct Pipe {
    pub addr: SocketAddr,
    links: Vec<Link>,
    next_link: usize,
    inflight: HashMap<u32, InFlight>,
    next_xid: u32,
    credential: Vec<u8>,
    timeout: Duration,
    /// A connection died with calls in flight on it (they fail at the next poll).
    orphans: bool,
    /// The record being sent and the poll set (one entry per link, in order), kept to
    /// avoid allocations per call.
    out: Encoder,
    fds: Vec<libc::pollfd>,
    /// A call was ever sent with a landing (until then no read is bounded for one).
    landings: bool,
}

impl Pipe {
    pub fn connect(addr: SocketAddr, connections: u32, auth: AuthSys, timeout: Duration) -> Result<Pipe, RpcError> {
        let mut links = Vec::new();
        // All the connections within one timeout, not one each.
        let deadline = Instant::now() + timeout;
        for _ in 0..connections.max(1) {
            let io = |source| RpcError::Io { addr, source };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RpcError::Timeout { addr, timeout });
            }
            let stream = TcpStream::connect_timeout(&addr, left).map_err(io)?;
            stream.set_nodelay(true).map_err(io)?;
            // A send waits for room in the socket buffer no longer than a reply may take.
            stream.set_write_timeout(Some(timeout)).map_err(io)?;
            stream.set_read_timeout(Some(timeout)).map_err(io)?;
            links.push(Link {
                stream,
                rbuf: vec![0; 1 << 20],
                start: 0,
                end: 0,
                partial: Vec::new(),
                fragments: 0,
                alive: true,
                read_timeout: timeout,
                landing: None,
                head: Vec::new(),
                skip: 0,
                plain: false,
                low_water: 1,
            });
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
            orphans: false,
            out: Encoder::default(),
            fds: Vec::new(),
            landings: false,
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
        self.send_with_data(prog, vers, proc_, tag, args, &[])
    }

    /// [`Pipe::send_with`] whose arguments end with `data` (XDR opaque bytes, padded here),
    /// sent from where it lies in the same system call as the rest of the record.
    pub fn send_with_data(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        tag: u64,
        args: impl FnOnce(&mut Encoder),
        data: &[u8],
    ) -> Result<(), CallError> {
        self.send_call(prog, vers, proc_, tag, args, data, None)
    }

    /// [`Pipe::send_with`] whose reply data is read into `landing`'s buffer when it can be
    /// (see [`Landing`]); the reply comes from [`Pipe::poll_replies`].
    pub fn send_with_landing(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        tag: u64,
        args: impl FnOnce(&mut Encoder),
        landing: Landing,
    ) -> Result<(), CallError> {
        self.landings = true;
        self.send_call(prog, vers, proc_, tag, args, &[], Some(landing))
    }

    #[allow(clippy::too_many_arguments)]
    fn send_call(
        &mut self,
        prog: u32,
        vers: u32,
        proc_: u32,
        tag: u64,
        args: impl FnOnce(&mut Encoder),
        data: &[u8],
        landing: Option<Landing>,
    ) -> Result<(), CallError> {
        let n = self.links.len();
        let link = (0..n)
            .map(|i| (self.next_link + i) % n)
            .find(|&i| self.links[i].alive)
            .ok_or(CallError::Lost(self.addr))?;
        self.next_link = (link + 1) % n;
        let xid = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1);
        let padding = &[0u8; 3][..pad(data.len())];
        encode_call_into(&mut self.out, xid, prog, vers, proc_, &self.credential, data.len() + padding.len(), args);
        // The call's deadline starts with its send: a server that takes the record slowly
        // spends the time its reply has.
        let (sent, timeout) = (Instant::now(), self.timeout);
        let stream = &self.links[link].stream;
        let (mut writes, mut shortened) = (0, false);
        let write = |slices: &[IoSlice]| {
            writes += 1;
            if writes > 1 {
                // A write after a partial one (rare: the socket's buffer was full) waits
                // only for what is left of the deadline; the first waits at most the
                // socket's send timeout, the whole timeout.
                let left = timeout.saturating_sub(sent.elapsed());
                if left.is_zero() {
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
                stream.set_write_timeout(Some(left))?;
                shortened = true;
            }
            send_no_signal(stream, slices)
        };
        let result = send_all(write, [&self.out.buf, data, padding]);
        if shortened {
            let _ = stream.set_write_timeout(Some(timeout));
        }
        if result.is_err() {
            self.links[link].alive = false;
            self.orphans = true;
            return Err(CallError::Lost(self.addr));
        }
        self.inflight.insert(xid, InFlight { tag, link, sent, landing });
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
        self.poll_replies(min, wait, &mut |tag, reply| each(tag, reply.map(|r| r.body)));
    }

    /// [`Pipe::poll_with`] saying of each reply whether its data landed (calls sent with
    /// [`Pipe::send_with_landing`] are answered here).
    pub fn poll_replies(&mut self, min: usize, wait: Option<Duration>, each: &mut OnLandedReply) {
        let start = Instant::now();
        let mut now = start;
        let (mut got, mut looked) = (0, false);
        loop {
            got += self.fail_orphans(each) + self.expire(now, each);
            if self.inflight.is_empty() || (looked && got >= min) {
                return;
            }
            let left = match wait {
                Some(w) => w.saturating_sub(now.duration_since(start)),
                None => self.timeout,
            };
            if looked && left.is_zero() {
                return;
            }
            // Once enough have finished, only collect what is already there.
            let sleep = if got >= min { Duration::ZERO } else { left.min(self.until_due(now)) };
            got += self.receive(sleep, wait.is_none(), each);
            looked = true;
            now = Instant::now();
        }
    }

    /// Waits up to `sleep` for replies and completes every whole one received; returns how
    /// many calls finished. With one live connection and `read_wait` (no caller deadline,
    /// only the calls' own, for which the receive timeout's tick is precise enough) the
    /// wait is the read itself, unless a reply's data is landing (then poll waits for it).
    fn receive(&mut self, sleep: Duration, read_wait: bool, each: &mut OnLandedReply) -> usize {
        let mut live = self.links.iter().enumerate().filter(|(_, l)| l.alive).map(|(i, _)| i);
        let one = live.next().filter(|_| live.next().is_none());
        if let Some(i) = one.filter(|i| read_wait && !sleep.is_zero() && self.links[*i].landing.is_none()) {
            self.links[i].wait_at_most(sleep);
            self.read_link(i);
            return self.parse(i, each);
        }
        self.fds.clear();
        self.fds.extend(self.links.iter().map(|l| libc::pollfd {
            // poll skips negative descriptors: dead links keep their place.
            fd: if l.alive { l.stream.as_raw_fd() } else { -1 },
            events: libc::POLLIN,
            revents: 0,
        }));
        let sleep = sleep.min(Duration::from_secs(60));
        let ts = libc::timespec { tv_sec: sleep.as_secs() as libc::time_t, tv_nsec: sleep.subsec_nanos() as _ };
        // SAFETY: fds is a valid array of pollfd and ts a valid timespec for the duration of
        // the call; a null signal mask leaves the mask as it is.
        let ready =
            unsafe { libc::ppoll(self.fds.as_mut_ptr(), self.fds.len() as libc::nfds_t, &ts, std::ptr::null()) };
        let mut finished = 0;
        for i in 0..self.links.len() {
            if ready > 0 && self.fds[i].revents != 0 {
                self.read_link(i);
                finished += self.parse(i, each);
            }
        }
        finished
    }

    /// One read of connection `i`: into a landing buffer, or into the receive buffer, only
    /// as far as a reply's head while its data may still land.
    fn read_link(&mut self, i: usize) {
        if self.links[i].landing.is_some() {
            self.links[i].fill_landing();
        } else {
            let limit = self.read_limit(i);
            self.links[i].fill(limit);
        }
    }

    /// How far the next read of connection `i` may go: up to [`PEEK`] record bytes while
    /// the next reply (not yet seen) or the pending one may be one whose data can land.
    fn read_limit(&self, i: usize) -> Option<usize> {
        if !self.landings {
            return None;
        }
        let link = &self.links[i];
        let pending = &link.rbuf[link.start..link.end];
        let may_land = match pending.get(..8) {
            None => self.inflight.values().any(|f| f.link == i && f.landing.is_some()),
            Some(h) => {
                let mark = u32::from_be_bytes(h[..4].try_into().expect("4 bytes"));
                let xid = u32::from_be_bytes(h[4..].try_into().expect("4 bytes"));
                mark & 0x8000_0000 != 0
                    && (mark & 0x7fff_ffff) as usize >= LARGE_FRAGMENT
                    && link.partial.is_empty()
                    && !link.plain
                    && self.inflight.get(&xid).is_some_and(|f| f.landing.is_some())
            }
        };
        // (With room for the padding of landed data before the next mark.)
        may_land.then_some(8 + PEEK)
    }

    /// Completes every whole reply in connection `i`'s buffer; returns how many calls
    /// finished.
    fn parse(&mut self, i: usize, each: &mut OnLandedReply) -> usize {
        let mut finished = 0;
        // Whole fragments: a 4-byte mark, then the fragment. A reply in one fragment (the
        // usual case) is handed over where it lies.
        loop {
            let link = &mut self.links[i];
            if let Some(l) = &link.landing {
                if l.got < l.len {
                    break;
                }
                let l = link.landing.take().expect("a landing");
                link.skip = l.pad;
                if l.at != 0 {
                    if let Some(f) = self.inflight.remove(&l.xid) {
                        each(f.tag, Ok(Reply { body: &link.head, landed: Some(l.len) }));
                        finished += 1;
                    }
                }
                continue;
            }
            if link.skip > 0 {
                let n = link.skip.min(link.end - link.start);
                link.start += n;
                link.skip -= n;
                if link.skip > 0 {
                    break;
                }
            }
            let buf = &link.rbuf[link.start..link.end];
            if buf.len() < 4 {
                break;
            }
            let mark = u32::from_be_bytes(buf[..4].try_into().expect("4 bytes"));
            let len = (mark & 0x7fff_ffff) as usize;
            if buf.len() < 4 + len {
                let last = mark & 0x8000_0000 != 0;
                if link.plain || !last || !link.partial.is_empty() || len < LARGE_FRAGMENT || buf.len() < 8 {
                    break;
                }
                let xid = u32::from_be_bytes(buf[4..8].try_into().expect("4 bytes"));
                let Some(landing) = self.inflight.get(&xid).and_then(|f| f.landing) else { break };
                if buf.len() < 4 + PEEK {
                    break; // the head is not all in yet
                }
                let record = &buf[4..];
                match land_plan(record, len, landing) {
                    Some((head_at, data_at, data_len)) => {
                        // The data received with the head is copied; the rest lands.
                        let got = (record.len() - data_at).min(data_len);
                        // SAFETY: got <= data_len <= landing.cap; the buffer is the
                        // in-flight call's (Landing::new's contract).
                        unsafe {
                            std::ptr::copy_nonoverlapping(record[data_at..].as_ptr(), landing.at as *mut u8, got)
                        };
                        link.head.clear();
                        link.head.extend_from_slice(&record[head_at..data_at]);
                        link.start += 4 + data_at + got;
                        link.landing = Some(Landed { xid, at: landing.at, len: data_len, got, pad: pad(data_len) });
                        continue;
                    }
                    None => {
                        link.plain = true;
                        break;
                    }
                }
            }
            link.start += 4 + len;
            link.plain = false;
            let last = mark & 0x8000_0000 != 0;
            link.fragments = if last { 0 } else { link.fragments + 1 };
            if !(last && link.partial.is_empty()) && link.partial.len() + len > MAX_RECORD
                || link.fragments >= MAX_FRAGMENTS
            {
                // Fragments that never end: not a reply to anything sent here.
                link.partial = Vec::new();
                link.alive = false;
                break;
            }
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
                        each(f.tag, Ok(Reply { body, landed: None }));
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
        if link.start == link.end && link.landing.is_none() {
            (link.start, link.end) = (0, 0);
        }
        link.arm();
        if !link.alive {
            self.orphans = true;
        }
        finished
    }

    /// Fails the calls in flight on connections that died.
    fn fail_orphans(&mut self, each: &mut OnLandedReply) -> usize {
        if !std::mem::take(&mut self.orphans) {
            return 0;
        }
        let (links, addr, mut failed) = (&self.links, self.addr, 0);
        self.inflight.retain(|_, f| {
            let lost = !links[f.link].alive;
            if lost {
                each(f.tag, Err(CallError::Lost(addr)));
                failed += 1;
            }
            !lost
        });
        self.drop_failed_landings();
        failed
    }

    /// A landing whose call has failed (and so been handed back) lands no more: its
    /// buffer is its caller's again.
    fn drop_failed_landings(&mut self) {
        for link in &mut self.links {
            if let Some(l) = link.landing.as_mut().filter(|l| !self.inflight.contains_key(&l.xid)) {
                l.at = 0;
            }
        }
    }

    /// Fails the calls whose reply is overdue at `now`.
    fn expire(&mut self, now: Instant, each: &mut OnLandedReply) -> usize {
        let (timeout, mut late) = (self.timeout, 0);
        self.inflight.retain(|_, f| {
            let overdue = now.duration_since(f.sent) >= timeout;
            if overdue {
                each(f.tag, Err(CallError::Timeout(timeout)));
                late += 1;
            }
            !overdue
        });
        if late > 0 {
            self.drop_failed_landings();
        }
        late
    }

    /// Time from `now` until the oldest call in flight is overdue.
    fn until_due(&self, now: Instant) -> Duration {
        let oldest = self.inflight.values().map(|f| f.sent).min();
        oldest.map_or(self.timeout, |sent| (sent + self.timeout).saturating_duration_since(now))
    }
}

/// Where a record's data lands, if it can: (where the results begin, where the data
/// begins, its length), from the record's first bytes `record` (the fragment is `len`
/// bytes). Only a reply whose data ends the record (then its padding) and fits the buffer.
fn land_plan(record: &[u8], len: usize, landing: Landing) -> Option<(usize, usize, usize)> {
    let (_, body) = parse_reply(record).ok()?;
    let head_at = record.len() - body.len();
    let (off, data_len) = (landing.split)(body)?;
    let data_at = head_at.checked_add(off).filter(|_| off <= body.len())?;
    let end = data_at.checked_add(data_len)?.checked_add(pad(data_len))?;
    (end == len && data_len <= landing.cap).then_some((head_at, data_at, data_len))
}

/// Writes `parts` back to back with `write` (a vectored write), in one call unless the
/// socket's buffer fills (each wait for room is bounded by `write`: the call's deadline).
fn send_all(mut write: impl FnMut(&[IoSlice]) -> std::io::Result<usize>, parts: [&[u8]; 3]) -> std::io::Result<()> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut sent = 0;
    while sent < total {
        // What is left: the parts not yet sent, the first one cut where the last write ended.
        let (mut slices, mut n, mut skip) = ([IoSlice::new(&[]); 3], 0, sent);
        for part in parts {
            if skip >= part.len() {
                skip -= part.len();
                continue;
            }
            slices[n] = IoSlice::new(&part[skip..]);
            (n, skip) = (n + 1, 0);
        }
        match write(&slices[..n]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(k) => sent += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// writev with MSG_NOSIGNAL: a connection the server closed is an EPIPE error, never a
/// SIGPIPE that would end the process (std's `write_vectored` is a plain writev).
fn send_no_signal(stream: &TcpStream, slices: &[IoSlice]) -> std::io::Result<usize> {
    // SAFETY: msghdr is plain data, valid when zeroed (no name, no control data).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // IoSlice is guaranteed ABI-compatible with iovec on Unix; sendmsg only reads them.
    msg.msg_iov = slices.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = slices.len() as _;
    // SAFETY: msg points at `slices`, valid for the duration of the call; the descriptor is
    // the stream's own, open while `stream` is borrowed.
    let n = unsafe { libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
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
    fn large_replies_back_to_back_are_each_complete() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let sizes = [300_000usize, 5, 1 << 20, 70_000, 2 << 20];
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut out = Vec::new();
            for (i, size) in sizes.iter().enumerate() {
                let mut mark = [0u8; 4];
                s.read_exact(&mut mark).unwrap();
                let mut rec = vec![0u8; (u32::from_be_bytes(mark) & 0x7fff_ffff) as usize];
                s.read_exact(&mut rec).unwrap();
                let mut e = crate::xdr::Encoder::default();
                e.u32(0x8000_0000 | (24 + size) as u32).buf.extend_from_slice(&rec[..4]);
                e.u32(1).u32(0).u32(0).u32(0).u32(0);
                e.buf.extend(std::iter::repeat_n(i as u8, *size));
                out.extend_from_slice(&e.buf);
            }
            // All at once: the replies arrive back to back, split wherever TCP splits them.
            s.write_all(&out).unwrap();
            std::thread::sleep(Duration::from_secs(2));
        });
        let mut p = Pipe::connect(addr, 1, auth(), Duration::from_secs(5)).unwrap();
        for tag in 0..sizes.len() as u64 {
            p.send(100003, 3, 6, &[], tag).unwrap();
        }
        let mut done = Vec::new();
        while done.len() < sizes.len() {
            p.poll(1, None, &mut done);
        }
        for d in &done {
            let body = d.result.as_ref().unwrap();
            assert_eq!(body.len(), sizes[d.tag as usize], "tag {}", d.tag);
            assert!(body.iter().all(|b| *b == d.tag as u8), "tag {}", d.tag);
        }
    }

    #[test]
    fn fragments_that_never_end_drop_the_connection_instead_of_growing_memory() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut mark = [0u8; 4];
            s.read_exact(&mut mark).unwrap();
            let mut rec = vec![0u8; (u32::from_be_bytes(mark) & 0x7fff_ffff) as usize];
            s.read_exact(&mut rec).unwrap();
            // 1 MiB fragments, none of them the last: more than any reply may hold.
            let fragment = [&(1u32 << 20).to_be_bytes()[..], &vec![0u8; 1 << 20]].concat();
            for _ in 0..12 {
                if s.write_all(&fragment).is_err() {
                    return;
                }
            }
            std::thread::sleep(Duration::from_secs(5));
        });
        let mut p = Pipe::connect(addr, 1, auth(), Duration::from_secs(4)).unwrap();
        p.send(100003, 3, 6, &[], 1).unwrap();
        let mut done = Vec::new();
        p.poll(1, None, &mut done);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].result, Err(CallError::Lost(addr)), "lost, not timed out after buffering it all");
    }

    #[test]
    fn a_silent_server_gives_timeouts_not_a_hang() {
        let addr = peer(4, 0);
        let mut p = Pipe::connect(addr, 1, auth(), Duration::from_millis(300)).unwrap();
        // Twice: the first round shortens the socket's receive timeout to meet the deadline,
        // which must not make the second round wake early for ever or oversleep.
        for round in 0..2 {
            for i in 0..3 {
                p.send(100003, 3, 6, &[], round * 3 + i).unwrap();
            }
            let t = Instant::now();
            let mut done = Vec::new();
            p.poll(3, None, &mut done);
            assert!(t.elapsed() >= Duration::from_millis(290) && t.elapsed() < Duration::from_secs(3));
            assert_eq!(done.len(), 3);
            assert!(done.iter().all(|d| d.result == Err(CallError::Timeout(Duration::from_millis(300)))));
            assert_eq!(p.in_flight(), 0);
        }
    }

    #[test]
    fn over_several_connections_a_bounded_wait_ends_on_time_and_timeouts_fire() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let held: Vec<TcpStream> = (0..2).map(|_| l.accept().unwrap().0).collect();
            std::thread::sleep(Duration::from_secs(5));
            drop(held);
        });
        // Call timeouts far beyond the bounded wait: a busy machine may oversleep the 50 ms
        // wait many times over, and it must still end before any call times out.
        let mut p = Pipe::connect(addr, 2, auth(), Duration::from_secs(2)).unwrap();
        p.send(100003, 3, 6, &[], 1).unwrap();
        p.send(100003, 3, 6, &[], 2).unwrap();
        let (t, mut done) = (Instant::now(), Vec::new());
        p.poll(1, Some(Duration::from_millis(50)), &mut done);
        assert!(done.is_empty(), "the bounded wait ended before the calls' timeouts");
        assert!(t.elapsed() >= Duration::from_millis(50) && t.elapsed() < Duration::from_millis(1500));
        p.poll(2, None, &mut done);
        assert!(t.elapsed() < Duration::from_secs(10));
        assert_eq!(done.len(), 2);
        assert!(done.iter().all(|d| d.result == Err(CallError::Timeout(Duration::from_secs(2)))));
    }

    #[test]
    fn data_sent_from_the_callers_buffer_ends_the_record_padded() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut records = Vec::new();
            for _ in 0..2 {
                let mut mark = [0u8; 4];
                s.read_exact(&mut mark).unwrap();
                assert_ne!(u32::from_be_bytes(mark) & 0x8000_0000, 0, "one fragment");
                let mut rec = vec![0u8; (u32::from_be_bytes(mark) & 0x7fff_ffff) as usize];
                s.read_exact(&mut rec).unwrap();
                let mut e = crate::xdr::Encoder::default();
                e.u32(0x8000_0000 | 24).buf.extend_from_slice(&rec[..4]);
                e.u32(1).u32(0).u32(0).u32(0).u32(0);
                s.write_all(&e.buf).unwrap();
                records.push(rec);
            }
            records
        });
        let small = b"hello".to_vec();
        let large: Vec<u8> = (0..(1 << 20) + 2).map(|i| (i % 251) as u8).collect();
        let mut p = Pipe::connect(addr, 1, auth(), Duration::from_secs(5)).unwrap();
        let mut done = Vec::new();
        for (tag, data) in [(1u64, &small), (2, &large)] {
            let head = |e: &mut Encoder| {
                e.u32(0xabcd).u32(data.len() as u32);
            };
            p.send_with_data(100003, 3, 7, tag, head, data).unwrap();
            p.poll(1, None, &mut done);
            assert_eq!(done.last().map(|d| (d.tag, d.result.is_ok())), Some((tag, true)));
        }
        for (rec, data) in server.join().unwrap().iter().zip([&small, &large]) {
            let padded = data.len() + pad(data.len());
            let (args, tail) = rec.split_at(rec.len() - padded);
            let mut d = crate::xdr::Decoder::new(&args[args.len() - 8..]);
            assert_eq!((d.u32().unwrap(), d.u32().unwrap()), (0xabcd, data.len() as u32), "the arguments' head");
            assert_eq!(&tail[..data.len()], &data[..]);
            assert!(tail[data.len()..].iter().all(|b| *b == 0), "zero padding");
        }
    }

    /// An NFSv3 READ reply record (mark included) to the call `rec` carrying `data`.
    fn read_reply(rec: &[u8], data: &[u8]) -> Vec<u8> {
        let mut body = crate::xdr::Encoder::default();
        body.u32(0).bool(false).u32(data.len() as u32).bool(true).opaque(data);
        let mut e = crate::xdr::Encoder::default();
        e.u32(0x8000_0000 | (24 + body.buf.len()) as u32).buf.extend_from_slice(&rec[..4]);
        e.u32(1).u32(0).u32(0).u32(0).u32(0);
        e.buf.extend_from_slice(&body.buf);
        e.buf
    }

    /// Reads one call record from `s`.
    fn call_record(s: &mut TcpStream) -> Vec<u8> {
        let mut mark = [0u8; 4];
        s.read_exact(&mut mark).unwrap();
        let mut rec = vec![0u8; (u32::from_be_bytes(mark) & 0x7fff_ffff) as usize];
        s.read_exact(&mut rec).unwrap();
        rec
    }

    /// The data of READ reply `i` of `len` bytes.
    fn pattern(i: usize, len: usize) -> Vec<u8> {
        (0..len).map(|k| (k * 7 + i * 13 + k / 251) as u8).collect()
    }

    #[test]
    fn large_read_data_lands_in_the_callers_buffer_and_small_or_oversized_data_comes_whole() {
        // (data length, buffer size): landed when large and it fits; whole otherwise.
        let cases = [(300_001usize, 300_001usize), (5, 4096), (1 << 20, 1 << 20), (70_002, 70_002), (2 << 20, 1 << 20)];
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut out = Vec::new();
            for (i, (len, _)) in cases.iter().enumerate() {
                out.extend_from_slice(&read_reply(&call_record(&mut s), &pattern(i, *len)));
            }
            // Back to back, in pieces that cut heads, data and padding anywhere.
            for piece in out.chunks(7919) {
                s.write_all(piece).unwrap();
            }
            std::thread::sleep(Duration::from_secs(2));
        });
        const GUARD: usize = 64;
        let mut bufs: Vec<Vec<u8>> = cases.iter().map(|(_, cap)| vec![0xEEu8; cap + GUARD]).collect();
        let mut p = Pipe::connect(addr, 1, auth(), Duration::from_secs(5)).unwrap();
        for (tag, (buf, (_, cap))) in bufs.iter_mut().zip(cases).enumerate() {
            // SAFETY: each buffer outlives the pipe's use of it and is not touched until
            // every call has completed.
            let landing = unsafe { Landing::new(buf.as_mut_ptr(), cap, crate::proto::read_res_split) };
            p.send_with_landing(100003, 3, 6, tag as u64, |_| {}, landing).unwrap();
        }
        let mut got = Vec::new();
        while got.len() < cases.len() && p.in_flight() > 0 {
            p.poll_replies(1, None, &mut |tag, r| {
                let r = r.unwrap();
                got.push((tag as usize, r.body.to_vec(), r.landed));
            });
        }
        assert_eq!(got.len(), cases.len());
        for (i, body, landed) in got {
            let (len, cap) = cases[i];
            let want = pattern(i, len);
            if len >= LARGE_FRAGMENT && len <= cap {
                assert_eq!(landed, Some(len), "reply {i} landed");
                assert_eq!(crate::proto::read_res_landed(&body, len).unwrap(), Ok((len as u32, true)));
                assert!(bufs[i][..len] == want[..], "reply {i}: the data in the buffer");
            } else {
                assert_eq!(landed, None, "reply {i} came whole");
                assert_eq!(crate::proto::read_res_data(&body).unwrap(), Ok((&want[..], true)));
                assert!(bufs[i][..cap].iter().all(|b| *b == 0xEE), "reply {i}: its buffer untouched");
            }
            assert!(bufs[i][cap..].iter().all(|b| *b == 0xEE), "reply {i}: nothing past the buffer's end");
        }
    }

    #[test]
    fn landing_data_that_arrives_in_pauses_completes_the_call_not_a_timeout() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let len = 900_000;
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            for round in 0..2 {
                let reply = read_reply(&call_record(&mut s), &pattern(round, len));
                // The head and some data, a pause, more, a pause, the rest: a read that
                // waited for all the data after copying part of it would never wake.
                for piece in reply.chunks(reply.len() / 3 + 1) {
                    s.write_all(piece).unwrap();
                    std::thread::sleep(Duration::from_millis(150));
                }
            }
            std::thread::sleep(Duration::from_secs(3));
        });
        let mut buf = vec![0u8; len];
        let mut p = Pipe::connect(addr, 1, auth(), Duration::from_secs(2)).unwrap();
        for round in 0..2 {
            // SAFETY: `buf` outlives the call and is read only after it completed.
            let landing = unsafe { Landing::new(buf.as_mut_ptr(), len, crate::proto::read_res_split) };
            p.send_with_landing(100003, 3, 6, round as u64, |_| {}, landing).unwrap();
            let mut done = Vec::new();
            // Both ways of waiting: the calls' own timeout, and a caller's deadline.
            let wait = (round == 1).then_some(Duration::from_secs(5));
            p.poll_replies(1, wait, &mut |tag, r| done.push((tag, r.map(|r| r.landed))));
            assert_eq!(done, [(round as u64, Ok(Some(len)))], "round {round}");
            assert!(buf == pattern(round, len), "round {round}: the data landed");
        }
    }

    #[test]
    fn data_of_a_call_that_timed_out_while_landing_no_longer_lands() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let (go_on, wait) = std::sync::mpsc::channel::<()>();
        let len = 200_000;
        std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let first = read_reply(&call_record(&mut s), &pattern(0, len));
            // The head and part of the data, then silence until the call has timed out.
            s.write_all(&first[..first.len() / 2]).unwrap();
            wait.recv().unwrap();
            let second = read_reply(&call_record(&mut s), b"next");
            s.write_all(&[&first[first.len() / 2..], &second[..]].concat()).unwrap();
            std::thread::sleep(Duration::from_secs(2));
        });
        let mut buf = vec![0u8; len];
        let mut p = Pipe::connect(addr, 1, auth(), Duration::from_millis(400)).unwrap();
        // SAFETY: `buf` outlives the pipe's use of it (the pipe stops at the timeout).
        let landing = unsafe { Landing::new(buf.as_mut_ptr(), len, crate::proto::read_res_split) };
        p.send_with_landing(100003, 3, 6, 1, |_| {}, landing).unwrap();
        let mut done = Vec::new();
        p.poll_replies(1, None, &mut |tag, r| done.push((tag, r.map(|r| r.landed))));
        assert_eq!(done, [(1, Err(CallError::Timeout(Duration::from_millis(400))))]);
        // The buffer is its owner's again: reused, it must stay as the owner left it.
        buf.fill(0x55);
        p.send(100003, 3, 6, &[], 2).unwrap();
        go_on.send(()).unwrap();
        let mut second = Vec::new();
        p.poll(1, None, &mut second);
        assert_eq!(second.len(), 1);
        assert_eq!(second[0].tag, 2);
        assert_eq!(crate::proto::read_res_data(second[0].result.as_ref().unwrap()).unwrap(), Ok((&b"next"[..], true)));
        assert!(buf.iter().all(|b| *b == 0x55), "nothing landed after the timeout");
    }

    /// Takes at most `step` bytes per write and is interrupted every third call.
    struct Trickle {
        got: Vec<u8>,
        step: usize,
        calls: usize,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }
        fn write_vectored(&mut self, bufs: &[IoSlice]) -> std::io::Result<usize> {
            self.calls += 1;
            if self.calls.is_multiple_of(3) {
                return Err(std::io::ErrorKind::Interrupted.into());
            }
            let before = self.got.len();
            for b in bufs {
                let room = self.step - (self.got.len() - before);
                self.got.extend_from_slice(&b[..b.len().min(room)]);
            }
            Ok(self.got.len() - before)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_partial_vectored_write_resumes_where_it_stopped() {
        let parts: [&[u8]; 3] = [b"head", b"", b"0123456789"];
        for step in [1, 3, 4, 5, 13, 100] {
            let mut out = Trickle { got: Vec::new(), step, calls: 0 };
            send_all(|slices| out.write_vectored(slices), parts).unwrap();
            assert_eq!(out.got, b"head0123456789", "step {step}");
        }
    }
}
