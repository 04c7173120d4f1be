//! The client hosts of a many-host run: how each is reached (`[[host]]`, `--hosts`), what a
//! lost host does, and how a plan is split into the part one host runs.

use crate::plan::Target;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Most hosts one run may have.
pub const MAX_HOSTS: usize = 1024;

/// How long a host may go without delivering a finished second before it counts as lost
/// (and an agent keeps its load going without hearing from the coordinator), unless set.
pub const DEFAULT_HOST_TIMEOUT: Duration = Duration::from_secs(10);

/// How the coordinator reaches a host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum HostKind {
    /// Started by the coordinator through the system's `ssh` (`[user@]host[:port]`,
    /// `ssh://...`); None: ssh's own default (its configuration, else the login name and 22).
    Ssh { user: Option<String>, host: String, port: Option<u16> },
    /// An agent already running with `ioscope agent --listen` (`agent://host:port`).
    Agent { host: String, port: u16 },
}

impl HostKind {
    /// The host part (a name or an address; an IPv6 address without brackets).
    pub fn host(&self) -> &str {
        match self {
            HostKind::Ssh { host, .. } | HostKind::Agent { host, .. } => host,
        }
    }
    /// `ssh` or `agent`: the transport's name, as in the address's scheme.
    pub fn scheme(&self) -> &'static str {
        match self {
            HostKind::Ssh { .. } => "ssh",
            HostKind::Agent { .. } => "agent",
        }
    }
    /// The address in its one canonical spelling: `ssh://user@host:port`, `agent://host:port`
    /// (an IPv6 host in brackets).
    pub fn address(&self) -> String {
        let host = if self.host().contains(':') { format!("[{}]", self.host()) } else { self.host().to_string() };
        match self {
            HostKind::Ssh { user, port, .. } => {
                let user = user.as_ref().map_or(String::new(), |u| format!("{u}@"));
                let port = port.map_or(String::new(), |p| format!(":{p}"));
                format!("ssh://{user}{host}{port}")
            }
            HostKind::Agent { port, .. } => format!("agent://{host}:{port}"),
        }
    }
}

/// One client host of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostSpec {
    /// How the host is shown (unique in the run; default: the address's host part).
    pub name: String,
    /// How it is reached, with the ssh user and port folded in.
    #[serde(flatten)]
    pub kind: HostKind,
    /// ssh: the private key file (`ssh -i`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<PathBuf>,
    /// This host's own working directory (the plan's `dir` on it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
    /// This host's own target (the plan's `target` on it).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "crate::plan::target_url")]
    pub target: Option<Target>,
    /// ssh: the path of ioscope on the host; None: the coordinator copies its own binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bin: Option<PathBuf>,
    /// agent://: the file holding the agent's bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// agent://: a PEM file of the certificate(s) to trust for the agent's TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<PathBuf>,
}

/// What the run does when a host is lost (`on_host_loss`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnHostLoss {
    /// End the run (status failed), keeping every second received.
    #[default]
    Stop,
    /// Keep the other hosts running; the lost host's seconds stop, and the gap is marked.
    Continue,
}

impl OnHostLoss {
    pub fn name(self) -> &'static str {
        match self {
            OnHostLoss::Stop => "stop",
            OnHostLoss::Continue => "continue",
        }
    }
    pub fn is_stop(&self) -> bool {
        *self == OnHostLoss::Stop
    }
}

/// Which part of a many-host plan this plan is (set by [`crate::Plan::for_host`]): host
/// `index` (0-based, in the order given) of `hosts`. Its steps give this host's threads
/// and rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostShare {
    pub index: u32,
    pub hosts: u32,
}

impl HostShare {
    /// Whether the host runs in a step that uses the first `active` hosts (None: all).
    pub fn is_active(&self, active: Option<u32>) -> bool {
        self.index < active.unwrap_or(self.hosts).min(self.hosts)
    }
    /// This host's part of `total` I/Os per second split over the first `active` hosts:
    /// `total / n`, plus one for the first `total % n` hosts, so that the parts add up to
    /// `total` exactly; 0 when the host is not among them.
    pub fn rate_part(&self, total: u64, active: Option<u32>) -> u64 {
        let n = u64::from(active.unwrap_or(self.hosts).min(self.hosts));
        let i = u64::from(self.index);
        if i >= n {
            return 0;
        }
        total / n + u64::from(i < total % n)
    }
}

/// Why an address does not read (the note under the diagnostic; the expected form is
/// [`ADDRESS_EXPECTED`]).
pub type AddressError = String;

/// The forms of a host's address, for diagnostics.
pub const ADDRESS_EXPECTED: &str =
    "[user@]host[:port] or ssh://[user@]host[:port] (started over ssh), or agent://host:port (an agent started with --listen)";

/// Reads an address: `[user@]host[:port]`, `ssh://[user@]host[:port]` or `agent://host:port`
/// (an agent's port may come from the `port` key instead: `port` is None here then).
/// Nothing that could reach ssh as an option (a leading `-`) or a shell word is accepted.
pub fn parse_address(text: &str) -> Result<(HostKind, Option<u16>), AddressError> {
    let t = text.trim();
    if t.is_empty() {
        return Err("the address is empty".into());
    }
    let (scheme, rest) = match t.split_once("://") {
        Some((s, rest)) => (s.to_ascii_lowercase(), rest),
        None => ("ssh".to_string(), t),
    };
    if scheme != "ssh" && scheme != "agent" {
        return Err(format!("`{scheme}://` is not a host transport: ssh:// or agent://"));
    }
    if let Some(i) = rest.find(['/', '?', '#']) {
        return Err(format!("an address has no path or options (`{}`)", &rest[i..]));
    }
    let (user, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    };
    if let Some(u) = user {
        if scheme == "agent" {
            return Err("an agent:// address has no user (the agent checks a bearer token)".into());
        }
        check_user(u)?;
    }
    let (host, port) = split_host_port(hostport)?;
    let kind = match scheme.as_str() {
        "agent" => HostKind::Agent { host, port: port.unwrap_or(0) },
        _ => HostKind::Ssh { user: user.map(str::to_string), host, port },
    };
    Ok((kind, port))
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`, or a bare IPv6 address (no port).
fn split_host_port(s: &str) -> Result<(String, Option<u16>), AddressError> {
    let (host, port) = if let Some(inner) = s.strip_prefix('[') {
        let (h, after) = inner.split_once(']').ok_or("an IPv6 address in brackets needs its `]`")?;
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("`{h}` in brackets is not an IPv6 address"));
        }
        match after {
            "" => (h, None),
            p => (h, Some(p.strip_prefix(':').ok_or(format!("`{p}` after the `]`: expected :PORT"))?)),
        }
    } else if s.matches(':').count() > 1 {
        // A bare IPv6 address: its colons are not a port.
        if s.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("`{s}` is not an IPv6 address (with a port, write it as [ADDR]:PORT)"));
        }
        (s, None)
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    if !host.contains(':') {
        check_host_name(host)?;
    }
    let port = port.map(parse_port).transpose()?;
    Ok((host.to_string(), port))
}

/// A TCP port, 1 to 65535.
pub fn parse_port(p: &str) -> Result<u16, AddressError> {
    match p.trim().parse::<u32>() {
        Ok(n) if (1..=65535).contains(&n) => Ok(n as u16),
        _ => Err(format!("the port `{p}` is not a whole number from 1 to 65535")),
    }
}

/// A host name or IPv4 address: letters, digits, `-`, `.`, `_`, not starting with `-` or
/// `.` (ssh would take `-x` for an option), at most 253 characters.
fn check_host_name(h: &str) -> Result<(), AddressError> {
    if h.is_empty() {
        return Err("the host is empty".into());
    }
    if h.len() > 253 {
        return Err(format!("the host name has {} characters; at most 253", h.len()));
    }
    if h.starts_with(['-', '.']) {
        return Err(format!("the host `{h}` starts with `{}`", &h[..1]));
    }
    if let Some(c) = h.chars().find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))) {
        return Err(format!(
            "the host `{h}` has the character {c:?}: a host name has letters, digits, `-`, `.` and `_`"
        ));
    }
    Ok(())
}

/// A login name: letters, digits, `.`, `_`, `-`, not starting with `-`, at most 64 characters.
pub fn check_user(u: &str) -> Result<(), AddressError> {
    let ok = !u.is_empty()
        && u.len() <= 64
        && !u.starts_with('-')
        && u.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!("the user `{u}` is not a login name (letters, digits, `.`, `_`, `-`; not starting with `-`)"))
    }
}

/// `host_timeout`'s default, for serde.
pub(crate) fn default_host_timeout() -> Duration {
    DEFAULT_HOST_TIMEOUT
}
