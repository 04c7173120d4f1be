//! Many hosts in one run, with the real binary: agents started over real ssh logins into
//! the lab's four network namespaces (scripts/hosts-lab.sh, tests/common/lab.rs) against
//! the local file system and a real nfs-ganesha, and agents listening on loopback. The
//! lab tests need root: scripts/test.sh runs them with `--ignored`; the loopback ones run
//! everywhere.

mod common;
mod skip;

use common::lab::Lab;
use common::run::ioscope;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `ioscope run` over the lab's hosts (ssh as root with the lab's ssh configuration).
fn run_on(lab: &Lab, hosts: &[&str], args: &[&str]) -> Output {
    let list: Vec<String> = hosts.iter().map(|h| format!("root@{h}")).collect();
    ioscope()
        .env("IOSCOPE_SSH_COMMAND", format!("ssh -F {}", lab.ssh_config().display()))
        .args(["run", "--hosts", &list.join(",")])
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn summary(db: &Path) -> Value {
    let o = ioscope().args(["show", "--json"]).arg(db).output().unwrap();
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)))
}

/// One number from the results file (sqlite3 CLI).
fn sql(db: &Path, query: &str) -> String {
    let o = Command::new("sqlite3").arg(db).arg(query).output().unwrap();
    assert!(o.status.success(), "{query}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Each host's "agent" object from the results file's host table.
fn agents(db: &Path) -> Vec<(String, Value)> {
    sql(db, "SELECT name || char(9) || config_json FROM host ORDER BY name")
        .lines()
        .map(|l| {
            let (name, json) = l.split_once('\t').unwrap();
            (name.to_string(), serde_json::from_str::<Value>(json).unwrap()["agent"].clone())
        })
        .collect()
}

/// Ops per host per second equal the whole run's ops per second, and the summary's
/// per-host rows add up to its total.
fn assert_hosts_add_up(db: &Path, hosts: usize) {
    let per_second = sql(
        db,
        "SELECT count(*) FROM (SELECT second, sum(ops) AS o, count(DISTINCT host) AS h FROM op_seconds GROUP BY second) \
         WHERE h > 0",
    );
    assert!(per_second.parse::<u32>().unwrap() >= 2, "seconds stored: {per_second}");
    let s = summary(db);
    let by_host = s["by_host"].as_object().unwrap_or_else(|| panic!("no by_host in {s}"));
    assert_eq!(by_host.len(), hosts, "{s}");
    let total_ops = s["total"]["ops"].as_u64().unwrap();
    let sum: u64 = by_host.values().map(|h| h["ops"].as_u64().unwrap()).sum();
    assert_eq!(sum, total_ops, "per-host ops add up to the total");
    assert!(total_ops > 0);
    let stored: u64 =
        sql(db, "SELECT sum(ops) FROM op_seconds WHERE warmup = 0 AND op IN ('read','write')").parse().unwrap();
    assert_eq!(stored, total_ops, "the per-second rows of every host add up to the summary's total");
}

#[test]
#[ignore = "needs root; starts the many-host lab (scripts/test.sh runs it)"]
fn posix_and_nfs_engines_run_from_four_ssh_hosts_and_the_hosts_add_up_to_the_totals() {
    let Some(lab) = Lab::start_or_skip() else { return };
    let hosts: Vec<&str> = lab.hosts().iter().map(String::as_str).collect();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("posix.db");
    let dir = tmp.path().join("data");
    let out = run_on(
        &lab,
        &hosts,
        &[
            "--rw",
            "randrw",
            "--bs",
            "4k",
            "--size",
            "4m",
            "--threads",
            "2",
            "--duration",
            "3s",
            "--dir",
            dir.to_str().unwrap(),
            "--out",
            db.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_hosts_add_up(&db, 4);
    for (name, a) in agents(&db) {
        assert_eq!(a["status"], "completed", "{name}: {a}");
        assert_eq!(a["transport"], "ssh");
        assert!(a["clock_uncertainty_ns"].as_u64().unwrap() < 50_000_000, "{name}: {a}");
        assert!(a["started_unix_ns"].as_i64().is_some(), "{name}: {a}");
        // Each host worked in a directory of its own.
        assert!(dir.join(&name).join("ioscope.0.dat").exists(), "{name}'s working set");
    }
    let starts: Vec<i64> = agents(&db).iter().map(|(_, a)| a["started_unix_ns"].as_i64().unwrap()).collect();
    let spread = starts.iter().max().unwrap() - starts.iter().min().unwrap();
    assert!(spread < 100_000_000, "every host starts at one instant (spread {spread} ns)");

    let db = tmp.path().join("nfs.db");
    let target = format!("{}/hosts-test", lab.nfs_url());
    let out = run_on(
        &lab,
        &hosts,
        &[
            "--engine",
            "nfs",
            "--target",
            &target,
            "--rw",
            "randread",
            "--bs",
            "4k",
            "--size",
            "2m",
            "--duration",
            "3s",
            "--out",
            db.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_hosts_add_up(&db, 4);
    assert!(lab.nfs_export_dir().join("hosts-test").join(hosts[0]).exists(), "per-host directories on the server");
}

#[test]
#[ignore = "needs root; starts the many-host lab (scripts/test.sh runs it)"]
fn a_hosts_staircase_adds_one_host_every_step() {
    let Some(lab) = Lab::start_or_skip() else { return };
    let hosts: Vec<&str> = lab.hosts().iter().map(String::as_str).collect();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("stairs.db");
    let out = run_on(
        &lab,
        &hosts,
        &[
            "--engine",
            "null",
            "--threads",
            "1",
            "--rate-iops",
            "4000",
            "--staircase",
            "hosts:1-4/2s",
            "--out",
            db.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    // Step k runs the first k+1 hosts, and the 4,000 IOPS are split over them.
    let rows = sql(&db, "SELECT step, host, sum(ops) FROM op_seconds GROUP BY step, host ORDER BY step, host");
    let mut active = vec![0usize; 4];
    for row in rows.lines() {
        let f: Vec<&str> = row.split('|').collect();
        let (step, ops): (usize, u64) = (f[0].parse().unwrap(), f[2].parse().unwrap());
        if ops > 0 {
            active[step] += 1;
        }
    }
    assert_eq!(active, [1, 2, 3, 4], "{rows}");
    let s = summary(&db);
    let iops = s["total"]["iops"].as_f64().unwrap();
    assert!((3000.0..5000.0).contains(&iops), "the rate is the run's, split over the hosts: {iops}");
}

#[test]
#[ignore = "needs root; starts the many-host lab (scripts/test.sh runs it)"]
fn a_host_behind_a_slow_link_stands_out_in_the_by_host_breakdown() {
    let Some(lab) = Lab::start_or_skip() else { return };
    let hosts: Vec<&str> = lab.hosts().iter().map(String::as_str).collect();
    lab.shape(hosts[1], "40mbit");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("slow.db");
    let target = format!("{}/slow-link", lab.nfs_url());
    let out = run_on(
        &lab,
        &hosts,
        &[
            "--engine",
            "nfs",
            "--target",
            &target,
            "--rw",
            "read",
            "--bs",
            "64k",
            "--size",
            "8m",
            "--threads",
            "2",
            "--duration",
            "4s",
            "--out",
            db.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let s = summary(&db);
    let rate = |h: &str| s["by_host"][h]["bytes_per_sec"].as_f64().unwrap();
    let slow = rate(hosts[1]);
    for h in [hosts[0], hosts[2], hosts[3]] {
        assert!(rate(h) > 2.0 * slow, "{h} {} vs the shaped {} {slow}", rate(h), hosts[1]);
    }
    assert!(slow < 6e6, "40 Mbit/s is at most 5 MB/s: {slow}");
    let notes = s["notes"].to_string();
    assert!(notes.contains(hosts[1]), "the notes name the slow host: {notes}");
}

/// The pid of the agent running in the lab host `host`'s network namespace (the process
/// table is the machine's: only the namespace tells the hosts' agents apart).
fn agent_pid(lab: &Lab, host: &str) -> Option<String> {
    lab.processes(host).into_iter().find(|(_, name)| name.starts_with("ioscope")).map(|(pid, _)| pid.to_string())
}

/// Starts a run writing `db` and waits until every host has delivered two seconds.
#[allow(clippy::zombie_processes)] // the caller waits for the child it gets
fn start_on(lab: &Lab, hosts: &[&str], args: &[&str], db: &Path) -> std::process::Child {
    let list: Vec<String> = hosts.iter().map(|h| format!("root@{h}")).collect();
    let mut child = ioscope()
        .env("IOSCOPE_SSH_COMMAND", format!("ssh -F {}", lab.ssh_config().display()))
        .args(["run", "--hosts", &list.join(",")])
        .args(args)
        .arg("--out")
        .arg(db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let began = Instant::now();
    let running = "SELECT count(*) FROM (SELECT host FROM tick GROUP BY host HAVING count(*) >= 2)";
    loop {
        let ready = db.exists()
            && Command::new("sqlite3")
                .arg(db)
                .arg(running)
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == hosts.len().to_string());
        if ready {
            return child;
        }
        if began.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("the hosts did not deliver two seconds: {}", text(&out));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
#[ignore = "needs root; starts the many-host lab (scripts/test.sh runs it)"]
fn a_killed_agent_ends_the_run_failed_or_with_continue_leaves_a_marked_gap() {
    let Some(lab) = Lab::start_or_skip() else { return };
    let hosts: Vec<&str> = lab.hosts().iter().map(String::as_str).collect();
    let tmp = tempfile::tempdir().unwrap();
    for continue_ in [false, true] {
        let db = tmp.path().join(format!("killed-{continue_}.db"));
        let mut args = vec!["--engine", "null", "--threads", "1", "--rate-iops", "2000", "--duration", "8s"];
        if continue_ {
            args.extend(["--on-host-loss", "continue"]);
        }
        let child = start_on(&lab, &hosts, &args, &db);
        let pid = agent_pid(&lab, hosts[2]).unwrap();
        let killed = Instant::now();
        lab.exec(hosts[2], &["kill", "-9", &pid]);
        let out = child.wait_with_output().unwrap();
        let said = text(&out);
        let (name, a) = agents(&db).into_iter().find(|(n, _)| n == hosts[2]).unwrap();
        assert_eq!(a["status"], "lost", "{name}: {a}");
        let lost_at = a["lost_at_second"].as_u64().unwrap();
        assert!(lost_at >= 1, "{a}");
        let h3_seconds: u64 =
            sql(&db, &format!("SELECT count(*) FROM tick WHERE host = '{}'", hosts[2])).parse().unwrap();
        assert_eq!(h3_seconds, lost_at, "every second received from the lost host is kept, none after");
        if continue_ {
            assert!(out.status.success(), "{said}");
            let others: u64 =
                sql(&db, &format!("SELECT count(*) FROM tick WHERE host = '{}'", hosts[0])).parse().unwrap();
            assert_eq!(others, 8, "the other hosts ran the whole run");
            assert!(summary(&db)["notes"].to_string().contains(&format!("host {} was lost", hosts[2])));
        } else {
            assert_eq!(out.status.code(), Some(1), "{said}");
            assert!(said.contains(&format!("host {}", hosts[2])) && said.contains("lost"), "{said}");
            assert!(killed.elapsed() < Duration::from_secs(6), "the run ended soon after the loss");
            assert_eq!(sql(&db, "SELECT status FROM run"), "failed");
        }
    }
}

#[test]
#[ignore = "needs root; starts the many-host lab (scripts/test.sh runs it)"]
fn a_partitioned_host_is_lost_after_the_timeout_and_a_short_partition_counts_nothing_twice() {
    let Some(lab) = Lab::start_or_skip() else { return };
    let hosts: Vec<&str> = lab.hosts().iter().map(String::as_str).collect();
    let tmp = tempfile::tempdir().unwrap();
    // A short partition (1.5 s, under the 4 s timeout): the host catches up, once.
    let db = tmp.path().join("short.db");
    let args =
        ["--engine", "null", "--threads", "1", "--rate-iops", "2000", "--duration", "7s", "--set", "host_timeout=4s"];
    let child = start_on(&lab, &hosts, &args, &db);
    lab.link(hosts[3], false);
    std::thread::sleep(Duration::from_millis(1500));
    lab.link(hosts[3], true);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let ticks: u64 = sql(&db, &format!("SELECT count(*) FROM tick WHERE host = '{}'", hosts[3])).parse().unwrap();
    assert_eq!(ticks, 7, "every second of the partitioned host, each once");
    assert_hosts_add_up(&db, 4);
    // A long one: lost after the timeout, the run fails naming it.
    let db = tmp.path().join("long.db");
    let child = start_on(&lab, &hosts, &args, &db);
    lab.link(hosts[3], false);
    let out = child.wait_with_output().unwrap();
    lab.link(hosts[3], true);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("host {}", hosts[3])) && said.contains("no answer for 4 s"), "{said}");
}

#[test]
#[ignore = "needs root; starts the many-host lab (scripts/test.sh runs it)"]
fn hosts_that_cannot_take_part_are_named_and_nothing_runs() {
    let Some(lab) = Lab::start_or_skip() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    for (host, expected) in [("10.99.0.99", "unreachable"), ("nosuchuser@10.99.0.12", "ssh login failed")] {
        let out = ioscope()
            .env("IOSCOPE_SSH_COMMAND", format!("ssh -F {} -o ConnectTimeout=2", lab.ssh_config().display()))
            .args(["run", "--engine", "null", "--duration", "2s", "--hosts", host, "--out", db.to_str().unwrap()])
            .output()
            .unwrap();
        let said = text(&out);
        assert_eq!(out.status.code(), Some(1), "{said}");
        assert!(said.contains(expected) && said.contains(host.rsplit('@').next().unwrap()), "{host}: {said}");
        assert!(!db.exists(), "nothing was run, no results file");
    }
    // Another version at the path given by `bin`.
    let wl = tmp.path().join("job.toml");
    std::fs::write(
        &wl,
        "engine = \"null\"\nduration = \"2s\"\n[[host]]\naddress = \"root@10.99.0.11\"\nbin = \"/bin/echo\"\n",
    )
    .unwrap();
    let out = ioscope()
        .env("IOSCOPE_SSH_COMMAND", format!("ssh -F {}", lab.ssh_config().display()))
        .args(["run"])
        .arg(&wl)
        .args(["--out", db.to_str().unwrap()])
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("10.99.0.11") && said.contains("/bin/echo") && said.contains("same version"), "{said}");
}

/// A token file with `token` in it, readable by its owner only.
fn token_file(dir: &Path, name: &str, token: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// `ioscope agent --listen 127.0.0.1:0` and the address it listens on.
struct Listening {
    child: std::process::Child,
    addr: String,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn listen(token: &Path, root: &Path) -> Listening {
    listen_with(token, root, &[])
}

fn listen_with(token: &Path, root: &Path, extra: &[&Path]) -> Listening {
    use std::io::{BufRead, BufReader};
    let mut child = ioscope()
        .args(["agent", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(token)
        .arg("--root")
        .arg(root)
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.split_whitespace().nth(3).unwrap_or_else(|| panic!("agent said {line:?}")).to_string();
    Listening { child, addr }
}

#[test]
fn listening_agents_on_loopback_run_one_timeline_and_refuse_a_wrong_token() {
    let tmp = tempfile::tempdir().unwrap();
    let token = token_file(tmp.path(), "token", "a-token-of-the-fleet-0123456789");
    let wrong = token_file(tmp.path(), "wrong", "not-the-token-of-the-fleet-000000");
    let roots = [tmp.path().join("a"), tmp.path().join("b")];
    roots.iter().for_each(|r| std::fs::create_dir(r).unwrap());
    let listening: Vec<Listening> = roots.iter().map(|r| listen(&token, r)).collect();
    let hosts: Vec<String> = listening.iter().map(|a| format!("agent://{}", a.addr)).collect();

    // A wrong token: refused, named, nothing run.
    let db = tmp.path().join("refused.db");
    let out = ioscope()
        .args(["run", "--engine", "null", "--duration", "2s", "--hosts", &hosts.join(","), "--token-file"])
        .arg(&wrong)
        .args(["--out", db.to_str().unwrap()])
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    // Both agents refuse; the first answer names its agent.
    let named = listening.iter().any(|l| said.contains(&format!("host {} (agent://{})", l.addr, l.addr)));
    assert!(named && said.contains("401"), "{said}");
    assert!(!db.exists());

    // A dir outside an agent's root: refused before any file is touched.
    let outside = tmp.path().join("outside");
    let out = ioscope()
        .args(["run", "--duration", "2s", "--size", "1m", "--hosts", &hosts.join(","), "--token-file"])
        .arg(&token)
        .arg("--dir")
        .arg(&outside)
        .args(["--out", db.to_str().unwrap()])
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("outside this agent's root"), "{said}");
    assert!(!outside.exists(), "nothing written outside the root");

    // The right token: two hosts, one timeline, a rate split between them.
    let db = tmp.path().join("two.db");
    let out = ioscope()
        .args(["run", "--engine", "null", "--rate-iops", "3001", "--duration", "3s", "--hosts", &hosts.join(",")])
        .arg("--token-file")
        .arg(&token)
        .args(["--out", db.to_str().unwrap(), "--probe", "local"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    // The coordinator's own host probed in the hosts' seconds (`--probe local`).
    let ticks = sql(&db, "SELECT group_concat(second) FROM (SELECT DISTINCT second FROM tick ORDER BY second)");
    let target = sql(
        &db,
        "SELECT group_concat(second) FROM (SELECT DISTINCT x.second FROM sample x JOIN series s ON s.id = x.series_id \
         WHERE s.side = 'target' AND s.stat = 'cpu.time' ORDER BY x.second)",
    );
    assert_eq!((ticks.as_str(), target.as_str()), ("0,1,2", "0,1,2"), "the probe's seconds are the run's");
    // Each agent's worker threads' CPU time reaches the results file (the client-bound
    // verdict's figures), every second of both hosts.
    let cpu_rows = sql(&db, "SELECT count(*) FROM worker_cpu w JOIN tick t ON t.host = w.host AND t.second = w.second");
    let ticks_rows = sql(&db, "SELECT count(*) FROM tick");
    assert_eq!(cpu_rows, ticks_rows, "one worker per host: a worker_cpu row per tick");
    let s = summary(&db);
    let by_host = s["by_host"].as_object().unwrap();
    assert_eq!(by_host.len(), 2, "{s}");
    let ops: Vec<u64> = by_host.values().map(|h| h["ops"].as_u64().unwrap()).collect();
    assert_eq!(ops.iter().sum::<u64>(), s["total"]["ops"].as_u64().unwrap());
    // 1501 and 1500 IOPS for 3 s: the schedule is the most a host can do (open loop);
    // a busy machine may complete fewer by the end, never more than a few over.
    for o in &ops {
        assert!((3600..=4600).contains(o), "each host runs its half of the rate: {ops:?}");
    }
    for (_, a) in agents(&db).into_iter().filter(|(_, a)| !a.is_null()) {
        assert_eq!(a["transport"], "listen");
        assert_eq!(a["status"], "completed");
    }
    assert_eq!(agents(&db).len(), 3, "two agents and the probed coordinator host");
}

/// A self-signed certificate for 127.0.0.1 and its key, as PEM files.
fn certificate(dir: &Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let c = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let (cert, key) = (dir.join(format!("{name}.pem")), dir.join(format!("{name}.key")));
    std::fs::write(&cert, c.cert.pem()).unwrap();
    std::fs::write(&key, c.key_pair.serialize_pem()).unwrap();
    (cert, key)
}

#[test]
fn a_listening_agent_speaks_tls_only_to_a_coordinator_that_trusts_its_certificate() {
    let tmp = tempfile::tempdir().unwrap();
    let token = token_file(tmp.path(), "token", "a-token-of-the-fleet-0123456789");
    let (cert, key) = certificate(tmp.path(), "agent");
    let (other, _) = certificate(tmp.path(), "other");
    // Reachable from other hosts without TLS: refused, exit 2.
    let out = ioscope()
        .args(["agent", "--listen", "0.0.0.0:0", "--token-file"])
        .arg(&token)
        .arg("--root")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("--tls-cert"), "{}", text(&out));

    let agent = listen_with(&token, tmp.path(), &[Path::new("--tls-cert"), &cert, Path::new("--tls-key"), &key]);
    let host = format!("agent://{}", agent.addr);
    let run = |ca: &Path, db: &Path| {
        ioscope()
            .args(["run", "--engine", "null", "--duration", "2s", "--hosts", &host, "--token-file"])
            .arg(&token)
            .arg("--tls-ca")
            .arg(ca)
            .arg("--out")
            .arg(db)
            .output()
            .unwrap()
    };
    let db = tmp.path().join("untrusted.db");
    let out = run(&other, &db);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains(&agent.addr) && text(&out).to_lowercase().contains("certificate"), "{}", text(&out));
    assert!(!db.exists());
    let db = tmp.path().join("tls.db");
    let out = run(&cert, &db);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(summary(&db)["by_host"].as_object().map(|h| h.len()), Some(1));
}

/// Waits until no host of the lab runs an agent; false after 10 s.
fn agents_gone(lab: &Lab, hosts: &[&str]) -> bool {
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(10) {
        if hosts.iter().all(|h| agent_pid(lab, h).is_none()) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
#[ignore = "needs root; starts the many-host lab (scripts/test.sh runs it)"]
fn ctrl_c_or_a_killed_coordinator_leaves_no_agent_running() {
    let Some(lab) = Lab::start_or_skip() else { return };
    let hosts: Vec<&str> = lab.hosts().iter().map(String::as_str).collect();
    let tmp = tempfile::tempdir().unwrap();
    // Ctrl-C: every host stops, the results are kept (interrupted), exit 130.
    let db = tmp.path().join("interrupted.db");
    let args = ["--engine", "null", "--threads", "1", "--rate-iops", "2000", "--duration", "30s"];
    let child = start_on(&lab, &hosts, &args, &db);
    // SAFETY: signalling a child process of this test.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert_eq!(sql(&db, "SELECT status FROM run"), "interrupted");
    let seconds: u64 = sql(&db, "SELECT count(DISTINCT second) FROM tick").parse().unwrap();
    assert!((1..30).contains(&seconds), "the seconds measured are kept: {seconds}");
    assert!(agents_gone(&lab, &hosts), "an agent outlived the interrupted run");
    // kill -9: the ssh sessions end with the coordinator, and the agents with them.
    let db = tmp.path().join("killed.db");
    let mut child = start_on(&lab, &hosts, &args, &db);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(agents_gone(&lab, &hosts), "an agent outlived its killed coordinator");
}

/// `--probe ssh://`: samplers on another host through an agent started over ssh, their
/// seconds cut from the local run's time zero and stored under that host's name.
#[test]
#[ignore = "needs root; starts the many-host lab (scripts/test.sh runs it)"]
fn a_probe_over_ssh_records_that_hosts_side_in_the_local_runs_seconds() {
    let Some(lab) = Lab::start_or_skip() else { return };
    let server = &lab.hosts()[0];
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("probe.db");
    let out = ioscope()
        .env("IOSCOPE_SSH_COMMAND", format!("ssh -F {}", lab.ssh_config().display()))
        .args(["run", "--engine", "null", "--duration", "4s", "--quiet", "--out", db.to_str().unwrap()])
        .args(["--dir", tmp.path().to_str().unwrap(), "--probe", &format!("ssh://root@{server}")])
        .args(["--probe-process", "sshd"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let ticks = sql(&db, "SELECT group_concat(second) FROM (SELECT DISTINCT second FROM tick ORDER BY second)");
    assert_eq!(ticks, "0,1,2,3");
    // CPU time of the probe host in every second of the run, and none outside it.
    let seconds = sql(
        &db,
        &format!(
            "SELECT group_concat(second) FROM (SELECT DISTINCT x.second FROM sample x JOIN series s ON s.id = x.series_id \
             WHERE s.side = 'target' AND s.host = '{server}' AND s.stat = 'cpu.time' ORDER BY x.second)"
        ),
    );
    assert_eq!(seconds, ticks, "the probe host's seconds are the run's");
    let config: Value =
        serde_json::from_str(&sql(&db, &format!("SELECT config_json FROM host WHERE name = '{server}'"))).unwrap();
    assert_eq!(config["probe"]["transport"], "ssh", "{config}");
    assert_eq!(config["probe"]["processes"], serde_json::json!(["sshd"]), "{config}");
    assert!(config["probe"]["clock_uncertainty_ns"].as_u64().unwrap() < 50_000_000, "{config}");
    // The session ended with the run: no agent left on the host.
    std::thread::sleep(Duration::from_secs(1));
    let left: Vec<_> = lab.processes(server).into_iter().filter(|(_, cmd)| cmd.contains("agent")).collect();
    assert!(left.is_empty(), "agents left on {server}: {left:?}");
}
