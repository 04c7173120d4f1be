//! The check of one block read back, and the kinds of mismatch.
//!
//! What a block may hold comes from the run's state ([`crate::state`]) at the read's
//! issue and completion: any generation from the floor (the oldest it may still hold once
//! every acknowledged write has landed) up to the newest ever issued to it, or, if the run
//! has not written it, whatever a header-carrying block of an earlier writer says.

use crate::header::{bad_segments, checksum, stored_checksum, Header};

/// Why a block read back is wrong: what was found there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// This block's header (file, offset, block length, a generation it may hold), but its
    /// checksum fails: bytes of the block changed (where: [`Mismatch::bad_segments`]).
    Checksum,
    /// This block's header and the head of the block it describes, but from a boundary to
    /// the end at least two eighths of the block are not that write's: the tail of another
    /// write, or of none (a torn write).
    Torn,
    /// Data, not zeros, where the block's header should be: the header was overwritten.
    HeaderDestroyed,
    /// A sound header for another file, offset or block length: the block was written elsewhere.
    Misplaced,
    /// A sound header of an older write than the last one acknowledged for this block.
    Stale,
    /// A sound header of this run for this block, of a write the run never issued.
    Unissued,
    /// Zeros where the run knows there is data.
    Zeroed,
    /// The file ends before the block: a read returned less than the block.
    Truncated,
}

impl Kind {
    pub const ALL: [Kind; 8] = [
        Kind::Checksum,
        Kind::Torn,
        Kind::HeaderDestroyed,
        Kind::Misplaced,
        Kind::Stale,
        Kind::Unissued,
        Kind::Zeroed,
        Kind::Truncated,
    ];
    /// The kind's name everywhere (error kinds, JSON, results file, docs, UI).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Checksum => "checksum",
            Kind::Torn => "torn",
            Kind::HeaderDestroyed => "header-destroyed",
            Kind::Misplaced => "misplaced",
            Kind::Stale => "stale",
            Kind::Unissued => "unissued",
            Kind::Zeroed => "zeroed",
            Kind::Truncated => "truncated",
        }
    }

    /// What the kind means, in a few words (the summary's text).
    pub fn meaning(self) -> &'static str {
        match self {
            Kind::Checksum => "the block's header is sound but its checksum fails: bytes in the block changed",
            Kind::Torn => "the head of the block is the write its header names, its tail is not: a torn write",
            Kind::HeaderDestroyed => "data where the block's header should be: the header was overwritten",
            Kind::Misplaced => "a sound header of another block: the data was written elsewhere",
            Kind::Stale => "a sound header of an older write than the last one acknowledged",
            Kind::Unissued => "a header of this run for this block, of a write never issued",
            Kind::Zeroed => "zeros where the block's data should be",
            Kind::Truncated => "the file ends before the block",
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
    /// The block is known to carry a header of this block length (written by this run, or
    /// laid out with headers); without one it may hold data from before verification was
    /// on, or a header of another verify block length.
    pub has_header: bool,
}

/// A block that failed its check: the kind, the header found if one could be read, and
/// for a checksum that fails, which eighths of the block changed (bit k: segment k of
/// [`crate::header::SEGMENTS`]; None: the header stores no segment tags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mismatch {
    pub kind: Kind,
    pub found: Option<Header>,
    pub bad_segments: Option<u8>,
}

impl Mismatch {
    fn of(kind: Kind, found: Option<Header>) -> Self {
        Mismatch { kind, found, bad_segments: None }
    }

    /// Where in the block the first changed byte lies, as a byte range of the block
    /// (`block_len` bytes): the first segment whose tag fails (the header when only it did).
    pub fn first_bad_bytes(&self, block_len: u32) -> Option<(u32, u32)> {
        let mask = self.bad_segments?;
        let seg = crate::header::segment_len(block_len as usize) as u32;
        Some(match mask.trailing_zeros() {
            8.. => (0, crate::header::HEADER_LEN as u32),
            0 => (0, seg),
            k if k as usize + 1 == crate::header::SEGMENTS => (k * seg, block_len),
            k => (k * seg, (k + 1) * seg),
        })
    }
}

/// The result of checking one block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The block is what the run expects; its header.
    Verified(Header),
    /// No header and none expected: data from before verification was on (or of another
    /// verify block length).
    Unverified,
    Mismatch(Mismatch),
}

/// A tail of at least two segments from a boundary on, with every segment before it sound.
fn torn(mask: u8) -> bool {
    let from = mask.trailing_zeros();
    from > 0 && from + 2 <= 8 && mask == (0xffu8 << from)
}

/// Checks one block (`block.len()` is the block length) against what the run expects.
pub fn check(block: &[u8], e: &Expect) -> Outcome {
    let bad = |kind, found| Outcome::Mismatch(Mismatch::of(kind, found));
    let Some(h) = Header::parse(block) else {
        return match (e.has_header, block.iter().all(|&b| b == 0)) {
            (true, true) => bad(Kind::Zeroed, None),
            (true, false) => bad(Kind::HeaderDestroyed, None),
            (false, _) => Outcome::Unverified,
        };
    };
    if h.block_len as usize != block.len() || h.block_len != e.block_len {
        // A header of another verify layout: not this block's unless the run knows it is.
        return if e.has_header { bad(Kind::Misplaced, Some(h)) } else { Outcome::Unverified };
    }
    if checksum(block) != stored_checksum(block) {
        if h.file_id != e.file_id || h.offset != e.offset {
            // Not even this block's header: the header bytes themselves changed.
            return bad(Kind::HeaderDestroyed, Some(h));
        }
        let segs = bad_segments(block);
        let kind = if segs.is_some_and(torn) { Kind::Torn } else { Kind::Checksum };
        return Outcome::Mismatch(Mismatch { kind, found: Some(h), bad_segments: segs });
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
        return bad(Kind::Unissued, Some(h));
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
        assert_eq!(kind(check(&flipped, &e)), Some(Kind::Checksum), "a flipped payload byte");
        let mut magic = good.clone();
        magic[3] ^= 1;
        assert_eq!(kind(check(&magic, &e)), Some(Kind::HeaderDestroyed), "a damaged magic");
        let mut offset = good.clone();
        offset[25] ^= 1;
        assert_eq!(kind(check(&offset, &e)), Some(Kind::HeaderDestroyed), "a damaged offset field");
        let mut tail = good.clone();
        tail[LEN / 2..].copy_from_slice(&block(1, 2, 3 * 4096, 6)[LEN / 2..]);
        tail[LEN / 2..].iter_mut().for_each(|b| *b ^= 0x5a);
        assert_eq!(kind(check(&tail, &e)), Some(Kind::Torn), "the second half of another write");
        assert_eq!(kind(check(&vec![0u8; LEN], &e)), Some(Kind::Zeroed), "a zeroed block");
        assert_eq!(kind(check(&block(1, 2, 4096, 5), &e)), Some(Kind::Misplaced), "another offset's block");
        assert_eq!(kind(check(&block(1, 9, 3 * 4096, 5), &e)), Some(Kind::Misplaced), "another file's block");
        assert_eq!(kind(check(&block(1, 2, 3 * 4096, 3), &e)), Some(Kind::Stale), "an older write");
        assert_eq!(kind(check(&block(8, 2, 3 * 4096, 9), &e)), Some(Kind::Stale), "an earlier run's write");
        assert_eq!(kind(check(&block(1, 2, 3 * 4096, 7), &e)), Some(Kind::Unissued), "a write never issued");
    }

    #[test]
    fn a_failed_checksum_says_where_in_the_block_the_first_changed_byte_is() {
        let mut b = block(1, 2, 3 * 4096, 5);
        b[1000] ^= 1;
        b[3000] ^= 1;
        let Outcome::Mismatch(m) = check(&b, &expect()) else { panic!("a mismatch") };
        assert_eq!((m.kind, m.bad_segments), (Kind::Checksum, Some(1 << 1 | 1 << 5)));
        assert_eq!(m.first_bad_bytes(LEN as u32), Some((512, 1024)), "byte 1000 is in 512..1024");
        let mut h = block(1, 2, 3 * 4096, 5);
        h[44] ^= 1;
        let Outcome::Mismatch(m) = check(&h, &expect()) else { panic!("a mismatch") };
        assert_eq!((m.kind, m.first_bad_bytes(LEN as u32)), (Kind::Checksum, Some((0, 64))), "the time field");
    }

    #[test]
    fn a_header_of_another_block_length_is_unverified_unless_the_block_is_known_to_carry_this_one() {
        let mut b = vec![0x77u8; LEN];
        Header { run_id: 8, file_id: 2, block_len: 512, offset: 3 * 4096, generation: 0, time_unix_ns: 9 }
            .stamp(&mut b[..512]);
        let e = Expect { min_generation: 0, max_generation: 0, has_header: false, ..expect() };
        assert_eq!(check(&b, &e), Outcome::Unverified, "laid out in 512-byte blocks, read in 4 KiB ones");
        assert_eq!(kind(check(&b, &expect())), Some(Kind::Misplaced));
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
