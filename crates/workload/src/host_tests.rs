//! Many-host workloads as a user meets them: `[[host]]` tables and `--hosts`, the errors
//! that point at the host at fault, the hosts staircase, and the part each host runs.

use crate::*;
use std::path::PathBuf;
use std::time::Duration;

fn src(text: &str) -> SourceFile {
    SourceFile { path: PathBuf::from("job.toml"), text: text.to_string() }
}

fn plan_with(text: &str, flags: &Flags) -> Plan {
    build_plan(Some(&src(text)), flags).unwrap_or_else(|d| panic!("expected a plan, got:\n{}", render_diagnostics(&d)))
}

fn plan(text: &str) -> Plan {
    plan_with(text, &Flags::default())
}

fn errors_with(text: &str, flags: &Flags) -> Vec<Diagnostic> {
    match build_plan(Some(&src(text)), flags) {
        Ok(p) => panic!("expected errors, got {p:?}"),
        Err(d) => d,
    }
}

/// The one diagnostic of `text`, with its (line, col).
fn one_error(text: &str) -> (Diagnostic, (usize, usize)) {
    let d = errors_with(text, &Flags::default());
    assert_eq!(d.len(), 1, "{}", render_diagnostics(&d));
    let d = d.into_iter().next().unwrap();
    let pos = match &d.origin {
        Origin::File { line, col, .. } => (*line, *col),
        _ => panic!("expected a file diagnostic, got {d}"),
    };
    (d, pos)
}

const NULL: &str = "engine = \"null\"\n";

/// Four ssh hosts, c1..c4.
fn four_hosts() -> String {
    (1..=4).map(|i| format!("\n[[host]]\naddress = \"c{i}\"\n")).collect()
}

#[test]
fn host_tables_are_read_with_their_ssh_and_agent_settings() {
    let p = plan(&format!(
        "{NULL}dir = \"/tmp/x\"\n\
         [[host]]\naddress = \"bench@client1:2222\"\nidentity = \"/k\"\nbin = \"/usr/bin/ioscope\"\ndir = \"/mnt/a\"\n\
         [[host]]\naddress = \"ssh://client2\"\nuser = \"ops\"\nport = 22\nname = \"second\"\n\
         [[host]]\naddress = \"agent://[fd00::7]:7070\"\ntoken_file = \"/t\"\nca = \"/ca.pem\"\n"
    ));
    assert_eq!(p.hosts.len(), 3);
    let h = &p.hosts[0];
    assert_eq!(h.kind, HostKind::Ssh { user: Some("bench".into()), host: "client1".into(), port: Some(2222) });
    assert_eq!(
        (h.name.as_str(), h.identity.as_deref(), h.bin.as_deref()),
        ("client1", Some("/k".as_ref()), Some("/usr/bin/ioscope".as_ref()))
    );
    assert_eq!(h.dir.as_deref(), Some("/mnt/a".as_ref()));
    assert_eq!(p.hosts[1].kind, HostKind::Ssh { user: Some("ops".into()), host: "client2".into(), port: Some(22) });
    assert_eq!(p.hosts[1].name, "second");
    assert_eq!(p.hosts[2].kind, HostKind::Agent { host: "fd00::7".into(), port: 7070 });
    assert_eq!(p.hosts[2].kind.address(), "agent://[fd00::7]:7070");
    assert_eq!(p.hosts[2].name, "fd00::7");
    assert_eq!(p.hosts[2].token_file.as_deref(), Some("/t".as_ref()));
    assert_eq!(p.on_host_loss, OnHostLoss::Stop);
    assert_eq!(p.host_timeout, Duration::from_secs(10));
    // A run without hosts is local, as before.
    assert!(plan(NULL).hosts.is_empty());
}

#[test]
fn the_hosts_flag_replaces_the_files_host_tables_and_takes_the_token_for_agents() {
    let file = format!("{NULL}{}", four_hosts());
    let flags = Flags::default()
        .with("hosts", "ssh://u@h1:2200, h2,agent://h3:7000")
        .with("token-file", "/run/token")
        .with("tls-ca", "/ca.pem");
    let p = plan_with(&file, &flags);
    let names: Vec<&str> = p.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["h1", "h2", "h3"]);
    assert_eq!(p.hosts[0].kind.address(), "ssh://u@h1:2200");
    assert_eq!(p.hosts[2].token_file.as_deref(), Some("/run/token".as_ref()));
    assert_eq!(p.hosts[2].ca.as_deref(), Some("/ca.pem".as_ref()));
    // ssh hosts need no token.
    assert_eq!(p.hosts[0].token_file, None);
    // In a file, `hosts` is a list (or one comma-separated string).
    let p = plan(&format!("{NULL}hosts = [\"a\", \"b,c\"]\n"));
    assert_eq!(p.hosts.len(), 3);
}

#[test]
fn a_host_without_an_address_is_refused_at_its_table() {
    let (d, pos) = one_error(&format!("{NULL}\n[[host]]\nname = \"x\"\n"));
    assert_eq!(d.key, "host.address");
    assert_eq!(pos, (3, 1));
    assert!(d.expected.contains("[user@]host[:port]"), "{d}");
    assert!(d.message.contains("missing"), "{d}");
}

#[test]
fn a_bad_port_is_refused_where_it_is_written_with_the_expected_form() {
    let (d, pos) = one_error(&format!("{NULL}[[host]]\naddress = \"c1:70000\"\n"));
    assert_eq!((d.key.as_str(), pos), ("host.address", (3, 11)));
    assert!(d.message.contains("the port `70000` is not a whole number from 1 to 65535"), "{d}");
    let (d, pos) = one_error(&format!("{NULL}[[host]]\naddress = \"c1\"\nport = 0\n"));
    assert_eq!((d.key.as_str(), pos), ("host.port", (4, 8)));
    assert_eq!(d.expected, "a whole number from 1 to 65535");
    // The port key may repeat the address's port, never contradict it.
    let (d, _) = one_error(&format!("{NULL}[[host]]\naddress = \"c1:22\"\nport = 2222\n"));
    assert!(d.message.contains("the address already gives the port 22"), "{d}");
    // An agent has no default port.
    let (d, pos) = one_error(&format!("{NULL}[[host]]\naddress = \"agent://c1\"\ntoken_file = \"/t\"\n"));
    assert_eq!((d.expected.as_str(), pos), ("agent://HOST:PORT", (3, 11)));
}

#[test]
fn addresses_that_ssh_could_take_for_an_option_are_refused() {
    for bad in ["-oProxyCommand=x", "c1;rm", "ssh://c1/path", "ftp://c1", "-u@c1", "c1:", "[::1", "a b"] {
        let text = format!("{NULL}[[host]]\naddress = \"{bad}\"\n");
        let (d, pos) = one_error(&text);
        assert_eq!((d.key.as_str(), pos), ("host.address", (3, 11)), "{bad}: {d}");
    }
    let d = errors_with(NULL, &Flags::default().with("hosts", "c1,-oX"));
    assert_eq!(d.len(), 1, "{}", render_diagnostics(&d));
    assert!(d[0].message.contains("starts with `-`"), "{}", d[0]);
}

#[test]
fn duplicate_host_names_are_refused_naming_the_first() {
    let text = format!("{NULL}[[host]]\naddress = \"c1\"\n[[host]]\naddress = \"bench@c1\"\n");
    let (d, pos) = one_error(&text);
    assert_eq!((d.key.as_str(), pos), ("host.name", (5, 11)));
    assert!(d.message.contains("host 1 (ssh://c1) is also named `c1`"), "{d}");
    // A name of its own tells them apart.
    let p = plan(&format!("{text}name = \"c1-bench\"\n"));
    assert_eq!(p.hosts[1].name, "c1-bench");
    // Names given twice point at the second.
    let (d, pos) =
        one_error(&format!("{NULL}[[host]]\naddress = \"a\"\nname = \"x\"\n[[host]]\naddress = \"b\"\nname = \"x\"\n"));
    assert_eq!((d.key.as_str(), pos), ("host.name", (7, 8)));
    // Default names that clash (agents on one machine, ssh on other ports) take their port.
    let p = plan_with(
        NULL,
        &Flags::default().with("hosts", "agent://c1:7000,agent://c1:7001,c2,c2:2222").with("token-file", "/t"),
    );
    let names: Vec<&str> = p.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["c1:7000", "c1:7001", "c2", "c2:2222"]);
    // A name is also a directory name.
    for bad in ["a/b", "..", "x\\u0007"] {
        let (d, pos) = one_error(&format!("{NULL}[[host]]\naddress = \"a\"\nname = \"{bad}\"\n"));
        assert_eq!((d.key.as_str(), pos), ("host.name", (4, 8)), "{bad}");
    }
}

#[test]
fn transport_keys_are_refused_on_the_other_transport() {
    let (d, pos) = one_error(&format!("{NULL}[[host]]\naddress = \"c1\"\ntoken_file = \"/t\"\n"));
    assert_eq!((d.key.as_str(), pos), ("host.token_file", (4, 14)));
    assert_eq!(d.expected, "only in an agent:// host");
    let (d, _) = one_error(&format!("{NULL}[[host]]\naddress = \"agent://c1:7\"\ntoken_file = \"/t\"\nbin = \"/b\"\n"));
    assert_eq!(d.key, "host.bin");
    // An agent needs its token: from its table or --token-file.
    let (d, pos) = one_error(&format!("{NULL}[[host]]\naddress = \"agent://c1:7\"\n"));
    assert_eq!((d.key.as_str(), pos), ("token_file", (3, 11)));
    assert!(d.message.contains("--token-file"), "{d}");
    let d = errors_with(NULL, &Flags::default().with("hosts", "c1").with("token-file", "/t"));
    assert_eq!(d.len(), 1, "{}", render_diagnostics(&d));
    assert_eq!(d[0].expected, "token_file only with agent:// hosts");
}

#[test]
fn on_host_loss_and_host_timeout_without_hosts_are_refused_naming_the_key() {
    let (d, pos) = one_error(&format!("{NULL}on_host_loss = \"continue\"\n"));
    assert_eq!((d.key.as_str(), pos), ("on_host_loss", (2, 16)));
    assert!(d.expected.contains("only with hosts"), "{d}");
    let d = errors_with(NULL, &Flags::default().with("host-timeout", "30s"));
    assert_eq!((d.len(), d[0].key.as_str()), (1, "host_timeout"));
    assert!(matches!(&d[0].origin, Origin::Flag { flag } if flag == "--host-timeout"), "{}", d[0]);
    // With hosts, both are read.
    let p = plan_with(
        NULL,
        &Flags::default().with("hosts", "a,b").with("on-host-loss", "continue").with("host-timeout", "30s"),
    );
    assert_eq!((p.on_host_loss, p.host_timeout), (OnHostLoss::Continue, Duration::from_secs(30)));
    let d = errors_with(NULL, &Flags::default().with("hosts", "a").with("on-host-loss", "pause"));
    assert_eq!(d[0].expected, "one of: stop, continue");
    let d = errors_with(NULL, &Flags::default().with("hosts", "a").with("host-timeout", "2h"));
    assert_eq!(d[0].expected, "a duration from 1s to 1h, like 10s");
}

#[test]
fn a_hosts_staircase_needs_hosts_and_its_last_step_uses_every_host() {
    let (d, pos) = one_error(&format!("{NULL}staircase = \"hosts:1-4/60s\"\n"));
    assert_eq!((d.key.as_str(), pos), ("staircase", (2, 13)));
    assert!(d.expected.contains("with hosts ([[host]] tables or --hosts)"), "{d}");
    // 1, 3: the fourth host would never run.
    let (d, _) = one_error(&format!("{NULL}staircase = \"hosts:1-4+2/60s\"\n{}", four_hosts()));
    assert!(d.message.contains("its last step uses 3 of the 4 hosts, so c4 would never run"), "{d}");
    let (d, _) = one_error(&format!("{NULL}staircase = \"hosts:1-3/60s\"\n{}", four_hosts()));
    assert!(d.message.contains("so c4 would never run"), "{d}");
    let (d, _) = one_error(&format!("{NULL}staircase = \"hosts:1-5/60s\"\n{}", four_hosts()));
    assert_eq!(d.expected, "at most 4 hosts (the run's hosts)");
    // A run steps one count at a time.
    let (d, _) = one_error(&format!("{NULL}staircase = \"hosts:1-4/60s\"\nfor_threads = [1, 2]\n{}", four_hosts()));
    assert_eq!(d.expected, "either staircase or for_threads, not both");
    // The flag, with 2, 4 ... 8 hosts.
    let hosts = "a,b,c,d,e,f,g,h";
    let p = plan_with(NULL, &Flags::default().with("hosts", hosts).with("staircase", "hosts:2-8+2/30s"));
    let steps = p.steps();
    assert_eq!(steps.iter().map(|s| s.hosts).collect::<Vec<_>>(), [Some(2), Some(4), Some(6), Some(8)]);
    assert_eq!(steps[0].label(), "hosts=2");
    assert_eq!((steps[0].threads, steps[0].duration), (None, Duration::from_secs(30)));
    assert_eq!(p.total_duration(), Duration::from_secs(120));
}

#[test]
fn for_host_idles_a_host_through_the_steps_before_it_joins() {
    let p = plan(&format!("{NULL}threads = 3\nstaircase = \"hosts:1-4/10s\"\n{}", four_hosts()));
    for (i, host) in (0..4).map(|i| (i, p.for_host(i))) {
        assert!(host.hosts.is_empty());
        let threads: Vec<u32> = host.steps().iter().map(|s| s.threads_of(&host.workloads[0])).collect();
        let want: Vec<u32> = (0..4).map(|step| if i <= step { 3 } else { 0 }).collect();
        assert_eq!(threads, want, "host {i}");
        // Every host has every step, so its seconds line up with the others'.
        assert_eq!(host.total_duration(), p.total_duration());
        assert_eq!(host.max_threads(), [3]);
    }
}

#[test]
fn for_host_splits_a_fixed_rate_so_the_parts_add_up_exactly() {
    let p = plan(&format!("{NULL}rate_iops = 1003\nstaircase = \"hosts:1-4/10s\"\n{}", four_hosts()));
    let parts: Vec<Vec<u64>> = (0..4)
        .map(|i| {
            p.for_host(i)
                .steps()
                .iter()
                .map(|s| match s.rate {
                    Rate::Fixed(r) => r,
                    r => panic!("{r:?}"),
                })
                .collect()
        })
        .collect();
    // Step k runs k + 1 hosts: 1003, 502 + 501, 335 + 334 + 334, 251 + 251 + 251 + 250.
    let by_step: Vec<Vec<u64>> = (0..4).map(|k| parts.iter().map(|h| h[k]).collect()).collect();
    assert_eq!(by_step, [vec![1003, 0, 0, 0], vec![502, 501, 0, 0], vec![335, 334, 334, 0], vec![251, 251, 251, 250]]);
    for step in &by_step {
        assert_eq!(step.iter().sum::<u64>(), 1003);
    }
    // A curve stays a percentage, of each host's own max step.
    let p = plan(&format!("{NULL}curve = [50]\n{}", four_hosts()));
    let steps = p.for_host(2).steps();
    assert_eq!(steps[1].rate, Rate::Curve { pct: 50, of_step: 0 });
    // The rate is over all hosts: each thread of each host needs 1 I/O per second.
    let (d, _) = one_error(&format!("{NULL}threads = 2\nrate_iops = 7\n{}", four_hosts()));
    assert_eq!(d.expected, "at least 8 (1 IOPS per thread)");
    assert!(d.message.contains("(2 on each of 4 hosts)"), "{d}");
    // A hosts staircase steps hosts, not threads: 1 thread on each of 4 hosts needs 4.
    let p = plan(&format!("{NULL}rate_iops = 4\nstaircase = \"hosts:1-4/1s\"\n{}", four_hosts()));
    assert_eq!(p.for_host(3).steps()[3].rate, Rate::Fixed(1));
}

#[test]
fn for_host_applies_the_hosts_own_dir_and_target() {
    let p = plan(
        "dir = \"/mnt/all\"\n[dataset]\ndir = \"/mnt/all/tree\"\n[[workload]]\noperation = \"read\"\n\
         [[host]]\naddress = \"c1\"\ndir = \"/data/c1\"\n[[host]]\naddress = \"c2\"\n",
    );
    let h0 = p.for_host(0);
    assert_eq!(h0.dir, PathBuf::from("/data/c1"));
    assert_eq!(h0.dataset.as_ref().unwrap().dir, PathBuf::from("/data/c1/tree"));
    assert_eq!(h0.host_share, Some(HostShare { index: 0, hosts: 2 }));
    assert_eq!(p.for_host(1).dir, PathBuf::from("/mnt/all"));
    // Every host with its own dir: no top-level dir is needed.
    let p = plan("[[host]]\naddress = \"c1\"\ndir = \"/a\"\n[[host]]\naddress = \"c2\"\ndir = \"/b\"\n");
    assert_eq!(p.for_host(1).dir, PathBuf::from("/b"));
    assert_eq!(plan(&to_toml(&p)), p);
    // NFS: each host's own target (a dataset under the top-level target moves with it).
    let p = plan(
        "engine = \"nfs\"\ntarget = \"nfs://srv/export/all\"\n[dataset]\ndir = \"tree\"\n[[workload]]\noperation = \"create\"\n\
         [[host]]\naddress = \"c1\"\ntarget = \"nfs://srv/export/c1\"\n",
    );
    let h = p.for_host(0);
    assert_eq!(h.target.as_ref().map(|t| t.url.as_str()), Some("nfs://srv/export/c1"));
    assert_eq!(h.dataset.as_ref().unwrap().dir, PathBuf::from("nfs://srv/export/c1/tree"));
    // Every host with its own target and no dataset: no top-level target is needed.
    let p = plan("engine = \"nfs\"\n[[host]]\naddress = \"c1\"\ntarget = \"nfs://srv/e/1\"\n");
    assert!(p.target.is_none());
    assert_eq!(p.for_host(0).target.map(|t| t.url), Some("nfs://srv/e/1".to_string()));
    assert_eq!(plan(&to_toml(&p)), p);
    // A target of its own only where the engine has targets.
    let (d, _) = one_error("dir = \"/x\"\n[[host]]\naddress = \"c1\"\ntarget = \"nfs://srv/e\"\n");
    assert_eq!(d.key, "host.target");
}

#[test]
fn a_hosts_plan_serializes_and_its_canonical_form_reads_back_the_same() {
    let text = format!(
        "{NULL}rate_iops = 100\nstaircase = \"hosts:1-2/5s\"\non_host_loss = \"continue\"\nhost_timeout = \"20s\"\n\
         [[host]]\naddress = \"ops@c1:2222\"\nidentity = \"/k\"\ndir = \"/d\"\nbin = \"/b\"\n\
         [[host]]\naddress = \"agent://[::1]:7070\"\nname = \"local\"\ntoken_file = \"/t\"\nca = \"/ca\"\n"
    );
    let p = plan(&text);
    let canonical = to_toml(&p);
    assert!(canonical.contains("staircase = \"hosts:1-2+1/5s\""), "{canonical}");
    assert!(canonical.contains("address = \"ssh://ops@c1:2222\""), "{canonical}");
    assert_eq!(plan(&canonical), p);
    // The plan each host runs is stored as JSON in the results, and read back as it was.
    for i in 0..2 {
        let part = p.for_host(i);
        let json = serde_json::to_string(&part).unwrap();
        let back: Plan = serde_json::from_str(&json).unwrap();
        assert_eq!(back, part);
        assert_eq!(back.steps(), part.steps());
    }
    let json = serde_json::to_string(&p).unwrap();
    assert_eq!(serde_json::from_str::<Plan>(&json).unwrap(), p);
    // A local plan's JSON has none of the host fields (results files read as before).
    let local = serde_json::to_string(&plan(NULL)).unwrap();
    assert!(!local.contains("hosts") && !local.contains("host_share"), "{local}");
}

#[test]
fn set_reaches_every_host_table_and_wants_one() {
    let p = plan_with(
        &format!("{NULL}{}", four_hosts()),
        &Flags { sets: vec!["host.port=2200".into()], ..Flags::default() },
    );
    assert!(p.hosts.iter().all(|h| matches!(h.kind, HostKind::Ssh { port: Some(2200), .. })));
    let d = errors_with(NULL, &Flags { sets: vec!["host.port=2200".into()], ..Flags::default() });
    assert!(d[0].message.contains("no [[host]] section"), "{}", d[0]);
}
