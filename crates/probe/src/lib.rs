//! `ioscope probe` (in progress): samplers of what the target does, per second. So far the
//! procfs readers ([`procfs`]) and the eBPF samplers ([`bpf`]).

pub mod bpf;
pub mod procfs;
#[cfg(test)]
mod test_skip;
