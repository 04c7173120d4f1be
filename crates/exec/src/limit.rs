//! `max_errors`: the collector adds up each second's failed and attempted I/Os and ends
//! the run as failed once failures pass the limit (a count, or a share of the I/Os
//! attempted), or once every I/O has failed for [`DEAD_SECONDS`] seconds in a row (a dead
//! device fails millions of I/Os per second; the run must not go on for minutes).

use ioscope_metrics::{Op, Snapshot};
use ioscope_workload::MaxErrors;

/// Seconds in a row in which I/Os failed and none succeeded after which a run ends as
/// failed (with any limit but `off`).
pub const DEAD_SECONDS: u32 = 5;
/// A share limit is judged once at least this many I/Os were attempted, so that one
/// early failure among a handful of I/Os does not end a run.
pub const SHARE_MIN_ATTEMPTS: u64 = 1000;

/// Failures so far and the limit they are held to.
pub struct ErrorLimit {
    limit: MaxErrors,
    attempts: u64,
    errors: u64,
    /// (op, error kind) -> failed I/Os, in order of first appearance.
    kinds: Vec<(Op, String, u64)>,
    dead_seconds: u32,
}

impl ErrorLimit {
    pub fn new(limit: MaxErrors) -> Self {
        Self { limit, attempts: 0, errors: 0, kinds: Vec::new(), dead_seconds: 0 }
    }

    /// Adds one collected second; returns why the run must end, once it must.
    pub fn add(&mut self, s: &Snapshot) -> Option<String> {
        let t = s.total();
        self.attempts += t.ops + t.errors;
        self.errors += t.errors;
        for o in &s.ops {
            for (kind, n) in &o.data.errors_by_kind {
                match self.kinds.iter_mut().find(|(op, k, _)| *op == o.op && k == kind) {
                    Some((_, _, m)) => *m += n,
                    None => self.kinds.push((o.op, kind.clone(), *n)),
                }
            }
        }
        self.dead_seconds = if t.errors > 0 && t.ops == 0 { self.dead_seconds + 1 } else { 0 };
        let passed = match self.limit {
            MaxErrors::Off => return None,
            MaxErrors::Count(n) => self.errors > n,
            MaxErrors::SharePpm(ppm) => {
                self.attempts >= SHARE_MIN_ATTEMPTS
                    && self.errors as u128 * 1_000_000 > ppm as u128 * self.attempts as u128
            }
        };
        if passed {
            return Some(format!(
                "too many failed I/Os: by second {}, {} of {} ({:.1}%) had failed, more than max_errors = {}; {}",
                s.second,
                group(self.errors),
                group(self.attempts),
                self.errors as f64 * 100.0 / self.attempts.max(1) as f64,
                self.limit,
                self.kinds_text()
            ));
        }
        (self.dead_seconds >= DEAD_SECONDS).then(|| {
            format!(
                "every I/O failed for {DEAD_SECONDS} s in a row (the target looks unusable; max_errors = \"off\" lets such a run go on); {}",
                self.kinds_text()
            )
        })
    }

    /// "write EROFS 12,345, read EIO 3": the kinds, most frequent first.
    fn kinds_text(&self) -> String {
        let mut kinds: Vec<&(Op, String, u64)> = self.kinds.iter().collect();
        kinds.sort_by_key(|k| std::cmp::Reverse(k.2));
        let text: Vec<String> = kinds.iter().take(5).map(|(op, k, n)| format!("{op} {k} {}", group(*n))).collect();
        if text.is_empty() {
            "kinds not recorded".to_string()
        } else {
            text.join(", ")
        }
    }
}

/// 12345678 -> "12,345,678".
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ioscope_metrics::{Counts, OpInterval, OpSeries};

    fn second(ops: u64, errors: &[(&str, u64)]) -> Snapshot {
        let mut data = OpInterval::empty();
        data.counts = Counts { ops, bytes: ops * 4096, errors: errors.iter().map(|e| e.1).sum() };
        data.errors_by_kind = errors.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        Snapshot {
            second: 0,
            interval_ns: 1_000_000_000,
            step: 0,
            warmup: false,
            host: "h".into(),
            ops: vec![OpSeries { workload: String::new(), op: Op::Write, data }],
            workers: Vec::new(),
            files: Vec::new(),
            worker_dists: Vec::new(),
            file_dists: Vec::new(),
            not_broken_down: 0,
        }
    }

    #[test]
    fn half_the_writes_failing_with_erofs_ends_the_run_by_default() {
        let mut l = ErrorLimit::new(MaxErrors::default());
        assert_eq!(l.add(&second(10_000, &[])), None);
        let why = l.add(&second(5_100, &[("EROFS", 4_900)])).expect("49% of writes failed: past 1%");
        assert!(why.contains("write EROFS 4,900") && why.contains("max_errors = 1%"), "{why}");
    }

    #[test]
    fn a_count_limit_is_exceeded_past_n_and_off_never_ends_a_run() {
        let mut l = ErrorLimit::new(MaxErrors::Count(10));
        assert_eq!(l.add(&second(100, &[("EIO", 10)])), None);
        assert!(l.add(&second(100, &[("EIO", 1)])).is_some());
        let mut off = ErrorLimit::new(MaxErrors::Off);
        for _ in 0..20 {
            assert_eq!(off.add(&second(0, &[("EIO", 5_000_000)])), None);
        }
    }

    #[test]
    fn a_dead_target_ends_the_run_after_seconds_of_nothing_but_failures() {
        // Few I/Os (a share limit is not judged yet), all failing: the dead rule ends it.
        let mut l = ErrorLimit::new(MaxErrors::SharePpm(1_000_000));
        for _ in 1..DEAD_SECONDS {
            assert_eq!(l.add(&second(0, &[("ETIMEDOUT", 2)])), None);
        }
        let why = l.add(&second(0, &[("ETIMEDOUT", 2)])).expect("dead for 5 s");
        assert!(why.contains("every I/O failed for 5 s") && why.contains("write ETIMEDOUT 10"), "{why}");
        // A second with a success in between starts the count again.
        let mut l = ErrorLimit::new(MaxErrors::SharePpm(1_000_000));
        for i in 0..3 * DEAD_SECONDS {
            let ok = if i % DEAD_SECONDS == 0 { 1 } else { 0 };
            assert_eq!(l.add(&second(ok, &[("EIO", 1)])), None, "second {i}");
        }
    }

    #[test]
    fn a_share_is_judged_only_after_enough_attempts() {
        let mut l = ErrorLimit::new(MaxErrors::default());
        assert_eq!(l.add(&second(9, &[("EIO", 1)])), None, "10% of 10 I/Os is too few to judge");
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(group(12), "12");
    }
}
