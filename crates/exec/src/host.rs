//! The host's configuration, recorded with every run: CPU, memory, kernel, OS, clock
//! source, the file system, mount options and block device of the target directory, and
//! the rest of the system record (`system.rs`: governor, command line, interfaces, route).

use serde_json::{json, Value};
use std::path::Path;

/// This host's name.
pub fn hostname() -> String {
    ioscope_store::hostname().unwrap_or_else(|| "localhost".into())
}

/// Total memory in bytes, from /proc/meminfo.
pub fn memory_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Describes this host and the target directory as JSON.
pub fn describe(target_dir: Option<&Path>) -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let os = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("PRETTY_NAME=")).map(|l| l[12..].trim_matches('"').to_string()));
    // SAFETY: sysconf with a valid name.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let target = target_dir.map(|d| {
        let canonical = d.canonicalize().unwrap_or_else(|_| d.to_path_buf());
        let mut t = json!({ "dir": canonical.display().to_string() });
        if crate::existing::is_existing_file(&canonical) {
            // The target is a file that is not ioscope's (crate::existing): its size as found.
            t["existing_file_bytes"] = json!(std::fs::metadata(&canonical).map_or(0, |m| m.len()));
        }
        if crate::blockdev::is_block_device(&canonical) {
            // The target is the device itself (not a file system on it): what the device is.
            t["device"] = match crate::blockdev::describe(&canonical) {
                Ok(dev) => serde_json::to_value(dev).unwrap_or(Value::Null),
                Err(e) => json!({ "error": e.to_string() }),
            };
        } else if let Some(m) = mount_of(&canonical) {
            t["fs_type"] = json!(m.fs_type);
            t["mount_point"] = json!(m.mount_point);
            t["mount_source"] = json!(m.source);
            t["mount_options"] = json!(m.options);
            t["block_device"] = json!(crate::system::block_device(&m.major_minor));
            t["device_major_minor"] = json!(m.major_minor);
        }
        t
    });
    let mut config = json!({
        "hostname": hostname(),
        "cpu_model": cpu_model,
        "cpus": cpus,
        "memory_bytes": memory_bytes(),
        "kernel": read_trim("/proc/sys/kernel/osrelease"),
        "kernel_version": read_trim("/proc/sys/kernel/version"),
        "os": os,
        "page_size_bytes": page_size,
        "clocksource": read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "ioscope_version": env!("CARGO_PKG_VERSION"),
        // Which machine this is, and since which boot: two hosts (agents, a probe) with
        // the same pair run on one machine, whatever their names or addresses.
        "machine_id": machine_identity("/etc/machine-id").or_else(|| machine_identity("/var/lib/dbus/machine-id")),
        "boot_id": machine_identity("/proc/sys/kernel/random/boot_id"),
        "target": target,
    });
    crate::system::add_to(&mut config, None);
    config
}

/// A machine or boot id: one short line of hex digits (and dashes), None otherwise.
fn machine_identity(path: &str) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path).ok()?.take(128).read_to_string(&mut text).ok()?;
    let id = text.trim();
    (!id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')).then(|| id.to_string())
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// Describes this host as a run of `plan` needs it recorded: [`describe`] of the target
/// directory, the system record, the route to a network target (the NFS server of an
/// `nfs://` target, or of an NFS mount holding the directory) and the NFS engine's target.
pub fn describe_run(plan: &ioscope_workload::Plan) -> Value {
    let dir = plan.dataset.as_ref().map_or(plan.dir.as_path(), |d| d.dir.as_path());
    let mut config = describe((!dir.as_os_str().is_empty()).then_some(dir));
    let server = match plan.target.as_ref().map(|t| &t.kind) {
        Some(ioscope_workload::TargetKind::Nfs(t)) => {
            config["nfs"] = crate::system::nfs_record(t, None);
            Some(t.host.clone())
        }
        Some(ioscope_workload::TargetKind::S3(t)) => {
            // What the target says (never the credentials: they are not part of it).
            config["s3"] = serde_json::json!({
                "bucket": t.bucket,
                "prefix": t.prefix,
                "endpoint": t.endpoint.as_ref().map(|e| format!("{}://{}:{}", if e.https { "https" } else { "http" }, e.host, e.port)),
                "region": t.region,
                "style": format!("{:?}", t.style).to_lowercase(),
                "part_size_bytes": t.part_size_bytes,
            });
            t.endpoint.as_ref().map(|e| e.host.clone())
        }
        Some(ioscope_workload::TargetKind::Smb(t)) => {
            // What the target says (never the password: it is not part of it).
            config["smb"] = serde_json::json!({
                "host": t.host,
                "port": t.port,
                "share": t.share,
                "dir": t.dir,
                "user": t.user,
                "encrypt": t.encrypt.name(),
                "sign": if t.sign { "required" } else { "auto" },
                "timeout_s": t.timeout.as_secs(),
            });
            Some(t.host.clone())
        }
        None => config["target"]
            .get("fs_type")
            .and_then(|f| crate::system::mount_server(f.as_str()?, config["target"]["mount_source"].as_str()?)),
    };
    if let Some(server) = server {
        config["route"] = crate::system::route_to(&server);
    }
    config
}

/// A mount as listed in /proc/self/mountinfo.
#[derive(Debug, PartialEq, Eq)]
pub struct Mount {
    /// The device numbers ("254:1") of the mounted file system.
    pub major_minor: String,
    pub mount_point: String,
    pub fs_type: String,
    pub source: String,
    pub options: String,
}

/// The mount that holds `path` (longest matching mount point).
pub fn mount_of(path: &Path) -> Option<Mount> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    best_mount(&info, path)
}

fn best_mount(mountinfo: &str, path: &Path) -> Option<Mount> {
    mountinfo
        .lines()
        .filter_map(|line| {
            // id parent major:minor root mount_point options [optional...] - fstype source super_options
            let (left, right) = line.split_once(" - ")?;
            let l: Vec<&str> = left.split(' ').collect();
            let r: Vec<&str> = right.split(' ').collect();
            let mount_point = unescape(l.get(4)?);
            // Per-mount options, then the file system's own, each once.
            let mut options: Vec<&str> = Vec::new();
            for o in l.get(5)?.split(',').chain(r.get(2).unwrap_or(&"").split(',')) {
                if !o.is_empty() && !options.contains(&o) {
                    options.push(o);
                }
            }
            let options = options.join(",");
            Some(Mount {
                major_minor: l.get(2)?.to_string(),
                mount_point,
                fs_type: r.first()?.to_string(),
                source: r.get(1).unwrap_or(&"").to_string(),
                options,
            })
        })
        .filter(|m| path.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.len())
}

/// mountinfo escapes space, tab, newline and backslash as octal.
fn unescape(s: &str) -> String {
    s.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_longest_mount_point() {
        let info = "22 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
                    30 22 0:25 / /tmp rw,nosuid - tmpfs tmpfs rw,size=100k\n\
                    31 22 0:26 / /tmpx rw - xfs /dev/vdb rw\n";
        let m = best_mount(info, Path::new("/tmp/a/b")).unwrap();
        assert_eq!(m.fs_type, "tmpfs");
        assert_eq!(m.options, "rw,nosuid,size=100k");
        assert_eq!(best_mount(info, Path::new("/var")).unwrap().fs_type, "ext4");
    }

    #[test]
    fn describes_this_host() {
        let d = describe(Some(Path::new("/")));
        assert!(d["memory_bytes"].as_u64().unwrap() > 0);
        assert!(d["cpus"].as_u64().unwrap() >= 1);
        assert!(d["target"]["fs_type"].is_string());
    }
}
