//! The ssh transport end to end with a real child process: this program starts itself as an
//! agent that serves on its own stdin and stdout (as `ioscope agent` does under ssh), calls
//! it, then closes the stream and checks that the agent ends promptly.
//! No test harness: its output on stdout would corrupt the HTTP/2 stream.

use axum::routing::post;
use axum::{Json, Router};
use ioscope_proto::{authorized, serve_stream, CallError, Client, Token};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;

const CHILD: &str = "IOSCOPE_PROTO_TEST_AGENT_TOKEN";
/// Only turns a hang into a failure.
const GUARD: Duration = Duration::from_secs(20);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    if let Ok(token) = std::env::var(CHILD) {
        let app = Router::new().route("/v1/echo", post(|Json(v): Json<Value>| async move { Json(v) }));
        let served = runtime.block_on(serve_stream(
            tokio::io::join(tokio::io::stdin(), tokio::io::stdout()),
            authorized(app, Token::from_line(&token).unwrap()),
        ));
        if let Err(e) = served {
            eprintln!("agent: {e}");
            std::process::exit(3);
        }
        // A read of stdin may still wait on its blocking thread: do not wait for it.
        runtime.shutdown_timeout(Duration::from_millis(100));
        return;
    }
    runtime.block_on(a_stdio_agent_answers_and_ends_when_its_stdin_closes());
    runtime.block_on(a_stdio_agent_that_exits_closes_the_client());
    println!("stdio_child: 2 checks passed");
}

fn spawn_agent(token: &Token) -> tokio::process::Child {
    tokio::process::Command::new(std::env::current_exe().unwrap())
        .env(CHILD, token.as_str())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

async fn a_stdio_agent_answers_and_ends_when_its_stdin_closes() {
    let token = Token::generate();
    let mut child = spawn_agent(&token);
    let io = tokio::io::join(child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = Client::over_stream(io, &token).await.unwrap();
    let (one, two) = (json!({"second": 1}), json!({"second": 2}));
    let (a, b) = tokio::join!(
        client.call::<_, Value>("/v1/echo", &one, GUARD),
        client.call::<_, Value>("/v1/echo", &two, GUARD)
    );
    assert_eq!((a.unwrap(), b.unwrap()), (json!({"second": 1}), json!({"second": 2})));
    // The coordinator lets go: the connection closes, the agent's stdin reaches EOF.
    drop(client);
    let status = tokio::time::timeout(GUARD, child.wait()).await.expect("the agent did not end after EOF").unwrap();
    assert!(status.success(), "agent ended with {status}");
}

async fn a_stdio_agent_that_exits_closes_the_client() {
    let token = Token::generate();
    let mut child = spawn_agent(&token);
    let io = tokio::io::join(child.stdout.take().unwrap(), child.stdin.take().unwrap());
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
    assert!(matches!(err, CallError::Closed(_)), "{err:?}");
}
