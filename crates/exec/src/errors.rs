//! Kinds of failed I/O as the recorders count them: a failed result (a negative errno,
//! or an NFS status as the nfs engine encodes it) or a short transfer becomes a small
//! number, an index into each operation's table of [`ERROR_KINDS`] cells, and the
//! collector names it once a second ("ENOSPC", "NFS3ERR_STALE", "short read").
//!
//! Numbers: 1..=255 errno; `STATUS_LOW`.. NFS statuses 0..=127, `STATUS_HIGH`.. NFS
//! statuses 10000..=10063; [`SHORT`] a transfer of fewer bytes than asked; 0 anything else.

use ioscope_engine::Op;
use ioscope_engine_nfs::engine::NFS_STATUS_BASE;
pub use ioscope_metrics::ERROR_KINDS;

/// Kind 0: a failure no other kind describes.
pub const OTHER: u16 = 0;
const STATUS_LOW: u16 = 256;
const STATUS_HIGH: u16 = 384;
/// A read or write that transferred fewer bytes than asked.
pub const SHORT: u16 = 448;
const _: () = assert!((SHORT as usize) < ERROR_KINDS);

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
    } else {
        OTHER
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
        1..=255 => errno_name(kind as i32),
        STATUS_LOW..=447 => {
            let status =
                if kind < STATUS_HIGH { (kind - STATUS_LOW) as u32 } else { 10_000 + (kind - STATUS_HIGH) as u32 };
            match ioscope_engine_nfs::proto::status_name(status) {
                "NFS3ERR_UNKNOWN" => format!("NFS3 status {status}"),
                name => name.to_string(),
            }
        }
        _ => "other".to_string(),
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
        }
    }
}
