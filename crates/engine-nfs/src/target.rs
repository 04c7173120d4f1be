//! The `nfs://` target: `nfs://HOST[:PORT]/PATH?version=3&nconnect=N&uid=U&gid=G`.
//! PORT is the NFS port (default: asked of the portmapper); PATH is an export, optionally
//! followed by a directory inside it (the longest exported prefix is the export).

use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    /// NFS port; None = ask the portmapper.
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
#[error("{0} (expected nfs://HOST[:PORT]/EXPORT[/DIR][?version=3&nconnect=N&uid=U&gid=G&mountport=P&timeout=S])")]
pub struct TargetError(pub String);

impl Target {
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let err = |m: String| TargetError(m);
        let rest = url.strip_prefix("nfs://").ok_or_else(|| err(format!("{url:?} does not start with nfs://")))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if path.is_empty() {
            return Err(err(format!("{url:?} names no export (nfs://HOST/ for an export of \"/\")")));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
                (h, Some(p.parse::<u16>().map_err(|_| err(format!("port {p:?} is not a number 1-65535")))?))
            }
            _ => (authority, None),
        };
        if host.is_empty() {
            return Err(err(format!("{url:?} names no host")));
        }
        let mut t = Target {
            host: host.trim_start_matches('[').trim_end_matches(']').to_string(),
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
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| err(format!("{pair:?}: expected NAME=VALUE")))?;
            let num = |max: u64| -> Result<u64, TargetError> {
                v.parse::<u64>()
                    .ok()
                    .filter(|n| *n <= max)
                    .ok_or_else(|| err(format!("{k}={v:?}: expected a number up to {max}")))
            };
            match k {
                "version" if v == "3" => {}
                "version" => return Err(err(format!("version={v}: only NFS version 3 is supported"))),
                "nconnect" => t.nconnect = num(64)?.max(1) as u32,
                "uid" => t.uid = num(u32::MAX as u64)? as u32,
                "gid" => t.gid = num(u32::MAX as u64)? as u32,
                "mountport" => t.mount_port = Some(num(65535)? as u16),
                "timeout" => t.timeout = Duration::from_secs(num(3600)?.max(1)),
                _ => {
                    return Err(err(format!("unknown option {k:?} (version, nconnect, uid, gid, mountport, timeout)")))
                }
            }
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
            ("nfs://s/e?version=4", "only NFS version 3"),
            ("nfs://s/e?nconnect=100", "nconnect=\"100\""),
            ("nfs://s/e?cache=1", "unknown option \"cache\""),
        ] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("expected nfs://HOST"), "{url}: {e}");
        }
    }
}
