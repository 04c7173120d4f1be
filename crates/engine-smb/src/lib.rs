//! The `smb` engine: SMB2/SMB3 from user space with the `smb` crate (pure Rust, async on
//! tokio; why this one: bench/results/2026-11-25-vm-smbclient.md), signed or encrypted,
//! `iodepth` requests in flight per worker thread on one connection, no client cache.
//!
//! - [`session`]: one logged-in session, its runtime, TCP_NODELAY, and the path operations
//!   (CREATE, CLOSE, SET_INFO, QUERY_DIRECTORY, COPYCHUNK) with every wait bounded.
//! - [`engine`]: the `Engine` (READ, WRITE, FLUSH in flight; path operations).
//! - [`fs`]: the share as a `FileSystem` (preparation, markers, cleanup).
//! - [`errors`]: failures named by their NTSTATUS (STATUS_ACCESS_DENIED ...).

pub mod engine;
pub mod errors;
pub mod fs;
pub mod session;
