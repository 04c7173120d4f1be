//! The `s3` engine: S3 from user space over HTTP/1.1 (hyper, with rustls for https),
//! requests signed with SigV4 (aws-sigv4), many requests in flight per worker thread, no
//! client cache. Why this stack: docs/s3.md ("Client choice", measured against
//! aws-sdk-s3).
//!
//! - [`client`]: the endpoint, signing, one request's exchange on a connection.
//! - [`engine`]: the `Engine` (GET, PUT, multipart parts; path operations).
//! - [`fs`]: the bucket as a `FileSystem` (preparation, markers, cleanup).
//! - [`objects`]: object operations one at a time (PUT, HEAD, DELETE, LIST, copy, uploads).
//! - [`errors`]: failures named by their S3 error code or HTTP status.
//! - [`creds`]: credentials from the environment or a profile, never stored.

pub mod client;
pub mod creds;
pub mod engine;
pub mod errors;
pub mod fs;
pub mod objects;
pub mod xml;
