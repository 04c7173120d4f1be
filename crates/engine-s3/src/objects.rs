//! The object operations, one request (or one upload) at a time on one connection,
//! waited for on the caller's runtime: what the file system (dataset preparation, markers,
//! cleanup) and the engine's path operations use. Every failure is a negative result, as
//! the engine reports it (see [`crate::errors`]).

use crate::client::{exchange, query_value, Client, Into, Reply, Sender};
use crate::xml;
use bytes::Bytes;
use http::Method;
use std::sync::Arc;

/// S3's most parts in one upload.
pub const MAX_PARTS: u64 = 10_000;

/// One connection to the endpoint, its requests made one at a time.
pub struct Conn {
    pub client: Arc<Client>,
    pub rt: Arc<tokio::runtime::Runtime>,
    sender: Option<Sender>,
}

/// A current-thread runtime for a worker or a connection.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()
}

/// An object in a listing: its key and size.
pub type Listed = (String, u64);

impl Conn {
    pub fn new(client: Arc<Client>, rt: Arc<tokio::runtime::Runtime>) -> Conn {
        Conn { client, rt, sender: None }
    }

    pub fn call(
        &mut self,
        method: Method,
        key: &str,
        query: &str,
        headers: &[(&'static str, String)],
        body: Bytes,
        into: Into,
    ) -> Result<Reply, i64> {
        let req = self.client.request(method, key, query, headers, body).map_err(|_| -(libc::EINVAL as i64))?;
        let (client, sender) = (&self.client, &mut self.sender);
        self.rt.block_on(exchange(client, sender, req, into))
    }

    pub fn put(&mut self, key: &str, body: Bytes) -> Result<(), i64> {
        self.call(Method::PUT, key, "", &[], body, Into::Nothing).map(drop)
    }

    pub fn get(&mut self, key: &str) -> Result<Vec<u8>, i64> {
        self.call(Method::GET, key, "", &[], Bytes::new(), Into::Text).map(|r| r.body)
    }

    /// The object's size; None when there is no such object.
    pub fn head(&mut self, key: &str) -> Result<Option<u64>, i64> {
        match self.call(Method::HEAD, key, "", &[], Bytes::new(), Into::Nothing) {
            Ok(r) => Ok(Some(r.length.unwrap_or(0))),
            Err(e) if is_missing(e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn delete(&mut self, key: &str) -> Result<(), i64> {
        self.call(Method::DELETE, key, "", &[], Bytes::new(), Into::Nothing).map(drop)
    }

    /// A server-side copy (CopyObject); nothing passes through this client.
    pub fn copy(&mut self, from: &str, to: &str) -> Result<(), i64> {
        let source =
            format!("/{}/{}", self.client.target.bucket, percent_encoding::utf8_percent_encode(from, COPY_SOURCE));
        let r = self.call(Method::PUT, to, "", &[("x-amz-copy-source", source)], Bytes::new(), Into::Text)?;
        error_in_body(&r)
    }

    /// The objects under `prefix` and, with a `delimiter`, the common prefixes below it,
    /// every page of the listing (ListObjectsV2).
    pub fn list(&mut self, prefix: &str, delimiter: Option<&str>) -> Result<(Vec<Listed>, Vec<String>), i64> {
        let (mut objects, mut prefixes, mut token) = (Vec::new(), Vec::new(), None::<String>);
        loop {
            let mut q = Vec::new();
            if let Some(t) = &token {
                q.push(format!("continuation-token={}", query_value(t)));
            }
            if let Some(d) = delimiter {
                q.push(format!("delimiter={}", query_value(d)));
            }
            q.push("list-type=2".to_string());
            q.push(format!("prefix={}", query_value(prefix)));
            let r = self.call(Method::GET, "", &q.join("&"), &[], Bytes::new(), Into::Text)?;
            let text = String::from_utf8_lossy(&r.body);
            for item in xml::all(&text, "Contents") {
                let (Some(key), size) = (xml::first(&item, "Key"), xml::first(&item, "Size")) else { continue };
                objects.push((key, size.and_then(|s| s.parse().ok()).unwrap_or(0)));
            }
            for item in xml::all(&text, "CommonPrefixes") {
                prefixes.extend(xml::first(&item, "Prefix"));
            }
            token = xml::first(&text, "NextContinuationToken");
            if xml::first(&text, "IsTruncated").as_deref() != Some("true") || token.is_none() {
                return Ok((objects, prefixes));
            }
        }
    }

    /// Starts a multipart upload: its id.
    pub fn start_upload(&mut self, key: &str) -> Result<String, i64> {
        let r = self.call(Method::POST, key, "uploads=", &[], Bytes::new(), Into::Text)?;
        xml::first(&String::from_utf8_lossy(&r.body), "UploadId").ok_or(-(libc::EPROTO as i64))
    }

    /// Uploads part `n` (from 1): its ETag.
    pub fn upload_part(&mut self, key: &str, upload: &str, n: u64, body: Bytes) -> Result<String, i64> {
        let q = format!("partNumber={n}&uploadId={}", query_value(upload));
        let r = self.call(Method::PUT, key, &q, &[], body, Into::Nothing)?;
        r.etag.ok_or(-(libc::EPROTO as i64))
    }

    /// Completes an upload from its parts (number, ETag) in order.
    pub fn complete_upload(&mut self, key: &str, upload: &str, parts: &[(u64, String)]) -> Result<(), i64> {
        let mut body = String::from("<CompleteMultipartUpload>");
        for (n, etag) in parts {
            body.push_str(&format!("<Part><PartNumber>{n}</PartNumber><ETag>{}</ETag></Part>", xml::escape(etag)));
        }
        body.push_str("</CompleteMultipartUpload>");
        let q = format!("uploadId={}", query_value(upload));
        let r = self.call(Method::POST, key, &q, &[], Bytes::from(body), Into::Text)?;
        error_in_body(&r)
    }

    pub fn abort_upload(&mut self, key: &str, upload: &str) -> Result<(), i64> {
        let q = format!("uploadId={}", query_value(upload));
        self.call(Method::DELETE, key, &q, &[], Bytes::new(), Into::Nothing).map(drop)
    }

    /// Writes an object of `len` bytes, `fill(offset, chunk)` making each part: one PUT up
    /// to `part` bytes, else a multipart upload of `part`-byte parts (aborted on failure).
    pub fn put_generated(
        &mut self,
        key: &str,
        len: u64,
        part: u64,
        fill: &mut dyn FnMut(u64, &mut [u8]),
    ) -> Result<(), i64> {
        if len <= part {
            let mut buf = vec![0u8; len as usize];
            fill(0, &mut buf);
            return self.put(key, Bytes::from(buf));
        }
        if len.div_ceil(part) > MAX_PARTS {
            return Err(-(libc::EFBIG as i64));
        }
        let id = self.start_upload(key)?;
        let mut parts = Vec::new();
        let mut buf = vec![0u8; part as usize];
        for (i, off) in (0..len).step_by(part as usize).enumerate() {
            let chunk = &mut buf[..(len - off).min(part) as usize];
            fill(off, chunk);
            match self.upload_part(key, &id, i as u64 + 1, Bytes::copy_from_slice(chunk)) {
                Ok(etag) => parts.push((i as u64 + 1, etag)),
                Err(e) => {
                    let _ = self.abort_upload(key, &id);
                    return Err(e);
                }
            }
        }
        self.complete_upload(key, &id, &parts).inspect_err(|_| {
            let _ = self.abort_upload(key, &id);
        })
    }
}

/// Characters a copy source keeps unescaped (as a key in a path).
const COPY_SOURCE: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');

/// CopyObject and CompleteMultipartUpload can fail after their 200: the body says so.
fn error_in_body(r: &Reply) -> Result<(), i64> {
    let text = String::from_utf8_lossy(&r.body);
    match text.contains("<Error>").then(|| xml::first(&text, "Code")) {
        Some(code) => Err(crate::errors::result_of(500, code.as_deref())),
        None => Ok(()),
    }
}

/// The result of a missing object (NoSuchKey, or a HEAD's 404).
pub fn is_missing(result: i64) -> bool {
    let name = crate::errors::error_text(result);
    name == "NoSuchKey" || name == "NotFound"
}
