//! The NFSv3 (RFC 1813), MOUNT v3 and portmapper v2 messages ioscope uses: argument
//! encoders and result decoders, pure functions over bytes.

use crate::xdr::{Decoder, Encoder, XdrError};

pub const PMAP_PROG: u32 = 100000;
pub const MOUNT_PROG: u32 = 100005;
pub const NFS_PROG: u32 = 100003;

/// NFSv3 procedure numbers.
pub mod proc3 {
    pub const GETATTR: u32 = 1;
    pub const SETATTR: u32 = 2;
    pub const LOOKUP: u32 = 3;
    pub const READ: u32 = 6;
    pub const WRITE: u32 = 7;
    pub const CREATE: u32 = 8;
    pub const MKDIR: u32 = 9;
    pub const REMOVE: u32 = 12;
    pub const RMDIR: u32 = 13;
    pub const RENAME: u32 = 14;
    pub const READDIRPLUS: u32 = 17;
    pub const FSINFO: u32 = 19;
    pub const COMMIT: u32 = 21;
}

/// The name of an NFSv3 status (nfsstat3), as errors are reported per operation.
pub fn status_name(code: u32) -> &'static str {
    match code {
        0 => "NFS3_OK",
        1 => "NFS3ERR_PERM",
        2 => "NFS3ERR_NOENT",
        5 => "NFS3ERR_IO",
        6 => "NFS3ERR_NXIO",
        13 => "NFS3ERR_ACCES",
        17 => "NFS3ERR_EXIST",
        18 => "NFS3ERR_XDEV",
        19 => "NFS3ERR_NODEV",
        20 => "NFS3ERR_NOTDIR",
        21 => "NFS3ERR_ISDIR",
        22 => "NFS3ERR_INVAL",
        27 => "NFS3ERR_FBIG",
        28 => "NFS3ERR_NOSPC",
        30 => "NFS3ERR_ROFS",
        31 => "NFS3ERR_MLINK",
        63 => "NFS3ERR_NAMETOOLONG",
        66 => "NFS3ERR_NOTEMPTY",
        69 => "NFS3ERR_DQUOT",
        70 => "NFS3ERR_STALE",
        71 => "NFS3ERR_REMOTE",
        10001 => "NFS3ERR_BADHANDLE",
        10002 => "NFS3ERR_NOT_SYNC",
        10003 => "NFS3ERR_BAD_COOKIE",
        10004 => "NFS3ERR_NOTSUPP",
        10005 => "NFS3ERR_TOOSMALL",
        10006 => "NFS3ERR_SERVERFAULT",
        10007 => "NFS3ERR_BADTYPE",
        10008 => "NFS3ERR_JUKEBOX",
        _ => "NFS3ERR_UNKNOWN",
    }
}

/// A file handle (at most 64 bytes in NFSv3).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fh(pub Vec<u8>);

/// The attributes ioscope reads (fattr3, of which the rest is skipped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Attr {
    /// 1 regular file, 2 directory, ...
    pub kind: u32,
    pub mode: u32,
    pub size: u64,
    pub fileid: u64,
}

/// Write stability (stable_how).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stable {
    Unstable = 0,
    DataSync = 1,
    FileSync = 2,
}

/// FSINFO: the transfer sizes the server takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsInfo {
    pub rtmax: u32,
    pub rtpref: u32,
    pub wtmax: u32,
    pub wtpref: u32,
    pub maxfilesize: u64,
}

/// A decoded result: NFS3_OK with a value, or a failing status.
pub type Res<T> = Result<Result<T, u32>, XdrError>;

pub fn fh(e: &mut Encoder, f: &Fh) {
    e.opaque(&f.0);
}

pub fn diropargs(e: &mut Encoder, dir: &Fh, name: &str) {
    fh(e, dir);
    e.string(name);
}

/// sattr3 that sets only the mode (or nothing), and the size when given.
pub fn sattr(e: &mut Encoder, mode: Option<u32>, size: Option<u64>) {
    match mode {
        Some(m) => e.bool(true).u32(m),
        None => e.bool(false),
    };
    e.bool(false).bool(false); // uid, gid
    match size {
        Some(s) => e.bool(true).u64(s),
        None => e.bool(false),
    };
    e.u32(0).u32(0); // atime, mtime: don't change
}

pub fn read_args(e: &mut Encoder, f: &Fh, offset: u64, count: u32) {
    fh(e, f);
    e.u64(offset).u32(count);
}

pub fn write_args(e: &mut Encoder, f: &Fh, offset: u64, stable: Stable, data: &[u8]) {
    write_args_head(e, f, offset, stable, data.len() as u32);
    e.fixed(data);
}

/// WRITE arguments up to the data, which the caller sends after them (with its padding)
/// from its own buffer.
pub fn write_args_head(e: &mut Encoder, f: &Fh, offset: u64, stable: Stable, len: u32) {
    fh(e, f);
    e.u64(offset).u32(len).u32(stable as u32).u32(len);
}

/// CREATE: `guarded` fails with NFS3ERR_EXIST when the name exists; unchecked creates or
/// opens it, and `truncate` then sets its size to 0.
pub fn create_args(e: &mut Encoder, dir: &Fh, name: &str, mode: u32, guarded: bool, truncate: bool) {
    diropargs(e, dir, name);
    e.u32(if guarded { 1 } else { 0 });
    sattr(e, Some(mode), truncate.then_some(0));
}

pub fn mkdir_args(e: &mut Encoder, dir: &Fh, name: &str, mode: u32) {
    diropargs(e, dir, name);
    sattr(e, Some(mode), None);
}

pub fn setattr_args(e: &mut Encoder, f: &Fh, mode: Option<u32>, size: Option<u64>) {
    fh(e, f);
    sattr(e, mode, size);
    e.bool(false); // no guard
}

/// SETATTR of the modification time to the server's clock (what touch(1) does).
pub fn touch_args(e: &mut Encoder, f: &Fh) {
    fh(e, f);
    e.bool(false).bool(false).bool(false).bool(false); // mode, uid, gid, size
    e.u32(0).u32(1); // atime: don't change; mtime: SET_TO_SERVER_TIME
    e.bool(false); // no guard
}

pub fn rename_args(e: &mut Encoder, from_dir: &Fh, from: &str, to_dir: &Fh, to: &str) {
    diropargs(e, from_dir, from);
    diropargs(e, to_dir, to);
}

pub fn commit_args(e: &mut Encoder, f: &Fh) {
    fh(e, f);
    e.u64(0).u32(0); // the whole file
}

pub fn readdirplus_args(e: &mut Encoder, dir: &Fh, cookie: u64, verf: [u8; 8]) {
    fh(e, dir);
    e.u64(cookie).fixed(&verf).u32(8192).u32(65536);
}

fn fattr(d: &mut Decoder) -> Result<Attr, XdrError> {
    let kind = d.u32()?;
    let mode = d.u32()?;
    d.skip(12)?; // nlink, uid, gid
    let size = d.u64()?;
    d.skip(8 + 8 + 8)?; // used, rdev, fsid
    let fileid = d.u64()?;
    d.skip(24)?; // atime, mtime, ctime
    Ok(Attr { kind, mode, size, fileid })
}

fn post_op_attr(d: &mut Decoder) -> Result<Option<Attr>, XdrError> {
    if d.bool()? {
        fattr(d).map(Some)
    } else {
        Ok(None)
    }
}

fn wcc_data(d: &mut Decoder) -> Result<(), XdrError> {
    if d.bool()? {
        d.skip(8 + 8 + 8)?; // size, mtime, ctime
    }
    post_op_attr(d).map(|_| ())
}

fn status(d: &mut Decoder) -> Result<u32, XdrError> {
    d.u32()
}

pub fn getattr_res(body: &[u8]) -> Res<Attr> {
    let mut d = Decoder::new(body);
    match status(&mut d)? {
        0 => Ok(Ok(fattr(&mut d)?)),
        s => Ok(Err(s)),
    }
}

pub fn lookup_res(body: &[u8]) -> Res<(Fh, Option<Attr>)> {
    let mut d = Decoder::new(body);
    match status(&mut d)? {
        0 => {
            let f = Fh(d.opaque(64)?.to_vec());
            Ok(Ok((f, post_op_attr(&mut d)?)))
        }
        s => Ok(Err(s)),
    }
}

/// READ: (bytes read, eof). The data itself is not copied out.
pub fn read_res(body: &[u8]) -> Res<(u32, bool)> {
    read_res_data(body).map(|r| r.map(|(data, eof)| (data.len() as u32, eof)))
}

/// READ, with the data: (the bytes read, EOF).
pub fn read_res_data(body: &[u8]) -> Res<(&[u8], bool)> {
    let mut d = Decoder::new(body);
    match status(&mut d)? {
        0 => {
            post_op_attr(&mut d)?;
            let count = d.u32()?;
            let eof = d.bool()?;
            let data = d.opaque(usize::MAX)?;
            Ok(Ok((&data[..data.len().min(count as usize)], eof)))
        }
        s => Ok(Err(s)),
    }
}

/// Where a READ reply's data begins in its results and how many bytes it has (the opaque
/// length as sent; the pipe checks it against the record and the buffer), found from the
/// results' first bytes: None for a failing status or bytes that end before the data.
/// This lets the pipe read the data straight into the I/O buffer ([`crate::pipe::Landing`]).
pub fn read_res_split(head: &[u8]) -> Option<(usize, usize)> {
    let mut d = Decoder::new(head);
    if status(&mut d).ok()? != 0 {
        return None;
    }
    post_op_attr(&mut d).ok()?;
    d.u32().ok()?; // count
    d.bool().ok()?; // eof
    let len = d.u32().ok()? as usize;
    Some((head.len() - d.remaining(), len))
}

/// READ whose `landed` bytes of data were read into the I/O buffer: `head` is the results
/// up to where the data began ([`read_res_split`]). (The bytes read, EOF), as [`read_res`].
pub fn read_res_landed(head: &[u8], landed: usize) -> Res<(u32, bool)> {
    let mut d = Decoder::new(head);
    match status(&mut d)? {
        0 => {
            post_op_attr(&mut d)?;
            let count = d.u32()?;
            let eof = d.bool()?;
            let at = head.len() - d.remaining();
            let len = d.u32()? as usize;
            if len != landed || d.remaining() != 0 {
                return Err(XdrError { at, what: "READ data other than the bytes received" });
            }
            Ok(Ok((count.min(len as u32), eof)))
        }
        s => Ok(Err(s)),
    }
}

/// WRITE: (bytes written, how stable, the server's write verifier).
pub fn write_res(body: &[u8]) -> Res<(u32, u32, [u8; 8])> {
    let mut d = Decoder::new(body);
    match status(&mut d)? {
        0 => {
            wcc_data(&mut d)?;
            let count = d.u32()?;
            let committed = d.u32()?;
            let verf = d.fixed8()?;
            Ok(Ok((count, committed, verf)))
        }
        s => Ok(Err(s)),
    }
}

/// How stable a WRITE reply says the data is (`stable_how`): UNSTABLE data is kept only in
/// the server's memory until a COMMIT with the same write verifier.
pub const UNSTABLE: u32 = 0;

/// COMMIT: the server's write verifier. If it differs from the verifier of the UNSTABLE
/// WRITEs the COMMIT covers, the server restarted between them and may have lost them
/// (RFC 1813, WRITE and COMMIT).
pub fn commit_res(body: &[u8]) -> Res<[u8; 8]> {
    let mut d = Decoder::new(body);
    match status(&mut d)? {
        0 => {
            wcc_data(&mut d)?;
            Ok(Ok(d.fixed8()?))
        }
        s => Ok(Err(s)),
    }
}

/// CREATE and MKDIR: the new object's handle when the server returned it.
pub fn create_res(body: &[u8]) -> Res<Option<Fh>> {
    let mut d = Decoder::new(body);
    match status(&mut d)? {
        0 => {
            let f = if d.bool()? { Some(Fh(d.opaque(64)?.to_vec())) } else { None };
            Ok(Ok(f))
        }
        s => Ok(Err(s)),
    }
}

/// REMOVE, RMDIR, RENAME, SETATTR, COMMIT: only the status matters.
pub fn status_res(body: &[u8]) -> Res<()> {
    let mut d = Decoder::new(body);
    match status(&mut d)? {
        0 => Ok(Ok(())),
        s => Ok(Err(s)),
    }
}

pub fn fsinfo_res(body: &[u8]) -> Res<FsInfo> {
    let mut d = Decoder::new(body);
    match status(&mut d)? {
        0 => {
            post_op_attr(&mut d)?;
            let (rtmax, rtpref) = (d.u32()?, d.u32()?);
            d.u32()?; // rtmult
            let (wtmax, wtpref) = (d.u32()?, d.u32()?);
            d.u32()?; // wtmult
            d.u32()?; // dtpref
            let maxfilesize = d.u64()?;
            Ok(Ok(FsInfo { rtmax, rtpref, wtmax, wtpref, maxfilesize }))
        }
        s => Ok(Err(s)),
    }
}

/// One READDIRPLUS entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub cookie: u64,
    pub fh: Option<Fh>,
    pub attr: Option<Attr>,
}

/// READDIRPLUS: (entries, cookie verifier, eof).
pub fn readdirplus_res(body: &[u8]) -> Res<(Vec<DirEntry>, [u8; 8], bool)> {
    let mut d = Decoder::new(body);
    match status(&mut d)? {
        0 => {
            post_op_attr(&mut d)?;
            let verf = d.fixed8()?;
            let mut entries = Vec::new();
            while d.bool()? {
                d.u64()?; // fileid
                let name = String::from_utf8_lossy(d.opaque(255)?).into_owned();
                let cookie = d.u64()?;
                let attr = post_op_attr(&mut d)?;
                let fh = if d.bool()? { Some(Fh(d.opaque(64)?.to_vec())) } else { None };
                entries.push(DirEntry { name, cookie, fh, attr });
            }
            Ok(Ok((entries, verf, d.bool()?)))
        }
        s => Ok(Err(s)),
    }
}

/// MOUNT3 MNT: the export's root handle, or the mount status (mountstat3).
pub fn mnt_res(body: &[u8]) -> Res<Fh> {
    let mut d = Decoder::new(body);
    match status(&mut d)? {
        0 => Ok(Ok(Fh(d.opaque(64)?.to_vec()))),
        s => Ok(Err(s)),
    }
}

/// MOUNT3 EXPORT: the exported paths.
pub fn export_res(body: &[u8]) -> Result<Vec<String>, XdrError> {
    let mut d = Decoder::new(body);
    let mut out = Vec::new();
    while d.bool()? {
        out.push(String::from_utf8_lossy(d.opaque(1024)?).into_owned());
        while d.bool()? {
            d.opaque(255)?; // group
        }
    }
    Ok(out)
}

/// Portmapper GETPORT arguments: (program, version, TCP).
pub fn getport_args(e: &mut Encoder, prog: u32, vers: u32) {
    e.u32(prog).u32(vers).u32(6).u32(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr_bytes(e: &mut Encoder, kind: u32, size: u64, fileid: u64) {
        e.u32(kind).u32(0o644).u32(1).u32(0).u32(0).u64(size).u64(size).u64(0).u64(9).u64(fileid);
        e.u64(0).u64(0).u64(0);
    }

    #[test]
    fn a_write_call_carries_offset_stability_and_padded_data() {
        let mut e = Encoder::default();
        write_args(&mut e, &Fh(vec![1, 2, 3]), 4096, Stable::Unstable, b"hello");
        let mut d = Decoder::new(&e.buf);
        assert_eq!(d.opaque(64).unwrap(), [1, 2, 3]);
        assert_eq!((d.u64().unwrap(), d.u32().unwrap(), d.u32().unwrap()), (4096, 5, 0));
        assert_eq!(d.opaque(10).unwrap(), b"hello");
        assert_eq!(d.remaining(), 0);
    }

    #[test]
    fn results_decode_and_failures_keep_their_status() {
        let mut e = Encoder::default();
        e.u32(0).bool(true);
        attr_bytes(&mut e, 1, 8192, 77);
        e.u32(3).bool(true).opaque(b"abc");
        assert_eq!(read_res(&e.buf).unwrap(), Ok((3, true)));
        assert_eq!(read_res_data(&e.buf).unwrap(), Ok((&b"abc"[..], true)), "the data a READ returned");

        let mut e = Encoder::default();
        e.u32(0);
        attr_bytes(&mut e, 2, 4096, 5);
        assert_eq!(getattr_res(&e.buf).unwrap(), Ok(Attr { kind: 2, mode: 0o644, size: 4096, fileid: 5 }));

        let mut e = Encoder::default();
        e.u32(70).bool(false);
        assert_eq!(read_res(&e.buf).unwrap(), Err(70));
        assert_eq!(status_name(70), "NFS3ERR_STALE");
        assert!(read_res(&[0, 0]).is_err(), "a short reply is an error, not a panic");
    }

    #[test]
    fn fsinfo_gives_the_transfer_limits() {
        let mut e = Encoder::default();
        e.u32(0).bool(false).u32(1 << 20).u32(1 << 20).u32(4096).u32(1 << 20).u32(65536).u32(4096).u32(8192);
        e.u64(u64::MAX).u32(0).u32(1).u32(0x1b);
        let i = fsinfo_res(&e.buf).unwrap().unwrap();
        assert_eq!((i.rtmax, i.wtmax, i.wtpref), (1 << 20, 1 << 20, 65536));
    }

    #[test]
    fn readdirplus_lists_names_handles_and_eof() {
        let mut e = Encoder::default();
        e.u32(0).bool(false).fixed(&[7; 8]);
        for (i, name) in ["a", "bb"].iter().enumerate() {
            e.bool(true).u64(i as u64).string(name).u64(i as u64 + 10).bool(false).bool(true).opaque(&[i as u8; 8]);
        }
        e.bool(false).bool(true);
        let (entries, verf, eof) = readdirplus_res(&e.buf).unwrap().unwrap();
        assert_eq!(entries.iter().map(|x| x.name.as_str()).collect::<Vec<_>>(), ["a", "bb"]);
        assert_eq!(entries[1].cookie, 11);
        assert_eq!(entries[1].fh, Some(Fh(vec![1; 8])));
        assert_eq!((verf, eof), ([7; 8], true));
    }
}
