//! NFSv4.1 (RFC 8881) for the `nfs` engine, chosen by `nfs://HOST/PATH?version=4.1`: the
//! COMPOUND messages ([`proto`]), the client id, session, slots and lease ([`session`]),
//! operations by path and the [`FileSystem`](ioscope_engine::fs::FileSystem) datasets are
//! made through ([`fs`]), and the engine ([`engine`]). No portmapper and no MOUNT: port
//! 2049 unless given, and the path is walked from the root of the server's pseudo file
//! system. NFSv4.0 and 4.2 are not spoken.

pub mod engine;
pub mod fs;
pub mod proto;
pub mod session;

#[cfg(test)]
mod decode_tests;
