//! The one parallel loop of preparation: items 0..n on up to `threads` threads, each
//! thread taking the next index from a shared counter (so a slow file does not hold up a
//! stripe of others). The first error stops every thread before its next item and is the
//! loop's result; items not started by then are never started.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// Runs `f(state, i)` for i in 0..n; `init` makes each thread's state (a connection, a
/// buffer). Returns the first error (of `init` or `f`).
pub(crate) fn par_for<S, E: Send>(
    n: u64,
    threads: usize,
    init: impl Fn() -> Result<S, E> + Sync,
    f: impl Fn(&mut S, u64) -> Result<(), E> + Sync,
) -> Result<(), E> {
    let (next, failed, first_error) = (AtomicU64::new(0), AtomicBool::new(false), Mutex::new(None));
    let fail = |e: E| {
        failed.store(true, Relaxed);
        // A poisoned lock only means another thread panicked; its error slot is still fine.
        first_error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(e);
    };
    let threads = threads.clamp(1, usize::try_from(n.max(1)).unwrap_or(usize::MAX));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut state = match init() {
                    Ok(s) => s,
                    Err(e) => return fail(e),
                };
                while !failed.load(Relaxed) {
                    let i = next.fetch_add(1, Relaxed);
                    if i >= n {
                        break;
                    }
                    if let Err(e) = f(&mut state, i) {
                        fail(e);
                    }
                }
            });
        }
    });
    first_error.into_inner().unwrap_or_else(|p| p.into_inner()).map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parallel_loop_stops_at_the_first_error_and_returns_it() {
        // Endless work: the loop ends only because the error stops it.
        for threads in [1, 4] {
            let done = AtomicU64::new(0);
            let r = par_for(
                u64::MAX,
                threads,
                || Ok::<_, String>(()),
                |_, i| {
                    if i == 50 {
                        return Err(format!("item {i} failed"));
                    }
                    done.fetch_add(1, Relaxed);
                    Ok(())
                },
            );
            assert_eq!(r, Err("item 50 failed".to_string()));
            if threads == 1 {
                assert_eq!(done.into_inner(), 50, "nothing after the failed item was started");
            }
        }
        // Every item runs exactly once without an error; a failed init is the result.
        let seen = Mutex::new(Vec::new());
        par_for(
            100,
            3,
            || Ok::<_, ()>(()),
            |_, i| {
                seen.lock().unwrap().push(i);
                Ok(())
            },
        )
        .unwrap();
        let mut seen = seen.into_inner().unwrap();
        seen.sort_unstable();
        assert_eq!(seen, (0..100).collect::<Vec<_>>());
        assert_eq!(par_for(5, 2, || Err::<(), _>("no connection"), |_, _| Ok(())), Err("no connection"));
    }
}
