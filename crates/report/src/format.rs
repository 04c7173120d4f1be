//! Number formatting for people: adaptive time units, binary sizes, thousands separators,
//! and reading the free-form host configuration.

use ioscope_workload::plan::Plan;

/// A duration in ns with an adaptive unit: "850 ns", "1.9 µs", "123 µs", "1.2 ms", "3.0 s".
pub fn ns(v: u64) -> String {
    if v < 1000 {
        return format!("{v} ns");
    }
    const UNITS: [(f64, &str); 3] = [(1e3, "µs"), (1e6, "ms"), (1e9, "s")];
    for (i, (scale, unit)) in UNITS.iter().enumerate() {
        let x = v as f64 / scale;
        let s = if x < 99.95 { format!("{x:.1}") } else { format!("{x:.0}") };
        if i == UNITS.len() - 1 || s.parse::<f64>().unwrap_or(0.0) < 1000.0 {
            return format!("{s} {unit}");
        }
    }
    unreachable!("the last unit always returns")
}

/// Bytes in binary units: "512 B", "4 KiB", "1.5 MiB", "23.4 GiB".
pub fn bytes(v: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut x = v as f64;
    let mut i = 0;
    while x >= 1024.0 && i < UNITS.len() - 1 {
        x /= 1024.0;
        i += 1;
    }
    if x.fract() == 0.0 {
        format!("{x:.0} {}", UNITS[i])
    } else {
        format!("{x:.1} {}", UNITS[i])
    }
}

/// An integer with thousands separators: "512,345".
pub fn int(v: u64) -> String {
    group(&v.to_string())
}

/// Digits with thousands separators.
fn group(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    // A separator goes before every digit with a multiple of three digits after it.
    let first_group = digits.len() % 3;
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && i % 3 == first_group {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A non-negative number with thousands separators and `decimals` decimals: "2,098.6".
pub fn float(v: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, v.max(0.0));
    let (whole, frac) = s.split_once('.').unwrap_or((&s, ""));
    // Grouped as written: a rate past u64 (from a tiny interval) keeps its digits.
    let whole = if whole.bytes().all(|b| b.is_ascii_digit()) { group(whole) } else { whole.to_string() };
    if frac.is_empty() {
        whole
    } else {
        format!("{whole}.{frac}")
    }
}

/// A rate of operations: whole numbers from 100 up, one decimal below.
pub fn iops(v: f64) -> String {
    if v >= 99.95 {
        float(v, 0)
    } else {
        float(v, 1)
    }
}

/// A percentage with enough precision to be useful: "1.1%", "0.02%", "250%".
pub fn pct(fraction: f64) -> String {
    let p = fraction * 100.0;
    if p >= 10.0 {
        format!("{p:.0}%")
    } else if p >= 0.1 {
        format!("{p:.1}%")
    } else {
        format!("{p:.2}%")
    }
}

/// A compact number for prose: "10,000", "3.5".
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 || v >= 100.0 {
        float(v, 0)
    } else {
        float(v, 1)
    }
}

/// "Intel Xeon x2, 23.4 GiB RAM, Debian GNU/Linux 12 6.18, ext4 (rw,relatime) on /"
/// from the configuration written by `ioscope_exec::host::describe`.
pub fn system(config: &serde_json::Value) -> String {
    let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let mut parts = Vec::new();
    match (text(&config["cpu_model"]), config["cpus"].as_u64()) {
        (Some(m), Some(n)) => parts.push(format!("{m} x{n}")),
        (Some(m), None) => parts.push(m),
        (None, Some(n)) => parts.push(format!("{n} CPUs")),
        (None, None) => {}
    }
    if let Some(m) = config["memory_bytes"].as_u64() {
        parts.push(format!("{} RAM", bytes(m)));
    }
    parts.extend(text(&config["os"]));
    parts.extend(text(&config["kernel"]).map(|k| format!("Linux {k}")));
    let target = &config["target"];
    if let Some(fs) = text(&target["fs_type"]) {
        let opts = text(&target["mount_options"]).map(|o| format!(" ({o})")).unwrap_or_default();
        let at = text(&target["mount_point"]).map(|m| format!(" on {m}")).unwrap_or_default();
        parts.push(format!("{fs}{opts}{at}"));
    }
    parts.extend(text(&config["engine"]).map(|e| format!("engine {e}")));
    if parts.is_empty() {
        "no configuration recorded".to_string()
    } else {
        parts.join(", ")
    }
}

/// A block-size list: "4 KiB" or "4 KiB:60%/64 KiB:40%".
fn block_sizes(list: &[ioscope_workload::BlockSize]) -> String {
    let total_weight: u64 = list.iter().map(|b| b.weight as u64).sum();
    match list {
        [one] => bytes(one.bytes),
        many => many
            .iter()
            .map(|b| format!("{}:{}", bytes(b.bytes), pct(b.weight as f64 / total_weight.max(1) as f64)))
            .collect::<Vec<_>>()
            .join("/"),
    }
}

/// One workload: "randread bs 4 KiB threads 2", "fwd1: read sequential bs 8 KiB threads 48 skew 50%".
fn one_workload(p: &Plan, w: &ioscope_workload::Workload) -> String {
    let mut parts = Vec::new();
    if !w.flow.is_empty() {
        let steps: Vec<String> = w.flow.iter().map(|s| s.text()).collect();
        parts.push(format!("flow [{}]", steps.join(", ")));
    } else if p.dataset.is_none() && w.operation.transfers() {
        let rw = w.rw_name();
        if matches!(rw, "randrw" | "rw") {
            parts.push(format!("{rw} {}% reads", w.read_pct));
        } else {
            parts.push(rw.to_string());
        }
    } else {
        let mut op = w.operation.name().to_string();
        if w.operation.transfers() {
            let fileio = match w.fileio {
                ioscope_workload::FileIo::Sequential => "sequential",
                ioscope_workload::FileIo::Random => "random",
            };
            op = format!("{op} {fileio}");
            if w.read_pct != 100 && w.read_pct != 0 {
                op.push_str(&format!(" {}% reads", w.read_pct));
            }
        }
        parts.push(op);
    }
    if w.operation.transfers() && w.flow.is_empty() {
        parts.push(format!("bs {}", block_sizes(&w.block_sizes)));
    }
    match (&p.steps.staircase, p.steps.for_threads.as_slice()) {
        (Some(st), _) if st.of == ioscope_workload::StaircaseOf::Hosts => parts.push(format!(
            "threads {} on hosts {}-{} (+{} every {} s)",
            w.threads,
            st.start,
            st.max,
            st.add,
            num(st.every.as_secs_f64())
        )),
        (Some(st), _) => {
            parts.push(format!("threads {}-{} (+{} every {} s)", st.start, st.max, st.add, num(st.every.as_secs_f64())))
        }
        (None, []) => parts.push(format!("threads {}", w.threads)),
        (None, list) => {
            parts.push(format!("threads {}", list.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(",")))
        }
    }
    if let Some(sk) = w.skew_pct {
        parts.push(format!("skew {}%", num(sk)));
    }
    if let Some(pat) = &w.pattern {
        parts.push(format!("pattern \"{}\"", pat.text));
    }
    parts.extend(w.access.describe());
    parts.extend(w.content.describe());
    parts.join(" ")
}

/// "randread  bs 4 KiB  size 256 MiB x 1 file  threads 2  qd 1  posix buffered"
pub fn workload(p: &Plan) -> String {
    let mut parts = Vec::new();
    match p.workloads.as_slice() {
        [one] => parts.push(one_workload(p, one)),
        many => parts.extend(many.iter().map(|w| format!("{}: {}", w.name, one_workload(p, w)))),
    }
    match &p.dataset {
        Some(d) => {
            let shape = |d: &ioscope_workload::Dataset| {
                let sizes = match d.size_gamma {
                    Some(g) => format!("gamma mean {} shape {}", bytes(g.mean_bytes), num(g.shape)),
                    None => block_sizes(&d.sizes),
                };
                let prealloc = d.prealloc_pct.map(|p| format!(" prealloc {p}%")).unwrap_or_default();
                format!("depth {} width {} files {}/dir sizes {sizes}{prealloc}", d.depth, d.width, d.files)
            };
            let name = d.name.as_ref().map(|n| format!(" ({n})")).unwrap_or_default();
            parts.push(format!("dataset {}{name} {}", d.dir.display(), shape(d)));
            // A flow's file sets, each a directory of the anchor.
            for f in &p.filesets {
                parts.push(format!("fileset {} {}", f.name.as_deref().unwrap_or("?"), shape(f)));
            }
        }
        None => parts.push(format!(
            "size {} x {} file{}",
            bytes(p.size_bytes),
            p.files,
            if p.files == 1 { "" } else { "s" }
        )),
    }
    // Workloads at depths of their own: each one's, in workload order ("qd 1/16").
    let depths: Vec<String> = p.workloads.iter().map(|w| p.iodepth_of(w).to_string()).collect();
    let own = p.workloads.iter().any(|w| p.iodepth_of(w) != p.max_iodepth());
    let stepped = p.steps.for_iodepth.iter().map(|d| d.to_string()).collect::<Vec<_>>();
    parts.push(match (stepped.is_empty(), own) {
        // A step per depth: the depths in step order ("qd 1,8,32 by step").
        (false, _) => format!("qd {} by step", stepped.join(",")),
        (true, true) => format!("qd {}", depths.join("/")),
        (true, false) => format!("qd {}", p.max_iodepth()),
    });
    let sqpoll = if p.sqpoll { " sqpoll" } else { "" };
    let mixed_direct = p.any_direct() && p.workloads.iter().any(|w| !p.direct_of(w));
    let cache = match (p.engine.spec().cache, p.any_direct()) {
        (Some(fixed), _) => fixed,
        (None, true) if mixed_direct => "direct+buffered",
        (None, true) => "direct",
        (None, false) => "buffered",
    };
    let mut io = format!("{}{sqpoll} {cache}", p.engine.name());
    let sync = match p.sync {
        ioscope_workload::plan::SyncMode::None => None,
        ioscope_workload::plan::SyncMode::Fsync => Some("fsync"),
        ioscope_workload::plan::SyncMode::Fdatasync => Some("fdatasync"),
        ioscope_workload::plan::SyncMode::Dsync => Some("dsync"),
    };
    if let (Some(s), true) = (sync, p.writes()) {
        io.push_str(&format!(" {s}"));
    }
    parts.push(io);
    if let Some(r) = p.rate_iops {
        parts.push(format!("rate {} IOPS", int(r)));
    }
    if !p.warmup.is_zero() {
        parts.push(format!("warm-up {} s per step", num(p.warmup.as_secs_f64())));
    }
    parts.join("  ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_units_adapt() {
        assert_eq!(ns(0), "0 ns");
        assert_eq!(ns(999), "999 ns");
        assert_eq!(ns(1000), "1.0 µs");
        assert_eq!(ns(1_949), "1.9 µs");
        assert_eq!(ns(99_940), "99.9 µs");
        assert_eq!(ns(99_960), "100 µs");
        assert_eq!(ns(999_400), "999 µs");
        assert_eq!(ns(999_600), "1.0 ms");
        assert_eq!(ns(1_234_567), "1.2 ms");
        assert_eq!(ns(3_000_000_000), "3.0 s");
        assert_eq!(ns(5_000_000_000_000), "5000 s");
    }

    #[test]
    fn sizes_and_separators() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(256 << 20), "256 MiB");
        assert_eq!(bytes(25_125_558_272), "23.4 GiB");
        assert_eq!(int(0), "0");
        assert_eq!(int(512_345), "512,345");
        assert_eq!(int(1_000_000), "1,000,000");
        assert_eq!(float(2098.64, 1), "2,098.6");
        assert_eq!(float(999.96, 1), "1,000.0");
        assert_eq!(float(1e20, 0), "100,000,000,000,000,000,000");
        assert_eq!(float(f64::INFINITY, 0), "inf");
        assert_eq!(iops(3.44), "3.4");
        assert_eq!(iops(512_345.4), "512,345");
        assert_eq!(pct(0.0109), "1.1%");
        assert_eq!(pct(0.0002), "0.02%");
    }

    #[test]
    fn system_line_reads_the_host_description() {
        let host = serde_json::json!({"cpu_model": "Test CPU", "cpus": 2, "memory_bytes": 25_125_558_272u64,
            "os": "Debian 12", "kernel": "6.18.0",
            "target": {"fs_type": "ext4", "mount_options": "rw,relatime", "mount_point": "/tmp/x"}});
        assert_eq!(system(&host), "Test CPU x2, 23.4 GiB RAM, Debian 12, Linux 6.18.0, ext4 (rw,relatime) on /tmp/x");
        assert_eq!(system(&serde_json::json!({"kernel": "6.1"})), "Linux 6.1");
        assert_eq!(system(&serde_json::json!({})), "no configuration recorded");
    }
}
