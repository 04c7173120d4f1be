//! Kinds of failed I/O as the recorders count them: a failed result (a negative errno,
//! or an NFS status as the nfs engine encodes it) or a short transfer becomes a small
//! number, an index into each operation's table of [`ERROR_KINDS`] cells, and the
//! collector names it once a second ("ENOSPC", "NFS3ERR_STALE", "short read").
//!
//! Numbers: 1..=255 errno; `STATUS_LOW`.. NFS statuses 0..=127, `STATUS_HIGH`.. NFS
//! statuses 10000..=10063, `STATUS_HIGHER`.. 10064..=10099 (NFSv4.1's session errors);
//! [`SHORT`] a transfer of fewer bytes than asked; 0 anything else. The statuses are
//! named as the target's protocol names them ([`namer`]): NFSv3 or NFSv4 statuses, S3
//! error codes or SMB NTSTATUS names (which the s3 and smb engines encode in the low range).

use ioscope_engine::Op;
use ioscope_engine_nfs::engine::NFS_STATUS_BASE;
pub use ioscope_metrics::ERROR_KINDS;

/// Kind 0: a failure no other kind describes.
pub const OTHER: u16 = 0;
const STATUS_LOW: u16 = 256;
const STATUS_HIGH: u16 = 384;
/// A read or write that transferred fewer bytes than asked.
pub const SHORT: u16 = 448;
const STATUS_HIGHER: u16 = 453;
/// The mismatch kinds of op `verify` (ioscope_verify::Kind), after the 36 of STATUS_HIGHER.
const VERIFY_KINDS: u16 = STATUS_HIGHER + 36;
const VERIFY_LAST: u16 = VERIFY_KINDS + ioscope_verify::Kind::ALL.len() as u16 - 1;
const _: () = assert!((VERIFY_LAST as usize) < ERROR_KINDS);

/// The error kind of a verify mismatch.
#[inline(always)]
pub fn verify_kind(kind: ioscope_verify::Kind) -> u16 {
    VERIFY_KINDS + kind as u16
}

/// The kind of a failed result (negative).
#[inline(always)]
pub fn kind_of(result: i64) -> u16 {
    let r = result.unsigned_abs();
    let base = NFS_STATUS_BASE as u64;
    if (1..256).contains(&r) {
        r as u16
    } else if (base..base + 128).contains(&r) {
        STATUS_LOW + (r - base) as u16
    } else if (base + 10_000..base + 10_064).contains(&r) {
        STATUS_HIGH + (r - base - 10_000) as u16
    } else if (base + 10_064..base + 10_100).contains(&r) {
        STATUS_HIGHER + (r - base - 10_064) as u16
    } else {
        OTHER
    }
}

/// How a plan's error kinds are named: NFSv4 statuses by their NFS4ERR_ names for an
/// NFSv4.1 target, else [`kind_name`].
pub fn namer(plan: &ioscope_workload::Plan) -> ioscope_metrics::KindNamer {
    use ioscope_workload::TargetKind;
    match plan.target.as_ref().map(|t| &t.kind) {
        Some(TargetKind::Nfs(t)) if t.version == ioscope_engine_nfs::target::Version::V41 => kind_name_nfs4,
        Some(TargetKind::S3(_)) => kind_name_s3,
        Some(TargetKind::Smb(_)) => kind_name_smb,
        _ => kind_name,
    }
}

/// The NFS status of a kind, if it is one.
fn status_of(kind: u16) -> Option<u32> {
    match kind {
        STATUS_LOW..STATUS_HIGH => Some((kind - STATUS_LOW) as u32),
        STATUS_HIGH..SHORT => Some(10_000 + (kind - STATUS_HIGH) as u32),
        STATUS_HIGHER..=488 => Some(10_064 + (kind - STATUS_HIGHER) as u32),
        _ => None,
    }
}

/// [`kind_name`] with S3 error codes and HTTP statuses (NoSuchKey, SlowDown, HTTP 503).
pub fn kind_name_s3(op: usize, kind: u16) -> String {
    match status_of(kind) {
        Some(status) => ioscope_engine_s3::errors::status_name(status),
        None => kind_name(op, kind),
    }
}

/// [`kind_name`] with NTSTATUS names (STATUS_OBJECT_NAME_NOT_FOUND, STATUS_DISK_FULL).
pub fn kind_name_smb(op: usize, kind: u16) -> String {
    match status_of(kind) {
        Some(status) if status < 128 => ioscope_engine_smb::errors::status_name(status),
        _ => kind_name(op, kind),
    }
}

/// [`kind_name`] with NFSv4 status names (NFS4ERR_BADSESSION, ...).
pub fn kind_name_nfs4(op: usize, kind: u16) -> String {
    match status_of(kind) {
        Some(status) => match ioscope_engine_nfs::v4::proto::status_name(status) {
            "NFS4ERR_UNKNOWN" => format!("NFS4 status {status}"),
            name => name.to_string(),
        },
        None => kind_name(op, kind),
    }
}

/// The name of kind `kind` of operation `op` (an index of [`Op::ALL`]).
pub fn kind_name(op: usize, kind: u16) -> String {
    match kind {
        SHORT => match Op::ALL.get(op) {
            Some(Op::Write) => "short write".to_string(),
            Some(Op::Read) => "short read".to_string(),
            _ => "short transfer".to_string(),
        },
        VERIFY_KINDS..=VERIFY_LAST if Op::ALL.get(op) == Some(&Op::Verify) => {
            ioscope_verify::Kind::ALL[(kind - VERIFY_KINDS) as usize].name().to_string()
        }
        1..=255 => errno_name(kind as i32),
        _ => match status_of(kind) {
            Some(status) => match ioscope_engine_nfs::proto::status_name(status) {
                "NFS3ERR_UNKNOWN" => format!("NFS3 status {status}"),
                name => name.to_string(),
            },
            None => "other".to_string(),
        },
    }
}

/// Linux errno names, by value.
const ERRNO: [&str; 134] = [
    "",
    "EPERM",
    "ENOENT",
    "ESRCH",
    "EINTR",
    "EIO",
    "ENXIO",
    "E2BIG",
    "ENOEXEC",
    "EBADF",
    "ECHILD",
    "EAGAIN",
    "ENOMEM",
    "EACCES",
    "EFAULT",
    "ENOTBLK",
    "EBUSY",
    "EEXIST",
    "EXDEV",
    "ENODEV",
    "ENOTDIR",
    "EISDIR",
    "EINVAL",
    "ENFILE",
    "EMFILE",
    "ENOTTY",
    "ETXTBSY",
    "EFBIG",
    "ENOSPC",
    "ESPIPE",
    "EROFS",
    "EMLINK",
    "EPIPE",
    "EDOM",
    "ERANGE",
    "EDEADLK",
    "ENAMETOOLONG",
    "ENOLCK",
    "ENOSYS",
    "ENOTEMPTY",
    "ELOOP",
    "",
    "ENOMSG",
    "EIDRM",
    "ECHRNG",
    "EL2NSYNC",
    "EL3HLT",
    "EL3RST",
    "ELNRNG",
    "EUNATCH",
    "ENOCSI",
    "EL2HLT",
    "EBADE",
    "EBADR",
    "EXFULL",
    "ENOANO",
    "EBADRQC",
    "EBADSLT",
    "",
    "EBFONT",
    "ENOSTR",
    "ENODATA",
    "ETIME",
    "ENOSR",
    "ENONET",
    "ENOPKG",
    "EREMOTE",
    "ENOLINK",
    "EADV",
    "ESRMNT",
    "ECOMM",
    "EPROTO",
    "EMULTIHOP",
    "EDOTDOT",
    "EBADMSG",
    "EOVERFLOW",
    "ENOTUNIQ",
    "EBADFD",
    "EREMCHG",
    "ELIBACC",
    "ELIBBAD",
    "ELIBSCN",
    "ELIBMAX",
    "ELIBEXEC",
    "EILSEQ",
    "ERESTART",
    "ESTRPIPE",
    "EUSERS",
    "ENOTSOCK",
    "EDESTADDRREQ",
    "EMSGSIZE",
    "EPROTOTYPE",
    "ENOPROTOOPT",
    "EPROTONOSUPPORT",
    "ESOCKTNOSUPPORT",
    "EOPNOTSUPP",
    "EPFNOSUPPORT",
    "EAFNOSUPPORT",
    "EADDRINUSE",
    "EADDRNOTAVAIL",
    "ENETDOWN",
    "ENETUNREACH",
    "ENETRESET",
    "ECONNABORTED",
    "ECONNRESET",
    "ENOBUFS",
    "EISCONN",
    "ENOTCONN",
    "ESHUTDOWN",
    "ETOOMANYREFS",
    "ETIMEDOUT",
    "ECONNREFUSED",
    "EHOSTDOWN",
    "EHOSTUNREACH",
    "EALREADY",
    "EINPROGRESS",
    "ESTALE",
    "EUCLEAN",
    "ENOTNAM",
    "ENAVAIL",
    "EISNAM",
    "EREMOTEIO",
    "EDQUOT",
    "ENOMEDIUM",
    "EMEDIUMTYPE",
    "ECANCELED",
    "ENOKEY",
    "EKEYEXPIRED",
    "EKEYREVOKED",
    "EKEYREJECTED",
    "EOWNERDEAD",
    "ENOTRECOVERABLE",
    "ERFKILL",
    "EHWPOISON",
];

/// The symbolic name of an errno ("ENOSPC"), or "errno N" for one without a name.
pub fn errno_name(errno: i32) -> String {
    match usize::try_from(errno).ok().and_then(|i| ERRNO.get(i)).filter(|n| !n.is_empty()) {
        Some(n) => n.to_string(),
        None => format!("errno {errno}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_named_by_errno_nfs_status_or_short_transfer() {
        let name = |op: Op, result: i64| kind_name(op as usize, kind_of(result));
        assert_eq!(name(Op::Write, -(libc::ENOSPC as i64)), "ENOSPC");
        assert_eq!(name(Op::Write, -(libc::EROFS as i64)), "EROFS");
        assert_eq!(name(Op::Read, -(libc::EIO as i64)), "EIO");
        assert_eq!(name(Op::Read, -(NFS_STATUS_BASE + 70)), "NFS3ERR_STALE");
        assert_eq!(name(Op::Write, -(NFS_STATUS_BASE + 10008)), "NFS3ERR_JUKEBOX");
        assert_eq!(name(Op::Read, -(NFS_STATUS_BASE + 99)), "NFS3 status 99");
        assert_eq!(name(Op::Read, -(NFS_STATUS_BASE + 5000)), "other");
        assert_eq!(name(Op::Read, -100_000), "other");
        assert_eq!(name(Op::Read, i64::MIN), "other");
        assert_eq!(kind_name(Op::Read as usize, SHORT), "short read");
        assert_eq!(kind_name(Op::Write as usize, SHORT), "short write");
        assert_eq!(errno_name(41), "errno 41");
        assert_eq!(errno_name(-3), "errno -3");
        for k in 0..ERROR_KINDS as u16 {
            assert!(!kind_name(0, k).is_empty());
            assert!(!kind_name_nfs4(0, k).is_empty());
        }
    }

    #[test]
    fn smb_statuses_are_named_by_their_ntstatus_names() {
        use ioscope_engine_smb::errors::status_result;
        let name = |op: Op, result: i64| kind_name_smb(op as usize, kind_of(result));
        assert_eq!(name(Op::Read, status_result(0xC000_0034)), "STATUS_OBJECT_NAME_NOT_FOUND");
        assert_eq!(name(Op::Write, status_result(0xC000_007F)), "STATUS_DISK_FULL");
        assert_eq!(name(Op::Create, status_result(0xC000_0022)), "STATUS_ACCESS_DENIED");
        assert_eq!(name(Op::Read, -(libc::ETIMEDOUT as i64)), "ETIMEDOUT", "a request that timed out");
        assert_eq!(kind_name_smb(Op::Read as usize, SHORT), "short read");
        for k in 0..ERROR_KINDS as u16 {
            assert!(!kind_name_smb(0, k).is_empty());
        }
        let plan = crate::test_plan("engine = 'smb'\ntarget = 'smb://u@s/share/d'");
        assert_eq!(namer(&plan)(0, kind_of(status_result(0xC000_0043))), "STATUS_SHARING_VIOLATION");
    }

    #[test]
    fn nfs4_statuses_are_named_by_their_nfs4err_names_up_to_the_session_errors() {
        let name = |op: Op, result: i64| kind_name_nfs4(op as usize, kind_of(result));
        assert_eq!(name(Op::Write, -(NFS_STATUS_BASE + 28)), "NFS4ERR_NOSPC");
        assert_eq!(name(Op::Read, -(NFS_STATUS_BASE + 10008)), "NFS4ERR_DELAY");
        assert_eq!(name(Op::Read, -(NFS_STATUS_BASE + 10052)), "NFS4ERR_BADSESSION");
        assert_eq!(name(Op::Read, -(NFS_STATUS_BASE + 10078)), "NFS4ERR_DEADSESSION");
        assert_eq!(name(Op::Read, -(NFS_STATUS_BASE + 10011)), "NFS4ERR_EXPIRED");
        assert_eq!(name(Op::Read, -(libc::EIO as i64)), "EIO", "errnos are named as before");
        assert_eq!(kind_name_nfs4(Op::Write as usize, SHORT), "short write");
        // Distinct statuses stay distinct kinds.
        let kinds: std::collections::HashSet<u16> = (10_000..10_100).map(|s| kind_of(-(NFS_STATUS_BASE + s))).collect();
        assert_eq!(kinds.len(), 100);
        let plan = crate::test_plan("engine = 'nfs'\ntarget = 'nfs://s/e?version=4.1'");
        assert_eq!(namer(&plan)(0, kind_of(-(NFS_STATUS_BASE + 10052))), "NFS4ERR_BADSESSION");
        let plan = crate::test_plan("engine = 'nfs'\ntarget = 'nfs://s/e'");
        assert_eq!(namer(&plan)(0, kind_of(-(NFS_STATUS_BASE + 10008))), "NFS3ERR_JUKEBOX");
    }
}
