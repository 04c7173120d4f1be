//! NFSv4.1 COMPOUND messages (RFC 8881 and its XDR, RFC 8882 section 18 onwards): the
//! operations ioscope sends, encoded into one COMPOUND4args, and their results read back
//! from a COMPOUND4res one operation at a time. Every length, count and array read from a
//! reply is bounded; a reply that ends early or holds an impossible value is an
//! [`XdrError`], never a panic.

use crate::proto::Fh;
use crate::xdr::{Decoder, Encoder, XdrError};

/// The COMPOUND procedure of program 100003 version 4.
pub const COMPOUND: u32 = 1;
pub const MINOR_VERSION: u32 = 1;

/// Operation numbers (nfs_opnum4).
pub mod op {
    pub const CLOSE: u32 = 4;
    pub const COMMIT: u32 = 5;
    pub const CREATE: u32 = 6;
    pub const GETATTR: u32 = 9;
    pub const GETFH: u32 = 10;
    pub const LOOKUP: u32 = 15;
    pub const OPEN: u32 = 18;
    pub const PUTFH: u32 = 22;
    pub const PUTROOTFH: u32 = 24;
    pub const READ: u32 = 25;
    pub const READDIR: u32 = 26;
    pub const REMOVE: u32 = 28;
    pub const RENAME: u32 = 29;
    pub const SAVEFH: u32 = 32;
    pub const SETATTR: u32 = 34;
    pub const WRITE: u32 = 38;
    pub const EXCHANGE_ID: u32 = 42;
    pub const CREATE_SESSION: u32 = 43;
    pub const DESTROY_SESSION: u32 = 44;
    pub const SEQUENCE: u32 = 53;
    pub const DESTROY_CLIENTID: u32 = 57;
    pub const RECLAIM_COMPLETE: u32 = 58;
}

/// Statuses the client acts on.
pub mod status {
    pub const OK: u32 = 0;
    pub const NOENT: u32 = 2;
    pub const EXIST: u32 = 17;
    pub const STALE: u32 = 70;
    pub const EXPIRED: u32 = 10011;
    pub const BADSESSION: u32 = 10052;
    pub const SEQ_MISORDERED: u32 = 10063;
    pub const RETRY_UNCACHED_REP: u32 = 10068;
}

/// Attribute numbers ioscope reads or sets.
pub mod attr {
    pub const TYPE: u32 = 1;
    pub const SIZE: u32 = 4;
    pub const LEASE_TIME: u32 = 10;
    pub const FILEID: u32 = 20;
    pub const MAXREAD: u32 = 30;
    pub const MAXWRITE: u32 = 31;
    pub const MODE: u32 = 33;
    pub const TIME_MODIFY_SET: u32 = 54;
}

/// NFS4ERR_* by number (RFC 8881 section 15.1); NFS4ERR_UNKNOWN for any other.
pub fn status_name(code: u32) -> &'static str {
    match code {
        0 => "NFS4_OK",
        1 => "NFS4ERR_PERM",
        2 => "NFS4ERR_NOENT",
        5 => "NFS4ERR_IO",
        6 => "NFS4ERR_NXIO",
        13 => "NFS4ERR_ACCESS",
        17 => "NFS4ERR_EXIST",
        18 => "NFS4ERR_XDEV",
        20 => "NFS4ERR_NOTDIR",
        21 => "NFS4ERR_ISDIR",
        22 => "NFS4ERR_INVAL",
        27 => "NFS4ERR_FBIG",
        28 => "NFS4ERR_NOSPC",
        30 => "NFS4ERR_ROFS",
        31 => "NFS4ERR_MLINK",
        63 => "NFS4ERR_NAMETOOLONG",
        66 => "NFS4ERR_NOTEMPTY",
        69 => "NFS4ERR_DQUOT",
        70 => "NFS4ERR_STALE",
        10001 => "NFS4ERR_BADHANDLE",
        10003 => "NFS4ERR_BAD_COOKIE",
        10004 => "NFS4ERR_NOTSUPP",
        10005 => "NFS4ERR_TOOSMALL",
        10006 => "NFS4ERR_SERVERFAULT",
        10007 => "NFS4ERR_BADTYPE",
        10008 => "NFS4ERR_DELAY",
        10009 => "NFS4ERR_SAME",
        10010 => "NFS4ERR_DENIED",
        10011 => "NFS4ERR_EXPIRED",
        10012 => "NFS4ERR_LOCKED",
        10013 => "NFS4ERR_GRACE",
        10014 => "NFS4ERR_FHEXPIRED",
        10015 => "NFS4ERR_SHARE_DENIED",
        10016 => "NFS4ERR_WRONGSEC",
        10017 => "NFS4ERR_CLID_INUSE",
        10018 => "NFS4ERR_RESOURCE",
        10019 => "NFS4ERR_MOVED",
        10020 => "NFS4ERR_NOFILEHANDLE",
        10021 => "NFS4ERR_MINOR_VERS_MISMATCH",
        10022 => "NFS4ERR_STALE_CLIENTID",
        10023 => "NFS4ERR_STALE_STATEID",
        10024 => "NFS4ERR_OLD_STATEID",
        10025 => "NFS4ERR_BAD_STATEID",
        10026 => "NFS4ERR_BAD_SEQID",
        10027 => "NFS4ERR_NOT_SAME",
        10028 => "NFS4ERR_LOCK_RANGE",
        10029 => "NFS4ERR_SYMLINK",
        10030 => "NFS4ERR_RESTOREFH",
        10031 => "NFS4ERR_LEASE_MOVED",
        10032 => "NFS4ERR_ATTRNOTSUPP",
        10033 => "NFS4ERR_NO_GRACE",
        10034 => "NFS4ERR_RECLAIM_BAD",
        10035 => "NFS4ERR_RECLAIM_CONFLICT",
        10036 => "NFS4ERR_BADXDR",
        10037 => "NFS4ERR_LOCKS_HELD",
        10038 => "NFS4ERR_OPENMODE",
        10039 => "NFS4ERR_BADOWNER",
        10040 => "NFS4ERR_BADCHAR",
        10041 => "NFS4ERR_BADNAME",
        10042 => "NFS4ERR_BAD_RANGE",
        10043 => "NFS4ERR_LOCK_NOTSUPP",
        10044 => "NFS4ERR_OP_ILLEGAL",
        10045 => "NFS4ERR_DEADLOCK",
        10046 => "NFS4ERR_FILE_OPEN",
        10047 => "NFS4ERR_ADMIN_REVOKED",
        10048 => "NFS4ERR_CB_PATH_DOWN",
        10049 => "NFS4ERR_BADIOMODE",
        10050 => "NFS4ERR_BADLAYOUT",
        10051 => "NFS4ERR_BAD_SESSION_DIGEST",
        10052 => "NFS4ERR_BADSESSION",
        10053 => "NFS4ERR_BADSLOT",
        10054 => "NFS4ERR_COMPLETE_ALREADY",
        10055 => "NFS4ERR_CONN_NOT_BOUND_TO_SESSION",
        10056 => "NFS4ERR_DELEG_ALREADY_WANTED",
        10057 => "NFS4ERR_BACK_CHAN_BUSY",
        10058 => "NFS4ERR_LAYOUTTRYLATER",
        10059 => "NFS4ERR_LAYOUTUNAVAILABLE",
        10060 => "NFS4ERR_NOMATCHING_LAYOUT",
        10061 => "NFS4ERR_RECALLCONFLICT",
        10062 => "NFS4ERR_UNKNOWN_LAYOUTTYPE",
        10063 => "NFS4ERR_SEQ_MISORDERED",
        10064 => "NFS4ERR_SEQUENCE_POS",
        10065 => "NFS4ERR_REQ_TOO_BIG",
        10066 => "NFS4ERR_REP_TOO_BIG",
        10067 => "NFS4ERR_REP_TOO_BIG_TO_CACHE",
        10068 => "NFS4ERR_RETRY_UNCACHED_REP",
        10069 => "NFS4ERR_UNSAFE_COMPOUND",
        10070 => "NFS4ERR_TOO_MANY_OPS",
        10071 => "NFS4ERR_OP_NOT_IN_SESSION",
        10072 => "NFS4ERR_HASH_ALG_UNSUPP",
        10074 => "NFS4ERR_CLIENTID_BUSY",
        10075 => "NFS4ERR_PNFS_IO_HOLE",
        10076 => "NFS4ERR_SEQ_FALSE_RETRY",
        10077 => "NFS4ERR_BAD_HIGH_SLOT",
        10078 => "NFS4ERR_DEADSESSION",
        10079 => "NFS4ERR_ENCR_ALG_UNSUPP",
        10080 => "NFS4ERR_PNFS_NO_LAYOUT",
        10081 => "NFS4ERR_NOT_ONLY_OP",
        10082 => "NFS4ERR_WRONG_CRED",
        10083 => "NFS4ERR_WRONG_TYPE",
        10084 => "NFS4ERR_DIRDELEG_UNAVAIL",
        10085 => "NFS4ERR_REJECT_DELEG",
        10086 => "NFS4ERR_RETURNCONFLICT",
        10087 => "NFS4ERR_DELEG_REVOKED",
        _ => "NFS4ERR_UNKNOWN",
    }
}

/// A session's id (sessionid4).
pub type SessionId = [u8; 16];

/// A stateid4: the state an OPEN returned (or the anonymous stateid, all zeros).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct StateId {
    pub seqid: u32,
    pub other: [u8; 12],
}

/// Longest file handle (NFS4_FHSIZE), name and opaque ioscope takes from a server.
pub const MAX_FH: usize = 128;
pub const MAX_NAME: usize = 4096;
pub const MAX_OPAQUE: usize = 1024;
/// Most words of a bitmap4 and bytes of attribute values accepted.
const MAX_BITMAP_WORDS: usize = 8;
const MAX_ATTRS: usize = 64 << 10;
/// Most entries of one READDIR reply (a reply is bounded by the record size anyway).
const MAX_ENTRIES: usize = 1 << 16;

/// Write stability (stable_how4), as in NFSv3.
pub use crate::proto::Stable;
pub const UNSTABLE: u32 = 0;

/// Starts a COMPOUND4args of `nops` operations (empty tag, minor version 1).
pub fn compound(e: &mut Encoder, nops: u32) {
    e.string("").u32(MINOR_VERSION).u32(nops);
}

pub fn sequence(e: &mut Encoder, session: &SessionId, seqid: u32, slot: u32, highest_slot: u32) {
    e.u32(op::SEQUENCE).fixed(session).u32(seqid).u32(slot).u32(highest_slot).bool(false);
}

pub fn putfh(e: &mut Encoder, fh: &Fh) {
    e.u32(op::PUTFH).opaque(&fh.0);
}

pub fn putrootfh(e: &mut Encoder) {
    e.u32(op::PUTROOTFH);
}

pub fn lookup(e: &mut Encoder, name: &str) {
    e.u32(op::LOOKUP).string(name);
}

pub fn getfh(e: &mut Encoder) {
    e.u32(op::GETFH);
}

pub fn savefh(e: &mut Encoder) {
    e.u32(op::SAVEFH);
}

/// A bitmap4 with the given attribute numbers set.
fn bitmap(e: &mut Encoder, attrs: &[u32]) {
    let words = attrs.iter().map(|a| a / 32 + 1).max().unwrap_or(0);
    e.u32(words);
    for w in 0..words {
        e.u32(attrs.iter().filter(|a| *a / 32 == w).fold(0, |m, a| m | 1 << (a % 32)));
    }
}

/// The attributes GETATTR asks for: type, size, fileid, mode.
pub const FILE_ATTRS: &[u32] = &[attr::TYPE, attr::SIZE, attr::FILEID, attr::MODE];
/// The attributes of a file system ioscope reads: lease time, largest read and write.
pub const FS_ATTRS: &[u32] = &[attr::LEASE_TIME, attr::MAXREAD, attr::MAXWRITE];

pub fn getattr(e: &mut Encoder, attrs: &[u32]) {
    e.u32(op::GETATTR);
    bitmap(e, attrs);
}

fn stateid(e: &mut Encoder, s: &StateId) {
    e.u32(s.seqid).fixed(&s.other);
}

pub fn read(e: &mut Encoder, s: &StateId, offset: u64, count: u32) {
    e.u32(op::READ);
    stateid(e, s);
    e.u64(offset).u32(count);
}

/// WRITE up to its data, which follows (the length is written here; the caller sends the
/// bytes and their padding).
pub fn write_head(e: &mut Encoder, s: &StateId, offset: u64, stable: Stable, len: u32) {
    e.u32(op::WRITE);
    stateid(e, s);
    e.u64(offset).u32(stable as u32).u32(len);
}

pub fn write(e: &mut Encoder, s: &StateId, offset: u64, stable: Stable, data: &[u8]) {
    write_head(e, s, offset, stable, data.len() as u32);
    e.fixed(data);
}

/// COMMIT of the whole file.
pub fn commit(e: &mut Encoder) {
    e.u32(op::COMMIT).u64(0).u32(0);
}

/// How OPEN finds or makes the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Create {
    /// The file must exist.
    No,
    /// Created if missing (mode), opened as it is otherwise, emptied if `truncate`.
    Unchecked { mode: u32, truncate: bool },
    /// Created; NFS4ERR_EXIST if the name exists.
    Guarded { mode: u32 },
}

const SHARE_ACCESS_READ: u32 = 1;
const SHARE_ACCESS_BOTH: u32 = 3;
/// OPEN4_SHARE_ACCESS_WANT_NO_DELEG: ioscope has no callback channel for delegations.
const WANT_NO_DELEG: u32 = 0x0400;

/// OPEN of `name` in the current directory by `owner` of `clientid` (CLAIM_NULL).
pub fn open(e: &mut Encoder, clientid: u64, owner: &[u8], name: &str, write: bool, how: Create) {
    let access = if write { SHARE_ACCESS_BOTH } else { SHARE_ACCESS_READ };
    e.u32(op::OPEN).u32(0).u32(access | WANT_NO_DELEG).u32(0).u64(clientid).opaque(owner);
    match how {
        Create::No => {
            e.u32(0);
        }
        Create::Unchecked { mode, truncate } => {
            e.u32(1).u32(0);
            create_attrs(e, mode, truncate.then_some(0));
        }
        Create::Guarded { mode } => {
            e.u32(1).u32(1);
            create_attrs(e, mode, None);
        }
    }
    e.u32(0).string(name); // CLAIM_NULL
}

/// A fattr4 setting the mode, and the size when given.
fn create_attrs(e: &mut Encoder, mode: u32, size: Option<u64>) {
    let mut values = Encoder::default();
    match size {
        Some(s) => {
            bitmap(e, &[attr::SIZE, attr::MODE]);
            values.u64(s).u32(mode);
        }
        None => {
            bitmap(e, &[attr::MODE]);
            values.u32(mode);
        }
    }
    e.opaque(&values.buf);
}

pub fn close(e: &mut Encoder, s: &StateId) {
    e.u32(op::CLOSE).u32(0);
    stateid(e, s);
}

/// CREATE of a directory.
pub fn mkdir(e: &mut Encoder, name: &str, mode: u32) {
    e.u32(op::CREATE).u32(2).string(name);
    create_attrs(e, mode, None);
}

pub fn remove(e: &mut Encoder, name: &str) {
    e.u32(op::REMOVE).string(name);
}

/// RENAME from the saved handle's directory to the current one.
pub fn rename(e: &mut Encoder, from: &str, to: &str) {
    e.u32(op::RENAME).string(from).string(to);
}

/// SETATTR of the modification time to the server's clock, or of the size.
pub fn setattr(e: &mut Encoder, s: &StateId, size: Option<u64>) {
    e.u32(op::SETATTR);
    stateid(e, s);
    match size {
        Some(n) => {
            bitmap(e, &[attr::SIZE]);
            e.u32(8).u64(n);
        }
        None => {
            bitmap(e, &[attr::TIME_MODIFY_SET]);
            e.u32(4).u32(0); // SET_TO_SERVER_TIME4
        }
    }
}

pub fn readdir(e: &mut Encoder, cookie: u64, verf: [u8; 8]) {
    e.u32(op::READDIR).u64(cookie).fixed(&verf).u32(32 << 10).u32(64 << 10);
    bitmap(e, &[attr::TYPE, attr::SIZE]);
}

/// The client's owner (co_ownerid), unique per client so that clients never share state.
pub fn exchange_id(e: &mut Encoder, verifier: [u8; 8], owner: &[u8]) {
    // No flags asked, SP4_NONE, no implementation id.
    e.u32(op::EXCHANGE_ID).fixed(&verifier).opaque(owner).u32(0).u32(0).u32(0);
}

/// The sizes asked of the fore channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Channel {
    pub max_request: u32,
    pub max_response: u32,
    pub max_operations: u32,
    pub max_requests: u32,
}

fn channel(e: &mut Encoder, c: &Channel) {
    e.u32(0).u32(c.max_request).u32(c.max_response).u32(4096).u32(c.max_operations).u32(c.max_requests).u32(0);
}

/// CREATE_SESSION without a back channel (no callbacks: no delegations).
pub fn create_session(e: &mut Encoder, clientid: u64, sequence: u32, fore: &Channel) {
    e.u32(op::CREATE_SESSION).u64(clientid).u32(sequence).u32(0);
    channel(e, fore);
    channel(e, &Channel { max_request: 4096, max_response: 4096, max_operations: 2, max_requests: 1 });
    // The program number of the (unused) callbacks, and one AUTH_NONE security parameter.
    e.u32(0x4000_0000).u32(1).u32(0);
}

pub fn reclaim_complete(e: &mut Encoder) {
    e.u32(op::RECLAIM_COMPLETE).bool(false);
}

pub fn destroy_session(e: &mut Encoder, session: &SessionId) {
    e.u32(op::DESTROY_SESSION).fixed(session);
}

pub fn destroy_clientid(e: &mut Encoder, clientid: u64) {
    e.u32(op::DESTROY_CLIENTID).u64(clientid);
}

/// Where a `SEQUENCE, PUTFH, READ` reply's data begins in its results and its length,
/// found from the results' first bytes: None for a failing status or bytes that end
/// before the data. This lets the pipe read the data straight into the I/O buffer
/// ([`crate::pipe::Landing`]).
pub fn read_res_split(head: &[u8]) -> Option<(usize, usize)> {
    let mut r = Reply::parse(head).ok()?;
    r.sequence().ok()?.ok()?;
    r.plain(op::PUTFH, 0).ok()?.ok()?;
    if r.op(op::READ).ok()? != status::OK {
        return None;
    }
    r.d.bool().ok()?;
    let len = r.d.u32().ok()? as usize;
    Some((head.len() - r.d.remaining(), len))
}

/// A COMPOUND4res read one operation result at a time: [`Reply::op`] checks the next
/// result is of the operation expected and gives its status; the caller then reads that
/// operation's results from [`Reply::d`].
pub struct Reply<'a> {
    pub d: Decoder<'a>,
    /// The compound's status (that of the last operation evaluated).
    pub status: u32,
    left: u32,
}

/// An operation's outcome: its results, or the failing status.
pub type Res<T> = Result<Result<T, u32>, XdrError>;

fn bad(what: &'static str) -> XdrError {
    XdrError { at: 0, what }
}

impl<'a> Reply<'a> {
    pub fn parse(body: &'a [u8]) -> Result<Reply<'a>, XdrError> {
        let mut d = Decoder::new(body);
        let status = d.u32()?;
        d.opaque(MAX_OPAQUE)?;
        let left = d.u32()?;
        // Each result is at least its operation number and status.
        if left as usize > d.remaining() / 8 + 1 {
            return Err(bad("more results than the reply holds"));
        }
        Ok(Reply { d, status, left })
    }

    /// The status of the next operation's result, which must be of `opnum`. No more
    /// results (the compound stopped earlier) is the compound's own failing status.
    pub fn op(&mut self, opnum: u32) -> Result<u32, XdrError> {
        if self.left == 0 {
            return match self.status {
                status::OK => Err(bad("fewer results than operations")),
                s => Ok(s),
            };
        }
        self.left -= 1;
        if self.d.u32()? != opnum {
            return Err(bad("a result of another operation than sent"));
        }
        self.d.u32()
    }

    /// The next result, of `opnum`, with nothing to read after its status (or, for the
    /// results that carry fixed data ioscope does not use, skipping `skip` bytes).
    pub fn plain(&mut self, opnum: u32, skip: usize) -> Res<()> {
        match self.op(opnum)? {
            status::OK => {
                self.d.skip(skip)?;
                Ok(Ok(()))
            }
            s => Ok(Err(s)),
        }
    }

    /// After a SEQUENCE that passed: the compound is a retry of the slot's last id whose
    /// reply the server did not cache. A server may say so in the operation after
    /// SEQUENCE rather than at SEQUENCE (RFC 8881 section 2.10.6.1.3; nfs-ganesha does):
    /// like a refusal at SEQUENCE, the call executed nothing.
    pub fn uncached_retry(&self) -> bool {
        self.status == status::RETRY_UNCACHED_REP
    }

    /// A SEQUENCE result: the slot's sequence id the server answered with.
    pub fn sequence(&mut self) -> Res<u32> {
        match self.op(op::SEQUENCE)? {
            status::OK => {
                self.d.fixed(16)?;
                let seq = self.d.u32()?;
                self.d.skip(16)?; // slot, highest slot, target highest slot, status flags
                Ok(Ok(seq))
            }
            s => Ok(Err(s)),
        }
    }

    pub fn getfh(&mut self) -> Res<Fh> {
        match self.op(op::GETFH)? {
            status::OK => Ok(Ok(Fh(self.d.opaque(MAX_FH)?.to_vec()))),
            s => Ok(Err(s)),
        }
    }

    pub fn getattr(&mut self) -> Res<Attrs> {
        match self.op(op::GETATTR)? {
            status::OK => Ok(Ok(fattr(&mut self.d)?)),
            s => Ok(Err(s)),
        }
    }

    /// READ: (data, eof).
    pub fn read(&mut self) -> Res<(&'a [u8], bool)> {
        match self.op(op::READ)? {
            status::OK => {
                let eof = self.d.bool()?;
                Ok(Ok((self.d.opaque(crate::rpc::MAX_RECORD)?, eof)))
            }
            s => Ok(Err(s)),
        }
    }

    /// READ whose `landed` bytes of data were read into the I/O buffer: the reply ends
    /// where the data began ([`read_res_split`]). EOF.
    pub fn read_landed(&mut self, landed: usize) -> Res<bool> {
        match self.op(op::READ)? {
            status::OK => {
                let eof = self.d.bool()?;
                let len = self.d.u32()? as usize;
                if len != landed || self.d.remaining() != 0 {
                    return Err(bad("READ data other than the bytes received"));
                }
                Ok(Ok(eof))
            }
            s => Ok(Err(s)),
        }
    }

    /// WRITE: (bytes written, how stable, the write verifier).
    pub fn write(&mut self) -> Res<(u32, u32, [u8; 8])> {
        match self.op(op::WRITE)? {
            status::OK => Ok(Ok((self.d.u32()?, self.d.u32()?, self.d.fixed8()?))),
            s => Ok(Err(s)),
        }
    }

    /// COMMIT: the write verifier.
    pub fn commit(&mut self) -> Res<[u8; 8]> {
        match self.op(op::COMMIT)? {
            status::OK => Ok(Ok(self.d.fixed8()?)),
            s => Ok(Err(s)),
        }
    }

    /// OPEN: the open's stateid (a delegation, which ioscope does not ask for, is read
    /// past and not kept).
    pub fn open(&mut self) -> Res<StateId> {
        match self.op(op::OPEN)? {
            status::OK => {
                let s = read_stateid(&mut self.d)?;
                self.d.skip(20 + 4)?; // change_info4, rflags
                read_bitmap(&mut self.d)?;
                skip_delegation(&mut self.d)?;
                Ok(Ok(s))
            }
            s => Ok(Err(s)),
        }
    }

    pub fn close(&mut self) -> Res<StateId> {
        match self.op(op::CLOSE)? {
            status::OK => Ok(Ok(read_stateid(&mut self.d)?)),
            s => Ok(Err(s)),
        }
    }

    /// CREATE: change_info4 and the attributes set.
    pub fn create(&mut self) -> Res<()> {
        match self.op(op::CREATE)? {
            status::OK => {
                self.d.skip(20)?;
                read_bitmap(&mut self.d)?;
                Ok(Ok(()))
            }
            s => Ok(Err(s)),
        }
    }

    /// SETATTR: its result carries the attributes set whatever its status.
    pub fn setattr(&mut self) -> Res<()> {
        let present = self.left > 0;
        let s = self.op(op::SETATTR)?;
        if present {
            read_bitmap(&mut self.d)?;
        }
        Ok(if s == status::OK { Ok(()) } else { Err(s) })
    }

    /// READDIR: (entries, cookie verifier, eof).
    pub fn readdir(&mut self) -> Res<(Vec<DirEntry>, [u8; 8], bool)> {
        match self.op(op::READDIR)? {
            status::OK => {
                let verf = self.d.fixed8()?;
                let mut entries = Vec::new();
                while self.d.bool()? {
                    if entries.len() >= MAX_ENTRIES {
                        return Err(bad("more directory entries than one reply may hold"));
                    }
                    let cookie = self.d.u64()?;
                    let name = String::from_utf8_lossy(self.d.opaque(MAX_NAME)?).into_owned();
                    let attrs = fattr(&mut self.d)?;
                    entries.push(DirEntry { cookie, name, attrs });
                }
                Ok(Ok((entries, verf, self.d.bool()?)))
            }
            s => Ok(Err(s)),
        }
    }

    /// EXCHANGE_ID: (client id, the sequence id CREATE_SESSION must carry).
    pub fn exchange_id(&mut self) -> Res<(u64, u32)> {
        match self.op(op::EXCHANGE_ID)? {
            status::OK => {
                let clientid = self.d.u64()?;
                let seq = self.d.u32()?;
                self.d.u32()?; // flags
                if self.d.u32()? != 0 {
                    return Err(bad("state protection other than SP4_NONE, which ioscope did not ask for"));
                }
                Ok(Ok((clientid, seq)))
            }
            s => Ok(Err(s)),
        }
    }

    /// CREATE_SESSION: the session id and the fore channel granted.
    pub fn create_session(&mut self) -> Res<(SessionId, Channel)> {
        match self.op(op::CREATE_SESSION)? {
            status::OK => {
                let mut id = [0u8; 16];
                id.copy_from_slice(self.d.fixed(16)?);
                self.d.skip(8)?; // sequence, flags
                self.d.u32()?; // header padding
                let (max_request, max_response) = (self.d.u32()?, self.d.u32()?);
                self.d.u32()?; // largest cached response
                let (max_operations, max_requests) = (self.d.u32()?, self.d.u32()?);
                let ird = self.d.u32()?;
                if ird > 1 {
                    return Err(bad("ca_rdma_ird of more than one value"));
                }
                self.d.skip(4 * ird as usize)?;
                Ok(Ok((id, Channel { max_request, max_response, max_operations, max_requests })))
            }
            s => Ok(Err(s)),
        }
    }
}

fn read_stateid(d: &mut Decoder) -> Result<StateId, XdrError> {
    let seqid = d.u32()?;
    let mut other = [0u8; 12];
    other.copy_from_slice(d.fixed(12)?);
    Ok(StateId { seqid, other })
}

fn read_bitmap(d: &mut Decoder) -> Result<Vec<u32>, XdrError> {
    let n = d.u32()? as usize;
    if n > MAX_BITMAP_WORDS {
        return Err(bad("a bitmap longer than any attribute number ioscope knows"));
    }
    (0..n).map(|_| d.u32()).collect()
}

/// open_delegation4, read past.
fn skip_delegation(d: &mut Decoder) -> Result<(), XdrError> {
    let ace = |d: &mut Decoder| -> Result<(), XdrError> {
        d.skip(12)?;
        d.opaque(MAX_OPAQUE).map(|_| ())
    };
    match d.u32()? {
        0 => Ok(()),
        1 => {
            read_stateid(d)?;
            d.bool()?;
            ace(d)
        }
        2 => {
            read_stateid(d)?;
            d.bool()?;
            match d.u32()? {
                1 => d.skip(8)?,
                2 => d.skip(8)?,
                _ => return Err(bad("space limit of an unknown kind")),
            }
            ace(d)
        }
        3 => match d.u32()? {
            1 | 2 => d.bool().map(|_| ()),
            _ => Ok(()),
        },
        _ => Err(bad("delegation of an unknown kind")),
    }
}

/// What a fattr4 says of the attributes ioscope asks for (None: not returned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Attrs {
    /// nfs_ftype4: 1 regular file, 2 directory, ...
    pub kind: Option<u32>,
    pub size: Option<u64>,
    pub fileid: Option<u64>,
    pub mode: Option<u32>,
    pub lease_s: Option<u32>,
    pub maxread: Option<u64>,
    pub maxwrite: Option<u64>,
}

/// A fattr4: the values of the attributes its bitmap has, in the order of their numbers;
/// one ioscope did not ask for (whose size it cannot know) ends the reading there.
fn fattr(d: &mut Decoder) -> Result<Attrs, XdrError> {
    let words = read_bitmap(d)?;
    let values = d.opaque(MAX_ATTRS)?;
    let mut v = Decoder::new(values);
    let mut a = Attrs::default();
    for n in (0..words.len() as u32 * 32).filter(|n| words[(n / 32) as usize] & (1 << (n % 32)) != 0) {
        match n {
            attr::TYPE => a.kind = Some(v.u32()?),
            attr::SIZE => a.size = Some(v.u64()?),
            attr::LEASE_TIME => a.lease_s = Some(v.u32()?),
            attr::FILEID => a.fileid = Some(v.u64()?),
            attr::MAXREAD => a.maxread = Some(v.u64()?),
            attr::MAXWRITE => a.maxwrite = Some(v.u64()?),
            attr::MODE => a.mode = Some(v.u32()?),
            _ => break,
        }
    }
    Ok(a)
}

/// A directory entry of READDIR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub cookie: u64,
    pub name: String,
    pub attrs: Attrs,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A COMPOUND4res of the given (operation, status, results) triples.
    pub(crate) fn reply(status: u32, results: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let mut e = Encoder::default();
        e.u32(status).string("").u32(results.len() as u32);
        for (opnum, st, body) in results {
            e.u32(*opnum).u32(*st);
            e.buf.extend_from_slice(body);
        }
        e.buf
    }

    fn words(e: &Encoder) -> Vec<u32> {
        e.buf.chunks(4).map(|c| u32::from_be_bytes(c.try_into().unwrap())).collect()
    }

    #[test]
    fn a_compound_starts_with_its_tag_minor_version_and_operation_count() {
        let mut e = Encoder::default();
        compound(&mut e, 3);
        sequence(&mut e, &[7; 16], 5, 2, 9);
        let w = words(&e);
        assert_eq!(w[..3], [0, 1, 3], "empty tag, minor version 1, 3 operations");
        assert_eq!(w[3], op::SEQUENCE);
        assert_eq!(&e.buf[16..32], &[7; 16], "the session id");
        assert_eq!(w[8..], [5, 2, 9, 0], "sequence id, slot, highest slot, not cached");
    }

    #[test]
    fn bitmaps_set_each_attribute_in_its_word() {
        let mut e = Encoder::default();
        getattr(&mut e, FILE_ATTRS);
        assert_eq!(words(&e), [op::GETATTR, 2, 1 << 1 | 1 << 4 | 1 << 20, 1 << 1]);
        let mut e = Encoder::default();
        setattr(&mut e, &StateId::default(), None);
        assert_eq!(words(&e)[5..], [2, 0, 1 << 22, 4, 0], "time_modify_set to the server's time");
    }

    #[test]
    fn open_creating_guarded_asks_no_delegation_and_sets_the_mode() {
        let mut e = Encoder::default();
        open(&mut e, 0x0102, b"me", "f", true, Create::Guarded { mode: 0o644 });
        let w = words(&e);
        assert_eq!(w[..4], [op::OPEN, 0, 3 | 0x400, 0], "seqid, share both + want no delegation, deny none");
        assert_eq!(w[4..6], [0, 0x0102], "client id");
        assert_eq!(w[6..8], [2, u32::from_be_bytes(*b"me\0\0")], "owner");
        assert_eq!(w[8..10], [1, 1], "OPEN4_CREATE, GUARDED4");
        assert_eq!(w[10..14], [2, 0, 1 << 1, 4], "mode's bitmap and 4 bytes of values");
        assert_eq!(w[14..], [0o644, 0, 1, u32::from_be_bytes(*b"f\0\0\0")], "mode, CLAIM_NULL, the name");
    }

    #[test]
    fn results_are_read_in_order_and_a_failure_ends_the_compound() {
        let mut seq = Encoder::default();
        seq.fixed(&[1; 16]).u32(8).u32(0).u32(3).u32(3).u32(0);
        let mut read = Encoder::default();
        read.bool(true).opaque(b"hello");
        let body = reply(0, &[(op::SEQUENCE, 0, &seq.buf), (op::PUTFH, 0, &[]), (op::READ, 0, &read.buf)]);
        let mut r = Reply::parse(&body).unwrap();
        assert_eq!(r.sequence().unwrap(), Ok(8));
        assert_eq!(r.plain(op::PUTFH, 0).unwrap(), Ok(()));
        assert_eq!(r.read().unwrap(), Ok((&b"hello"[..], true)));

        // A stale handle: the compound ends at PUTFH, and asking for READ gives its status.
        let body = reply(70, &[(op::SEQUENCE, 0, &seq.buf), (op::PUTFH, 70, &[])]);
        let mut r = Reply::parse(&body).unwrap();
        assert_eq!(r.sequence().unwrap(), Ok(8));
        assert_eq!(r.plain(op::PUTFH, 0).unwrap(), Err(70));
        assert_eq!(r.read().unwrap(), Err(70));
        // A session the server does not know: SEQUENCE itself fails.
        let body = reply(status::BADSESSION, &[(op::SEQUENCE, status::BADSESSION, &[])]);
        let mut r = Reply::parse(&body).unwrap();
        assert_eq!(r.sequence().unwrap(), Err(status::BADSESSION));
        // A result of another operation than was sent, or a count larger than the reply.
        let body = reply(0, &[(op::GETFH, 0, &[])]);
        let mut r = Reply::parse(&body).unwrap();
        assert!(r.sequence().is_err());
        assert!(Reply::parse(&[0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn attributes_are_read_by_their_bitmap_and_an_unknown_one_stops_the_reading() {
        let mut e = Encoder::default();
        let mut v = Encoder::default();
        v.u32(2).u64(4096).u64(77).u32(0o755);
        e.u32(2).u32(1 << 1 | 1 << 4 | 1 << 20).u32(1 << 1).opaque(&v.buf);
        let body = reply(0, &[(op::GETATTR, 0, &e.buf)]);
        let a = Reply::parse(&body).unwrap().getattr().unwrap().unwrap();
        assert_eq!((a.kind, a.size, a.fileid, a.mode), (Some(2), Some(4096), Some(77), Some(0o755)));
        let mut e = Encoder::default();
        let mut v = Encoder::default();
        v.u32(10).u64(1 << 20).u64(1 << 20);
        e.u32(1).u32(1 << 10 | 1 << 30 | 1 << 31).opaque(&v.buf);
        let a = Reply::parse(&reply(0, &[(op::GETATTR, 0, &e.buf)])).unwrap().getattr().unwrap().unwrap();
        assert_eq!((a.lease_s, a.maxread, a.maxwrite), (Some(10), Some(1 << 20), Some(1 << 20)));
        // Attribute 2 (fh_expire_type) comes before size: its size is not known here.
        let mut e = Encoder::default();
        e.u32(1).u32(1 << 2 | 1 << 4).opaque(&[0; 12]);
        let a = Reply::parse(&reply(0, &[(op::GETATTR, 0, &e.buf)])).unwrap().getattr().unwrap().unwrap();
        assert_eq!(a, Attrs::default());
        let mut e = Encoder::default();
        e.u32(1000).u32(0);
        assert!(Reply::parse(&reply(0, &[(op::GETATTR, 0, &e.buf)])).unwrap().getattr().is_err());
    }

    #[test]
    fn session_setup_replies_give_the_client_id_and_the_slots_granted() {
        let mut x = Encoder::default();
        x.u64(0xabc).u32(1).u32(0x10000).u32(0).u64(0).opaque(b"srv").opaque(b"").u32(0);
        let (id, seq) =
            Reply::parse(&reply(0, &[(op::EXCHANGE_ID, 0, &x.buf)])).unwrap().exchange_id().unwrap().unwrap();
        assert_eq!((id, seq), (0xabc, 1));
        let mut c = Encoder::default();
        c.fixed(&[9; 16]).u32(1).u32(0);
        c.u32(0).u32(1 << 20).u32(1 << 20).u32(4096).u32(16).u32(64).u32(0);
        c.u32(0).u32(4096).u32(4096).u32(0).u32(2).u32(1).u32(0);
        let (sid, fore) =
            Reply::parse(&reply(0, &[(op::CREATE_SESSION, 0, &c.buf)])).unwrap().create_session().unwrap().unwrap();
        assert_eq!(sid, [9; 16]);
        assert_eq!((fore.max_requests, fore.max_request, fore.max_operations), (64, 1 << 20, 16));
    }

    #[test]
    fn every_status_has_its_nfs4err_name() {
        assert_eq!(status_name(28), "NFS4ERR_NOSPC");
        assert_eq!(status_name(10008), "NFS4ERR_DELAY");
        assert_eq!(status_name(10052), "NFS4ERR_BADSESSION");
        assert_eq!(status_name(10078), "NFS4ERR_DEADSESSION");
        assert_eq!(status_name(4242), "NFS4ERR_UNKNOWN");
    }
}
