//! `ioscope show --system`: each host's system record (the configuration recorded with the
//! run: CPU, governor, memory, kernel and its command line, the target's file system,
//! mount options and device, the NFS target, the interfaces and the route to the target,
//! tool versions) as text, one block per host; `--json` prints the records as stored.

use crate::format;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The records as JSON: one object per host, as the results file holds them.
pub fn render_system_json(system: &BTreeMap<String, Value>) -> String {
    serde_json::to_string_pretty(system).expect("JSON values always serialize")
}

/// The records as text, one block per host.
pub fn render_system_text(system: &BTreeMap<String, Value>) -> String {
    let mut out = String::new();
    if system.is_empty() {
        out.push_str("no system record in this results file\n");
    }
    // The records are what each host (an agent: a peer) said: escaped for the terminal.
    for (host, c) in system {
        let _ = writeln!(out, "host {}", ioscope_store::printable(host));
        for (label, value) in lines(c) {
            let _ = writeln!(out, "  {label:<14} {}", ioscope_store::printable(&value));
        }
    }
    out
}

/// The machine a host's record was made on: its machine id and boot id, as the host
/// read them (`/etc/machine-id`, the kernel's boot id); None when either is missing.
pub(crate) fn machine_of(config: &Value) -> Option<(&str, &str)> {
    Some((config["machine_id"].as_str()?, config["boot_id"].as_str()?))
}

/// The records of the hosts that applied load: all but a host that was only probed
/// (`--probe HOST`: its record has the probe's and it ran no second of load).
pub(crate) fn load_host_records(s: &crate::Summary) -> impl Iterator<Item = (&String, &Value)> {
    s.system.iter().filter(|(h, c)| !c["probe"].is_object() || s.by_host.contains_key(*h))
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn or_unknown(v: &Value) -> String {
    text(v).unwrap_or_else(|| "unknown".into())
}

/// "100 Mbit/s" from bits per second.
fn rate_bits(v: u64) -> String {
    if v >= 1_000_000_000 {
        format!("{} Gbit/s", format::num(v as f64 / 1e9))
    } else {
        format!("{} Mbit/s", format::num(v as f64 / 1e6))
    }
}

/// The labelled lines of one host's record.
fn lines(c: &Value) -> Vec<(String, String)> {
    let mut l: Vec<(String, String)> = Vec::new();
    let mut add = |label: &str, value: String| l.push((label.to_string(), value));
    let cpus = c["cpus"].as_u64().map(|n| format!(" x{n}")).unwrap_or_default();
    add("cpu", format!("{}{cpus}, governor {}", or_unknown(&c["cpu_model"]), or_unknown(&c["cpu_governor"])));
    add("memory", c["memory_bytes"].as_u64().map_or("unknown".into(), format::bytes));
    add("kernel", format!("Linux {} ({})", or_unknown(&c["kernel"]), or_unknown(&c["kernel_version"])));
    add("command line", or_unknown(&c["kernel_cmdline"]));
    if let Some(os) = text(&c["os"]) {
        add("os", os);
    }
    if let Some(clock) = text(&c["clocksource"]) {
        let timer = text(&c["timer"]).map(|t| format!(", timer {t}")).unwrap_or_default();
        add("clock", format!("{clock}{timer}"));
    }
    let t = &c["target"];
    let dev = &t["device"];
    if let (Some(dir), true) = (text(&t["dir"]), dev.is_object()) {
        add("target", block_device_line(&dir, dev));
    } else if let Some(dir) = text(&t["dir"]) {
        let device = match (text(&t["block_device"]), text(&t["device_major_minor"])) {
            (Some(d), Some(mm)) => format!(", device {d} ({mm})"),
            (None, Some(mm)) => format!(", device {mm}"),
            _ => String::new(),
        };
        add(
            "target",
            format!(
                "{dir}: {} on {} from {} ({}){device}",
                or_unknown(&t["fs_type"]),
                or_unknown(&t["mount_point"]),
                or_unknown(&t["mount_source"]),
                or_unknown(&t["mount_options"])
            ),
        );
    }
    if let Some(engine) = text(&c["engine"]) {
        add("engine", engine);
    }
    let nfs = &c["nfs"];
    if nfs.is_object() {
        let size = |k: &str| nfs[k].as_u64().map_or("unknown".into(), format::bytes);
        add(
            "nfs",
            format!(
                "v{} server {} export {}, nconnect {}, rtmax {}, wtmax {}",
                or_unknown(&nfs["version"]),
                or_unknown(&nfs["server"]),
                or_unknown(&nfs["export"]),
                or_unknown(&nfs["nconnect"]),
                size("rtmax_bytes"),
                size("wtmax_bytes")
            ),
        );
    }
    let route = &c["route"];
    if route.is_object() {
        let via = text(&route["nic"]).map_or_else(|| "no known interface".into(), |n| format!("via {n}"));
        add("route", format!("to {} ({}) {via}", or_unknown(&route["to"]), or_unknown(&route["addr"])));
    }
    if let Some(nics) = c["nics"].as_object() {
        for (name, n) in nics {
            let speed = n["speed_mbit_per_sec"].as_u64().map_or("speed unknown".into(), |s| format!("{s} Mbit/s"));
            let speed = if n["virtual"] == true { format!("virtual, {speed}") } else { speed };
            let shaper = match (&n["qdisc"]["kind"], n["qdisc"]["rate_bits_per_sec"].as_u64()) {
                (Value::String(k), Some(r)) => format!(", shaped by {k} to {}", rate_bits(r)),
                _ => String::new(),
            };
            let capacity = n["capacity_bits_per_sec"]
                .as_u64()
                .map(|c| format!(", capacity {} ({})", rate_bits(c), or_unknown(&n["capacity_source"])))
                .unwrap_or_default();
            let offloads = n["offloads"]
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| match v {
                            Value::Bool(b) => format!("{k} {}", if *b { "on" } else { "off" }),
                            _ => format!("{k} unknown"),
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_else(|| "unknown".into());
            add(
                &format!("nic {name}"),
                format!(
                    "{speed}, MTU {}, {}{shaper}{capacity}; offloads: {offloads}",
                    or_unknown(&n["mtu_bytes"]),
                    or_unknown(&n["operstate"])
                ),
            );
        }
    }
    let counters = &c["nic_counters"];
    if let (Some(nic), Some(a), Some(b)) =
        (text(&counters["nic"]), counters["start"].as_object(), counters["end"].as_object())
    {
        let delta = |k: &str| b.get(k)?.as_u64()?.checked_sub(a.get(k)?.as_u64()?);
        let ns = delta("at_monotonic_ns").unwrap_or(0);
        add(
            "on the wire",
            format!(
                "{nic}: received {}, sent {} in {} s",
                delta("rx_bytes").map_or("unknown".into(), format::bytes),
                delta("tx_bytes").map_or("unknown".into(), format::bytes),
                format::num(ns as f64 / 1e9)
            ),
        );
    }
    let probe = &c["probe"];
    if probe.is_object() {
        add("probe", probe.to_string());
    }
    add("ioscope", or_unknown(&c["ioscope_version"]));
    l
}

/// "/dev/loop0: block device loop0, model M, 64 MiB, logical/physical block 512/4096 bytes,
/// scheduler none, queue nr_requests=128 ...": a block device target as its run recorded it.
fn block_device_line(dir: &str, dev: &Value) -> String {
    if let Some(e) = text(&dev["error"]) {
        return format!("{dir}: block device, not described ({e})");
    }
    let model = text(&dev["model"]).map(|m| format!(", model {m}")).unwrap_or_default();
    let size = dev["size_bytes"].as_u64().map_or("unknown".into(), format::bytes);
    let queue: Vec<String> = dev["queue"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|kv| Some(format!("{}={}", kv[0].as_str()?, kv[1].as_str()?)))
        .collect();
    format!(
        "{dir}: block device {}{model}, {size}, logical/physical block {}/{} bytes, scheduler {}, queue {}",
        or_unknown(&dev["name"]),
        or_unknown(&dev["logical_block_bytes"]),
        or_unknown(&dev["physical_block_bytes"]),
        or_unknown(&dev["scheduler"]),
        if queue.is_empty() { "unknown".to_string() } else { queue.join(" ") }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_system_text_names_every_recorded_part_per_host() {
        let mut system = BTreeMap::new();
        system.insert(
            "h2".to_string(),
            json!({
                "cpu_model": "Test CPU", "cpus": 2, "cpu_governor": "none", "memory_bytes": 2_147_483_648u64,
                "kernel": "6.18.0", "kernel_version": "#1 SMP", "kernel_cmdline": "console=ttyS0",
                "target": { "dir": "/srv", "fs_type": "ext4", "mount_point": "/", "mount_source": "/dev/vda1",
                            "mount_options": "rw", "block_device": "vda1", "device_major_minor": "254:1" },
                "nfs": { "version": 3, "server": "10.77.0.2", "export": "/export", "nconnect": 2,
                         "rtmax_bytes": 1_048_576, "wtmax_bytes": null },
                "route": { "to": "10.77.0.2", "addr": "10.77.0.2", "nic": "eth0" },
                "nics": { "eth0": { "speed_mbit_per_sec": 10000, "mtu_bytes": 1500, "operstate": "up",
                                    "qdisc": { "kind": "tbf", "rate_bits_per_sec": 100_000_000 },
                                    "capacity_bits_per_sec": 100_000_000, "capacity_source": "tc",
                                    "offloads": { "tso": true, "gro": "unknown" } } },
                "nic_counters": { "nic": "eth0",
                    "start": { "rx_bytes": 0, "tx_bytes": 0, "at_monotonic_ns": 0 },
                    "end": { "rx_bytes": 1_048_576, "tx_bytes": 2048, "at_monotonic_ns": 2_000_000_000u64 } },
                "ioscope_version": "0.1.0",
            }),
        );
        let t = render_system_text(&system);
        for want in [
            "host h2",
            "Test CPU x2, governor none",
            "memory         2 GiB",
            "command line   console=ttyS0",
            "device vda1 (254:1)",
            "nconnect 2, rtmax 1 MiB, wtmax unknown",
            "to 10.77.0.2 (10.77.0.2) via eth0",
            "10000 Mbit/s, MTU 1500, up, shaped by tbf to 100 Mbit/s, capacity 100 Mbit/s (tc); offloads: gro unknown, tso on",
            "eth0: received 1 MiB, sent 2 KiB in 2 s",
        ] {
            assert!(t.contains(want), "{want:?} missing from:\n{t}");
        }
        assert_eq!(render_system_text(&BTreeMap::new()), "no system record in this results file\n");
    }
}
