//! Files a command writes besides a results file (`-o FILE`): checked before any work is
//! done (exit 2), never replaced without `--force`, never written through a symbolic link.

use crate::{CmdResult, Failure, Kind};
use std::path::Path;

/// Refuses, before any work: an existing file without `force`, a symbolic link (not even a
/// dangling one, which would create the file it points to), and a missing directory.
pub fn check(out: &Path, force: bool) -> CmdResult {
    let refuse = |why: &str| Err(Failure::said(Kind::InvalidInput, format!("{}: error: {why}", out.display())));
    match out.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => {
            return refuse("is a symbolic link; ioscope does not write through links");
        }
        Ok(m) if m.is_dir() => return refuse("is a directory; expected a file name"),
        Ok(_) if !force => return refuse("file exists; use --force to replace it"),
        Ok(_) => {}
        Err(_) => {
            let dir = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            if !dir.is_dir() {
                return refuse(&format!("directory {} does not exist", dir.display()));
            }
        }
    }
    Ok(())
}

/// Writes `out`: a new file (O_EXCL), or with `force` an existing regular file; never
/// through a symbolic link (O_NOFOLLOW), even if one appeared since [`check`].
pub fn write(out: &Path, bytes: &[u8], force: bool) -> CmdResult {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).custom_flags(libc::O_NOFOLLOW);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    options.open(out).and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all())).map_err(|e| {
        let why = match e.raw_os_error() {
            Some(libc::ELOOP) => "is a symbolic link; ioscope does not write through links".to_string(),
            Some(libc::EEXIST) => "file exists; use --force to replace it".to_string(),
            _ => e.to_string(),
        };
        Failure::said(Kind::RunFailed, format!("{}: error: {why}", out.display()))
    })
}

/// Text for standard output, or for `-o FILE` when given (checked by the caller first).
pub fn emit(text: &str, out: &crate::cli::OutFile) -> CmdResult {
    match &out.out {
        None => {
            crate::output::print(text);
            Ok(())
        }
        Some(path) => write(path, text.as_bytes(), out.force),
    }
}
