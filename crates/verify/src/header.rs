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
//! | 56..64 | reserved       | zero                                                         |
//!
//! The rest of the block is the writer's random payload, so a block is incompressible and,
//! with its header, unique.

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

/// Bytes of the header.
pub const HEADER_LEN: usize = 64;
/// The smallest verify block: a sector.
pub const MIN_BLOCK_LEN: u32 = 512;
/// The first 8 bytes of every verified block.
pub const MAGIC: [u8; 8] = *b"IOSCOPEV";

const CHECKSUM: std::ops::Range<usize> = 48..56;

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
        block[56..64].fill(0);
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
    fn a_block_too_short_for_a_header_is_left_alone_and_has_none() {
        let mut b = vec![1u8; 63];
        header().stamp(&mut b);
        assert_eq!(b, vec![1u8; 63]);
        assert_eq!(Header::parse(&b), None);
        assert_eq!(checksum(&b), 0);
    }
}
