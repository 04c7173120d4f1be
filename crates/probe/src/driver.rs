//! The probe's clock: from the run's time zero, one [`TargetSecond`] per second, cut at
//! the same boundaries as the client side's seconds (second N covers t0+N s to t0+N+1 s).
//! It runs on its own thread; the caller takes finished seconds when it likes.

use crate::sampler::ProcfsSampler;
use ioscope_metrics::stat::StatId;
use ioscope_metrics::{TargetSecond, TargetSeries, TargetValue};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

const SECOND_NS: u64 = 1_000_000_000;
/// How long after a second's end its kernel histograms are taken: an I/O completing on
/// the boundary has updated its map by then.
const KERNEL_GRACE_NS: u64 = 20_000_000;

/// Series aggregated in the kernel (eBPF), per second of the run.
pub trait KernelSource: Send {
    /// The run's time zero on CLOCK_MONOTONIC: seconds are counted from it (Err: the
    /// kernel refused it, and the samplers count nothing).
    fn set_t0(&mut self, t0_ns: u64) -> Result<(), String>;
    /// Everything recorded in `second` (called once it has ended).
    fn take_second(&mut self, second: u64) -> Vec<TargetSeries>;
}

/// What to sample.
#[derive(Clone, Debug)]
pub struct ProbeConfig {
    /// The host name series are recorded under.
    pub host: String,
    /// Names (comm) of the processes whose CPU and system calls are recorded.
    pub processes: Vec<String>,
}

/// The samplers, ready before the run starts (loading eBPF programs takes time that must
/// not fall in the first second).
pub struct Probe {
    cfg: ProbeConfig,
    procfs: ProcfsSampler,
    kernel: Option<Box<dyn KernelSource>>,
    /// Why there are no kernel samplers (said once by the caller).
    pub kernel_unavailable: Option<String>,
}

impl Probe {
    pub fn new(cfg: ProbeConfig) -> Probe {
        let (kernel, kernel_unavailable) = match crate::kernel_source(&cfg.processes) {
            Ok(k) => (Some(k), None),
            Err(why) => (None, Some(why)),
        };
        Probe { procfs: ProcfsSampler::new(&cfg.processes), cfg, kernel, kernel_unavailable }
    }

    /// What the results file records about the samplers (the host's `probe` object).
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "processes": self.cfg.processes,
            "kernel_samplers": self.kernel.is_some().then_some("eBPF"),
            "kernel_unavailable": self.kernel_unavailable,
        })
    }

    /// Samples from `t0_ns` (CLOCK_MONOTONIC) on its own thread until stopped.
    pub fn start(mut self, t0_ns: u64) -> Running {
        let stop = Arc::new(AtomicBool::new(false));
        let last = Arc::new(AtomicU64::new(u64::MAX));
        let (tx, rx) = channel();
        let flag = stop.clone();
        let last_second = last.clone();
        let handle = std::thread::Builder::new()
            .name("ioscope-probe".into())
            .spawn(move || {
                if let Some(Err(why)) = self.kernel.as_mut().map(|k| k.set_t0(t0_ns)) {
                    eprintln!("probe: the eBPF samplers cannot start ({why}); recording the procfs statistics only");
                    self.kernel = None;
                }
                if !sleep_until(t0_ns, &flag) {
                    return;
                }
                self.procfs.sample();
                let mut last_ns = monotonic_ns();
                let mut cpu_before = thread_cpu_ns();
                let mut second = monotonic_ns().saturating_sub(t0_ns) / SECOND_NS;
                loop {
                    let end = t0_ns + (second + 1) * SECOND_NS;
                    if !sleep_until(end, &flag) {
                        return;
                    }
                    let mut series = self.procfs.sample().unwrap_or_default();
                    let now = monotonic_ns();
                    let interval_ns = now.saturating_sub(last_ns).max(1);
                    last_ns = now;
                    if let Some(k) = self.kernel.as_mut() {
                        // Not interruptible: the second's histograms are taken either way.
                        sleep_until(end + KERNEL_GRACE_NS, &AtomicBool::new(false));
                        series.extend(k.take_second(second));
                    }
                    // What sampling cost this thread (the eBPF programs' own time is the
                    // kernel's, charged to the threads doing I/O: docs/probe.md).
                    let cpu = thread_cpu_ns();
                    series.push(TargetSeries::new(
                        StatId::ProbeCpu,
                        &[],
                        TargetValue::Count(cpu.saturating_sub(cpu_before)),
                    ));
                    cpu_before = cpu;
                    let t = TargetSecond { host: self.cfg.host.clone(), second, interval_ns, series };
                    if tx.send(t).is_err() || second >= last_second.load(Relaxed) {
                        return;
                    }
                    // A second missed (the machine stalled) is skipped, not split.
                    second = (monotonic_ns().saturating_sub(t0_ns) / SECOND_NS).max(second + 1);
                }
            })
            .expect("spawning a thread");
        Running { rx, stop, last, handle: Some(handle) }
    }
}

/// A probe sampling on its thread.
pub struct Running {
    rx: Receiver<TargetSecond>,
    stop: Arc<AtomicBool>,
    /// The last second to sample (u64::MAX: until stopped).
    last: Arc<AtomicU64>,
    handle: Option<JoinHandle<()>>,
}

impl Running {
    /// The seconds finished since the last call.
    pub fn take(&self) -> Vec<TargetSecond> {
        self.rx.try_iter().collect()
    }

    /// Stops sampling once second `last` is recorded (None: at once) and returns the
    /// seconds not yet taken, none after `last`.
    pub fn finish(mut self, last: Option<u64>) -> Vec<TargetSecond> {
        match last {
            Some(n) => self.last.store(n, Relaxed),
            None => self.stop.store(true, Relaxed),
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        let mut rest = self.take();
        rest.retain(|t| last.is_none_or(|n| t.second <= n));
        rest
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
    }
}

/// CLOCK_MONOTONIC in ns (the time line of the run's t0 and of eBPF's bpf_ktime_get_ns).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * SECOND_NS + ts.tv_nsec as u64
}

/// CPU time of the calling thread, ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer; CLOCK_THREAD_CPUTIME_ID always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * SECOND_NS + ts.tv_nsec as u64
}

/// Sleeps until `deadline_ns`; false if `stop` was set first (checked every 50 ms).
fn sleep_until(deadline_ns: u64, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Relaxed) {
            return false;
        }
        let now = monotonic_ns();
        if now >= deadline_ns {
            return true;
        }
        std::thread::sleep(Duration::from_nanos((deadline_ns - now).min(50_000_000)));
    }
}
