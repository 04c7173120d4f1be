//! The bucket as a file system, for what prepares, checks and removes a working set or a
//! dataset tree (and its marker): a path `s3://BUCKET/KEY` is the object KEY; a
//! "directory" is a key prefix ending in `/`, which exists while an object is under it and
//! needs no making or removing. A file written in chunks (the working set's fill) is a
//! multipart upload of one part per chunk, completed by `sync`; the uploads in progress
//! are shared by every connection, so several threads fill one object.

use crate::client::Client;
use crate::objects::{self, Conn};
use bytes::Bytes;
use ioscope_engine::fs::{FileSystem, FsConn, Stat, FILL_CHUNK};
use ioscope_engine_table::s3::Target;
use std::collections::HashMap;
use std::io::{self, ErrorKind};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// An upload of a file written in chunks: its id and the parts so far.
#[derive(Debug, Default)]
struct Upload {
    id: String,
    parts: Vec<(u64, String)>,
}

pub struct S3Fs {
    client: Arc<Client>,
    uploads: Arc<Mutex<HashMap<String, Upload>>>,
}

impl S3Fs {
    /// Checks the credentials and that the bucket answers (a listing of one key).
    pub fn connect_to(target: &Target) -> Result<S3Fs, String> {
        let client = Arc::new(Client::new(target)?);
        let fs = S3Fs { client, uploads: Arc::default() };
        let rt = Arc::new(objects::runtime().map_err(|e| e.to_string())?);
        let mut conn = Conn::new(fs.client.clone(), rt);
        let q = "list-type=2&max-keys=1";
        conn.call(http::Method::GET, "", q, &[], Bytes::new(), crate::client::Into::Nothing)
            .map_err(|e| format!("{} bucket {}: {}", fs.client.origin(), target.bucket, io_text(e)))?;
        Ok(fs)
    }
}

fn io_text(result: i64) -> String {
    crate::errors::error_text(result)
}

/// An io::Error of a failed result, of the kind the callers test for.
fn io_err(result: i64, key: &str) -> io::Error {
    let kind = if objects::is_missing(result) {
        ErrorKind::NotFound
    } else if let Ok(errno) = i32::try_from(-result) {
        io::Error::from_raw_os_error(errno).kind()
    } else {
        ErrorKind::Other
    };
    io::Error::new(kind, format!("s3 object {key:?}: {}", io_text(result)))
}

impl FileSystem for S3Fs {
    fn connect(&self) -> io::Result<Box<dyn FsConn + '_>> {
        let rt = Arc::new(objects::runtime()?);
        Ok(Box::new(S3Conn { fs: self, conn: Conn::new(self.client.clone(), rt) }))
    }
}

struct S3Conn<'a> {
    fs: &'a S3Fs,
    conn: Conn,
}

impl S3Conn<'_> {
    fn key(&self, path: &Path) -> io::Result<String> {
        let p = path.to_string_lossy();
        self.fs.client.target.key_of(&p).map(|k| k.trim_end_matches('/').to_string()).ok_or_else(|| {
            io::Error::new(ErrorKind::InvalidInput, format!("{p} is not in bucket {}", self.fs.client.target.bucket))
        })
    }
}

impl FsConn for S3Conn<'_> {
    fn stat(&mut self, path: &Path) -> io::Result<Option<Stat>> {
        let key = self.key(path)?;
        if !key.is_empty() {
            if let Some(len) = self.conn.head(&key).map_err(|e| io_err(e, &key))? {
                return Ok(Some(Stat { dir: false, file: true, len }));
            }
        }
        // A directory: the bucket itself, or a prefix with objects under it.
        let prefix = if key.is_empty() { String::new() } else { format!("{key}/") };
        let q = format!("list-type=2&max-keys=1&prefix={}", crate::client::query_value(&prefix));
        let r = self
            .conn
            .call(http::Method::GET, "", &q, &[], Bytes::new(), crate::client::Into::Text)
            .map_err(|e| io_err(e, &key))?;
        let any = String::from_utf8_lossy(&r.body).contains("<Key>");
        Ok((key.is_empty() || any).then_some(Stat { dir: true, file: false, len: 0 }))
    }

    fn read_file(&mut self, path: &Path) -> io::Result<Vec<u8>> {
        let key = self.key(path)?;
        self.conn.get(&key).map_err(|e| io_err(e, &key))
    }

    fn list(&mut self, dir: &Path) -> io::Result<Vec<(String, Option<Stat>)>> {
        let key = self.key(dir)?;
        let prefix = if key.is_empty() { String::new() } else { format!("{key}/") };
        let (objects, prefixes) = self.conn.list(&prefix, Some("/")).map_err(|e| io_err(e, &key))?;
        let name = |k: &str| k.strip_prefix(prefix.as_str()).map(|n| n.trim_end_matches('/').to_string());
        let mut out: Vec<(String, Option<Stat>)> = objects
            .iter()
            .filter_map(|(k, len)| Some((name(k)?, Some(Stat { dir: false, file: true, len: *len }))))
            .filter(|(n, _)| !n.is_empty())
            .collect();
        out.extend(prefixes.iter().filter_map(|p| Some((name(p)?, Some(Stat { dir: true, file: false, len: 0 })))));
        Ok(out)
    }

    fn create_dir_all(&mut self, _path: &Path) -> io::Result<()> {
        Ok(())
    }

    fn remove_file(&mut self, path: &Path) -> io::Result<()> {
        let key = self.key(path)?;
        self.conn.delete(&key).map_err(|e| io_err(e, &key))
    }

    fn remove_dir(&mut self, _path: &Path) -> io::Result<()> {
        Ok(())
    }

    fn rename(&mut self, from: &Path, to: &Path) -> io::Result<()> {
        let (from, to) = (self.key(from)?, self.key(to)?);
        self.conn.copy(&from, &to).map_err(|e| io_err(e, &from))?;
        self.conn.delete(&from).map_err(|e| io_err(e, &from))
    }

    fn create_empty(&mut self, path: &Path) -> io::Result<()> {
        let key = self.key(path)?;
        let stale = self.fs.uploads.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
        if let Some(u) = stale {
            let _ = self.conn.abort_upload(&key, &u.id);
        }
        self.conn.put(&key, Bytes::new()).map_err(|e| io_err(e, &key))
    }

    /// One part of the object's upload: chunks of [`FILL_CHUNK`] bytes, at their offsets.
    fn write_at(&mut self, path: &Path, offset: u64, data: &[u8]) -> io::Result<()> {
        let key = self.key(path)?;
        if offset % FILL_CHUNK != 0 || data.len() as u64 > FILL_CHUNK {
            return Err(io::Error::new(
                ErrorKind::Unsupported,
                format!("s3 object {key:?}: objects are written in whole parts"),
            ));
        }
        let n = offset / FILL_CHUNK + 1;
        if n > objects::MAX_PARTS {
            return Err(io::Error::new(ErrorKind::FileTooLarge, format!("s3 object {key:?}: more than 10,000 parts")));
        }
        let id = {
            let mut uploads = self.fs.uploads.lock().unwrap_or_else(|p| p.into_inner());
            match uploads.get(&key) {
                Some(u) => u.id.clone(),
                None => {
                    let id = self.conn.start_upload(&key).map_err(|e| io_err(e, &key))?;
                    uploads.insert(key.clone(), Upload { id: id.clone(), parts: Vec::new() });
                    id
                }
            }
        };
        let etag = self.conn.upload_part(&key, &id, n, Bytes::copy_from_slice(data)).map_err(|e| io_err(e, &key))?;
        if let Some(u) = self.fs.uploads.lock().unwrap_or_else(|p| p.into_inner()).get_mut(&key) {
            u.parts.push((n, etag));
        }
        Ok(())
    }

    /// Completes the object's upload, if it was written in parts.
    fn sync(&mut self, path: &Path) -> io::Result<()> {
        let key = self.key(path)?;
        let upload = self.fs.uploads.lock().unwrap_or_else(|p| p.into_inner()).remove(&key);
        let Some(mut u) = upload else { return Ok(()) };
        u.parts.sort();
        self.conn.complete_upload(&key, &u.id, &u.parts).map_err(|e| {
            let _ = self.conn.abort_upload(&key, &u.id);
            io_err(e, &key)
        })
    }

    fn write_file(&mut self, path: &Path, len: u64, fill: &mut dyn FnMut(u64, &mut [u8])) -> io::Result<()> {
        let key = self.key(path)?;
        let part = self.fs.client.target.part_size_bytes;
        self.conn.put_generated(&key, len, part, fill).map_err(|e| io_err(e, &key))
    }
}
