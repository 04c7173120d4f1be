//! Operations an engine performs and the description of one I/O. The operations
//! themselves are the metrics crate's registry ([`Op`]), shared with the store and reports.

pub use ioscope_metrics::op::{Op, OP_KINDS};

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
    /// Create: bytes to write into the new file (from buffer slot 0, repeated); Open: the
    /// file's size where known (0 if not).
    pub size: u64,
}
