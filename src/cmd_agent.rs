//! `ioscope agent`: serve a coordinator, over the ssh session's stdin and stdout or on a
//! listening address (see docs/hosts.md). Bad flags are exit 2 before anything listens.

use crate::cli::AgentArgs;
use crate::{CmdResult, Failure, Kind};
use ioscope_hosts::agent::{Agent, AgentConfig};
use ioscope_proto::Token;
use std::io::Read;
use std::time::Duration;

pub fn agent(args: &AgentArgs) -> CmdResult {
    let timeout = ioscope_workload::parse_duration(&args.coordinator_timeout)
        .ok()
        .filter(|d| *d >= Duration::from_secs(1))
        .ok_or_else(|| {
            Failure::said(
                Kind::InvalidInput,
                format!(
                    "--coordinator-timeout {:?}: expected a duration of at least 1s, e.g. 10s",
                    args.coordinator_timeout
                ),
            )
        })?;
    let root = match &args.root {
        Some(r) => Some(r.canonicalize().map_err(|e| {
            Failure::said(Kind::InvalidInput, format!("--root {}: {e} (expected an existing directory)", r.display()))
        })?),
        None => None,
    };
    let agent = Agent::new(AgentConfig { root, coordinator_timeout: timeout });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::failed(anyhow::anyhow!("cannot start the agent's runtime: {e}")))?;
    match args.listen {
        None => {
            let token = read_token_line()?;
            let app = ioscope_proto::authorized(agent.router(), token);
            rt.block_on(async {
                tokio::spawn(agent.clone().watchdog());
                match ioscope_proto::stdio() {
                    Ok(io) => {
                        if let Err(e) = ioscope_proto::serve_stream(io, app).await {
                            eprintln!("agent: the coordinator's session failed: {e}");
                        }
                    }
                    Err(e) => eprintln!("agent: no stdin or stdout to serve on: {e}"),
                }
                // The session is over (the run ended, or the coordinator is gone).
                agent.stop_load("the coordinator's ssh session ended: the load was stopped");
                agent.wait_idle().await;
            });
            Ok(())
        }
        Some(addr) => {
            let invalid = |text: String| Failure::said(Kind::InvalidInput, text);
            let token_file =
                args.token_file.as_ref().ok_or_else(|| invalid("--listen needs --token-file FILE".into()))?;
            let token = Token::from_file(token_file).map_err(|e| invalid(e.to_string()))?;
            if args.root.is_none() {
                return Err(invalid("--listen needs --root DIR: the directory the agent may use".into()));
            }
            let tls = match (&args.tls_cert, &args.tls_key) {
                (Some(c), Some(k)) => Some(ioscope_proto::tls_server_config(c, k).map_err(|e| invalid(e.to_string()))?),
                _ if ioscope_proto::needs_tls(&addr) => {
                    return Err(invalid(format!(
                        "--listen {addr} is reachable from other hosts: give --tls-cert and --tls-key (or listen on 127.0.0.1)"
                    )))
                }
                _ => None,
            };
            let app = ioscope_proto::authorized(agent.router(), token);
            rt.block_on(async {
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(|e| Failure::said(Kind::InvalidInput, format!("--listen {addr}: {e}")))?;
                let bound = listener.local_addr().map(|a| a.to_string()).unwrap_or_else(|_| addr.to_string());
                eprintln!("agent listening on {bound} ({})", if tls.is_some() { "TLS" } else { "loopback, no TLS" });
                tokio::spawn(agent.clone().watchdog());
                let shutdown = async {
                    let _ = tokio::signal::ctrl_c().await;
                };
                ioscope_proto::serve_tcp(listener, tls, app, shutdown)
                    .await
                    .map_err(|e| Failure::failed(anyhow::anyhow!("serving: {e}")))?;
                agent.stop_load("the agent was stopped");
                agent.wait_idle().await;
                Ok::<(), Failure>(())
            })
        }
    }
}

/// The token line the coordinator sends first, read a byte at a time so that nothing
/// after it (the protocol) is taken from stdin.
fn read_token_line() -> Result<Token, Failure> {
    use std::os::fd::FromRawFd;
    // Not std's stdin: its buffer would keep bytes of the protocol that follows.
    // SAFETY: fd 0 is open for the life of the process; ManuallyDrop never closes it.
    let mut stdin = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(0) });
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 1024 {
        match stdin.read(&mut byte) {
            Ok(1) if byte[0] == b'\n' => break,
            Ok(1) => line.push(byte[0]),
            _ => return Err(Failure::said(Kind::InvalidInput, "agent --stdio: stdin ended before the token line")),
        }
    }
    let text = String::from_utf8_lossy(&line);
    Token::from_line(&text).map_err(|e| Failure::said(Kind::InvalidInput, format!("agent --stdio: {e}")))
}
