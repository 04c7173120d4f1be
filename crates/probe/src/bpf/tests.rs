//! The eBPF samplers against the real kernel (root): block I/O of a loop device the test
//! writes to, and the test process's own pwrite64 calls.

use super::*;
use crate::procfs;
use crate::test_skip::skip;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::process::Command;
use std::sync::Mutex;

/// The tests' own writes would count in each other's figures: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec to write to.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn is_root() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Every second from 0 to the current one, each taken once it ended plus a grace.
fn take_all(sampler: &mut BpfSampler, t0: u64) -> Vec<BpfSecond> {
    let last = (monotonic_ns() - t0) / 1_000_000_000;
    let end_ns = t0 + (last + 1) * 1_000_000_000 + 30_000_000;
    std::thread::sleep(std::time::Duration::from_nanos(end_ns.saturating_sub(monotonic_ns())));
    (0..=last).map(|s| sampler.take_second(s)).collect()
}

fn start_or_skip(t0: u64, processes: &[String]) -> Option<BpfSampler> {
    if !is_root() {
        skip("the eBPF samplers need root");
        return None;
    }
    Some(BpfSampler::start(t0, processes).unwrap_or_else(|e| panic!("as root, eBPF loads here: {e}")))
}

/// A loop device on a file in /tmp, detached when dropped.
struct Loop {
    dev: String,
    file: std::path::PathBuf,
}

impl Loop {
    fn new(bytes: u64) -> Option<Loop> {
        let file = std::env::temp_dir().join(format!("ioscope-bpf-loop-{}", std::process::id()));
        std::fs::File::create(&file).and_then(|f| f.set_len(bytes)).ok()?;
        let out = Command::new("losetup").args(["--find", "--show"]).arg(&file).output();
        match out {
            Ok(out) if out.status.success() => {
                Some(Loop { dev: String::from_utf8_lossy(&out.stdout).trim().to_string(), file })
            }
            other => {
                let _ = std::fs::remove_file(&file);
                skip(&format!("cannot attach a loop device with losetup: {other:?}"));
                None
            }
        }
    }

    fn name(&self) -> &str {
        self.dev.trim_start_matches("/dev/")
    }

    fn diskstats_writes(&self) -> u64 {
        let text = std::fs::read_to_string("/proc/diskstats").unwrap();
        let stats = procfs::diskstats(&text);
        stats.get(self.name()).map(|d| d.writes).unwrap_or_else(|| panic!("{} not in /proc/diskstats", self.name()))
    }

    /// The device's "time spent writing" in /proc/diskstats (its 11th field), ms.
    fn diskstats_write_ms(&self) -> u64 {
        let text = std::fs::read_to_string("/proc/diskstats").unwrap();
        let line =
            text.lines().map(|l| l.split_whitespace().collect::<Vec<_>>()).find(|w| w.get(2) == Some(&self.name()));
        line.and_then(|w| w.get(10)?.parse().ok()).unwrap_or_else(|| panic!("{} not in /proc/diskstats", self.name()))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.dev).status();
        let _ = std::fs::remove_file(&self.file);
    }
}

#[test]
fn block_io_of_a_loop_device_counts_every_write_with_its_size_and_offset_as_diskstats_does() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let t0 = monotonic_ns();
    let Some(mut sampler) = start_or_skip(t0, &[]) else { return };
    let Some(dev) = Loop::new(64 << 20) else { return };
    const WRITES: u64 = 3000;
    const SIZE: usize = 8192;
    let (before, before_ms) = (dev.diskstats_writes(), dev.diskstats_write_ms());
    let file = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(&dev.dev).unwrap();
    let layout = std::alloc::Layout::from_size_align(SIZE, 4096).unwrap();
    // SAFETY: the layout has a non-zero size; freed below with the same layout.
    let buf = unsafe { std::alloc::alloc_zeroed(layout) };
    assert!(!buf.is_null());
    for i in 0..WRITES {
        let offset = (i % 4096) * SIZE as u64 + 4096; // all within the 64 MiB device
                                                      // SAFETY: buf holds SIZE bytes.
        let n = unsafe { libc::pwrite(file.as_raw_fd(), buf.cast(), SIZE, offset as libc::off_t) };
        assert_eq!(n, SIZE as isize, "write {i}: {}", std::io::Error::last_os_error());
    }
    // SAFETY: allocated above with this layout.
    unsafe { std::alloc::dealloc(buf, layout) };
    drop(file);
    let seconds = take_all(&mut sampler, t0);
    let diskstats = dev.diskstats_writes() - before;
    let diskstats_ms = dev.diskstats_write_ms() - before_ms;

    let mut latency = ioscope_metrics::Histogram::new();
    let mut size = ioscope_metrics::Histogram::new();
    let mut offset = ioscope_metrics::Histogram::new();
    let mut dropped = 0;
    for s in &seconds {
        dropped += s.dropped;
        for b in s.block.iter().filter(|b| b.disk == dev.name() && b.op == "write") {
            latency.merge(&b.latency_ns);
            size.merge(&b.size_bytes);
            offset.merge(&b.offset_bytes);
        }
    }
    // A completion the kernel skipped (the program already running on that CPU, for an
    // interrupt's completion of another device) is counted as dropped, never lost: here,
    // and in any disk's series, nothing is counted twice or missed silently.
    let counted = latency.count();
    assert!(counted <= WRITES, "at most one latency per write issued: {counted}");
    assert!(counted + dropped >= WRITES, "{counted} writes counted and {dropped} dropped, of {WRITES} issued");
    if counted < WRITES {
        eprintln!("{} of {WRITES} completions skipped by the kernel, counted as dropped", WRITES - counted);
    }
    let off_by = latency.count().abs_diff(diskstats) as f64 / diskstats as f64;
    assert!(off_by <= 0.01, "eBPF {} writes vs /proc/diskstats {diskstats}", latency.count());
    assert_eq!((size.count(), size.min(), size.max()), (counted, Some(SIZE as u64), Some(SIZE as u64)));
    assert_eq!(size.sum(), counted as u128 * SIZE as u128);
    assert_eq!(offset.count(), counted);
    let (lowest, highest) = (4096, (WRITES - 1) * SIZE as u64 + 4096);
    assert!(offset.min().is_some_and(|m| m >= lowest) && offset.max().is_some_and(|m| m <= highest), "{offset:?}");
    if counted == WRITES {
        assert_eq!((offset.min(), offset.max()), (Some(lowest), Some(highest)));
    }
    assert!(latency.min().is_some_and(|m| m > 0), "a write takes time: {latency:?}");
    // Timed from the request's own start, as diskstats times it, to the device's
    // completion: diskstats' time spent writing also holds the completion callbacks that
    // run after (waking the writer), so the latencies add up to a little less, never more
    // (it truncates to ms).
    let latency_ms = latency.sum() as f64 / 1e6;
    eprintln!("eBPF latency sum {latency_ms:.3} ms, diskstats {diskstats_ms} ms");
    let within = latency_ms <= diskstats_ms as f64 + 1.0 && latency_ms >= 0.5 * diskstats_ms as f64;
    assert!(within, "eBPF latencies add up to {latency_ms:.3} ms, diskstats {diskstats_ms} ms");
}

#[test]
fn the_named_process_pwrite64_calls_are_each_timed_once_from_time_zero_on() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap().trim_end().to_string();
    // Loaded ahead of the run: time zero is not known yet, nothing counts.
    let Some(mut sampler) = start_or_skip(0, std::slice::from_ref(&comm)) else { return };
    let path = std::env::temp_dir().join(format!("ioscope-bpf-pwrite-{}", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    let pwrites = |n: u64| {
        for i in 0..n {
            // SAFETY: a valid 16-byte buffer.
            let n = unsafe { libc::pwrite(file.as_raw_fd(), [7u8; 16].as_ptr().cast(), 16, (i * 16) as libc::off_t) };
            assert_eq!(n, 16);
        }
    };
    pwrites(300); // before time zero
    let t0 = monotonic_ns();
    sampler.set_t0(t0).unwrap();
    const CALLS: u64 = 700;
    pwrites(CALLS);
    drop(file);
    let _ = std::fs::remove_file(&path);
    let seconds = take_all(&mut sampler, t0);
    let mut calls = ioscope_metrics::Histogram::new();
    for s in &seconds {
        assert_eq!(s.dropped, 0);
        for c in s.syscalls.iter().filter(|c| c.syscall == "pwrite64") {
            assert_eq!(c.process, comm);
            calls.merge(&c.latency_ns);
        }
    }
    assert_eq!(calls.count(), CALLS, "only the calls after time zero: {seconds:?}");
    assert!(calls.min().is_some_and(|m| m > 0) && calls.max() >= calls.min(), "{calls:?}");
}

#[test]
fn a_process_without_the_right_to_load_ebpf_is_told_to_run_as_root() {
    if !is_root() {
        let e = BpfSampler::start(monotonic_ns(), &[]).err().expect("not root: refused");
        assert!(e.starts_with("eBPF not allowed") && e.contains("run as root"), "{e}");
        return;
    }
    // As root: a thread that gives up root (setresuid on the thread alone, through the
    // raw call) is refused like a user's process.
    let e = std::thread::spawn(|| {
        // SAFETY: changes this thread's credentials only.
        let r = unsafe { libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534) };
        assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
        BpfSampler::start(monotonic_ns(), &[]).err()
    })
    .join()
    .unwrap()
    .expect("without root, loading is refused");
    assert!(e.starts_with("eBPF not allowed") && e.contains("run as root"), "{e}");
}
