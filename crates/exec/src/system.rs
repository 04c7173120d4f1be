//! The rest of the system record the seeds ask every result to carry (docs/methodology.md,
//! "System record"): the CPU frequency governor, the kernel's command line, the network
//! interfaces (speed, MTU, offloads, a tc shaper's rate), the route to a network target,
//! the block device under the target directory, and the byte counters of the interface on
//! the route to the target, read after the run's first second and at its end, so that a
//! verdict can compare the bytes on the wire with the link's capacity.
//!
//! Everything is read without root tools: sysfs, procfs, one ioctl, and `ip`/`tc` when
//! they are installed. What cannot be read is recorded as unknown (null or "unknown"),
//! never guessed.

use serde_json::{json, Map, Value};
use std::net::ToSocketAddrs;
use std::process::Command;

/// The frequency governor of CPU 0 ("none" when the kernel has no cpufreq driver, as in
/// most virtual machines).
pub fn cpu_governor() -> String {
    std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "none".to_string())
}

/// The kernel's command line (/proc/cmdline).
pub fn kernel_cmdline() -> Option<String> {
    std::fs::read_to_string("/proc/cmdline").ok().map(|s| s.trim().to_string())
}

/// The block device of a mount's `major:minor` ("vda1"), from /sys/dev/block.
pub fn block_device(major_minor: &str) -> Option<String> {
    let link = std::fs::read_link(format!("/sys/dev/block/{major_minor}")).ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// Every network interface but loopback: speed, MTU, state, offloads and shaper.
pub fn nics() -> Value {
    let mut out = Map::new();
    let Ok(dir) = std::fs::read_dir("/sys/class/net") else { return Value::Object(out) };
    let mut names: Vec<String> =
        dir.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    // One `tc` for every interface (a host may have hundreds of veths).
    let qdiscs: Option<Value> = Command::new("tc")
        .args(["-j", "qdisc", "show"])
        .output()
        .ok()
        .and_then(|o| serde_json::from_slice(&o.stdout).ok());
    for name in names.into_iter().filter(|n| n != "lo") {
        out.insert(name.clone(), nic(&name, qdiscs.as_ref()));
    }
    Value::Object(out)
}

/// One interface, as [`nics`] records it; `qdiscs`: `tc -j qdisc show` of every interface.
fn nic(name: &str, qdiscs: Option<&Value>) -> Value {
    let sys =
        |f: &str| std::fs::read_to_string(format!("/sys/class/net/{name}/{f}")).ok().map(|s| s.trim().to_string());
    // sysfs says -1 (or refuses to read) when the driver does not know its speed (veth
    // before it is up, virtio, bridges): unknown, never a number.
    let speed = sys("speed").and_then(|s| s.parse::<i64>().ok()).filter(|s| *s > 0);
    // A virtual interface (veth, bridge, tun: no device behind it) reports a placeholder
    // speed (veth says 10 Gbit/s and moves more): recorded, but no capacity.
    let virtual_nic = !std::path::Path::new(&format!("/sys/class/net/{name}/device")).exists();
    let qdisc = qdiscs.and_then(|q| shaper(name, q));
    let mut capacity = speed.filter(|_| !virtual_nic).map(|mbit| ((mbit as u64).saturating_mul(1_000_000), "sysfs"));
    if let Some(rate) = qdisc.as_ref().and_then(|q| q["rate_bits_per_sec"].as_u64()) {
        if capacity.is_none_or(|(c, _)| rate < c) {
            capacity = Some((rate, "tc"));
        }
    }
    json!({
        "speed_mbit_per_sec": speed,
        "mtu_bytes": sys("mtu").and_then(|s| s.parse::<u64>().ok()),
        "operstate": sys("operstate"),
        "virtual": virtual_nic,
        "offloads": offloads(name),
        "qdisc": qdisc,
        "capacity_bits_per_sec": capacity.map(|c| c.0),
        "capacity_source": capacity.map(|c| c.1),
    })
}

/// The rate of a tc shaper at the interface's root (tbf, or htb's fastest class ceiling),
/// from `tc` (null when tc is missing or no shaper is set).
fn shaper(name: &str, qdiscs: &Value) -> Option<Value> {
    let root = qdiscs.as_array()?.iter().find(|q| q["root"] == json!(true) && q["dev"] == name)?;
    let kind = root["kind"].as_str()?.to_string();
    let rate = match kind.as_str() {
        // tc prints tbf's rate in bytes per second.
        "tbf" => root["options"]["rate"].as_u64().map(|b| b.saturating_mul(8)),
        "htb" => {
            let out = Command::new("tc").args(["class", "show", "dev", name]).output().ok()?;
            htb_ceiling_bits(&String::from_utf8_lossy(&out.stdout))
        }
        _ => return Some(json!({ "kind": kind, "rate_bits_per_sec": null })),
    };
    Some(json!({ "kind": kind, "rate_bits_per_sec": rate }))
}

/// The highest `ceil` of `tc class show` text (htb classes print no JSON on older tc).
fn htb_ceiling_bits(text: &str) -> Option<u64> {
    text.lines()
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let i = words.iter().position(|w| *w == "ceil")?;
            tc_rate_bits(words.get(i + 1)?)
        })
        .max()
}

/// A tc rate as printed ("50Mbit", "1Gbit", "800Kbit", "12bit") in bits per second.
fn tc_rate_bits(s: &str) -> Option<u64> {
    let digits = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let n: f64 = s[..digits].parse().ok()?;
    let scale = match &s[digits..] {
        "bit" | "" => 1.0,
        "Kbit" => 1e3,
        "Mbit" => 1e6,
        "Gbit" => 1e9,
        "Tbit" => 1e12,
        _ => return None,
    };
    Some((n * scale) as u64)
}

/// Offloads the driver reports through the legacy ethtool ioctls (no root, no ethtool
/// binary needed); "unknown" for each one the driver does not answer.
fn offloads(name: &str) -> Value {
    const ETHTOOL_GRXCSUM: u32 = 0x14;
    const ETHTOOL_GTXCSUM: u32 = 0x16;
    const ETHTOOL_GSG: u32 = 0x18;
    const ETHTOOL_GTSO: u32 = 0x1e;
    const ETHTOOL_GGSO: u32 = 0x23;
    const ETHTOOL_GGRO: u32 = 0x2b;
    let asks = [
        ("rx_checksum", ETHTOOL_GRXCSUM),
        ("tx_checksum", ETHTOOL_GTXCSUM),
        ("scatter_gather", ETHTOOL_GSG),
        ("tso", ETHTOOL_GTSO),
        ("gso", ETHTOOL_GGSO),
        ("gro", ETHTOOL_GGRO),
    ];
    let mut out = Map::new();
    for (key, cmd) in asks {
        out.insert(key.into(), ethtool_value(name, cmd).map_or(json!("unknown"), |v| json!(v != 0)));
    }
    Value::Object(out)
}

fn ethtool_value(name: &str, cmd: u32) -> Option<u32> {
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    #[repr(C)]
    struct IfReq {
        name: [u8; libc::IFNAMSIZ],
        data: *mut libc::c_void,
        _pad: [u8; 16],
    }
    if name.len() >= libc::IFNAMSIZ {
        return None;
    }
    let mut value = EthtoolValue { cmd, data: 0 };
    let mut req = IfReq { name: [0; libc::IFNAMSIZ], data: (&mut value as *mut EthtoolValue).cast(), _pad: [0; 16] };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: a plain datagram socket, closed below; the ioctl reads the name and writes
    // one EthtoolValue through `data`, both alive for the call.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        let r = libc::ioctl(fd, libc::SIOCETHTOOL as _, &mut req as *mut IfReq);
        libc::close(fd);
        (r == 0).then_some(value.data)
    }
}

/// The route to a network target: the interface that carries its traffic, from
/// `ip route get` (null when the name does not resolve or ip is missing).
pub fn route_to(host: &str) -> Value {
    let addr = match (host, 0).to_socket_addrs().ok().and_then(|mut a| a.next()) {
        Some(a) => a.ip().to_string(),
        None => return json!({ "to": host, "nic": null, "detail": "the name does not resolve" }),
    };
    let out = Command::new("ip").args(["-j", "route", "get", &addr]).output();
    let routes: Option<Value> = out.ok().and_then(|o| serde_json::from_slice(&o.stdout).ok());
    let first = routes.as_ref().and_then(|r| r.as_array()?.first().cloned()).unwrap_or(Value::Null);
    json!({
        "to": host,
        "addr": addr,
        "nic": first["dev"],
        "gateway": first["gateway"],
        "source_addr": first["prefsrc"],
    })
}

/// The machine's CPU time and this process's (all its threads), in clock ticks.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuTicks {
    /// Every CPU's time but idle and iowait (`/proc/stat`).
    pub busy: u64,
    pub total: u64,
    /// This process's user and system time (`/proc/self/stat`).
    pub ioscope: u64,
}

/// The CPU counters now; None where /proc cannot be read.
pub fn cpu_ticks() -> Option<CpuTicks> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    // user nice system idle iowait irq softirq steal (guest time is within user).
    let v: Vec<u64> = line.split_whitespace().skip(1).take(8).filter_map(|x| x.parse().ok()).collect();
    let [user, nice, system, idle, iowait, irq, softirq, steal] = v[..] else { return None };
    let own = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command (which may hold spaces), from its closing parenthesis:
    // state is field 3, utime 14 and stime 15.
    let after = own.get(own.rfind(')')? + 1..)?;
    let f: Vec<&str> = after.split_whitespace().collect();
    let ioscope = f.get(11)?.parse::<u64>().ok()?.saturating_add(f.get(12)?.parse::<u64>().ok()?);
    let busy = [user, nice, system, irq, softirq, steal].iter().fold(0u64, |a, b| a.saturating_add(*b));
    Some(CpuTicks { busy, total: busy.saturating_add(idle).saturating_add(iowait), ioscope })
}

/// How busy the machine's CPUs were between two readings, in percent of all of them:
/// `cpu_busy_pct` (everything), `ioscope_cpu_pct` (this process: the run's workers and
/// engines) and `other_cpu_pct` (everything else: other programs, a server on the same
/// machine, the kernel's work for them). Compare uses it to say when two runs had
/// different company (docs/compare.md).
pub fn machine_load(a: &CpuTicks, b: &CpuTicks) -> Value {
    let total = b.total.saturating_sub(a.total);
    if total == 0 {
        return Value::Null;
    }
    let busy = b.busy.saturating_sub(a.busy).min(total);
    let own = b.ioscope.saturating_sub(a.ioscope).min(busy);
    let pct = |x: u64| (x as f64 * 1000.0 / total as f64).round() / 10.0;
    json!({
        "cpu_busy_pct": pct(busy),
        "ioscope_cpu_pct": pct(own),
        "other_cpu_pct": pct(busy - own),
    })
}

/// The server of a network file system's mount source ("server:/export", "//server/share").
pub fn mount_server(fs_type: &str, source: &str) -> Option<String> {
    match fs_type {
        "nfs" | "nfs4" => {
            let (host, _) = source.rsplit_once(":/")?;
            Some(host.trim_start_matches('[').trim_end_matches(']').to_string())
        }
        "cifs" | "smb3" => source.strip_prefix("//")?.split('/').next().map(str::to_string),
        _ => None,
    }
}

/// An interface's byte counters now, with the CLOCK_MONOTONIC time they were read at.
pub fn nic_counters(name: &str) -> Value {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/sys/class/net/{name}/statistics/{f}")).ok()?.trim().parse::<u64>().ok()
    };
    json!({
        "rx_bytes": read("rx_bytes"),
        "tx_bytes": read("tx_bytes"),
        "at_monotonic_ns": crate::clock::monotonic_ns(),
    })
}

/// The interface the route in `config` names, if any.
pub fn route_nic(config: &Value) -> Option<String> {
    config.get("route")?.get("nic")?.as_str().map(str::to_string)
}

/// The NFS engine's target and what it negotiated: the plan's URL settings, and the
/// server's largest read and write (rtmax, wtmax) from the engine's own description.
pub fn nfs_record(target: &ioscope_engine_nfs::target::Target, engine: Option<&str>) -> Value {
    let figure = |key: &str| nfs_figure(engine?, key);
    let v41 = target.version == ioscope_engine_nfs::target::Version::V41;
    json!({
        // A number, as before there was a choice: 3 or 4.1.
        "version": if v41 { json!(4.1) } else { json!(3) },
        "server": target.host,
        "port": target.port,
        "export": target.path,
        "nconnect": target.nconnect,
        "timeout_ms": target.timeout.as_millis() as u64,
        "rtmax_bytes": figure("rtmax"),
        "wtmax_bytes": figure("wtmax"),
        "client": if v41 { "ioscope's user-space NFSv4.1 client" } else { "ioscope's user-space NFSv3 client" },
    })
}

/// At the start of the measured run: the engine's setup (and what an NFS engine
/// negotiated), and the byte counters of the interface that carries the target's traffic.
pub fn run_started(config: &mut Value, engine_setup: Option<&str>) {
    if let Some(setup) = engine_setup {
        add_engine_setup(config, setup);
    }
    if let Some(nic) = route_nic(config) {
        config["nic_counters"] = json!({ "nic": nic });
    }
    config["machine_load"] = json!({ "start": cpu_ticks() });
}

/// After each second is written: the route interface's counters once, after the first
/// second. The run's time zero may lie ahead when `started` is called (an agent's start is
/// planned in the future), and the first second holds the ramp up: counting from its end
/// measures the link while the load runs.
pub fn second_done(nic_counters: &mut Value) {
    if let (Some(nic), Value::Null) = (nic_counters["nic"].as_str(), &nic_counters["start"]) {
        let start = self::nic_counters(nic);
        nic_counters["start"] = start;
    }
}

/// The engine's setup as it opened, and what an NFS engine negotiated (its `nfs` record's
/// rtmax and wtmax).
pub fn add_engine_setup(config: &mut Value, setup: &str) {
    config["engine"] = json!(setup);
    if config["nfs"].is_object() {
        for key in ["rtmax_bytes", "wtmax_bytes"] {
            config["nfs"][key] = nfs_figure(setup, key.trim_end_matches("_bytes")).into();
        }
    }
}

/// At the end of the measured run: the same counters again, and how busy the machine's
/// CPUs were meanwhile ([`machine_load`]).
pub fn run_ended(config: &mut Value) {
    let start = serde_json::from_value::<CpuTicks>(config["machine_load"]["start"].take()).ok();
    config["machine_load"] = match (start, cpu_ticks()) {
        (Some(a), Some(b)) => machine_load(&a, &b),
        _ => Value::Null,
    };
    if let Some(nic) = config["nic_counters"]["nic"].as_str().map(str::to_string) {
        if config["nic_counters"]["start"].is_object() {
            config["nic_counters"]["end"] = nic_counters(&nic);
        }
    }
}

/// A number the NFS engine's description gives after `key` ("rtmax 1048576").
fn nfs_figure(engine: &str, key: &str) -> Option<u64> {
    let rest = &engine[engine.find(&format!("{key} "))? + key.len() + 1..];
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse::<u64>().ok()
}

/// Adds the system record to a host's configuration made by `host::describe`.
pub fn add_to(config: &mut Value, target_host: Option<&str>) {
    config["cpu_governor"] = json!(cpu_governor());
    config["kernel_cmdline"] = json!(kernel_cmdline());
    config["nics"] = nics();
    config["route"] = target_host.map_or(Value::Null, route_to);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tc_rates_are_read_in_bits_per_second() {
        assert_eq!(tc_rate_bits("100Mbit"), Some(100_000_000));
        assert_eq!(tc_rate_bits("1Gbit"), Some(1_000_000_000));
        assert_eq!(tc_rate_bits("800Kbit"), Some(800_000));
        assert_eq!(tc_rate_bits("12bit"), Some(12));
        assert_eq!(tc_rate_bits("fast"), None);
        let classes = "class htb 1:10 root prio 0 rate 50Mbit ceil 50Mbit burst 1600b cburst 1600b\n\
                       class htb 1:20 root prio 0 rate 10Mbit ceil 200Mbit burst 1600b cburst 1600b\n";
        assert_eq!(htb_ceiling_bits(classes), Some(200_000_000));
    }

    #[test]
    fn a_root_shaper_sets_the_capacity_below_the_speed() {
        let qdiscs: Value = serde_json::from_str(
            r#"[{"kind":"noqueue","dev":"lo","root":true,"options":{}},
                {"kind":"tbf","handle":"8079:","dev":"eth0","root":true,"options":{"rate":12500000,"burst":262137}},
                {"kind":"pfifo_fast","dev":"eth1","root":true,"options":{}}]"#,
        )
        .unwrap();
        assert_eq!(shaper("eth0", &qdiscs).unwrap(), json!({ "kind": "tbf", "rate_bits_per_sec": 100_000_000 }));
        assert_eq!(shaper("eth1", &qdiscs).unwrap(), json!({ "kind": "pfifo_fast", "rate_bits_per_sec": null }));
        assert!(shaper("eth9", &qdiscs).is_none());
    }

    #[test]
    fn network_mount_sources_name_their_server() {
        assert_eq!(mount_server("nfs", "10.0.0.5:/export/a").as_deref(), Some("10.0.0.5"));
        assert_eq!(mount_server("nfs4", "[fd00::1]:/x").as_deref(), Some("fd00::1"));
        assert_eq!(mount_server("cifs", "//filer/share").as_deref(), Some("filer"));
        assert_eq!(mount_server("ext4", "/dev/vda1"), None);
    }

    #[test]
    fn the_system_record_names_each_interface_with_units() {
        let mut config = json!({});
        add_to(&mut config, Some("127.0.0.1"));
        assert!(config["cpu_governor"].as_str().is_some_and(|g| !g.is_empty()));
        assert!(config["kernel_cmdline"].is_string() || !std::path::Path::new("/proc/cmdline").exists());
        for (name, nic) in config["nics"].as_object().unwrap() {
            assert_ne!(name, "lo");
            assert!(nic["mtu_bytes"].as_u64().is_some_and(|m| m >= 68), "{name}: {nic}");
            let speed = &nic["speed_mbit_per_sec"];
            assert!(speed.is_null() || speed.as_u64().is_some_and(|s| s > 0), "{name}: {nic}");
            assert_eq!(nic["offloads"].as_object().unwrap().len(), 6, "{name}: {nic}");
        }
        // Loopback traffic: ip names lo (when ip is installed).
        let route = &config["route"];
        assert_eq!(route["addr"], "127.0.0.1");
        assert!(route["nic"].is_null() || route["nic"] == "lo", "{route}");
    }

    #[test]
    fn the_nfs_record_reads_what_the_engine_negotiated() {
        let t = ioscope_engine_nfs::target::Target::parse("nfs://server:2049/export?nconnect=4").unwrap();
        let engine = "nfs v3 10.0.0.2:2049 export /export (4 connection(s), rtmax 1048576, wtmax 65536, writes UNSTABLE + COMMIT)";
        let r = nfs_record(&t, Some(engine));
        assert_eq!(r["rtmax_bytes"], 1_048_576);
        assert_eq!(r["wtmax_bytes"], 65_536);
        assert_eq!(r["nconnect"], 4);
        assert_eq!(r["server"], "server");
        assert!(nfs_record(&t, None)["rtmax_bytes"].is_null());
        assert_eq!(r["version"], 3);
    }

    #[test]
    fn the_nfs_record_names_the_nfs_version() {
        let t = ioscope_engine_nfs::target::Target::parse("nfs://server/export?version=4.1").unwrap();
        let engine = "nfs v4.1 10.0.0.2:2049 path /export (1 connection(s), 34 session slots, lease 60s, \
                      rtmax 1048576, wtmax 1048576, writes UNSTABLE4 + COMMIT)";
        let r = nfs_record(&t, Some(engine));
        assert_eq!(r["version"], 4.1);
        assert_eq!(r["client"], "ioscope's user-space NFSv4.1 client");
        assert_eq!((r["rtmax_bytes"].as_u64(), r["wtmax_bytes"].as_u64()), (Some(1 << 20), Some(1 << 20)));
    }
}
