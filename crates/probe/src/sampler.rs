//! The procfs sampler: reads the kernel's cumulative counters (CPU time, memory, network
//! interfaces, block devices, named processes) and turns the difference between two
//! readings into one second of target series.

use crate::procfs::{self, DiskCounters, NicCounters, CPU_MODES};
use ioscope_metrics::stat::{Dim, StatId};
use ioscope_metrics::{TargetSeries, TargetValue};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The modes of /proc/stat a CPU's time is split into (guest time is already inside user
/// and nice, so it is not counted twice).
const MODES: usize = 8;

/// One reading of every counter.
#[derive(Default)]
struct Reading {
    cpu: BTreeMap<String, [u64; 10]>,
    mem: BTreeMap<String, u64>,
    nic: BTreeMap<String, NicCounters>,
    disk: BTreeMap<String, DiskCounters>,
    /// (name, pid) -> (user, system) ticks.
    process: BTreeMap<(String, u32), (u64, u64)>,
}

/// Reads /proc (or a copy of it, in tests) and keeps the previous reading.
pub struct ProcfsSampler {
    root: PathBuf,
    /// Names (comm) of the processes whose CPU time is recorded.
    processes: Vec<String>,
    ns_per_tick: u64,
    previous: Option<Reading>,
    /// Block devices that have done I/O since the probe started: recorded every second from
    /// then on (a machine has dozens of idle loop devices).
    active_disks: BTreeSet<String>,
    /// Whole devices (not partitions): the ones /sys/block lists.
    whole_disks: Option<BTreeSet<String>>,
}

impl ProcfsSampler {
    pub fn new(processes: &[String]) -> ProcfsSampler {
        let whole = std::fs::read_dir("/sys/block")
            .ok()
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect());
        ProcfsSampler::with_root(Path::new("/proc"), processes, whole)
    }

    /// A sampler of the procfs tree at `root`; `whole_disks` None: every device counts.
    pub fn with_root(root: &Path, processes: &[String], whole_disks: Option<BTreeSet<String>>) -> ProcfsSampler {
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let ns_per_tick = if hz > 0 { 1_000_000_000 / hz as u64 } else { 10_000_000 };
        ProcfsSampler {
            root: root.to_path_buf(),
            processes: processes.to_vec(),
            ns_per_tick,
            previous: None,
            active_disks: BTreeSet::new(),
            whole_disks,
        }
    }

    fn read(&self) -> Reading {
        let text = |name: &str| std::fs::read_to_string(self.root.join(name)).unwrap_or_default();
        let mut process = BTreeMap::new();
        if !self.processes.is_empty() {
            for entry in std::fs::read_dir(&self.root).into_iter().flatten().flatten() {
                let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
                let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
                let Some((name, user, system)) = procfs::process_stat(&stat) else { continue };
                if self.processes.contains(&name) {
                    process.insert((name, pid), (user, system));
                }
            }
        }
        Reading {
            cpu: procfs::cpu_ticks(&text("stat")),
            mem: procfs::meminfo_bytes(&text("meminfo")),
            nic: procfs::net_dev(&text("net/dev")),
            disk: procfs::diskstats(&text("diskstats")),
            process,
        }
    }

    /// Takes a reading; the series of the time since the previous one (None at the first).
    pub fn sample(&mut self) -> Option<Vec<TargetSeries>> {
        let now = self.read();
        let before = self.previous.take();
        let out = before.map(|before| self.delta(&before, &now));
        self.previous = Some(now);
        out
    }

    fn delta(&mut self, a: &Reading, b: &Reading) -> Vec<TargetSeries> {
        let mut out = Vec::new();
        let d = |x: u64, y: u64| y.saturating_sub(x);
        let count = |stat, labels: &[(Dim, &str)], v| TargetSeries::new(stat, labels, TargetValue::Count(v));
        for (cpu, now) in &b.cpu {
            let Some(before) = a.cpu.get(cpu) else { continue };
            let id = cpu.trim_start_matches("cpu");
            for (mode, (x, y)) in CPU_MODES.iter().zip(before.iter().zip(now)).take(MODES) {
                out.push(count(
                    StatId::CpuTime,
                    &[(Dim::Cpu, id), (Dim::Mode, mode)],
                    d(*x, *y).saturating_mul(self.ns_per_tick),
                ));
            }
        }
        for (stat, field) in
            [(StatId::MemPageCache, "Cached"), (StatId::MemDirty, "Dirty"), (StatId::MemAvailable, "MemAvailable")]
        {
            if let Some(v) = b.mem.get(field) {
                out.push(TargetSeries::new(stat, &[], TargetValue::Gauge(*v)));
            }
        }
        for (nic, now) in &b.nic {
            let Some(before) = a.nic.get(nic) else { continue };
            let l = [(Dim::Nic, nic.as_str())];
            out.push(count(StatId::NetRxBytes, &l, d(before.rx_bytes, now.rx_bytes)));
            out.push(count(StatId::NetTxBytes, &l, d(before.tx_bytes, now.tx_bytes)));
            out.push(count(StatId::NetRxPackets, &l, d(before.rx_packets, now.rx_packets)));
            out.push(count(StatId::NetTxPackets, &l, d(before.tx_packets, now.tx_packets)));
            let drops = d(before.rx_drops, now.rx_drops).saturating_add(d(before.tx_drops, now.tx_drops));
            out.push(count(StatId::NetDrops, &l, drops));
        }
        for (disk, now) in &b.disk {
            let Some(before) = a.disk.get(disk) else { continue };
            if self.whole_disks.as_ref().is_some_and(|w| !w.contains(disk)) {
                continue;
            }
            if now != before {
                self.active_disks.insert(disk.clone());
            }
            if !self.active_disks.contains(disk) {
                continue;
            }
            let dk = (Dim::Disk, disk.as_str());
            for (op, ops, bytes) in [
                ("read", d(before.reads, now.reads), Some(d(before.read_bytes, now.read_bytes))),
                ("write", d(before.writes, now.writes), Some(d(before.write_bytes, now.write_bytes))),
                ("discard", d(before.discards, now.discards), Some(d(before.discard_bytes, now.discard_bytes))),
                ("flush", d(before.flushes, now.flushes), None),
            ] {
                out.push(count(StatId::DiskOps, &[dk, (Dim::Op, op)], ops));
                if let Some(bytes) = bytes {
                    out.push(count(StatId::DiskBytes, &[dk, (Dim::Op, op)], bytes));
                }
            }
            out.push(count(StatId::DiskBusy, &[dk], d(before.busy_ms, now.busy_ms).saturating_mul(1_000_000)));
            out.push(count(
                StatId::DiskQueueTime,
                &[dk],
                d(before.weighted_ms, now.weighted_ms).saturating_mul(1_000_000),
            ));
        }
        // Per name, the CPU of every process with it: a process that started since the
        // previous reading counts from zero, one that ended is left out.
        let mut by_name: BTreeMap<&str, (u64, u64)> = self.processes.iter().map(|n| (n.as_str(), (0, 0))).collect();
        for ((name, pid), (user, system)) in &b.process {
            let (u0, s0) = a.process.get(&(name.clone(), *pid)).copied().unwrap_or((0, 0));
            let e = by_name.entry(name.as_str()).or_default();
            e.0 = e.0.saturating_add(d(u0, *user));
            e.1 = e.1.saturating_add(d(s0, *system));
        }
        let running: BTreeSet<&str> = a.process.keys().chain(b.process.keys()).map(|(n, _)| n.as_str()).collect();
        for (name, (user, system)) in by_name.into_iter().filter(|(n, _)| running.contains(n)) {
            let p = (Dim::Process, name);
            out.push(count(StatId::ProcessCpu, &[p, (Dim::Mode, "user")], user.saturating_mul(self.ns_per_tick)));
            out.push(count(StatId::ProcessCpu, &[p, (Dim::Mode, "system")], system.saturating_mul(self.ns_per_tick)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, stat: &str, disk: &str, proc_stat: &str) {
        std::fs::create_dir_all(root.join("net")).unwrap();
        std::fs::create_dir_all(root.join("4242")).unwrap();
        std::fs::write(root.join("stat"), stat).unwrap();
        std::fs::write(root.join("meminfo"), "MemAvailable: 100 kB\nCached: 50 kB\nDirty: 2 kB\n").unwrap();
        std::fs::write(root.join("net/dev"), "Inter-|\n face |\n  eth0: 1000 10 0 1 0 0 0 0 2000 20 0 2 0 0 0 0\n")
            .unwrap();
        std::fs::write(root.join("diskstats"), disk).unwrap();
        std::fs::write(root.join("4242/stat"), proc_stat).unwrap();
    }

    fn value(series: &[TargetSeries], stat: StatId, labels: &[(Dim, &str)]) -> Option<u64> {
        let s = series.iter().find(|s| s.stat == stat && labels.iter().all(|(d, v)| s.label(*d) == *v))?;
        match s.value {
            TargetValue::Count(v) | TargetValue::Gauge(v) => Some(v),
            TargetValue::Dist(_) => None,
        }
    }

    #[test]
    fn a_second_holds_the_counters_differences_and_the_memory_levels_in_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let idle_disk = "   7 0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
        write(
            dir.path(),
            "cpu  1 1 1 1 1 1 1 1 0 0\ncpu0 10 0 5 100 1 0 0 0 0 0\n",
            &format!("   7 3 loop3 100 0 800 0 50 0 400 0 0 30 60 0 0 0 0 7 0\n{idle_disk}"),
            "4242 (ganesha.nfsd) S 1 1 1 0 -1 0 0 0 0 0 100 40 0 0",
        );
        let mut s = ProcfsSampler::with_root(dir.path(), &["ganesha.nfsd".into()], None);
        assert!(s.sample().is_none(), "the first reading is the baseline");
        write(
            dir.path(),
            "cpu  1 1 1 1 1 1 1 1 0 0\ncpu0 13 0 6 197 1 0 0 0 0 0\n",
            &format!("   7 3 loop3 110 0 880 0 70 0 560 0 1 530 1060 0 0 0 0 9 0\n{idle_disk}"),
            "4242 (ganesha.nfsd) S 1 1 1 0 -1 0 0 0 0 0 130 45 0 0",
        );
        let got = s.sample().unwrap();
        let tick = s.ns_per_tick;
        assert_eq!(value(&got, StatId::CpuTime, &[(Dim::Cpu, "0"), (Dim::Mode, "user")]), Some(3 * tick));
        assert_eq!(value(&got, StatId::CpuTime, &[(Dim::Cpu, "0"), (Dim::Mode, "idle")]), Some(97 * tick));
        assert_eq!(value(&got, StatId::MemAvailable, &[]), Some(100 * 1024));
        assert_eq!(value(&got, StatId::NetRxBytes, &[(Dim::Nic, "eth0")]), Some(0));
        let loop3 = (Dim::Disk, "loop3");
        assert_eq!(value(&got, StatId::DiskOps, &[loop3, (Dim::Op, "read")]), Some(10));
        assert_eq!(value(&got, StatId::DiskOps, &[loop3, (Dim::Op, "write")]), Some(20));
        assert_eq!(value(&got, StatId::DiskBytes, &[loop3, (Dim::Op, "write")]), Some(160 * 512));
        assert_eq!(value(&got, StatId::DiskOps, &[loop3, (Dim::Op, "flush")]), Some(2));
        assert_eq!(value(&got, StatId::DiskBusy, &[loop3]), Some(500 * 1_000_000), "busy half of the second");
        assert_eq!(value(&got, StatId::DiskQueueTime, &[loop3]), Some(1000 * 1_000_000));
        assert!(value(&got, StatId::DiskOps, &[(Dim::Disk, "loop0"), (Dim::Op, "read")]).is_none(), "idle: left out");
        let ganesha = (Dim::Process, "ganesha.nfsd");
        assert_eq!(value(&got, StatId::ProcessCpu, &[ganesha, (Dim::Mode, "user")]), Some(30 * tick));
        assert_eq!(value(&got, StatId::ProcessCpu, &[ganesha, (Dim::Mode, "system")]), Some(5 * tick));
    }
}
