//! Readers of the kernel's own counters (procfs): CPU time per CPU and mode, memory,
//! network interfaces and block devices. Each parser takes the file's text and returns
//! cumulative counters; a sampler turns two readings into per-second deltas. Text that
//! does not parse is skipped line by line, never a panic (the files differ between kernels).

use std::collections::BTreeMap;

/// The CPU modes of /proc/stat, in the file's order.
pub const CPU_MODES: [&str; 10] =
    ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice"];

/// Cumulative CPU time per CPU ("cpu0", ...) and mode, in clock ticks (USER_HZ).
pub fn cpu_ticks(stat: &str) -> BTreeMap<String, [u64; 10]> {
    let mut out = BTreeMap::new();
    for line in stat.lines() {
        let mut words = line.split_whitespace();
        let Some(name) = words.next().filter(|n| n.starts_with("cpu") && n.len() > 3) else { continue };
        let mut ticks = [0u64; 10];
        for (t, w) in ticks.iter_mut().zip(words) {
            *t = w.parse().unwrap_or(0);
        }
        out.insert(name.to_string(), ticks);
    }
    out
}

/// /proc/meminfo in bytes, by field ("MemAvailable", "Cached", "Dirty", ...).
pub fn meminfo_bytes(meminfo: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in meminfo.lines() {
        let Some((name, rest)) = line.split_once(':') else { continue };
        let mut words = rest.split_whitespace();
        let Some(Ok(n)) = words.next().map(str::parse::<u64>) else { continue };
        let scale = if words.next() == Some("kB") { 1024 } else { 1 };
        out.insert(name.trim().to_string(), n.saturating_mul(scale));
    }
    out
}

/// Cumulative counters of one network interface (/proc/net/dev).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NicCounters {
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub rx_drops: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_drops: u64,
}

pub fn net_dev(text: &str) -> BTreeMap<String, NicCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else { continue };
        let v: Vec<u64> = rest.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        if v.len() < 16 {
            continue;
        }
        let c = NicCounters {
            rx_bytes: v[0],
            rx_packets: v[1],
            rx_drops: v[3],
            tx_bytes: v[8],
            tx_packets: v[9],
            tx_drops: v[11],
        };
        out.insert(name.trim().to_string(), c);
    }
    out
}

/// Cumulative counters of one block device (/proc/diskstats; sectors are 512 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
    /// I/Os in flight now (not cumulative).
    pub in_flight: u64,
    /// Time with at least one I/O in flight, ms (utilization = its rate / 1000).
    pub busy_ms: u64,
    /// Weighted time in queue, ms (average queue depth = its rate / 1000).
    pub weighted_ms: u64,
    /// Discards and flushes (0 on kernels before 4.18 and 5.5, which do not count them).
    pub discards: u64,
    pub discard_bytes: u64,
    pub flushes: u64,
}

pub fn diskstats(text: &str) -> BTreeMap<String, DiskCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.len() < 14 {
            continue;
        }
        let n = |i: usize| w.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        let c = DiskCounters {
            reads: n(3),
            read_bytes: n(5).saturating_mul(512),
            writes: n(7),
            write_bytes: n(9).saturating_mul(512),
            in_flight: n(11),
            busy_ms: n(12),
            weighted_ms: n(13),
            discards: n(14),
            discard_bytes: n(16).saturating_mul(512),
            flushes: n(18),
        };
        out.insert(w[2].to_string(), c);
    }
    out
}

/// A process's name (comm) and cumulative CPU time (user, system) in clock ticks, from
/// /proc/PID/stat (the name may hold spaces and parentheses: it ends at the last ')').
pub fn process_stat(text: &str) -> Option<(String, u64, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // After the name: state is field 3, utime field 14 and stime field 15 (1-based).
    let utime = rest.get(11)?.parse().ok()?;
    let stime = rest.get(12)?.parse().ok()?;
    Some((name, utime, stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_times_are_read_per_cpu_and_mode_and_the_total_line_is_left_out() {
        let stat = "cpu  10 0 5 100 1 0 0 0 0 0\ncpu0 4 0 2 50 1 0 0 0 0 0\ncpu1 6 0 3 50 0 0 0 0 0 0\nintr 5\n";
        let t = cpu_ticks(stat);
        assert_eq!(t.len(), 2);
        assert_eq!(t["cpu1"][0], 6);
        assert_eq!(t["cpu0"][3], 50);
    }

    #[test]
    fn meminfo_is_in_bytes() {
        let m = meminfo_bytes("MemTotal:       24576 kB\nDirty:             8 kB\nHugePages_Total:       0\n");
        assert_eq!((m["MemTotal"], m["Dirty"], m["HugePages_Total"]), (24576 * 1024, 8192, 0));
    }

    #[test]
    fn network_and_disk_counters_come_from_their_columns() {
        let dev = "Inter-|   Receive\n face |bytes\n  eth0: 1000 10 0 2 0 0 0 0 2000 20 0 3 0 0 0 0\n";
        let n = net_dev(dev);
        assert_eq!(
            n["eth0"],
            NicCounters { rx_bytes: 1000, rx_packets: 10, rx_drops: 2, tx_bytes: 2000, tx_packets: 20, tx_drops: 3 }
        );
        let disk = " 7 0 loop0 100 0 800 50 200 0 1600 70 2 300 400 3 0 24 0 5 0\n";
        let d = diskstats(disk);
        assert_eq!(
            d["loop0"],
            DiskCounters {
                reads: 100,
                read_bytes: 409_600,
                writes: 200,
                write_bytes: 819_200,
                in_flight: 2,
                busy_ms: 300,
                weighted_ms: 400,
                discards: 3,
                discard_bytes: 24 * 512,
                flushes: 5,
            }
        );
    }

    #[test]
    fn a_process_name_with_spaces_and_parentheses_is_read_whole() {
        let s = "42 (ganesha (main) x) S 1 42 42 0 -1 4194560 100 0 0 0 250 125 0 0 20 0 8 0";
        assert_eq!(process_stat(s), Some(("ganesha (main) x".to_string(), 250, 125)));
        assert_eq!(process_stat("garbage"), None);
    }
}
