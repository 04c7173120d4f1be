//! Reading the hosts of a many-host run: `[[host]]` tables, or the `hosts` list
//! (`--hosts`) that replaces them, with the top-level `token_file` and `tls_ca` for the
//! agent:// hosts that name none of their own.

use super::{Ctx, Got, ListItem, Loc, TARGET_EXPECTED};
use crate::host::{check_user, parse_address, HostKind, HostSpec, ADDRESS_EXPECTED, MAX_HOSTS};
use ioscope_engine_table::{Capability, EngineKind, TargetRule};
use std::path::PathBuf;
use toml_edit::Value;

/// One host as read, and where its address and name were written.
struct Read {
    spec: HostSpec,
    address_loc: Loc,
    name_loc: Loc,
    /// The name was given (not the address's host part).
    named: bool,
}

const PATH_EXPECTED: &str = "a file path, like \"/etc/ioscope/token\"";
const LIST_EXPECTED: &str =
    "a list of host addresses, like [\"client1\", \"bench@client2:2222\", \"agent://client3:7070\"] (--hosts client1,client2)";

impl<'a> Ctx<'a> {
    /// The run's hosts (empty: a local run). None when any is wrong (each problem reported).
    pub(super) fn hosts(&mut self, engine: Option<EngineKind>, rule: Option<TargetRule>) -> Option<Vec<HostSpec>> {
        let token_g = self.path_value("token_file");
        let ca_g = self.path_value("tls_ca");
        let tables = self.arrays.get("host").map_or(0, Vec::len);
        let mut read: Vec<Option<Read>> = Vec::new();
        let list_loc = match self.raw("hosts") {
            Some((_, loc)) => {
                if let (Loc::File { .. }, true) = (&loc, tables > 0) {
                    let note = "`hosts` lists the hosts by address alone; [[host]] tables give each its own settings";
                    self.err(&loc, "hosts", "either hosts or [[host]] tables, not both", note);
                }
                read = self.host_list()?;
                Some(loc)
            }
            None => {
                for i in 0..tables {
                    self.current = Some(("host", i));
                    let h = self.host_table(i, engine, rule);
                    self.current = None;
                    read.push(h);
                }
                None
            }
        };
        if read.len() > MAX_HOSTS {
            let loc = list_loc.clone().unwrap_or_else(|| self.host_header(MAX_HOSTS));
            let note = format!("{} hosts are given", read.len());
            self.err(&loc, "hosts", format!("at most {MAX_HOSTS} hosts"), note);
            return None;
        }
        let mut ok = read.iter().all(Option::is_some);
        let mut hosts: Vec<Read> = read.into_iter().flatten().collect();
        // The top-level token and CA are for the agent:// hosts without their own.
        let agents = hosts.iter().any(|h| matches!(h.spec.kind, HostKind::Agent { .. }));
        for (g, key) in [(&token_g, "token_file"), (&ca_g, "tls_ca")] {
            if let (Got::Ok(_, loc), false, true) = (g, agents, ok) {
                let note = "it is for hosts reached at an agent://host:port address (an agent started with --listen), and there are none";
                self.err(loc, key, format!("{key} only with agent:// hosts"), note);
            }
        }
        if matches!(token_g, Got::Bad) || matches!(ca_g, Got::Bad) {
            ok = false;
        }
        for h in &mut hosts {
            if let HostKind::Agent { .. } = h.spec.kind {
                if let (None, Got::Ok(t, _)) = (&h.spec.token_file, &token_g) {
                    h.spec.token_file = Some(t.clone());
                }
                if let (None, Got::Ok(c, _)) = (&h.spec.ca, &ca_g) {
                    h.spec.ca = Some(c.clone());
                }
                if h.spec.token_file.is_none() && !matches!(token_g, Got::Bad) {
                    let note = format!(
                        "the agent at {} refuses calls without its bearer token: set token_file in its [[host]], or --token-file",
                        h.spec.kind.address()
                    );
                    let loc = h.address_loc.clone();
                    self.err(&loc, "token_file", "a token file for every agent:// host", note);
                    ok = false;
                }
            }
        }
        // Default names that clash (agents on one machine) take their port.
        let clashes: Vec<bool> =
            hosts.iter().map(|h| !h.named && hosts.iter().filter(|o| o.spec.name == h.spec.name).count() > 1).collect();
        for (h, clash) in hosts.iter_mut().zip(clashes) {
            let port = match &h.spec.kind {
                HostKind::Agent { port, .. } => Some(*port),
                HostKind::Ssh { port, .. } => *port,
            };
            if let (true, Some(port)) = (clash, port) {
                h.spec.name = format!("{}:{port}", h.spec.name);
            }
        }
        // Names tell the hosts apart everywhere in the results.
        for i in 0..hosts.len() {
            if let Some(j) = hosts[..i].iter().position(|o| o.spec.name == hosts[i].spec.name) {
                let note = format!(
                    "host {} ({}) is also named `{}`: give each host its own name",
                    j + 1,
                    hosts[j].spec.kind.address(),
                    hosts[i].spec.name
                );
                let loc = hosts[i].name_loc.clone();
                self.err(&loc, "host.name", "a name no other host has", note);
                ok = false;
            }
        }
        ok.then(|| hosts.into_iter().map(|h| h.spec).collect())
    }

    /// The header of `[[host]]` number `i` (0-based), to point at.
    fn host_header(&self, i: usize) -> Loc {
        let header = self.arrays.get("host").and_then(|a| a.get(i)).and_then(|(s, _)| s.clone());
        header.map_or(Loc::Default, |s| self.file_loc(s))
    }

    /// The `hosts` list: addresses only, each with the defaults.
    fn host_list(&mut self) -> Option<Vec<Option<Read>>> {
        let (items, loc) = self.list_items("hosts", LIST_EXPECTED, true)?;
        let mut out = Vec::new();
        let mut pieces: Vec<(&str, Loc)> = Vec::new();
        for (item, iloc) in &items {
            match item {
                ListItem::Text(t) => pieces.push((t, iloc.clone())),
                ListItem::Toml(Value::String(s)) => {
                    pieces.extend(s.value().split(',').map(|p| (p.trim(), iloc.clone())));
                }
                ListItem::Toml(_) => {
                    self.err(iloc, "hosts", LIST_EXPECTED, "each host is a string");
                    out.push(None);
                }
            }
        }
        if pieces.is_empty() && out.is_empty() {
            self.err(&loc, "hosts", LIST_EXPECTED, "the list is empty");
            return None;
        }
        for (text, iloc) in pieces {
            let read = match parse_address(text) {
                Ok((HostKind::Agent { .. }, None)) => {
                    let note = format!("`{text}` has no port: an agent's address is agent://HOST:PORT");
                    self.err(&iloc, "hosts", ADDRESS_EXPECTED, note);
                    None
                }
                Ok((kind, _)) => Some(Read {
                    spec: HostSpec {
                        name: kind.host().to_string(),
                        kind,
                        identity: None,
                        dir: None,
                        target: None,
                        bin: None,
                        token_file: None,
                        ca: None,
                    },
                    address_loc: iloc.clone(),
                    name_loc: iloc,
                    named: false,
                }),
                Err(note) => {
                    self.err(&iloc, "hosts", ADDRESS_EXPECTED, note);
                    None
                }
            };
            out.push(read);
        }
        Some(out)
    }

    /// One `[[host]]` table (keys "host.*" of entry `i`).
    fn host_table(&mut self, i: usize, engine: Option<EngineKind>, rule: Option<TargetRule>) -> Option<Read> {
        let address_g = self.text_value("host.address", ADDRESS_EXPECTED);
        let name_g = self.text_value("host.name", "a name like \"client1\" (at most 64 characters, no `/`)");
        let user_g = self.text_value("host.user", "a login name like \"bench\"");
        let port_g = self.int("host.port", 1, 65535);
        let identity_g = self.path_value("host.identity");
        let dir_g = self.dir("host.dir");
        let target_g = self.text_value("host.target", TARGET_EXPECTED);
        let bin_g = self.path_value("host.bin");
        let token_g = self.path_value("host.token_file");
        let ca_g = self.path_value("host.ca");
        let (text, address_loc) = match &address_g {
            Got::Ok(t, loc) => (t.clone(), loc.clone()),
            Got::Bad => return None,
            Got::Absent => {
                let loc = self.host_header(i);
                self.err(
                    &loc,
                    "host.address",
                    format!("an address in each [[host]]: {ADDRESS_EXPECTED}"),
                    "`host.address` is missing",
                );
                return None;
            }
        };
        let (mut kind, port_in_address) = match parse_address(&text) {
            Ok(k) => k,
            Err(note) => {
                self.err(&address_loc, "host.address", ADDRESS_EXPECTED, note);
                return None;
            }
        };
        let mut ok = true;
        // `user` and `port` complete the address; they may repeat it, never contradict it.
        if let Got::Ok(u, loc) = &user_g {
            match (&mut kind, check_user(u)) {
                (_, Err(note)) => {
                    self.err(loc, "host.user", "a login name like \"bench\"", note);
                    ok = false;
                }
                (HostKind::Ssh { user: Some(given), .. }, _) if given != u => {
                    let note = format!("the address already names the user `{given}`");
                    self.err(loc, "host.user", format!("the address's user, {given}, or no user"), note);
                    ok = false;
                }
                (HostKind::Ssh { user, .. }, _) => *user = Some(u.clone()),
                (HostKind::Agent { .. }, _) => {}
            }
        }
        if let Got::Ok(p, loc) = &port_g {
            let p = *p as u16;
            match (&mut kind, port_in_address) {
                (_, Some(given)) if given != p => {
                    let note = format!("the address already gives the port {given}");
                    self.err(loc, "host.port", format!("the address's port, {given}, or no port"), note);
                    ok = false;
                }
                (HostKind::Ssh { port, .. }, _) => *port = Some(p),
                (HostKind::Agent { port, .. }, _) => *port = p,
            }
        }
        if matches!(port_g, Got::Bad) {
            ok = false;
        }
        if let (HostKind::Agent { .. }, None, Got::Absent) = (&kind, port_in_address, &port_g) {
            let note = "an agent listens on a port of its own (ioscope agent --listen ADDR:PORT): give it in the address or as `port`";
            self.err(&address_loc, "host.address", "agent://HOST:PORT", note);
            ok = false;
        }
        // Some keys belong to one transport.
        let only = [
            (user_g.loc(), "host.user", false),
            (identity_g.loc(), "host.identity", false),
            (bin_g.loc(), "host.bin", false),
            (token_g.loc(), "host.token_file", true),
            (ca_g.loc(), "host.ca", true),
        ];
        ok &= self.transport_keys(&kind, only);
        // A target of its own is where this host's engine works.
        let mut target = None;
        if let Got::Ok(url, loc) = &target_g {
            match rule {
                Some(rule) => match (rule.parse)(url) {
                    Ok(t) => target = Some(t),
                    Err(e) => {
                        self.err(loc, "host.target", rule.expected, e.0);
                        ok = false;
                    }
                },
                None => {
                    let with = Capability::Target.engines_with();
                    let note = format!(
                        "a target is where engine {with} works, and the engine is {}",
                        engine.map_or("posix", |e| e.name())
                    );
                    self.err(loc, "host.target", format!("a target only with engine = \"{with}\""), note);
                    ok = false;
                }
            }
        }
        let name = match &name_g {
            // The name is also the host's own directory under a shared dir or target.
            Got::Ok(n, loc)
                if n.chars().count() > 64 || n.chars().any(|c| c.is_control() || c == '/') || n == "." || n == ".." =>
            {
                let note = "the name is also the host's own directory under a dir or target the hosts share";
                self.err(
                    loc,
                    "host.name",
                    "a name of at most 64 characters, without `/` or control characters, other than . and ..",
                    note,
                );
                None
            }
            _ => name_g.or(kind.host().to_string()),
        };
        let named = !matches!(name_g.loc(), Loc::Default);
        let name_loc = match name_g.loc() {
            Loc::Default => address_loc.clone(),
            l => l,
        };
        let spec = HostSpec {
            name: name?,
            identity: optional(&identity_g)?,
            dir: optional(&dir_g)?,
            target,
            bin: optional(&bin_g)?,
            token_file: optional(&token_g)?,
            ca: optional(&ca_g)?,
            kind,
        };
        (ok && !matches!(target_g, Got::Bad) && !matches!(user_g, Got::Bad)).then_some(Read {
            spec,
            address_loc,
            name_loc,
            named,
        })
    }

    /// Keys of one transport (`(where, key, for agents)`) set in a host of the other: false
    /// (after reporting) when any is.
    fn transport_keys(&mut self, kind: &HostKind, only: [(Loc, &str, bool); 5]) -> bool {
        let agent = matches!(kind, HostKind::Agent { .. });
        let mut ok = true;
        for (loc, key, for_agents) in only {
            if matches!(loc, Loc::Default) || for_agents == agent {
                continue;
            }
            let (expected, note) = if for_agents {
                (
                    "only in an agent:// host",
                    format!("{} is started over ssh, which needs no token or CA", kind.address()),
                )
            } else {
                (
                    "only in a host started over ssh",
                    format!("{} is an agent already running (agent://)", kind.address()),
                )
            };
            self.err(&loc, key, expected, note);
            ok = false;
        }
        ok
    }

    /// A file path (not empty, no NUL).
    fn path_value(&mut self, key: &str) -> Got<PathBuf> {
        match self.text_value(key, PATH_EXPECTED) {
            Got::Ok(s, loc) => Got::Ok(PathBuf::from(s), loc),
            Got::Absent => Got::Absent,
            Got::Bad => Got::Bad,
        }
    }
}

/// An optional value: Some(None) when absent, None when bad.
fn optional<T: Clone>(g: &Got<T>) -> Option<Option<T>> {
    match g {
        Got::Ok(v, _) => Some(Some(v.clone())),
        Got::Absent => Some(None),
        Got::Bad => None,
    }
}
