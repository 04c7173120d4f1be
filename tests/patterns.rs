//! Access patterns as the results file shows them: each run's offset histograms (the
//! offset heat map's data) read back and checked against the pattern's own formula,
//! computed here. The files are sized so that the offsets of interest fall on the
//! histogram's bucket boundaries (log-linear, 128 buckets per power of two), so the shares
//! read back are exact counts, not interpolations.

use ioscope_metrics::histogram::{bucket_index, bucket_range};
use ioscope_metrics::Histogram;
use std::path::Path;
use std::process::{Command, Output};

const BLOCK: u64 = 4096;

fn ioscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ioscope"))
}

/// Runs the workload `toml`; returns the per-second offset histograms of its reads (or
/// writes), warm-up included.
fn run_offsets(toml: &str, op: &str) -> Vec<Histogram> {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("w.toml");
    std::fs::write(&file, toml).unwrap();
    let results = tmp.path().join("r.db");
    let out = ioscope().arg("run").arg(&file).arg("--out").arg(&results).arg("--quiet").output().unwrap();
    assert!(out.status.success(), "{toml}\n{}", String::from_utf8_lossy(&out.stderr));
    let r = ioscope_store::open(&results).unwrap();
    r.seconds
        .iter()
        .filter_map(|snap| snap.ops.iter().find(|o| o.op.name() == op).map(|o| o.data.offset_bytes.clone()))
        .collect()
}

fn merged(hs: &[Histogram]) -> Histogram {
    let mut all = Histogram::new();
    for h in hs {
        all.merge(h);
    }
    all
}

/// Share of the I/Os at offsets in `[lo, hi)`; both must be bucket boundaries.
fn share(h: &Histogram, lo: u64, hi: u64) -> f64 {
    for b in [lo, hi] {
        assert_eq!(bucket_range(bucket_index(b)).0, b, "{b} is not a bucket boundary");
    }
    let n: u64 = h.nonzero().filter(|(i, _)| (lo..hi).contains(&bucket_range(*i).0)).map(|(_, c)| c).sum();
    n as f64 / h.count().max(1) as f64
}

/// Share of I/Os on blocks `[a, b)` of 4 KiB.
fn blocks(h: &Histogram, a: u64, b: u64) -> f64 {
    share(h, a * BLOCK, b * BLOCK)
}

fn close(got: f64, want: f64, points: f64, what: &str) {
    assert!(
        (got - want).abs() * 100.0 <= points,
        "{what}: {:.2}% read back, {:.2}% by the formula",
        got * 100.0,
        want * 100.0
    );
}

/// A closed-loop random read of 1,000 blocks of 4 KiB on the null engine: millions of I/Os.
fn random_over_1000_blocks(dist: &str) -> Histogram {
    let h = merged(&run_offsets(
        &format!(
            "engine = \"null\"\nsize = 4096000\nbs = \"4k\"\nrw = \"randread\"\nduration = \"2s\"\nrandom_distribution = \"{dist}\"\n"
        ),
        "read",
    ));
    assert!(h.count() > 20_000, "{dist}: only {} I/Os", h.count());
    assert!(h.max().unwrap() < 1000 * BLOCK, "every offset in the file");
    h
}

#[test]
fn zipf_1_2_over_1000_blocks_puts_the_formulas_share_on_the_hottest_tenth_and_shows_its_band() {
    let h = random_over_1000_blocks("zipf:1.2");
    // P(rank k) = k^-1.2 / H(1000, 1.2); the hottest ranks are the first blocks.
    let w: Vec<f64> = (1..=1000).map(|k| (k as f64).powf(-1.2)).collect();
    let total: f64 = w.iter().sum();
    let top = |k: usize| w[..k].iter().sum::<f64>() / total;
    close(blocks(&h, 0, 100), top(100), 2.0, "zipf:1.2, hottest 10% of 1,000 blocks");
    close(blocks(&h, 0, 10), top(10), 2.0, "zipf:1.2, hottest 1%");
    close(blocks(&h, 0, 500), top(500), 2.0, "zipf:1.2, hottest half");
    // The band: the first tenth is far denser than the rest.
    assert!(blocks(&h, 0, 100) / 100.0 > 10.0 * blocks(&h, 500, 1000) / 500.0);
}

#[test]
fn pareto_0_9_puts_nine_tenths_of_the_ios_on_the_first_tenth_as_its_formula_says() {
    let h = random_over_1000_blocks("pareto:0.9");
    // fio's rank = n·u^p with p = ln h / ln(1-h), laid hottest first: P(block < k) =
    // 1 - (1 - k/n)^(1/p).
    let p = 0.9f64.ln() / 0.1f64.ln();
    let first = |k: f64| 1.0 - (1.0 - k / 1000.0).powf(1.0 / p);
    close(blocks(&h, 0, 100), first(100.0), 2.0, "pareto:0.9, first 10%");
    close(blocks(&h, 0, 10), first(10.0), 2.0, "pareto:0.9, first 1%");
    close(blocks(&h, 0, 500), first(500.0), 2.0, "pareto:0.9, first half");
}

/// The standard normal distribution function (Abramowitz and Stegun 7.1.26, error < 1.5e-7).
fn phi(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly =
        t * (0.254_829_592 + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-z * z).exp();
    0.5 * (1.0 + if x < 0.0 { -erf } else { erf })
}

#[test]
fn normal_20_is_centred_on_the_middle_with_a_fifth_of_the_file_as_its_deviation() {
    let h = random_over_1000_blocks("normal:20");
    // Mean 500 blocks, standard deviation 200, wrapped around the file's ends.
    let (mean, sd, n) = (500.0, 200.0, 1000.0);
    let within = |a: f64, b: f64| -> f64 {
        (-3..=3).map(|w| phi((b + w as f64 * n - mean) / sd) - phi((a + w as f64 * n - mean) / sd)).sum()
    };
    for (a, b) in [(0, 100), (100, 256), (256, 500), (500, 1000)] {
        close(blocks(&h, a, b), within(a as f64, b as f64), 2.0, &format!("normal:20, blocks {a} to {b}"));
    }
}

#[test]
fn zoned_and_zoned_abs_give_each_zone_its_share_uniformly_within_it() {
    let h = random_over_1000_blocks("zoned:60/10:30/20:10/70");
    close(blocks(&h, 0, 100), 0.60, 2.0, "zoned: first 10%");
    close(blocks(&h, 0, 50), 0.30, 2.0, "zoned: first half of the first zone");
    close(blocks(&h, 100, 300), 0.30, 2.0, "zoned: next 20%");
    close(blocks(&h, 300, 1000), 0.10, 2.0, "zoned: last 70%");
    // 400k is 100 blocks; the second zone is the rest of the file.
    let h = random_over_1000_blocks("zoned_abs:70/400k:30/3600k");
    close(blocks(&h, 0, 100), 0.70, 2.0, "zoned_abs: first 400k");
    close(blocks(&h, 100, 1000), 0.30, 2.0, "zoned_abs: the rest");
}

#[test]
fn percentage_random_mixes_a_dense_sequential_stream_into_a_uniform_random_floor() {
    // 2,000 I/Os a second over 64 MiB: half of them random, half a stream from offset 0
    // that moves 4 MiB a second and never wraps in 3 seconds.
    let size = 64u64 << 20;
    let h = merged(&run_offsets(
        "engine = \"null\"\nsize = \"64m\"\nbs = \"4k\"\nrw = \"randread\"\npercentage_random = 50\nrate_iops = 2000\nduration = \"3s\"\n",
        "read",
    ));
    let n = h.count() as f64;
    assert!(n > 3000.0, "{n} I/Os");
    // The first 4 MiB: every block once by the stream (it goes on past them), plus the
    // random I/Os' share of it.
    let first = 4u64 << 20;
    let want = (first / BLOCK) as f64 / n + 0.5 * first as f64 / size as f64;
    close(share(&h, 0, first), want, 2.0, "first 4 MiB");
    // Past 16 MiB, which the stream never reaches: the random half alone, uniformly.
    close(share(&h, 16 << 20, size), 0.5 * 48.0 / 64.0, 2.0, "past 16 MiB");
}

#[test]
fn a_backwards_read_goes_down_the_file_block_by_block_from_its_end() {
    // rw=read:-8k with bs 4k (fio's backwards read): each I/O 4 KiB below the last.
    let seconds = run_offsets(
        "engine = \"null\"\nsize = \"64m\"\nbs = \"4k\"\nrw = \"read\"\nseq_skip = \"-8k\"\nrate_iops = 1000\nduration = \"3s\"\n",
        "read",
    );
    assert!(seconds.len() >= 3, "{} seconds", seconds.len());
    // A histogram's count, sum and max are exact (its min is its lowest bucket's bound): c
    // I/Os on the c blocks down from max, each once, sum to c·max − 4096·c(c−1)/2.
    let down_from = |h: &Histogram, top: u64| {
        let c = h.count() as u128;
        h.max() == Some(top) && h.sum() == c * top as u128 - BLOCK as u128 * c * (c - 1) / 2
    };
    let mut top = (64 << 20) - BLOCK;
    assert!(down_from(&merged(&seconds), top), "one I/O per block, down from the file's last");
    for (i, h) in seconds.iter().enumerate() {
        assert!(
            down_from(h, top),
            "second {i}: {} I/Os down from {top} (sum {}, max {:?})",
            h.count(),
            h.sum(),
            h.max()
        );
        top -= h.count() * BLOCK;
    }
}

#[test]
fn holes_leave_the_skipped_blocks_untouched_and_reach_every_other() {
    // 1 MiB: below it every bucket of the offset histogram holds one 4 KiB block at most.
    for (skip, stride) in [("4k", 8192u64), ("8k", 12288)] {
        let h = merged(&run_offsets(
            &format!("engine = \"null\"\nsize = \"1m\"\nbs = \"4k\"\nrw = \"write\"\nseq_skip = \"{skip}\"\nduration = \"1s\"\n"),
            "write",
        ));
        assert!(h.count() > 1000);
        for (i, _) in h.nonzero() {
            let (lo, hi) = bucket_range(i);
            assert!((lo..=hi).any(|o| o % stride == 0), "seq_skip {skip}: an I/O in [{lo}, {hi}], off the stride");
        }
        let hit: Vec<u64> = h.nonzero().map(|(i, _)| i as u64).collect();
        for block in 0..256u64 {
            let at = block * BLOCK;
            let touched = hit.contains(&(bucket_index(at) as u64));
            let on_stride = at % stride == 0 && at + BLOCK <= 1 << 20;
            assert_eq!(touched, on_stride, "seq_skip {skip}: block at {at}");
        }
    }
}

#[test]
fn poisson_arrivals_keep_the_mean_rate() {
    let seconds = run_offsets(
        "engine = \"null\"\nsize = \"1m\"\nbs = \"4k\"\nrw = \"randread\"\nrate_iops = 1000\narrivals = \"poisson\"\nduration = \"3s\"\n",
        "read",
    );
    let n: u64 = seconds.iter().map(Histogram::count).sum();
    // 3,000 expected; a Poisson count's standard deviation is 55.
    assert!((2600..=3400).contains(&n), "{n} I/Os in 3 s at 1,000 a second");
}

fn validate(toml: &str) -> Output {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.toml");
    std::fs::write(&file, toml).unwrap();
    ioscope().arg("validate").arg(&file).output().unwrap()
}

#[test]
fn out_of_range_access_patterns_are_refused_at_their_line_and_column_with_exit_2() {
    let cases = [
        (
            "rw = \"randread\"\nrandom_distribution = \"zipf:0\"\n",
            "bad.toml:2:23: error",
            "the theta of zipf is above 0",
        ),
        ("rw = \"randread\"\nrandom_distribution = \"pareto:1.5\"\n", "bad.toml:2:23", "between 0 and 1"),
        ("rw = \"randread\"\nrandom_distribution = \"zoned:60/10:30/20\"\n", "bad.toml:2:23", "add up to 90"),
        ("rw = \"randread\"\nrandom_distribution = \"normal:20:3\"\n", "bad.toml:2:23", "from 0 to 1"),
        (
            "rw = \"read\"\nrandom_distribution = \"zipf:1.2\"\n",
            "bad.toml:2:23",
            "no random_distribution on a sequential workload",
        ),
        ("rw = \"randread\"\nseq_skip = \"4k\"\n", "bad.toml:2:12", "no seq_skip on a random workload"),
        ("rw = \"read\"\nseq_skip = \"1000\"\n", "bad.toml:2:12", "not a multiple of 512"),
        ("rw = \"randread\"\npercentage_random = 101\n", "bad.toml:2:21", "from 0 to 100"),
        ("rw = \"randread\"\narrivals = \"poisson\"\n", "bad.toml:2:12", "poisson arrivals with a rate"),
        (
            "[[workload]]\nrw = \"randread\"\n\n[[workload]]\nname = \"b\"\nrandom_distribution = \"zipf:99\"\n",
            "bad.toml:6:23",
            "at most 10",
        ),
    ];
    for (toml, at, says) in cases {
        let out = validate(toml);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{toml}: {err}");
        assert!(err.contains(at) && err.contains(says), "{toml}: expected {at} and {says:?} in:\n{err}");
    }
    // And on the command line, before any I/O.
    let out = ioscope()
        .args(["run", "--engine", "null", "--rw", "randread", "--random-distribution", "zipf:-1", "--duration", "1s"])
        .arg("--out")
        .arg(Path::new("/nonexistent/never-written.db"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--random-distribution") && err.contains("zipf:THETA"), "{err}");
}

#[test]
fn the_summary_names_the_access_pattern_of_each_workload() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("r.db");
    let out = ioscope()
        .args(["run", "--engine", "null", "--rw", "randread", "--random-distribution", "zipf:1.2:0.25"])
        .args(["--percentage-random", "90", "--rate-iops", "1000", "--arrivals", "poisson", "--size", "1m"])
        .args(["--duration", "1s", "--quiet", "--out"])
        .arg(&results)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("randread bs 4 KiB threads 1 zipf:1.2:0.25 90% random poisson arrivals"), "{text}");
    // fio's spelling of a backwards read on the command line.
    let results = tmp.path().join("r2.db");
    let out = ioscope()
        .args(["run", "--engine", "null", "--rw=read:-8k", "--size", "1m", "--duration", "1s", "--quiet", "--out"])
        .arg(&results)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("read bs 4 KiB threads 1 seq_skip -8k"), "{text}{}", String::from_utf8_lossy(&out.stderr));
}
