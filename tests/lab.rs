//! The many-host lab itself (scripts/hosts-lab.sh, tests/common/lab.rs), checked before
//! the many-host tests stand on it: real ssh logins into four network namespaces, the NFS
//! server reachable from each, a shaped link that is really slower, a link taken down,
//! and a lab put back as it started after each test. Needs root: scripts/test.sh runs
//! these with `--ignored`.

mod common;
mod skip;

use common::lab::Lab;
use std::collections::BTreeSet;
use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

fn ok(what: &str, out: Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{what} failed ({}): {stdout}{}", out.status, String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
#[ignore = "needs root; starts the many-host lab (scripts/test.sh runs it)"]
fn the_lab_has_four_ssh_hosts_that_reach_the_nfs_server() {
    let Some(lab) = Lab::start_or_skip() else { return };
    assert_eq!(lab.hosts(), ["10.99.0.11", "10.99.0.12", "10.99.0.13", "10.99.0.14"]);
    let own_netns = std::fs::read_link("/proc/self/ns/net").unwrap();
    let mut namespaces = BTreeSet::new();
    for host in lab.hosts() {
        // A real login (key only, no prompt), landing in the host's own namespace: its
        // address and no other host's, and a network namespace of its own.
        let nfs = lab.nfs_server();
        let out = ok(
            &format!("ssh {host}"),
            lab.ssh(
                host,
                &format!(
                    "readlink /proc/self/ns/net; ip -4 -o addr show; \
                     exec 3<>/dev/tcp/{nfs}/2049 && echo nfs-port-open; nfs-ls {}/ >/dev/null && echo nfs-ls-ok",
                    lab.nfs_url()
                ),
            ),
        );
        assert!(out.contains(&format!("inet {host}/24")), "{host} has its address: {out}");
        for other in lab.hosts().iter().filter(|h| *h != host) {
            assert!(!out.contains(&format!("inet {other}/")), "{host} does not have {other}'s address: {out}");
        }
        assert!(out.contains("nfs-port-open"), "{host} reaches {nfs}:2049: {out}");
        assert!(out.contains("nfs-ls-ok"), "{host} lists {} over NFSv3: {out}", lab.nfs_url());
        let netns = out.lines().next().unwrap_or_default().to_owned();
        assert_ne!(Path::new(&netns), own_netns, "{host} is not the test's own namespace");
        namespaces.insert(netns);
    }
    assert_eq!(namespaces.len(), 4, "four namespaces: {namespaces:?}");
    // The hosts' files are the test's files (one binary path works for every host).
    let marker = std::env::temp_dir().join(format!("ioscope-lab-marker-{}", std::process::id()));
    std::fs::write(&marker, "seen").unwrap();
    let seen = ok("cat over ssh", lab.ssh(&lab.hosts()[3], &format!("cat {}", marker.display())));
    // The command line a coordinator is given logs in as well.
    let words: Vec<String> = lab.ssh_command_line().split(' ').map(str::to_owned).collect();
    let out = Command::new(&words[0]).args(&words[1..]).args([lab.hosts()[0].as_str(), "echo in"]).output().unwrap();
    assert_eq!(ok("the coordinator's ssh command line", out), "in\n");
    std::fs::remove_file(&marker).unwrap();
    assert_eq!(seen, "seen");
}

/// Bytes per second of 32 MiB sent over TCP from HOST's namespace to the test (listening
/// on the bridge's address), timed from the first byte. Plain TCP, not ssh, so that the
/// unshaped rate is the network's (GB/s), not ssh's encryption on a busy CPU.
fn transfer_rate(lab: &Lab, host: &str) -> f64 {
    const BYTES: usize = 32 << 20;
    let listener = TcpListener::bind((lab.bridge(), 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let send = format!("head -c {BYTES} /dev/zero >/dev/tcp/{}/{port}", lab.bridge());
    let (sent, rate) = std::thread::scope(|scope| {
        let sender = scope.spawn(|| lab.exec(host, &["bash", "-c", &send]));
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let first = stream.read(&mut buf).unwrap();
        let t0 = Instant::now();
        let mut rest = 0;
        loop {
            match stream.read(&mut buf).unwrap() {
                0 => break,
                n => rest += n,
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        assert_eq!(first + rest, BYTES, "the whole transfer from {host} arrived");
        (sender.join().unwrap(), rest as f64 / secs)
    });
    ok(&format!("the sender in {host}"), sent);
    rate
}

#[test]
#[ignore = "needs root; starts the many-host lab (scripts/test.sh runs it)"]
fn a_host_shaped_to_100mbit_transfers_at_least_three_times_slower_than_the_others() {
    let Some(lab) = Lab::start_or_skip() else { return };
    let (fast, slow) = (&lab.hosts()[0], &lab.hosts()[1]);
    lab.shape(slow, "100mbit");
    let fast_rate = transfer_rate(&lab, fast);
    let slow_rate = transfer_rate(&lab, slow);
    eprintln!("unshaped {fast}: {:.1} MB/s, shaped {slow}: {:.1} MB/s", fast_rate / 1e6, slow_rate / 1e6);
    // 100 Mbit/s is 12.5 MB/s before TCP's overhead.
    assert!(slow_rate < 13e6, "the shaped host stays at about 100 Mbit/s: {:.1} MB/s", slow_rate / 1e6);
    assert!(
        fast_rate >= 3.0 * slow_rate,
        "the shaped host is at least 3x slower: {:.1} vs {:.1} MB/s",
        fast_rate / 1e6,
        slow_rate / 1e6
    );
}

#[test]
#[ignore = "needs root; starts the many-host lab (scripts/test.sh runs it)"]
fn a_host_whose_link_is_down_is_unreachable_until_it_comes_back_up() {
    let Some(lab) = Lab::start_or_skip() else { return };
    let host = &lab.hosts()[2];
    lab.link(host, false);
    let out = lab.ssh_command(host).args(["-o", "ConnectTimeout=1", "true"]).output().unwrap();
    assert!(!out.status.success(), "{host} cannot be reached with its link down");
    let other = ok("ssh to another host", lab.ssh(&lab.hosts()[0], "echo up"));
    assert_eq!(other, "up\n", "the other hosts are still reachable");
    lab.link(host, true);
    assert_eq!(ok("ssh after link up", lab.ssh(host, "echo up")), "up\n");
}

#[test]
#[ignore = "needs root; starts the many-host lab (scripts/test.sh runs it)"]
fn a_finished_test_leaves_the_lab_unshaped_linked_up_and_without_its_processes() {
    {
        let Some(lab) = Lab::start_or_skip() else { return };
        let host = &lab.hosts()[3];
        lab.shape(host, "10mbit");
        // A process left behind by a test (as an agent might be), detached from ssh.
        ok("a left-behind process", lab.ssh(host, "setsid sleep 600 </dev/null >/dev/null 2>&1 &"));
        let names: Vec<String> = lab.processes(host).into_iter().map(|(_, name)| name).collect();
        assert!(names.iter().any(|n| n == "sleep"), "the process runs in {host}'s namespace: {names:?}");
        lab.link(&lab.hosts()[1], false);
    }
    let Some(lab) = Lab::start_or_skip() else { return };
    let host = &lab.hosts()[3];
    let qdisc = ok("tc in the namespace", lab.exec(host, &["tc", "qdisc", "show", "dev", "eth0"]));
    assert!(!qdisc.contains("tbf"), "no shaping left on {host}: {qdisc}");
    let names: Vec<String> = lab.processes(host).into_iter().map(|(_, name)| name).collect();
    assert_eq!(names, ["sshd"], "only sshd's listener is left in {host}");
    assert_eq!(ok("ssh to the host whose link was down", lab.ssh(&lab.hosts()[1], "echo up")), "up\n");
}
