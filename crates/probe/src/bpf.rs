//! eBPF samplers: block I/O (latency, size and offset per device and op) and file-system
//! system calls of named processes (latency per process name and call), as histograms in
//! ioscope's bucket layout aggregated in the kernel per second of the run: no event is
//! copied to user space. The programs are C (CO-RE) in `bpf/*.bpf.c`, loaded with
//! libbpf-rs (`bpf/loader.rs`) when the crate is built with the `ebpf` feature; without
//! it, [`BpfSampler::start`] says so and the caller keeps its procfs samplers.
//!
//! Seconds: the kernel programs count an I/O (a call) in the second of the run its
//! completion (its return) falls in, `(now - t0) / 1 s` on CLOCK_MONOTONIC, and nothing
//! before `t0`. The caller takes each second once it ended plus a grace (20 ms is
//! plenty): [`BpfSampler::take_second`] removes that second's entries from the kernel
//! maps. An entry of an earlier second found then (a program that ran across the second's
//! end and updated its map after the take, or a second the caller did not take) is not
//! reported under a second already handed over, so never counted twice: its events are
//! added to [`BpfSecond::dropped`], as are events lost to a full map and runs the kernel
//! skipped (a program does not run on a CPU where it already runs: a device's completion
//! interrupting the program while it handles another's; the kernel counts these per
//! program, and which device's they were is not known).

#[cfg(feature = "ebpf")]
mod loader;
// Without the loader only its tests use it; they run in every build.
#[cfg_attr(not(feature = "ebpf"), allow(dead_code))]
mod series;
pub mod syscalls;

use ioscope_metrics::Histogram;

/// Why there is no eBPF sampler in a build without the `ebpf` feature.
pub const NOT_IN_THIS_BUILD: &str =
    "eBPF samplers are not in this build (cargo build --features ebpf; needs clang and libelf-dev)";

/// The block ops, by the index the kernel program stores (grouped as /proc/diskstats
/// groups them: every other write-direction op is a write).
pub const BLOCK_OPS: [&str; 5] = ["read", "write", "discard", "flush", "other"];

/// Everything the eBPF samplers recorded in one second of the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BpfSecond {
    /// One entry per device and op that completed I/O in the second.
    pub block: Vec<BlockSeries>,
    /// One entry per process name and call that returned in the second.
    pub syscalls: Vec<SyscallSeries>,
    /// I/Os and calls not in `block`/`syscalls`: lost to a full kernel map, counted in
    /// the kernel after their second had been taken, or skipped by the kernel (of any
    /// device or process: it does not say which).
    pub dropped: u64,
}

/// Block I/O of one device and op in one second.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockSeries {
    /// The kernel's name of the (whole) disk, as in /proc/diskstats ("vda", "loop3"), or
    /// "MAJ:MIN" when the device is gone.
    pub disk: String,
    /// One of [`BLOCK_OPS`].
    pub op: &'static str,
    /// Issue to completion.
    pub latency_ns: Histogram,
    pub size_bytes: Histogram,
    /// Where on the device the request started.
    pub offset_bytes: Histogram,
}

/// File-system calls of one process name and call in one second.
#[derive(Clone, Debug, PartialEq)]
pub struct SyscallSeries {
    /// The process name as asked for (every process of that name counts).
    pub process: String,
    /// The call as strace names it ("pwrite64"), from [`syscalls::FS_SYSCALLS`].
    pub syscall: &'static str,
    /// Entry to return.
    pub latency_ns: Histogram,
}

/// The loaded and attached eBPF programs and their maps; dropping it detaches them.
pub struct BpfSampler {
    #[cfg(feature = "ebpf")]
    loaded: loader::Loaded,
}

impl BpfSampler {
    /// Loads and attaches the programs. `t0_monotonic_ns` is the run's time zero
    /// (CLOCK_MONOTONIC ns, second 0 starts there; 0 when not known yet: see
    /// [`BpfSampler::set_t0`]); `processes` are the process names
    /// (/proc/PID/comm, which the kernel cuts to 15 bytes) whose file-system calls are
    /// timed: none, no syscall sampler. Err says why eBPF is unavailable, in one sentence
    /// the caller says once.
    pub fn start(t0_monotonic_ns: u64, processes: &[String]) -> Result<BpfSampler, String> {
        #[cfg(feature = "ebpf")]
        {
            loader::Loaded::start(t0_monotonic_ns, processes).map(|loaded| BpfSampler { loaded })
        }
        #[cfg(not(feature = "ebpf"))]
        {
            let _ = (t0_monotonic_ns, processes);
            Err(NOT_IN_THIS_BUILD.to_string())
        }
    }

    /// Sets the run's time zero when it was not known at [`BpfSampler::start`] (0 there:
    /// nothing is counted until this call), so the programs can be loaded ahead of the
    /// run. Err when the kernel refuses the write (said once by the caller).
    pub fn set_t0(&mut self, t0_monotonic_ns: u64) -> Result<(), String> {
        #[cfg(feature = "ebpf")]
        {
            self.loaded.set_t0(t0_monotonic_ns)
        }
        #[cfg(not(feature = "ebpf"))]
        {
            let _ = t0_monotonic_ns;
            Err(NOT_IN_THIS_BUILD.to_string())
        }
    }

    /// Everything recorded for `second` (call once it ended + a small grace, e.g. 20 ms,
    /// for every second in order); removes those entries from the kernel maps. Also looks
    /// for processes of the names asked for that started since the last call.
    pub fn take_second(&mut self, second: u64) -> BpfSecond {
        #[cfg(feature = "ebpf")]
        {
            self.loaded.take_second(second)
        }
        #[cfg(not(feature = "ebpf"))]
        {
            let _ = second;
            BpfSecond::default()
        }
    }
}

#[cfg(all(test, feature = "ebpf"))]
mod tests;

#[cfg(test)]
mod any_build_tests {
    use std::process::Command;

    #[cfg(not(feature = "ebpf"))]
    #[test]
    fn without_the_ebpf_feature_start_says_how_to_build_it() {
        let e = super::BpfSampler::start(0, &["nfsd".to_string()]).err().expect("no eBPF in this build");
        assert!(e.contains("--features ebpf") && e.contains("clang"), "{e}");
    }

    /// The kernel programs' bucket index (bpf/bucket.bpf.h, plain C) compiled for this
    /// machine and compared with ioscope's own on values around every bucket edge.
    #[test]
    fn the_kernels_bucket_index_is_ioscopes() {
        let dir = std::env::temp_dir().join(format!("ioscope-bucket-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let header = concat!(env!("CARGO_MANIFEST_DIR"), "/src/bpf/bucket.bpf.h");
        let source = format!(
            "#include <stdio.h>\n#include <stdint.h>\ntypedef uint64_t u64; typedef uint32_t u32; typedef uint16_t u16;\n\
             #ifndef __always_inline\n#define __always_inline inline __attribute__((always_inline))\n#endif\n#include \"{header}\"\n\
             int main(void) {{ unsigned long long v; while (scanf(\"%llu\", &v) == 1) printf(\"%u\\n\", bucket_index(v)); return 0; }}\n"
        );
        std::fs::write(dir.join("b.c"), source).unwrap();
        let cc = Command::new("cc").arg("-O2").arg("-o").arg(dir.join("b")).arg(dir.join("b.c")).status();
        match cc {
            Ok(s) if s.success() => {}
            other => {
                crate::test_skip::skip(&format!("cannot compile C for this machine with cc: {other:?}"));
                return;
            }
        }
        let mut values = vec![0u64, 1, 255, 256, 257, u64::MAX, u64::MAX - 1];
        for bit in 8..64 {
            let edge = 1u64 << bit;
            values.extend([edge - 1, edge, edge + 1, edge + (edge >> 7), edge | (edge - 1)]);
        }
        let input: String = values.iter().map(|v| format!("{v}\n")).collect();
        let mut child = Command::new(dir.join("b"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let got: Vec<usize> = String::from_utf8(out.stdout).unwrap().lines().map(|l| l.parse().unwrap()).collect();
        let want: Vec<usize> = values.iter().map(|v| ioscope_metrics::histogram::bucket_index(*v)).collect();
        assert_eq!(got, want, "values {values:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
