//! What goes wrong: a handler's refusal ([`ApiError`]), a call's failure as the client sees
//! it ([`CallError`]), and the server side's setup and connection errors ([`ProtoError`]).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::path::PathBuf;

/// What a handler answers on failure: HTTP status + `{"error": message}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into() }
    }
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, message)
    }
    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(401, message)
    }
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(403, message)
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(404, message)
    }
    pub fn conflict(message: impl Into<String>) -> ApiError {
        ApiError::new(409, message)
    }
    pub fn too_large(message: impl Into<String>) -> ApiError {
        ApiError::new(413, message)
    }
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(500, message)
    }
}

/// A body axum's `Json` extractor could not read: its status (400, 413, 415, 422) and reason.
impl From<axum::extract::rejection::JsonRejection> for ApiError {
    fn from(rejection: axum::extract::rejection::JsonRejection) -> ApiError {
        ApiError::new(rejection.status().as_u16(), rejection.body_text())
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.status)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, axum::Json(serde_json::json!({ "error": self.message }))).into_response()
    }
}

/// Why a call did not get its answer. The texts name what to check.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No connection: the TCP connect, the TLS handshake or the HTTP/2 handshake failed.
    #[error("{0}")]
    Connect(String),
    #[error("the agent refused the token (401): is it the agent's --token-file?")]
    Unauthorized,
    /// The handler answered with an error status and this message.
    #[error("the agent refused the call ({status}): {message}")]
    Refused { status: u16, message: String },
    #[error("no answer within the call's time limit (is the agent overloaded or its link down?)")]
    Timeout,
    /// The connection is gone (the peer closed it or it failed); no call can succeed on it.
    #[error("the connection to the agent is gone: {0}")]
    Closed(String),
    /// The answer is not the JSON expected, is too large, or broke off (also used when the
    /// request itself cannot be encoded as JSON).
    #[error("the agent's answer could not be read: {0}")]
    BadAnswer(String),
}

/// The server side's errors: TLS files that cannot be used, a connection that failed.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("TLS certificate {}: {why} (expected a PEM file with the server certificate first, then any intermediates)", .path.display())]
    Cert { path: PathBuf, why: String },
    #[error("TLS key {}: {why} (expected a PEM file with the certificate's private key: PKCS#8, PKCS#1 or SEC1)", .path.display())]
    Key { path: PathBuf, why: String },
    #[error("the TLS certificate and key do not make a usable configuration: {0}")]
    Tls(String),
    /// The peer broke the HTTP/2 connection (bytes that are not HTTP/2, a protocol error).
    #[error("the HTTP/2 connection failed: {0}")]
    Connection(String),
}

/// An error with its causes, as one line ("connection error: broken pipe").
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // Some errors repeat their cause in their own text.
        if !text.ends_with(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        source = cause.source();
    }
    text
}
