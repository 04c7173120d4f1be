//! One SMB2/3 connection and its logged-in session, driven by the thread that owns it: no
//! runtime, no tasks. Requests are appended to an output buffer and sent when the owner
//! waits ([`Conn::pump`]); replies are read in large reads and matched to their requests by
//! message id. The pieces that make it a load generator:
//!
//! - **Credits.** Every reply grants credits, an interim STATUS_PENDING reply included
//!   (Samba grants them there, and none in the final reply of a request it completed
//!   asynchronously). Each request asks for its own cost back plus what keeps the session
//!   at its target, so `iodepth` requests of `bs` bytes stay in flight. A request that
//!   finds too few credits waits for them inside [`Conn::send`], under its deadline.
//! - **Reads land in place.** An unencrypted READ reply's data is received straight into
//!   the I/O's buffer (verified there when the session signs); no copy.
//! - **Every request has a deadline** (the target's timeout): one that outlives it
//!   completes as ETIMEDOUT, and its late reply is dropped (its credits kept).
//! - **A lost connection** (closed, reset, a reply that does not parse) completes every
//!   request in flight with its errno and refuses new ones.

use crate::auth::Login;
use crate::crypto::{self, Cipher, PreauthHash, Sealer, Signer, SigningAlg};
use crate::errors;
use crate::wire::{self, Header, HEADER};
use ioscope_engine_table::smb::{Encrypt, Target, GUEST};
use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// A failed result: a negative errno or an NTSTATUS as [`errors`] encodes it.
pub type Failed = i64;

/// The largest message accepted from a server: its largest READ, WRITE or transaction
/// (at most 16 MiB) and the headers (a transform's included); before NEGOTIATE, 64 KiB.
const MAX_FRAME: usize = 16 << 20 | 4096;
const FRAME_SLACK: usize = 4096;
/// The receive buffer's usual size: many small replies per read(2).
const RX_BYTES: usize = 256 << 10;
/// Tags of the connection's own calls (the engine's are slot numbers).
const CALL_TAG: u64 = 1 << 63;

/// Where a reply goes.
#[derive(Clone, Copy, Debug)]
pub enum Sink {
    /// The whole message, for the caller to read.
    Keep,
    /// A READ's data, into the buffer at this address of this many bytes.
    Into { at: usize, cap: usize },
    /// A WRITE's count of bytes written.
    Count,
    /// Only whether it succeeded.
    Status,
}

struct Call {
    tag: u64,
    command: u16,
    sink: Sink,
    charge: u16,
    deadline: Instant,
    /// Completed already (timed out): the reply is dropped when it comes.
    abandoned: bool,
}

/// A completed request: `result` is bytes moved (0 for most) or a failure; `msg` the whole
/// reply for [`Sink::Keep`].
#[derive(Debug)]
pub struct Done {
    pub tag: u64,
    pub status: u32,
    pub result: i64,
    pub msg: Vec<u8>,
}

/// WRITE data to send from where it lies: at `pos` of the output buffer, `len` bytes at
/// `at` (the I/O's buffer, or `own` once the request no longer owns that buffer).
struct Lent {
    pos: usize,
    at: usize,
    len: usize,
    id: u64,
    own: Option<Box<[u8]>>,
}

/// WRITE data at least this long is sent from the I/O's buffer (signed there when the
/// session signs) unless the session encrypts (a copy costs more than the bookkeeping).
const LEND_BYTES: usize = 16 << 10;

/// A READ reply whose data is being received into the I/O's buffer.
struct Direct {
    tag: u64,
    head: [u8; wire::READ_DATA_OFFSET],
    at: usize,
    len: usize,
    got: usize,
    deadline: Instant,
}

/// What the connection and its session agreed with the server.
#[derive(Clone, Debug, Default)]
pub struct Agreed {
    pub dialect: u16,
    pub max_read: u32,
    pub max_write: u32,
    pub max_transact: u32,
    pub signing: Option<SigningAlg>,
    pub cipher: Option<Cipher>,
}

impl Agreed {
    pub fn dialect_name(&self) -> String {
        let d = self.dialect;
        format!("SMB {}.{}.{}", d >> 8, (d >> 4) & 0xF, d & 0xF)
    }

    /// "signed (AES-128-GMAC)", "encrypted (AES-128-GCM)" or "unsigned".
    pub fn protection(&self) -> String {
        match (self.cipher, self.signing) {
            (Some(c), _) => format!("encrypted ({})", c.name()),
            (None, Some(s)) => format!("signed ({})", s.name()),
            (None, None) => "unsigned".to_string(),
        }
    }
}

pub struct Conn {
    sock: TcpStream,
    timeout: Duration,
    pub agreed: Agreed,
    out: Vec<u8>,
    out_at: usize,
    /// WRITE data sent from the I/O's own buffer, each after the bytes of `out` before its
    /// position (no copy into `out`).
    lent: VecDeque<Lent>,
    /// Bytes of the first of `lent` already sent.
    lent_sent: usize,
    rx: Vec<u8>,
    rx_start: usize,
    rx_end: usize,
    direct: Option<Direct>,
    next_id: u64,
    /// The largest message accepted (see [`MAX_FRAME`]).
    max_frame: usize,
    large_mtu: bool,
    credits: u32,
    in_flight_charge: u32,
    target_credits: u32,
    session_id: u64,
    tree_id: u32,
    signer: Option<Signer>,
    /// Sign every request (and require signed replies).
    sign: bool,
    sealer: Option<Sealer>,
    /// Encrypt every request (replies in transforms are decrypted either way).
    seal: bool,
    preauth: Option<PreauthHash>,
    calls: HashMap<u64, Call>,
    /// Completions of the engine's requests, in order (taken by [`Conn::completed`]).
    done: VecDeque<Done>,
    /// Completions of the connection's and the session's own requests (tags with
    /// [`CALL_TAG`]), taken by tag.
    own: VecDeque<Done>,
    /// Why the connection is gone (an errno), once it is.
    gone: Option<i64>,
    scratch: Vec<u8>,
}

fn errno(e: i32) -> i64 {
    -(e as i64)
}

impl Conn {
    /// Connects, negotiates, logs in and connects to the share; `credits`: how many credits
    /// to keep asking the server for (requests in flight times their cost).
    pub fn connect(target: &Target, password: &str, credits: u16) -> Result<Conn, String> {
        let place = format!("{}:{}", target.host, target.port);
        let sock = dial(&target.host, target.port, target.timeout).map_err(|e| format!("{place}: {e}"))?;
        sock.set_nodelay(true).map_err(|e| format!("{place}: TCP_NODELAY: {e}"))?;
        sock.set_nonblocking(true).map_err(|e| format!("{place}: {e}"))?;
        let mut c = Conn {
            sock,
            timeout: target.timeout,
            agreed: Agreed::default(),
            out: Vec::with_capacity(64 << 10),
            out_at: 0,
            lent: VecDeque::new(),
            lent_sent: 0,
            rx: vec![0u8; RX_BYTES],
            rx_start: 0,
            rx_end: 0,
            direct: None,
            next_id: 0,
            max_frame: 64 << 10,
            large_mtu: false,
            credits: 1,
            in_flight_charge: 0,
            target_credits: u32::from(credits.max(16)),
            session_id: 0,
            tree_id: 0,
            signer: None,
            sign: false,
            sealer: None,
            seal: false,
            preauth: Some(PreauthHash::new()),
            calls: HashMap::new(),
            done: VecDeque::new(),
            own: VecDeque::new(),
            gone: None,
            scratch: Vec::new(),
        };
        let why = |e: Failed| format!("{place}: {}", describe(e));
        // NEGOTIATE.
        let mut guid = [0u8; 16];
        let mut salt = [0u8; 32];
        crypto::random_bytes(&mut guid);
        crypto::random_bytes(&mut salt);
        let mode = if target.sign { wire::SIGNING_REQUIRED } else { wire::SIGNING_ENABLED };
        let (status, msg) = c.call(wire::NEGOTIATE, 0, |o| wire::negotiate(o, mode, &guid, &salt)).map_err(why)?;
        if status != 0 {
            return Err(format!("{place}: NEGOTIATE: {}", status_text(status)));
        }
        let n = wire::parse_negotiate(&msg).ok_or_else(|| format!("{place}: a NEGOTIATE reply that does not parse"))?;
        if !wire::DIALECTS.contains(&n.dialect) {
            return Err(format!("{place}: the server chose dialect {:#06x}, which was not offered", n.dialect));
        }
        if let Some(h) = c.preauth.as_mut() {
            h.update(&msg);
        }
        c.large_mtu = n.dialect != wire::DIALECT_202 && n.capabilities & wire::CAP_LARGE_MTU != 0;
        let largest = n.max_read.max(n.max_write).max(n.max_transact).max(64 << 10) as usize;
        c.max_frame = largest.saturating_add(FRAME_SLACK).min(MAX_FRAME);
        let signing = match n.dialect {
            wire::DIALECT_202 | wire::DIALECT_210 => SigningAlg::HmacSha256,
            wire::DIALECT_311 => n.signing.and_then(SigningAlg::from_id).unwrap_or(SigningAlg::AesCmac),
            _ => SigningAlg::AesCmac,
        };
        let cipher = match n.dialect {
            wire::DIALECT_311 => n.cipher.and_then(Cipher::from_id),
            wire::DIALECT_300 | wire::DIALECT_302 if n.capabilities & wire::CAP_ENCRYPTION != 0 => {
                Some(Cipher::Aes128Ccm)
            }
            _ => None,
        };
        c.agreed = Agreed {
            dialect: n.dialect,
            max_read: n.max_read,
            max_write: n.max_write,
            max_transact: n.max_transact,
            signing: None,
            cipher: None,
        };
        // SESSION_SETUP rounds.
        let guest = target.user == GUEST;
        let user = target.user.replace(';', "\\");
        let mut login = Login::new(&user, password).map_err(|e| format!("{place}: {e}"))?;
        let mut server_token = Vec::new();
        let (flags, last) = loop {
            let token = login.step(&server_token).map_err(|e| format!("{place}: {e}"))?;
            let (status, msg) = c
                .call(wire::SESSION_SETUP, 0, |o| wire::session_setup(o, wire::SIGNING_ENABLED as u8, &token))
                .map_err(why)?;
            let h = Header::parse(&msg).ok_or_else(|| format!("{place}: a SESSION_SETUP reply that does not parse"))?;
            c.session_id = h.session_id;
            let (flags, t) = wire::parse_session_setup(&msg)
                .ok_or_else(|| format!("{place}: a SESSION_SETUP reply that does not parse"))?;
            match status {
                wire::STATUS_MORE_PROCESSING_REQUIRED => {
                    if let Some(h) = c.preauth.as_mut() {
                        h.update(&msg);
                    }
                    server_token = t;
                }
                0 => {
                    if !login.done() && !t.is_empty() {
                        login.step(&t).map_err(|e| format!("{place}: {e}"))?;
                    }
                    break (flags, msg);
                }
                s => return Err(format!("{place} as {}: {}", target.user, status_text(s))),
            }
        };
        let preauth = c.preauth.take().map(|h| h.0).unwrap_or([0u8; 64]);
        let is_guest = flags & (wire::SESSION_IS_GUEST | wire::SESSION_IS_NULL) != 0;
        if !is_guest {
            let key = login.session_key().map_err(|e| format!("{place}: {e}"))?;
            let keys = crypto::session_keys(n.dialect, &key, &preauth, cipher);
            let signer = Signer::new(signing, &keys.signing);
            // 3.1.1: the final SESSION_SETUP reply is signed with the new keys, which
            // proves the negotiation was not tampered with.
            if n.dialect == wire::DIALECT_311 && !signer.verify(&last) {
                return Err(format!("{place}: the server's signature of the session does not verify"));
            }
            c.signer = Some(signer);
            if let Some(cipher) = cipher {
                c.sealer = Some(Sealer::new(cipher, &keys.encrypt, &keys.decrypt));
            }
        } else if !guest {
            return Err(format!("{place}: the server logged {} in as a guest (wrong password?)", target.user));
        }
        let server_requires = n.security_mode & wire::SIGNING_REQUIRED != 0;
        let mut seal = match target.encrypt {
            Encrypt::Required => true,
            Encrypt::Disabled => false,
            Encrypt::Allowed => flags & wire::SESSION_ENCRYPT_DATA != 0,
        };
        if flags & wire::SESSION_ENCRYPT_DATA != 0 && target.encrypt == Encrypt::Disabled {
            return Err(format!("{place}: the server requires encryption and the target says encrypt=disabled"));
        }
        if seal && c.sealer.is_none() {
            return Err(format!(
                "{place}: encryption is required and {} (no common cipher, or a guest session) cannot encrypt",
                c.agreed.dialect_name()
            ));
        }
        if (server_requires || target.sign) && !seal {
            if c.signer.is_none() {
                return Err(format!("{place}: signing is required and a guest session cannot sign"));
            }
            c.sign = true;
        }
        // TREE_CONNECT: signed in 3.1.1 whenever the session can sign (MS-SMB2 3.2.4.1.1).
        let host = if target.host.contains(':') { format!("[{}]", target.host) } else { target.host.clone() };
        let unc = format!("\\\\{host}\\{}", target.share);
        let signed_tree = c.signer.is_some() && n.dialect == wire::DIALECT_311;
        let was = c.sign;
        c.sign |= signed_tree && !seal;
        c.set_seal(seal);
        let r = c.call(wire::TREE_CONNECT, 0, |o| wire::tree_connect(o, &unc));
        c.sign = was;
        let (status, msg) = r.map_err(why)?;
        if status != 0 {
            return Err(format!("{place} share {} as {}: {}", target.share, target.user, status_text(status)));
        }
        let (kind, share_flags) = wire::parse_tree_connect(&msg)
            .ok_or_else(|| format!("{place}: a TREE_CONNECT reply that does not parse"))?;
        if kind != 1 {
            return Err(format!("{place}: share {} is not a disk share (type {kind})", target.share));
        }
        c.tree_id = Header::parse(&msg).and_then(|_| wire::u32_at(&msg, 36)).unwrap_or(0);
        if share_flags & wire::SHARE_ENCRYPT_DATA != 0 && !seal {
            if target.encrypt == Encrypt::Disabled || c.sealer.is_none() {
                return Err(format!("{place}: share {} requires encryption", target.share));
            }
            seal = true;
            c.set_seal(true);
        }
        c.agreed.signing = if c.sign { Some(signing) } else { None };
        c.agreed.cipher = if seal { cipher } else { None };
        Ok(c)
    }

    /// Encrypts the requests from now on (when the session has keys to).
    fn set_seal(&mut self, seal: bool) {
        self.seal = seal && self.sealer.is_some();
    }

    /// Why the connection is gone, if it is.
    pub fn gone(&self) -> Option<i64> {
        self.gone
    }

    /// Queues a request: `body` appends its body after the header, `data` follows it (a
    /// WRITE's), `bytes`: what it moves (its credit cost). `lent`: `data` stays where it
    /// is, unchanged, until the request completes (an I/O's buffer), so it is sent from
    /// there without a copy unless the session encrypts. Waits for credits when the session
    /// has too few (under the request's deadline). Returns its message id.
    #[allow(clippy::too_many_arguments)]
    pub fn send(
        &mut self,
        command: u16,
        bytes: usize,
        tag: u64,
        sink: Sink,
        body: impl FnOnce(&mut Vec<u8>),
        data: &[u8],
        lent: bool,
    ) -> Result<u64, Failed> {
        if let Some(e) = self.gone {
            return Err(e);
        }
        let deadline = Instant::now() + self.timeout;
        let charge = if self.large_mtu { wire::credit_charge(bytes) } else { 1 };
        if self.credits < u32::from(charge) {
            let want = u32::from(charge);
            self.pump(deadline, |c| c.credits >= want)?;
            if self.credits < want {
                return Err(self.gone.unwrap_or(errno(libc::ETIMEDOUT)));
            }
        }
        let id = self.next_id;
        self.next_id += u64::from(charge.max(1));
        self.credits -= u32::from(charge);
        self.in_flight_charge += u32::from(charge);
        let held = self.credits + self.in_flight_charge;
        let ask = u32::from(charge) + self.target_credits.saturating_sub(held).min(512);
        let ask = u16::try_from(ask).unwrap_or(u16::MAX);
        let wire_charge = if self.large_mtu { charge } else { 0 };
        let (tree, session) = match command {
            wire::NEGOTIATE => (0, 0),
            wire::SESSION_SETUP => (0, self.session_id),
            _ => (self.tree_id, self.session_id),
        };
        let seal = self.seal && !matches!(command, wire::NEGOTIATE | wire::SESSION_SETUP);
        let sign =
            !seal && self.sign && self.signer.is_some() && !matches!(command, wire::NEGOTIATE | wire::SESSION_SETUP);
        let msg = if seal { &mut self.scratch } else { &mut self.out };
        let start = msg.len();
        if !seal {
            msg.extend_from_slice(&[0u8; 4]);
        }
        let m0 = msg.len();
        wire::put_header(msg, command, wire_charge, ask, id, tree, session);
        body(msg);
        let lend = lent && !seal && data.len() >= LEND_BYTES;
        if lend {
            let pos = msg.len();
            self.lent.push_back(Lent { pos, at: data.as_ptr() as usize, len: data.len(), id, own: None });
        } else {
            msg.extend_from_slice(data);
        }
        let len = msg.len() - m0 + if lend { data.len() } else { 0 };
        if sign {
            if let Some(s) = &self.signer {
                s.sign_with_tail(&mut msg[m0..], if lend { data } else { &[] });
            }
        }
        if let Some(h) = self.preauth.as_mut() {
            if matches!(command, wire::NEGOTIATE | wire::SESSION_SETUP) {
                h.update(&msg[m0..]);
            }
        }
        if seal {
            let plain = std::mem::take(&mut self.scratch);
            let at = self.out.len();
            self.out.extend_from_slice(&[0u8; 4]);
            if let Some(s) = self.sealer.as_mut() {
                s.seal(self.session_id, &plain[m0..], &mut self.out);
            }
            let n = (self.out.len() - at - 4) as u32;
            self.out[at..at + 4].copy_from_slice(&n.to_be_bytes());
            self.scratch = plain;
            self.scratch.clear();
        } else {
            self.out[start..start + 4].copy_from_slice(&(len as u32).to_be_bytes());
        }
        self.calls.insert(id, Call { tag, command, sink, charge, deadline, abandoned: false });
        Ok(id)
    }

    /// A request and its reply, waited for: (status, the whole reply). Replies to other
    /// requests that come meanwhile wait in the completed queue.
    pub fn call(
        &mut self,
        command: u16,
        bytes: usize,
        body: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(u32, Vec<u8>), Failed> {
        let id = self.next_id;
        let tag = CALL_TAG | id;
        self.send(command, bytes, tag, Sink::Keep, body, &[], false)?;
        let deadline = Instant::now() + self.timeout + Duration::from_millis(100);
        self.pump(deadline, |c| c.has_done(|t| t == tag))?;
        match self.take_where(|t| t == tag) {
            Some(d) if d.result < 0 && d.msg.is_empty() => Err(d.result),
            Some(d) => Ok((d.status, d.msg)),
            None => Err(self.gone.unwrap_or(errno(libc::ETIMEDOUT))),
        }
    }

    /// The first of the connection's own completions whose tag `pred` accepts.
    pub fn take_where(&mut self, pred: impl Fn(u64) -> bool) -> Option<Done> {
        let i = self.own.iter().position(|d| pred(d.tag))?;
        self.own.remove(i)
    }

    /// Whether one of the connection's own completions whose tag `pred` accepts has come.
    pub fn has_done(&self, pred: impl Fn(u64) -> bool) -> bool {
        self.own.iter().any(|d| pred(d.tag))
    }

    /// Files a completion where its taker looks for it.
    fn finish(&mut self, d: Done) {
        if d.tag & CALL_TAG == 0 {
            self.done.push_back(d);
        } else {
            self.own.push_back(d);
        }
    }

    /// LOGOFF, waiting at most 2 s for its reply.
    pub fn logoff(&mut self) -> Result<(), Failed> {
        self.timeout = self.timeout.min(Duration::from_secs(2));
        self.call(wire::LOGOFF, 0, wire::logoff).map(drop)
    }

    /// Completions of the engine's requests, oldest first.
    pub fn completed(&mut self) -> std::collections::vec_deque::Drain<'_, Done> {
        self.done.drain(..)
    }

    /// How many of the engine's requests have completed and not been taken.
    pub fn completed_count(&self) -> usize {
        self.done.len()
    }

    /// Requests sent and not completed (timed-out ones excluded).
    pub fn in_flight(&self) -> usize {
        self.calls.values().filter(|c| !c.abandoned).count() + usize::from(self.direct.is_some())
    }

    /// Sends what is queued and receives replies until `until` holds or `deadline` passes
    /// (requests past their own deadline complete as ETIMEDOUT meanwhile). Fails only when
    /// the connection is gone.
    pub fn pump(&mut self, deadline: Instant, until: impl Fn(&Conn) -> bool) -> Result<(), Failed> {
        // Read only once poll(2) says there is something: at one request in flight, a
        // read before the reply has come would be a wasted system call.
        let mut readable = false;
        loop {
            if let Some(e) = self.gone {
                return if until(self) { Ok(()) } else { Err(e) };
            }
            let r = self.flush_out().and_then(|()| if readable { self.receive() } else { Ok(()) });
            if let Err(e) = r {
                self.lose(e);
                continue;
            }
            let now = Instant::now();
            self.expire(now);
            if until(self) || now >= deadline {
                return Ok(());
            }
            let next = self.calls.values().filter(|c| !c.abandoned).map(|c| c.deadline).min().unwrap_or(deadline);
            let wait = next.min(deadline).saturating_duration_since(now);
            let mut events = libc::POLLIN;
            if self.sending() {
                events |= libc::POLLOUT;
            }
            let mut p = libc::pollfd { fd: self.sock.as_raw_fd(), events, revents: 0 };
            // Rounded up: a wait of 0.3 ms is not a busy loop of zero-timeout polls.
            let ms = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            // SAFETY: one pollfd, alive for the call.
            let n = unsafe { libc::poll(&mut p, 1, ms) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    self.lose(errors::result_of_io(&e));
                }
            }
            readable = n > 0 && p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0;
        }
    }

    /// Requests past their deadline complete as ETIMEDOUT; their replies will be dropped.
    fn expire(&mut self, now: Instant) {
        if let Some(d) = &self.direct {
            if d.deadline <= now {
                // A reply stopped in the middle: the stream cannot be resynchronized.
                self.lose(errno(libc::ETIMEDOUT));
                return;
            }
        }
        let mut late = Vec::new();
        for (id, c) in self.calls.iter_mut() {
            if !c.abandoned && c.deadline <= now {
                c.abandoned = true;
                late.push((*id, c.tag));
            }
        }
        for (id, tag) in late {
            self.finish(Done { tag, status: 0, result: errno(libc::ETIMEDOUT), msg: Vec::new() });
            self.own_lent(Some(id));
        }
    }

    /// The connection is gone: every request in flight fails with `e`.
    fn lose(&mut self, e: i64) {
        if self.gone.is_some() {
            return;
        }
        self.gone = Some(e);
        if let Some(d) = self.direct.take() {
            self.finish(Done { tag: d.tag, status: 0, result: e, msg: Vec::new() });
        }
        for (_, c) in std::mem::take(&mut self.calls) {
            if !c.abandoned {
                self.finish(Done { tag: c.tag, status: 0, result: e, msg: Vec::new() });
            }
        }
        self.out.clear();
        self.out_at = 0;
        self.lent.clear();
        self.lent_sent = 0;
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
    }

    /// Whether bytes wait to be sent.
    fn sending(&self) -> bool {
        self.out_at < self.out.len() || !self.lent.is_empty()
    }

    /// Sends what is queued, as far as the socket takes it (writev of the output buffer
    /// and the lent data between its parts).
    fn flush_out(&mut self) -> Result<(), Failed> {
        while self.sending() {
            let mut iov = [libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; 16];
            let mut n_iov = 0;
            let mut pos = self.out_at;
            let mut k = 0;
            while n_iov < iov.len() {
                let next = self.lent.get(k).map_or(self.out.len(), |l| l.pos);
                if pos < next {
                    iov[n_iov] = libc::iovec { iov_base: self.out[pos..].as_ptr() as *mut _, iov_len: next - pos };
                    pos = next;
                } else if let Some(l) = self.lent.get(k) {
                    let skip = if k == 0 { self.lent_sent } else { 0 };
                    iov[n_iov] = libc::iovec { iov_base: (l.at + skip) as *mut _, iov_len: l.len - skip };
                    k += 1;
                } else {
                    break;
                }
                n_iov += 1;
            }
            // SAFETY: every iovec points into `out` or at lent data that is alive until its
            // request completes (or into its own copy).
            let r = unsafe { libc::writev(self.sock.as_raw_fd(), iov.as_ptr(), n_iov as libc::c_int) };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    std::io::ErrorKind::WouldBlock => return Ok(()),
                    std::io::ErrorKind::Interrupted => continue,
                    _ => return Err(errors::result_of_io(&e)),
                }
            }
            if r == 0 {
                return Err(errno(libc::ECONNRESET));
            }
            let mut n = r as usize;
            while n > 0 {
                let next = self.lent.front().map_or(self.out.len(), |l| l.pos);
                if self.out_at < next {
                    let take = n.min(next - self.out_at);
                    self.out_at += take;
                    n -= take;
                } else if let Some(l) = self.lent.front() {
                    let take = n.min(l.len - self.lent_sent);
                    self.lent_sent += take;
                    n -= take;
                    if self.lent_sent == l.len {
                        self.lent.pop_front();
                        self.lent_sent = 0;
                    }
                } else {
                    break;
                }
            }
        }
        self.out.clear();
        self.out_at = 0;
        Ok(())
    }

    /// Copies the lent data of request `id` (or of every request, `None`) that is not
    /// sent yet: its I/O's buffer is about to be handed back.
    fn own_lent(&mut self, id: Option<u64>) {
        for l in self.lent.iter_mut() {
            if l.own.is_none() && id.is_none_or(|i| i == l.id) {
                // SAFETY: the lent data, still alive (its request has not completed).
                let copy: Box<[u8]> = unsafe { std::slice::from_raw_parts(l.at as *const u8, l.len) }.into();
                l.at = copy.as_ptr() as usize;
                l.own = Some(copy);
            }
        }
    }

    /// Before the I/O buffers go away: no request's data is sent from them any more.
    pub fn release_buffers(&mut self) {
        self.own_lent(None);
    }

    /// Reads what has arrived and handles every whole reply in it.
    fn receive(&mut self) -> Result<(), Failed> {
        loop {
            if let Some(d) = self.direct.as_mut() {
                // SAFETY: the buffer of an I/O in flight (see Sink::Into), `len` bytes,
                // of which `got` are in; the engine does not touch it until completion.
                let buf = unsafe { std::slice::from_raw_parts_mut((d.at + d.got) as *mut u8, d.len - d.got) };
                let asked = buf.len();
                let Some(n) = read_some(&self.sock, buf)? else { return Ok(()) };
                d.got += n;
                if d.got == d.len {
                    if let Some(d) = self.direct.take() {
                        self.finish_direct(d);
                    }
                }
                // A short read drained the socket: poll(2) says when there is more.
                if n < asked {
                    return Ok(());
                }
                continue;
            }
            if self.rx_end == self.rx.len() {
                self.make_room(0);
            }
            let asked = self.rx.len() - self.rx_end;
            let Some(n) = read_some(&self.sock, &mut self.rx[self.rx_end..])? else { return Ok(()) };
            self.rx_end += n;
            self.frames()?;
            if n < asked && self.direct.is_none() {
                return Ok(());
            }
        }
    }

    /// Moves the unread bytes to the buffer's start, and grows it to hold `need` bytes.
    fn make_room(&mut self, need: usize) {
        if self.rx_start > 0 {
            self.rx.copy_within(self.rx_start..self.rx_end, 0);
            self.rx_end -= self.rx_start;
            self.rx_start = 0;
        }
        if self.rx.len() < need {
            self.rx.resize(need, 0);
        } else if need == 0 && self.rx_end == self.rx.len() {
            let n = self.rx.len() * 2;
            self.rx.resize(n.min(self.max_frame + 4), 0);
        }
    }

    /// Handles the whole frames in the receive buffer; starts a direct read of a READ
    /// reply whose data has not all come.
    fn frames(&mut self) -> Result<(), Failed> {
        loop {
            let avail = self.rx_end - self.rx_start;
            if avail < 4 {
                break;
            }
            let s = self.rx_start;
            let lenb = &self.rx[s..s + 4];
            if lenb[0] != 0 {
                return Err(errno(libc::EPROTO));
            }
            let len = u32::from_be_bytes([0, lenb[1], lenb[2], lenb[3]]) as usize;
            // A transform (52-byte header) may wrap a message shorter than a header.
            let least = if self.sealer.is_some() { 52 } else { HEADER };
            if !(least..=self.max_frame).contains(&len) {
                return Err(errno(libc::EPROTO));
            }
            if avail >= 4 + len {
                let mut rx = std::mem::take(&mut self.rx);
                let r = self.frame(&mut rx[s + 4..s + 4 + len]);
                self.rx = rx;
                self.rx_start += 4 + len;
                r?;
                continue;
            }
            if self.start_direct(len) {
                continue;
            }
            if self.rx.len() - self.rx_start < 4 + len {
                self.make_room(4 + len);
            }
            break;
        }
        if self.rx_start == self.rx_end {
            self.rx_start = 0;
            self.rx_end = 0;
            if self.rx.len() > RX_BYTES {
                self.rx.truncate(RX_BYTES);
                self.rx.shrink_to(RX_BYTES);
            }
        }
        Ok(())
    }

    /// Starts receiving a READ reply's data into its I/O's buffer when the reply is a
    /// plain (unencrypted) success whose data starts right after its fixed part.
    fn start_direct(&mut self, len: usize) -> bool {
        let s = self.rx_start + 4;
        let head_len = wire::READ_DATA_OFFSET;
        if self.seal || self.rx_end - s < head_len {
            return false;
        }
        let m = &self.rx[s..self.rx_end];
        let Some(h) = Header::parse(m) else { return false };
        if h.command != wire::READ || h.status != 0 || h.flags & wire::FLAG_SERVER_TO_REDIR == 0 {
            return false;
        }
        let Some((off, n)) = wire::read_data(m, len) else { return false };
        let Some(call) = self.calls.get(&h.message_id) else { return false };
        let Sink::Into { at, cap } = call.sink else { return false };
        if call.abandoned || off != head_len || n > cap || off + n != len {
            return false;
        }
        let Some(call) = self.calls.remove(&h.message_id) else { return false };
        let mut head = [0u8; wire::READ_DATA_OFFSET];
        head.copy_from_slice(&m[..head_len]);
        let present = (self.rx_end - s - head_len).min(n);
        // SAFETY: as in `receive`: the I/O's buffer, at least `n` >= `present` bytes.
        unsafe { std::ptr::copy_nonoverlapping(self.rx[s + head_len..].as_ptr(), at as *mut u8, present) };
        self.credit(&h, call.charge);
        self.rx_start = self.rx_end;
        let d = Direct { tag: call.tag, head, at, len: n, got: present, deadline: call.deadline };
        if present == n {
            self.finish_direct(d);
        } else {
            self.direct = Some(d);
        }
        true
    }

    /// A READ whose data is all in its buffer: verified when the session signs.
    fn finish_direct(&mut self, d: Direct) {
        // SAFETY: the I/O's buffer, `len` bytes received above.
        let data = unsafe { std::slice::from_raw_parts(d.at as *const u8, d.len) };
        let ok = !self.sign || self.signer.as_ref().is_some_and(|s| s.verify_parts(&[&d.head, data]));
        let result = if ok { d.len as i64 } else { errno(libc::EBADMSG) };
        self.finish(Done { tag: d.tag, status: 0, result, msg: Vec::new() });
    }

    /// Adds the credits a reply grants; a final reply ends its request's charge.
    fn credit(&mut self, h: &Header, charge: u16) {
        self.credits = self.credits.saturating_add(u32::from(h.credits));
        self.in_flight_charge = self.in_flight_charge.saturating_sub(u32::from(charge));
    }

    /// One whole frame: decrypted if it is a transform, then matched to its request.
    fn frame(&mut self, f: &mut [u8]) -> Result<(), Failed> {
        let m: &mut [u8] = if f.starts_with(b"\xFDSMB") {
            let Some(sealer) = self.sealer.as_ref() else { return Err(errno(libc::EPROTO)) };
            match sealer.open(f) {
                Ok(r) => &mut f[r],
                Err(()) => return Err(errno(libc::EBADMSG)),
            }
        } else {
            f
        };
        let Some(h) = Header::parse(m) else { return Err(errno(libc::EPROTO)) };
        if h.flags & wire::FLAG_SERVER_TO_REDIR == 0 {
            return Err(errno(libc::EPROTO));
        }
        if h.status == wire::STATUS_PENDING && h.is_async() {
            // An interim reply: its credits count now; the request stays in flight.
            self.credits = self.credits.saturating_add(u32::from(h.credits));
            return Ok(());
        }
        let Some(call) = self.calls.remove(&h.message_id) else {
            // An oplock break or a reply to nothing asked: its credits still count.
            self.credits = self.credits.saturating_add(u32::from(h.credits));
            return Ok(());
        };
        self.credit(&h, call.charge);
        if call.command == wire::WRITE && self.lent.iter().any(|l| l.id == h.message_id) {
            // Answered before all its data left (a server may): the buffer goes back now.
            self.own_lent(Some(h.message_id));
        }
        if call.abandoned {
            return Ok(());
        }
        let signed = h.flags & wire::FLAG_SIGNED != 0;
        let bad_signature = match (&self.signer, signed) {
            (Some(s), true) if self.sign || call.command == wire::TREE_CONNECT => !s.verify(m),
            (_, false) => self.sign && h.status == 0 && !self.seal,
            _ => false,
        };
        let (status, result, msg) = if bad_signature {
            (h.status, errno(libc::EBADMSG), Vec::new())
        } else {
            match call.sink {
                Sink::Keep => (h.status, if h.status == 0 { 0 } else { errors::status_result(h.status) }, m.to_vec()),
                _ if h.status == wire::STATUS_END_OF_FILE && call.command == wire::READ => (h.status, 0, Vec::new()),
                _ if h.status != 0 => (h.status, errors::status_result(h.status), Vec::new()),
                Sink::Into { at, cap } => match wire::read_data(m, m.len()) {
                    Some((off, n)) if n <= cap => {
                        // SAFETY: the I/O's buffer of `cap` >= `n` bytes (see Sink::Into).
                        unsafe { std::ptr::copy_nonoverlapping(m[off..].as_ptr(), at as *mut u8, n) };
                        (0, n as i64, Vec::new())
                    }
                    _ => (0, errno(libc::EPROTO), Vec::new()),
                },
                Sink::Count => match wire::parse_write(m) {
                    Some(n) => (0, i64::from(n), Vec::new()),
                    None => (0, errno(libc::EPROTO), Vec::new()),
                },
                Sink::Status => (0, 0, Vec::new()),
            }
        };
        self.finish(Done { tag: call.tag, status, result, msg });
        Ok(())
    }
}

/// One read(2) into `buf`: the bytes read, `None` when nothing has come (the socket is
/// non-blocking), a failure when the connection is closed or broken.
fn read_some(mut sock: &TcpStream, buf: &mut [u8]) -> Result<Option<usize>, Failed> {
    loop {
        return match sock.read(buf) {
            Ok(0) => Err(errno(libc::ECONNRESET)),
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => Err(errors::result_of_io(&e)),
        };
    }
}

/// A TCP connection to host:port within `timeout`, trying each address.
fn dial(host: &str, port: u16, timeout: Duration) -> std::io::Result<TcpStream> {
    let mut last = None;
    for a in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no address")))
}

/// A status as text: its name (when ioscope knows it) and its code.
pub fn status_text(status: u32) -> String {
    format!("{} ({status:#010x})", errors::error_text(errors::status_result(status)))
}

/// A failure as text: the NTSTATUS name and code, or the errno's text.
pub fn describe(r: Failed) -> String {
    match errors::status_of(r) {
        Some(code) => format!("{} ({code:#010x})", errors::error_text(r)),
        None => errors::error_text(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A peer that reads the client's first message and answers it with `reply` (raw
    /// bytes, length prefix included), then closes.
    fn hostile(reply: Vec<u8>) -> Target {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = std::io::Write::write_all(&mut s, &reply);
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        Target::parse(&format!("smb://u@127.0.0.1:{port}/share?timeout=2")).unwrap()
    }

    fn framed(m: &[u8]) -> Vec<u8> {
        let mut f = (m.len() as u32).to_be_bytes().to_vec();
        f.extend_from_slice(m);
        f
    }

    /// A NEGOTIATE reply header (a server's), then `body`.
    fn negotiate_reply(body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        wire::put_header(&mut m, wire::NEGOTIATE, 0, 1, 0, 0, 0);
        m[16] = 1; // SMB2_FLAGS_SERVER_TO_REDIR
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn a_peer_that_sends_garbage_fails_the_connection_with_a_reason_never_a_panic() {
        let mut too_long = vec![0u8, 0xFF, 0xFF, 0xFF];
        too_long.extend_from_slice(&[0xFE; 64]);
        let mut random = vec![0u8; 300];
        random.iter_mut().enumerate().for_each(|(i, b)| *b = (i * 131 + 7) as u8);
        let short_body = framed(&negotiate_reply(&[65, 0, 0x11, 0x03]));
        let mut unoffered = vec![0u8; 64];
        unoffered[0] = 65;
        unoffered[2..4].copy_from_slice(&0x0399u16.to_le_bytes());
        let unoffered = framed(&negotiate_reply(&unoffered));
        let mut not_smb = framed(&[0x42; 80]);
        not_smb[0] = 0x85; // a NetBIOS keepalive type, not a session message
        for (reply, says) in [
            (Vec::new(), "Connection reset"),
            (too_long, "Protocol error"),
            (framed(&random), "Protocol error"),
            (not_smb, "Protocol error"),
            (short_body, "does not parse"),
            (unoffered, "was not offered"),
        ] {
            let t = hostile(reply);
            let e = match Conn::connect(&t, "pw", 16) {
                Ok(_) => panic!("a hostile peer was taken for a server"),
                Err(e) => e,
            };
            assert!(e.contains("127.0.0.1:") && e.contains(says), "{e}");
        }
    }

    #[test]
    fn a_peer_that_never_answers_times_out_within_the_targets_timeout() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let t = Target::parse(&format!("smb://u@127.0.0.1:{port}/share?timeout=1")).unwrap();
        let started = Instant::now();
        let e = match Conn::connect(&t, "pw", 16) {
            Ok(_) => panic!("connected to nothing"),
            Err(e) => e,
        };
        assert!(e.contains("timed out"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        drop(l);
    }

    #[test]
    fn a_peer_that_trickles_its_reply_or_sends_empty_frames_times_out_within_the_targets_timeout() {
        // A NEGOTIATE reply 2 bytes a second, and empty session messages every 20 ms: each
        // read gets something, none completes the request.
        let reply = framed(&negotiate_reply(&[0u8; 64]));
        for trickle in [true, false] {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let port = l.local_addr().unwrap().port();
            let reply = reply.clone();
            std::thread::spawn(move || {
                let Ok((mut s, _)) = l.accept() else { return };
                let _ = s.read(&mut [0u8; 4096]);
                let start = Instant::now();
                let mut at = 0;
                while start.elapsed() < Duration::from_secs(30) {
                    let piece: &[u8] = if trickle { &reply[at.min(reply.len() - 1)..][..1] } else { &[0u8; 4] };
                    at += 1;
                    if std::io::Write::write_all(&mut s, piece).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(if trickle { 500 } else { 20 }));
                }
            });
            let t = Target::parse(&format!("smb://u@127.0.0.1:{port}/share?timeout=1")).unwrap();
            let started = Instant::now();
            let e = match Conn::connect(&t, "pw", 16) {
                Ok(_) => panic!("connected to a peer that never answered"),
                Err(e) => e,
            };
            assert!(e.contains("127.0.0.1:") && (e.contains("timed out") || e.contains("Protocol error")), "{e}");
            assert!(started.elapsed() < Duration::from_secs(10), "{:?}: {e}", started.elapsed());
        }
    }
}
