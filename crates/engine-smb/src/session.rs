//! One logged-in session on one SMB connection, with the thread's own current-thread
//! tokio runtime that drives it, and the path operations the engine and the file system
//! both use (each one CREATE, the call, CLOSE). Every wait is bounded by the target's
//! timeout: the `smb` crate has no timeout of its own on a request in flight, and once
//! waited forever (bench/results/2026-11-25-vm-smbclient.md, finding 2).
//!
//! The crate's objects spawn tokio tasks when dropped (a file's handle closes itself):
//! they are dropped only inside the runtime's context ([`Session::drop`]), and the runtime
//! outlives them.

use crate::errors::{self, result_of, result_of_io};
use ioscope_engine_table::smb::{Encrypt, Target, GUEST};
use smb::{
    Client, ClientConfig, ConnectionConfig, CreateDisposition, CreateOptions, Directory, File, FileAccessMask,
    FileAttributes, FileCreateArgs, Resource, Tree, UncPath,
};
use std::future::Future;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

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
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("IOSCOPE_SMB_PASSWORD_FILE {}: {e}", std::path::Path::new(&path).display()))?;
        let text = text.strip_suffix('\n').unwrap_or(&text);
        return Ok(text.strip_suffix('\r').unwrap_or(text).to_string());
    }
    if user == GUEST {
        return Ok(String::new());
    }
    Err(format!("no SMB password for user {user}: set IOSCOPE_SMB_PASSWORD or IOSCOPE_SMB_PASSWORD_FILE"))
}

/// A current-thread runtime for one worker or one file-system connection.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()
}

/// A path in the share (`a/b/c`) as SMB spells it (`a\b\c`).
pub fn smb_name(path: &str) -> String {
    path.trim_matches('/').replace('/', "\\")
}

/// What the server agreed to when the connection was made.
#[derive(Clone, Debug, Default)]
pub struct Negotiated {
    pub dialect: String,
    pub max_read_bytes: u32,
    pub max_write_bytes: u32,
}

pub struct Session {
    pub target: Target,
    rt: tokio::runtime::Runtime,
    client: Option<Client>,
    tree: Option<Arc<Tree>>,
    pub negotiated: Negotiated,
    /// The connection is known to be gone: closing would only wait.
    pub gone: bool,
}

impl Session {
    /// Connects, sets TCP_NODELAY on the connection's socket, logs in and connects to the
    /// share; `credits`: how many credits to keep asking the server for (requests in flight).
    pub fn connect(target: &Target, credits: u16) -> Result<Session, String> {
        let rt = runtime().map_err(|e| format!("tokio runtime: {e}"))?;
        let password = password(&target.user)?;
        let config = ClientConfig {
            connection: ConnectionConfig {
                port: Some(target.port),
                timeout: Some(target.timeout),
                encryption_mode: match target.encrypt {
                    Encrypt::Allowed => smb::connection::EncryptionMode::Allowed,
                    Encrypt::Required => smb::connection::EncryptionMode::Required,
                    Encrypt::Disabled => smb::connection::EncryptionMode::Disabled,
                },
                credits_backlog: Some(credits.max(16)),
                ..Default::default()
            },
            dfs: false,
            ..Default::default()
        };
        let server = if target.host.contains(':') { format!("[{}]", target.host) } else { target.host.clone() };
        let unc = UncPath::from_str(&format!(r"\\{server}\{}", target.share)).map_err(|e| e.to_string())?;
        // sspi spells a domain account DOMAIN\USER.
        let user = target.user.replace(';', "\\");
        let mut s = Session {
            target: target.clone(),
            rt,
            client: None,
            tree: None,
            negotiated: Negotiated::default(),
            gone: false,
        };
        let _ctx = s.rt.enter();
        let client = Client::new(config);
        let place = format!("{}:{}", target.host, target.port);
        let conn =
            s.rt.block_on(tokio::time::timeout(target.timeout, client.connect(&server)))
                .map_err(|_| format!("{place}: no answer within {} s", target.timeout.as_secs()))?
                .map_err(|e| format!("{place}: {}", describe(&e)))?;
        let info = conn.conn_info().cloned();
        s.client = Some(client);
        // Before the login: its exchanges are the first to wait on Nagle's algorithm.
        let peer = info.as_ref().map(|i| i.server_address.ip());
        set_nodelay(peer, target.port)?;
        if let Some(i) = &info {
            s.negotiated = Negotiated {
                dialect: format!("{:?}", i.negotiation.dialect_rev),
                max_read_bytes: i.negotiation.max_read_size,
                max_write_bytes: i.negotiation.max_write_size,
            };
        }
        let client = s.client.as_ref().ok_or("no client")?;
        let tree =
            s.rt.block_on(tokio::time::timeout(target.timeout, async {
                client.share_connect(&unc, &user, password).await?;
                client.get_tree(&unc).await
            }))
            .map_err(|_| format!("{place}: no answer within {} s while logging in", target.timeout.as_secs()))?
            .map_err(|e| format!("{place} share {} as {}: {}", target.share, target.user, describe(&e)))?;
        s.tree = Some(tree);
        drop(_ctx);
        Ok(s)
    }

    pub fn rt(&self) -> &tokio::runtime::Runtime {
        &self.rt
    }

    pub fn tree(&self) -> Result<Arc<Tree>, Failed> {
        self.tree.clone().ok_or(-(libc::EBADF as i64))
    }

    /// Runs `f` to its end on this thread, at most the target's timeout (ETIMEDOUT). A
    /// panic of the crate on a reply fails the call (EPROTO) instead of ending the process.
    pub fn block<T>(&self, f: impl Future<Output = Result<T, Failed>>) -> Result<T, Failed> {
        // (The timer is made inside the runtime: it needs its context.)
        let t = self.target.timeout;
        ioscope_engine::caught::catching(|| self.rt.block_on(async move { tokio::time::timeout(t, f).await }))
            .unwrap_or(Ok(Err(-(libc::EPROTO as i64))))
            .unwrap_or(Err(-(libc::ETIMEDOUT as i64)))
    }

    /// Drops `v` (the crate's objects) inside the runtime's context.
    pub fn drop_here<T>(&self, v: T) {
        let _ctx = self.rt.enter();
        drop(v);
    }
}

impl Drop for Session {
    /// Logs off (a short wait at most, none when the connection is gone); the crate's
    /// objects are dropped inside the runtime's context.
    fn drop(&mut self) {
        let _ctx = self.rt.enter();
        let tree = self.tree.take();
        drop(tree);
        if let Some(client) = self.client.take() {
            if !self.gone {
                let _ = self.rt.block_on(tokio::time::timeout(Duration::from_secs(2), client.close()));
            }
            drop(client);
        }
    }
}

/// An error of the crate as a message: the NTSTATUS name where there is one.
pub fn describe(e: &smb::Error) -> String {
    let r = result_of(e);
    match errors::status_of(r) {
        Some(code) => format!("{} ({code:#010x})", errors::error_text(r)),
        None => e.to_string(),
    }
}

/// The smb-transport crate leaves Nagle's algorithm on and writes each message's 4-byte
/// header apart from its body: one request in flight then waits ~40 ms for the server's
/// delayed ACK (23 requests/s, bench/results/2026-11-25-vm-smbclient.md, finding 1). It has
/// no setting for this, so TCP_NODELAY is set here on this process's sockets connected to
/// the server (its address and port), right after connecting. Setting it on a socket of
/// another worker's session to the same server is harmless (it is set there too).
fn set_nodelay(peer: Option<std::net::IpAddr>, port: u16) -> Result<(), String> {
    let mut found = 0;
    let dir = std::fs::read_dir("/proc/self/fd").map_err(|e| format!("TCP_NODELAY: /proc/self/fd: {e}"))?;
    for entry in dir.flatten() {
        let Some(fd) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Some((ip, p)) = peer_of(fd) else { continue };
        if p != port || peer.is_some_and(|want| want != ip && !(want.is_loopback() && ip.is_loopback())) {
            continue;
        }
        let one: libc::c_int = 1;
        // SAFETY: setsockopt reads one int from a live local; it fails harmlessly on a
        // descriptor that is not a TCP socket.
        let r = unsafe {
            libc::setsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(format!("setsockopt TCP_NODELAY: {}", std::io::Error::last_os_error()));
        }
        found += 1;
    }
    if found == 0 {
        return Err(format!("TCP_NODELAY: no socket of this process is connected to port {port}"));
    }
    Ok(())
}

/// The address a socket is connected to.
fn peer_of(fd: i32) -> Option<(std::net::IpAddr, u16)> {
    // SAFETY: getpeername writes at most `len` bytes into the zeroed storage; the casts
    // read it as the family it says it is.
    unsafe {
        let mut addr: libc::sockaddr_storage = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        if libc::getpeername(fd, (&mut addr as *mut libc::sockaddr_storage).cast(), &mut len) != 0 {
            return None;
        }
        match addr.ss_family as i32 {
            libc::AF_INET => {
                let a = &*(&addr as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                Some((std::net::Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)).into(), u16::from_be(a.sin_port)))
            }
            libc::AF_INET6 => {
                let a = &*(&addr as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                Some((std::net::Ipv6Addr::from(a.sin6_addr.s6_addr).into(), u16::from_be(a.sin6_port)))
            }
            _ => None,
        }
    }
}

fn file_access(write: bool) -> FileAccessMask {
    FileAccessMask::new().with_generic_read(true).with_generic_write(write).with_file_read_attributes(true)
}

fn args(disposition: CreateDisposition, access: FileAccessMask, options: CreateOptions, dir: bool) -> FileCreateArgs {
    FileCreateArgs {
        disposition,
        attributes: FileAttributes::new().with_directory(dir),
        options,
        desired_access: access,
    }
}

/// CREATE: the resource, or the failure.
pub async fn create(tree: &Tree, path: &str, a: &FileCreateArgs) -> Result<Resource, Failed> {
    tree.create(&smb_name(path), a).await.map_err(|e| result_of(&e))
}

/// Closes a resource; its failure is the result's only if `r` succeeded.
async fn closing<T>(res: Resource, r: Result<T, Failed>) -> Result<T, Failed> {
    let closed = match &res {
        Resource::File(f) => f.close().await,
        Resource::Directory(d) => d.close().await,
        Resource::Pipe(p) => p.close().await,
    };
    match (r, closed) {
        (Ok(v), Ok(())) => Ok(v),
        (Ok(_), Err(e)) => Err(result_of(&e)),
        (Err(e), _) => Err(e),
    }
}

fn a_file(res: Resource) -> Result<File, Failed> {
    match res {
        Resource::File(f) => Ok(f),
        Resource::Directory(d) => {
            drop(d);
            Err(errors::status_result(0xC000_00BA)) // STATUS_FILE_IS_A_DIRECTORY
        }
        Resource::Pipe(p) => {
            drop(p);
            Err(-(libc::EINVAL as i64))
        }
    }
}

/// Opens an existing file for reading (and writing); `write_through`: each write is on
/// stable storage when it completes.
pub async fn open_file(tree: &Tree, path: &str, write: bool, write_through: bool) -> Result<File, Failed> {
    let options = CreateOptions::new().with_non_directory_file(true).with_write_through(write_through);
    a_file(create(tree, path, &args(CreateDisposition::Open, file_access(write), options, false)).await?)
}

/// Creates a file that must not exist yet (`new`) or creates or empties it.
pub async fn create_file(tree: &Tree, path: &str, new: bool) -> Result<File, Failed> {
    let d = if new { CreateDisposition::Create } else { CreateDisposition::OverwriteIf };
    let options = CreateOptions::new().with_non_directory_file(true);
    a_file(create(tree, path, &args(d, file_access(true), options, false)).await?)
}

/// The largest WRITE that fills a file (working sets, dataset creates), and how many are
/// in flight. A WRITE of 64 KiB costs one credit and is seldom slow enough for Samba to
/// answer it first with an interim STATUS_PENDING, as it does slower ones (1 MiB, 16
/// credits). The smb crate loses the credits of interim responses until a session has none
/// left and stops (docs/smb.md, "Known fault"): 1 MiB WRITEs, 4 in flight, stalled 4 of 6
/// preparations of 256 MiB; 64 KiB, 16 in flight, none of 10 preparations of 1 GiB.
pub const FILL_WRITE_BYTES: u32 = 64 << 10;
pub const FILL_DEPTH: usize = 16;

/// Writes `len` bytes from `fill(offset, chunk)` (offsets from 0) at `offset` of `file`,
/// up to `depth` writes of at most `max_write` (and [`FILL_WRITE_BYTES`]) bytes in flight:
/// the bytes written.
pub async fn write_generated(
    file: &File,
    offset: u64,
    len: u64,
    max_write: u32,
    depth: usize,
    fill: &mut dyn FnMut(u64, &mut [u8]),
) -> Result<u64, Failed> {
    use futures_util::stream::{FuturesUnordered, StreamExt};
    let chunk = u64::from(max_write.clamp(4096, FILL_WRITE_BYTES));
    let mut off = 0u64;
    let mut in_flight = FuturesUnordered::new();
    let mut written = 0u64;
    loop {
        while off < len && in_flight.len() < depth.max(1) {
            let n = chunk.min(len - off);
            let mut buf = vec![0u8; n as usize];
            fill(off, &mut buf);
            let at = offset.saturating_add(off);
            in_flight.push(async move {
                let r = file.write_block_zc(buf.into(), at, None).await;
                (n, r)
            });
            off += n;
        }
        match in_flight.next().await {
            None => return Ok(written),
            Some((n, Ok(got))) if got as u64 == n => written += n,
            Some((_, Ok(_))) => return Err(-(libc::EIO as i64)),
            Some((_, Err(e))) => return Err(result_of_io(&e)),
        }
    }
}

/// A new file of `len` bytes made of `src` repeated (the engine's create): its bytes.
pub async fn create_with(tree: &Tree, path: &str, len: u64, max_write: u32, src: &[u8]) -> Result<u64, Failed> {
    let file = create_file(tree, path, true).await?;
    let mut fill = |off: u64, chunk: &mut [u8]| repeat_into(src, off, chunk);
    let r = write_generated(&file, 0, len, max_write, FILL_DEPTH, &mut fill).await;
    closing(Resource::File(file), r).await
}

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

/// Deletes a file: CREATE with DELETE access and delete-on-close, then CLOSE. Removes an
/// empty directory: CREATE, SET_INFO FileDispositionInformation, CLOSE (a directory marked
/// delete-on-close at CREATE that is not empty stays, and its CLOSE still succeeds; the
/// SET_INFO fails with STATUS_DIRECTORY_NOT_EMPTY).
pub async fn remove(tree: &Tree, path: &str, dir: bool) -> Result<(), Failed> {
    let access = FileAccessMask::new().with_delete(true).with_file_read_attributes(true);
    let options =
        CreateOptions::new().with_delete_on_close(!dir).with_directory_file(dir).with_non_directory_file(!dir);
    let res = create(tree, path, &args(CreateDisposition::Open, access, options, false)).await?;
    let r = match (&res, dir) {
        (Resource::Directory(d), true) => {
            d.set_info(smb::FileDispositionInformation::default()).await.map_err(|e| result_of(&e))
        }
        _ => Ok(()),
    };
    closing(res, r).await
}

/// Makes a directory that must not exist yet.
pub async fn mkdir(tree: &Tree, path: &str) -> Result<(), Failed> {
    let access = FileAccessMask::new().with_generic_read(true).with_file_read_attributes(true);
    let options = CreateOptions::new().with_directory_file(true);
    let res = create(tree, path, &args(CreateDisposition::Create, access, options, true)).await?;
    closing(res, Ok(())).await
}

/// What is at a path: (is a directory, bytes). The attributes come in CREATE's reply.
pub async fn stat(tree: &Tree, path: &str) -> Result<Option<(bool, u64)>, Failed> {
    let access = FileAccessMask::new().with_file_read_attributes(true);
    let a = args(CreateDisposition::Open, access, CreateOptions::new(), false);
    let res = match create(tree, path, &a).await {
        Ok(r) => r,
        Err(e) if is_missing(e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let what = match &res {
        Resource::File(f) => {
            use smb::resource::GetLen;
            (false, f.get_len().await.unwrap_or(0))
        }
        _ => (true, 0),
    };
    closing(res, Ok(Some(what))).await
}

/// Whether a failure says nothing is at the path.
pub fn is_missing(result: Failed) -> bool {
    matches!(errors::status_of(result), Some(0xC000_0034 | 0xC000_003A | 0xC000_000F))
}

/// Sets the file's last-write time to now (SET_INFO FileBasicInformation).
pub async fn touch(tree: &Tree, path: &str) -> Result<(), Failed> {
    let access = FileAccessMask::new().with_file_write_attributes(true).with_file_read_attributes(true);
    let res = create(tree, path, &args(CreateDisposition::Open, access, CreateOptions::new(), false)).await?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    // 100 ns units since 1601-01-01: 11644473600 s before the Unix epoch.
    let ticks = (now.as_secs() + 11_644_473_600).saturating_mul(10_000_000) + u64::from(now.subsec_nanos() / 100);
    let info = smb::FileBasicInformation {
        creation_time: 0.into(),
        last_access_time: 0.into(),
        last_write_time: ticks.into(),
        change_time: 0.into(),
        file_attributes: FileAttributes::new(),
    };
    let r = match &res {
        Resource::File(f) => f.set_info(info).await.map_err(|e| result_of(&e)),
        Resource::Directory(d) => d.set_info(info).await.map_err(|e| result_of(&e)),
        Resource::Pipe(_) => Err(-(libc::EINVAL as i64)),
    };
    closing(res, r).await
}

/// The entries of a directory ("." and ".." left out): (name, is a directory, bytes),
/// every page of QUERY_DIRECTORY.
pub async fn list(tree: &Tree, path: &str) -> Result<Vec<(String, bool, u64)>, Failed> {
    use futures_util::StreamExt;
    let access = FileAccessMask::new().with_generic_read(true).with_file_read_attributes(true);
    let options = CreateOptions::new().with_directory_file(true);
    let res = create(tree, path, &args(CreateDisposition::Open, access, options, true)).await?;
    let dir = match res {
        Resource::Directory(d) => Arc::new(d),
        other => return closing(other, Err(errors::status_result(0xC000_0103))).await, // STATUS_NOT_A_DIRECTORY
    };
    let r = async {
        let mut out = Vec::new();
        let mut stream =
            Directory::query::<smb::FileDirectoryInformation>(&dir, "*").await.map_err(|e| result_of(&e))?;
        while let Some(item) = stream.next().await {
            let item = item.map_err(|e| result_of(&e))?;
            let name = item.file_name.to_string();
            if name == "." || name == ".." {
                continue;
            }
            out.push((name, item.file_attributes.directory(), item.end_of_file));
        }
        Ok(out)
    }
    .await;
    let closed = dir.close().await;
    match (r, closed) {
        (Ok(v), Ok(())) => Ok(v),
        (Ok(_), Err(e)) => Err(result_of(&e)),
        (Err(e), _) => Err(e),
    }
}

/// A server-side copy of `from` into a new file `to` (FSCTL_SRV_REQUEST_RESUME_KEY, then
/// FSCTL_SRV_COPYCHUNK in requests of at most 16 MiB): the bytes copied. No data passes
/// through this client.
pub async fn copy(tree: &Tree, from: &str, to: &str) -> Result<u64, Failed> {
    use smb::resource::GetLen;
    let src = open_file(tree, from, false, false).await?;
    let dst = match create_file(tree, to, true).await {
        Ok(d) => d,
        Err(e) => return closing(Resource::File(src), Err(e)).await,
    };
    let r = async {
        let len = src.get_len().await.map_err(|e| result_of(&e))?;
        let key = src.fsctl(smb::SrvRequestResumeKeyRequest(())).await.map_err(|e| result_of(&e))?.resume_key;
        let mut off = 0u64;
        while off < len {
            let end = len.min(off.saturating_add(COPY_CHUNK * COPY_CHUNKS_PER_REQUEST));
            let chunks: Vec<smb::SrvCopychunkItem> = (off..end)
                .step_by(COPY_CHUNK as usize)
                .map(|at| smb::SrvCopychunkItem {
                    source_offset: at,
                    target_offset: at,
                    length: COPY_CHUNK.min(end - at) as u32,
                })
                .collect();
            let done = dst.fsctl(smb::SrvCopychunkCopy { source_key: key, chunks }).await.map_err(|e| result_of(&e))?;
            let want = end - off;
            if u64::from(done.total_bytes_written) != want {
                return Err(-(libc::EIO as i64));
            }
            off = end;
        }
        Ok(len)
    }
    .await;
    let r = closing(Resource::File(dst), r).await;
    closing(Resource::File(src), r).await
}

/// Renames `from` to `to` (SET_INFO FileRenameInformation); `replace`: an existing `to`
/// is replaced, else the rename fails with STATUS_OBJECT_NAME_COLLISION.
pub async fn rename(tree: &Tree, from: &str, to: &str, replace: bool) -> Result<(), Failed> {
    let access = FileAccessMask::new().with_delete(true).with_file_read_attributes(true);
    let res = create(tree, from, &args(CreateDisposition::Open, access, CreateOptions::new(), false)).await?;
    let info = smb::FileRenameInformation {
        replace_if_exists: replace.into(),
        root_directory: 0,
        file_name: smb_name(to).as_str().into(),
    };
    let r = match &res {
        Resource::File(f) => f.set_info(info).await.map_err(|e| result_of(&e)),
        Resource::Directory(d) => d.set_info(info).await.map_err(|e| result_of(&e)),
        Resource::Pipe(_) => Err(-(libc::EINVAL as i64)),
    };
    closing(res, r).await
}

/// Bytes the logged-in user can still write on the share's file system.
pub async fn free_bytes(tree: &Tree) -> Result<u64, Failed> {
    let access = FileAccessMask::new().with_generic_read(true).with_file_read_attributes(true);
    let res =
        create(tree, "", &args(CreateDisposition::Open, access, CreateOptions::new().with_directory_file(true), true))
            .await?;
    let r = match &res {
        Resource::Directory(d) => d
            .query_fs_info::<smb::FileFsFullSizeInformation>()
            .await
            .map(|i| {
                i.caller_available_allocation_units
                    .saturating_mul(u64::from(i.sectors_per_allocation_unit))
                    .saturating_mul(u64::from(i.bytes_per_sector))
            })
            .map_err(|e| result_of(&e)),
        _ => Err(-(libc::ENOTDIR as i64)),
    };
    closing(res, r).await
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
