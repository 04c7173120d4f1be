//! Where the floors of a run's blocks go as they move: the journal (`--journal FILE`).

/// Receives every move of a block's floor and durable floor ([`crate::BlockStates`]).
pub trait Sink: Send + Sync {
    /// The floor of a block moved: an acknowledged write (of `generation` or a group of
    /// overlapping writes starting there) completed.
    fn floor(&self, file: u32, block: u64, generation: u64);
    /// The durable floor of a block moved: the target promised to keep it.
    fn durable(&self, file: u32, block: u64, generation: u64);
    /// Returns once every record made so far is on stable storage (group commit). The core
    /// calls it after a durability point (an O_DSYNC write, an fsync or a COMMIT completed)
    /// before it counts that point done, so a crash of the host loses no durable record.
    fn barrier(&self);
}
