//! One S3 endpoint as the engine and the file system speak to it: where it is (resolved
//! once), TLS for https, the credentials and region requests are signed with (SigV4,
//! aws-sigv4), how a request for a key is built, and one request's exchange on an
//! HTTP/1.1 connection (hyper) with its timeout. Connections are driven by the caller's
//! current-thread tokio runtime; a request's reply is read fully before its connection
//! takes another.

use crate::creds;
use crate::errors;
use aws_smithy_runtime_api::client::identity::Identity;
use bytes::Bytes;
use http::{HeaderValue, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use ioscope_engine_table::s3::{Style, Target};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

/// An HTTP/1.1 connection able to take one request at a time.
pub type Sender = SendRequest<Full<Bytes>>;

/// Characters S3 keys keep unescaped in a path (RFC 3986 unreserved, and `/`).
const KEY: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');
/// Query values: unreserved only.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// The longest error or listing reply read (bytes); a longer one is cut there.
const MAX_TEXT: usize = 8 << 20;

/// `v` escaped for a query string.
pub fn query_value(v: &str) -> String {
    utf8_percent_encode(v, QUERY).to_string()
}

pub struct Client {
    pub target: Target,
    addr: SocketAddr,
    /// The Host header, and the scheme and authority signed with the request.
    host: String,
    origin: String,
    /// `/BUCKET` in path style, "" in virtual-hosted style.
    bucket_path: String,
    tls: Option<(tokio_rustls::TlsConnector, rustls::pki_types::ServerName<'static>)>,
    identity: Identity,
    pub region: String,
    /// Where the credentials came from (never the credentials).
    pub credentials_from: String,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Client({} {})", self.origin, self.bucket_path)
    }
}

/// What a request's reply is read into.
#[derive(Clone, Copy, Debug)]
pub enum Into {
    /// A GET's data, into (address, capacity): more than the capacity is a protocol error.
    Buffer(usize, usize),
    /// The body kept (a listing, an upload's id, a small object): at most [`MAX_TEXT`] bytes.
    Text,
    /// Nothing kept (PUT, HEAD, DELETE).
    Nothing,
}

/// A finished request: bytes received into the buffer (or 0), the reply's body, its ETag.
#[derive(Debug, Default)]
pub struct Reply {
    pub bytes: u64,
    pub body: Vec<u8>,
    pub etag: Option<String>,
    /// Content-Length of the reply (HEAD: the object's size).
    pub length: Option<u64>,
}

impl Client {
    /// Resolves the endpoint, reads the credentials and sets up TLS. Errors say what to fix.
    pub fn new(target: &Target) -> Result<Client, String> {
        let (creds, from) = creds::find(target.profile.as_deref())?;
        let region = creds::region(target.region.as_deref());
        let (https, endpoint_host, port) = match &target.endpoint {
            Some(e) => (e.https, e.host.clone(), e.port),
            None => (true, format!("s3.{region}.amazonaws.com"), 443),
        };
        let host = match target.style {
            Style::Path => endpoint_host.clone(),
            Style::Virtual => format!("{}.{endpoint_host}", target.bucket),
        };
        let bracketed = if host.contains(':') { format!("[{host}]") } else { host.clone() };
        let default_port = if https { 443 } else { 80 };
        let authority = if port == default_port { bracketed } else { format!("{bracketed}:{port}") };
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&(host.as_str(), port))
            .map_err(|e| format!("{host}:{port}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host}:{port}: no address"))?;
        let tls = if https { Some(tls_for(&host)?) } else { None };
        Ok(Client {
            target: target.clone(),
            addr,
            origin: format!("{}://{authority}", if https { "https" } else { "http" }),
            host: authority,
            bucket_path: match target.style {
                Style::Path => format!("/{}", target.bucket),
                Style::Virtual => String::new(),
            },
            tls,
            identity: aws_credential_types::Credentials::new(
                creds.access_key_id.clone(),
                creds.secret_access_key.clone(),
                creds.session_token.clone(),
                None,
                "ioscope",
            )
            .into(),
            region,
            credentials_from: from,
        })
    }

    /// `scheme://host[:port]`, as the run records it.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Opens a connection (TCP, TLS for https, HTTP/1.1) within the target's timeout (an
    /// endpoint that accepts and never finishes the TLS handshake is a timeout, not a
    /// hang); its driver runs on the current runtime until the connection closes.
    pub async fn connect(&self) -> std::io::Result<Sender> {
        let timeout = self.target.timeout;
        let connect = async {
            let tcp = tokio::net::TcpStream::connect(self.addr).await?;
            tcp.set_nodelay(true)?;
            match &self.tls {
                None => handshake(tcp).await,
                Some((connector, name)) => handshake(connector.connect(name.clone(), tcp).await?).await,
            }
        };
        match tokio::time::timeout(timeout, connect).await {
            Ok(r) => r,
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no connection within {timeout:?} (timeout=)"),
            )),
        }
    }

    /// A signed request for `key` (and `query`, already escaped) with `headers` and `body`.
    pub fn request(
        &self,
        method: Method,
        key: &str,
        query: &str,
        headers: &[(&'static str, String)],
        body: Bytes,
    ) -> Result<Request<Full<Bytes>>, String> {
        let path = format!("{}/{}", self.bucket_path, utf8_percent_encode(key, KEY));
        let path_and_query = if query.is_empty() { path } else { format!("{path}?{query}") };
        let mut req = Request::builder().method(method.clone()).uri(&path_and_query);
        req = req.header(http::header::HOST, &self.host);
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let len = body.len();
        let mut req = req
            .header(http::header::CONTENT_LENGTH, len)
            .body(Full::new(body))
            .map_err(|e| format!("a request for {key:?}: {e}"))?;
        self.sign(&mut req, &format!("{}{path_and_query}", self.origin))?;
        Ok(req)
    }

    fn sign(&self, req: &mut Request<Full<Bytes>>, url: &str) -> Result<(), String> {
        use aws_sigv4::http_request::{
            sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
            UriPathNormalizationMode,
        };
        let mut settings = SigningSettings::default();
        settings.percent_encoding_mode = PercentEncodingMode::Single;
        settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
        settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
        let params = aws_sigv4::sign::v4::SigningParams::builder()
            .identity(&self.identity)
            .region(&self.region)
            .name("s3")
            .time(SystemTime::now())
            .settings(settings)
            .build()
            .map_err(|e| format!("signing: {e}"))?
            .into();
        let headers: Vec<(&str, &str)> =
            req.headers().iter().filter_map(|(k, v)| Some((k.as_str(), v.to_str().ok()?))).collect();
        let signable =
            SignableRequest::new(req.method().as_str(), url, headers.into_iter(), SignableBody::UnsignedPayload)
                .map_err(|e| format!("signing: {e}"))?;
        let (instructions, _) = sign(signable, &params).map_err(|e| format!("signing: {e}"))?.into_parts();
        instructions.apply_to_request_http1x(req);
        Ok(())
    }
}

async fn handshake<T>(io: T) -> std::io::Result<Sender>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(io)).await.map_err(std::io::Error::other)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

fn tls_for(host: &str) -> Result<(tokio_rustls::TlsConnector, rustls::pki_types::ServerName<'static>), String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err("https: no trusted certificates found on this system (install ca-certificates)".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name =
        rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| format!("TLS name {host:?}: {e}"))?;
    Ok((tokio_rustls::TlsConnector::from(Arc::new(config)), name))
}

/// Sends `req` on `sender` (connecting first when there is none, or it closed) and reads
/// the reply `into` where asked, all within `timeout`. A failure is a negative result: an
/// S3 error code or HTTP status (see [`errors`]), ETIMEDOUT, ECONNREFUSED, ECONNRESET, or
/// EPROTO for a reply that does not fit. `sender` is kept only while it can be reused.
pub async fn exchange(
    client: &Client,
    sender: &mut Option<Sender>,
    req: Request<Full<Bytes>>,
    into: Into,
) -> Result<Reply, i64> {
    match tokio::time::timeout(client.target.timeout, exchange_now(client, sender, req, into)).await {
        Ok(r) => r,
        Err(_) => {
            *sender = None;
            Err(-(libc::ETIMEDOUT as i64))
        }
    }
}

fn io_result(e: &std::io::Error) -> i64 {
    match e.kind() {
        std::io::ErrorKind::TimedOut => -(libc::ETIMEDOUT as i64),
        _ => -(e.raw_os_error().unwrap_or(libc::ECONNRESET) as i64),
    }
}

async fn exchange_now(
    client: &Client,
    sender: &mut Option<Sender>,
    req: Request<Full<Bytes>>,
    into: Into,
) -> Result<Reply, i64> {
    let mut s = match sender.take() {
        Some(s) if !s.is_closed() => s,
        _ => client.connect().await.map_err(|e| io_result(&e))?,
    };
    let head = req.method() == Method::HEAD;
    let resp = match s.send_request(req).await {
        Ok(r) => r,
        Err(_) => return Err(-(libc::ECONNRESET as i64)),
    };
    let status = resp.status().as_u16();
    let header = |name: http::header::HeaderName| resp.headers().get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    let mut reply = Reply {
        etag: header(http::header::ETAG).map(str::to_string),
        length: header(http::header::CONTENT_LENGTH).and_then(|v| v.parse().ok()),
        ..Reply::default()
    };
    let ok = (200..300).contains(&status);
    let mut body = resp.into_body();
    let mut text = Vec::new();
    let mut broken = false;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { return Err(-(libc::ECONNRESET as i64)) };
        let Ok(data) = frame.into_data() else { continue };
        match into {
            Into::Buffer(at, cap) if ok => {
                let end = reply.bytes.saturating_add(data.len() as u64);
                if end > cap as u64 {
                    broken = true;
                    break;
                }
                // SAFETY: (at, cap) is the slot's buffer (allocated by IoBuffers, alive
                // while the engine is open), the in-flight GET's alone until its completion
                // is handed back; the copy ends within it (checked above).
                unsafe {
                    std::ptr::copy_nonoverlapping(data.as_ptr(), (at as *mut u8).add(reply.bytes as usize), data.len())
                };
                reply.bytes = end;
            }
            _ if text.len() < MAX_TEXT => {
                let room = MAX_TEXT - text.len();
                text.extend_from_slice(&data[..data.len().min(room)]);
            }
            _ => {}
        }
    }
    if broken {
        // More data than asked: the connection is dropped mid-reply.
        return Err(-(libc::EPROTO as i64));
    }
    if !ok {
        let code = if head { None } else { crate::xml::first(&String::from_utf8_lossy(&text), "Code") };
        *sender = Some(s);
        return Err(errors::result_of(status, code.as_deref()));
    }
    reply.body = text;
    *sender = Some(s);
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A client of an https endpoint at `addr` that trusts nothing (no handshake this test
    /// makes gets that far).
    fn https_client(addr: SocketAddr) -> Client {
        let target =
            Target::parse(&format!("s3://bkt/p?endpoint=https://127.0.0.1:{}&timeout=1", addr.port())).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1".to_string()).unwrap();
        Client {
            target,
            addr,
            host: addr.to_string(),
            origin: format!("https://{addr}"),
            bucket_path: "/bkt".into(),
            tls: Some((tokio_rustls::TlsConnector::from(Arc::new(config)), name)),
            identity: aws_credential_types::Credentials::new("id", "secret", None, None, "test").into(),
            region: "us-east-1".into(),
            credentials_from: "the test".into(),
        }
    }

    #[test]
    fn an_endpoint_that_accepts_and_never_finishes_the_tls_handshake_is_a_timeout() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        // Accepts, reads what comes, never answers (for longer than the bound below).
        std::thread::spawn(move || {
            let held: Vec<_> = l.incoming().take(1).collect();
            std::thread::sleep(Duration::from_secs(30));
            drop(held);
        });
        let client = https_client(addr);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let t = Instant::now();
        let e = rt.block_on(client.connect()).expect_err("no connection to a server that never answers");
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        assert!(e.to_string().contains("no connection within 1s"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(10), "took {:?}", t.elapsed());
    }
}
