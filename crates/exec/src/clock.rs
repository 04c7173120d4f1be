//! The one clock: CLOCK_MONOTONIC in nanoseconds (vDSO, no syscall on common clock
//! sources), and a precise wait for open-loop schedules.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Monotonic time in ns.
#[inline(always)]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Wall-clock time in ms since the Unix epoch (for records, never for measuring).
pub fn unix_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Asks the kernel for tight timer wake-ups on this thread (default slack is 50 µs).
pub fn tighten_timer_slack() {
    // SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Waits until `target_ns` (sleeping, then spinning for the last stretch) or until
/// `stop` is set. Returns the time at wake-up.
pub fn wait_until(target_ns: u64, stop: &AtomicBool) -> u64 {
    const SPIN_NS: u64 = 30_000;
    const MAX_SLEEP_NS: u64 = 50_000_000;
    loop {
        let now = now_ns();
        if now >= target_ns || stop.load(Relaxed) {
            return now;
        }
        let left = target_ns - now;
        if left > SPIN_NS {
            std::thread::sleep(std::time::Duration::from_nanos((left - SPIN_NS).min(MAX_SLEEP_NS)));
        } else {
            std::hint::spin_loop();
        }
    }
}
