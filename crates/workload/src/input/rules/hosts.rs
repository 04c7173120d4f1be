//! Hosts: the many-host run's hosts, and the keys that only mean something with (or without)
//! them.

use super::*;

impl<'a> Ctx<'a> {
    /// Reads the hosts; `on_host_loss` and `host_timeout` need some.
    pub(super) fn run_hosts(&mut self, top: &Top, run: &mut Run) {
        let (engine, target_rule) = (run.engine, run.target_rule);
        let hosts = self.hosts(engine, target_rule);
        let hosts_given = hosts.as_ref().map_or(0, Vec::len);
        // Each host may have its own dir and target, in place of the top-level ones.
        let every_host_has =
            |f: fn(&crate::host::HostSpec) -> bool| hosts.as_ref().is_some_and(|h| !h.is_empty() && h.iter().all(f));
        let (hosts_dirs, hosts_targets) = (every_host_has(|h| h.dir.is_some()), every_host_has(|h| h.target.is_some()));
        if hosts.as_ref().is_some_and(Vec::is_empty) {
            for (g, key) in [(top.on_host_loss.loc(), "on_host_loss"), (top.host_timeout.loc(), "host_timeout")] {
                if !matches!(g, Loc::Default) {
                    let note = format!("`{key}` is about the client hosts of a many-host run, and this run has none");
                    self.err(&g, key, format!("{key} only with hosts ([[host]] tables or --hosts)"), note);
                }
            }
        }
        (run.hosts, run.hosts_given, run.hosts_dirs, run.hosts_targets) =
            (hosts, hosts_given, hosts_dirs, hosts_targets);
    }
}

/// "1 host", "4 hosts".
pub(super) fn hosts_n(n: usize) -> String {
    if n == 1 {
        "1 host".to_string()
    } else {
        format!("{n} hosts")
    }
}
