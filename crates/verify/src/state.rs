//! What the run knows of every block it verifies, shared by all workers of a host.
//!
//! Per block: the newest generation issued (each write of a block gets the next one), the
//! floor (the oldest generation the block may hold now), the durable floor (the same, for
//! what the target has promised to keep across its own crash), the writes in flight and
//! whether the block is known to carry a header.
//!
//! Writes to one block may overlap (two workers, or a queue): the target may apply them
//! in any order, so while any is in flight the floor stays where it was, and when the
//! last one completes it moves to the oldest write of that overlapping group. A read
//! accepts any generation from the floor when it was issued to the newest issued when it
//! completed. So overlapping I/O never raises a false alarm; it only makes the check
//! looser for the blocks it touches.
//!
//! Under `--verify` the core loop never has a read and a write of one block in flight at
//! once, nor two writes ([`BlockStates::try_begin_read`], [`BlockStates::try_begin_write`]):
//! a read that overlaps a write may return part of each (the page cache copies a page to a
//! reader while a writer fills it), which no check can tell from a torn block on the
//! target. Only reads overlap one another.
//!
//! A write that fails leaves the block unknown (old, new or torn): it is not checked
//! until a later group of writes to it completes without a failure.

use parking_lot::Mutex;

/// One block's state. Generations fit u32: four billion writes of one block.
#[derive(Clone, Copy, Debug, Default)]
struct Block {
    issued: u32,
    floor: u32,
    durable: u32,
    /// Oldest generation of the overlapping writes now in flight.
    group_lo: u32,
    inflight: u16,
    /// Reads in flight (a write is not issued while any is: see [`BlockStates::try_begin_write`]).
    readers: u16,
    /// A read of the block has failed its check: later failures of it are the same bad block.
    bad: bool,
    /// A write of the current group failed.
    group_failed: bool,
    has_header: bool,
    tracked: bool,
}

/// What a read takes from a block's state when it is issued.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The oldest generation the block may hold; 0 if this run has acknowledged no write of it.
    pub floor: u64,
    /// The block carries a header (written by this run, or laid out with headers).
    pub has_header: bool,
    /// False while the block's content is unknown (after a failed write, or a file a
    /// dataset operation replaced): the read is not checked.
    pub tracked: bool,
}

/// The state of every verified block of a working set or dataset.
pub struct BlockStates {
    block_len: u32,
    /// Index of each file's first block in `blocks`, and one past the last file's end.
    first: Vec<u64>,
    blocks: Vec<Mutex<Block>>,
}

impl BlockStates {
    /// Bytes of state for files of these sizes: the caller refuses a run that would need
    /// more memory than it can spare, before any I/O.
    pub fn bytes_needed(file_sizes: &[u64], block_len: u32) -> u64 {
        let blocks: u64 = file_sizes.iter().map(|s| s / u64::from(block_len.max(1))).sum();
        blocks.saturating_mul(std::mem::size_of::<Mutex<Block>>() as u64)
    }

    /// State for files of these sizes (bytes) in blocks of `block_len` bytes; a file's
    /// partial last block is not verified. Every block starts tracked, with no header
    /// known and nothing written.
    pub fn new(file_sizes: &[u64], block_len: u32) -> Self {
        let block_len = block_len.max(1);
        let mut first = Vec::with_capacity(file_sizes.len() + 1);
        let mut total = 0u64;
        for size in file_sizes {
            first.push(total);
            total += size / u64::from(block_len);
        }
        first.push(total);
        let blocks = (0..total).map(|_| Mutex::new(Block { tracked: true, ..Block::default() })).collect();
        Self { block_len, first, blocks }
    }

    pub fn block_len(&self) -> u32 {
        self.block_len
    }

    /// Files the state covers.
    pub fn files(&self) -> u32 {
        (self.first.len() - 1) as u32
    }

    /// Verified blocks of one file (0 for a file the state does not cover).
    pub fn blocks_of(&self, file: u32) -> u64 {
        match (self.first.get(file as usize), self.first.get(file as usize + 1)) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        }
    }

    fn with<T>(&self, file: u32, block: u64, f: impl FnOnce(&mut Block) -> T) -> Option<T> {
        if block >= self.blocks_of(file) {
            return None;
        }
        let i = self.first[file as usize] + block;
        self.blocks.get(i as usize).map(|m| f(&mut m.lock()))
    }

    /// A write of the block is about to be submitted: the generation to stamp into it
    /// (None for a block the state does not cover).
    pub fn begin_write(&self, file: u32, block: u64) -> Option<u64> {
        self.with(file, block, |b| {
            b.issued = b.issued.saturating_add(1);
            if b.inflight == 0 {
                b.group_lo = b.issued;
                b.group_failed = false;
            }
            b.inflight = b.inflight.saturating_add(1);
            u64::from(b.issued)
        })
    }

    /// A write of the block completed, acknowledged (`ok`) or failed. Returns the new
    /// floor when it moved (the journal records it).
    pub fn end_write(&self, file: u32, block: u64, ok: bool) -> Option<u64> {
        self.with(file, block, |b| {
            b.inflight = b.inflight.saturating_sub(1);
            b.group_failed |= !ok;
            if b.inflight > 0 {
                return None;
            }
            if b.group_failed {
                b.tracked = false;
                return None;
            }
            b.tracked = true;
            b.has_header = true;
            let moved = b.group_lo != b.floor;
            b.floor = b.group_lo;
            moved.then_some(u64::from(b.floor))
        })
        .flatten()
    }

    /// A write of the block is about to be submitted, if no other I/O of it is in flight:
    /// Ok(the generation to stamp), Ok(None) for a block the state does not cover, Err(())
    /// while a read or write of it is in flight (issue it later).
    #[allow(clippy::result_unit_err)]
    pub fn try_begin_write(&self, file: u32, block: u64) -> Result<Option<u64>, ()> {
        let r = self.with(file, block, |b| {
            if b.inflight > 0 || b.readers > 0 {
                return Err(());
            }
            b.issued = b.issued.saturating_add(1);
            b.group_lo = b.issued;
            b.group_failed = false;
            b.inflight = 1;
            Ok(u64::from(b.issued))
        });
        r.transpose()
    }

    /// Undoes a [`Self::try_begin_write`] whose write was never submitted (another block
    /// of its I/O was busy, or the engine refused it): the block is as before.
    pub fn cancel_write(&self, file: u32, block: u64) {
        self.with(file, block, |b| {
            b.inflight = b.inflight.saturating_sub(1);
            if b.inflight == 0 {
                b.issued = b.issued.saturating_sub(1);
            }
        });
    }

    /// A read of the block is about to be submitted, if no write of it is in flight: what
    /// it may find (Ok(None): not covered), Err(()) while a write of it is in flight. End
    /// it with [`Self::end_read`].
    #[allow(clippy::result_unit_err)]
    pub fn try_begin_read(&self, file: u32, block: u64) -> Result<Option<Snapshot>, ()> {
        let r = self.with(file, block, |b| {
            if b.inflight > 0 {
                return Err(());
            }
            b.readers = b.readers.saturating_add(1);
            Ok(Snapshot { floor: u64::from(b.floor), has_header: b.has_header, tracked: b.tracked && !b.group_failed })
        });
        r.transpose()
    }

    /// A read begun with [`Self::try_begin_read`] completed (or was never submitted).
    pub fn end_read(&self, file: u32, block: u64) {
        self.with(file, block, |b| b.readers = b.readers.saturating_sub(1));
    }

    /// A read of the block failed its check: true the first time (a new bad block), false
    /// for a block already found bad (the same fault read again).
    pub fn mark_bad(&self, file: u32, block: u64) -> bool {
        self.with(file, block, |b| !std::mem::replace(&mut b.bad, true)).unwrap_or(true)
    }

    /// The target has made write `generation` of the block durable (an O_DSYNC write
    /// completed, or the fsync or COMMIT that followed it). Returns the new durable floor
    /// when it moved.
    pub fn made_durable(&self, file: u32, block: u64, generation: u64) -> Option<u64> {
        self.with(file, block, |b| {
            let mut candidate = (generation.min(u64::from(u32::MAX)) as u32).min(b.floor);
            if b.inflight > 0 {
                candidate = candidate.min(b.group_lo);
            }
            (candidate > b.durable).then(|| {
                b.durable = candidate;
                u64::from(candidate)
            })
        })
        .flatten()
    }

    /// What a read of the block issued now may find (None: not covered).
    pub fn snapshot(&self, file: u32, block: u64) -> Option<Snapshot> {
        self.with(file, block, |b| Snapshot {
            floor: u64::from(b.floor),
            has_header: b.has_header,
            tracked: b.tracked && !b.group_failed,
        })
    }

    /// The newest generation issued to the block (0: none).
    pub fn issued(&self, file: u32, block: u64) -> u64 {
        self.with(file, block, |b| u64::from(b.issued)).unwrap_or(0)
    }

    /// A write of the block is in flight.
    pub fn in_flight(&self, file: u32, block: u64) -> bool {
        self.with(file, block, |b| b.inflight > 0).unwrap_or(false)
    }

    /// The durable floor of the block (0: nothing durable known).
    pub fn durable(&self, file: u32, block: u64) -> u64 {
        self.with(file, block, |b| u64::from(b.durable)).unwrap_or(0)
    }

    /// Restores a block's floors from a journal (`ioscope verify --journal`): a block with
    /// a floor carries a header of this generation or newer. Any newer generation is
    /// accepted: the journal does not know which writes were issued but never acknowledged.
    pub fn restore(&self, file: u32, block: u64, floor: u64, durable: u64) {
        let clamp = |g: u64| g.min(u64::from(u32::MAX)) as u32;
        self.with(file, block, |b| {
            b.floor = clamp(floor);
            b.durable = clamp(durable);
            b.issued = u32::MAX;
            b.has_header |= floor > 0;
        });
    }

    /// The block was laid out with a header (generation 0) before the run's writes.
    pub fn laid_out_with_header(&self, file: u32, block: u64) {
        self.with(file, block, |b| b.has_header = true);
    }

    /// Another operation replaced the whole file (a dataset's create, copy or move): its
    /// blocks are unknown until written again, and nothing this run wrote is expected.
    pub fn replaced(&self, file: u32) {
        for block in 0..self.blocks_of(file) {
            self.with(file, block, |b| {
                b.tracked = false;
                b.has_header = false;
                b.bad = false;
                b.floor = 0;
                b.durable = 0;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_write_moves_the_floor_to_its_generation() {
        let s = BlockStates::new(&[4 * 4096], 4096);
        assert_eq!(s.snapshot(0, 1), Some(Snapshot { floor: 0, has_header: false, tracked: true }));
        let g = s.begin_write(0, 1).unwrap();
        assert_eq!(g, 1);
        assert_eq!(s.end_write(0, 1, true), Some(1));
        assert_eq!(s.snapshot(0, 1), Some(Snapshot { floor: 1, has_header: true, tracked: true }));
        assert_eq!(s.issued(0, 1), 1);
    }

    #[test]
    fn overlapping_writes_leave_the_floor_at_the_oldest_of_them() {
        let s = BlockStates::new(&[4096], 4096);
        let a = s.begin_write(0, 0).unwrap();
        assert_eq!(s.end_write(0, 0, true), Some(1));
        let (b, c) = (s.begin_write(0, 0).unwrap(), s.begin_write(0, 0).unwrap());
        assert_eq!(s.end_write(0, 0, true), None, "b is still in flight: the block may hold a, b or c");
        assert_eq!(s.snapshot(0, 0).unwrap().floor, a);
        assert_eq!(s.end_write(0, 0, true), Some(b), "either b or c may have landed last");
        assert_eq!(s.issued(0, 0), c);
    }

    #[test]
    fn a_failed_write_leaves_the_block_unchecked_until_a_clean_write() {
        let s = BlockStates::new(&[4096], 4096);
        s.begin_write(0, 0).unwrap();
        assert_eq!(s.end_write(0, 0, false), None);
        assert!(!s.snapshot(0, 0).unwrap().tracked);
        assert_eq!(s.begin_write(0, 0), Some(2));
        assert_eq!(s.end_write(0, 0, true), Some(2));
        assert!(s.snapshot(0, 0).unwrap().tracked);
    }

    #[test]
    fn durable_never_passes_the_floor_of_an_overlapping_group() {
        let s = BlockStates::new(&[4096], 4096);
        let a = s.begin_write(0, 0).unwrap();
        s.end_write(0, 0, true);
        assert_eq!(s.made_durable(0, 0, a), Some(a));
        let (b, c) = (s.begin_write(0, 0).unwrap(), s.begin_write(0, 0).unwrap());
        s.end_write(0, 0, true);
        assert_eq!(s.made_durable(0, 0, c), None, "b in flight: only a is sure");
        s.end_write(0, 0, true);
        assert_eq!(s.made_durable(0, 0, c), Some(b));
    }

    #[test]
    fn a_read_and_a_write_of_one_block_are_never_in_flight_at_once_and_reads_may_overlap() {
        let s = BlockStates::new(&[2 * 4096], 4096);
        assert!(s.try_begin_read(0, 0).unwrap().is_some());
        assert!(s.try_begin_read(0, 0).unwrap().is_some(), "reads overlap reads");
        assert_eq!(s.try_begin_write(0, 0), Err(()), "a write waits for the reads");
        assert_eq!(s.try_begin_write(0, 1), Ok(Some(1)), "another block is free");
        s.end_read(0, 0);
        assert_eq!(s.try_begin_write(0, 0), Err(()), "one read is still in flight");
        s.end_read(0, 0);
        assert_eq!(s.try_begin_write(0, 0), Ok(Some(1)));
        assert_eq!(s.try_begin_read(0, 0), Err(()), "a read waits for the write");
        assert_eq!(s.try_begin_write(0, 0), Err(()), "and so does a second write");
        assert_eq!(s.end_write(0, 0, true), Some(1));
        assert!(s.try_begin_read(0, 0).unwrap().is_some());
        // A write never submitted leaves the block as it was.
        s.end_read(0, 0);
        assert_eq!(s.try_begin_write(0, 0), Ok(Some(2)));
        s.cancel_write(0, 0);
        assert_eq!((s.issued(0, 0), s.in_flight(0, 0), s.snapshot(0, 0).unwrap().floor), (1, false, 1));
        assert_eq!(s.try_begin_read(0, 9), Ok(None), "not covered: nothing to wait for");
    }

    #[test]
    fn a_bad_block_is_new_once() {
        let s = BlockStates::new(&[2 * 4096], 4096);
        assert!(s.mark_bad(0, 1));
        assert!(!s.mark_bad(0, 1), "read again: the same bad block");
        assert!(s.mark_bad(0, 0));
        s.replaced(0);
        assert!(s.mark_bad(0, 1), "a replaced file's blocks are new");
    }

    #[test]
    fn blocks_outside_the_files_are_refused_not_indexed() {
        let s = BlockStates::new(&[4096 * 2 + 100, 0], 4096);
        assert_eq!(s.blocks_of(0), 2, "the partial last block is not verified");
        assert_eq!(s.begin_write(0, 2), None);
        assert_eq!(s.begin_write(1, 0), None);
        assert_eq!(s.begin_write(7, 0), None);
        assert_eq!(s.snapshot(9, 0), None);
    }
}
