//! What the eBPF samplers cost their reader: runs them for N seconds and prints, per
//! second, the block I/Os and calls they counted and the CPU time this (the reading)
//! thread used to take the second. The kernel side's cost is read with
//! `sysctl kernel.bpf_stats_enabled=1` and `bpftool prog show` (run_time_ns, run_cnt).
//! Usage (root): cargo run --release -p ioscope-probe --features ebpf --example bpf_cost -- SECONDS [PROCESS]...

use ioscope_probe::bpf::BpfSampler;

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec to write to.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn main() {
    let mut args = std::env::args().skip(1);
    let seconds: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let processes: Vec<String> = args.collect();
    let t0 = clock_ns(libc::CLOCK_MONOTONIC);
    let mut sampler = BpfSampler::start(t0, &processes).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let mut cpu_total = 0;
    println!("second block_ios syscalls dropped series take_cpu_us");
    for second in 0..seconds {
        let due = t0 + (second + 1) * 1_000_000_000 + 20_000_000;
        std::thread::sleep(std::time::Duration::from_nanos(due.saturating_sub(clock_ns(libc::CLOCK_MONOTONIC))));
        let cpu_before = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
        let s = sampler.take_second(second);
        let cpu = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) - cpu_before;
        cpu_total += cpu;
        let ios: u64 = s.block.iter().map(|b| b.latency_ns.count()).sum();
        let calls: u64 = s.syscalls.iter().map(|c| c.latency_ns.count()).sum();
        let series = s.block.len() * 3 + s.syscalls.len();
        println!("{second} {ios} {calls} {} {series} {}", s.dropped, cpu / 1000);
    }
    println!("mean take CPU per second: {} us", cpu_total / seconds.max(1) / 1000);
}
