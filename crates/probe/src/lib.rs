//! `ioscope probe`: samplers of what the target does, per second, in ioscope's series
//! model ([`ioscope_metrics::TargetSecond`]): procfs counters ([`procfs`], [`sampler`])
//! and, with eBPF, histograms aggregated in the kernel. [`driver`] cuts them into the
//! run's seconds. docs/probe.md lists each statistic and its source.

pub mod driver;
pub mod procfs;
pub mod sampler;

pub use driver::{KernelSource, Probe, ProbeConfig, Running};

/// Processes recorded when none are named: the file and object servers ioscope is
/// usually pointed at (those not running are left out).
pub const DEFAULT_PROCESSES: [&str; 5] = ["ganesha.nfsd", "nfsd", "smbd", "minio", "versitygw"];

/// The kernel samplers (eBPF) for these processes, or why there are none.
pub fn kernel_source(_processes: &[String]) -> Result<Box<dyn KernelSource>, String> {
    Err("eBPF samplers are not in this build (cargo build --features ebpf; needs clang and libelf-dev)".to_string())
}
