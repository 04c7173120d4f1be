//! Operations an engine performs and the description of one I/O.

/// Operation kinds. The numeric value indexes per-op recorders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Op {
    Read = 0,
    Write = 1,
    Fsync = 2,
    Fdatasync = 3,
}

/// Number of [`Op`] kinds.
pub const OP_KINDS: usize = 4;

impl Op {
    pub const ALL: [Op; OP_KINDS] = [Op::Read, Op::Write, Op::Fsync, Op::Fdatasync];

    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Fsync => "fsync",
            Op::Fdatasync => "fdatasync",
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
