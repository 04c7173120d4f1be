//! The ssh transport end to end with a real child process: this program starts itself as an
//! agent that serves on its own stdin and stdout (as `ioscope agent` does under ssh), over
//! pipes and over a socketpair (what sshd gives a command), calls it, closes the stream and
//! checks that the agent ends promptly.
//! No test harness: its output on stdout would corrupt the HTTP/2 stream.

use axum::routing::post;
use axum::{Json, Router};
use ioscope_proto::{authorized, serve_stream, CallError, Client, Token};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;

const CHILD: &str = "IOSCOPE_PROTO_TEST_AGENT";
const TOKEN: &str = "IOSCOPE_PROTO_TEST_AGENT_TOKEN";
/// Only turns a hang into a failure.
const GUARD: Duration = Duration::from_secs(20);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    if let Ok(mode) = std::env::var(CHILD) {
        agent(runtime, &mode);
        return;
    }
    let mut checks = 0;
    for (mode, socket) in [("tokio", false), ("stdio", false), ("stdio", true)] {
        runtime.block_on(a_stdio_agent_answers_and_ends_when_its_stdin_closes(mode, socket));
        runtime.block_on(a_stdio_agent_that_exits_closes_the_client(mode, socket));
        checks += 2;
    }
    for socket in [false, true] {
        runtime.block_on(an_agent_on_stdio_ends_at_once_when_it_stops_serving_with_stdin_still_open(socket));
        checks += 1;
    }
    println!("stdio_child: {checks} checks passed");
}

/// The child: serves on its stdin and stdout, through tokio's blocking-thread stdin and
/// stdout ("tokio") or through `ioscope_proto::stdio` ("stdio"), or serves for a moment
/// only and then ends its runtime while stdin is still open ("stdio-stop").
fn agent(runtime: tokio::runtime::Runtime, mode: &str) {
    let token = Token::from_line(&std::env::var(TOKEN).unwrap()).unwrap();
    let app = authorized(Router::new().route("/v1/echo", post(|Json(v): Json<Value>| async move { Json(v) })), token);
    let served = runtime.block_on(async {
        match mode {
            "tokio" => serve_stream(tokio::io::join(tokio::io::stdin(), tokio::io::stdout()), app).await,
            "stdio" => serve_stream(ioscope_proto::stdio().unwrap(), app).await,
            _ => {
                let _ = tokio::time::timeout(
                    Duration::from_millis(300),
                    serve_stream(ioscope_proto::stdio().unwrap(), app),
                )
                .await;
                Ok(())
            }
        }
    });
    if let Err(e) = served {
        eprintln!("agent: {e}");
        std::process::exit(3);
    }
    if mode == "tokio" {
        // A read of stdin may still wait on its blocking thread: do not wait for it.
        runtime.shutdown_timeout(Duration::from_millis(100));
    } else {
        drop(runtime);
    }
}

/// The agent child and the coordinator's end of its stdin and stdout.
fn spawn_agent(token: &Token, mode: &str, socket: bool) -> (tokio::process::Child, Box<dyn Stream>) {
    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command.env(CHILD, mode).env(TOKEN, token.as_str()).stderr(Stdio::inherit()).kill_on_drop(true);
    if socket {
        let (near, far) = std::os::unix::net::UnixStream::pair().unwrap();
        let far_too = far.try_clone().unwrap();
        command
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(far)))
            .stdout(Stdio::from(std::os::fd::OwnedFd::from(far_too)));
        let child = command.spawn().unwrap();
        near.set_nonblocking(true).unwrap();
        (child, Box::new(tokio::net::UnixStream::from_std(near).unwrap()))
    } else {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let io = tokio::io::join(child.stdout.take().unwrap(), child.stdin.take().unwrap());
        (child, Box::new(io))
    }
}

trait Stream: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static> Stream for T {}

async fn a_stdio_agent_answers_and_ends_when_its_stdin_closes(mode: &str, socket: bool) {
    let token = Token::generate();
    let (mut child, io) = spawn_agent(&token, mode, socket);
    let client = Client::over_stream(io, &token).await.unwrap();
    let (one, two) = (json!({"second": 1}), json!({"second": 2}));
    let (a, b) = tokio::join!(
        client.call::<_, Value>("/v1/echo", &one, GUARD),
        client.call::<_, Value>("/v1/echo", &two, GUARD)
    );
    assert_eq!((a.unwrap(), b.unwrap()), (one, two), "{mode} socket={socket}");
    // The coordinator lets go: the connection closes, the agent's stdin reaches EOF.
    drop(client);
    let status = tokio::time::timeout(GUARD, child.wait()).await.expect("the agent did not end after EOF").unwrap();
    assert!(status.success(), "{mode} socket={socket}: agent ended with {status}");
}

async fn a_stdio_agent_that_exits_closes_the_client(mode: &str, socket: bool) {
    let token = Token::generate();
    let (mut child, io) = spawn_agent(&token, mode, socket);
    let client = Client::over_stream(io, &token).await.unwrap();
    let answer: u32 = client.call("/v1/echo", &9, GUARD).await.unwrap();
    assert_eq!(answer, 9);
    child.kill().await.unwrap();
    tokio::time::timeout(GUARD, async {
        while !client.is_closed() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the client did not see the agent go");
    let err = client.call::<_, Value>("/v1/echo", &json!(1), GUARD).await.unwrap_err();
    assert!(matches!(err, CallError::Closed(_)), "{mode} socket={socket}: {err:?}");
}

/// The agent stops serving by itself (as after its coordinator went silent) while the
/// session, and so its stdin, is still open: its runtime must not wait for stdin to close.
async fn an_agent_on_stdio_ends_at_once_when_it_stops_serving_with_stdin_still_open(socket: bool) {
    let token = Token::generate();
    let (mut child, io) = spawn_agent(&token, "stdio-stop", socket);
    let status =
        tokio::time::timeout(GUARD, child.wait()).await.expect("the agent waited for its stdin to close").unwrap();
    assert!(status.success(), "socket={socket}: agent ended with {status}");
    drop(io);
}
