//! Operations an engine performs and the description of one I/O.

/// Operation kinds. The numeric value indexes per-op recorders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Op {
    Read = 0,
    Write = 1,
    Fsync = 2,
    Fdatasync = 3,
    Open = 4,
    Close = 5,
    Create = 6,
    Delete = 7,
    Mkdir = 8,
    Rmdir = 9,
    Getattr = 10,
    Setattr = 11,
    Copy = 12,
    Move = 13,
}

/// Number of [`Op`] kinds.
pub const OP_KINDS: usize = 14;

impl Op {
    pub const ALL: [Op; OP_KINDS] = [
        Op::Read,
        Op::Write,
        Op::Fsync,
        Op::Fdatasync,
        Op::Open,
        Op::Close,
        Op::Create,
        Op::Delete,
        Op::Mkdir,
        Op::Rmdir,
        Op::Getattr,
        Op::Setattr,
        Op::Copy,
        Op::Move,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Fsync => "fsync",
            Op::Fdatasync => "fdatasync",
            Op::Open => "open",
            Op::Close => "close",
            Op::Create => "create",
            Op::Delete => "delete",
            Op::Mkdir => "mkdir",
            Op::Rmdir => "rmdir",
            Op::Getattr => "getattr",
            Op::Setattr => "setattr",
            Op::Copy => "copy",
            Op::Move => "move",
        }
    }
    /// Transfers data (has a size and an offset).
    pub fn is_data(self) -> bool {
        matches!(self, Op::Read | Op::Write)
    }
}

/// One I/O request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Io {
    pub op: Op,
    /// Index into [`crate::OpenSpec::files`].
    pub file: u32,
    pub offset: u64,
    pub len: u32,
    /// In-flight slot: selects the buffer and identifies the completion.
    pub slot: u32,
}

/// A file or directory operation by path (engines with file operations in the engine table).
#[derive(Clone, Copy, Debug)]
pub struct FileReq<'p> {
    /// Open, Close, Create, Delete, Mkdir, Rmdir, Getattr, Setattr, Copy or Move.
    pub op: Op,
    pub path: &'p std::path::Path,
    /// Copy and Move: the new path.
    pub to: Option<&'p std::path::Path>,
    /// Open: the handle later [`Io`]s use as [`Io::file`]; Close: the handle to close.
    pub file: u32,
    /// Open: for writing too.
    pub write: bool,
    /// Create: bytes to write into the new file (from buffer slot 0, repeated).
    pub size: u64,
}
