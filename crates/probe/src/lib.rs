//! `ioscope probe`: samplers of what the target does, per second, in ioscope's series
//! model ([`ioscope_metrics::TargetSecond`]): procfs counters ([`procfs`], [`sampler`])
//! and, with eBPF, histograms aggregated in the kernel ([`bpf`]). [`driver`] cuts them
//! into the run's seconds. docs/probe.md lists each statistic and its source.

pub mod bpf;
pub mod driver;
pub mod procfs;
pub mod sampler;
#[cfg(test)]
mod test_skip;

pub use driver::{KernelSource, Probe, ProbeConfig, Running};
use ioscope_metrics::stat::{Dim, StatId};
use ioscope_metrics::{TargetSeries, TargetValue};

/// Processes recorded when none are named: the file and object servers ioscope is
/// usually pointed at (those not running are left out).
pub const DEFAULT_PROCESSES: [&str; 5] = ["ganesha.nfsd", "nfsd", "smbd", "minio", "versitygw"];

/// The kernel samplers (eBPF) for these processes, loaded now and counting from the time
/// zero given later, or why there are none.
pub fn kernel_source(processes: &[String]) -> Result<Box<dyn KernelSource>, String> {
    bpf::BpfSampler::start(0, processes).map(|s| Box::new(s) as Box<dyn KernelSource>)
}

impl KernelSource for bpf::BpfSampler {
    fn set_t0(&mut self, t0_ns: u64) -> Result<(), String> {
        bpf::BpfSampler::set_t0(self, t0_ns)
    }

    fn take_second(&mut self, second: u64) -> Vec<TargetSeries> {
        let taken = bpf::BpfSampler::take_second(self, second);
        let mut out = Vec::new();
        for b in taken.block {
            let labels = [(Dim::Disk, b.disk.as_str()), (Dim::Op, b.op)];
            for (stat, h) in [
                (StatId::BlockLatency, b.latency_ns),
                (StatId::BlockSize, b.size_bytes),
                (StatId::BlockOffset, b.offset_bytes),
            ] {
                out.push(TargetSeries::new(stat, &labels, TargetValue::Dist(h)));
            }
        }
        for c in taken.syscalls {
            let labels = [(Dim::Process, c.process.as_str()), (Dim::Syscall, c.syscall)];
            out.push(TargetSeries::new(StatId::SyscallLatency, &labels, TargetValue::Dist(c.latency_ns)));
        }
        // Never swallowed: what the kernel samplers could not place is counted.
        out.push(TargetSeries::new(StatId::ProbeDropped, &[], TargetValue::Count(taken.dropped)));
        out
    }
}
