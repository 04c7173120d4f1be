//! How busy ioscope's own worker threads are: each worker publishes its thread id and
//! thread CPU clock once, and the collector reads them once a second, so the I/O loop pays
//! nothing. Per thread it takes the kernel's scheduler statistics
//! (`/proc/self/task/TID/schedstat`: time on a CPU and time runnable but waiting for
//! one), else the thread CPU clock (`pthread_getcpuclockid`: time on a CPU only). A
//! worker that ends stores its last figures itself (a finished thread can no longer be
//! read). They go into each second's [`Snapshot::worker_cpu`], from which the summary
//! tells a client-bound run: a thread that is on a CPU or waiting for one all the time
//! never waits for its storage.

use ioscope_metrics::{Snapshot, WorkerCpu};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

/// No clock or thread id published (not started, or finished).
const NONE: i64 = -1;

/// One worker's thread, as the collector reads it.
pub(crate) struct ThreadCpu {
    clock: AtomicI64,
    tid: AtomicI64,
    final_cpu_ns: AtomicU64,
    final_wait_ns: AtomicU64,
}

/// CPU time and time waiting for a CPU, in ns, since the thread started.
#[derive(Clone, Copy, Default, PartialEq, Debug)]
struct Times {
    cpu_ns: u64,
    wait_ns: u64,
}

impl ThreadCpu {
    pub fn new() -> Self {
        ThreadCpu {
            clock: AtomicI64::new(NONE),
            tid: AtomicI64::new(NONE),
            final_cpu_ns: AtomicU64::new(0),
            final_wait_ns: AtomicU64::new(0),
        }
    }

    /// Publishes the calling thread; the guard stores its last figures when the worker
    /// ends (declare it after anything that tells the collector the worker finished, so
    /// it drops first).
    pub fn register(&self) -> CpuGuard<'_> {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: pthread_self() is the calling thread, alive; `clock` is a valid out pointer.
        if unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) } == 0 {
            self.clock.store(i64::from(clock), Relaxed);
        }
        // SAFETY: gettid has no preconditions.
        self.tid.store(i64::from(unsafe { libc::gettid() }), Relaxed);
        CpuGuard(self)
    }

    /// The thread's figures so far (None: nothing could be read).
    fn read(&self) -> Option<Times> {
        let last = Times { cpu_ns: self.final_cpu_ns.load(Relaxed), wait_ns: self.final_wait_ns.load(Relaxed) };
        let tid = self.tid.load(Relaxed);
        let clock = self.clock.load(Relaxed);
        let now = match (tid, clock) {
            (NONE, NONE) => None,
            _ => schedstat(&format!("/proc/self/task/{tid}/schedstat")).or_else(|| {
                let cpu_ns = clock_ns(clock as libc::clockid_t)?;
                Some(Times { cpu_ns, wait_ns: 0 })
            }),
        };
        match now {
            Some(t) => Some(Times { cpu_ns: t.cpu_ns.max(last.cpu_ns), wait_ns: t.wait_ns.max(last.wait_ns) }),
            None if last != Times::default() => Some(last),
            None => None,
        }
    }
}

impl ThreadCpu {
    /// Runs the worker at SCHED_FIFO 1 (below the collector's 2) until the guard drops (then at its normal policy and
    /// nice again), so that a worker the collector waits for gets a CPU at once however
    /// many others compete. None when not permitted (the collector has no real-time
    /// priority either) or the worker is not running.
    pub fn boost(&self) -> Option<Boost> {
        let tid = self.tid.load(Relaxed);
        let tid = libc::pid_t::try_from(tid).ok().filter(|t| *t > 0)?;
        let fifo = libc::sched_param { sched_priority: 1 };
        // SAFETY: sched_setscheduler on a thread id with a valid parameter.
        let set = unsafe { libc::sched_setscheduler(tid, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &fifo) };
        (set == 0).then_some(Boost(tid))
    }
}

/// A worker running at SCHED_FIFO ([`ThreadCpu::boost`]) until this drops.
pub(crate) struct Boost(libc::pid_t);

impl Drop for Boost {
    fn drop(&mut self) {
        let normal = libc::sched_param { sched_priority: 0 };
        // SAFETY: as in boost; SCHED_OTHER keeps the thread's nice value.
        unsafe { libc::sched_setscheduler(self.0, libc::SCHED_OTHER, &normal) };
    }
}

/// Stores the worker's last figures when it ends.
pub(crate) struct CpuGuard<'a>(&'a ThreadCpu);

impl Drop for CpuGuard<'_> {
    fn drop(&mut self) {
        let own = schedstat("/proc/thread-self/schedstat")
            .or_else(|| Some(Times { cpu_ns: clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)?, wait_ns: 0 }));
        if let Some(t) = own {
            self.0.final_cpu_ns.store(t.cpu_ns, Relaxed);
            self.0.final_wait_ns.store(t.wait_ns, Relaxed);
        }
        self.0.tid.store(NONE, Relaxed);
        self.0.clock.store(NONE, Relaxed);
    }
}

/// The first two fields of a schedstat file: ns on a CPU, ns runnable waiting for one.
fn schedstat(path: &str) -> Option<Times> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut fields = text.split_ascii_whitespace().map(|f| f.parse::<u64>().ok());
    Some(Times { cpu_ns: fields.next()??, wait_ns: fields.next()?? })
}

fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid out pointer; an invalid clock id is an error return, not UB.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return None;
    }
    Some((ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64))
}

/// The collector's side: each worker's figures at the previous read.
pub(crate) struct CpuReader {
    last: Vec<Option<Times>>,
}

impl CpuReader {
    /// Takes the starting point (call at the run's time zero: opening engines is not
    /// measured time).
    pub fn start(clocks: &[ThreadCpu]) -> Self {
        CpuReader { last: clocks.iter().map(ThreadCpu::read).collect() }
    }

    /// Puts into `snap` what each worker used since the previous call.
    pub fn fill(&mut self, clocks: &[ThreadCpu], snap: &mut Snapshot) {
        snap.worker_cpu = clocks
            .iter()
            .zip(self.last.iter_mut())
            .enumerate()
            .filter_map(|(w, (c, last))| {
                let now = c.read()?;
                let before = last.unwrap_or(now);
                *last = Some(now);
                Some(WorkerCpu {
                    worker: w as u32,
                    cpu_ns: now.cpu_ns.saturating_sub(before.cpu_ns),
                    wait_ns: now.wait_ns.saturating_sub(before.wait_ns),
                })
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_boosted_worker_runs_at_fifo_1_and_gets_its_policy_and_nice_back() {
        // SAFETY: sched_getscheduler/sched_getparam/getpriority on the calling thread.
        let policy = || unsafe { libc::sched_getscheduler(0) } & !libc::SCHED_RESET_ON_FORK;
        let rt_priority = || {
            let mut p = libc::sched_param { sched_priority: -1 };
            unsafe { libc::sched_getparam(0, &mut p) };
            p.sched_priority
        };
        let nice = || unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        let clock = ThreadCpu::new();
        let step = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            let worker = s.spawn(|| {
                let _g = clock.register();
                // SAFETY: raising one's own nice value is always permitted.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 7) };
                step.wait();
                step.wait();
                let during = (policy(), rt_priority());
                step.wait();
                step.wait();
                (during, (policy(), nice()))
            });
            step.wait();
            let boost = clock.boost();
            let was_boosted = boost.is_some();
            step.wait();
            step.wait();
            drop(boost);
            step.wait();
            let (during, after) = worker.join().unwrap();
            match was_boosted {
                true => assert_eq!(during, (libc::SCHED_FIFO, 1), "boosted"),
                false => assert_eq!(during.0, libc::SCHED_OTHER, "not permitted: unchanged"),
            }
            assert_eq!(after, (libc::SCHED_OTHER, 7), "its own policy and nice again");
        });
    }

    #[test]
    fn a_spinning_thread_shows_its_cpu_time_and_a_sleeping_one_almost_none() {
        let clocks = [ThreadCpu::new(), ThreadCpu::new()];
        let go = std::sync::Barrier::new(3);
        std::thread::scope(|s| {
            s.spawn(|| {
                let _g = clocks[0].register();
                go.wait();
                let t = std::time::Instant::now();
                let mut x = 0u64;
                while t.elapsed() < std::time::Duration::from_millis(200) {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            });
            s.spawn(|| {
                let _g = clocks[1].register();
                go.wait();
                std::thread::sleep(std::time::Duration::from_millis(200));
            });
            go.wait();
        });
        // Both threads have ended: their last figures count.
        let mut reader = CpuReader { last: vec![Some(Times::default()); 2] };
        let mut snap = Snapshot::new(0, 1_000_000_000, "h");
        reader.fill(&clocks, &mut snap);
        // On a CPU, or runnable and waiting for one (a busy machine), for most of 200 ms.
        let busy = snap.worker_cpu[0].cpu_ns + snap.worker_cpu[0].wait_ns;
        let idle = snap.worker_cpu[1].cpu_ns + snap.worker_cpu[1].wait_ns;
        assert!(busy >= 150_000_000, "a spinning thread was busy {busy} ns of 200 ms");
        assert!(idle < busy / 10, "a sleeping thread was busy {idle} ns against {busy}");
        // The next read covers nothing new.
        reader.fill(&clocks, &mut snap);
        assert_eq!(snap.worker_cpu.iter().map(|w| w.cpu_ns + w.wait_ns).sum::<u64>(), 0);
    }
}
