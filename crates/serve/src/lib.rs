//! What every server of ioscope's shares (the UI, the agent, OpenMetrics): one accept loop
//! ([`serve`]) with one set of [`Limits`], and one Host check ([`check_host`]).
//!
//! - At most [`Limits::max_connections`] connections at once. When every slot is taken, the
//!   oldest connection that has not been admitted and has no request in flight (a stranger
//!   that connected and said nothing, or was refused) is closed to make room; when there is
//!   none, the newcomer is refused. So silent strangers never keep the server's own client
//!   (the coordinator, the browser, Prometheus) out.
//! - A TLS handshake must end within [`Limits::handshake_time`].
//! - A connection must be admitted within [`Limits::first_request_time`] of its handshake
//!   (its first complete request answered with the server's [`Admitted`] mark): a silent
//!   peer, a 1 B/s preface or request head, or a peer whose requests are all refused is
//!   closed then (not while one of its requests is being answered).
//! - An admitted connection with no request in flight for [`Limits::idle_time`] is closed.
//!
//! The server says which requests are admitted (the token or the Host was right) by putting
//! [`Admitted`] in the response's extensions; the connection's service is wrapped with
//! [`Tracker::service`], which sees requests start and their answers end.
//!
//! A server that speaks TLS reads its certificate and key with [`tls`]: bounded regular
//! files, and a CA certificate refused as the server's.

mod accept;
mod host;
pub mod tls;
mod track;

pub use accept::{serve, Conn, Connections, Io, Limits, Stopping};
pub use host::{check_host, host_allowed};
pub use track::{Admitted, Tracked, TrackedBody, Tracker};

#[cfg(test)]
mod tests;
