//! The check of one block read back, and the kinds of mismatch.
//!
//! What a block may hold comes from the run's state ([`crate::state`]) at the read's
//! issue and completion: any generation from the floor (the oldest it may still hold once
//! every acknowledged write has landed) up to the newest ever issued to it, or, if the run
//! has not written it, whatever a header-carrying block of an earlier writer says.

use crate::header::{checksum, stored_checksum, Header};

/// Why a block read back is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// The checksum does not match the block (bytes changed), or the header is damaged.
    Corrupt,
    /// A sound header for another file or offset: the block was written elsewhere.
    Misplaced,
    /// A sound header of an older write than the last one acknowledged for this block.
    Stale,
    /// No data where the run knows there is some: zeros, or past the end of the file.
    Lost,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Corrupt, Kind::Misplaced, Kind::Stale, Kind::Lost];
    /// The kind's name everywhere (error kinds, JSON, docs, UI).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Corrupt => "corrupt",
            Kind::Misplaced => "misplaced",
            Kind::Stale => "stale",
            Kind::Lost => "lost",
        }
    }
}

/// What the run knows of a block when it checks a read of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expect {
    pub run_id: u64,
    pub file_id: u32,
    pub offset: u64,
    pub block_len: u32,
    /// The oldest generation the block may hold (its floor when the read was issued);
    /// 0 when this run has no acknowledged write of it.
    pub min_generation: u64,
    /// The newest generation issued to it by the time the read completed.
    pub max_generation: u64,
    /// The block is known to carry a header (written by this run, or laid out with
    /// headers); without one it may hold data from before verification was on.
    pub has_header: bool,
}

/// A block that failed its check: the kind and the header found, if one could be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub kind: Kind,
    pub found: Option<Header>,
}

/// The result of checking one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The block is what the run expects; its header.
    Verified(Header),
    /// No header and none expected: data from before verification was on.
    Unverified,
    Mismatch(Mismatch),
}

/// Checks one block (`block.len()` is the block length) against what the run expects.
pub fn check(block: &[u8], e: &Expect) -> Outcome {
    let bad = |kind, found| Outcome::Mismatch(Mismatch { kind, found });
    let Some(h) = Header::parse(block) else {
        return match (e.has_header, block.iter().all(|&b| b == 0)) {
            (true, true) => bad(Kind::Lost, None),
            (true, false) => bad(Kind::Corrupt, None),
            (false, _) => Outcome::Unverified,
        };
    };
    if h.block_len as usize != block.len() || h.block_len != e.block_len || checksum(block) != stored_checksum(block) {
        return bad(Kind::Corrupt, Some(h));
    }
    if h.file_id != e.file_id || h.offset != e.offset {
        return bad(Kind::Misplaced, Some(h));
    }
    if h.run_id != e.run_id {
        // An earlier writer's block: right only if this run has acknowledged no write of it.
        return if e.min_generation > 0 { bad(Kind::Stale, Some(h)) } else { Outcome::Verified(h) };
    }
    if h.generation < e.min_generation {
        return bad(Kind::Stale, Some(h));
    }
    if h.generation > e.max_generation {
        // A sound header of this run for this block that the run never issued.
        return bad(Kind::Corrupt, Some(h));
    }
    Outcome::Verified(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEN: usize = 4096;

    fn expect() -> Expect {
        Expect {
            run_id: 1,
            file_id: 2,
            offset: 3 * LEN as u64,
            block_len: LEN as u32,
            min_generation: 4,
            max_generation: 6,
            has_header: true,
        }
    }

    fn block(run_id: u64, file_id: u32, offset: u64, generation: u64) -> Vec<u8> {
        let mut b = vec![0x77u8; LEN];
        Header { run_id, file_id, block_len: LEN as u32, offset, generation, time_unix_ns: 9 }.stamp(&mut b);
        b
    }

    fn kind(o: Outcome) -> Option<Kind> {
        match o {
            Outcome::Mismatch(m) => Some(m.kind),
            _ => None,
        }
    }

    #[test]
    fn every_generation_from_the_floor_to_the_newest_issued_is_verified() {
        for g in 4..=6 {
            assert!(matches!(check(&block(1, 2, 3 * 4096, g), &expect()), Outcome::Verified(_)), "generation {g}");
        }
    }

    #[test]
    fn each_fault_is_its_own_kind() {
        let e = expect();
        let good = block(1, 2, 3 * 4096, 5);
        let mut flipped = good.clone();
        flipped[1000] ^= 0x10;
        assert_eq!(kind(check(&flipped, &e)), Some(Kind::Corrupt), "a flipped payload byte");
        let mut torn_header = good.clone();
        torn_header[3] ^= 1;
        assert_eq!(kind(check(&torn_header, &e)), Some(Kind::Corrupt), "a damaged magic");
        assert_eq!(kind(check(&vec![0u8; LEN], &e)), Some(Kind::Lost), "a zeroed block");
        assert_eq!(kind(check(&block(1, 2, 4096, 5), &e)), Some(Kind::Misplaced), "another offset's block");
        assert_eq!(kind(check(&block(1, 9, 3 * 4096, 5), &e)), Some(Kind::Misplaced), "another file's block");
        assert_eq!(kind(check(&block(1, 2, 3 * 4096, 3), &e)), Some(Kind::Stale), "an older write");
        assert_eq!(kind(check(&block(8, 2, 3 * 4096, 9), &e)), Some(Kind::Stale), "an earlier run's write");
        assert_eq!(kind(check(&block(1, 2, 3 * 4096, 7), &e)), Some(Kind::Corrupt), "a write never issued");
    }

    #[test]
    fn a_block_the_run_has_not_written_passes_with_any_sound_header_or_none() {
        let e = Expect { min_generation: 0, max_generation: 0, has_header: false, ..expect() };
        assert!(matches!(check(&block(8, 2, 3 * 4096, 9), &e), Outcome::Verified(_)));
        assert_eq!(check(&vec![0x42u8; LEN], &e), Outcome::Unverified);
        assert_eq!(check(&vec![0u8; LEN], &e), Outcome::Unverified);
        assert_eq!(kind(check(&block(8, 2, 4096, 9), &e)), Some(Kind::Misplaced), "still not another block's");
    }
}
