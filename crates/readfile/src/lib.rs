//! Reading a file whose path came from the user or from another file (a workload, a job
//! file's `include`, a journal): a regular file only, of a bounded size, never waiting.
//!
//! The path is opened with `O_NONBLOCK`, so that opening a FIFO returns at once instead of
//! waiting for a writer, then checked with `fstat` on the descriptor opened (not the path,
//! which may have changed): anything but a regular file (a FIFO, a device, a socket, a
//! directory) is refused by its kind. At most `max + 1` bytes are read, so a file larger
//! than its bound costs no more than the bound. Nothing read from a refused file is kept.
//!
//! Its own crate, below everything that reads such a path: workload files, fio includes
//! and journals (ioscope-workload, which re-exports it as `readfile`), the agent's token
//! and TLS files (ioscope-proto, ioscope-serve), the UI's TLS files, the engines'
//! credential files.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a file was not read. The text names neither the path (the caller puts it first)
/// nor anything the file holds.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read the file: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a regular file ({0}): expected a file to read")]
    NotRegular(&'static str),
    #[error("the file is larger than {}", bound(*.0))]
    TooLarge(u64),
}

/// A bound as a message shows it: "4 KiB", "1 MiB", else bytes ("5000 B").
fn bound(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// What is at the descriptor, for a refusal.
fn kind(t: std::fs::FileType) -> &'static str {
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

/// Opens `path` for reading, without waiting: a regular file, or with `block_devices` a
/// block device too (a run's target may be one); anything else is refused by its kind.
pub fn open(path: &Path, block_devices: bool) -> Result<File, FileError> {
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let t = file.metadata()?.file_type();
    if t.is_file() || (block_devices && t.is_block_device()) {
        Ok(file)
    } else {
        Err(FileError::NotRegular(kind(t)))
    }
}

/// The bytes of the regular file at `path`: at most `max`, else [`FileError::TooLarge`].
pub fn read(path: &Path, max: u64) -> Result<Vec<u8>, FileError> {
    let file = open(path, false)?;
    // A file already larger is refused without reading it; one growing while read is
    // caught by the extra byte.
    if file.metadata()?.len() > max {
        return Err(FileError::TooLarge(max));
    }
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(FileError::TooLarge(max));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_regular_file_within_its_bound_is_read_and_a_fifo_is_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, b"12345").unwrap();
        assert_eq!(read(&file, 5).unwrap(), b"12345");
        assert_eq!(read(&file, 4).unwrap_err().to_string(), "the file is larger than 4 B");
        assert_eq!(FileError::TooLarge(4 << 10).to_string(), "the file is larger than 4 KiB");
        assert_eq!(FileError::TooLarge(16 << 20).to_string(), "the file is larger than 16 MiB");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(read(&fifo, 5).unwrap_err().to_string(), "not a regular file (a FIFO): expected a file to read");
        assert!(read(dir.path(), 5).unwrap_err().to_string().contains("a directory"));
        assert!(read(Path::new("/dev/null"), 5).unwrap_err().to_string().contains("a character device"));
        assert!(matches!(read(&dir.path().join("none"), 5), Err(FileError::Io(_))));
    }
}
