//! A blocking NFSv3 session on one connection: finds the ports (portmapper unless given),
//! mounts the export (the longest exported prefix of the target's path), walks to the
//! target directory and reads FSINFO. The engine keeps many calls in flight with the
//! same messages; this is the simple path for preparation, checks and tests.

use crate::proto::{self, proc3, Attr, DirEntry, Fh, FsInfo, Stable, MOUNT_PROG, NFS_PROG, PMAP_PROG};
use crate::rpc::{AuthSys, Conn, RpcError};
use crate::target::Target;
use crate::xdr::{Encoder, XdrError};
use std::net::{SocketAddr, ToSocketAddrs};

#[derive(Debug, thiserror::Error)]
pub enum NfsError {
    #[error(transparent)]
    Rpc(#[from] RpcError),
    #[error("malformed reply: {0}")]
    Xdr(#[from] XdrError),
    /// An NFS status other than NFS3_OK, by name.
    #[error("{op}: {}", proto::status_name(*.status))]
    Status { op: &'static str, status: u32 },
    /// An NFSv4 status other than NFS4_OK, by name.
    #[error("{op}: {}", crate::v4::proto::status_name(*.status))]
    Status4 { op: &'static str, status: u32 },
    #[error("{0}")]
    Setup(String),
    /// A call to one of the services a mount needs (portmapper, MOUNT, NFS) failed: which
    /// one, and why (the address in `source` is the one tried).
    #[error("{service}: {source}")]
    Service { service: String, source: RpcError },
}

impl NfsError {
    /// The NFS status, when the server answered with one.
    pub fn status(&self) -> Option<u32> {
        match self {
            NfsError::Status { status, .. } | NfsError::Status4 { status, .. } => Some(*status),
            _ => None,
        }
    }
}

fn ok<T>(op: &'static str, r: proto::Res<T>) -> Result<T, NfsError> {
    r?.map_err(|status| NfsError::Status { op, status })
}

/// Where the server is and what was mounted.
#[derive(Clone, Debug)]
pub struct Mounted {
    pub nfs_addr: SocketAddr,
    pub export: String,
    /// Handle of the export's root directory.
    pub root: Fh,
    /// Handle of the target directory (the export's root, or the directory under it).
    pub dir: Fh,
    pub fsinfo: FsInfo,
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, NfsError> {
    (host, port)
        .to_socket_addrs()
        .map_err(|e| NfsError::Setup(format!("cannot resolve {host}: {e}")))?
        .next()
        .ok_or_else(|| NfsError::Setup(format!("{host} has no address")))
}

pub fn auth_of(t: &Target) -> AuthSys {
    let machine = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim().to_string();
    AuthSys { machine, uid: t.uid, gid: t.gid, gids: vec![t.gid] }
}

/// Names the service behind a failed call.
fn service(name: impl Into<String>) -> impl FnOnce(RpcError) -> NfsError {
    let service = name.into();
    move |source| NfsError::Service { service, source }
}

fn getport(t: &Target, prog: u32, vers: u32) -> Result<u16, NfsError> {
    // Port 111 is tried only because the target left this port out: say so.
    let why = match prog {
        MOUNT_PROG => "the portmapper, asked for the MOUNT port (the target gives no mountport=P)",
        _ => "the portmapper, asked for the NFS port (the target gives no nfs://HOST:PORT)",
    };
    let mut c = Conn::connect(resolve(&t.host, 111)?, auth_of(t), t.timeout).map_err(service(why))?;
    let mut e = Encoder::default();
    proto::getport_args(&mut e, prog, vers);
    let body = c.call(PMAP_PROG, 2, 3, &e.buf).map_err(service(why))?;
    let port = crate::xdr::Decoder::new(&body).u32()?;
    if port == 0 || port > 65535 {
        return Err(NfsError::Setup(format!(
            "{}: the portmapper knows no program {prog} version {vers} over TCP",
            t.host
        )));
    }
    Ok(port as u16)
}

/// Mounts the target: see the module docs.
pub fn mount(t: &Target) -> Result<Mounted, NfsError> {
    mount_with(t, Walk::Existing)
}

/// Mounts the target, creating the directories under the export that are missing.
pub fn mount_creating(t: &Target) -> Result<Mounted, NfsError> {
    mount_with(t, Walk::Create)
}

/// Mounts the target's export only: `dir` is the export's root, whether or not the
/// target's directory exists.
pub fn mount_export(t: &Target) -> Result<Mounted, NfsError> {
    mount_with(t, Walk::No)
}

/// How far [`mount_with`] goes below the export.
#[derive(PartialEq)]
enum Walk {
    No,
    Existing,
    Create,
}

fn mount_with(t: &Target, walk: Walk) -> Result<Mounted, NfsError> {
    let mount_port = match t.mount_port {
        Some(p) => p,
        None => getport(t, MOUNT_PROG, 3)?,
    };
    let nfs_port = match t.port {
        Some(p) => p,
        None => getport(t, NFS_PROG, 3)?,
    };
    let mount_service = || service("MOUNT");
    let mut m = Conn::connect(resolve(&t.host, mount_port)?, auth_of(t), t.timeout).map_err(mount_service())?;
    let exports = proto::export_res(&m.call(MOUNT_PROG, 3, 5, &[]).map_err(mount_service())?)?;
    let export = exports
        .iter()
        .filter(|x| t.path == **x || t.path.starts_with(&format!("{}/", x.trim_end_matches('/'))))
        .max_by_key(|x| x.len())
        .cloned()
        .unwrap_or_else(|| t.path.clone());
    let mut e = Encoder::default();
    e.string(&export);
    let root = proto::mnt_res(&m.call(MOUNT_PROG, 3, 1, &e.buf).map_err(mount_service())?)?.map_err(|s| {
        // The list comes from the server: show a few names, each shortened.
        let mut shown: Vec<String> = exports.iter().take(10).map(|x| crate::target::clip(x)).collect();
        if exports.len() > 10 {
            shown.push(format!("and {} more", exports.len() - 10));
        }
        NfsError::Setup(format!(
            "{}: MOUNT {} refused (mount status {s}); exports: {}",
            t.host,
            crate::target::clip(&export),
            shown.join(", ")
        ))
    })?;
    let nfs_addr = resolve(&t.host, nfs_port)?;
    let conn = Conn::connect(nfs_addr, auth_of(t), t.timeout).map_err(service("NFS"))?;
    let mut s = Session { conn };
    let mut dir = root.clone();
    let below = if walk == Walk::No { "" } else { &t.path[export.len()..] };
    for name in below.split('/').filter(|n| !n.is_empty()) {
        dir = match s.lookup(&dir, name) {
            Ok((fh, _)) => fh,
            Err(e) if walk == Walk::Create && e.status() == Some(2) => s.mkdir(&dir, name, 0o755)?,
            Err(e) => return Err(e),
        };
    }
    let fsinfo = s.fsinfo(&dir)?;
    Ok(Mounted { nfs_addr, export, root, dir, fsinfo })
}

/// NFSv3 calls on one connection, one at a time.
pub struct Session {
    pub conn: Conn,
}

impl Session {
    pub fn connect(t: &Target, m: &Mounted) -> Result<Session, NfsError> {
        Ok(Session { conn: Conn::connect(m.nfs_addr, auth_of(t), t.timeout)? })
    }

    fn call(&mut self, proc_: u32, args: Encoder) -> Result<Vec<u8>, NfsError> {
        Ok(self.conn.call(NFS_PROG, 3, proc_, &args.buf)?)
    }

    /// NULL: does nothing, answered by any live server.
    pub fn null(&mut self) -> Result<(), NfsError> {
        self.call(0, Encoder::default()).map(|_| ())
    }

    pub fn getattr(&mut self, f: &Fh) -> Result<Attr, NfsError> {
        let mut e = Encoder::default();
        proto::fh(&mut e, f);
        ok("GETATTR", proto::getattr_res(&self.call(proc3::GETATTR, e)?))
    }

    pub fn setattr(&mut self, f: &Fh, mode: Option<u32>, size: Option<u64>) -> Result<(), NfsError> {
        let mut e = Encoder::default();
        proto::setattr_args(&mut e, f, mode, size);
        ok("SETATTR", proto::status_res(&self.call(proc3::SETATTR, e)?))
    }

    pub fn lookup(&mut self, dir: &Fh, name: &str) -> Result<(Fh, Option<Attr>), NfsError> {
        let mut e = Encoder::default();
        proto::diropargs(&mut e, dir, name);
        ok("LOOKUP", proto::lookup_res(&self.call(proc3::LOOKUP, e)?))
    }

    pub fn read(&mut self, f: &Fh, offset: u64, count: u32) -> Result<(u32, bool), NfsError> {
        let mut e = Encoder::default();
        proto::read_args(&mut e, f, offset, count);
        ok("READ", proto::read_res(&self.call(proc3::READ, e)?))
    }

    /// READ returning the data.
    pub fn read_data(&mut self, f: &Fh, offset: u64, count: u32) -> Result<Vec<u8>, NfsError> {
        let mut e = Encoder::default();
        proto::read_args(&mut e, f, offset, count);
        let body = self.call(proc3::READ, e)?;
        ok("READ", proto::read_res(&body))?;
        // The data is the last opaque of the reply.
        let mut d = crate::xdr::Decoder::new(&body);
        d.u32()?;
        if d.bool()? {
            d.skip(84)?;
        }
        d.u32()?;
        d.bool()?;
        Ok(d.opaque(usize::MAX)?.to_vec())
    }

    pub fn write(&mut self, f: &Fh, offset: u64, stable: Stable, data: &[u8]) -> Result<u32, NfsError> {
        let mut e = Encoder::default();
        proto::write_args(&mut e, f, offset, stable, data);
        ok("WRITE", proto::write_res(&self.call(proc3::WRITE, e)?)).map(|(n, _, _)| n)
    }

    /// WRITE returning the reply: (bytes written, how stable, the server's write verifier).
    pub fn write_reply(
        &mut self,
        f: &Fh,
        offset: u64,
        stable: Stable,
        data: &[u8],
    ) -> Result<(u32, u32, [u8; 8]), NfsError> {
        let mut e = Encoder::default();
        proto::write_args(&mut e, f, offset, stable, data);
        ok("WRITE", proto::write_res(&self.call(proc3::WRITE, e)?))
    }

    /// COMMIT returning the server's write verifier.
    pub fn commit_verifier(&mut self, f: &Fh) -> Result<[u8; 8], NfsError> {
        let mut e = Encoder::default();
        proto::commit_args(&mut e, f);
        ok("COMMIT", proto::commit_res(&self.call(proc3::COMMIT, e)?))
    }

    pub fn commit(&mut self, f: &Fh) -> Result<(), NfsError> {
        let mut e = Encoder::default();
        proto::commit_args(&mut e, f);
        ok("COMMIT", proto::status_res(&self.call(proc3::COMMIT, e)?))
    }

    /// CREATE (unchecked: an existing file is opened as it is); looks the file up when the
    /// server returns no handle.
    pub fn create(&mut self, dir: &Fh, name: &str, mode: u32) -> Result<Fh, NfsError> {
        self.create_with(dir, name, mode, false, false)
    }

    /// CREATE, guarded (NFS3ERR_EXIST if the name exists) or unchecked and truncating.
    pub fn create_with(
        &mut self,
        dir: &Fh,
        name: &str,
        mode: u32,
        guarded: bool,
        truncate: bool,
    ) -> Result<Fh, NfsError> {
        let mut e = Encoder::default();
        proto::create_args(&mut e, dir, name, mode, guarded, truncate);
        match ok("CREATE", proto::create_res(&self.call(proc3::CREATE, e)?))? {
            Some(f) => Ok(f),
            None => Ok(self.lookup(dir, name)?.0),
        }
    }

    /// SETATTR of the modification time to the server's clock.
    pub fn touch(&mut self, f: &Fh) -> Result<(), NfsError> {
        let mut e = Encoder::default();
        proto::touch_args(&mut e, f);
        ok("SETATTR", proto::status_res(&self.call(proc3::SETATTR, e)?))
    }

    /// RENAME (replaces `to` if it exists).
    pub fn rename(&mut self, from_dir: &Fh, from: &str, to_dir: &Fh, to: &str) -> Result<(), NfsError> {
        let mut e = Encoder::default();
        proto::rename_args(&mut e, from_dir, from, to_dir, to);
        ok("RENAME", proto::status_res(&self.call(proc3::RENAME, e)?))
    }

    pub fn mkdir(&mut self, dir: &Fh, name: &str, mode: u32) -> Result<Fh, NfsError> {
        let mut e = Encoder::default();
        proto::mkdir_args(&mut e, dir, name, mode);
        match ok("MKDIR", proto::create_res(&self.call(proc3::MKDIR, e)?))? {
            Some(f) => Ok(f),
            None => Ok(self.lookup(dir, name)?.0),
        }
    }

    pub fn remove(&mut self, dir: &Fh, name: &str) -> Result<(), NfsError> {
        let mut e = Encoder::default();
        proto::diropargs(&mut e, dir, name);
        ok("REMOVE", proto::status_res(&self.call(proc3::REMOVE, e)?))
    }

    pub fn rmdir(&mut self, dir: &Fh, name: &str) -> Result<(), NfsError> {
        let mut e = Encoder::default();
        proto::diropargs(&mut e, dir, name);
        ok("RMDIR", proto::status_res(&self.call(proc3::RMDIR, e)?))
    }

    pub fn fsinfo(&mut self, f: &Fh) -> Result<FsInfo, NfsError> {
        let mut e = Encoder::default();
        proto::fh(&mut e, f);
        ok("FSINFO", proto::fsinfo_res(&self.call(proc3::FSINFO, e)?))
    }

    /// Every entry of a directory (all READDIRPLUS pages), "." and ".." left out.
    pub fn readdirplus(&mut self, dir: &Fh) -> Result<Vec<DirEntry>, NfsError> {
        let (mut cookie, mut verf, mut all) = (0u64, [0u8; 8], Vec::new());
        loop {
            let mut e = Encoder::default();
            proto::readdirplus_args(&mut e, dir, cookie, verf);
            let (entries, v, eof) = ok("READDIRPLUS", proto::readdirplus_res(&self.call(proc3::READDIRPLUS, e)?))?;
            verf = v;
            if let Some(last) = entries.last() {
                cookie = last.cookie;
            }
            let done = eof || entries.is_empty();
            all.extend(entries.into_iter().filter(|x| x.name != "." && x.name != ".."));
            if done {
                return Ok(all);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A port on 127.0.0.1 that refuses connections (was free a moment ago).
    fn refused_port() -> u16 {
        TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    }

    fn target(url: &str) -> Target {
        Target::parse(url).unwrap()
    }

    #[test]
    fn a_refused_custom_port_is_reported_as_that_port() {
        let (nfs, mnt) = (refused_port(), refused_port());
        let e = mount(&target(&format!("nfs://127.0.0.1:{nfs}/export?mountport={mnt}&timeout=2"))).unwrap_err();
        let e = e.to_string();
        assert!(e.starts_with(&format!("MOUNT: 127.0.0.1:{mnt}: ")), "{e}");
        assert!(!e.contains(":111"), "{e}");
        // Without mountport=, port 111 is the portmapper's, and the message says why it was asked.
        if std::net::TcpStream::connect(("127.0.0.1", 111)).is_err() {
            let e = mount(&target(&format!("nfs://127.0.0.1:{nfs}/export?timeout=2"))).unwrap_err().to_string();
            assert!(
                e.starts_with(
                    "the portmapper, asked for the MOUNT port (the target gives no mountport=P): 127.0.0.1:111: "
                ),
                "{e}"
            );
        }
    }

    #[test]
    fn a_mount_port_that_answers_http_is_not_an_rpc_server() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            let (mut c, _) = listener.accept().unwrap();
            let _ = c.read(&mut [0u8; 512]);
            let _ = c.write_all(b"HTTP/1.0 200 OK\r\n\r\n");
        });
        let e = mount(&target(&format!("nfs://127.0.0.1:{port}/export?mountport={port}&timeout=2"))).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("MOUNT: the peer at 127.0.0.1:{port} is not an RPC server (it answered with 'HTTP/1.0 200 OK...')")
        );
    }
}
