//! The `smb` engine: SMB2/SMB3 from user space with ioscope's own client (signed or
//! encrypted when asked or required), `iodepth` requests in flight per worker thread on one
//! connection, no client cache, every request timed by the core.
//!
//! - [`wire`]: the messages as bytes (MS-SMB2 2.2).
//! - [`crypto`]: signing, encryption and key derivation (SMB 2.x to 3.1.1).
//! - [`auth`]: NTLM in SPNEGO (the sspi crate) for SESSION_SETUP.
//! - [`conn`]: one connection and session: credits, message ids, replies matched to
//!   requests, reads received in place, deadlines.
//! - [`session`]: the path operations (CREATE, CLOSE, SET_INFO, QUERY_DIRECTORY,
//!   COPYCHUNK) on a session.
//! - [`engine`]: the `Engine` (READ, WRITE, FLUSH in flight; path operations).
//! - [`fs`]: the share as a `FileSystem` (preparation, markers, cleanup).
//! - [`errors`]: failures named by their NTSTATUS (STATUS_ACCESS_DENIED ...).

pub mod auth;
pub mod conn;
pub mod crypto;
pub mod engine;
pub mod errors;
pub mod fs;
pub mod session;
pub mod wire;
