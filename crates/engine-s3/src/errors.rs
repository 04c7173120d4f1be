//! S3 failures by name. A request the server refuses fails with the error code of its
//! reply (`<Error><Code>NoSuchKey</Code>…`), encoded as `-(STATUS_BASE + n)` with `n` the
//! code's place in [`CODES`]; a code not listed there, or a reply without one (HEAD has no
//! body), is named by its HTTP status. Throttling (SlowDown, 503, 429) is its own kind, so
//! it is its own series in every view of errors.

use ioscope_engine::STATUS_BASE;

/// Error codes S3 and its compatible servers answer with (Amazon S3's error code list,
/// plus MinIO's storage-full and not-initialized). Index 0: a code not in this list.
pub const CODES: &[&str] = &[
    "S3 error code not known to ioscope",
    "AccessDenied",
    "BadDigest",
    "BucketAlreadyExists",
    "BucketAlreadyOwnedByYou",
    "BucketNotEmpty",
    "EntityTooSmall",
    "EntityTooLarge",
    "ExpiredToken",
    "IncompleteBody",
    "InternalError",
    "InvalidAccessKeyId",
    "InvalidArgument",
    "InvalidBucketName",
    "InvalidDigest",
    "InvalidObjectState",
    "InvalidPart",
    "InvalidPartOrder",
    "InvalidRange",
    "InvalidRequest",
    "InvalidToken",
    "KeyTooLongError",
    "MalformedXML",
    "MethodNotAllowed",
    "MissingContentLength",
    "NoSuchBucket",
    "NoSuchKey",
    "NoSuchUpload",
    "NotImplemented",
    "PreconditionFailed",
    "RequestTimeout",
    "RequestTimeTooSkewed",
    "ServiceUnavailable",
    "SignatureDoesNotMatch",
    "SlowDown",
    "TooManyRequests",
    "OperationAborted",
    "QuotaExceeded",
    "XMinioStorageFull",
    "XMinioServerNotInitialized",
    "NotFound",
];

/// HTTP statuses named when a reply has no code ioscope knows, at `HTTP_BASE + i`.
const HTTP_STATUSES: [u16; 15] = [400, 401, 403, 404, 405, 409, 411, 412, 416, 429, 500, 501, 502, 503, 504];
const HTTP_BASE: usize = 96;
/// Other 4xx, other 5xx, anything else.
const HTTP_OTHER_4XX: usize = HTTP_BASE + HTTP_STATUSES.len();
const HTTP_OTHER_5XX: usize = HTTP_OTHER_4XX + 1;
const HTTP_OTHER: usize = HTTP_OTHER_5XX + 1;
const _: () = assert!(CODES.len() <= HTTP_BASE && HTTP_OTHER < 128);

/// The failed result of a reply with HTTP `status` and error `code` (None: no body, or no
/// `<Code>` in it).
pub fn result_of(status: u16, code: Option<&str>) -> i64 {
    let n = match code.and_then(|c| CODES.iter().position(|k| *k == c)) {
        Some(i) => i,
        // HEAD has no body: a missing object is S3's NotFound.
        None if code.is_none() && status == 404 => CODES.iter().position(|k| *k == "NotFound").unwrap_or(0),
        None => match HTTP_STATUSES.iter().position(|s| *s == status) {
            Some(i) => HTTP_BASE + i,
            None if (400..500).contains(&status) => HTTP_OTHER_4XX,
            None if (500..600).contains(&status) => HTTP_OTHER_5XX,
            None => HTTP_OTHER,
        },
    };
    -(STATUS_BASE + n as i64)
}

/// The name of status number `n` (of `-(STATUS_BASE + n)`).
pub fn status_name(n: u32) -> String {
    let n = n as usize;
    if let Some(code) = CODES.get(n) {
        return code.to_string();
    }
    match n {
        HTTP_OTHER_4XX => "HTTP 4xx".into(),
        HTTP_OTHER_5XX => "HTTP 5xx".into(),
        n if (HTTP_BASE..HTTP_OTHER_4XX).contains(&n) => format!("HTTP {}", HTTP_STATUSES[n - HTTP_BASE]),
        _ => "HTTP status not 2xx".into(),
    }
}

/// Whether a failed result is the server asking the client to slow down.
pub fn is_throttle(result: i64) -> bool {
    let n = (-result).checked_sub(STATUS_BASE).and_then(|n| usize::try_from(n).ok());
    matches!(n.and_then(|n| CODES.get(n).copied()), Some("SlowDown" | "TooManyRequests" | "ServiceUnavailable"))
        || n == HTTP_STATUSES.iter().position(|s| *s == 429).map(|i| HTTP_BASE + i)
        || n == HTTP_STATUSES.iter().position(|s| *s == 503).map(|i| HTTP_BASE + i)
}

/// The name of a failed result: an S3 error code, an HTTP status, or an errno.
pub fn error_text(result: i64) -> String {
    match (-result).checked_sub(STATUS_BASE) {
        Some(n) if n >= 0 => status_name(u32::try_from(n).unwrap_or(u32::MAX)),
        _ => ioscope_engine::error_name(result),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_statuses_are_named() {
        assert_eq!(error_text(result_of(404, Some("NoSuchKey"))), "NoSuchKey");
        assert_eq!(error_text(result_of(503, Some("SlowDown"))), "SlowDown");
        assert_eq!(error_text(result_of(404, None)), "NotFound", "HEAD of a missing object");
        assert_eq!(error_text(result_of(403, None)), "HTTP 403");
        assert_eq!(error_text(result_of(418, Some("Teapot"))), "HTTP 4xx");
        assert_eq!(error_text(result_of(507, None)), "HTTP 5xx");
        assert_eq!(error_text(result_of(500, Some("WeirdError"))), "HTTP 500");
        assert_eq!(error_text(-(libc::ECONNREFUSED as i64)), ioscope_engine::error_name(-(libc::ECONNREFUSED as i64)));
        assert!(is_throttle(result_of(503, Some("SlowDown"))));
        assert!(is_throttle(result_of(429, None)));
        assert!(!is_throttle(result_of(404, Some("NoSuchKey"))));
        for n in 0..128 {
            assert!(!status_name(n).is_empty());
        }
    }
}
