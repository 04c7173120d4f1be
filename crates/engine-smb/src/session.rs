//! One logged-in session on one SMB connection ([`Conn`]), and the path operations the
//! engine and the file system both use: each is a CREATE, the call, and a CLOSE, waited
//! for (at most the target's timeout each).

use crate::conn::{Conn, Done, Sink};
use crate::errors;
use crate::wire::{self, Created, FileId};
use ioscope_engine_table::smb::{Target, GUEST};

/// A failed result: a negative errno or an NTSTATUS as [`errors`] encodes it.
pub type Failed = i64;

/// Bytes one COPYCHUNK request asks for at most: 16 chunks of 1 MiB (Samba's limit is 16
/// MiB per request, 256 chunks, 1 MiB a chunk: MS-SMB2 3.3.3 defaults).
const COPY_CHUNK: u64 = 1 << 20;
const COPY_CHUNKS_PER_REQUEST: u64 = 16;

/// The password for `user`: IOSCOPE_SMB_PASSWORD, else the contents of the file named by
/// IOSCOPE_SMB_PASSWORD_FILE (one trailing newline dropped); empty for [`GUEST`]. Never
/// printed: errors name the variables, not values.
pub fn password(user: &str) -> Result<String, String> {
    if let Ok(p) = std::env::var("IOSCOPE_SMB_PASSWORD") {
        return Ok(p);
    }
    if let Some(path) = std::env::var_os("IOSCOPE_SMB_PASSWORD_FILE") {
        // A regular file of at most 4 KiB (never a FIFO, never read whole if huge).
        let shown = std::path::Path::new(&path).display();
        let text = ioscope_readfile::read(std::path::Path::new(&path), 4 << 10)
            .map_err(|e| format!("IOSCOPE_SMB_PASSWORD_FILE {shown}: {e}"))
            .and_then(|b| {
                String::from_utf8(b).map_err(|_| format!("IOSCOPE_SMB_PASSWORD_FILE {shown}: not text (UTF-8)"))
            })?;
        let text = text.strip_suffix('\n').unwrap_or(&text);
        return Ok(text.strip_suffix('\r').unwrap_or(text).to_string());
    }
    if user == GUEST {
        return Ok(String::new());
    }
    Err(format!("no SMB password for user {user}: set IOSCOPE_SMB_PASSWORD or IOSCOPE_SMB_PASSWORD_FILE"))
}

/// A path in the share (`a/b/c`) as SMB spells it (`a\b\c`).
pub fn smb_name(path: &str) -> String {
    path.trim_matches('/').replace('/', "\\")
}

/// What the server agreed to when the connection was made.
#[derive(Clone, Debug, Default)]
pub struct Negotiated {
    pub dialect: String,
    /// "signed (AES-128-GMAC)", "encrypted (AES-128-GCM)" or "unsigned".
    pub protection: String,
    pub max_read_bytes: u32,
    pub max_write_bytes: u32,
}

/// Tags of the fill's WRITEs (apart from the engine's slots and the connection's calls).
const FILL_TAG: u64 = 3 << 62;

pub struct Session {
    pub target: Target,
    pub conn: Conn,
    pub negotiated: Negotiated,
}

impl Session {
    /// Connects, logs in and connects to the share; `credits`: how many credits to keep
    /// asking the server for (requests in flight times their cost).
    pub fn connect(target: &Target, credits: u16) -> Result<Session, String> {
        let password = password(&target.user)?;
        let conn = Conn::connect(target, &password, credits)?;
        let a = &conn.agreed;
        let negotiated = Negotiated {
            dialect: a.dialect_name(),
            protection: a.protection(),
            max_read_bytes: a.max_read,
            max_write_bytes: a.max_write,
        };
        Ok(Session { target: target.clone(), conn, negotiated })
    }

    /// Whether the connection is gone.
    pub fn gone(&self) -> bool {
        self.conn.gone().is_some()
    }

    /// A request waited for: its reply, or its failure (a status other than success).
    fn call(&mut self, command: u16, body: impl FnOnce(&mut Vec<u8>)) -> Result<Vec<u8>, Failed> {
        let (status, msg) = self.conn.call(command, 0, body)?;
        match status {
            0 => Ok(msg),
            s => Err(errors::status_result(s)),
        }
    }

    /// CREATE: what the reply says of the file.
    pub fn create(
        &mut self,
        path: &str,
        access: u32,
        attrs: u32,
        disposition: u32,
        options: u32,
    ) -> Result<Created, Failed> {
        let name = wire::utf16(&smb_name(path));
        let m = self.call(wire::CREATE, |o| wire::create(o, &name, access, attrs, disposition, options))?;
        wire::parse_create(&m).ok_or(-(libc::EPROTO as i64))
    }

    /// CLOSE.
    pub fn close(&mut self, file: &FileId) -> Result<(), Failed> {
        self.call(wire::CLOSE, |o| wire::close(o, file)).map(drop)
    }

    /// FLUSH.
    pub fn flush(&mut self, file: &FileId) -> Result<(), Failed> {
        self.call(wire::FLUSH, |o| wire::flush(o, file)).map(drop)
    }

    /// Closes `file` after `r`; the close's failure is the result's only if `r` succeeded.
    fn closing<T>(&mut self, file: &FileId, r: Result<T, Failed>) -> Result<T, Failed> {
        let closed = if self.gone() { Ok(()) } else { self.close(file) };
        match (r, closed) {
            (Ok(v), Ok(())) => Ok(v),
            (Ok(_), Err(e)) => Err(e),
            (Err(e), _) => Err(e),
        }
    }

    /// Opens an existing file for reading (and writing); `write_through`: each write is on
    /// stable storage when it completes.
    pub fn open_file(&mut self, path: &str, write: bool, write_through: bool) -> Result<Created, Failed> {
        let access = file_access(write);
        let options = wire::NON_DIRECTORY_FILE | if write_through { wire::WRITE_THROUGH } else { 0 };
        self.create(path, access, 0, wire::OPEN, options)
    }

    /// Creates a file that must not exist yet (`new`) or creates or empties it.
    pub fn create_file(&mut self, path: &str, new: bool) -> Result<Created, Failed> {
        let d = if new { wire::CREATE_NEW } else { wire::OVERWRITE_IF };
        self.create(path, file_access(true), wire::ATTR_NORMAL, d, wire::NON_DIRECTORY_FILE)
    }

    /// Writes `len` bytes from `fill(offset, chunk)` (offsets from 0) at `offset` of `file`,
    /// up to `depth` WRITEs in flight, each of at most [`FILL_WRITE_BYTES`] and the server's
    /// largest WRITE: the bytes written.
    pub fn write_generated(
        &mut self,
        file: &FileId,
        offset: u64,
        len: u64,
        depth: usize,
        fill: &mut dyn FnMut(u64, &mut [u8]),
    ) -> Result<u64, Failed> {
        let chunk = u64::from(self.negotiated.max_write_bytes.clamp(4096, FILL_WRITE_BYTES));
        let mut buf = vec![0u8; chunk as usize];
        let (mut off, mut written, mut in_flight) = (0u64, 0u64, 0usize);
        let mut sizes = std::collections::HashMap::new();
        let mut failed = None;
        loop {
            while failed.is_none() && off < len && in_flight < depth.max(1) {
                let n = chunk.min(len - off);
                let data = &mut buf[..n as usize];
                fill(off, data);
                let at = offset.saturating_add(off);
                let tag = FILL_TAG | off;
                match self.conn.send(
                    wire::WRITE,
                    n as usize,
                    tag,
                    Sink::Count,
                    |o| wire::write(o, file, at, n as u32, 0),
                    data,
                    false,
                ) {
                    Ok(_) => {
                        sizes.insert(tag, n);
                        in_flight += 1;
                        off += n;
                    }
                    Err(e) => failed = Some(e),
                }
            }
            if in_flight == 0 {
                return failed.map_or(Ok(written), Err);
            }
            let deadline = std::time::Instant::now() + self.target.timeout + std::time::Duration::from_secs(1);
            self.conn.pump(deadline, |c| c.has_done(|t| t & FILL_TAG == FILL_TAG))?;
            while let Some(Done { tag, result, .. }) = self.conn.take_where(|t| t & FILL_TAG == FILL_TAG) {
                in_flight -= 1;
                match (sizes.remove(&tag), result) {
                    (Some(n), r) if r == n as i64 => written += n,
                    (_, r) if r < 0 => failed = failed.or(Some(r)),
                    _ => failed = failed.or(Some(-(libc::EIO as i64))),
                }
            }
        }
    }

    /// A new file of `len` bytes made of `src` repeated (the engine's create): its bytes.
    pub fn create_with(&mut self, path: &str, len: u64, src: &[u8]) -> Result<u64, Failed> {
        let f = self.create_file(path, true)?;
        let mut fill = |off: u64, chunk: &mut [u8]| repeat_into(src, off, chunk);
        let r = self.write_generated(&f.file_id, 0, len, FILL_DEPTH, &mut fill);
        self.closing(&f.file_id, r)
    }

    /// Up to `len` bytes of `file` from its start (READs of at most 1 MiB, one at a time).
    pub fn read_all(&mut self, file: &FileId, len: u64) -> Result<Vec<u8>, Failed> {
        let max = u64::from(self.negotiated.max_read_bytes.clamp(4096, 1 << 20));
        let mut out = vec![0u8; len as usize];
        let mut at = 0u64;
        while at < len {
            let n = max.min(len - at);
            let tag = FILL_TAG | at;
            let buf = &mut out[at as usize..(at + n) as usize];
            let sink = Sink::Into { at: buf.as_mut_ptr() as usize, cap: buf.len() };
            self.conn.send(wire::READ, n as usize, tag, sink, |o| wire::read(o, file, at, n as u32, 0), &[], false)?;
            let deadline = std::time::Instant::now() + self.target.timeout + std::time::Duration::from_secs(1);
            self.conn.pump(deadline, |c| c.has_done(|t| t == tag))?;
            match self.conn.take_where(|t| t == tag).map(|d| d.result) {
                Some(0) => break,
                Some(r) if r > 0 => at += r as u64,
                Some(r) => return Err(r),
                None => return Err(-(libc::ETIMEDOUT as i64)),
            }
        }
        out.truncate(at as usize);
        Ok(out)
    }

    /// Deletes a file: CREATE with DELETE access and delete-on-close, then CLOSE. Removes an
    /// empty directory: CREATE, SET_INFO FileDispositionInformation, CLOSE (a directory marked
    /// delete-on-close at CREATE that is not empty stays, and its CLOSE still succeeds; the
    /// SET_INFO fails with STATUS_DIRECTORY_NOT_EMPTY).
    pub fn remove(&mut self, path: &str, dir: bool) -> Result<(), Failed> {
        let access = wire::DELETE | wire::FILE_READ_ATTRIBUTES;
        let options = if dir { wire::DIRECTORY_FILE } else { wire::NON_DIRECTORY_FILE | wire::DELETE_ON_CLOSE };
        let f = self.create(path, access, 0, wire::OPEN, options)?;
        let r = if dir {
            self.call(wire::SET_INFO, |o| wire::set_info(o, &f.file_id, wire::FILE_DISPOSITION_INFORMATION, &[1]))
                .map(drop)
        } else {
            Ok(())
        };
        self.closing(&f.file_id, r)
    }

    /// Makes a directory that must not exist yet.
    pub fn mkdir(&mut self, path: &str) -> Result<(), Failed> {
        let access = wire::GENERIC_READ | wire::FILE_READ_ATTRIBUTES;
        let f = self.create(path, access, wire::ATTR_DIRECTORY, wire::CREATE_NEW, wire::DIRECTORY_FILE)?;
        self.closing(&f.file_id, Ok(()))
    }

    /// What is at a path: (is a directory, bytes). The attributes come in CREATE's reply.
    pub fn stat(&mut self, path: &str) -> Result<Option<(bool, u64)>, Failed> {
        let f = match self.create(path, wire::FILE_READ_ATTRIBUTES, 0, wire::OPEN, 0) {
            Ok(f) => f,
            Err(e) if is_missing(e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let what = if f.is_dir() { (true, 0) } else { (false, f.end_of_file) };
        self.closing(&f.file_id, Ok(Some(what)))
    }

    /// Sets the file's last-write time to now (SET_INFO FileBasicInformation).
    pub fn touch(&mut self, path: &str) -> Result<(), Failed> {
        let access = wire::FILE_WRITE_ATTRIBUTES | wire::FILE_READ_ATTRIBUTES;
        let f = self.create(path, access, 0, wire::OPEN, 0)?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        // 100 ns units since 1601-01-01: 11644473600 s before the Unix epoch.
        let ticks = (now.as_secs() + 11_644_473_600).saturating_mul(10_000_000) + u64::from(now.subsec_nanos() / 100);
        let info = wire::basic_info_last_write(ticks);
        let r =
            self.call(wire::SET_INFO, |o| wire::set_info(o, &f.file_id, wire::FILE_BASIC_INFORMATION, &info)).map(drop);
        self.closing(&f.file_id, r)
    }

    /// The entries of a directory ("." and ".." left out): (name, is a directory, bytes),
    /// every page of QUERY_DIRECTORY.
    pub fn list(&mut self, path: &str) -> Result<Vec<(String, bool, u64)>, Failed> {
        let access = wire::GENERIC_READ | wire::FILE_READ_ATTRIBUTES;
        let f = self.create(path, access, 0, wire::OPEN, wire::DIRECTORY_FILE)?;
        let max_out = self.conn.agreed.max_transact.clamp(4096, 1 << 20);
        let mut out = Vec::new();
        let mut first = true;
        let r = loop {
            let id = f.file_id;
            let page = self
                .conn
                .call(wire::QUERY_DIRECTORY, max_out as usize, |o| wire::query_directory(o, &id, first, max_out));
            first = false;
            match page {
                Ok((wire::STATUS_NO_MORE_FILES, _)) => break Ok(()),
                Ok((0, m)) => {
                    let Some(entries) = wire::output_buffer(&m).and_then(wire::parse_directory) else {
                        break Err(-(libc::EPROTO as i64));
                    };
                    out.extend(entries.into_iter().filter(|(n, _, _)| n != "." && n != ".."));
                }
                Ok((s, _)) => break Err(errors::status_result(s)),
                Err(e) => break Err(e),
            }
        };
        self.closing(&f.file_id, r.map(|()| out))
    }

    /// A server-side copy of `from` into a new file `to` (FSCTL_SRV_REQUEST_RESUME_KEY, then
    /// FSCTL_SRV_COPYCHUNK_WRITE in requests of at most 16 MiB): the bytes copied. No data
    /// passes through this client.
    pub fn copy(&mut self, from: &str, to: &str) -> Result<u64, Failed> {
        let src = self.open_file(from, false, false)?;
        let dst = match self.create_file(to, true) {
            Ok(d) => d,
            Err(e) => return self.closing(&src.file_id, Err(e)),
        };
        let r = self.copy_chunks(&src, &dst);
        let r = self.closing(&dst.file_id, r);
        self.closing(&src.file_id, r)
    }

    fn copy_chunks(&mut self, src: &Created, dst: &Created) -> Result<u64, Failed> {
        let len = src.end_of_file;
        let m =
            self.call(wire::IOCTL, |o| wire::ioctl(o, &src.file_id, wire::FSCTL_SRV_REQUEST_RESUME_KEY, &[], 32))?;
        let key: [u8; 24] = wire::ioctl_output(&m)
            .and_then(|b| b.get(..24))
            .and_then(|k| k.try_into().ok())
            .ok_or(-(libc::EPROTO as i64))?;
        let mut off = 0u64;
        while off < len {
            let end = len.min(off.saturating_add(COPY_CHUNK * COPY_CHUNKS_PER_REQUEST));
            let chunks: Vec<(u64, u64, u32)> =
                (off..end).step_by(COPY_CHUNK as usize).map(|at| (at, at, COPY_CHUNK.min(end - at) as u32)).collect();
            let input = wire::copychunk(&key, &chunks);
            let m =
                self.call(wire::IOCTL, |o| wire::ioctl(o, &dst.file_id, wire::FSCTL_SRV_COPYCHUNK_WRITE, &input, 12))?;
            let total = wire::ioctl_output(&m).and_then(|b| wire::u32_at(b, 8)).ok_or(-(libc::EPROTO as i64))?;
            if u64::from(total) != end - off {
                return Err(-(libc::EIO as i64));
            }
            off = end;
        }
        Ok(len)
    }

    /// Renames `from` to `to` (SET_INFO FileRenameInformation); `replace`: an existing `to`
    /// is replaced, else the rename fails with STATUS_OBJECT_NAME_COLLISION.
    pub fn rename(&mut self, from: &str, to: &str, replace: bool) -> Result<(), Failed> {
        let f = self.create(from, wire::DELETE | wire::FILE_READ_ATTRIBUTES, 0, wire::OPEN, 0)?;
        let info = wire::rename_info(&wire::utf16(&smb_name(to)), replace);
        let r = self
            .call(wire::SET_INFO, |o| wire::set_info(o, &f.file_id, wire::FILE_RENAME_INFORMATION, &info))
            .map(drop);
        self.closing(&f.file_id, r)
    }

    /// Bytes the logged-in user can still write on the share's file system.
    pub fn free_bytes(&mut self) -> Result<u64, Failed> {
        let f =
            self.create("", wire::GENERIC_READ | wire::FILE_READ_ATTRIBUTES, 0, wire::OPEN, wire::DIRECTORY_FILE)?;
        let id = f.file_id;
        let r = self
            .call(wire::QUERY_INFO, |o| {
                wire::query_info(o, &id, wire::INFO_FILESYSTEM, wire::FILE_FS_FULL_SIZE_INFORMATION, 32)
            })
            .and_then(|m| {
                let b = wire::output_buffer(&m).ok_or(-(libc::EPROTO as i64))?;
                let units = wire::u64_at(b, 8).ok_or(-(libc::EPROTO as i64))?;
                let sectors = wire::u32_at(b, 24).ok_or(-(libc::EPROTO as i64))?;
                let bytes = wire::u32_at(b, 28).ok_or(-(libc::EPROTO as i64))?;
                Ok(units.saturating_mul(u64::from(sectors)).saturating_mul(u64::from(bytes)))
            });
        self.closing(&id, r)
    }
}

impl Drop for Session {
    /// Logs off (a short wait at most, none when the connection is gone).
    fn drop(&mut self) {
        if !self.gone() {
            let _ = self.conn.logoff();
        }
    }
}

fn file_access(write: bool) -> u32 {
    let rw =
        if write { wire::FILE_READ_DATA | wire::FILE_WRITE_DATA | wire::GENERIC_WRITE } else { wire::FILE_READ_DATA };
    wire::GENERIC_READ | rw | wire::FILE_READ_ATTRIBUTES | wire::SYNCHRONIZE
}

/// The largest WRITE that fills a file (working sets, dataset creates), and how many are
/// in flight.
pub const FILL_WRITE_BYTES: u32 = 1 << 20;
pub const FILL_DEPTH: usize = 4;

/// Fills `chunk` (at `off` of the file) with `src` repeated.
pub fn repeat_into(src: &[u8], off: u64, chunk: &mut [u8]) {
    if src.is_empty() {
        return;
    }
    let mut at = (off % src.len() as u64) as usize;
    let mut i = 0;
    while i < chunk.len() {
        let n = (src.len() - at).min(chunk.len() - i);
        chunk[i..i + n].copy_from_slice(&src[at..at + n]);
        i += n;
        at = 0;
    }
}

/// Whether a failure says nothing is at the path.
pub fn is_missing(result: Failed) -> bool {
    matches!(errors::status_of(result), Some(0xC000_0034 | 0xC000_003A | 0xC000_000F))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_spelt_with_backslashes_and_buffers_repeat_from_any_offset() {
        assert_eq!(smb_name("a/b/c"), r"a\b\c");
        assert_eq!(smb_name("/a/"), "a");
        assert_eq!(smb_name(""), "");
        let mut chunk = [0u8; 7];
        repeat_into(&[1, 2, 3], 4, &mut chunk);
        assert_eq!(chunk, [2, 3, 1, 2, 3, 1, 2]);
        repeat_into(&[], 0, &mut chunk);
    }

    #[test]
    fn the_password_comes_from_the_environment_or_its_file_and_is_not_in_errors() {
        // (One test: the environment is the process's.)
        std::env::remove_var("IOSCOPE_SMB_PASSWORD");
        std::env::remove_var("IOSCOPE_SMB_PASSWORD_FILE");
        assert_eq!(password(GUEST).unwrap(), "");
        assert!(password("alice").unwrap_err().contains("IOSCOPE_SMB_PASSWORD"));
        let dir = std::env::temp_dir().join(format!("ioscope-smb-pw-{}", std::process::id()));
        std::fs::write(&dir, "s3cret\n").unwrap();
        std::env::set_var("IOSCOPE_SMB_PASSWORD_FILE", &dir);
        assert_eq!(password("alice").unwrap(), "s3cret");
        std::env::set_var("IOSCOPE_SMB_PASSWORD", "other");
        assert_eq!(password("alice").unwrap(), "other");
        std::env::remove_var("IOSCOPE_SMB_PASSWORD");
        std::fs::remove_file(&dir).unwrap();
        let e = password("alice").unwrap_err();
        assert!(e.contains("IOSCOPE_SMB_PASSWORD_FILE") && !e.contains("s3cret"), "{e}");
        std::env::remove_var("IOSCOPE_SMB_PASSWORD_FILE");
    }
}
