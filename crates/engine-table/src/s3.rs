//! The `s3://` target: `s3://BUCKET[/PREFIX]?endpoint=URL&region=R&style=path|virtual&
//! profile=P&timeout=S&part_size=SIZE`. Objects live under PREFIX in BUCKET; `endpoint`
//! is the server (`http://127.0.0.1:9000`, default `https://s3.REGION.amazonaws.com`).
//! Credentials are never part of a target: they come from the environment or a profile
//! when the run starts (see `ioscope-engine-s3`).
//! Also the `s3` engine's entry in the table (the engine itself is `ioscope-engine-s3`).

use crate::nfs::{clip, split_authority};
use crate::{Capabilities, EngineKind, EngineSpec, InvalidTarget, TargetKind, TargetRule};
use std::time::Duration;

/// The `s3` engine: S3 requests over HTTP/1.1 from user space.
pub const SPEC: EngineSpec = EngineSpec {
    kind: EngineKind::S3,
    name: "s3",
    aliases: &[],
    description: "S3 objects over HTTP(S): GET (whole or ranged), PUT, HEAD, DELETE, LIST, multipart; needs --target s3://...",
    caps: Capabilities {
        // No page cache on this host to bypass: direct = true changes nothing.
        direct_align_bytes: 0,
        file_ops: true,
        objects: true,
        target: Some(TargetRule {
            expected: "an S3 target like s3://bucket/prefix?endpoint=http://127.0.0.1:9000",
            missing: "engine s3 loads an S3 server: say which bucket (--target or target = \"s3://BUCKET/PREFIX?endpoint=URL\")",
            example: "s3://bucket/prefix?endpoint=http://127.0.0.1:9000",
            parse,
        }),
        ..Capabilities::LOCAL
    },
    note: Some(
        "engine s3 has no client cache: every request went to the server, whose own cache may have served it",
    ),
    cache: Some("no client cache"),
};

fn parse(url: &str) -> Result<crate::Target, InvalidTarget> {
    let t = Target::parse(url).map_err(|e| InvalidTarget(e.0))?;
    Ok(crate::Target { url: url.to_string(), root: t.root(), kind: TargetKind::S3(t) })
}

/// What is wrong with a target, and the form expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} (expected s3://BUCKET[/PREFIX][?endpoint=http[s]://HOST[:PORT]&region=R&style=path|virtual&profile=P&timeout=S&part_size=SIZE])")]
pub struct TargetError(pub String);

/// How a bucket is addressed: in the path (`http://host/bucket/key`, what S3-compatible
/// servers expect) or in the host name (`https://bucket.s3.region.amazonaws.com/key`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Path,
    Virtual,
}

/// Where requests go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub https: bool,
    pub host: String,
    pub port: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub bucket: String,
    /// Where the objects are, without leading or trailing `/` ("" for the whole bucket).
    pub prefix: String,
    /// None: AWS, `https://s3.REGION.amazonaws.com`, virtual-hosted.
    pub endpoint: Option<Endpoint>,
    /// None: the environment's (AWS_REGION, AWS_DEFAULT_REGION), else us-east-1.
    pub region: Option<String>,
    pub style: Style,
    /// The credentials profile to read (else AWS_PROFILE, else `default`); a name only.
    pub profile: Option<String>,
    /// How long a request may take before it counts as timed out.
    pub timeout: Duration,
    /// Bytes per part of a multipart upload (objects written in parts).
    pub part_size_bytes: u64,
}

/// S3's smallest part (but the last), and its largest.
pub const MIN_PART_BYTES: u64 = 5 << 20;
pub const MAX_PART_BYTES: u64 = 5 << 30;
/// The default part size: the size the preparation writes objects in.
pub const DEFAULT_PART_BYTES: u64 = 8 << 20;

/// Bucket names as S3 allows them: 3 to 63 lowercase letters, digits, `.` and `-`,
/// starting and ending with a letter or digit.
fn valid_bucket(b: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    (3..=63).contains(&b.len())
        && b.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        && edge(b.chars().next())
        && edge(b.chars().last())
        && !b.contains("..")
}

fn parse_size(v: &str) -> Option<u64> {
    let (num, mult) = match v.to_ascii_lowercase().chars().last()? {
        'k' => (&v[..v.len() - 1], 1u64 << 10),
        'm' => (&v[..v.len() - 1], 1 << 20),
        'g' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mult)
}

impl Target {
    pub fn parse(url: &str) -> Result<Target, TargetError> {
        let err = |m: String| TargetError(m);
        let rest =
            url.strip_prefix("s3://").ok_or_else(|| err(format!("{:?} does not start with s3://", clip(url))))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if !valid_bucket(bucket) {
            return Err(err(format!(
                "bucket {:?}: expected 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit",
                clip(bucket)
            )));
        }
        let prefix = prefix.trim_matches('/');
        if prefix.split('/').any(|c| c == "." || c == "..") || prefix.contains("//") {
            return Err(err(format!("prefix {:?} has an empty, . or .. part", clip(prefix))));
        }
        if prefix.len() > 900 || prefix.chars().any(char::is_control) {
            return Err(err(format!(
                "prefix {:?}: expected at most 900 bytes (keys are at most 1024) without control characters",
                clip(prefix)
            )));
        }
        let mut t = Target {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
            endpoint: None,
            region: None,
            style: Style::Virtual,
            profile: None,
            timeout: Duration::from_secs(30),
            part_size_bytes: DEFAULT_PART_BYTES,
        };
        let mut style = None;
        for (k, v) in crate::query::options(query).map_err(err)? {
            let word = |what: &str| -> Result<String, TargetError> {
                let ok =
                    !v.is_empty() && v.len() <= 64 && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
                ok.then(|| v.to_string())
                    .ok_or_else(|| err(format!("{k}={:?}: expected {what} (letters, digits, '-', '_', '.')", clip(v))))
            };
            match k {
                "endpoint" => {
                    let (https, authority) = match (v.strip_prefix("http://"), v.strip_prefix("https://")) {
                        (Some(a), _) => (false, a),
                        (_, Some(a)) => (true, a),
                        _ => {
                            return Err(err(format!(
                                "endpoint={:?}: expected http://HOST[:PORT] or https://HOST[:PORT]",
                                clip(v)
                            )))
                        }
                    };
                    let authority = authority.strip_suffix('/').unwrap_or(authority);
                    if authority.contains('/') {
                        return Err(err(format!("endpoint={:?}: expected no path after HOST[:PORT]", clip(v))));
                    }
                    let (host, port) = split_authority(authority).map_err(|e| err(format!("endpoint: {}", e.0)))?;
                    t.endpoint = Some(Endpoint { https, host, port: port.unwrap_or(if https { 443 } else { 80 }) });
                }
                "region" => t.region = Some(word("a region like us-east-1")?),
                "profile" => t.profile = Some(word("a profile name")?),
                "style" => {
                    style = Some(match v {
                        "path" => Style::Path,
                        "virtual" => Style::Virtual,
                        _ => return Err(err(format!("style={:?}: expected path or virtual", clip(v)))),
                    })
                }
                "timeout" => t.timeout = crate::query::timeout(v).map_err(err)?,
                "part_size" => {
                    t.part_size_bytes =
                        parse_size(v).filter(|n| (MIN_PART_BYTES..=MAX_PART_BYTES).contains(n)).ok_or_else(|| {
                            err(format!("part_size={:?}: expected a size from 5m to 5g (S3's limits)", clip(v)))
                        })?
                }
                _ => {
                    return Err(err(format!(
                        "unknown option {:?} (endpoint, region, style, profile, timeout, part_size)",
                        clip(k)
                    )))
                }
            }
        }
        // A server of one's own is addressed by path; AWS by host name.
        t.style = style.unwrap_or(if t.endpoint.is_some() { Style::Path } else { Style::Virtual });
        if t.style == Style::Virtual && bucket.contains('.') && t.endpoint.as_ref().is_none_or(|e| e.https) {
            return Err(err(format!(
                "bucket {bucket:?} has a '.', which TLS certificates of virtual-hosted names do not cover: add style=path"
            )));
        }
        Ok(t)
    }

    /// `s3://BUCKET[/PREFIX]`: how objects under the target are spelt (a dataset's
    /// anchor, the keys of its tree), without the options.
    pub fn root(&self) -> String {
        match self.prefix.as_str() {
            "" => format!("s3://{}", self.bucket),
            p => format!("s3://{}/{p}", self.bucket),
        }
    }

    /// The key of a path spelt under [`Target::root`] (`s3://BUCKET/KEY`); None for a path
    /// in another bucket.
    pub fn key_of<'p>(&self, path: &'p str) -> Option<&'p str> {
        let rest = path.strip_prefix("s3://")?.strip_prefix(self.bucket.as_str())?;
        match rest {
            "" => Some(""),
            r => r.strip_prefix('/'),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_target_parses() {
        let t =
            Target::parse("s3://ioscope/run1/a?endpoint=http://127.0.0.1:45000&region=eu-west-1&timeout=5").unwrap();
        assert_eq!((t.bucket.as_str(), t.prefix.as_str()), ("ioscope", "run1/a"));
        assert_eq!(t.endpoint, Some(Endpoint { https: false, host: "127.0.0.1".into(), port: 45000 }));
        assert_eq!((t.region.as_deref(), t.style, t.timeout), (Some("eu-west-1"), Style::Path, Duration::from_secs(5)));
        assert_eq!(t.root(), "s3://ioscope/run1/a");
        assert_eq!(t.key_of("s3://ioscope/run1/a/f0"), Some("run1/a/f0"));
        assert_eq!(t.key_of("s3://other/run1/a/f0"), None);
        let t = Target::parse("s3://bucket").unwrap();
        assert_eq!((t.prefix.as_str(), t.style, t.endpoint.is_none()), ("", Style::Virtual, true));
        assert_eq!(t.root(), "s3://bucket");
        let t = Target::parse("s3://bucket/p/?endpoint=https://[::1]&part_size=16m&style=virtual").unwrap();
        assert_eq!((t.prefix.as_str(), t.part_size_bytes, t.style), ("p", 16 << 20, Style::Virtual));
        assert_eq!(t.endpoint.unwrap().port, 443);
    }

    #[test]
    fn bad_targets_say_what_is_wrong() {
        for (url, says) in [
            ("nfs://x/y", "does not start with s3://"),
            ("s3://Bucket/x", "lowercase"),
            ("s3://ab", "3 to 63"),
            ("s3://bucket/a/../b", ". or .."),
            ("s3://bucket/a//b", "empty"),
            ("s3://bucket?endpoint=ftp://x", "http://HOST"),
            ("s3://bucket?endpoint=http://x:0", "port"),
            ("s3://bucket?endpoint=http://x/path", "no path"),
            ("s3://bucket?part_size=1m", "5m to 5g"),
            ("s3://bucket?timeout=0", "1 to 3600"),
            ("s3://bucket?region=a/b", "region"),
            ("s3://bucket?style=x", "path or virtual"),
            ("s3://bucket?secret=x", "unknown option"),
            ("s3://bucket?region=a&region=b", "twice"),
            ("s3://my.bucket", "style=path"),
        ] {
            let e = Target::parse(url).unwrap_err().to_string();
            assert!(e.contains(says), "{url}: {e}");
            assert!(e.contains("expected s3://BUCKET"), "{url}: {e}");
        }
    }
}
