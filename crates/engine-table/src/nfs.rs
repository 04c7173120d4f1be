//! The `nfs://` target: `nfs://HOST[:PORT]/PATH?version=3|4.1&nconnect=N&uid=U&gid=G`.
//! PORT is the NFS port (default: for NFSv3 asked of the portmapper, for NFSv4.1 2049);
//! PATH is, for NFSv3, an export, optionally followed by a directory inside it (the
//! longest exported prefix is the export), and for NFSv4.1 a path in the server's pseudo
//! file system, walked from its root.
//! Also the `nfs` engine's entry in the table (the engine itself is `ioscope-engine-nfs`).

use crate::{Capabilities, EngineKind, EngineSpec, InvalidTarget, TargetKind, TargetRule};
use std::time::Duration;

/// The `nfs` engine: NFSv3 from user space, no kernel client and so no client cache.
pub const SPEC: EngineSpec = EngineSpec {
    kind: EngineKind::Nfs,
    name: "nfs",
    aliases: &[],
    description: "NFSv3 or NFSv4.1 from user space, no client cache; needs --target nfs://...",
    caps: Capabilities {
        // No page cache on this host to bypass: direct = true changes nothing and needs no alignment.
        direct_align_bytes: 0,
        file_ops: true,
        target: Some(TargetRule {
            expected: "an NFS target like nfs://server/export/dir?nconnect=4",
            missing: "engine nfs loads an NFS server directly: say which (--target or target = \"...\")",
            example: "nfs://server/export/dir?nconnect=4",
            parse,
        }),
        ..Capabilities::LOCAL
    },
    note: Some(
        "engine nfs has no client cache: every I/O went to the server, whose own cache may have served it \
         (the server's memory is not recorded here)",
    ),
    cache: Some("no client cache"),
};

fn parse(url: &str) -> Result<crate::Target, InvalidTarget> {
    let t = Target::parse(url).map_err(|e| InvalidTarget(e.0))?;
    Ok(crate::Target { url: url.to_string(), root: t.url_of(&t.path), kind: TargetKind::Nfs(t) })
}

/// The NFS version a target is spoken to in (`version=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Version {
    #[default]
    V3,
    /// NFSv4.1 (RFC 8881): sessions, no portmapper and no MOUNT.
    V41,
}

impl Version {
    /// How the version is written: "3", "4.1".
    pub fn name(self) -> &'static str {
        match self {
            Version::V3 => "3",
            Version::V41 => "4.1",
        }
    }
}

/// The NFS port of NFSv4 (RFC 8881 section 2.9.3: no portmapper is asked).
pub const NFS4_PORT: u16 = 2049;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    /// The NFS version (`version=3`, the default, or `version=4.1`).
    pub version: Version,
    /// NFS port; None = ask the portmapper (NFSv3) or 2049 (NFSv4.1).
    pub port: Option<u16>,
    /// MOUNT port; None = ask the portmapper.
    pub mount_port: Option<u16>,
    /// Export and directory, from the URL's path ("/export/dir").
    pub path: String,
    pub nconnect: u32,
    pub uid: u32,
    pub gid: u32,
    /// How long a reply may take before the call counts as timed out.
    pub timeout: Duration,
}

/// What is wrong with a target, and the form expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} (expected nfs://HOST[:PORT]/EXPORT[/DIR][?version=3|4.1&nconnect=N&uid=U&gid=G&mountport=P&timeout=S])")]
pub struct TargetError(pub String);

/// Most connections per thread (`nconnect`).
pub const MAX_NCONNECT: u64 = 64;

/// At most 80 characters of `s`, for echoing a piece of a target in an error.
pub fn clip(s: &str) -> String {
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// `HOST`, `HOST:PORT`, `[IPV6]` or `[IPV6]:PORT` → (host, port). An IPv6 address must be
/// in brackets and parse as one; a name has only letters, digits, `-`, `.` and `_`.
pub(crate) fn split_authority(authority: &str) -> Result<(String, Option<u16>), TargetError> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (addr, after) = rest.split_once(']').ok_or_else(|| {
            TargetError(format!("{:?}: an IPv6 address needs its closing ] ([::1]:2049)", clip(authority)))
        })?;
        if addr.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(TargetError(format!("{:?} is not an IPv6 address", clip(addr))));
        }
        let port = match after {
            "" => None,
            p => {
                Some(p.strip_prefix(':').ok_or_else(|| TargetError(format!("{:?}: expected :PORT after ]", clip(p))))?)
            }
        };
        (addr.to_string(), port)
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        };
        if port.is_some_and(|p| p.contains(':')) {
            return Err(TargetError(format!("{:?}: an IPv6 address goes in brackets, like [::1]", clip(authority))));
        }
        if host.is_empty() {
            return Err(TargetError("the target names no host".to_string()));
        }
        if host.len() > 253 {
            return Err(TargetError(format!("host {:?} is longer than a host name can be (253)", clip(host))));
        }
        let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
        if !host.chars().all(name_char) {
            return Err(TargetError(format!("host {:?} is not a host name or address", clip(host))));
        }
        (host.to_string(), port)
    };
    let port = match port {
        None => None,
        Some(p) => Some(
            p.parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| TargetError(format!("port {:?} is not a number 1-65535", clip(p))))?,
        ),
    };
    Ok((host, port))
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let err = |m: String| TargetError(m);
        let rest =
            url.strip_prefix("nfs://").ok_or_else(|| err(format!("{:?} does not start with nfs://", clip(url))))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if path.is_empty() {
            return Err(err(format!("{:?} names no export (nfs://HOST/ for an export of \"/\")", clip(url))));
        }
        let (host, port) = split_authority(authority)?;
        if path.split('/').any(|c| c == "." || c == "..") {
            return Err(err(format!("path {:?} has a . or .. component (name the directory itself)", clip(path))));
        }
        if path.len() > 4095 || path.split('/').any(|c| c.len() > 255) {
            return Err(err(format!(
                "path of {} bytes: expected at most 4095, and at most 255 for each name in it",
                path.len()
            )));
        }
        if path.chars().any(char::is_control) {
            return Err(err(format!("path {:?} has a control character", clip(path))));
        }
        let mut t = Target {
            host,
            version: Version::V3,
            port,
            mount_port: None,
            path: match path.trim_end_matches('/') {
                "" => "/".to_string(),
                p => p.to_string(),
            },
            nconnect: 1,
            uid: 0,
            gid: 0,
            timeout: Duration::from_secs(10),
        };
        for (k, v) in crate::query::options(query).map_err(err)? {
            // Out of range is refused, never clamped: the run would not be what was asked.
            let num = |min, max| crate::query::number(k, v, min, max).map_err(err);
            match k {
                "version" => {
                    t.version = match v {
                        "3" => Version::V3,
                        "4.1" => Version::V41,
                        _ => {
                            return Err(err(format!(
                                "version={:?}: only NFS versions 3 and 4.1 are supported (not 4.0 or 4.2)",
                                clip(v)
                            )))
                        }
                    }
                }
                "nconnect" => t.nconnect = num(1, MAX_NCONNECT)? as u32,
                "uid" => t.uid = num(0, u32::MAX as u64)? as u32,
                "gid" => t.gid = num(0, u32::MAX as u64)? as u32,
                "mountport" => t.mount_port = Some(num(1, 65535)? as u16),
                "timeout" => t.timeout = crate::query::timeout(v).map_err(err)?,
                _ => {
                    return Err(err(format!(
                        "unknown option {:?} (version, nconnect, uid, gid, mountport, timeout)",
                        clip(k)
                    )))
                }
            }
        }
        if t.version == Version::V41 && t.mount_port.is_some() {
            return Err(err("mountport= is for NFSv3: NFSv4.1 has no MOUNT protocol".to_string()));
        }
        Ok(t)
    }

    /// `nfs://HOST[:PORT]PATH` for a path on this server: how paths on it are spelt (a
    /// dataset's anchor, the files of its tree), without the options.
    pub fn url_of(&self, path: &str) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        let port = self.port.map(|p| format!(":{p}")).unwrap_or_default();
        format!("nfs://{host}{port}{path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_target_parses() {
        let t = Target::parse("nfs://10.77.0.2:2049/export/run1?version=3&nconnect=4&uid=1000&gid=100").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.path.as_str()), ("10.77.0.2", Some(2049), "/export/run1"));
        assert_eq!((t.nconnect, t.uid, t.gid), (4, 1000, 100));
        let t = Target::parse("nfs://server/export/").unwrap();
        assert_eq!((t.port, t.path.as_str(), t.nconnect), (None, "/export", 1));
        assert_eq!(Target::parse("nfs://server:2049/").unwrap().path, "/", "an export of /");
        assert_eq!(Target::parse("nfs://server/export").unwrap().version, Version::V3, "NFSv3 by default");
        let t = Target::parse("nfs://server/export/d?version=4.1").unwrap();
        assert_eq!((t.version, t.port, t.path.as_str()), (Version::V41, None, "/export/d"));
        let t = Target::parse("nfs://[::1]:2049/e/d?nconnect=2").unwrap();
        assert_eq!(t.url_of(&t.path), "nfs://[::1]:2049/e/d");
    }

    #[test]
    fn bad_targets_say_what_is_wrong() {
        for (url, says) in [
            ("http://x/y", "does not start with nfs://"),
            ("nfs://server", "names no export"),
            ("nfs://:2049/e", "names no host"),
            ("nfs://s:99999/e", "port \"99999\""),
            ("nfs://s/e?version=4", "only NFS versions 3 and 4.1 are supported"),
            ("nfs://s/e?version=4.0", "only NFS versions 3 and 4.1 are supported"),
            ("nfs://s/e?version=4.2", "only NFS versions 3 and 4.1 are supported"),
            ("nfs://s/e?version=2", "only NFS versions 3 and 4.1 are supported"),
            ("nfs://s/e?nconnect=100", "nconnect=\"100\": expected a number from 1 to 64"),
            ("nfs://s/e?cache=1", "unknown option \"cache\""),
        ] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("expected nfs://HOST"), "{url}: {e}");
        }
    }

    #[test]
    fn only_nfs_versions_3_and_4_1_are_accepted() {
        for (v, want) in [("3", Version::V3), ("4.1", Version::V41)] {
            assert_eq!(Target::parse(&format!("nfs://s/e?version={v}")).unwrap().version, want);
        }
        let e = Target::parse("nfs://s/e?mountport=20048&version=4.1").unwrap_err().to_string();
        assert!(e.contains("mountport= is for NFSv3"), "{e}");
        for v in ["4", "4.0", "4.2", "41", ""] {
            let e = Target::parse(&format!("nfs://s/e?version={v}")).unwrap_err().to_string();
            assert!(e.contains("only NFS versions 3 and 4.1 are supported"), "{v}: {e}");
        }
    }

    #[test]
    fn a_malformed_ipv6_literal_is_refused_not_resolved() {
        for (url, says) in [
            ("nfs://[::1/export", "needs its closing ]"),
            ("nfs://[::1/export/dir", "needs its closing ]"),
            ("nfs://[nope]/export", "\"nope\" is not an IPv6 address"),
            ("nfs://[::1]x/export", "expected :PORT after ]"),
            ("nfs://[::1]:/export", "port \"\" is not a number"),
            ("nfs://::1/export", "an IPv6 address goes in brackets"),
            ("nfs://fe80::1:2049/export", "an IPv6 address goes in brackets"),
            ("nfs://se rver/export", "is not a host name or address"),
            ("nfs://s]/export", "is not a host name or address"),
            ("nfs://s:0/export", "port \"0\" is not a number 1-65535"),
        ] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
        }
        let t = Target::parse("nfs://[fe80::1]/export").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("fe80::1", None));
        let t = Target::parse("nfs://[::1]:2050/export").unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", Some(2050)));
    }

    #[test]
    fn out_of_range_options_are_refused_with_the_valid_range_never_clamped() {
        for (url, says) in [
            ("nfs://s/e?nconnect=0", "nconnect=\"0\": expected a number from 1 to 64"),
            ("nfs://s/e?nconnect=65", "nconnect=\"65\": expected a number from 1 to 64"),
            ("nfs://s/e?timeout=0", "timeout=\"0\": expected a number from 1 to 3600"),
            ("nfs://s/e?mountport=0", "mountport=\"0\": expected a number from 1 to 65535"),
            ("nfs://s/e?uid=-1", "uid=\"-1\": expected a number from 0 to 4294967295"),
            ("nfs://s/e?nconnect=2&nconnect=4", "\"nconnect\" is given twice"),
            ("nfs://s/e/../etc", "has a . or .. component"),
            ("nfs://s/e/\u{0}x", "control character"),
            (&format!("nfs://s/e/{}", "n".repeat(256)), "at most 255 for each name"),
            (&format!("nfs://s/e{}", "/n".repeat(2100)), "path of 4202 bytes: expected at most 4095"),
            (&format!("nfs://{}/e", "h".repeat(254)), "longer than a host name can be"),
        ] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
        }
        assert_eq!(Target::parse("nfs://s/e?nconnect=64").unwrap().nconnect, 64);
        assert_eq!(Target::parse("nfs://s/e?nconnect=1").unwrap().nconnect, 1);
    }

    #[test]
    fn a_long_target_is_echoed_shortened() {
        let long = format!("nfs://s/e?{}=1", "k".repeat(100_000));
        let e = Target::parse(&long).unwrap_err().to_string();
        assert!(e.len() < 400, "{} bytes", e.len());
        let e = Target::parse(&format!("x{}", "y".repeat(100_000))).unwrap_err().to_string();
        assert!(e.len() < 400 && e.contains('…'), "{} bytes", e.len());
    }
}
