//! The check of one block after a crash (`ioscope verify --journal`): what the journal
//! says of it (its acknowledged and durable floors) against what the target holds now.
//!
//! - The block holds its acknowledged floor or newer: intact.
//! - It holds less, but at least its durable floor: an acknowledged write the target never
//!   promised to keep is gone. Allowed (a target that crashed may drop it), counted.
//! - It holds less than its durable floor (an older write, another run's, zeros): a
//!   durable write lost or stale, a failure.
//! - A checksum that fails, a torn block, a header destroyed, misplaced or of a write never
//!   issued: a failure whatever the floors (no write ever put that there).

use crate::check::{check, Expect, Kind, Mismatch, Outcome};
use crate::header::Header;

/// Where a block is and what the journal says of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Journaled {
    pub run_id: u64,
    pub file_id: u32,
    pub offset: u64,
    pub block_len: u32,
    /// The oldest generation an acknowledged write left in it (> 0: the run wrote it).
    pub floor: u64,
    /// The oldest generation the target promised to keep (0: none).
    pub durable: u64,
}

/// What a block re-read after a crash shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finding {
    /// Its acknowledged floor or a newer write of the run.
    Intact(Header),
    /// Older than its acknowledged floor but not than its durable floor: allowed.
    NotDurableMissing(Mismatch),
    /// A durable write lost or stale, or a corrupt or misplaced block.
    Failed(Mismatch),
}

/// Checks `block` (its length is the block length; missing bytes read as zeros) against
/// what the journal says of it.
pub fn recheck(block: &[u8], j: &Journaled) -> Finding {
    let expect = |min_generation| Expect {
        run_id: j.run_id,
        file_id: j.file_id,
        offset: j.offset,
        block_len: j.block_len,
        min_generation,
        // The journal does not know which writes were issued but never acknowledged.
        max_generation: u64::MAX,
        has_header: true,
    };
    let m = match check(block, &expect(j.floor)) {
        Outcome::Verified(h) => return Finding::Intact(h),
        // Not returned when a header is expected; a block without one is a mismatch.
        Outcome::Unverified => Mismatch { kind: Kind::HeaderDestroyed, found: None, bad_segments: None },
        Outcome::Mismatch(m) => m,
    };
    if !matches!(m.kind, Kind::Stale | Kind::Zeroed | Kind::Truncated) {
        return Finding::Failed(m);
    }
    if j.durable == 0 {
        return Finding::NotDurableMissing(m);
    }
    match check(block, &expect(j.durable)) {
        Outcome::Verified(_) => Finding::NotDurableMissing(m),
        Outcome::Mismatch(d) => Finding::Failed(d),
        Outcome::Unverified => Finding::Failed(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEN: usize = 4096;

    fn block(generation: u64) -> Vec<u8> {
        let mut b = vec![0x3cu8; LEN];
        Header { run_id: 5, file_id: 1, block_len: LEN as u32, offset: 8192, generation, time_unix_ns: 1 }
            .stamp(&mut b);
        b
    }

    fn j(floor: u64, durable: u64) -> Journaled {
        Journaled { run_id: 5, file_id: 1, offset: 8192, block_len: LEN as u32, floor, durable }
    }

    fn kind(f: Finding) -> (&'static str, Kind) {
        match f {
            Finding::Intact(_) => ("intact", Kind::Checksum),
            Finding::NotDurableMissing(m) => ("allowed", m.kind),
            Finding::Failed(m) => ("failed", m.kind),
        }
    }

    #[test]
    fn only_a_durable_write_missing_is_a_failure() {
        assert!(matches!(recheck(&block(4), &j(4, 2)), Finding::Intact(_)));
        assert!(matches!(recheck(&block(6), &j(4, 2)), Finding::Intact(_)), "a newer write that was in flight");
        assert_eq!(kind(recheck(&block(3), &j(4, 2))), ("allowed", Kind::Stale), "acknowledged, never promised");
        assert_eq!(kind(recheck(&vec![0; LEN], &j(4, 0))), ("allowed", Kind::Zeroed), "nothing durable");
        assert_eq!(kind(recheck(&block(1), &j(4, 2))), ("failed", Kind::Stale), "older than durable");
        assert_eq!(kind(recheck(&vec![0; LEN], &j(4, 2))), ("failed", Kind::Zeroed), "a durable block zeroed");
    }

    #[test]
    fn changed_destroyed_and_misplaced_blocks_fail_whatever_the_floors() {
        let mut flipped = block(4);
        flipped[100] ^= 1;
        assert_eq!(kind(recheck(&flipped, &j(4, 0))), ("failed", Kind::Checksum));
        let elsewhere = {
            let mut b = vec![0x3cu8; LEN];
            Header { run_id: 5, file_id: 1, block_len: LEN as u32, offset: 0, generation: 4, time_unix_ns: 1 }
                .stamp(&mut b);
            b
        };
        assert_eq!(kind(recheck(&elsewhere, &j(4, 0))), ("failed", Kind::Misplaced));
        assert_eq!(kind(recheck(&vec![7u8; LEN], &j(4, 0))), ("failed", Kind::HeaderDestroyed), "no header, not zeros");
    }
}
