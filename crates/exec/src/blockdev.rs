//! A block device as the target of engines posix and uring (`--dir /dev/X`): the run
//! reads and writes the device itself, from offset 0 to the plan's size. Nothing is
//! prepared or written on it besides the run's own I/O (no marker, no lock file), so it is
//! refused without `--force`: a run that writes destroys the data on the device. Its size
//! comes from the device (BLKGETSIZE64), O_DIRECT's alignment from its logical block size
//! (BLKSSZGET), and what it is (model, queue settings, scheduler) from /sys/block.

use ioscope_workload::{format_size, PatternMap, Plan};
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

/// Why a block device target is refused. Found before any I/O: invalid input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum BlockdevError {
    #[error("{path}: a block device; ioscope reads and writes the device itself, and a run that writes destroys the data on it. Pass --force to use it anyway")]
    NotForced { path: PathBuf },
    #[error("{path}: the plan's size is {plan}, the device holds {device}; give a --size of at most {device} (a smaller size uses the device's first bytes)", plan = format_size(*plan), device = format_size(*device))]
    TooLarge { path: PathBuf, plan: u64, device: u64 },
    #[error("{path}: the device holds {device}, less than one {bs} block; give a smaller --bs", device = format_size(*device), bs = format_size(*bs))]
    SmallerThanBlock { path: PathBuf, device: u64, bs: u64 },
    #[error("{path}: a block device is one file; the plan has {files} (use --files 1)")]
    Files { path: PathBuf, files: u32 },
    #[error("{path}: --direct needs every block size and offset to be a multiple of the device's logical block size, {logical} bytes; {bs} bytes is not")]
    Unaligned { path: PathBuf, logical: u32, bs: u64 },
    #[error("{path}: in use (mounted, part of a RAID or device-mapper volume, or the target of another ioscope run); a run on it would destroy data something else relies on, and --force does not change that. Unmount it or wait for the other run to end")]
    Busy { path: PathBuf },
    #[error("{path}: cannot read the device's size ({source})")]
    Io { path: PathBuf, source: std::io::Error },
}

/// A block device, as the run's results describe it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Device {
    pub path: PathBuf,
    /// The kernel's name (`loop0`, `nvme0n1`), from /sys/dev/block.
    pub name: String,
    pub size_bytes: u64,
    pub logical_block_bytes: u32,
    pub physical_block_bytes: u32,
    /// /sys/block/NAME/device/model, if the device has one (a loop device has not).
    pub model: Option<String>,
    /// The active scheduler of /sys/block/NAME/queue/scheduler ("none", "mq-deadline").
    pub scheduler: Option<String>,
    /// Other queue settings: (name, value) from /sys/block/NAME/queue.
    pub queue: Vec<(String, String)>,
}

/// Whether `path` is a block device node (following symbolic links).
pub fn is_block_device(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
}

/// The plan's block device, checked against the plan; None when its `dir` is not one. A
/// plan without a `size` is given the device's whole size here (any other target keeps
/// the default), so that what the run records (summary, show, report) is the size it used.
pub fn resolve(plan: &mut Plan) -> Result<Option<Device>, BlockdevError> {
    let size_default = std::mem::take(&mut plan.size_default);
    let path = plan.dir.clone();
    if plan.dataset.is_some() || !plan.engine.spec().caps.does_io || !is_block_device(&path) {
        return Ok(None);
    }
    if !plan.force {
        return Err(BlockdevError::NotForced { path });
    }
    if plan.files != 1 {
        return Err(BlockdevError::Files { path, files: plan.files });
    }
    let dev = describe(&path)?;
    if size_default {
        plan.size_bytes = dev.size_bytes;
        let largest = plan.max_block_bytes();
        if largest > dev.size_bytes {
            return Err(BlockdevError::SmallerThanBlock { path, device: dev.size_bytes, bs: largest });
        }
    }
    if plan.size_bytes > dev.size_bytes {
        return Err(BlockdevError::TooLarge { path, plan: plan.size_bytes, device: dev.size_bytes });
    }
    if plan.any_direct() {
        let logical = u64::from(dev.logical_block_bytes.max(1));
        if let Some(bs) = plan.block_sizes_bytes().into_iter().find(|b| b % logical != 0) {
            return Err(BlockdevError::Unaligned { path, logical: dev.logical_block_bytes, bs });
        }
        // A size pattern draws sizes and offsets in 512-byte steps (iogen).
        let size_pattern = plan.workloads.iter().any(|w| w.pattern.as_ref().is_some_and(|p| p.map == PatternMap::Size));
        if size_pattern && logical > 512 {
            return Err(BlockdevError::Unaligned { path, logical: dev.logical_block_bytes, bs: 512 });
        }
    }
    Ok(Some(dev))
}

/// The run's claim on its device: an O_EXCL open, held until dropped. The kernel refuses it
/// while the device is mounted or held by another exclusive opener (a RAID or
/// device-mapper volume, another ioscope run), and refuses those while it is held.
#[derive(Debug)]
pub struct Claim {
    _file: std::fs::File,
}

/// Claims `path` for this run alone ([`Claim`]).
pub fn claim(path: &Path) -> Result<Claim, BlockdevError> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_EXCL).open(path) {
        Ok(file) => Ok(Claim { _file: file }),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Err(BlockdevError::Busy { path: path.to_path_buf() }),
        Err(source) => Err(BlockdevError::Io { path: path.to_path_buf(), source }),
    }
}

// From <linux/fs.h>: _IOR(0x12, 114, size_t), _IO(0x12, 104), _IO(0x12, 123).
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
const BLKSSZGET: libc::c_ulong = 0x1268;
const BLKPBSZGET: libc::c_ulong = 0x127b;

/// Reads what the device says about itself: ioctls for its size and block sizes, /sys for
/// the rest (missing /sys entries are left out, never invented).
pub fn describe(path: &Path) -> Result<Device, BlockdevError> {
    use std::os::fd::AsRawFd;
    let err = |source| BlockdevError::Io { path: path.to_path_buf(), source };
    let f = std::fs::File::open(path).map_err(err)?;
    let fd = f.as_raw_fd();
    let mut size: u64 = 0;
    let mut logical: libc::c_int = 0;
    let mut physical: libc::c_uint = 0;
    // SAFETY: each ioctl writes one value of the type given into a local that outlives it.
    unsafe {
        if libc::ioctl(fd, BLKGETSIZE64 as _, &mut size as *mut u64) != 0 {
            return Err(err(std::io::Error::last_os_error()));
        }
        if libc::ioctl(fd, BLKSSZGET as _, &mut logical as *mut libc::c_int) != 0 {
            return Err(err(std::io::Error::last_os_error()));
        }
        if libc::ioctl(fd, BLKPBSZGET as _, &mut physical as *mut libc::c_uint) != 0 {
            physical = 0;
        }
    }
    let logical = u32::try_from(logical).unwrap_or(512);
    let sys = sys_dir(&f);
    let read = |rel: &str| {
        let p = sys.as_ref()?.join(rel);
        let text = std::fs::read_to_string(p).ok()?;
        let t: String = text.trim().chars().take(256).collect();
        (!t.is_empty()).then_some(t)
    };
    let scheduler = read("queue/scheduler").map(|s| {
        // "[mq-deadline] none": the active one is in brackets.
        s.split_whitespace()
            .find_map(|w| w.strip_prefix('[').and_then(|w| w.strip_suffix(']')))
            .map_or(s.clone(), str::to_string)
    });
    let queue = ["nr_requests", "max_sectors_kb", "rotational", "read_ahead_kb", "nomerges", "rq_affinity"]
        .iter()
        .filter_map(|k| read(&format!("queue/{k}")).map(|v| (k.to_string(), v)))
        .collect();
    let name = sys
        .as_ref()
        .and_then(|s| s.file_name())
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    Ok(Device {
        path: path.to_path_buf(),
        name,
        size_bytes: size,
        logical_block_bytes: logical,
        physical_block_bytes: if physical == 0 { logical } else { physical },
        model: read("device/model"),
        scheduler,
        queue,
    })
}

/// /sys/dev/block/MAJOR:MINOR, resolved (to /sys/devices/.../block/NAME).
fn sys_dir(f: &std::fs::File) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let rdev = f.metadata().ok()?.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_or_a_regular_file_is_not_a_block_device() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(!is_block_device(tmp.path()));
        let f = tmp.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        assert!(!is_block_device(&f));
        let p =
            crate::test_plan(&format!("dir = '{}'\nrw = 'randwrite'\nsize = '1m'\nfiles = 1", tmp.path().display()));
        assert!(resolve(&mut p.clone()).unwrap().is_none());
    }
}
