//! `ioscope run --probe WHERE`: where target-side samplers run beside the load (this
//! machine, or an agent reached over ssh), and which processes they follow.

use crate::cli::ProbeFlags;
use crate::{Failure, Kind};

/// Where one probe runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Where {
    /// This machine, in the ioscope process itself.
    Local,
    /// An agent started over ssh (`ssh://[USER@]HOST[:PORT]`).
    Ssh { user: Option<String>, host: String, port: Option<u16> },
}

/// The probes of a run.
#[derive(Clone, Debug, Default)]
pub struct Probes {
    pub at: Vec<Where>,
    /// Process names (comm) the samplers follow.
    pub processes: Vec<String>,
}

/// The kernel keeps a process's name (comm) to 15 bytes.
const COMM_BYTES: usize = 15;

impl Probes {
    /// Checks `--probe` and `--probe-process` (exit 2 naming the flag and the expected form).
    pub fn parse(flags: &ProbeFlags) -> Result<Probes, Failure> {
        let mut at = Vec::new();
        for w in &flags.at {
            let parsed = Where::parse(w).ok_or_else(|| {
                Failure::said(
                    Kind::InvalidInput,
                    format!("--probe {w:?}: expected local or ssh://[USER@]HOST[:PORT] (docs/probe.md)"),
                )
            })?;
            if at.contains(&parsed) {
                return Err(Failure::said(Kind::InvalidInput, format!("--probe {w:?} is given twice")));
            }
            at.push(parsed);
        }
        let processes = process_names(&flags.processes, "--probe-process")?;
        if !flags.processes.is_empty() && at.is_empty() {
            return Err(Failure::said(Kind::InvalidInput, "--probe-process needs --probe local or --probe ssh://HOST"));
        }
        Ok(Probes { at, processes })
    }

    /// The samplers of `--probe local`, ready to start at the run's time zero; says once on
    /// stderr when eBPF samplers cannot be used.
    pub fn local(&self, quiet: bool) -> Option<ioscope_probe::Probe> {
        if !self.at.contains(&Where::Local) {
            return None;
        }
        let cfg =
            ioscope_probe::ProbeConfig { host: ioscope_exec::host::hostname(), processes: self.processes.clone() };
        let probe = ioscope_probe::Probe::new(cfg);
        if let (Some(why), false) = (&probe.kernel_unavailable, quiet) {
            eprintln!("probe: {why}; recording the procfs statistics only");
        }
        Some(probe)
    }

    /// Every probe, reached and loaded before the run (a host that cannot be reached fails
    /// the run before any I/O).
    pub fn feeds(&self, quiet: bool) -> Result<Vec<Box<dyn ioscope_exec::TargetFeed>>, Failure> {
        let mut feeds: Vec<Box<dyn ioscope_exec::TargetFeed>> = Vec::new();
        if let Some(p) = self.local(quiet) {
            feeds.push(Box::new(ioscope_exec::LocalProbe::new(p)));
        }
        for w in &self.at {
            let Where::Ssh { user, host, port } = w else { continue };
            if !quiet {
                eprintln!("probe: reaching {host} over ssh");
            }
            let remote = ioscope_hosts::remote_probe::RemoteProbe::connect(user.clone(), host, *port, &self.processes)
                .map_err(|e| Failure::said(Kind::RunFailed, format!("--probe ssh://{host}: {e}")))?;
            if let (Some(why), false) = (remote.kernel_unavailable(), quiet) {
                eprintln!("probe {host}: {why}; recording the procfs statistics only");
            }
            feeds.push(Box::new(remote));
        }
        Ok(feeds)
    }
}

/// Checks process names given with `flag` as /proc/PID/comm shows them (cut to 15 bytes);
/// none: the usual servers ([`ioscope_probe::DEFAULT_PROCESSES`]).
pub fn process_names(names: &[String], flag: &str) -> Result<Vec<String>, Failure> {
    if names.is_empty() {
        return Ok(ioscope_probe::DEFAULT_PROCESSES.iter().map(|p| p.to_string()).collect());
    }
    let mut out = Vec::new();
    for p in names {
        if p.is_empty() || p.contains('/') || p.chars().any(char::is_control) {
            return Err(Failure::said(
                Kind::InvalidInput,
                format!("{flag} {p:?}: expected a process name as in /proc/PID/comm (ganesha.nfsd)"),
            ));
        }
        let mut end = p.len().min(COMM_BYTES);
        while !p.is_char_boundary(end) {
            end -= 1;
        }
        out.push(p[..end].to_string());
    }
    Ok(out)
}

impl Where {
    fn parse(s: &str) -> Option<Where> {
        if s == "local" {
            return Some(Where::Local);
        }
        let rest = s.strip_prefix("ssh://")?.trim_end_matches('/');
        let (user, hostport) = match rest.rsplit_once('@') {
            Some((u, h)) if !u.is_empty() => (Some(u.to_string()), h),
            Some(_) => return None,
            None => (None, rest),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p.parse::<u16>().ok().filter(|p| *p > 0)?)),
            _ => (hostport, None),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let fine = !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || "-._:".contains(c));
        fine.then(|| Where::Ssh { user, host: host.to_string(), port })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_places_are_local_or_ssh_urls_and_nothing_else() {
        assert_eq!(Where::parse("local"), Some(Where::Local));
        assert_eq!(
            Where::parse("ssh://root@10.0.0.2:2222"),
            Some(Where::Ssh { user: Some("root".into()), host: "10.0.0.2".into(), port: Some(2222) })
        );
        assert_eq!(Where::parse("ssh://server"), Some(Where::Ssh { user: None, host: "server".into(), port: None }));
        for bad in ["", "remote", "ssh://", "ssh://@h", "ssh://h:0", "ssh://h:x", "ssh://h;rm -rf", "http://h"] {
            assert_eq!(Where::parse(bad), None, "{bad}");
        }
    }
}
