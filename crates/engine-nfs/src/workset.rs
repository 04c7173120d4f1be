//! The flat working set on an NFS server: files `ioscope.N.dat` in the target directory,
//! listed in the marker `.ioscope-workset.json` there (the same rules as a local working
//! set): files of ours of the right size are reused, missing or short ones are written
//! with random data (UNSTABLE + COMMIT, in wtmax pieces); a file we did not create is
//! read if large enough, never written unless `force`; cleanup removes only ours.

use crate::client::{mount, mount_creating, Mounted, NfsError, Session};
use crate::proto::{Fh, Stable};
use crate::target::Target;

pub const MARKER: &str = ".ioscope-workset.json";

pub fn file_name(i: u32) -> String {
    format!("ioscope.{i}.dat")
}

/// A refusal (exit 2: nothing was written) or a failure of the server.
#[derive(Debug, thiserror::Error)]
pub enum WorksetError {
    #[error("{url}/{name}: {reason}; ioscope writes only into files it created (use --force to allow)")]
    NotOurs { url: String, name: String, reason: String },
    #[error("{url}: {source}")]
    Nfs { url: String, source: NfsError },
}

fn read_marker(s: &mut Session, dir: &Fh) -> Option<Vec<String>> {
    let (fh, attr) = s.lookup(dir, MARKER).ok()?;
    let text = s.read_data(&fh, 0, attr?.size.min(1 << 20) as u32).ok()?;
    let text = String::from_utf8(text).ok()?;
    // {"created_by":"ioscope","files":["ioscope.0.dat",...]}
    let list = text.split_once("\"files\":")?.1;
    Some(list.split('"').skip(1).step_by(2).take_while(|n| n.starts_with("ioscope.")).map(str::to_string).collect())
}

fn write_marker(s: &mut Session, dir: &Fh, names: &[String]) -> Result<(), NfsError> {
    let list: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let text = format!("{{\"created_by\":\"ioscope\",\"files\":[{}]}}\n", list.join(","));
    let fh = s.create(dir, MARKER, 0o644)?;
    s.setattr(&fh, None, Some(0))?;
    s.write(&fh, 0, Stable::FileSync, text.as_bytes())?;
    Ok(())
}

/// Checks and prepares `files` files of `file_size` bytes each; returns their names.
/// `progress(bytes written, total)` is called now and then.
pub fn prepare(
    t: &Target,
    url: &str,
    files: u32,
    file_size: u64,
    writes: bool,
    force: bool,
    progress: &dyn Fn(u64, u64),
) -> Result<Vec<String>, WorksetError> {
    let nfs = |source| WorksetError::Nfs { url: url.to_string(), source };
    let m: Mounted = mount_creating(t).map_err(nfs)?;
    let mut s = Session::connect(t, &m).map_err(nfs)?;
    let ours = read_marker(&mut s, &m.dir).unwrap_or_default();
    let mut to_fill = Vec::new();
    let mut names = Vec::new();
    for i in 0..files {
        let name = file_name(i);
        let existing = match s.lookup(&m.dir, &name) {
            Ok((fh, attr)) => Some((fh, attr.map_or(0, |a| a.size))),
            Err(e) if e.status() == Some(2) => None,
            Err(e) => return Err(nfs(e)),
        };
        match existing {
            Some((_, size)) if ours.contains(&name) && size == file_size => {}
            Some((fh, size)) if !ours.contains(&name) => {
                let reason = if size < file_size {
                    Some(format!("exists with {size} bytes, the plan needs {file_size} (it would be rewritten)"))
                } else if writes {
                    Some("exists and the workload writes".to_string())
                } else {
                    None
                };
                match reason {
                    Some(reason) if !force => return Err(WorksetError::NotOurs { url: url.into(), name, reason }),
                    Some(_) if size < file_size => to_fill.push((name.clone(), Some(fh))),
                    _ => {}
                }
            }
            Some((fh, _)) => to_fill.push((name.clone(), Some(fh))),
            None => to_fill.push((name.clone(), None)),
        }
        names.push(name);
    }
    if to_fill.is_empty() {
        return Ok(names);
    }
    let mut listed = ours.clone();
    listed.extend(to_fill.iter().map(|(n, _)| n.clone()).filter(|n| !ours.contains(n)));
    write_marker(&mut s, &m.dir, &listed).map_err(nfs)?;
    let total = to_fill.len() as u64 * file_size;
    let piece = m.fsinfo.wtmax.clamp(1, 1 << 20) as usize;
    let mut buf = vec![0u8; piece];
    let mut written = 0u64;
    for (k, (name, fh)) in to_fill.iter().enumerate() {
        let fh = match fh {
            Some(f) => f.clone(),
            None => s.create(&m.dir, name, 0o644).map_err(nfs)?,
        };
        s.setattr(&fh, None, Some(0)).map_err(nfs)?;
        let mut off = 0u64;
        while off < file_size {
            let n = piece.min((file_size - off) as usize);
            ioscope_engine::buffers::fill_random(&mut buf[..n], (k as u64) << 40 ^ off ^ 0x5eed);
            s.write(&fh, off, Stable::Unstable, &buf[..n]).map_err(nfs)?;
            off += n as u64;
            written += n as u64;
            if written % (64 << 20) < n as u64 {
                progress(written, total);
            }
        }
        s.commit(&fh).map_err(nfs)?;
    }
    progress(written, total);
    Ok(names)
}

/// Removes the files the marker lists, then the marker: (files removed, bytes).
pub fn cleanup(t: &Target, url: &str) -> Result<(u64, u64), WorksetError> {
    let nfs = |source| WorksetError::Nfs { url: url.to_string(), source };
    let m = mount(t).map_err(nfs)?;
    let mut s = Session::connect(t, &m).map_err(nfs)?;
    let Some(ours) = read_marker(&mut s, &m.dir) else { return Ok((0, 0)) };
    let (mut files, mut bytes) = (0, 0);
    for name in &ours {
        if let Ok((_, attr)) = s.lookup(&m.dir, name) {
            s.remove(&m.dir, name).map_err(nfs)?;
            files += 1;
            bytes += attr.map_or(0, |a| a.size);
        }
    }
    s.remove(&m.dir, MARKER).map_err(nfs)?;
    Ok((files, bytes))
}
