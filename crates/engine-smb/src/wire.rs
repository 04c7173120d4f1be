//! SMB2 messages as bytes (MS-SMB2 section 2.2): the 64-byte header, the bodies of the
//! requests ioscope sends and the fields of the replies it reads. Requests are appended to
//! a caller's buffer (no allocation of their own); replies are read from a received
//! message with every offset and length checked against it: a short or inconsistent reply
//! is `None`, never a panic.

/// Header size; every message starts with one.
pub const HEADER: usize = 64;

pub const NEGOTIATE: u16 = 0;
pub const SESSION_SETUP: u16 = 1;
pub const LOGOFF: u16 = 2;
pub const TREE_CONNECT: u16 = 3;
pub const CREATE: u16 = 5;
pub const CLOSE: u16 = 6;
pub const FLUSH: u16 = 7;
pub const READ: u16 = 8;
pub const WRITE: u16 = 9;
pub const IOCTL: u16 = 11;
pub const QUERY_DIRECTORY: u16 = 14;
pub const QUERY_INFO: u16 = 16;
pub const SET_INFO: u16 = 17;

pub const FLAG_SERVER_TO_REDIR: u32 = 0x1;
pub const FLAG_ASYNC: u32 = 0x2;
pub const FLAG_SIGNED: u32 = 0x8;

pub const STATUS_PENDING: u32 = 0x0000_0103;
pub const STATUS_MORE_PROCESSING_REQUIRED: u32 = 0xC000_0016;
pub const STATUS_NO_MORE_FILES: u32 = 0x8000_0006;
pub const STATUS_END_OF_FILE: u32 = 0xC000_0011;

pub const DIALECT_202: u16 = 0x0202;
pub const DIALECT_210: u16 = 0x0210;
pub const DIALECT_300: u16 = 0x0300;
pub const DIALECT_302: u16 = 0x0302;
pub const DIALECT_311: u16 = 0x0311;
pub const DIALECTS: [u16; 5] = [DIALECT_202, DIALECT_210, DIALECT_300, DIALECT_302, DIALECT_311];

pub const SIGNING_ENABLED: u16 = 0x1;
pub const SIGNING_REQUIRED: u16 = 0x2;
pub const CAP_LARGE_MTU: u32 = 0x4;
pub const CAP_ENCRYPTION: u32 = 0x40;

pub const SESSION_IS_GUEST: u16 = 0x1;
pub const SESSION_IS_NULL: u16 = 0x2;
pub const SESSION_ENCRYPT_DATA: u16 = 0x4;
pub const SHARE_ENCRYPT_DATA: u32 = 0x8000;

// CREATE: access, share, disposition, options, attributes.
pub const FILE_READ_DATA: u32 = 0x1;
pub const FILE_WRITE_DATA: u32 = 0x2;
pub const FILE_READ_ATTRIBUTES: u32 = 0x80;
pub const FILE_WRITE_ATTRIBUTES: u32 = 0x100;
pub const DELETE: u32 = 0x0001_0000;
pub const SYNCHRONIZE: u32 = 0x0010_0000;
pub const GENERIC_WRITE: u32 = 0x4000_0000;
pub const GENERIC_READ: u32 = 0x8000_0000;
pub const SHARE_ALL: u32 = 0x7;
pub const OPEN: u32 = 1;
pub const CREATE_NEW: u32 = 2;
pub const OVERWRITE_IF: u32 = 5;
pub const DIRECTORY_FILE: u32 = 0x1;
pub const WRITE_THROUGH: u32 = 0x2;
pub const NON_DIRECTORY_FILE: u32 = 0x40;
pub const DELETE_ON_CLOSE: u32 = 0x1000;
pub const ATTR_DIRECTORY: u32 = 0x10;
pub const ATTR_NORMAL: u32 = 0x80;

pub const READ_UNBUFFERED: u8 = 0x1;

pub const INFO_FILE: u8 = 1;
pub const INFO_FILESYSTEM: u8 = 2;
pub const FILE_DIRECTORY_INFORMATION: u8 = 1;
pub const FILE_BASIC_INFORMATION: u8 = 4;
pub const FILE_RENAME_INFORMATION: u8 = 10;
pub const FILE_DISPOSITION_INFORMATION: u8 = 13;
pub const FILE_FS_FULL_SIZE_INFORMATION: u8 = 7;

pub const FSCTL_SRV_REQUEST_RESUME_KEY: u32 = 0x0014_0078;
pub const FSCTL_SRV_COPYCHUNK_WRITE: u32 = 0x0014_80F2;

/// A file handle (persistent and volatile halves).
pub type FileId = [u8; 16];

pub fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?))
}

pub fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?))
}

pub fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// `len` bytes at `off` of `b` (offsets in replies count from the header's start).
pub fn slice_at(b: &[u8], off: usize, len: usize) -> Option<&[u8]> {
    b.get(off..off.checked_add(len)?)
}

/// The fields of a header the client acts on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub credit_charge: u16,
    pub status: u32,
    pub command: u16,
    pub credits: u16,
    pub flags: u32,
    pub message_id: u64,
    pub session_id: u64,
}

impl Header {
    /// The header of a received message; `None` unless it starts with 0xFE 'S' 'M' 'B'
    /// and is a whole header long.
    pub fn parse(m: &[u8]) -> Option<Header> {
        if m.get(..4)? != b"\xFESMB" || m.len() < HEADER {
            return None;
        }
        Some(Header {
            credit_charge: u16_at(m, 6)?,
            status: u32_at(m, 8)?,
            command: u16_at(m, 12)?,
            credits: u16_at(m, 14)?,
            flags: u32_at(m, 16)?,
            message_id: u64_at(m, 24)?,
            session_id: u64_at(m, 40)?,
        })
    }

    pub fn is_async(&self) -> bool {
        self.flags & FLAG_ASYNC != 0
    }
}

/// Appends a request header (signature zero; signing fills it in).
#[allow(clippy::too_many_arguments)]
pub fn put_header(
    out: &mut Vec<u8>,
    command: u16,
    charge: u16,
    credits: u16,
    message_id: u64,
    tree_id: u32,
    session_id: u64,
) {
    out.extend_from_slice(b"\xFESMB");
    out.extend_from_slice(&64u16.to_le_bytes());
    out.extend_from_slice(&charge.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // channel sequence
    out.extend_from_slice(&command.to_le_bytes());
    out.extend_from_slice(&credits.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // flags
    out.extend_from_slice(&0u32.to_le_bytes()); // next command
    out.extend_from_slice(&message_id.to_le_bytes());
    out.extend_from_slice(&0xFEFFu32.to_le_bytes()); // process id
    out.extend_from_slice(&tree_id.to_le_bytes());
    out.extend_from_slice(&session_id.to_le_bytes());
    out.extend_from_slice(&[0u8; 16]);
}

fn put16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// UTF-16LE of a string.
pub fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

/// A string from UTF-16LE bytes (unpaired surrogates replaced).
pub fn from_utf16(b: &[u8]) -> String {
    let units: Vec<u16> = b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    String::from_utf16_lossy(&units)
}

/// The body of a NEGOTIATE request offering every dialect from 2.0.2 to 3.1.1, with the
/// 3.1.1 contexts: SHA-512 preauthentication integrity (`salt`), the ciphers (AES-128-GCM
/// first) and the signing algorithms (AES-GMAC first).
pub fn negotiate(out: &mut Vec<u8>, security_mode: u16, client_guid: &[u8; 16], salt: &[u8; 32]) {
    let start = out.len() - HEADER;
    put16(out, 36);
    put16(out, DIALECTS.len() as u16);
    put16(out, security_mode);
    put16(out, 0);
    put32(out, CAP_LARGE_MTU | CAP_ENCRYPTION);
    out.extend_from_slice(client_guid);
    let context_offset_at = out.len();
    put32(out, 0);
    put16(out, 3);
    put16(out, 0);
    for d in DIALECTS {
        put16(out, d);
    }
    let pad = |out: &mut Vec<u8>| {
        while (out.len() - start) % 8 != 0 {
            out.push(0);
        }
    };
    pad(out);
    let offset = (out.len() - start) as u32;
    out[context_offset_at..context_offset_at + 4].copy_from_slice(&offset.to_le_bytes());
    // PREAUTH_INTEGRITY_CAPABILITIES: one algorithm (SHA-512), a 32-byte salt.
    put16(out, 1);
    put16(out, 38);
    put32(out, 0);
    put16(out, 1);
    put16(out, 32);
    put16(out, 1);
    out.extend_from_slice(salt);
    pad(out);
    // ENCRYPTION_CAPABILITIES: AES-128-GCM, AES-128-CCM, AES-256-GCM, AES-256-CCM.
    put_ids_context(out, 2, &[2, 1, 4, 3]);
    pad(out);
    // SIGNING_CAPABILITIES: AES-GMAC, AES-CMAC, HMAC-SHA256.
    put_ids_context(out, 8, &[2, 1, 0]);
}

/// A negotiate context that is a count and a list of ids (ciphers, signing algorithms).
fn put_ids_context(out: &mut Vec<u8>, kind: u16, ids: &[u16]) {
    put16(out, kind);
    put16(out, 2 + 2 * ids.len() as u16);
    put32(out, 0);
    put16(out, ids.len() as u16);
    for &id in ids {
        put16(out, id);
    }
}

/// What a NEGOTIATE reply says.
#[derive(Clone, Debug, Default)]
pub struct Negotiated {
    pub dialect: u16,
    pub security_mode: u16,
    pub capabilities: u32,
    pub max_transact: u32,
    pub max_read: u32,
    pub max_write: u32,
    pub token: Vec<u8>,
    /// 3.1.1: the cipher and signing algorithm ids the server chose.
    pub cipher: Option<u16>,
    pub signing: Option<u16>,
}

pub fn parse_negotiate(m: &[u8]) -> Option<Negotiated> {
    let b = HEADER;
    let mut n = Negotiated {
        security_mode: u16_at(m, b + 2)?,
        dialect: u16_at(m, b + 4)?,
        capabilities: u32_at(m, b + 24)?,
        max_transact: u32_at(m, b + 28)?,
        max_read: u32_at(m, b + 32)?,
        max_write: u32_at(m, b + 36)?,
        ..Default::default()
    };
    let (off, len) = (u16_at(m, b + 56)? as usize, u16_at(m, b + 58)? as usize);
    n.token = if len == 0 { Vec::new() } else { slice_at(m, off, len)?.to_vec() };
    if n.dialect == DIALECT_311 {
        let count = u16_at(m, b + 6)?;
        let mut at = u32_at(m, b + 60)? as usize;
        for _ in 0..count {
            let kind = u16_at(m, at)?;
            let len = u16_at(m, at + 2)? as usize;
            let data = slice_at(m, at + 8, len)?;
            match kind {
                2 if u16_at(data, 0)? >= 1 => n.cipher = Some(u16_at(data, 2)?),
                8 if u16_at(data, 0)? >= 1 => n.signing = Some(u16_at(data, 2)?),
                _ => {}
            }
            at = (at + 8 + len).next_multiple_of(8);
        }
    }
    Some(n)
}

/// SESSION_SETUP with a security token.
pub fn session_setup(out: &mut Vec<u8>, security_mode: u8, token: &[u8]) {
    put16(out, 25);
    out.push(0);
    out.push(security_mode);
    put32(out, 0);
    put32(out, 0);
    put16(out, (HEADER + 24) as u16);
    put16(out, token.len() as u16);
    put64(out, 0);
    out.extend_from_slice(token);
}

/// A SESSION_SETUP reply: session flags and the server's token.
pub fn parse_session_setup(m: &[u8]) -> Option<(u16, Vec<u8>)> {
    let flags = u16_at(m, HEADER + 2)?;
    let (off, len) = (u16_at(m, HEADER + 4)? as usize, u16_at(m, HEADER + 6)? as usize);
    let token = if len == 0 { Vec::new() } else { slice_at(m, off, len)?.to_vec() };
    Some((flags, token))
}

/// TREE_CONNECT to `\\server\share`.
pub fn tree_connect(out: &mut Vec<u8>, unc: &str) {
    let path = utf16(unc);
    put16(out, 9);
    put16(out, 0);
    put16(out, (HEADER + 8) as u16);
    put16(out, path.len() as u16);
    out.extend_from_slice(&path);
}

/// A TREE_CONNECT reply: (share type, share flags).
pub fn parse_tree_connect(m: &[u8]) -> Option<(u8, u32)> {
    Some((*m.get(HEADER + 2)?, u32_at(m, HEADER + 4)?))
}

/// LOGOFF (and TREE_DISCONNECT: the same body).
pub fn logoff(out: &mut Vec<u8>) {
    put16(out, 4);
    put16(out, 0);
}

/// CREATE of `name` (UTF-16LE, relative to the share).
pub fn create(out: &mut Vec<u8>, name: &[u8], access: u32, attributes: u32, disposition: u32, options: u32) {
    put16(out, 57);
    out.push(0); // security flags
    out.push(0); // no oplock
    put32(out, 2); // impersonation
    put64(out, 0);
    put64(out, 0);
    put32(out, access);
    put32(out, attributes);
    put32(out, SHARE_ALL);
    put32(out, disposition);
    put32(out, options);
    put16(out, (HEADER + 56) as u16);
    put16(out, name.len() as u16);
    put32(out, 0);
    put32(out, 0);
    out.extend_from_slice(name);
    if name.is_empty() {
        out.push(0); // the buffer is at least one byte
    }
}

/// What a CREATE reply says of the file.
#[derive(Clone, Copy, Debug, Default)]
pub struct Created {
    pub file_id: FileId,
    pub end_of_file: u64,
    pub attributes: u32,
}

impl Created {
    pub fn is_dir(&self) -> bool {
        self.attributes & ATTR_DIRECTORY != 0
    }
}

pub fn parse_create(m: &[u8]) -> Option<Created> {
    let b = HEADER;
    Some(Created {
        end_of_file: u64_at(m, b + 48)?,
        attributes: u32_at(m, b + 56)?,
        file_id: slice_at(m, b + 64, 16)?.try_into().ok()?,
    })
}

/// CLOSE.
pub fn close(out: &mut Vec<u8>, file: &FileId) {
    put16(out, 24);
    put16(out, 0);
    put32(out, 0);
    out.extend_from_slice(file);
}

/// FLUSH.
pub fn flush(out: &mut Vec<u8>, file: &FileId) {
    put16(out, 24);
    put16(out, 0);
    put32(out, 0);
    out.extend_from_slice(file);
}

/// Where a READ reply's data starts (the client asks for it there: Padding = 80).
pub const READ_DATA_OFFSET: usize = HEADER + 16;

/// READ of `len` bytes at `offset`.
pub fn read(out: &mut Vec<u8>, file: &FileId, offset: u64, len: u32, flags: u8) {
    put16(out, 49);
    out.push(READ_DATA_OFFSET as u8);
    out.push(flags);
    put32(out, len);
    put64(out, offset);
    out.extend_from_slice(file);
    put32(out, 0); // minimum count
    put32(out, 0); // channel
    put32(out, 0); // remaining
    put16(out, 0);
    put16(out, 0);
    out.push(0);
}

/// A READ reply's data: (offset in the message, length), checked against `frame_len`.
pub fn read_data(m: &[u8], frame_len: usize) -> Option<(usize, usize)> {
    let off = *m.get(HEADER + 2)? as usize;
    let len = u32_at(m, HEADER + 4)? as usize;
    (off >= READ_DATA_OFFSET && off.checked_add(len)? <= frame_len).then_some((off, len))
}

/// The WRITE request's fixed part for `len` bytes at `offset`; the data follows it.
pub fn write(out: &mut Vec<u8>, file: &FileId, offset: u64, len: u32, flags: u32) {
    put16(out, 49);
    put16(out, (HEADER + 48) as u16);
    put32(out, len);
    put64(out, offset);
    out.extend_from_slice(file);
    put32(out, 0); // channel
    put32(out, 0); // remaining
    put16(out, 0);
    put16(out, 0);
    put32(out, flags);
}

/// A WRITE reply's count of bytes written.
pub fn parse_write(m: &[u8]) -> Option<u32> {
    u32_at(m, HEADER + 4)
}

/// QUERY_DIRECTORY of every entry ("*"), `restart` from the first.
pub fn query_directory(out: &mut Vec<u8>, file: &FileId, restart: bool, max_out: u32) {
    let pattern = utf16("*");
    put16(out, 33);
    out.push(FILE_DIRECTORY_INFORMATION);
    out.push(u8::from(restart));
    put32(out, 0);
    out.extend_from_slice(file);
    put16(out, (HEADER + 32) as u16);
    put16(out, pattern.len() as u16);
    put32(out, max_out);
    out.extend_from_slice(&pattern);
}

/// The output buffer of a QUERY_DIRECTORY or QUERY_INFO reply.
pub fn output_buffer(m: &[u8]) -> Option<&[u8]> {
    let (off, len) = (u16_at(m, HEADER + 2)? as usize, u32_at(m, HEADER + 4)? as usize);
    if len == 0 {
        return Some(&[]);
    }
    slice_at(m, off, len)
}

/// FileDirectoryInformation entries: (name, is a directory, end of file).
pub fn parse_directory(buf: &[u8]) -> Option<Vec<(String, bool, u64)>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    loop {
        let next = u32_at(buf, at)? as usize;
        let eof = u64_at(buf, at + 40)?;
        let attrs = u32_at(buf, at + 56)?;
        let name_len = u32_at(buf, at + 60)? as usize;
        let name = from_utf16(slice_at(buf, at + 64, name_len)?);
        out.push((name, attrs & ATTR_DIRECTORY != 0, eof));
        if next == 0 {
            return Some(out);
        }
        at = at.checked_add(next)?;
    }
}

/// QUERY_INFO of a class.
pub fn query_info(out: &mut Vec<u8>, file: &FileId, info_type: u8, class: u8, max_out: u32) {
    put16(out, 41);
    out.push(info_type);
    out.push(class);
    put32(out, max_out);
    put16(out, 0);
    put16(out, 0);
    put32(out, 0);
    put32(out, 0);
    put32(out, 0);
    out.extend_from_slice(file);
    out.push(0);
}

/// SET_INFO of a class with its buffer.
pub fn set_info(out: &mut Vec<u8>, file: &FileId, class: u8, info: &[u8]) {
    put16(out, 33);
    out.push(INFO_FILE);
    out.push(class);
    put32(out, info.len() as u32);
    put16(out, (HEADER + 32) as u16);
    put16(out, 0);
    put32(out, 0);
    out.extend_from_slice(file);
    out.extend_from_slice(info);
}

/// FileBasicInformation setting only the last-write time (`ticks`: 100 ns since 1601).
pub fn basic_info_last_write(ticks: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(40);
    put64(&mut b, 0);
    put64(&mut b, 0);
    put64(&mut b, ticks);
    put64(&mut b, 0);
    put32(&mut b, 0);
    put32(&mut b, 0);
    b
}

/// FileRenameInformation (the SMB2 form) to `name` (UTF-16LE, from the share's root).
pub fn rename_info(name: &[u8], replace: bool) -> Vec<u8> {
    let mut b = Vec::with_capacity(20 + name.len());
    b.push(u8::from(replace));
    b.extend_from_slice(&[0u8; 7]);
    put64(&mut b, 0);
    put32(&mut b, name.len() as u32);
    b.extend_from_slice(name);
    b
}

/// IOCTL of a file-system control code.
pub fn ioctl(out: &mut Vec<u8>, file: &FileId, code: u32, input: &[u8], max_out: u32) {
    put16(out, 57);
    put16(out, 0);
    put32(out, code);
    out.extend_from_slice(file);
    put32(out, if input.is_empty() { 0 } else { (HEADER + 56) as u32 });
    put32(out, input.len() as u32);
    put32(out, 0); // max input response
    put32(out, 0);
    put32(out, 0);
    put32(out, max_out);
    put32(out, 1); // SMB2_0_IOCTL_IS_FSCTL
    put32(out, 0);
    out.extend_from_slice(input);
    if input.is_empty() {
        out.push(0);
    }
}

/// An IOCTL reply's output.
pub fn ioctl_output(m: &[u8]) -> Option<&[u8]> {
    let (off, len) = (u32_at(m, HEADER + 32)? as usize, u32_at(m, HEADER + 36)? as usize);
    if len == 0 {
        return Some(&[]);
    }
    slice_at(m, off, len)
}

/// The input of FSCTL_SRV_COPYCHUNK_WRITE: `chunks` of (source offset, target offset,
/// length).
pub fn copychunk(key: &[u8; 24], chunks: &[(u64, u64, u32)]) -> Vec<u8> {
    let mut b = Vec::with_capacity(32 + 24 * chunks.len());
    b.extend_from_slice(key);
    put32(&mut b, chunks.len() as u32);
    put32(&mut b, 0);
    for &(src, dst, len) in chunks {
        put64(&mut b, src);
        put64(&mut b, dst);
        put32(&mut b, len);
        put32(&mut b, 0);
    }
    b
}

/// The credits a request costs: one per 64 KiB moved (at least one), with large MTU.
pub fn credit_charge(bytes: usize) -> u16 {
    u16::try_from(bytes.saturating_sub(1) / 65536 + 1).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_header_has_its_fields_where_the_server_reads_them() {
        let mut m = Vec::new();
        put_header(&mut m, READ, 16, 32, 0x0102_0304_0506_0708, 7, 0xAABB);
        assert_eq!(m.len(), HEADER);
        let h = Header::parse(&m).unwrap();
        assert_eq!(
            (h.command, h.credit_charge, h.credits, h.message_id, h.session_id),
            (READ, 16, 32, 0x0102_0304_0506_0708, 0xAABB)
        );
        assert_eq!(u32_at(&m, 36), Some(7));
        assert!(Header::parse(&m[..63]).is_none());
        m[0] = 0xFD;
        assert!(Header::parse(&m).is_none());
    }

    #[test]
    fn request_bodies_have_the_sizes_ms_smb2_gives() {
        let id = [1u8; 16];
        let body = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut m = vec![0u8; HEADER];
            f(&mut m);
            m.len() - HEADER
        };
        assert_eq!(body(&|m| read(m, &id, 0, 4096, 0)), 49);
        assert_eq!(body(&|m| write(m, &id, 0, 4096, 0)), 48);
        assert_eq!(body(&|m| close(m, &id)), 24);
        assert_eq!(body(&|m| flush(m, &id)), 24);
        assert_eq!(body(&|m| create(m, &[], 0, 0, OPEN, 0)), 57);
        assert_eq!(body(&|m| query_info(m, &id, 2, 7, 64)), 41);
        assert_eq!(body(&|m| ioctl(m, &id, FSCTL_SRV_REQUEST_RESUME_KEY, &[], 32)), 57);
        // The negotiate contexts start 8-aligned, at the offset written in the request.
        let mut m = vec![0u8; HEADER];
        negotiate(&mut m, SIGNING_ENABLED, &[0; 16], &[0; 32]);
        let off = u32_at(&m, HEADER + 28).unwrap() as usize;
        assert_eq!(off % 8, 0);
        assert_eq!(u16_at(&m, off), Some(1));
    }

    #[test]
    fn replies_that_are_short_or_point_outside_are_refused() {
        let mut m = vec![0u8; HEADER + 16];
        m[HEADER + 2] = 80;
        m[HEADER + 4..HEADER + 8].copy_from_slice(&100u32.to_le_bytes());
        assert_eq!(read_data(&m, 180), Some((80, 100)));
        assert_eq!(read_data(&m, 179), None);
        m[HEADER + 2] = 10;
        assert_eq!(read_data(&m, 1000), None);
        assert!(parse_create(&m).is_none());
        assert!(parse_negotiate(&m[..70]).is_none());
        // A directory listing whose entry runs past the buffer.
        let mut e = vec![0u8; 64];
        e[60..64].copy_from_slice(&10u32.to_le_bytes());
        assert!(parse_directory(&e).is_none());
        e.extend_from_slice(&utf16("abcde"));
        assert_eq!(parse_directory(&e).unwrap()[0].0, "abcde");
        // An entry pointing back at itself would loop: a zero next ends the listing,
        // and a next past the end fails.
        e[0..4].copy_from_slice(&1000u32.to_le_bytes());
        assert!(parse_directory(&e).is_none());
    }

    #[test]
    fn credits_are_one_per_64_kib() {
        assert_eq!(credit_charge(0), 1);
        assert_eq!(credit_charge(4096), 1);
        assert_eq!(credit_charge(65536), 1);
        assert_eq!(credit_charge(65537), 2);
        assert_eq!(credit_charge(1 << 20), 16);
        assert_eq!(credit_charge(8 << 20), 128);
    }
}
