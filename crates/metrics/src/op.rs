//! Operations: one enum with one name each, used from the recorder (its index picks the
//! per-op recorder) through the snapshot to the results file (`series.op`) and back.

/// Operation kinds. The numeric value indexes per-op recorders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
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
    /// Data validation: blocks read back and checked (`--verify`); its latency is the
    /// check's time per block, its errors the mismatch kinds, its skips the blocks that
    /// could not be checked (unverified).
    Verify = 14,
    /// A directory's entries listed (READDIR, a bucket listing under a prefix).
    List = 15,
    /// A round of a flow: all its steps once, in order (Filebench's per-flow figure); its
    /// latency is the round's whole time, from when its first step was due to when its last
    /// completed; its skips are the rounds cut short (a step failed or found no file).
    /// Not an I/O: not counted in total IOPS.
    Flow = 16,
}

/// Number of [`Op`] kinds.
pub const OP_KINDS: usize = 17;

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
        Op::Verify,
        Op::List,
        Op::Flow,
    ];

    /// The name in results files, summaries and the API.
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
            Op::Verify => "verify",
            Op::List => "list",
            Op::Flow => "flow",
        }
    }

    /// The operation of a name written by [`Op::name`].
    pub fn parse(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Transfers data (has a size and an offset).
    pub fn is_data(self) -> bool {
        matches!(self, Op::Read | Op::Write)
    }

    /// Has a size: moves data (a read or write, or a file tree's create and copy, whose
    /// size is the bytes written). Only these record a size sample; the others (sync, open,
    /// close, metadata) record none and move 0 bytes.
    pub fn has_size(self) -> bool {
        matches!(self, Op::Read | Op::Write | Op::Create | Op::Copy | Op::Verify)
    }

    /// Has an offset in a file: reads, writes and the blocks verification checked.
    pub fn has_offset(self) -> bool {
        self.is_data() || self == Op::Verify
    }

    /// Serves other operations: `fsync`/`fdatasync` after writes, the `open`/`close`
    /// around a dataset workload's transfers, the check of blocks read (`verify`), and a
    /// flow's rounds of operations (`flow`). They are reported in their own rows but, as
    /// in fio and vdbench, not counted in total IOPS; their errors count in the total like
    /// every other error.
    pub fn serves_others(self) -> bool {
        matches!(self, Op::Fsync | Op::Fdatasync | Op::Open | Op::Close | Op::Verify | Op::Flow)
    }

    /// A file-tree operation (dataset workloads): the only ones that can find nothing to
    /// act on and be skipped.
    pub fn is_file_tree(self) -> bool {
        !matches!(self, Op::Read | Op::Write | Op::Fsync | Op::Fdatasync | Op::Verify)
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_has_one_name_that_parses_back_and_indexes_itself() {
        for (i, op) in Op::ALL.into_iter().enumerate() {
            assert_eq!(op as usize, i, "{op}: ALL is in index order");
            assert_eq!(Op::parse(op.name()), Some(op));
            assert_eq!(Op::ALL.iter().filter(|o| o.name() == op.name()).count(), 1, "{op}: one name each");
        }
        assert_eq!(Op::parse("stat"), None);
    }
}
