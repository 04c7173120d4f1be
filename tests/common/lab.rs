//! The many-host lab for integration tests: four client hosts reached over real ssh logins
//! (network namespaces on one bridge, each with its own sshd) and nfs-ganesha in a fifth
//! namespace, all set up by scripts/hosts-lab.sh (docs/testing-hosts.md).
//!
//! The lab is started once per test process, on the first [`Lab::start`], and tests that
//! use it run one at a time: a [`Lab`] holds the process's turn until it is dropped. Drop
//! puts the lab back as it started (no shaping, every link up, no process but sshd in the
//! namespaces), also when the test failed. The lab is stopped when the test process ends,
//! however it ends: a guard process (`flock` on a lock file, in its own process group so
//! Ctrl-C does not reach it) waits for the end of its stdin, a pipe only this process
//! writes, then runs `hosts-lab.sh stop`. The same lock keeps two test processes from
//! using the lab at once: the second waits until the first's lab is stopped.
#![allow(dead_code)] // each test file uses its own part of it

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::skip::skip;

/// Where the lab keeps its keys, configs and logs (the script's default).
const STATE_DIR: &str = "/tmp/ioscope-hosts-lab";
/// Held by the guard process of the test process that owns the lab.
const OWNER_LOCK: &str = "/tmp/ioscope-hosts-lab.owner.lock";
/// How long a test process waits for another one's lab to be stopped.
const OWNER_WAIT_S: &str = "900";
/// What the script needs on top of a shell (it installs them when missing, as root).
const TOOLS: [&str; 10] =
    ["ip", "tc", "flock", "ssh", "ssh-keygen", "/usr/sbin/sshd", "ganesha.nfsd", "rpcbind", "rpcinfo", "nfs-ls"];

/// The lab as `hosts-lab.sh start` described it; lives as long as the test process.
struct Shared {
    hosts: Vec<String>,
    bridge: String,
    ssh_config: PathBuf,
    nfs_url: String,
    nfs_export_dir: PathBuf,
    /// The write end of the guard's stdin: closed only when this process ends.
    _guard: ChildStdin,
}

enum Unavailable {
    /// This machine cannot run the lab (not root, a tool missing).
    CannotRunHere(String),
    /// It should have started and did not.
    Failed(String),
}

static LAB: OnceLock<Result<Shared, Unavailable>> = OnceLock::new();
static TURN: Mutex<()> = Mutex::new(());

/// One test's use of the lab; see the module doc.
pub struct Lab {
    shared: &'static Shared,
    _turn: MutexGuard<'static, ()>,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/hosts-lab.sh")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Why the lab cannot run on this machine, if it cannot.
fn missing_prerequisite() -> Option<String> {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0")));
    if uid != Some(true) {
        return Some("the many-host lab needs root (network namespaces, sshd, tc)".into());
    }
    let check = TOOLS.iter().map(|t| format!("command -v {t} >/dev/null || echo {t};")).collect::<String>();
    let missing = Command::new("sh").args(["-c", &check]).output().map(|o| text(&o.stdout)).unwrap_or_default();
    let missing: Vec<&str> = missing.split_whitespace().collect();
    (!missing.is_empty()).then(|| {
        format!(
            "the many-host lab needs {} (scripts/hosts-lab.sh start installs them, and so does scripts/test.sh)",
            missing.join(", ")
        )
    })
}

/// Starts the guard process and waits until it holds the owner lock.
fn guard() -> Result<ChildStdin, String> {
    let stop = r#"echo locked; cat >/dev/null; exec "$0" stop "$1" >"$1.stop.log" 2>&1"#;
    let mut child = Command::new("flock")
        .args(["-w", OWNER_WAIT_S, OWNER_LOCK, "sh", "-c", stop])
        .arg(script())
        .arg(STATE_DIR)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run flock: {e}"))?;
    let mut line = String::new();
    let stdout = child.stdout.take().ok_or("no stdout from flock")?;
    let _ = BufReader::new(stdout).read_line(&mut line);
    if line.trim() != "locked" {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("another test process has used the lab for over {OWNER_WAIT_S} s ({OWNER_LOCK})"));
    }
    child.stdin.take().ok_or_else(|| "no stdin to the guard process".into())
}

fn start_shared() -> Result<Shared, Unavailable> {
    if let Some(why) = missing_prerequisite() {
        return Err(Unavailable::CannotRunHere(why));
    }
    let guard = guard().map_err(Unavailable::Failed)?;
    let out = Command::new(script())
        .args(["start", STATE_DIR])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Unavailable::Failed(format!("cannot run {}: {e}", script().display())))?;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    if !out.status.success() {
        return Err(Unavailable::Failed(format!("hosts-lab.sh start failed ({}):\n{stderr}", out.status)));
    }
    let value = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
            .map(str::to_owned)
            .ok_or_else(|| Unavailable::Failed(format!("hosts-lab.sh start printed no {key}=:\n{stdout}{stderr}")))
    };
    Ok(Shared {
        hosts: value("hosts")?.split(',').map(str::to_owned).collect(),
        bridge: value("bridge")?,
        ssh_config: value("ssh_config")?.into(),
        nfs_url: value("nfs")?,
        nfs_export_dir: value("nfs_export_dir")?.into(),
        _guard: guard,
    })
}

impl Lab {
    /// Waits for this process's turn, starts the lab if this process has not yet, and
    /// returns it; Err says why it cannot run here or why it did not start.
    pub fn start() -> Result<Lab, String> {
        // A test that failed while holding the turn poisons it; the lab is reset anyway.
        let turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match LAB.get_or_init(start_shared) {
            Ok(shared) => Ok(Lab { shared, _turn: turn }),
            Err(Unavailable::CannotRunHere(why) | Unavailable::Failed(why)) => Err(why.clone()),
        }
    }

    /// [`Lab::start`] for a test: None (after saying why, or failing under
    /// IOSCOPE_TEST_REQUIRE_ALL=1) when this machine cannot run the lab; panics when the
    /// lab should have started and did not.
    pub fn start_or_skip() -> Option<Lab> {
        let lab = Lab::start();
        match LAB.get() {
            Some(Err(Unavailable::CannotRunHere(why))) => {
                skip(why);
                None
            }
            _ => Some(lab.unwrap_or_else(|e| panic!("{e}"))),
        }
    }

    /// The hosts' addresses, h1 first (10.99.0.11, …).
    pub fn hosts(&self) -> &[String] {
        &self.shared.hosts
    }

    /// The root namespace's address on the hosts' network (10.99.0.1): what the hosts
    /// reach the test (and a coordinator) at.
    pub fn bridge(&self) -> &str {
        &self.shared.bridge
    }

    /// The ssh client configuration that logs in to every host as root without a prompt.
    pub fn ssh_config(&self) -> &Path {
        &self.shared.ssh_config
    }

    /// The NFS export every host reaches (nfs://10.77.0.2/export).
    pub fn nfs_url(&self) -> &str {
        &self.shared.nfs_url
    }

    /// The exported directory as the server side sees it, to check what was written.
    pub fn nfs_export_dir(&self) -> &Path {
        &self.shared.nfs_export_dir
    }

    /// The NFS server's address (10.77.0.2).
    pub fn nfs_server(&self) -> &str {
        let rest = self.shared.nfs_url.strip_prefix("nfs://").unwrap_or(&self.shared.nfs_url);
        rest.split('/').next().unwrap_or(rest)
    }

    /// The ssh command line that logs in to the hosts without a prompt
    /// (`ssh -F <ssh_config>`), as a coordinator takes it in `IOSCOPE_SSH_COMMAND`.
    pub fn ssh_command_line(&self) -> String {
        format!("ssh -F {}", self.ssh_config().display())
    }

    /// `ssh -F <ssh_config> root@HOST`, to add a command to.
    pub fn ssh_command(&self, host: &str) -> Command {
        let mut ssh = Command::new("ssh");
        ssh.arg("-F").arg(self.ssh_config()).arg(format!("root@{host}"));
        ssh.stdin(Stdio::null());
        ssh
    }

    /// Runs the shell command COMMAND on HOST through a real ssh login.
    pub fn ssh(&self, host: &str, command: &str) -> Output {
        self.ssh_command(host).arg(command).output().unwrap_or_else(|e| panic!("cannot run ssh: {e}"))
    }

    /// Runs ARGS inside HOST's network namespace (without ssh).
    pub fn exec(&self, host: &str, args: &[&str]) -> Output {
        Command::new(script())
            .args(["exec", host])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run hosts-lab.sh exec: {e}"))
    }

    /// The processes running in HOST's namespace (pid, name): sshd's, and whatever was
    /// started through it, such as agents.
    pub fn processes(&self, host: &str) -> Vec<(u32, String)> {
        let out = Command::new(script()).args(["pids", host]).stdin(Stdio::null()).output();
        let out = match out {
            Ok(out) if out.status.success() => text(&out.stdout),
            Ok(out) => panic!("hosts-lab.sh pids {host} failed ({}): {}", out.status, text(&out.stderr)),
            Err(e) => panic!("cannot run hosts-lab.sh: {e}"),
        };
        out.lines()
            .filter_map(|l| l.split_once(' '))
            .filter_map(|(pid, name)| Some((pid.parse().ok()?, name.to_owned())))
            .collect()
    }

    fn script_ok(&self, args: &[&str]) {
        let out = Command::new(script()).args(args).stdin(Stdio::null()).output();
        match out {
            Ok(out) if out.status.success() => {}
            Ok(out) => panic!("hosts-lab.sh {args:?} failed ({}): {}", out.status, text(&out.stderr)),
            Err(e) => panic!("cannot run hosts-lab.sh: {e}"),
        }
    }

    /// Limits HOST's link to RATE (a tc rate: "100mbit") in both directions.
    pub fn shape(&self, host: &str, rate: &str) {
        self.script_ok(&["shape", host, rate]);
    }

    /// Takes HOST's shaping away.
    pub fn unshape(&self, host: &str) {
        self.script_ok(&["unshape", host]);
    }

    /// Takes HOST's link down (partitioned: nothing gets in or out) or up again.
    pub fn link(&self, host: &str, up: bool) {
        self.script_ok(&["link", host, if up { "up" } else { "down" }]);
    }
}

impl Drop for Lab {
    /// Resets the lab for the next test: this runs also when the test panicked, so it
    /// only reports a failure.
    fn drop(&mut self) {
        match Command::new(script()).args(["reset", STATE_DIR]).stdin(Stdio::null()).output() {
            Ok(out) if out.status.success() => {}
            Ok(out) => eprintln!("hosts-lab.sh reset failed ({}): {}", out.status, text(&out.stderr)),
            Err(e) => eprintln!("cannot run hosts-lab.sh reset: {e}"),
        }
    }
}
