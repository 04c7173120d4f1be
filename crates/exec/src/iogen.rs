//! Per-worker I/O generator: picks the operation (read share), the block size (weighted
//! list), the file and the offset (random, aligned to the smallest block size, or
//! sequential). A few multiplications per I/O; no division, no allocation.

use ioscope_engine::buffers::wyrand;
use ioscope_engine::{Io, Op};
use ioscope_workload::Plan;

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
}

/// Uniform integer in 0..n (Lemire's multiply-shift, no division).
#[inline(always)]
fn below(rng: &mut u64, n: u64) -> u64 {
    ((wyrand(rng) as u128 * n as u128) >> 64) as u64
}

impl IoGen {
    pub fn new(plan: &Plan, worker: u32, seed: u64) -> Self {
        let file_size = plan.file_size_bytes();
        let align = if plan.rw.is_random() { plan.min_block_bytes() } else { 1 };
        let mut cum = 0;
        let sizes = plan
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
        let read_below = match plan.read_pct {
            100 => u64::MAX,
            0 => 0,
            p => (u64::MAX / 100) * p as u64,
        };
        // Sequential streams start spread over the working set, one region per worker.
        let start = (plan.size_bytes / plan.threads as u64) * worker as u64;
        Self {
            rng: seed,
            read_below,
            sizes,
            total_weight: cum,
            files: plan.files,
            file_size,
            align,
            random: plan.rw.is_random(),
            seq_file: ((start / file_size.max(1)) as u32).min(plan.files - 1),
            seq_offset: start % file_size.max(1),
        }
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
        let (file, offset) = if self.random {
            let file = if self.files > 1 { below(&mut self.rng, self.files as u64) as u32 } else { 0 };
            (file, below(&mut self.rng, size.positions) * self.align)
        } else {
            if self.seq_offset + size.len as u64 > self.file_size {
                self.seq_offset = 0;
                self.seq_file = (self.seq_file + 1) % self.files;
            }
            let at = (self.seq_file, self.seq_offset);
            self.seq_offset += size.len as u64;
            at
        };
        Io { op, file, offset, len: size.len, slot }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_offsets_are_aligned_in_bounds_and_cover_the_file() {
        let p = crate::test_plan("engine = 'null'\nrw = 'randread'\nbs = '4k'\nsize = '1m'\nfiles = 2");
        let mut g = IoGen::new(&p, 0, 42);
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
        let mut g = IoGen::new(&p, 0, 7);
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
        let mut g = IoGen::new(&p, 0, 1);
        let got: Vec<(u32, u64)> = (0..5).map(|_| g.next(0)).map(|io| (io.file, io.offset)).collect();
        assert_eq!(got, vec![(0, 0), (0, 4096), (1, 0), (1, 4096), (0, 0)]);
    }
}
