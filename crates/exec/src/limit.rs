//! `max_errors`: the collector adds up each second's failed and attempted I/Os
//! ([`ErrorLimit::add`], once per collected second) and ends the run as failed once
//! failures pass the limit (a count, or a share of the I/Os attempted), or once no I/O
//! has succeeded for [`DEAD_SECONDS`] seconds in a row while I/Os failed (a dead device
//! fails millions of I/Os per second, a hung one fails each at its timeout; the run must
//! not go on for minutes), or once an operation was refused by the file system itself for
//! a whole second (every write failing with ENOSPC, EDQUOT or EROFS, or their NFS
//! statuses, and none succeeding): a full or read-only file system does not recover by
//! itself, so the run ends at once with a sentence that names the file system, rather
//! than measuring refusals for the rest of its planned time.
//!
//! A second in which nothing completed at all (a hung target: its I/Os are in flight until
//! their timeout) is not a success: it goes on with a dead streak begun by failures and
//! never ends one; only a success does. And a run in which I/Os were attempted and none
//! succeeded is a failed run whatever the limit's count or share ([`ErrorLimit::at_end`],
//! asked once the run has ended); only `off` lets it complete. A success is any completed
//! I/O or operation (a read, a write, an S3 LIST or HEAD, a file tree's create...) but
//! fsync/fdatasync; data mismatches (`--verify`) are not failures here (their reads
//! succeeded): the verify mode judges them.

use ioscope_metrics::{Op, Snapshot};
use ioscope_workload::{MaxErrors, Plan};

/// Seconds in a row without a success, from one in which I/Os failed, after which a run
/// ends as failed (with any limit but `off`).
pub const DEAD_SECONDS: u32 = 5;
/// A share limit is judged once at least this many I/Os were attempted, so that one
/// early failure among a handful of I/Os does not end a run.
pub const SHARE_MIN_ATTEMPTS: u64 = 1000;

/// Failures so far and the limit they are held to.
pub struct ErrorLimit {
    limit: MaxErrors,
    attempts: u64,
    errors: u64,
    /// I/Os that succeeded (any operation but fsync/fdatasync).
    successes: u64,
    /// (op, error kind) -> failed I/Os, in order of first appearance.
    kinds: Vec<(Op, String, u64)>,
    /// Where each (op, kind) is in `kinds`: a host may name thousands of kinds.
    kind_index: std::collections::HashMap<(Op, String), usize>,
    dead_seconds: u32,
    /// Where the run's files are (a directory, an `nfs://` URL), for the messages.
    place: String,
}

impl ErrorLimit {
    /// A limit for a run whose files are in `place` (named in the messages).
    pub fn new(limit: MaxErrors, place: impl Into<String>) -> Self {
        Self {
            limit,
            attempts: 0,
            errors: 0,
            successes: 0,
            kinds: Vec::new(),
            kind_index: Default::default(),
            dead_seconds: 0,
            place: place.into(),
        }
    }

    /// Adds one collected second; returns why the run must end, once it must.
    pub fn add(&mut self, s: &Snapshot) -> Option<String> {
        let mut t = s.total();
        // Data mismatches (`--verify`) are judged by the verify mode, not as failed I/Os:
        // the reads that found them succeeded.
        // (Counts from an agent are checked before they get here; the sums saturate anyway.)
        let mismatches =
            s.ops.iter().filter(|o| o.op == Op::Verify).fold(0u64, |m, o| m.saturating_add(o.data.counts.errors));
        t.errors = t.errors.saturating_sub(mismatches);
        self.attempts = self.attempts.saturating_add(t.ops.saturating_add(t.errors));
        self.errors = self.errors.saturating_add(t.errors);
        self.successes = self.successes.saturating_add(t.ops);
        for o in s.ops.iter().filter(|o| o.op != Op::Verify) {
            for (kind, n) in &o.data.errors_by_kind {
                match self.kind_index.get(&(o.op, kind.clone())) {
                    Some(&i) => self.kinds[i].2 = self.kinds[i].2.saturating_add(*n),
                    None => {
                        self.kind_index.insert((o.op, kind.clone()), self.kinds.len());
                        self.kinds.push((o.op, kind.clone(), *n));
                    }
                }
            }
        }
        // Only a success ends a dead streak; failures start or continue one, and a second
        // in which nothing completed (I/Os hung until their timeout) continues one begun.
        self.dead_seconds = match (t.ops, t.errors) {
            (0, 0) if self.dead_seconds == 0 => 0,
            (0, _) => self.dead_seconds + 1,
            _ => 0,
        };
        let passed = match self.limit {
            MaxErrors::Off => return None,
            MaxErrors::Count(n) => self.errors > n,
            MaxErrors::SharePpm(ppm) => {
                self.attempts >= SHARE_MIN_ATTEMPTS
                    && self.errors as u128 * 1_000_000 > ppm as u128 * self.attempts as u128
            }
        };
        if let Some((op, kind, n)) = refused(s) {
            let (what, advice) = refusal(&kind, &self.place).unwrap_or_default();
            return Some(format!(
                "{what}: in second {}, every {op} failed so ({} of them, none succeeded); {advice}; {}",
                s.second,
                group(n),
                self.kinds_text()
            ));
        }
        if passed {
            return Some(format!(
                "{}too many failed I/Os: by second {}, {} of {} ({:.1}%) had failed, more than max_errors = {}; {}",
                self.lead(),
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
                "no I/O succeeded for {DEAD_SECONDS} s in a row and every one that ended failed (the target looks unusable; max_errors = \"off\" lets such a run go on); {}",
                self.kinds_text()
            )
        })
    }

    /// Once the run has ended (every second added): why it failed although [`add`] never
    /// said so, if it did. I/Os were attempted and not one succeeded: whatever the limit's
    /// count or share, such a run measured nothing but failures (a share is not judged
    /// below [`SHARE_MIN_ATTEMPTS`]; a short run on a hung target has a handful of
    /// timeouts). None with `off`, when nothing was attempted, or when anything succeeded.
    ///
    /// [`add`]: ErrorLimit::add
    pub fn at_end(&self) -> Option<String> {
        if matches!(self.limit, MaxErrors::Off) || self.successes > 0 || self.errors == 0 {
            return None;
        }
        Some(format!(
            "{}no I/O succeeded: all {} attempted failed (a run in which nothing succeeds fails whatever max_errors = {} allows; \"off\" lets it complete); {}",
            self.lead(),
            group(self.errors),
            self.limit,
            self.kinds_text()
        ))
    }

    /// "no space left on the file system of /data (ENOSPC): " when the most frequent kind
    /// so far is a refusal of the file system itself; else nothing.
    fn lead(&self) -> String {
        let top = self.kinds.iter().max_by_key(|k| k.2);
        match top.and_then(|(_, kind, _)| refusal(kind, &self.place)) {
            Some((what, _)) => format!("{what}: "),
            None => String::new(),
        }
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

/// Where a plan's files are, as its messages name it: the target's URL (engine nfs), the
/// dataset's directory, or the working set's.
pub fn place_of(plan: &Plan) -> String {
    match (&plan.target, &plan.dataset) {
        (Some(t), _) => t.root.clone(),
        (None, Some(d)) => d.dir.display().to_string(),
        (None, None) => plan.dir.display().to_string(),
    }
}

/// An operation of the second that the file system refused (ENOSPC, EDQUOT, EROFS or
/// their NFS statuses) and that never succeeded in it: (op, its most frequent refusal,
/// how many I/Os it refused). None if every operation that was refused also succeeded.
fn refused(s: &Snapshot) -> Option<(Op, String, u64)> {
    // Per operation over every workload: its successes and its refusals by kind.
    struct Seen<'a> {
        op: Op,
        ok: u64,
        refusals: Vec<(&'a str, u64)>,
    }
    let mut per_op: Vec<Seen> = Vec::new();
    for o in &s.ops {
        let i = match per_op.iter().position(|p| p.op == o.op) {
            Some(i) => i,
            None => {
                per_op.push(Seen { op: o.op, ok: 0, refusals: Vec::new() });
                per_op.len() - 1
            }
        };
        let seen = &mut per_op[i];
        seen.ok += o.data.counts.ops;
        for (kind, n) in o.data.errors_by_kind.iter().filter(|(k, _)| refusal(k, "").is_some()) {
            match seen.refusals.iter_mut().find(|(k, _)| k == kind) {
                Some((_, m)) => *m += n,
                None => seen.refusals.push((kind, *n)),
            }
        }
    }
    per_op.into_iter().filter(|p| p.ok == 0).find_map(|p| {
        let total = p.refusals.iter().map(|k| k.1).sum();
        p.refusals.iter().max_by_key(|k| k.1).map(|(kind, _)| (p.op, kind.to_string(), total))
    })
}

/// What a refusal of the file system itself means, in words, with `place` (where the
/// run's files are), and what to do about it; None for any other kind.
fn refusal(kind: &str, place: &str) -> Option<(String, &'static str)> {
    const FREE: &str = "a full file system does not empty itself: free space there, or make the working set smaller";
    const QUOTA: &str = "raise the quota, or make the working set smaller";
    const READ_ONLY: &str =
        "the kernel makes a file system read-only after an error on it (its log says which: dmesg), or it was remounted read-only";
    Some(match kind {
        "ENOSPC" => (format!("no space left on the file system of {place} (ENOSPC)"), FREE),
        "EDQUOT" => (format!("the disk quota on the file system of {place} is used up (EDQUOT)"), QUOTA),
        "EROFS" => (format!("the file system of {place} is read-only (EROFS)"), READ_ONLY),
        "NFS3ERR_NOSPC" => (format!("no space left on the server's file system of {place} (NFS3ERR_NOSPC)"), FREE),
        "NFS3ERR_DQUOT" => (format!("the disk quota on the server for {place} is used up (NFS3ERR_DQUOT)"), QUOTA),
        "NFS3ERR_ROFS" => (format!("the server's file system of {place} is read-only (NFS3ERR_ROFS)"), READ_ONLY),
        _ => return None,
    })
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
            worker_cpu: Vec::new(),
        }
    }

    #[test]
    fn half_the_writes_failing_with_erofs_ends_the_run_by_default() {
        let mut l = ErrorLimit::new(MaxErrors::default(), "/data");
        assert_eq!(l.add(&second(10_000, &[])), None);
        let why = l.add(&second(5_100, &[("EROFS", 4_900)])).expect("49% of writes failed: past 1%");
        assert!(why.contains("write EROFS 4,900") && why.contains("max_errors = 1%"), "{why}");
    }

    #[test]
    fn a_count_limit_is_exceeded_past_n_and_off_never_ends_a_run() {
        let mut l = ErrorLimit::new(MaxErrors::Count(10), "/data");
        assert_eq!(l.add(&second(100, &[("EIO", 10)])), None);
        assert!(l.add(&second(100, &[("EIO", 1)])).is_some());
        let mut off = ErrorLimit::new(MaxErrors::Off, "/data");
        for _ in 0..20 {
            assert_eq!(off.add(&second(0, &[("EIO", 5_000_000)])), None);
        }
    }

    #[test]
    fn a_dead_target_ends_the_run_after_seconds_of_nothing_but_failures() {
        // Few I/Os (a share limit is not judged yet), all failing: the dead rule ends it.
        let mut l = ErrorLimit::new(MaxErrors::SharePpm(1_000_000), "/data");
        for _ in 1..DEAD_SECONDS {
            assert_eq!(l.add(&second(0, &[("ETIMEDOUT", 2)])), None);
        }
        let why = l.add(&second(0, &[("ETIMEDOUT", 2)])).expect("dead for 5 s");
        assert!(why.contains("no I/O succeeded for 5 s in a row") && why.contains("write ETIMEDOUT 10"), "{why}");
        // A second with a success in between starts the count again.
        let mut l = ErrorLimit::new(MaxErrors::SharePpm(1_000_000), "/data");
        for i in 0..3 * DEAD_SECONDS {
            let ok = if i % DEAD_SECONDS == 0 { 1 } else { 0 };
            assert_eq!(l.add(&second(ok, &[("EIO", 1)])), None, "second {i}");
        }
    }

    #[test]
    fn seconds_in_which_nothing_completed_continue_a_dead_streak_and_only_a_success_ends_it() {
        // A hung target with a 3 s timeout: nothing completes, then every I/O in flight
        // times out at once, and so on. Before the first failure nothing is judged.
        let mut l = ErrorLimit::new(MaxErrors::default(), "s3://bucket");
        for _ in 0..3 {
            assert_eq!(l.add(&second(0, &[])), None, "nothing completed yet: not a failure");
        }
        assert_eq!(l.add(&second(0, &[("ETIMEDOUT", 4)])), None);
        for _ in 1..DEAD_SECONDS - 1 {
            assert_eq!(l.add(&second(0, &[])), None);
        }
        let why = l.add(&second(0, &[])).expect("5 s without a success since I/Os failed");
        assert!(why.contains("no I/O succeeded for 5 s in a row") && why.contains("write ETIMEDOUT 4"), "{why}");
        // A success ends the streak; a second without completions after it starts none.
        let mut l = ErrorLimit::new(MaxErrors::default(), "/data");
        assert_eq!(l.add(&second(0, &[("ETIMEDOUT", 4)])), None);
        for i in 0..3 * DEAD_SECONDS {
            let ok = if i % (DEAD_SECONDS - 1) == 0 { 1 } else { 0 };
            assert_eq!(l.add(&second(ok, &[])), None, "second {i}");
        }
        // "off" never ends a run.
        let mut off = ErrorLimit::new(MaxErrors::Off, "/data");
        assert_eq!(off.add(&second(0, &[("ETIMEDOUT", 4)])), None);
        for _ in 0..2 * DEAD_SECONDS {
            assert_eq!(off.add(&second(0, &[])), None);
        }
    }

    #[test]
    fn a_run_in_which_nothing_succeeded_fails_at_its_end_whatever_the_limit_but_off() {
        // 16 timeouts: below every share's 1,000 attempts and below a count of 100.
        for limit in [MaxErrors::default(), MaxErrors::SharePpm(1_000_000), MaxErrors::Count(100)] {
            let mut l = ErrorLimit::new(limit, "s3://bucket");
            for s in [second(0, &[]), second(0, &[("ETIMEDOUT", 8)]), second(0, &[("ETIMEDOUT", 8)])] {
                assert_eq!(l.add(&s), None, "{limit}");
            }
            let why = l.at_end().expect("nothing succeeded");
            assert!(
                why.starts_with("no I/O succeeded: all 16 attempted failed")
                    && why.contains(&format!("max_errors = {limit}"))
                    && why.ends_with("write ETIMEDOUT 16"),
                "{why}"
            );
        }
        let mut off = ErrorLimit::new(MaxErrors::Off, "s3://bucket");
        off.add(&second(0, &[("ETIMEDOUT", 16)]));
        assert_eq!(off.at_end(), None, "off lets it complete");
        // One success, or nothing attempted at all, is not this rule's.
        let mut one = ErrorLimit::new(MaxErrors::Count(100), "/data");
        one.add(&second(1, &[("EIO", 50)]));
        assert_eq!(one.at_end(), None);
        assert_eq!(ErrorLimit::new(MaxErrors::default(), "/data").at_end(), None);
        let mut idle = ErrorLimit::new(MaxErrors::default(), "/data");
        idle.add(&second(0, &[]));
        assert_eq!(idle.at_end(), None);
    }

    #[test]
    fn a_metadata_success_is_a_success_and_mismatches_are_not_failures_at_the_end() {
        // Every GET timed out but the LISTs succeeded: something worked.
        let mut s = second(0, &[("ETIMEDOUT", 8)]);
        let mut list = OpInterval::empty();
        list.counts = Counts { ops: 3, bytes: 0, errors: 0 };
        s.ops.push(OpSeries { workload: String::new(), op: Op::List, data: list });
        let mut l = ErrorLimit::new(MaxErrors::Count(100), "s3://bucket");
        l.add(&s);
        assert_eq!(l.at_end(), None);
        // Only fsyncs succeeded while every write failed: nothing was transferred.
        let mut s = second(0, &[("EIO", 8)]);
        let mut sync = OpInterval::empty();
        sync.counts = Counts { ops: 3, bytes: 0, errors: 0 };
        s.ops.push(OpSeries { workload: String::new(), op: Op::Fsync, data: sync });
        let mut l = ErrorLimit::new(MaxErrors::Count(100), "/data");
        l.add(&s);
        assert!(l.at_end().is_some_and(|w| w.contains("write EIO 8")));
        // Reads that all found mismatches succeeded as reads: the verify mode judges them.
        let mut s = second(0, &[]);
        s.ops[0].op = Op::Read;
        s.ops[0].data.counts.ops = 100;
        let mut verify = OpInterval::empty();
        verify.counts = Counts { ops: 0, bytes: 0, errors: 100 };
        verify.errors_by_kind = vec![("corrupt".to_string(), 100)];
        s.ops.push(OpSeries { workload: String::new(), op: Op::Verify, data: verify });
        let mut l = ErrorLimit::new(MaxErrors::Count(0), "/data");
        assert_eq!(l.add(&s), None);
        assert_eq!(l.at_end(), None);
    }

    /// A second of reads that all succeed and writes that all fail with `kind`, `ok` of
    /// them succeeding.
    fn reads_ok_writes_refused(kind: &str, refused: u64, ok: u64) -> Snapshot {
        let mut s = second(ok, &[(kind, refused)]);
        let mut read = OpInterval::empty();
        read.counts = Counts { ops: 10_000, bytes: 10_000 * 4096, errors: 0 };
        s.ops.push(OpSeries { workload: String::new(), op: Op::Read, data: read });
        s
    }

    #[test]
    fn a_second_of_writes_all_refused_by_a_full_or_read_only_file_system_ends_the_run_naming_it() {
        // 100%: neither the share nor the dead rule (reads succeed) would ever end it.
        for (kind, says) in [
            (
                "ENOSPC",
                "no space left on the file system of /data (ENOSPC): in second 0, every write failed so (5,000 of them",
            ),
            (
                "EROFS",
                "the file system of /data is read-only (EROFS): in second 0, every write failed so (5,000 of them",
            ),
            ("EDQUOT", "the disk quota on the file system of /data is used up (EDQUOT)"),
            ("NFS3ERR_NOSPC", "no space left on the server's file system of /data (NFS3ERR_NOSPC)"),
        ] {
            let mut l = ErrorLimit::new(MaxErrors::SharePpm(1_000_000), "/data");
            // A second in which some writes still succeeded goes on (the fault came mid-second).
            assert_eq!(l.add(&reads_ok_writes_refused(kind, 5_000, 1)), None, "{kind}");
            let why = l.add(&reads_ok_writes_refused(kind, 5_000, 0)).expect(kind);
            assert!(why.starts_with(says) && why.contains(&format!("write {kind} 10,000")), "{why}");
        }
        // Other kinds do not count as refusals, and "off" never ends a run.
        let mut l = ErrorLimit::new(MaxErrors::SharePpm(1_000_000), "/data");
        assert_eq!(l.add(&reads_ok_writes_refused("EIO", 5_000, 0)), None);
        let mut off = ErrorLimit::new(MaxErrors::Off, "/data");
        assert_eq!(off.add(&reads_ok_writes_refused("ENOSPC", 5_000, 0)), None);
    }

    #[test]
    fn past_the_limit_a_full_file_system_is_named_before_the_counts() {
        let mut l = ErrorLimit::new(MaxErrors::default(), "/mnt/data");
        let why = l.add(&second(5_000, &[("ENOSPC", 4_000), ("EIO", 1)])).expect("past 1%");
        assert!(
            why.starts_with("no space left on the file system of /mnt/data (ENOSPC): too many failed I/Os"),
            "{why}"
        );
        let mut l = ErrorLimit::new(MaxErrors::default(), "/mnt/data");
        let why = l.add(&second(5_000, &[("EIO", 4_000)])).expect("past 1%");
        assert!(why.starts_with("too many failed I/Os"), "{why}");
    }

    #[test]
    fn a_share_is_judged_only_after_enough_attempts() {
        let mut l = ErrorLimit::new(MaxErrors::default(), "/data");
        assert_eq!(l.add(&second(9, &[("EIO", 1)])), None, "10% of 10 I/Os is too few to judge");
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(group(12), "12");
    }

    #[test]
    fn data_mismatches_never_count_as_failed_ios() {
        let mut snap = second(1000, &[]);
        let mut verify = OpInterval::empty();
        verify.counts = Counts { ops: 900, bytes: 900 * 4096, errors: 100 };
        verify.errors_by_kind = vec![("corrupt".to_string(), 100)];
        snap.ops.push(OpSeries { workload: String::new(), op: Op::Verify, data: verify });
        let mut limit = ErrorLimit::new(MaxErrors::Count(0), "/data");
        assert_eq!(limit.add(&snap), None, "100 corrupt blocks among reads that all succeeded");
    }
}
