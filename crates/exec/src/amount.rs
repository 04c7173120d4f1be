//! An end by amount (`io_size`, `number_ios`, `passes`): the workers of a workload claim each
//! I/O from one budget before they issue it, and stop once it is spent. A precondition gives
//! each worker a budget of its own (its file, `passes` times over).

use ioscope_workload::Plan;
use std::sync::atomic::{AtomicI64, Ordering::Relaxed};

/// What is left to issue: I/Os and bytes (either may be unlimited).
pub struct Budget {
    ios: Option<AtomicI64>,
    bytes: Option<AtomicI64>,
}

impl Budget {
    fn new(ios: Option<u64>, bytes: Option<u64>) -> Self {
        let left = |n: u64| AtomicI64::new(i64::try_from(n).unwrap_or(i64::MAX));
        Budget { ios: ios.map(left), bytes: bytes.map(left) }
    }

    /// Claims one I/O of `len` bytes: false once the budget is spent (the worker stops). An
    /// I/O is issued while some of the amount is left, so the bytes issued are the amount,
    /// or less than one block more.
    #[inline]
    pub fn claim(&self, len: u32) -> bool {
        // Each claim takes its share whatever the other says, so a spent budget stays spent.
        let ios = self.ios.as_ref().is_none_or(|n| n.fetch_sub(1, Relaxed) > 0);
        let bytes = self.bytes.as_ref().is_none_or(|b| b.fetch_sub(i64::from(len), Relaxed) > 0);
        ios && bytes
    }

    /// Nothing is left to issue.
    pub fn spent(&self) -> bool {
        let out = |a: &Option<AtomicI64>| a.as_ref().is_some_and(|n| n.load(Relaxed) <= 0);
        out(&self.ios) || out(&self.bytes)
    }
}

/// The budgets of a run: one per workload, or one per worker.
pub struct Budgets {
    each: Vec<Budget>,
    by_worker: bool,
}

impl Budgets {
    /// One budget per workload for a plan that ends by amount; None when it ends on time only.
    pub fn of(plan: &Plan) -> Option<Self> {
        if plan.amount.is_none() {
            return None;
        }
        let each = plan.workloads.iter().map(|_| Budget::new(plan.amount.number_ios, plan.amount_bytes())).collect();
        Some(Budgets { each, by_worker: false })
    }

    /// `bytes` for each of `workers` workers (a precondition's: its file, N times over).
    pub fn per_worker(workers: usize, bytes: u64) -> Self {
        Budgets { each: (0..workers).map(|_| Budget::new(None, Some(bytes))).collect(), by_worker: true }
    }

    /// The budget worker `id` of workload `workload` claims from.
    pub fn of_worker(&self, id: usize, workload: usize) -> Option<&Budget> {
        self.each.get(if self.by_worker { id } else { workload })
    }

    /// Every budget is spent: the step ended by amount.
    pub fn all_spent(&self) -> bool {
        self.each.iter().all(Budget::spent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_of_bytes_lets_through_the_amount_and_no_more_than_one_block_over() {
        let b = Budget::new(None, Some(10_000));
        let issued = std::iter::repeat_with(|| b.claim(4096)).take_while(|ok| *ok).count();
        assert_eq!(issued, 3, "4096 × 3 = 12288: the third I/O starts with 1808 bytes left");
        assert!(b.spent() && !b.claim(4096), "a spent budget stays spent");
        let exact = Budget::new(None, Some(8192));
        assert_eq!(std::iter::repeat_with(|| exact.claim(4096)).take_while(|ok| *ok).count(), 2);
    }

    #[test]
    fn a_budget_of_ios_shared_by_threads_issues_exactly_that_many() {
        let b = Budget::new(Some(100_000), None);
        let issued: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| std::iter::repeat_with(|| b.claim(512)).take_while(|ok| *ok).count()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(issued, 100_000);
        assert!(b.spent());
    }
}
