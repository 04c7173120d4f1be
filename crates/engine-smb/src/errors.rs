//! SMB failures by name. A request the server refuses fails with the NTSTATUS of its reply
//! (STATUS_OBJECT_NAME_NOT_FOUND, STATUS_ACCESS_DENIED, STATUS_DISK_FULL ...), encoded as
//! `-(STATUS_BASE + n)` with `n` the status's place in [`STATUSES`]; a status not listed
//! there is kind 0, "an NTSTATUS not known to ioscope" (its code is in the first error's
//! text). Failures of the client side are errnos: ETIMEDOUT (no reply within the target's
//! timeout), ECONNRESET (the connection is gone), ECONNREFUSED, EPROTO (a reply that does
//! not parse), EBADMSG (a signature that does not verify).
//!
//! The codes are Samba's (its `samba.ntstatus` module, from MS-ERREF 2.3.1).

use ioscope_engine::STATUS_BASE;

/// NTSTATUS codes ioscope names, in a fixed order (a status's kind is its index here; new
/// ones go at the end). Index 0: a status not in this list.
pub const STATUSES: &[(u32, &str)] = &[
    (0, "NTSTATUS not known to ioscope"),
    (0xC0000022, "STATUS_ACCESS_DENIED"),
    (0xC0000034, "STATUS_OBJECT_NAME_NOT_FOUND"),
    (0xC000003A, "STATUS_OBJECT_PATH_NOT_FOUND"),
    (0xC0000035, "STATUS_OBJECT_NAME_COLLISION"),
    (0xC000007F, "STATUS_DISK_FULL"),
    (0xC0000043, "STATUS_SHARING_VIOLATION"),
    (0xC0000128, "STATUS_FILE_CLOSED"),
    (0xC0000008, "STATUS_INVALID_HANDLE"),
    (0xC0000011, "STATUS_END_OF_FILE"),
    (0xC0000101, "STATUS_DIRECTORY_NOT_EMPTY"),
    (0xC0000103, "STATUS_NOT_A_DIRECTORY"),
    (0xC00000BA, "STATUS_FILE_IS_A_DIRECTORY"),
    (0xC000000D, "STATUS_INVALID_PARAMETER"),
    (0xC00000BB, "STATUS_NOT_SUPPORTED"),
    (0xC0000002, "STATUS_NOT_IMPLEMENTED"),
    (0xC000006D, "STATUS_LOGON_FAILURE"),
    (0xC00000CC, "STATUS_BAD_NETWORK_NAME"),
    (0xC00000C9, "STATUS_NETWORK_NAME_DELETED"),
    (0xC0000203, "STATUS_USER_SESSION_DELETED"),
    (0xC000035C, "STATUS_NETWORK_SESSION_EXPIRED"),
    (0xC000009A, "STATUS_INSUFFICIENT_RESOURCES"),
    (0xC0000056, "STATUS_DELETE_PENDING"),
    (0xC0000054, "STATUS_FILE_LOCK_CONFLICT"),
    (0xC0000055, "STATUS_LOCK_NOT_GRANTED"),
    (0xC00000B5, "STATUS_IO_TIMEOUT"),
    (0xC0000120, "STATUS_CANCELLED"),
    (0xC0000044, "STATUS_QUOTA_EXCEEDED"),
    (0xC00000A2, "STATUS_MEDIA_WRITE_PROTECTED"),
    (0xC0000033, "STATUS_OBJECT_NAME_INVALID"),
    (0x80000006, "STATUS_NO_MORE_FILES"),
    (0x80000005, "STATUS_BUFFER_OVERFLOW"),
    (0xC0000010, "STATUS_INVALID_DEVICE_REQUEST"),
    (0xC0000121, "STATUS_CANNOT_DELETE"),
    (0xC0000123, "STATUS_FILE_DELETED"),
    (0xC0000106, "STATUS_NAME_TOO_LONG"),
    (0xC000000F, "STATUS_NO_SUCH_FILE"),
    (0xC000006A, "STATUS_WRONG_PASSWORD"),
    (0xC0000072, "STATUS_ACCOUNT_DISABLED"),
    (0xC0000071, "STATUS_PASSWORD_EXPIRED"),
    (0xC0000234, "STATUS_ACCOUNT_LOCKED_OUT"),
    (0xC00000D0, "STATUS_REQUEST_NOT_ACCEPTED"),
    (0xC0000205, "STATUS_INSUFF_SERVER_RESOURCES"),
    (0xC0000017, "STATUS_NO_MEMORY"),
    (0xC000011F, "STATUS_TOO_MANY_OPENED_FILES"),
    (0xC0000904, "STATUS_FILE_TOO_LARGE"),
    (0xC0000003, "STATUS_INVALID_INFO_CLASS"),
    (0xC0000004, "STATUS_INFO_LENGTH_MISMATCH"),
    (0xC0000023, "STATUS_BUFFER_TOO_SMALL"),
    (0xC0000257, "STATUS_PATH_NOT_COVERED"),
    (0xC00000D4, "STATUS_NOT_SAME_DEVICE"),
    (0xC00000C3, "STATUS_INVALID_NETWORK_RESPONSE"),
    (0xC00000CA, "STATUS_NETWORK_ACCESS_DENIED"),
    (0xC00000CB, "STATUS_BAD_DEVICE_TYPE"),
    (0xC0000061, "STATUS_PRIVILEGE_NOT_HELD"),
    (0xC0000005, "STATUS_ACCESS_VIOLATION"),
    (0xC000003E, "STATUS_DATA_ERROR"),
    (0xC00000A3, "STATUS_DEVICE_NOT_READY"),
    (0xC00000E9, "STATUS_UNEXPECTED_IO_ERROR"),
    (0xC0000001, "STATUS_UNSUCCESSFUL"),
    (0xC00000E5, "STATUS_INTERNAL_ERROR"),
    (0xC0000225, "STATUS_NOT_FOUND"),
    (0x8000002D, "STATUS_STOPPED_ON_SYMLINK"),
    (0xC0000427, "STATUS_FILE_SYSTEM_LIMITATION"),
    (0xC000007E, "STATUS_RANGE_NOT_LOCKED"),
    (0xC000003B, "STATUS_OBJECT_PATH_SYNTAX_BAD"),
    (0xC0000039, "STATUS_OBJECT_PATH_INVALID"),
    (0xC000006E, "STATUS_ACCOUNT_RESTRICTION"),
    (0xC000006F, "STATUS_INVALID_LOGON_HOURS"),
    (0xC0000070, "STATUS_INVALID_WORKSTATION"),
    (0xC0000224, "STATUS_PASSWORD_MUST_CHANGE"),
    (0xC0000064, "STATUS_NO_SUCH_USER"),
    (0xC000005E, "STATUS_NO_LOGON_SERVERS"),
    (0xC000018D, "STATUS_TRUSTED_RELATIONSHIP_FAILURE"),
    (0xC00000BD, "STATUS_DUPLICATE_NAME"),
    (0xC00000BE, "STATUS_BAD_NETWORK_PATH"),
    (0xC00000BF, "STATUS_NETWORK_BUSY"),
    (0xC000000E, "STATUS_NO_SUCH_DEVICE"),
    (0xC0000184, "STATUS_INVALID_DEVICE_STATE"),
    (0xC0000098, "STATUS_FILE_INVALID"),
    (0xC000026E, "STATUS_VOLUME_DISMOUNTED"),
    (0xC0000050, "STATUS_EA_TOO_LARGE"),
    (0xC0000051, "STATUS_NONEXISTENT_EA_ENTRY"),
    (0xC0000052, "STATUS_NO_EAS_ON_FILE"),
    (0xC000004F, "STATUS_EAS_NOT_SUPPORTED"),
    (0xC0000279, "STATUS_IO_REPARSE_TAG_NOT_HANDLED"),
    (0xC0000280, "STATUS_REPARSE_POINT_NOT_RESOLVED"),
    (0xC0000275, "STATUS_NOT_A_REPARSE_POINT"),
    (0xC00000D5, "STATUS_FILE_RENAMED"),
    (0xC00000A5, "STATUS_BAD_IMPERSONATION_LEVEL"),
    (0xC000020C, "STATUS_CONNECTION_DISCONNECTED"),
    (0xC000020D, "STATUS_CONNECTION_RESET"),
    (0xC0000236, "STATUS_CONNECTION_REFUSED"),
    (0xC000015B, "STATUS_LOGON_TYPE_NOT_GRANTED"),
    (0xC000028A, "STATUS_ENCRYPTION_FAILED"),
    (0xC000028B, "STATUS_DECRYPTION_FAILED"),
    (0xC000A000, "STATUS_INVALID_SIGNATURE"),
    (0xC0000202, "STATUS_NO_USER_SESSION_KEY"),
    (0xC0000466, "STATUS_SERVER_UNAVAILABLE"),
    (0xC000026D, "STATUS_DFS_UNAVAILABLE"),
    (0xC000019C, "STATUS_FS_DRIVER_REQUIRED"),
    (0xC0000467, "STATUS_FILE_NOT_AVAILABLE"),
    (0xC0000016, "STATUS_MORE_PROCESSING_REQUIRED"),
    (0xC00000E2, "STATUS_OPLOCK_NOT_GRANTED"),
    (0xC0000243, "STATUS_USER_MAPPED_FILE"),
    (0xC000002A, "STATUS_NOT_LOCKED"),
];

const _: () = assert!(STATUSES.len() <= 128);

/// The failed result of a reply with NTSTATUS `status`.
pub fn status_result(status: u32) -> i64 {
    let n = STATUSES.iter().skip(1).position(|(c, _)| *c == status).map_or(0, |i| i + 1);
    -(STATUS_BASE + n as i64)
}

/// The name of status number `n` (of `-(STATUS_BASE + n)`).
pub fn status_name(n: u32) -> String {
    match usize::try_from(n).ok().and_then(|n| STATUSES.get(n)) {
        Some((_, name)) => name.to_string(),
        None => "NTSTATUS not known to ioscope".to_string(),
    }
}

/// The NTSTATUS a failed result carries, if it is a named one.
pub fn status_of(result: i64) -> Option<u32> {
    let n = (-result).checked_sub(STATUS_BASE).filter(|n| *n > 0)?;
    STATUSES.get(usize::try_from(n).ok()?).map(|(c, _)| *c)
}

/// The name of a failed result: an NTSTATUS name or an errno's text.
pub fn error_text(result: i64) -> String {
    match (-result).checked_sub(STATUS_BASE) {
        Some(n) if n >= 0 => status_name(u32::try_from(n).unwrap_or(u32::MAX)),
        _ => ioscope_engine::error_name(result),
    }
}

fn errno(e: i32) -> i64 {
    -(e as i64)
}

/// The failed result of a socket's `io::Error`: its errno, else one of its kind.
pub fn result_of_io(e: &std::io::Error) -> i64 {
    if let Some(n) = e.raw_os_error() {
        return errno(n);
    }
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => errno(libc::EACCES),
        std::io::ErrorKind::TimedOut => errno(libc::ETIMEDOUT),
        std::io::ErrorKind::UnexpectedEof
        | std::io::ErrorKind::ConnectionReset
        | std::io::ErrorKind::ConnectionAborted
        | std::io::ErrorKind::BrokenPipe
        | std::io::ErrorKind::NotConnected => errno(libc::ECONNRESET),
        _ => errno(libc::EPROTO),
    }
}

/// Whether a failed result says the connection (or the session on it) is gone for good:
/// the engine does not reconnect, so the run ends.
pub fn is_gone(result: i64) -> bool {
    result == errno(libc::ECONNRESET)
        || result == errno(libc::ECONNREFUSED)
        || result == errno(libc::EPIPE)
        || matches!(
            status_of(result),
            Some(0xC000_00C9 | 0xC000_0203 | 0xC000_035C | 0xC000_020C | 0xC000_020D) // NETWORK_NAME_DELETED, USER_SESSION_DELETED, NETWORK_SESSION_EXPIRED, CONNECTION_DISCONNECTED, CONNECTION_RESET
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_named_and_distinct() {
        assert_eq!(error_text(status_result(0xC000_0034)), "STATUS_OBJECT_NAME_NOT_FOUND");
        assert_eq!(error_text(status_result(0xC000_0022)), "STATUS_ACCESS_DENIED");
        assert_eq!(error_text(status_result(0xC000_007F)), "STATUS_DISK_FULL");
        assert_eq!(error_text(status_result(0xC000_006D)), "STATUS_LOGON_FAILURE");
        assert_eq!(error_text(status_result(0xC0DE_0001)), "NTSTATUS not known to ioscope");
        assert_eq!(status_of(status_result(0xC000_0043)), Some(0xC000_0043));
        assert_eq!(status_of(status_result(0xC0DE_0001)), None);
        assert_eq!(error_text(errno(libc::ETIMEDOUT)), ioscope_engine::error_name(errno(libc::ETIMEDOUT)));
        let mut codes: Vec<u32> = STATUSES.iter().map(|(c, _)| *c).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), STATUSES.len(), "a status is listed twice");
        assert!(STATUSES.iter().skip(1).all(|(_, n)| n.starts_with("STATUS_")));
        for n in 0..200 {
            assert!(!status_name(n).is_empty());
        }
    }

    #[test]
    fn socket_errors_map_to_their_errno_and_lost_sessions_end_the_run() {
        let refused = std::io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(result_of_io(&refused), errno(libc::ECONNREFUSED));
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        assert_eq!(result_of_io(&eof), errno(libc::ECONNRESET));
        assert!(is_gone(errno(libc::ECONNRESET)));
        assert!(is_gone(status_result(0xC000_0203)));
        assert!(!is_gone(status_result(0xC000_0034)));
        assert!(!is_gone(errno(libc::ETIMEDOUT)));
    }
}
