//! The offset and arrival generators of the access patterns ([`ioscope_workload::access`]):
//! a block drawn from a skewed distribution over a file's blocks ([`Sampler`]), and the gaps
//! between the intended starts of an open loop ([`Arrivals`]).
//!
//! Everything is set up once per worker (a zone table at most); a draw is a few float
//! operations, no allocation, no division by a value from outside, and every result is
//! clamped into its range whatever the parameters.

use ioscope_engine::buffers::wyrand;
use ioscope_workload::Distribution;
use std::cell::Cell;

/// A uniform float in [0, 1) from 53 random bits.
#[inline(always)]
fn unit(rng: &mut u64) -> f64 {
    (wyrand(rng) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Draws a block index in `0..blocks` of one file.
#[derive(Clone, Debug)]
pub enum Sampler {
    Uniform,
    /// Rank k (from 1) with probability ∝ k^-theta, drawn exactly by rejection-inversion
    /// (Hörmann and Derflinger, 1996): O(1) whatever the number of blocks.
    Zipf {
        zipf: Zipf,
        shift: u64,
    },
    /// fio's pareto: rank = blocks · u^pow; `reverse` puts the dense end first.
    Pareto {
        pow: f64,
        reverse: bool,
        shift: u64,
    },
    /// Mean and standard deviation in blocks; wrapped around the file's ends.
    Normal {
        mean: f64,
        sd: f64,
    },
    /// Zones: (draw below this 53-bit threshold, first block, blocks), in order.
    Zoned(Vec<(u64, u64, u64)>),
}

impl Sampler {
    /// The sampler of `d` over `blocks` blocks of `block_bytes` each.
    pub fn new(d: &Distribution, blocks: u64, block_bytes: u64) -> Sampler {
        let n = blocks.max(1);
        let shift = |c: &Option<f64>| ((c.unwrap_or(0.0).clamp(0.0, 1.0) * n as f64) as u64).min(n - 1);
        match d {
            Distribution::Uniform => Sampler::Uniform,
            Distribution::Zipf { theta, center } => Sampler::Zipf { zipf: Zipf::new(n, *theta), shift: shift(center) },
            Distribution::Pareto { h, center } => {
                let h = h.clamp(1e-9, 1.0 - 1e-9);
                let pow = h.ln() / (1.0 - h).ln();
                // pow < 1 piles the draws at the top of the range: turn it over, hottest first.
                Sampler::Pareto { pow, reverse: pow < 1.0, shift: shift(center) }
            }
            Distribution::Normal { dev_pct, center } => {
                let sd = (n as f64 * dev_pct.clamp(0.0, 100.0) / 100.0).max(1e-9);
                Sampler::Normal { mean: center.unwrap_or(0.5).clamp(0.0, 1.0) * n as f64, sd }
            }
            Distribution::Zoned(z) => {
                let zones = z.iter().map(|z| (z.io_pct, z.span_pct / 100.0 * n as f64));
                Sampler::zoned(zones, n)
            }
            Distribution::ZonedAbs(z) => {
                let zones = z.iter().map(|z| (z.io_pct, (z.bytes / block_bytes.max(1)) as f64));
                Sampler::zoned(zones, n)
            }
        }
    }

    /// Zones of (I/O share %, blocks) laid end to end; a zone past the file's end is cut
    /// at it (an empty zone's share goes to the last block that exists).
    fn zoned(zones: impl Iterator<Item = (f64, f64)>, n: u64) -> Sampler {
        let mut out = Vec::new();
        let (mut io, mut first) = (0.0f64, 0u64);
        for (pct, len) in zones.take(ioscope_workload::access::MAX_ZONES) {
            io += pct.clamp(0.0, 100.0);
            let len = (len.max(0.0) as u64).clamp(1, n);
            let start = first.min(n - 1);
            let len = len.min(n - start);
            let below = ((io / 100.0).min(1.0) * (1u64 << 53) as f64) as u64;
            out.push((below, start, len));
            first = first.saturating_add(len);
        }
        if let Some(last) = out.last_mut() {
            last.0 = u64::MAX; // the shares add up to 100: rounding never leaves a gap
        }
        Sampler::Zoned(out)
    }

    /// A block in `0..blocks` (the `blocks` the sampler was made for).
    #[inline]
    pub fn block(&self, rng: &mut u64, blocks: u64) -> u64 {
        let n = blocks.max(1);
        let b = match self {
            Sampler::Uniform => ((wyrand(rng) as u128 * n as u128) >> 64) as u64,
            Sampler::Zipf { zipf, shift } => (zipf.rank(rng) - 1 + shift) % n,
            Sampler::Pareto { pow, reverse, shift } => {
                let r = ((n as f64 * unit(rng).powf(*pow)) as u64).min(n - 1);
                let r = if *reverse { n - 1 - r } else { r };
                (r + shift) % n
            }
            Sampler::Normal { mean, sd } => {
                // Box-Muller; one of the pair is enough.
                let u1 = 1.0 - unit(rng);
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * unit(rng)).cos();
                let x = (mean + sd * z).floor();
                // Wrapped, as fio does: the tails come back from the other end.
                let x = if x.is_finite() { x.rem_euclid(n as f64) } else { 0.0 };
                x as u64
            }
            Sampler::Zoned(zones) => {
                let u = wyrand(rng) >> 11;
                let &(_, start, len) = zones.iter().find(|z| u < z.0).or(zones.last()).unwrap_or(&(0, 0, 1));
                start + ((wyrand(rng) as u128 * len as u128) >> 64) as u64
            }
        };
        b.min(n - 1)
    }
}

/// Zipf over ranks 1..=n, by rejection-inversion: the constants of its hat function.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

/// log1p(x)/x, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// expm1(x)/x, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

impl Zipf {
    pub fn new(n: u64, theta: f64) -> Zipf {
        let s = theta.clamp(1e-6, 100.0);
        let mut z = Zipf { n: n.max(1) as f64, s, h_x1: 0.0, h_n: 0.0, cut: 0.0 };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(z.n + 0.5);
        z.cut = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }
    /// x^-s
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }
    /// The integral of h from 1 to x: (x^(1-s) - 1) / (1 - s), also at s = 1.
    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        helper2((1.0 - self.s) * lx) * lx
    }
    fn h_integral_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (helper1(t) * x).exp()
    }
    /// A rank in 1..=n.
    #[inline]
    pub fn rank(&self, rng: &mut u64) -> u64 {
        let mut k = 1.0;
        // Accepts within ~1.1 tries on average; bounded, the last try's rank stands.
        for _ in 0..64 {
            let u = self.h_n + unit(rng) * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.h_integral(k + 0.5) - self.h(k) {
                break;
            }
        }
        if k.is_finite() {
            k as u64
        } else {
            1
        }
    }
}

/// The gaps between intended starts of an open loop: the mean interval each time
/// (uniform), or exponential gaps of that mean (a Poisson process). Owned by one worker.
pub struct Arrivals {
    poisson: bool,
    rng: Cell<u64>,
}

/// A Poisson gap is cut at this many means (a draw beyond has a chance of e^-50).
const MAX_GAP_MEANS: f64 = 50.0;

impl Arrivals {
    pub fn uniform() -> Arrivals {
        Arrivals { poisson: false, rng: Cell::new(0) }
    }
    pub fn poisson(seed: u64) -> Arrivals {
        Arrivals { poisson: true, rng: Cell::new(seed) }
    }
    pub fn of(kind: ioscope_workload::Arrivals, seed: u64) -> Arrivals {
        match kind {
            ioscope_workload::Arrivals::Uniform => Arrivals::uniform(),
            ioscope_workload::Arrivals::Poisson => Arrivals::poisson(seed),
        }
    }
    /// The time from one intended start to the next, for a mean of `mean_ns`.
    #[inline]
    pub fn gap(&self, mean_ns: u64) -> u64 {
        if !self.poisson {
            return mean_ns;
        }
        let mut rng = self.rng.get();
        let u = unit(&mut rng);
        self.rng.set(rng);
        let g = -(1.0 - u).ln() * mean_ns as f64;
        g.min(MAX_GAP_MEANS * mean_ns as f64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ioscope_workload::access::{AbsZone, Zone};

    fn histogram(d: &Distribution, n: u64, draws: usize) -> Vec<u64> {
        let s = Sampler::new(d, n, 4096);
        let mut rng = 7;
        let mut h = vec![0u64; n as usize];
        for _ in 0..draws {
            h[s.block(&mut rng, n) as usize] += 1;
        }
        h
    }

    #[test]
    fn zipf_ranks_follow_one_over_k_to_the_theta_with_the_hottest_block_first() {
        for theta in [0.5, 1.0, 1.2, 2.5] {
            let n = 1000;
            let h = histogram(&Distribution::Zipf { theta, center: None }, n, 400_000);
            let weights: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-theta)).collect();
            let total: f64 = weights.iter().sum();
            for k in [1usize, 2, 10, 100] {
                let want = weights[k - 1] / total;
                let got = h[k - 1] as f64 / 400_000.0;
                assert!((got - want).abs() < 0.05 * want + 0.001, "theta {theta} rank {k}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn a_center_moves_the_hot_band_and_every_draw_stays_in_range() {
        let h = histogram(&Distribution::Zipf { theta: 1.2, center: Some(0.5) }, 1000, 100_000);
        assert!(h[500] > h[499] * 10 && h[500] > h[0] * 10, "the hottest block is at the middle");
        let odd = [
            Distribution::Zipf { theta: 10.0, center: Some(1.0) },
            Distribution::Pareto { h: 1e-300, center: Some(1.0) },
            Distribution::Pareto { h: 0.999_999, center: None },
            Distribution::Normal { dev_pct: 100.0, center: Some(1.0) },
            Distribution::Normal { dev_pct: 1e-300, center: Some(0.0) },
            Distribution::ZonedAbs(vec![AbsZone { io_pct: 50.0, bytes: u64::MAX }, AbsZone { io_pct: 50.0, bytes: 1 }]),
            Distribution::Zoned(vec![Zone { io_pct: 100.0, span_pct: 1e-9 }]),
        ];
        for d in &odd {
            for n in [1, 2, 1000] {
                let s = Sampler::new(d, n, 4096);
                let mut rng = 1;
                for _ in 0..10_000 {
                    assert!(s.block(&mut rng, n) < n, "{d:?} over {n}");
                }
            }
        }
    }

    #[test]
    fn pareto_puts_the_classic_eighty_percent_on_the_first_twenty_either_way() {
        for h in [0.2, 0.8] {
            let hist = histogram(&Distribution::Pareto { h, center: None }, 1000, 200_000);
            let first: u64 = hist[..200].iter().sum();
            let share = first as f64 / 200_000.0;
            assert!((share - 0.8).abs() < 0.01, "pareto:{h}: {share} on the first 20%");
        }
    }

    #[test]
    fn poisson_gaps_have_the_mean_and_a_coefficient_of_variation_of_one() {
        let a = Arrivals::poisson(42);
        let gaps: Vec<f64> = (0..200_000).map(|_| a.gap(1_000_000) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (gaps.len() - 1) as f64;
        let cv = var.sqrt() / mean;
        assert!((mean / 1e6 - 1.0).abs() < 0.01, "mean {mean}");
        assert!((cv - 1.0).abs() < 0.02, "coefficient of variation {cv}");
        let u = Arrivals::uniform();
        assert!((0..100).all(|_| u.gap(1_000_000) == 1_000_000), "uniform: every gap is the mean");
    }
}
