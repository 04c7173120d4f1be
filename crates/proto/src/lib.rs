//! The agent protocol's transport: JSON calls over HTTP/2, each with a bearer token.
//!
//! The coordinator (a [`Client`]) POSTs a JSON body to a path and reads a JSON answer; the
//! agent serves an axum [`axum::Router`] wrapped by [`authorized`]. Two ways to carry the
//! HTTP/2 connection:
//! - one byte stream, such as an ssh session's stdin and stdout ([`serve_stream`] on
//!   [`stdio`], [`Client::over_stream`]);
//! - TCP ([`serve_tcp`], [`Client::connect`]): TLS (rustls, ALPN `h2`) whenever the address is
//!   not loopback ([`needs_tls`]), prior-knowledge h2c on loopback.
//!
//! Limits: request bodies up to [`MAX_REQUEST_BYTES`], answers up to [`MAX_ANSWER_BYTES`].
//! Nothing a peer sends panics either side: bad JSON, oversized bodies and bytes that are not
//! HTTP/2 all end as errors. This crate knows nothing of plans or snapshots; the calls
//! themselves are described in docs/agent-protocol.md.
//!
//! ```
//! use axum::{routing::post, Json, Router};
//! use ioscope_proto::{authorized, serve_stream, ApiError, Client, Token};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let token = Token::generate();
//! // The agent: handlers answer JSON, or an ApiError ({"error": ...} with its status).
//! let app = Router::new().route(
//!     "/v1/hello",
//!     post(|Json(n): Json<u32>| async move {
//!         if n > 9 { Err(ApiError::bad_request("at most 9")) } else { Ok(Json(n + 1)) }
//!     }),
//! );
//! // Over ssh the stream is the session's stdio; here an in-memory pair.
//! let (coordinator_end, agent_end) = tokio::io::duplex(64 << 10);
//! tokio::spawn(serve_stream(agent_end, authorized(app, token.clone())));
//! // The coordinator.
//! let client = Client::over_stream(coordinator_end, &token).await.unwrap();
//! let answer: u32 = client.call("/v1/hello", &1, Duration::from_secs(5)).await.unwrap();
//! assert_eq!(answer, 2);
//! let refused = client.call::<_, u32>("/v1/hello", &10, Duration::from_secs(5)).await.unwrap_err();
//! assert_eq!(refused.to_string(), "the agent refused the call (400): at most 9");
//! # }
//! ```

mod client;
mod error;
mod server;
mod stdio;
mod tls;
mod token;

pub use client::{Client, ClientTls};
pub use error::{ApiError, CallError, ProtoError};
pub use server::{authorized, needs_tls, serve_stream, serve_tcp, serve_tcp_within, MAX_TCP_CONNECTIONS, TCP_LIMITS};
pub use stdio::{stdio, StdinHalf, StdoutHalf};
pub use tls::tls_server_config;
pub use token::{Token, TokenError};

/// The rustls version the TLS configurations are made with.
pub use rustls;

/// The largest request body an agent reads (64 MiB); larger ones are refused with 413.
pub const MAX_REQUEST_BYTES: usize = 64 << 20;
/// The largest answer a client reads (256 MiB); a larger one is a `CallError::BadAnswer`.
pub const MAX_ANSWER_BYTES: usize = 256 << 20;
