//! NFSv4.1 sessions (RFC 8881 section 2.10): EXCHANGE_ID gives a client id, CREATE_SESSION
//! a session with a number of slots (one request in flight per slot, each with its own
//! sequence id, checked by the SEQUENCE that starts every compound), RECLAIM_COMPLETE says
//! there is no state to reclaim. The server drops a client whose lease runs out, so a
//! [`Renewal`] thread sends a SEQUENCE-only compound when nothing was sent for a third of
//! the lease. At the end DESTROY_SESSION and DESTROY_CLIENTID leave nothing behind.
//!
//! Slots: the engine's I/Os use slots 0..depth (slot = the I/O's slot), [`Calls`] (the
//! operations by path, on a connection of their own) slot `depth`, and the renewal thread
//! slot `depth + 1`; a server granting fewer slots is refused with the numbers.

use super::proto::{self, status, Channel, Reply, SessionId};
use crate::client::{auth_of, NfsError};
use crate::proto::NFS_PROG;
use crate::rpc::{Conn, RpcError};
use crate::target::Target;
use crate::xdr::Encoder;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// What every compound of a session needs.
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub addr: SocketAddr,
    pub clientid: u64,
    pub id: SessionId,
    /// Slots granted (at least the slots asked for).
    pub slots: u32,
    pub fore: Channel,
    pub lease: Duration,
    /// The open owner of this client's OPENs.
    pub owner: Vec<u8>,
}

impl SessionInfo {
    /// The highest slot id, sent in every SEQUENCE.
    pub fn highest_slot(&self) -> u32 {
        self.slots.saturating_sub(1)
    }
}

/// Slots a session needs besides the I/O slots: the calls by path and the renewal.
pub const EXTRA_SLOTS: u32 = 2;

/// The address of a target's NFSv4 server (port 2049 unless given: no portmapper).
pub fn address(t: &Target) -> Result<SocketAddr, NfsError> {
    let port = t.port.unwrap_or(crate::target::NFS4_PORT);
    (t.host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| NfsError::Setup(format!("cannot resolve {}: {e}", t.host)))?
        .next()
        .ok_or_else(|| NfsError::Setup(format!("{} has no address", t.host)))
}

/// A failing NFSv4 status of `op`.
pub fn failed(op: &'static str, status: u32) -> NfsError {
    NfsError::Status4 { op, status }
}

pub fn ok<T>(op: &'static str, r: proto::Res<T>) -> Result<T, NfsError> {
    r?.map_err(|s| failed(op, s))
}

/// A client id and verifier no other client has (the owner names the host, the process
/// and a counter, the verifier the time).
fn client_owner() -> ([u8; 8], Vec<u8>) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    let owner = format!("ioscope/{}/{}/{}/{now}", host.trim(), std::process::id(), NEXT.fetch_add(1, Relaxed));
    ((now as u64).to_be_bytes(), owner.into_bytes())
}

/// One slot's sequence ids (RFC 8881 section 2.10.6.1). A call without a reply leaves the
/// server's id unknown: it took the id, or never saw the call, or has it still queued. The
/// next call guesses it was taken; an NFS4ERR_SEQ_MISORDERED answer walks the guess down
/// one at a time towards the last id the server confirmed, and NFS4ERR_RETRY_UNCACHED_REP
/// (the guess hit the id the server holds) confirms it: the slot is back in step within
/// as many calls as were lost, and a SEQUENCE that failed executed nothing, so the call
/// can be sent again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotSeq {
    /// The id of the last call sent on the slot.
    sent: u32,
    /// The last id the server answered (it holds this one or a later one).
    confirmed: u32,
}

/// NFS4ERR_RETRY_UNCACHED_REP and NFS4ERR_SEQ_FALSE_RETRY: the id sent is the one the
/// server holds.
const HELD: [u32; 2] = [status::RETRY_UNCACHED_REP, 10076];

impl SlotSeq {
    /// The id of the next call.
    pub fn take(&mut self) -> u32 {
        self.sent = self.sent.wrapping_add(1);
        self.sent
    }

    /// The server answered the call of id `seq` with `status` at SEQUENCE. Returns whether
    /// the call executed nothing and may be sent again with the next id (a misordered or
    /// held id).
    pub fn answered(&mut self, seq: u32, status: u32) -> bool {
        match status {
            status::OK => {
                self.confirmed = seq;
                false
            }
            s if HELD.contains(&s) => {
                self.confirmed = seq;
                true
            }
            status::SEQ_MISORDERED => {
                // Below this id next time, but never below the last one confirmed.
                self.sent =
                    if seq.wrapping_sub(self.confirmed) > 1 { seq.wrapping_sub(2) } else { seq.wrapping_sub(1) };
                true
            }
            // Refused without using the id (NFS4ERR_DELAY, a dead session...).
            _ => {
                self.sent = seq.wrapping_sub(1);
                false
            }
        }
    }
}

/// Times a call refused at SEQUENCE for its id is sent again with another.
pub const RESENDS: u32 = 4;

/// Compounds on one connection, one at a time, on one slot of a session.
pub struct Calls {
    pub conn: Conn,
    pub info: SessionInfo,
    slot: u32,
    seq: SlotSeq,
    /// DESTROY_SESSION was sent.
    destroyed: bool,
    /// Compounds sent: what a [`Renewal`] started by [`Calls::keep_lease`] watches.
    activity: Arc<AtomicU64>,
}

/// A compound without SEQUENCE (session setup and teardown), one operation.
fn lone(conn: &mut Conn, args: impl FnOnce(&mut Encoder)) -> Result<Vec<u8>, NfsError> {
    let mut e = Encoder::default();
    proto::compound(&mut e, 1);
    args(&mut e);
    Ok(conn.call(NFS_PROG, 4, proto::COMPOUND, &e.buf)?)
}

impl Calls {
    /// Makes a client and a session with `io_slots` slots for I/O plus [`EXTRA_SLOTS`],
    /// on a connection used for calls on slot `io_slots` afterwards.
    pub fn establish(t: &Target, io_slots: u32) -> Result<Calls, NfsError> {
        let addr = address(t)?;
        let service = |source: RpcError| NfsError::Service { service: "NFSv4.1".into(), source };
        let mut conn = Conn::connect(addr, auth_of(t), t.timeout).map_err(service)?;
        let (verifier, owner) = client_owner();
        let body = lone(&mut conn, |e| proto::exchange_id(e, verifier, &owner)).map_err(|e| match e {
            NfsError::Rpc(source) => service(source),
            e => e,
        })?;
        let (clientid, sequence) = ok("EXCHANGE_ID", Reply::parse(&body)?.exchange_id())?;
        let want = io_slots.saturating_add(EXTRA_SLOTS);
        let asked = Channel {
            // A 1 MiB WRITE or READ and its compound's other operations.
            max_request: (1 << 20) + (16 << 10),
            max_response: (1 << 20) + (16 << 10),
            max_operations: 8,
            max_requests: want,
        };
        let body = lone(&mut conn, |e| proto::create_session(e, clientid, sequence, &asked))?;
        let created = ok("CREATE_SESSION", Reply::parse(&body)?.create_session());
        let (id, fore) = match created {
            Ok(c) => c,
            Err(e) => {
                let _ = lone(&mut conn, |e| proto::destroy_clientid(e, clientid));
                return Err(e);
            }
        };
        let info = SessionInfo { addr, clientid, id, slots: fore.max_requests, fore, lease: Duration::ZERO, owner };
        let mut calls =
            Calls { conn, info, slot: io_slots, seq: SlotSeq::default(), destroyed: false, activity: Arc::default() };
        if fore.max_requests < want || fore.max_operations < 5 {
            calls.destroy();
            return Err(NfsError::Setup(format!(
                "{addr}: the server grants {} session slots of {} operations; a queue depth of {io_slots} needs \
                 {want} of at least 5 (one per I/O in flight, one for calls by path, one to renew the lease): \
                 lower --iodepth, or raise the server's slot table (nfs-ganesha: NFSV4 {{ Slot_Table_Size }})",
                fore.max_requests, fore.max_operations
            )));
        }
        let reclaimed =
            calls.run("RECLAIM_COMPLETE", 1, proto::reclaim_complete, |r| r.plain(proto::op::RECLAIM_COMPLETE, 0));
        match reclaimed {
            // Another session of this client said it already: nothing to do.
            Err(e) if e.status() == Some(10054) => {}
            Err(e) => {
                calls.destroy();
                return Err(e);
            }
            Ok(()) => {}
        }
        let lease = calls.run(
            "GETATTR",
            2,
            |e| {
                proto::putrootfh(e);
                proto::getattr(e, &[proto::attr::LEASE_TIME]);
            },
            |r| match r.plain(proto::op::PUTROOTFH, 0)? {
                Ok(()) => r.getattr(),
                Err(s) => Ok(Err(s)),
            },
        );
        match lease {
            Ok(a) => calls.info.lease = Duration::from_secs(a.lease_s.unwrap_or(90).clamp(1, 3600) as u64),
            Err(e) => {
                calls.destroy();
                return Err(e);
            }
        }
        Ok(calls)
    }

    /// Calls on slot `slot` of an existing session, over a connection of their own (the
    /// session is not destroyed when they are dropped).
    pub fn on_session(t: &Target, info: &SessionInfo, slot: u32) -> Result<Calls, NfsError> {
        let conn = Conn::connect(info.addr, auth_of(t), t.timeout)?;
        Ok(Calls { conn, info: info.clone(), slot, seq: SlotSeq::default(), destroyed: true, activity: Arc::default() })
    }

    /// One compound: SEQUENCE on this slot, then the `ops` operations `args` writes; `read`
    /// reads their results (SEQUENCE's is read here). A failing SEQUENCE is that status,
    /// after the call was sent again with other ids if the slot was out of step.
    pub fn run<T>(
        &mut self,
        what: &'static str,
        ops: u32,
        args: impl Fn(&mut Encoder),
        read: impl FnOnce(&mut Reply) -> proto::Res<T>,
    ) -> Result<T, NfsError> {
        let mut sends = 0;
        loop {
            let seq = self.seq.take();
            let mut e = Encoder::default();
            proto::compound(&mut e, ops + 1);
            proto::sequence(&mut e, &self.info.id, seq, self.slot, self.info.highest_slot());
            args(&mut e);
            self.activity.fetch_add(1, Relaxed);
            // Without a reply the id stays taken (see SlotSeq).
            let body = self.conn.call(NFS_PROG, 4, proto::COMPOUND, &e.buf)?;
            let mut r = Reply::parse(&body)?;
            let status = match r.sequence()? {
                Err(s) => s,
                Ok(_) if r.uncached_retry() => status::RETRY_UNCACHED_REP,
                Ok(_) => status::OK,
            };
            let again = self.seq.answered(seq, status);
            sends += 1;
            match status {
                status::OK => return ok(what, read(&mut r)),
                _ if again && sends < RESENDS => continue,
                s => return Err(failed("SEQUENCE", s)),
            }
        }
    }

    /// A [`Renewal`] on the slot after this one (the session's renewal slot when these are
    /// its calls by path): the lease stays while these calls are idle, as a connection
    /// kept open through a long fill is.
    pub fn keep_lease(&self, t: &Target) -> Result<Renewal, NfsError> {
        Renewal::start(t, &self.info, self.slot.saturating_add(1), self.activity.clone())
    }

    /// A SEQUENCE alone: renews the lease.
    pub fn renew(&mut self) -> Result<(), NfsError> {
        self.run("SEQUENCE", 0, |_| {}, |_| Ok(Ok(())))
    }

    /// The NULL procedure: whether the server answers at all.
    pub fn null(&mut self) -> Result<(), NfsError> {
        self.conn.call(NFS_PROG, 4, 0, &[]).map(|_| ()).map_err(NfsError::from)
    }

    /// Leaves the session to expire on the server: nothing more is sent (a server out of
    /// reach would make each call wait for its timeout).
    pub fn forget(&mut self) {
        self.destroyed = true;
    }

    /// DESTROY_SESSION and DESTROY_CLIENTID (once; what fails is returned, the first
    /// failure first, and the client is left to expire).
    pub fn destroy(&mut self) -> Option<NfsError> {
        if std::mem::replace(&mut self.destroyed, true) {
            return None;
        }
        let id = self.info.id;
        let session = lone(&mut self.conn, |e| proto::destroy_session(e, &id))
            .and_then(|b| ok("DESTROY_SESSION", Reply::parse(&b)?.plain(proto::op::DESTROY_SESSION, 0)));
        let clientid = self.info.clientid;
        let client = lone(&mut self.conn, |e| proto::destroy_clientid(e, clientid))
            .and_then(|b| ok("DESTROY_CLIENTID", Reply::parse(&b)?.plain(proto::op::DESTROY_CLIENTID, 0)));
        session.err().or(client.err())
    }
}

impl Drop for Calls {
    fn drop(&mut self) {
        self.destroy();
    }
}

/// The thread that keeps a session's lease: every third of the lease it looks at the
/// activity counter (which the engine bumps per compound sent), and sends a SEQUENCE on a
/// slot of its own, over a connection of its own, when the counter did not move.
pub struct Renewal {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// SEQUENCE-only compounds sent so far.
    pub renewals: Arc<AtomicU64>,
}

impl Renewal {
    pub fn start(t: &Target, info: &SessionInfo, slot: u32, activity: Arc<AtomicU64>) -> Result<Renewal, NfsError> {
        let mut calls = Calls::on_session(t, info, slot)?;
        let every = (info.lease / 3).max(Duration::from_millis(500));
        let (stop, rx) = mpsc::channel::<()>();
        let renewals = Arc::new(AtomicU64::new(0));
        let count = renewals.clone();
        let thread = std::thread::Builder::new()
            .name("nfs41-renew".into())
            .spawn(move || {
                let mut seen = activity.load(Relaxed);
                while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(every) {
                    let now = activity.load(Relaxed);
                    if now == seen {
                        // A failure here is seen by the next I/O (its SEQUENCE fails too).
                        if calls.renew().is_ok() {
                            count.fetch_add(1, Relaxed);
                        }
                    }
                    seen = now;
                }
            })
            .map_err(|e| NfsError::Setup(format!("cannot start the lease renewal thread: {e}")))?;
        Ok(Renewal { stop: Some(stop), thread: Some(thread), renewals })
    }

    /// Stops the thread (at once: it waits on the channel, not in a sleep).
    pub fn stop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Renewal {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends ids on `slot` to a server that holds `held` and answers as one would; returns
    /// the ids sent until one was taken.
    fn until_taken(slot: &mut SlotSeq, held: &mut u32) -> Vec<u32> {
        let mut sent = Vec::new();
        for _ in 0..10 {
            let seq = slot.take();
            sent.push(seq);
            let status = match seq.wrapping_sub(*held) {
                1 => status::OK,
                0 => HELD[0],
                _ => status::SEQ_MISORDERED,
            };
            if status == status::OK {
                *held = seq;
            }
            slot.answered(seq, status);
            if status == status::OK {
                return sent;
            }
        }
        panic!("never back in step: {sent:?}");
    }

    #[test]
    fn a_slot_gets_back_in_step_after_calls_lost_whether_or_not_the_server_took_them() {
        // In step: 1, 2, 3.
        let (mut slot, mut held) = (SlotSeq::default(), 0);
        for want in 1..=3 {
            assert_eq!(until_taken(&mut slot, &mut held), [want]);
        }
        // Id 4 lost after the server took it: 5 is right at once.
        assert_eq!(slot.take(), 4);
        held = 4;
        assert_eq!(until_taken(&mut slot, &mut held), [5]);
        // Ids 6 and 7 lost and never seen: 8 and 7 are refused, 6 taken.
        assert_eq!((slot.take(), slot.take()), (6, 7));
        assert_eq!(until_taken(&mut slot, &mut held), [8, 7, 6]);
        assert_eq!(until_taken(&mut slot, &mut held), [7]);
        // Id 8 lost; the server took it while 9 was refused: 8 again hits the id it holds.
        assert_eq!(slot.take(), 8);
        let nine = slot.take();
        assert!(slot.answered(nine, status::SEQ_MISORDERED), "9 refused, sent again");
        held = 8;
        assert_eq!(until_taken(&mut slot, &mut held), [8, 9]);
        // A refusal that does not use the id gives it back.
        let seq = slot.take();
        assert!(!slot.answered(seq, 10008), "NFS4ERR_DELAY");
        assert_eq!(slot.take(), seq);
    }
}
