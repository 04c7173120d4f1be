//! The header at the start of every verified block: 64 bytes, little-endian.
//!
//! | bytes  | field          | meaning                                                      |
//! |--------|----------------|--------------------------------------------------------------|
//! | 0..8   | magic          | `IOSCOPEV`                                                   |
//! | 8..16  | run id         | random per run; the same in every block the run writes       |
//! | 16..20 | file id        | the file's index in the working set or dataset               |
//! | 20..24 | block length   | bytes the checksum covers (the run's verify block)           |
//! | 24..32 | offset         | the block's byte offset in its file                          |
//! | 32..40 | generation     | 1 for the block's first write in the run, +1 per write; 0 = laid out before the run's writes |
//! | 40..48 | time           | when the block was stamped, ns since the Unix epoch          |
//! | 48..56 | checksum       | XXH3-64 of the block's other bytes (see [`checksum`])        |
//! | 56..64 | segment tags   | one byte per eighth of the block (see [`segment_tags`]); zero in headers of earlier versions |
//!
//! The rest of the block is the writer's random payload, so a block is incompressible and,
//! with its header, unique. The payload cannot be made again from the header, so a block
//! whose checksum fails cannot be compared byte by byte with what was written; the segment
//! tags say which eighths of it changed ([`bad_segments`]), so a report names where in
//! the block the first changed byte lies (to an eighth: 512 bytes of a 4 KiB block), and
//! whether the change is a tail from a boundary on (a torn write).

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

/// Bytes of the header.
pub const HEADER_LEN: usize = 64;
/// The smallest verify block: a sector.
pub const MIN_BLOCK_LEN: u32 = 512;
/// The first 8 bytes of every verified block.
pub const MAGIC: [u8; 8] = *b"IOSCOPEV";

const CHECKSUM: std::ops::Range<usize> = 48..56;
const TAGS: std::ops::Range<usize> = 56..64;
/// Segments a block is tagged in.
pub const SEGMENTS: usize = 8;

/// The fields of a block header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub run_id: u64,
    pub file_id: u32,
    pub block_len: u32,
    pub offset: u64,
    pub generation: u64,
    pub time_unix_ns: u64,
}

impl Header {
    /// Writes this header and the checksum of the whole block into `block` (its length is
    /// the block length; at least [`HEADER_LEN`] bytes, else nothing is written).
    pub fn stamp(&self, block: &mut [u8]) {
        if block.len() < HEADER_LEN {
            return;
        }
        block[0..8].copy_from_slice(&MAGIC);
        block[8..16].copy_from_slice(&self.run_id.to_le_bytes());
        block[16..20].copy_from_slice(&self.file_id.to_le_bytes());
        block[20..24].copy_from_slice(&self.block_len.to_le_bytes());
        block[24..32].copy_from_slice(&self.offset.to_le_bytes());
        block[32..40].copy_from_slice(&self.generation.to_le_bytes());
        block[40..48].copy_from_slice(&self.time_unix_ns.to_le_bytes());
        let tags = segment_tags(block);
        block[TAGS].copy_from_slice(&tags);
        let sum = checksum(block);
        block[CHECKSUM].copy_from_slice(&sum.to_le_bytes());
    }

    /// The header of `block` if it starts with the magic (its checksum is not checked here).
    pub fn parse(block: &[u8]) -> Option<Header> {
        let b = block.get(..HEADER_LEN)?;
        if b[0..8] != MAGIC {
            return None;
        }
        let u64_at = |r: std::ops::Range<usize>| u64::from_le_bytes(b[r].try_into().unwrap_or([0; 8]));
        let u32_at = |r: std::ops::Range<usize>| u32::from_le_bytes(b[r].try_into().unwrap_or([0; 4]));
        Some(Header {
            run_id: u64_at(8..16),
            file_id: u32_at(16..20),
            block_len: u32_at(20..24),
            offset: u64_at(24..32),
            generation: u64_at(32..40),
            time_unix_ns: u64_at(40..48),
        })
    }
}

/// XXH3-64 of every byte of `block` but the checksum field: the header before it seeds
/// the hash of everything after it. 0 for a block shorter than a header.
pub fn checksum(block: &[u8]) -> u64 {
    match (block.get(..CHECKSUM.start), block.get(CHECKSUM.end..)) {
        (Some(head), Some(rest)) if block.len() >= HEADER_LEN => xxh3_64_with_seed(rest, xxh3_64(head)),
        _ => 0,
    }
}

/// The length of each of the [`SEGMENTS`] segments of a block of `len` bytes (the last
/// takes what is left); segment 0 starts after the header.
pub fn segment_len(len: usize) -> usize {
    (len / SEGMENTS).max(1)
}

/// One byte of XXH3-64 of each eighth of the block's payload (segment 0 without the header).
pub fn segment_tags(block: &[u8]) -> [u8; SEGMENTS] {
    let seg = segment_len(block.len());
    let mut tags = [0u8; SEGMENTS];
    for (k, tag) in tags.iter_mut().enumerate() {
        let start = if k == 0 { HEADER_LEN } else { k * seg };
        let end = if k + 1 == SEGMENTS { block.len() } else { (k + 1) * seg };
        *tag = block.get(start.min(end)..end).map_or(0, |b| xxh3_64(b) as u8);
    }
    tags
}

/// Which segments of `block` differ from the tags its header stores (bit k: segment k),
/// None when the header stores none (a block stamped by an earlier version) or the block
/// is too short. A segment changed by chance to the same tag (1 in 256) reads as sound.
pub fn bad_segments(block: &[u8]) -> Option<u8> {
    let stored = block.get(TAGS)?;
    if block.len() < HEADER_LEN || stored.iter().all(|&b| b == 0) {
        return None;
    }
    let now = segment_tags(block);
    Some(now.iter().zip(stored).enumerate().filter(|(_, (a, b))| a != b).fold(0u8, |m, (k, _)| m | 1 << k))
}

/// The checksum stored in `block`'s header field (0 if the block is too short).
pub fn stored_checksum(block: &[u8]) -> u64 {
    block.get(CHECKSUM).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header { run_id: 7, file_id: 3, block_len: 4096, offset: 8192, generation: 5, time_unix_ns: 1 }
    }

    #[test]
    fn a_stamped_block_parses_back_and_its_checksum_holds() {
        let mut block = vec![0xa5u8; 4096];
        header().stamp(&mut block);
        assert_eq!(Header::parse(&block), Some(header()));
        assert_eq!(checksum(&block), stored_checksum(&block));
    }

    #[test]
    fn one_flipped_bit_anywhere_in_the_block_changes_the_checksum() {
        let mut block = vec![0x5au8; 4096];
        header().stamp(&mut block);
        for byte in [0, 9, 47, 56, 63, 64, 2000, 4095] {
            let mut b = block.clone();
            b[byte] ^= 1;
            assert_ne!(checksum(&b), stored_checksum(&b), "byte {byte}");
        }
    }

    #[test]
    fn the_segment_tags_name_the_eighth_of_the_block_that_changed() {
        let mut block = vec![0x5au8; 4096];
        header().stamp(&mut block);
        assert_eq!(bad_segments(&block), Some(0));
        let mut b = block.clone();
        b[2600] ^= 4;
        assert_eq!(bad_segments(&b), Some(1 << 5), "byte 2600 is in 2560..3072");
        let mut b = block.clone();
        b[40] ^= 4;
        assert_eq!(bad_segments(&b), Some(0), "a header field: no payload segment changed");
        let mut old = block.clone();
        old[56..64].fill(0);
        assert_eq!(bad_segments(&old), None, "an earlier version's header has no tags");
    }

    #[test]
    fn a_block_too_short_for_a_header_is_left_alone_and_has_none() {
        let mut b = vec![1u8; 63];
        header().stamp(&mut b);
        assert_eq!(b, vec![1u8; 63]);
        assert_eq!(Header::parse(&b), None);
        assert_eq!(checksum(&b), 0);
    }
}
