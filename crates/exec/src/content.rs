//! The bytes of each write, as the workload's data content asks ([`Content`]):
//! - random (the default): the slot's random bytes, with 8 fresh bytes at the start of every
//!   512-byte sector of every write, so no sector of one write is any other's (an array that
//!   dedups at 512 bytes or more finds nothing), at the cost of a store per sector;
//! - zeros: every byte zero;
//! - shaped: each compress chunk random for `1/compress_ratio` of its length, then zeros;
//!   with `dedup_ratio` D, a dedup unit's bytes are a function of its file and of its
//!   index divided by D, so each content is written D times in a row, and a rewrite of a
//!   block writes the same bytes again. Without dedup the random part is fresh in every write.
//!
//! The random bytes come from a counter-based generator (a wyrand step of the seed plus the
//! word's index), so any range of a unit is made without making what comes before it: a
//! write that covers part of a unit writes exactly that part of the unit's bytes.

use ioscope_workload::Content;

/// The seed of a working set's dedup contents: of this host and the working set's
/// directory, so that every writer of one working set (the fill and each worker) makes the
/// same bytes of a unit, and two hosts (or two directories) share none.
pub fn working_set_seed(dir: &std::path::Path) -> u64 {
    use std::hash::{Hash, Hasher};
    // SipHash with fixed keys: the same value in every process.
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new();
    crate::host::hostname().hash(&mut h);
    dir.hash(&mut h);
    h.finish()
}

/// Makes the bytes of one worker's writes (and of the laid-out files' chunks).
pub struct Filler {
    kind: Kind,
    /// Distinguishes this worker's (or chunk's) writes from every other's.
    tag: u64,
    writes: u64,
    chunk: u64,
    /// Random bytes at the start of each chunk.
    random: u64,
    unit: u64,
    dedup: f64,
    /// See [`working_set_seed`].
    set_seed: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Scramble,
    Zeros,
    Shaped,
}

/// Sectors of the default data each get fresh bytes.
const SECTOR: usize = 512;

impl Filler {
    /// `tag` distinguishes this writer's writes from every other's; `set_seed` is the
    /// working set's ([`working_set_seed`]).
    pub fn new(c: &Content, tag: u64, set_seed: u64) -> Self {
        let kind = if c.zeros {
            Kind::Zeros
        } else if c.is_random() {
            Kind::Scramble
        } else {
            Kind::Shaped
        };
        let unit = u64::from(c.dedup_unit_bytes.max(1));
        // A chunk never spans two dedup units: both would then hold part of one chunk.
        let chunk = u64::from(c.compress_chunk_bytes.max(8));
        let chunk = if c.dedup_ratio > 1.0 { chunk.min(unit) } else { chunk };
        let shaped = Content { compress_chunk_bytes: chunk as u32, ..*c };
        let random = u64::from(shaped.random_bytes_per_chunk()).min(chunk);
        Filler { kind, tag: mix(tag), writes: 0, chunk, random, unit, dedup: c.dedup_ratio.max(1.0), set_seed }
    }

    /// Whether writes get the default data (the slot's random bytes, scrambled per sector).
    pub fn is_random(&self) -> bool {
        self.kind == Kind::Scramble
    }

    /// Fills `buf` with the bytes to write at `offset` of file `file`.
    #[inline]
    pub fn fill(&mut self, file: u32, offset: u64, buf: &mut [u8]) {
        self.writes = self.writes.wrapping_add(1);
        match self.kind {
            Kind::Scramble => {
                let seed = mix(self.tag ^ self.writes.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                // Every byte of the write changes: the slot's bytes XOR one fresh random word,
                // so two writes from one slot buffer share no run of bytes a compressor could
                // find. (The sector stamps alone left 504 of every 512 bytes as they were: a
                // 1 MiB region of 4 KiB random writes compressed 18:1 with lz4.)
                let key = word(seed, u64::MAX);
                let mut words = buf.chunks_exact_mut(8);
                for w in &mut words {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(w);
                    w.copy_from_slice(&(u64::from_ne_bytes(b) ^ key).to_ne_bytes());
                }
                for (b, k) in words.into_remainder().iter_mut().zip(key.to_ne_bytes()) {
                    *b ^= k;
                }
                for (i, sector) in buf.chunks_mut(SECTOR).enumerate() {
                    let stamp = word(seed, i as u64).to_le_bytes();
                    let n = sector.len().min(8);
                    sector[..n].copy_from_slice(&stamp[..n]);
                }
            }
            Kind::Zeros => buf.fill(0),
            Kind::Shaped if self.dedup > 1.0 => self.fill_dedup(file, offset, buf),
            Kind::Shaped => {
                let seed = mix(self.tag ^ self.writes.wrapping_mul(0x9e37_79b9_7f4a_7c15));
                shape(buf, offset, 0, self.chunk, self.random, seed, offset);
            }
        }
    }

    /// Unit by unit: the unit's content is that of its group (its index divided by the ratio).
    fn fill_dedup(&self, file: u32, offset: u64, buf: &mut [u8]) {
        let file_seed = mix(self.set_seed ^ mix(0x6a09_e667_f3bc_c908 ^ u64::from(file)));
        let end = offset.saturating_add(buf.len() as u64);
        let mut pos = offset;
        while pos < end {
            let k = pos / self.unit;
            let start = k * self.unit;
            let seg_end = start.saturating_add(self.unit).min(end);
            // Units k with the same ⌊k / D⌋ share their bytes.
            let group = (k as f64 / self.dedup).floor() as u64;
            let seed = mix(file_seed ^ group.wrapping_mul(0xbb67_ae85_84ca_a73b));
            let (a, b) = ((pos - offset) as usize, (seg_end - offset) as usize);
            shape(&mut buf[a..b], pos, start, self.chunk, self.random, seed, start);
            pos = seg_end;
        }
    }
}

/// Writes the bytes at file positions `pos..pos + dst.len()`: chunks laid from `origin`,
/// each random for its first `random` bytes (the stream of `seed`, indexed from
/// `stream_origin`), then zeros.
fn shape(dst: &mut [u8], pos: u64, origin: u64, chunk: u64, random: u64, seed: u64, stream_origin: u64) {
    let end = pos + dst.len() as u64;
    let mut p = pos;
    while p < end {
        let chunk_start = p - (p - origin) % chunk;
        let seg_end = (chunk_start + chunk).min(end);
        let rand_end = (chunk_start + random).min(seg_end).max(p);
        let (a, r, b) = ((p - pos) as usize, (rand_end - pos) as usize, (seg_end - pos) as usize);
        fill_stream(&mut dst[a..r], seed, p - stream_origin);
        dst[r..b].fill(0);
        p = seg_end;
    }
}

/// The bytes `start..start + dst.len()` of the random stream of `seed`.
fn fill_stream(dst: &mut [u8], seed: u64, start: u64) {
    let (mut i, mut pos) = (0usize, start);
    while i < dst.len() && pos % 8 != 0 {
        dst[i] = word(seed, pos / 8).to_le_bytes()[(pos % 8) as usize];
        i += 1;
        pos += 1;
    }
    let mut w = pos / 8;
    let mut words = dst[i..].chunks_exact_mut(8);
    for c in &mut words {
        c.copy_from_slice(&word(seed, w).to_le_bytes());
        w += 1;
    }
    let tail = words.into_remainder();
    let n = tail.len();
    tail.copy_from_slice(&word(seed, w).to_le_bytes()[..n]);
}

/// Word `n` of the stream of `seed`: a wyrand step at the counter `seed + (n + 1) · K`.
#[inline(always)]
fn word(seed: u64, n: u64) -> u64 {
    let s = seed.wrapping_add(n.wrapping_add(1).wrapping_mul(0xa076_1d64_78bd_642f));
    let t = (s as u128).wrapping_mul((s ^ 0xe703_7ed1_a0b4_28db) as u128);
    (t as u64) ^ ((t >> 64) as u64)
}

/// A 64-bit finalizer (splitmix64): nearby inputs give unrelated seeds.
#[inline(always)]
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn content(compress: f64, dedup: f64) -> Content {
        Content { compress_ratio: compress, dedup_ratio: dedup, ..Content::default() }
    }

    /// Distinct 4 KiB units over all units.
    fn dedup_of(data: &[u8], unit: usize) -> f64 {
        let units: Vec<&[u8]> = data.chunks(unit).collect();
        let distinct: HashSet<&[u8]> = units.iter().copied().collect();
        units.len() as f64 / distinct.len() as f64
    }

    #[test]
    fn default_writes_from_one_slot_buffer_do_not_compress_together() {
        let mut f = Filler::new(&Content::default(), 7, 0);
        let mut base = vec![0u8; 4096];
        fill_stream(&mut base, 99, 0);
        // 256 writes of the one buffer, side by side, as random writes lay them in a region.
        let mut all = Vec::new();
        for w in 0..256u64 {
            let mut buf = base.clone();
            f.fill(0, w * 4096, &mut buf);
            all.extend_from_slice(&buf);
        }
        let ratio = all.len() as f64 / lz4_flex::compress(&all).len() as f64;
        assert!(ratio < 1.01, "1 MiB of default writes from one slot compresses {ratio:.2}:1");
    }

    #[test]
    fn default_writes_share_no_sector_even_from_one_slot_buffer() {
        let mut f = Filler::new(&Content::default(), 7, 0);
        let base = vec![0xa5u8; 8192];
        let mut all = Vec::new();
        for w in 0..64u64 {
            let mut buf = base.clone();
            f.fill(0, w * 8192, &mut buf);
            all.extend_from_slice(&buf);
        }
        assert_eq!(dedup_of(&all, SECTOR), 1.0, "a 512-byte sector repeated");
    }

    #[test]
    fn a_unit_written_in_pieces_is_the_unit_written_whole() {
        let mut f = Filler::new(&content(2.0, 3.0), 1, 0);
        let mut whole = vec![0u8; 64 << 10];
        f.fill(3, 1 << 20, &mut whole);
        let mut pieces = vec![0u8; 64 << 10];
        for (i, piece) in pieces.chunks_mut(1000).enumerate() {
            f.fill(3, (1 << 20) + (i * 1000) as u64, piece);
        }
        assert!(whole == pieces, "bytes depend on where they are, not on how the write was cut");
    }

    #[test]
    fn dedup_3_makes_a_third_of_the_units_distinct_and_files_differ() {
        let mut f = Filler::new(&content(1.0, 3.0), 1, 0);
        let mut a = vec![0u8; 3 << 20];
        f.fill(0, 0, &mut a);
        // Another working set (another directory or host) shares none of its units.
        let mut other = vec![0u8; 3 << 20];
        Filler::new(&content(1.0, 3.0), 1, 1).fill(0, 0, &mut other);
        let mut both = a.clone();
        both.extend_from_slice(&other);
        assert!((dedup_of(&both, 4096) - 3.0).abs() < 0.01, "two working sets share a unit");
        assert!((dedup_of(&a, 4096) - 3.0).abs() < 0.01, "{}", dedup_of(&a, 4096));
        let mut b = vec![0u8; 3 << 20];
        f.fill(1, 0, &mut b);
        a.extend_from_slice(&b);
        assert!((dedup_of(&a, 4096) - 3.0).abs() < 0.01, "two files share no unit");
    }

    #[test]
    fn compress_2_makes_half_of_each_chunk_zeros_and_fresh_random_bytes_per_write() {
        let mut f = Filler::new(&content(2.0, 1.0), 1, 0);
        let (mut x, mut y) = (vec![1u8; 16384], vec![1u8; 16384]);
        f.fill(0, 0, &mut x);
        f.fill(0, 0, &mut y);
        let zeros = x.iter().filter(|b| **b == 0).count();
        assert!((8192..8192 + 64).contains(&zeros), "{zeros} zeros");
        assert!(x[..2048] != y[..2048], "a rewrite is new data");
        assert!(x[2048..4096].iter().all(|b| *b == 0) && x[4096..4200].iter().any(|b| *b != 0));
    }
}
