//! How ioscope's property tests run (docs/robustness.md). A dev-dependency only.
//!
//! [`check`] runs one property in-process with proptest: a fixed seed and the test's own
//! case count by default, so CI repeats the same cases, and no regression files are
//! written. `PROPTEST_CASES` and `PROPTEST_RNG_SEED` override both for a long run
//! (`bench/fuzz.py`), which reads the line each property prints:
//! `property NAME: N cases in S s (seed X)`.

pub use proptest;

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngSeed, TestError, TestRunner};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The seed of every property unless `PROPTEST_RNG_SEED` says otherwise.
pub const SEED: u64 = 0x10_5c0e_f022;

/// `name` in the environment as a number, if it is one.
fn env_number<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// The cases a property runs: `PROPTEST_CASES` if set, else `default`.
pub fn cases(default: u32) -> u32 {
    env_number("PROPTEST_CASES").unwrap_or(default).max(1)
}

/// Runs property `name` on `cases(default_cases)` values drawn from `strategy`. `test`
/// asserts (a panic or a failed assert is a failing case); the smallest failing value
/// found is in the panic message, with the seed that reproduces it.
pub fn check<S>(name: &str, default_cases: u32, strategy: S, test: impl Fn(S::Value))
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    let cases = cases(default_cases);
    let seed = env_number("PROPTEST_RNG_SEED").unwrap_or(SEED);
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        // Shrinking a failure stays bounded on a slow machine.
        max_shrink_iters: 4096,
        ..Config::default()
    };
    let ran = AtomicU64::new(0);
    let start = Instant::now();
    let result = TestRunner::new(config).run(&strategy, |value| {
        ran.fetch_add(1, Ordering::Relaxed);
        test(value);
        Ok(())
    });
    let secs = start.elapsed().as_secs_f64();
    match result {
        Ok(()) => eprintln!("property {name}: {cases} cases in {secs:.1} s (seed {seed})"),
        Err(TestError::Fail(why, value)) => panic!(
            "property {name} failed after {} cases (seed {seed}, PROPTEST_RNG_SEED={seed} repeats it): \
             {why}\nsmallest failing input: {value:#?}",
            ran.load(Ordering::Relaxed)
        ),
        Err(TestError::Abort(why)) => panic!("property {name} aborted (seed {seed}): {why}"),
    }
}
