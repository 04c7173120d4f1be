//! Per-worker I/O generator on the flat working set: picks the operation (read share), the
//! block size (weighted list), the file and the offset (random, aligned to the smallest
//! block size, or sequential). A few multiplications per I/O; no division, no allocation.
//! A pattern workload instead draws its text: see [`PatternGen`]. Access patterns
//! (crate::access): random offsets from a skewed distribution, a share of them sequential,
//! and sequential streams that skip ahead or move back after each I/O.

use crate::access::Sampler;
use ioscope_engine::buffers::wyrand;
use ioscope_engine::{Io, Op};
use ioscope_workload::font;
use ioscope_workload::{PatternMap, Workload};

#[derive(Clone, Copy)]
struct SizeChoice {
    len: u32,
    /// Cumulative weight up to and including this entry.
    cum_weight: u64,
    /// Number of aligned offsets where a block of this size fits in a file.
    positions: u64,
}

pub struct IoGen {
    rng: u64,
    /// A draw below this is a read.
    read_below: u64,
    sizes: Vec<SizeChoice>,
    total_weight: u64,
    files: u32,
    file_size: u64,
    align: u64,
    random: bool,
    seq_file: u32,
    seq_offset: u64,
    /// Bytes added after each sequential I/O (fio's rw=read:SIZE); negative moves back.
    skip: i64,
    /// The stream's last move went back: past a file's end it goes on at that file's last
    /// block (a stream moving forward goes on at the next file's start).
    seq_back: bool,
    /// Sequential offsets are multiples of this (the smallest block size).
    unit: u64,
    /// Random offsets: the distribution over `blocks` aligned blocks of a file.
    sampler: Sampler,
    blocks: u64,
    /// A random workload's draw below this is random, else sequential (percentage_random).
    random_below: u64,
    pattern: Option<PatternGen>,
}

/// Draws a text into the offset (or size) heat map: time is cut into columns of the
/// text's 5×7 rendering; in each column the I/Os go to the lit rows only. Row 0 (the top
/// of a glyph) is the highest offset band, or the largest size (32 KiB down to 512 B).
/// The text repeats when it ends.
pub struct PatternGen {
    columns: Vec<u8>,
    column_ns: u64,
    start_ns: u64,
    map: PatternMap,
    /// Offset map: bytes per row band.
    band: u64,
}

impl PatternGen {
    /// The lit rows (bit r = row r) of the column at time `t`, and when that column ends.
    pub fn column_at(&self, t: u64) -> (u8, u64) {
        let n = t.saturating_sub(self.start_ns) / self.column_ns;
        let col = self.columns[(n % self.columns.len() as u64) as usize];
        (col, self.start_ns + (n + 1) * self.column_ns)
    }
    /// The I/O size drawn by row `r` of a size pattern.
    pub fn row_size(r: u32) -> u32 {
        512 << (font::ROWS - 1 - r)
    }
}

/// Uniform integer in 0..n (Lemire's multiply-shift, no division).
#[inline(always)]
fn below(rng: &mut u64, n: u64) -> u64 {
    ((wyrand(rng) as u128 * n as u128) >> 64) as u64
}

impl IoGen {
    /// A generator over `files` files of `file_size` bytes for worker `local` of `eff.threads`;
    /// `start_ns` is when a pattern's first column begins.
    pub fn new(files: u32, file_size: u64, eff: &Workload, local: u32, seed: u64, start_ns: u64) -> Self {
        let random = eff.fileio == ioscope_workload::FileIo::Random;
        let min_block = eff.block_sizes.iter().map(|b| b.bytes).min().unwrap_or(1);
        let align = if random { min_block } else { 1 };
        let mut cum = 0;
        let sizes = eff
            .block_sizes
            .iter()
            .map(|b| {
                cum += b.weight as u64;
                SizeChoice {
                    len: b.bytes as u32,
                    cum_weight: cum,
                    positions: file_size.saturating_sub(b.bytes) / align + 1,
                }
            })
            .collect();
        let read_below = match eff.read_pct {
            100 => u64::MAX,
            0 => 0,
            p => (u64::MAX / 100) * p as u64,
        };
        // Sequential streams start spread over the working set, one region per worker.
        let total = file_size * files as u64;
        let region = total / eff.threads.max(1) as u64;
        // A plan from an agent's peer or a results file was not validated: bound it.
        let most = ioscope_workload::access::MAX_SEQ_SKIP as i64;
        let skip = eff.access.seq_skip.clamp(-most, most);
        // A stream that moves back starts at the end of its region.
        let start = if skip < 0 { (region * (local as u64 + 1)).saturating_sub(1) } else { region * local as u64 };
        let unit = min_block.max(1);
        let pattern = eff.pattern.as_ref().map(|p| PatternGen {
            columns: font::render(&p.text).unwrap_or_default(),
            column_ns: p.column.as_nanos().max(1) as u64,
            start_ns,
            map: p.map,
            // Bands start at multiples of the block size (O_DIRECT needs aligned offsets).
            band: file_size / font::ROWS as u64 / min_block.max(1) * min_block.max(1),
        });
        Self {
            rng: seed,
            read_below,
            sizes,
            total_weight: cum,
            files: files.max(1),
            file_size,
            align,
            random,
            seq_file: ((start / file_size.max(1)) as u32).min(files.max(1) - 1),
            // At a multiple of the smallest block: every offset of the stream is then a sum
            // of block sizes from an aligned start (O_DIRECT refuses unaligned offsets).
            seq_offset: if skip < 0 {
                (start % file_size.max(1) + 1).saturating_sub(min_block) / unit * unit
            } else {
                start % file_size.max(1) / unit * unit
            },
            skip,
            seq_back: skip < 0,
            unit,
            sampler: Sampler::new(&eff.access.distribution, file_size.saturating_sub(min_block) / unit + 1, unit),
            blocks: file_size.saturating_sub(min_block) / unit + 1,
            random_below: match eff.access.random_pct {
                p if p >= 100 => u64::MAX,
                p => (u64::MAX / 100) * p as u64,
            },
            pattern: pattern.filter(|p| !p.columns.is_empty()),
        }
    }

    /// Starts a sequential stream at a multiple of `block` (verification covers whole
    /// blocks; the streams' spread start may fall inside one).
    pub fn align_start(&mut self, block: u64) {
        self.seq_offset -= self.seq_offset % block.max(1);
    }

    /// The generator of worker 0 of a plan's first workload in its first step.
    pub fn for_plan(p: &ioscope_workload::Plan, seed: u64) -> Self {
        let eff = crate::in_step(&p.workloads[0], &p.steps()[0]);
        Self::new(p.files, p.file_size_bytes(), &eff, 0, seed, 0)
    }

    pub fn pattern(&self) -> Option<&PatternGen> {
        self.pattern.as_ref()
    }

    /// The next I/O of a pattern workload at time `t`; Err(when the column ends) in a blank
    /// column.
    pub fn next_pattern(&mut self, slot: u32, t: u64) -> Result<Io, u64> {
        let Some(p) = &self.pattern else {
            return Ok(self.next(slot));
        };
        let (col, end) = p.column_at(t);
        if col == 0 {
            return Err(end);
        }
        // A lit row of this column, uniformly.
        let lit = col.count_ones() as u64;
        let mut k = below(&mut self.rng, lit);
        let mut row = 0;
        for r in 0..font::ROWS {
            if col & (1 << r) != 0 {
                if k == 0 {
                    row = r;
                    break;
                }
                k -= 1;
            }
        }
        let op = if self.read_below == 0 { Op::Write } else { Op::Read };
        let file = if self.files > 1 { below(&mut self.rng, self.files as u64) as u32 } else { 0 };
        let (len, offset) = match p.map {
            PatternMap::Offset => {
                let len = self.sizes[0].len;
                // Band of row r, from the top of the file down; offsets aligned to the size.
                let band_start = (font::ROWS - 1 - row) as u64 * p.band;
                let fits = p.band.saturating_sub(len as u64) / len as u64 + 1;
                (len, band_start + below(&mut self.rng, fits) * len as u64)
            }
            PatternMap::Size => {
                let len = PatternGen::row_size(row);
                let fits = self.file_size.saturating_sub(len as u64) / 512 + 1;
                (len, below(&mut self.rng, fits) * 512)
            }
        };
        Ok(Io { op, file, offset, len, slot })
    }

    #[inline(always)]
    pub fn next(&mut self, slot: u32) -> Io {
        let op = match self.read_below {
            u64::MAX => Op::Read,
            0 => Op::Write,
            t => {
                if wyrand(&mut self.rng) < t {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        };
        let size = if self.sizes.len() == 1 {
            self.sizes[0]
        } else {
            let w = below(&mut self.rng, self.total_weight);
            *self.sizes.iter().find(|s| w < s.cum_weight).unwrap_or(&self.sizes[0])
        };
        let random = self.random && (self.random_below == u64::MAX || wyrand(&mut self.rng) < self.random_below);
        let (file, offset) = if random {
            let file = if self.files > 1 { below(&mut self.rng, self.files as u64) as u32 } else { 0 };
            let pos = match &self.sampler {
                Sampler::Uniform => below(&mut self.rng, size.positions),
                s => s.block(&mut self.rng, self.blocks).min(size.positions.saturating_sub(1)),
            };
            (file, pos * self.align)
        } else {
            self.next_seq(size.len as u64)
        };
        Io { op, file, offset, len: size.len, slot }
    }

    /// The next offset of the sequential stream for an I/O of `len` bytes; the stream then
    /// moves by `len + skip`.
    #[inline(always)]
    fn next_seq(&mut self, len: u64) -> (u32, u64) {
        if self.seq_offset.saturating_add(len) > self.file_size {
            if self.seq_back {
                self.seq_offset = self.file_size.saturating_sub(len) / self.unit * self.unit;
            } else {
                self.seq_offset = 0;
                self.seq_file = (self.seq_file + 1) % self.files;
            }
        }
        let at = (self.seq_file, self.seq_offset);
        if self.skip == 0 {
            self.seq_offset += len;
            return at;
        }
        let step = (len as i64).saturating_add(self.skip);
        self.seq_back = step < 0;
        match self.seq_offset.checked_add_signed(step) {
            Some(next) => self.seq_offset = next,
            None => {
                // Back past the start: on at the previous file's last block.
                self.seq_file = (self.seq_file + self.files - 1) % self.files;
                self.seq_offset = u64::MAX;
            }
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ioscope_workload::Plan;

    fn gen(p: &Plan, seed: u64) -> IoGen {
        IoGen::for_plan(p, seed)
    }

    #[test]
    fn random_offsets_are_aligned_in_bounds_and_cover_the_file() {
        let p = crate::test_plan("engine = 'null'\nrw = 'randread'\nbs = '4k'\nsize = '1m'\nfiles = 2");
        let mut g = gen(&p, 42);
        let mut seen = vec![false; 2 * 128];
        for _ in 0..20_000 {
            let io = g.next(0);
            assert_eq!(io.op, Op::Read);
            assert_eq!(io.offset % 4096, 0);
            assert!(io.offset + 4096 <= 512 << 10);
            seen[io.file as usize * 128 + (io.offset / 4096) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s), "every block of both files is reached");
    }

    #[test]
    fn mix_and_weights_follow_the_plan() {
        let p = crate::test_plan(
            "engine = 'null'\nrw = 'randrw'\nrwmix_read = 70\nbs = '4k:60,32k:25,512k:15'\nsize = '64m'",
        );
        let mut g = gen(&p, 7);
        let n = 100_000;
        let (mut reads, mut small, mut large) = (0, 0, 0);
        for _ in 0..n {
            let io = g.next(0);
            reads += (io.op == Op::Read) as u32;
            small += (io.len == 4096) as u32;
            large += (io.len == 524288) as u32;
            assert!(io.offset + io.len as u64 <= 64 << 20);
        }
        let pct = |x: u32| x as f64 * 100.0 / n as f64;
        assert!((pct(reads) - 70.0).abs() < 1.0, "reads {}", pct(reads));
        assert!((pct(small) - 60.0).abs() < 1.0, "4k {}", pct(small));
        assert!((pct(large) - 15.0).abs() < 1.0, "512k {}", pct(large));
    }

    #[test]
    fn sequential_walks_files_in_order() {
        let p = crate::test_plan("engine = 'null'\nrw = 'read'\nbs = '4k'\nsize = '16k'\nfiles = 2");
        let mut g = gen(&p, 1);
        let got: Vec<(u32, u64)> = (0..5).map(|_| g.next(0)).map(|io| (io.file, io.offset)).collect();
        assert_eq!(got, vec![(0, 0), (0, 4096), (1, 0), (1, 4096), (0, 0)]);
    }

    fn offsets(toml: &str, n: usize) -> Vec<u64> {
        let p = crate::test_plan(toml);
        let mut g = gen(&p, 3);
        (0..n).map(|_| g.next(0).offset).collect()
    }

    #[test]
    fn seq_skip_leaves_holes_or_walks_back_and_wraps_at_the_files_ends() {
        let holes = offsets("engine = 'null'\nrw = 'read'\nbs = '4k'\nsize = '32k'\nseq_skip = '4k'", 6);
        assert_eq!(holes, vec![0, 8192, 16384, 24576, 0, 8192], "every other block, then from the start");
        let back = offsets("engine = 'null'\nrw = 'read'\nbs = '4k'\nsize = '16k'\nseq_skip = '-8k'", 6);
        assert_eq!(back, vec![12288, 8192, 4096, 0, 12288, 8192], "down from the last block, then from the end");
        let p = crate::test_plan("engine = 'null'\nrw = 'read'\nbs = '4k'\nsize = '32k'\nfiles = 2\nseq_skip = '-8k'");
        let mut g = gen(&p, 1);
        let got: Vec<(u32, u64)> = (0..6).map(|_| g.next(0)).map(|io| (io.file, io.offset)).collect();
        assert_eq!(
            got,
            vec![(1, 12288), (1, 8192), (1, 4096), (1, 0), (0, 12288), (0, 8192)],
            "back through the files"
        );
    }

    #[test]
    fn percentage_random_keeps_its_sequential_stream_apart_from_the_random_offsets() {
        let got = offsets("engine = 'null'\nrw = 'randread'\nbs = '4k'\nsize = '64m'\npercentage_random = 50", 2000);
        // The stream's offsets are 0, 4k, 8k ... in order, whatever falls between them.
        let mut next = 0;
        let mut seq = 0;
        for o in got {
            if o == next {
                next += 4096;
                seq += 1;
            }
        }
        assert!((900..=1100).contains(&seq), "{seq} of 2,000 continue the stream");
    }

    #[test]
    fn unvalidated_access_values_never_panic_and_stay_in_the_file() {
        use ioscope_workload::{AbsZone, Access, Distribution, Zone};
        let p = crate::test_plan("engine = 'null'\nrw = 'randrw'\nbs = '4k:1,64k:1'\nsize = '1m'\nfiles = 2");
        let mut eff = crate::in_step(&p.workloads[0], &p.steps()[0]);
        let nan = f64::NAN;
        let dists = [
            Distribution::Zipf { theta: nan, center: Some(nan) },
            Distribution::Zipf { theta: f64::INFINITY, center: Some(-5.0) },
            Distribution::Pareto { h: nan, center: None },
            Distribution::Pareto { h: 7.0, center: Some(9.0) },
            Distribution::Normal { dev_pct: nan, center: Some(nan) },
            Distribution::Normal { dev_pct: -1.0, center: None },
            Distribution::Zoned(vec![]),
            Distribution::Zoned(vec![Zone { io_pct: nan, span_pct: f64::INFINITY }]),
            Distribution::ZonedAbs(vec![AbsZone { io_pct: 1e300, bytes: u64::MAX }]),
        ];
        for (i, d) in dists.into_iter().enumerate() {
            for (skip, pct) in [(i64::MIN, 0u8), (i64::MAX, 255), (1, 50), (-1, 99)] {
                eff.fileio =
                    if i % 2 == 0 { ioscope_workload::FileIo::Random } else { ioscope_workload::FileIo::Sequential };
                eff.access = Access { seq_skip: skip, distribution: d.clone(), random_pct: pct, ..Access::default() };
                let mut g = IoGen::new(2, 1 << 19, &eff, 0, 9, 0);
                for _ in 0..2000 {
                    let io = g.next(0);
                    assert!(io.file < 2 && io.offset + io.len as u64 <= 1 << 19, "{d:?} {skip} {pct}: {io:?}");
                }
            }
        }
    }

    #[test]
    fn sequential_streams_of_threads_that_do_not_divide_the_size_start_at_block_multiples() {
        // 1 MiB over 3 threads is 349,525.3 bytes each: O_DIRECT would refuse such an offset.
        let p = crate::test_plan("engine = 'null'\nrw = 'read'\nbs = '4k'\nsize = '1m'\nthreads = 3");
        let eff = crate::in_step(&p.workloads[0], &p.steps()[0]);
        let starts: Vec<u64> = (0..3).map(|t| IoGen::new(1, 1 << 20, &eff, t, 1, 0).next(0).offset).collect();
        assert_eq!(starts, vec![0, 348_160, 696_320], "spread over the file, each at a multiple of 4 KiB");
    }
}
