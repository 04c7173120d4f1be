//! The plan one host runs, and the agent's confinement to its root directory.

use ioscope_workload::{Plan, Target};
use std::path::{Component, Path, PathBuf};

/// The plan host `index` (named `name` in the results) runs: [`Plan::for_host`] (its
/// share of the rate, its steps, its own dir or target), with its files in a directory of
/// its own, `<dir>/<name>` (or `<target>/<name>`), unless its `[[host]]` entry names its
/// own: hosts that share a file system (an NFS export) never write into each other's
/// working sets. Probes are not run on agents.
pub fn host_plan(plan: &Plan, index: usize, name: &str) -> Result<Plan, String> {
    let spec = plan.hosts.get(index).ok_or_else(|| format!("host {index} is not in the workload's host list"))?;
    let own_dir = spec.dir.is_some();
    let own_target = spec.target.is_some();
    let mut p = plan.for_host(index);
    if name.is_empty() || name.contains(['/', '\0']) || name == "." || name == ".." {
        return Err(format!("host name {name:?} cannot name a directory"));
    }
    if let Some(t) = &p.target {
        if !own_target {
            p.target = Some(subdir_target(t, name)?);
        }
    } else if !own_dir {
        p.dir = p.dir.join(name);
    }
    if let Some(d) = &mut p.dataset {
        if !own_dir && !own_target {
            d.dir = d.dir.join(name);
        }
    }
    p.probes.clear();
    Ok(p)
}

/// `nfs://server/export/dir?opts` becomes `nfs://server/export/dir/NAME?opts`.
fn subdir_target(t: &Target, name: &str) -> Result<Target, String> {
    let (base, query) = match t.url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (t.url.as_str(), None),
    };
    let mut url = format!("{}/{name}", base.trim_end_matches('/'));
    if let Some(q) = query {
        url = format!("{url}?{q}");
    }
    Target::parse_any(&url).map_err(|e| format!("host {name}'s target {url}: {e}"))
}

/// Places a plan's relative local paths under `root` (a listening agent's directory: the
/// coordinator's working directory means nothing here).
pub fn under_root(plan: &mut Plan, root: &Path) {
    let place = |p: &mut PathBuf| {
        if p.is_relative() {
            *p = root.join(p.components().filter(|c| !matches!(c, Component::CurDir)).collect::<PathBuf>());
        }
    };
    place(&mut plan.dir);
    if let Some(d) = &mut plan.dataset {
        place(&mut d.dir);
    }
}

/// Refuses a plan that names a local path outside `root` (after following symbolic links
/// of the part that exists), or a relative or `..` path.
pub fn check_root(plan: &Plan, root: &Path) -> Result<(), String> {
    if plan.target.is_some() || !plan.engine.spec().caps.does_io {
        return Ok(()); // the files are on a server, or there are none
    }
    let root = root.canonicalize().map_err(|e| format!("the agent's root {}: {e}", root.display()))?;
    let mut paths = vec![plan.dir.clone()];
    if let Some(d) = &plan.dataset {
        paths.push(d.dir.clone());
    }
    for p in paths.iter().filter(|p| !p.as_os_str().is_empty()) {
        if !inside(p, &root) {
            return Err(format!(
                "{} is outside this agent's root {}: the agent only touches files under its --root",
                p.display(),
                root.display()
            ));
        }
    }
    Ok(())
}

fn inside(path: &Path, root: &Path) -> bool {
    if !path.is_absolute() || path.components().any(|c| matches!(c, Component::ParentDir | Component::CurDir)) {
        return false;
    }
    // The longest part that exists, resolved; the rest is created under it.
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name().map(|n| n.to_os_string()), existing.parent()) {
            (Some(n), Some(parent)) => {
                rest.push(n);
                existing = parent.to_path_buf();
            }
            _ => return false,
        }
    }
    let Ok(mut resolved) = existing.canonicalize() else { return false };
    resolved.extend(rest.iter().rev().map(PathBuf::from));
    resolved.starts_with(root)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_the_root_are_refused_also_through_a_symlink() {
        let root = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(other.path(), root.path().join("link")).unwrap();
        let r = root.path().canonicalize().unwrap();
        assert!(inside(&r.join("a/b/c"), &r));
        assert!(!inside(&r.join("link/x"), &r), "a symlink out of the root");
        assert!(!inside(&r.join("a/../../etc"), &r), "a .. path");
        assert!(!inside(Path::new("relative"), &r));
        assert!(!inside(Path::new("/etc"), &r));
    }
}
