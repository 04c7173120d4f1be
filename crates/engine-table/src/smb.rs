//! The `smb://` target: `smb://[USER@]HOST[:PORT]/SHARE[/DIR][?timeout=S&encrypt=MODE&sign=MODE]`.
//! SHARE is the share's name on the server, DIR a directory inside it where the files go
//! (the share's root when absent); PORT defaults to 445. USER is the account to log in as
//! (`DOMAIN;USER` for a domain account; `guest` when absent). The password is never part of
//! a target: it comes from the environment when the run starts (see `ioscope-engine-smb`).
//! Also the `smb` engine's entry in the table (the engine itself is `ioscope-engine-smb`).

use crate::nfs::{clip, split_authority};
use crate::{Capabilities, EngineKind, EngineSpec, InvalidTarget, TargetKind, TargetRule};
use std::time::Duration;

/// The `smb` engine: SMB2/3 from user space, many requests in flight on one connection.
pub const SPEC: EngineSpec = EngineSpec {
    kind: EngineKind::Smb,
    name: "smb",
    aliases: &[],
    description: "SMB2/SMB3 from user space (signed or encrypted when asked or required), no client cache; needs --target smb://...",
    caps: Capabilities {
        // No page cache on this host to bypass: direct = true asks the server for
        // unbuffered reads (SMB 3.0.2 and later) and needs no alignment.
        direct_align_bytes: 0,
        file_ops: true,
        // Requests in flight on one connection are bounded by the credits the server grants
        // (Samba: 8192 by default); a deeper queue would only wait for credits.
        max_queue_depth: 256,
        target: Some(TargetRule {
            expected: "an SMB target like smb://user@server/share/dir",
            missing:
                "engine smb loads an SMB server: say which share (--target or target = \"smb://USER@HOST/SHARE/DIR\")",
            example: "smb://user@server/share/dir",
            parse,
        }),
        ..Capabilities::LOCAL
    },
    note: Some("engine smb has no client cache: every request went to the server, whose own cache may have served it"),
    cache: Some("no client cache"),
};

fn parse(url: &str) -> Result<crate::Target, InvalidTarget> {
    let t = Target::parse(url).map_err(|e| InvalidTarget(e.0))?;
    Ok(crate::Target { url: url.to_string(), root: t.root(), kind: TargetKind::Smb(t) })
}

/// What is wrong with a target, and the form expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} (expected smb://[USER@]HOST[:PORT]/SHARE[/DIR][?timeout=S&encrypt=required|allowed|disabled&sign=required|auto])")]
pub struct TargetError(pub String);

/// Whether the session encrypts (SMB 3 encryption).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Encrypt {
    /// Encrypt only if the server asks for it.
    #[default]
    Allowed,
    /// Refuse to work unencrypted.
    Required,
    /// Never encrypt (a server that requires encryption refuses the session).
    Disabled,
}

impl Encrypt {
    pub fn name(self) -> &'static str {
        match self {
            Encrypt::Allowed => "allowed",
            Encrypt::Required => "required",
            Encrypt::Disabled => "disabled",
        }
    }
}

/// The SMB port (direct TCP, MS-SMB2 2.1).
pub const SMB_PORT: u16 = 445;
/// The user logged in as when the target names none.
pub const GUEST: &str = "guest";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    /// Whether the URL gave the port (the root spells it only then).
    pub port_given: bool,
    /// The account, `USER` or `DOMAIN;USER` as written ([`GUEST`] when absent).
    pub user: String,
    pub share: String,
    /// The directory in the share, `/`-separated, without leading or trailing `/` ("" for
    /// the share's root).
    pub dir: String,
    /// How long a request may take before it counts as timed out.
    pub timeout: Duration,
    pub encrypt: Encrypt,
    /// Sign every request even if the server does not require it (`sign=required`); by
    /// default requests are signed only when the server requires it, as Windows and
    /// Samba's clients do.
    pub sign: bool,
}

/// Characters a name on an SMB share cannot hold (MS-FSCC 2.1.5.2), beside controls.
const NOT_IN_NAMES: &[char] = &['\\', ':', '*', '?', '"', '<', '>', '|'];

fn bad_name(name: &str) -> bool {
    name.is_empty() || name.chars().any(|c| c.is_control() || NOT_IN_NAMES.contains(&c))
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let err = |m: String| TargetError(m);
        let rest =
            url.strip_prefix("smb://").ok_or_else(|| err(format!("{:?} does not start with smb://", clip(url))))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (login, rest) = match rest.split_once('@') {
            Some((l, r)) if !l.contains('/') => (Some(l), r),
            _ => (None, rest),
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let user = match login {
            None => GUEST.to_string(),
            Some(l) if l.contains(':') => {
                return Err(err("a password in the URL is refused (it would be stored with the results): \
                     set IOSCOPE_SMB_PASSWORD or IOSCOPE_SMB_PASSWORD_FILE"
                    .to_string()))
            }
            Some(l) => {
                let (domain, name) = l.split_once(';').unwrap_or(("", l));
                let word = |s: &str| s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.$".contains(c));
                if name.is_empty() || name.len() > 104 || domain.len() > 64 || !word(name) || !word(domain) {
                    return Err(err(format!(
                        "user {:?}: expected USER or DOMAIN;USER (letters, digits, '-', '_', '.', '$')",
                        clip(l)
                    )));
                }
                l.to_string()
            }
        };
        let (host, port) = split_authority(authority).map_err(|e| err(e.0))?;
        let path = path.trim_end_matches('/');
        let (share, dir) = path.split_once('/').unwrap_or((path, ""));
        if share.is_empty() {
            return Err(err(format!("{:?} names no share (smb://HOST/SHARE)", clip(url))));
        }
        if bad_name(share) || share.len() > 80 {
            return Err(err(format!(
                "share {:?}: expected a name of at most 80 characters without \\ : * ? \" < > | or controls",
                clip(share)
            )));
        }
        if !dir.is_empty() {
            if dir.split('/').any(|c| c == "." || c == "..") || dir.contains("//") {
                return Err(err(format!("directory {:?} has an empty, . or .. part", clip(dir))));
            }
            if let Some(c) = dir.split('/').find(|c| bad_name(c) || c.len() > 255) {
                return Err(err(format!(
                    "directory name {:?}: expected at most 255 characters without \\ : * ? \" < > | or controls",
                    clip(c)
                )));
            }
            if dir.len() > 1024 {
                return Err(err(format!("directory of {} bytes: expected at most 1024", dir.len())));
            }
        }
        let mut t = Target {
            host,
            port: port.unwrap_or(SMB_PORT),
            port_given: port.is_some(),
            user,
            share: share.to_string(),
            dir: dir.to_string(),
            timeout: Duration::from_secs(30),
            encrypt: Encrypt::Allowed,
            sign: false,
        };
        for (k, v) in crate::query::options(query).map_err(err)? {
            match k {
                "timeout" => t.timeout = crate::query::timeout(v).map_err(err)?,
                "encrypt" => {
                    t.encrypt = match v {
                        "allowed" => Encrypt::Allowed,
                        "required" => Encrypt::Required,
                        "disabled" => Encrypt::Disabled,
                        _ => return Err(err(format!("encrypt={:?}: expected required, allowed or disabled", clip(v)))),
                    }
                }
                "sign" => {
                    t.sign = match v {
                        "required" => true,
                        "auto" => false,
                        _ => return Err(err(format!("sign={:?}: expected required or auto", clip(v)))),
                    }
                }
                "password" => {
                    return Err(err("a password in the URL is refused (it would be stored with the results): \
                         set IOSCOPE_SMB_PASSWORD or IOSCOPE_SMB_PASSWORD_FILE"
                        .to_string()))
                }
                _ => return Err(err(format!("unknown option {:?} (timeout, encrypt, sign)", clip(k)))),
            }
        }
        Ok(t)
    }

    /// `smb://HOST[:PORT]/SHARE`: how the share's root is spelt (no user, no options).
    pub fn share_root(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        match self.port_given {
            true => format!("smb://{host}:{}/{}", self.port, self.share),
            false => format!("smb://{host}/{}", self.share),
        }
    }

    /// `smb://HOST[:PORT]/SHARE[/DIR]`: how files under the target are spelt (a dataset's
    /// anchor, the paths of its tree).
    pub fn root(&self) -> String {
        match self.dir.as_str() {
            "" => self.share_root(),
            d => format!("{}/{d}", self.share_root()),
        }
    }

    /// The path in the share (`/`-separated, "" for its root) of a path spelt under
    /// [`Target::share_root`]; None for a path elsewhere.
    pub fn path_of<'p>(&self, path: &'p str) -> Option<&'p str> {
        let root = self.share_root();
        let rest = path.strip_prefix(root.as_str())?;
        match rest {
            "" => Some(""),
            r => r.strip_prefix('/').map(|p| p.trim_end_matches('/')),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_target_parses() {
        let t = Target::parse("smb://ioscope@127.0.0.1:44545/ioscope/run1/a?timeout=5&encrypt=required").unwrap();
        assert_eq!((t.host.as_str(), t.port, t.user.as_str()), ("127.0.0.1", 44545, "ioscope"));
        assert_eq!((t.share.as_str(), t.dir.as_str()), ("ioscope", "run1/a"));
        assert_eq!((t.timeout, t.encrypt), (Duration::from_secs(5), Encrypt::Required));
        assert_eq!(t.root(), "smb://127.0.0.1:44545/ioscope/run1/a");
        assert_eq!(t.path_of("smb://127.0.0.1:44545/ioscope/run1/a/f0"), Some("run1/a/f0"));
        assert_eq!(t.path_of("smb://127.0.0.1:44545/ioscope"), Some(""));
        assert_eq!(t.path_of("smb://127.0.0.1:44545/other/f0"), None);
        assert_eq!(t.path_of("smb://127.0.0.1:44545/ioscopex/f0"), None);
        let t = Target::parse("smb://server/share").unwrap();
        assert_eq!((t.port, t.user.as_str(), t.dir.as_str(), t.encrypt), (445, GUEST, "", Encrypt::Allowed));
        assert_eq!(t.root(), "smb://server/share");
        let t = Target::parse("smb://CORP;alice@[::1]:4445/data/x/").unwrap();
        assert_eq!((t.host.as_str(), t.user.as_str(), t.dir.as_str()), ("::1", "CORP;alice", "x"));
        assert_eq!(t.root(), "smb://[::1]:4445/data/x");
        // A parsed root parses again to the same place (a dataset's anchor is kept so).
        let again = Target::parse(&t.root()).unwrap();
        assert_eq!((again.root(), again.user.as_str()), (t.root(), GUEST));
    }

    #[test]
    fn bad_targets_say_what_is_wrong() {
        for (url, says) in [
            ("nfs://x/y", "does not start with smb://"),
            ("smb://host", "names no share"),
            ("smb://host/", "names no share"),
            ("smb:///share", "no host"),
            ("smb://host:0/share", "port"),
            ("smb://host:x/share", "port"),
            ("smb://u:secret@host/share", "password in the URL is refused"),
            ("smb://host/share?password=x", "password in the URL is refused"),
            ("smb://bad user@host/share", "user"),
            ("smb://host/sh*re", "share"),
            ("smb://host/share/a/../b", ". or .."),
            ("smb://host/share/a//b", "empty"),
            ("smb://host/share/a:b", "directory name"),
            ("smb://host/share?timeout=0", "1 to 3600"),
            ("smb://host/share?timeout=x", "1 to 3600"),
            ("smb://host/share?encrypt=maybe", "required, allowed or disabled"),
            ("smb://host/share?nconnect=2", "unknown option"),
            ("smb://host/share?timeout=1&timeout=2", "twice"),
            ("smb://host/share?timeout", "NAME=VALUE"),
            ("smb://::1/share", "brackets"),
        ] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(e.contains("expected smb://"), "{url}: {e}");
        }
        // The secret is not echoed back.
        let e = Target::parse("smb://u:hunter2@host/share").unwrap_err().to_string();
        assert!(!e.contains("hunter2"), "{e}");
    }
}
