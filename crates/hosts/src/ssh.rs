//! Starting agents over ssh with the system's OpenSSH client, as the seeds' clientrun
//! did: the coordinator copies its own binary when the host has none of the same build,
//! then runs `ioscope agent --stdio` and speaks the agent protocol over the session's
//! stdin and stdout. Ending the session (the run is over, the coordinator was stopped or
//! died) closes the agent's stdin, which ends its load and the agent.
//!
//! The ssh command is `ssh`, or `$IOSCOPE_SSH_COMMAND` (split at spaces, like
//! `GIT_SSH_COMMAND`: `IOSCOPE_SSH_COMMAND="ssh -F lab/ssh_config"`).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

/// Where and how to log in.
#[derive(Clone, Debug)]
pub struct Login {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    pub identity: Option<PathBuf>,
}

impl Login {
    /// `ssh [options] host`, ready for a remote command.
    fn command(&self) -> Command {
        let configured = std::env::var("IOSCOPE_SSH_COMMAND").unwrap_or_default();
        let mut words: Vec<String> = configured.split_whitespace().map(str::to_string).collect();
        if words.is_empty() {
            words.push("ssh".to_string());
        }
        let mut c = Command::new(&words[0]);
        c.args(&words[1..]);
        // Never a password prompt: a run must not hang on a host that wants one.
        c.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]);
        // A dead link is noticed by the protocol's own timeouts, not by ssh's.
        c.args(["-o", "ServerAliveInterval=0", "-o", "TCPKeepAlive=no"]);
        if let Some(p) = self.port {
            c.args(["-p", &p.to_string()]);
        }
        if let Some(i) = &self.identity {
            c.arg("-i").arg(i);
        }
        if let Some(u) = &self.user {
            c.args(["-l", u]);
        }
        c.arg("--").arg(&self.host);
        c.kill_on_drop(true);
        c
    }

    /// Runs `remote` (a POSIX shell command line) with `input` on its stdin.
    async fn run(&self, remote: &str, input: Option<&[u8]>, timeout: Duration) -> Result<String, SshError> {
        let mut c = self.command();
        c.arg(remote).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = c.spawn().map_err(|e| SshError::NoClient(e.to_string()))?;
        if let Some(mut stdin) = child.stdin.take() {
            if let Some(bytes) = input {
                // A failed write shows up as the command's failure below.
                let _ = stdin.write_all(bytes).await;
            }
            drop(stdin);
        }
        let out = tokio::time::timeout(timeout, child.wait_with_output())
            .await
            .map_err(|_| SshError::Unreachable(format!("no answer over ssh within {} s", timeout.as_secs())))?
            .map_err(|e| SshError::NoClient(e.to_string()))?;
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        match out.status.code() {
            Some(0) => Ok(String::from_utf8_lossy(&out.stdout).trim().to_string()),
            Some(255) => Err(classify(&stderr)),
            code => Err(SshError::Remote { code, stderr }),
        }
    }
}

/// What went wrong on the way to a host.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SshError {
    #[error("cannot run the ssh client: {0}")]
    NoClient(String),
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("ssh login failed: {0}")]
    Login(String),
    #[error("{0}")]
    Version(String),
    #[error("the remote command failed (exit {code:?}): {stderr}")]
    Remote { code: Option<i32>, stderr: String },
}

/// ssh's own failures (exit 255): a refused login or a host out of reach.
fn classify(stderr: &str) -> SshError {
    let last = stderr.lines().last().unwrap_or("ssh failed without a message").to_string();
    let login = ["Permission denied", "Host key verification failed", "Too many authentication failures"];
    if login.iter().any(|s| stderr.contains(s)) {
        SshError::Login(last)
    } else {
        SshError::Unreachable(last)
    }
}

/// This binary's identity: its version, and a digest of its bytes (a copy is reused only
/// if it is this very build).
pub fn own_build() -> Result<(PathBuf, String), String> {
    static BUILD: std::sync::OnceLock<Result<(PathBuf, String), String>> = std::sync::OnceLock::new();
    BUILD.get_or_init(digest_own_build).clone()
}

fn digest_own_build() -> Result<(PathBuf, String), String> {
    use sha2::Digest;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let bytes = std::fs::read(&exe).map_err(|e| format!("cannot read {}: {e}", exe.display()))?;
    let digest = sha2::Sha256::digest(&bytes);
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    Ok((exe, hex))
}

/// The path of ioscope on the host: `bin` as given (its version must be this one), or this
/// binary copied to `.cache/ioscope/ioscope-<digest>` in the login's home when no copy of
/// this build is there yet. Returns the path and whether it was copied.
pub async fn install(login: &Login, bin: Option<&str>, timeout: Duration) -> Result<(String, bool), SshError> {
    let ours = format!("ioscope {}", env!("CARGO_PKG_VERSION"));
    if let Some(bin) = bin {
        let said = login.run(&format!("{} --version", quote(bin)), None, timeout).await.map_err(|e| match e {
            SshError::Remote { code, stderr } => {
                SshError::Version(format!("{bin} does not run there (exit {code:?}): {stderr}"))
            }
            e => e,
        })?;
        if said.trim() != ours {
            return Err(SshError::Version(format!(
                "{bin} there is {:?}, this coordinator is {ours:?}: install the same version, or drop `bin` to let ioscope copy itself",
                said.trim()
            )));
        }
        return Ok((bin.to_string(), false));
    }
    let (exe, digest) = own_build().map_err(SshError::NoClient)?;
    let path = format!(".cache/ioscope/ioscope-{digest}");
    let present = login.run(&format!("test -x {path} && echo present || echo absent"), None, timeout).await?;
    if present == "present" {
        return Ok((path, false));
    }
    let bytes = std::fs::read(&exe).map_err(|e| SshError::NoClient(format!("{}: {e}", exe.display())))?;
    let copy = format!(
        "mkdir -p .cache/ioscope && cat > {path}.$$ && chmod 755 {path}.$$ && mv -f {path}.$$ {path} && {path} --version"
    );
    let said = login.run(&copy, Some(&bytes), timeout.max(Duration::from_secs(120))).await?;
    if said.trim() != ours {
        return Err(SshError::Version(format!(
            "the copy of this binary does not run there (it said {:?}): is the host another architecture?",
            said.trim()
        )));
    }
    Ok((path, true))
}

/// Starts `bin agent --stdio` over ssh and sends it the call token (the first line of its
/// stdin); the child's stdin and stdout then carry the protocol. Its stderr is kept for
/// messages.
pub async fn start_agent(
    login: &Login,
    bin: &str,
    token: &ioscope_proto::Token,
    coordinator_timeout: Duration,
) -> Result<Child, SshError> {
    let mut c = login.command();
    c.arg(format!("exec {} agent --stdio --coordinator-timeout {}s", quote(bin), coordinator_timeout.as_secs().max(1)));
    c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = c.spawn().map_err(|e| SshError::NoClient(e.to_string()))?;
    let stdin = child.stdin.as_mut().ok_or_else(|| SshError::NoClient("no stdin".into()))?;
    stdin
        .write_all(format!("{}\n", token.as_str()).as_bytes())
        .await
        .map_err(|e| SshError::Unreachable(format!("the ssh session closed: {e}")))?;
    Ok(child)
}

/// Single-quotes a word for the remote shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ssh_failures_are_told_apart() {
        assert!(matches!(classify("root@10.0.0.1: Permission denied (publickey)."), SshError::Login(_)));
        assert!(matches!(
            classify("ssh: connect to host 10.0.0.9 port 22: No route to host"),
            SshError::Unreachable(_)
        ));
    }

    #[test]
    fn remote_words_are_quoted_for_the_shell() {
        assert_eq!(quote("/opt/io scope/it's"), r"'/opt/io scope/it'\''s'");
    }
}
