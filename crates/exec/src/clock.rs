//! The one clock: monotonic nanoseconds on the CLOCK_MONOTONIC time line, and a precise
//! wait for open-loop schedules.
//!
//! Where the kernel itself trusts the TSC (clock source `tsc`, CPU flags `constant_tsc`
//! and `nonstop_tsc`), time is read with RDTSC (about 8 ns here against 19 ns for the vDSO
//! clock_gettime) and scaled with a factor calibrated against CLOCK_MONOTONIC at start-up.
//! Everywhere else it is clock_gettime(CLOCK_MONOTONIC).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::Relaxed};
use std::sync::OnceLock;

/// TSC to ns: `ns = base_ns + ((tsc - base_tsc) * mult) >> 32`.
#[derive(Clone, Copy, Debug)]
struct Tsc {
    base_tsc: u64,
    base_ns: u64,
    mult: u64,
}

static TSC: OnceLock<Option<Tsc>> = OnceLock::new();

/// CLOCK_MONOTONIC in ns.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A time on [`now_ns`]'s time line as CLOCK_MONOTONIC ns (the two differ by the TSC
/// calibration's error, microseconds at most), for what reads the kernel's clock: the
/// probe's samplers and eBPF's bpf_ktime_get_ns.
pub fn to_monotonic(t_ns: u64) -> u64 {
    let (now, mono) = (now_ns(), monotonic_ns());
    (t_ns as i128 + mono as i128 - now as i128).max(0) as u64
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86_64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(target_arch = "x86_64")]
fn calibrate() -> Option<Tsc> {
    let source = std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource").ok()?;
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let flags = cpuinfo.lines().find(|l| l.starts_with("flags"))?;
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    if source.trim() != "tsc" || !has("constant_tsc") || !has("nonstop_tsc") {
        return None;
    }
    // Bracket each TSC read with clock reads and keep the tightest pair, then measure
    // over 20 ms: the scale error is a few parts per million.
    let sample = || {
        (0..16)
            .map(|_| {
                let a = monotonic_ns();
                let t = rdtsc();
                let b = monotonic_ns();
                (b - a, t, a + (b - a) / 2)
            })
            .min_by_key(|s| s.0)
            .map(|(_, t, ns)| (t, ns))
            .expect("16 samples")
    };
    let (t0, n0) = sample();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (t1, n1) = sample();
    let ticks = t1.checked_sub(t0).filter(|t| *t > 0)?;
    let mult = (((n1 - n0) as u128) << 32) / ticks as u128;
    Some(Tsc { base_tsc: t1, base_ns: n1, mult: u64::try_from(mult).ok()? })
}

#[cfg(not(target_arch = "x86_64"))]
fn calibrate() -> Option<Tsc> {
    None
}

/// Chooses the clock source; called once before a run (calibration takes ~20 ms).
/// Returns the name of the source in use.
pub fn init() -> &'static str {
    match TSC.get_or_init(calibrate) {
        Some(_) => "tsc",
        None => "clock_gettime",
    }
}

/// Monotonic time in ns.
#[inline(always)]
pub fn now_ns() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if let Some(Some(t)) = TSC.get() {
        let d = rdtsc().wrapping_sub(t.base_tsc) as i64 as i128;
        return (t.base_ns as i128 + ((d * t.mult as i128) >> 32)) as u64;
    }
    monotonic_ns()
}

/// Wall-clock time in ms since the Unix epoch (for records, never for measuring).
pub fn unix_ms() -> i64 {
    unix_ns() / 1_000_000
}

/// Wall-clock time in ns since the Unix epoch (CLOCK_REALTIME): records, and the instants
/// hosts agree on (never for measuring an interval).
pub fn unix_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer; CLOCK_REALTIME always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec.saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec)
}

/// Asks the kernel for tight timer wake-ups on this thread (default slack is 50 µs).
pub fn tighten_timer_slack() {
    // SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Gives the calling thread priority over normal threads: SCHED_FIFO 2 where permitted
/// (above a worker it boosts to SCHED_FIFO 1 while it waits for it, `cpu::ThreadCpu::boost`),
/// else nice -10, else nothing. Threads it starts afterwards come up normal
/// (SCHED_RESET_ON_FORK). Returns what it got, for the host configuration.
pub fn raise_priority() -> &'static str {
    let fifo = libc::sched_param { sched_priority: 2 };
    let normal = libc::sched_param { sched_priority: 0 };
    // SAFETY: sched_setscheduler/setpriority on the calling thread (0) with valid arguments.
    unsafe {
        NICE_BEFORE.store(libc::getpriority(libc::PRIO_PROCESS, 0), Relaxed);
        if libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &fifo) == 0 {
            return "SCHED_FIFO 2";
        }
        libc::sched_setscheduler(0, libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK, &normal);
        if libc::setpriority(libc::PRIO_PROCESS, 0, -10) == 0 {
            return "nice -10";
        }
    }
    "normal (no permission to raise it)"
}

/// The calling thread's nice value before [`raise_priority`].
static NICE_BEFORE: AtomicI32 = AtomicI32::new(0);

/// Back to the priority the thread had before [`raise_priority`].
pub fn normal_priority() {
    let normal = libc::sched_param { sched_priority: 0 };
    // SAFETY: as in raise_priority; lowering one's own priority is always permitted.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_OTHER, &normal);
        libc::setpriority(libc::PRIO_PROCESS, 0, NICE_BEFORE.load(Relaxed));
    }
}

/// Waits until `target_ns` (sleeping, then spinning for the last stretch) or until
/// `stop` is set. Returns the time at wake-up.
pub fn wait_until(target_ns: u64, stop: &AtomicBool) -> u64 {
    // A sleep here can overshoot by 30-100 µs (VM timers); the last 100 µs are spun so an
    // I/O starts on time (measured: p50 lag from 5 µs down to 0.1 µs at 5,000 IOPS).
    const SPIN_NS: u64 = 100_000;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_clock_agrees_with_clock_monotonic() {
        init();
        for _ in 0..5 {
            let a = monotonic_ns();
            let t = now_ns();
            let b = monotonic_ns();
            assert!(t + 2_000 >= a && t <= b + 2_000, "{a} <= {t} <= {b}");
            std::thread::sleep(std::time::Duration::from_millis(30));
        }
    }

    #[test]
    fn the_collector_alone_gets_priority_and_gives_it_back() {
        // SAFETY: sched_getscheduler/getpriority on the calling thread.
        let policy = || unsafe { libc::sched_getscheduler(0) } & !libc::SCHED_RESET_ON_FORK;
        let nice = || unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        std::thread::spawn(move || {
            let got = raise_priority();
            match got {
                "SCHED_FIFO 2" => assert_eq!(policy(), libc::SCHED_FIFO),
                "nice -10" => assert_eq!(nice(), -10),
                _ => assert_eq!(policy(), libc::SCHED_OTHER),
            }
            // A thread started now (a worker) runs at the normal priority.
            let (p, n) = std::thread::spawn(move || (policy(), nice())).join().unwrap();
            assert!(p == libc::SCHED_OTHER && n >= 0, "{got}: a worker got policy {p}, nice {n}");
            normal_priority();
            assert_eq!(policy(), libc::SCHED_OTHER);
        })
        .join()
        .unwrap();
    }
}
