//! An NFSv3 client in user space for ioscope's `nfs` engine: no kernel client (so no
//! client cache and no mount), many requests in flight per connection.
//!
//! Layers: [`xdr`] (encoding), [`rpc`] (ONC RPC over TCP, AUTH_SYS, record marking),
//! [`proto`] (NFSv3, MOUNT v3 and portmapper messages), [`target`] (the `nfs://` URL),
//! [`client`] (mount and blocking calls on one connection), [`pipe`] (many calls in
//! flight over N connections, with timeouts), [`fs`] (operations by path, and the export
//! as the `FileSystem` working sets and datasets are made through), [`engine`] (the `nfs`
//! engine). NFSv4.1 (`?version=4.1`) has modules of its own under [`v4`], on the same
//! XDR, RPC and pipe.

pub mod client;
pub mod engine;
pub mod fs;
pub mod pipe;
pub mod proto;
pub mod rpc;
pub mod target;
pub mod v4;
pub mod xdr;

#[cfg(test)]
mod decode_tests;
#[cfg(test)]
mod hostile_tests;
