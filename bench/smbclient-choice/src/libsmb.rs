//! Samba's libsmbclient (Debian libsmbclient-dev), through the few C functions this
//! benchmark calls, declared here and linked from the system library. libsmbclient's file
//! calls block until the server answers, so one context has exactly one request in flight:
//! an engine's submit() would do the request and reap() would return it.
//!
//! `smbc_lseek` with SEEK_SET only records the offset in the client (no request), so one
//! random read is `smbc_lseek` + `smbc_read`: one SMB2 READ on the wire.

use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::OnceLock;
use std::time::Instant;

use crate::{Counts, Meter, Offsets, Op, Target, BLOCK};

#[allow(non_camel_case_types)]
type SMBCCTX = c_void;
type AuthFn = extern "C" fn(
    *mut SMBCCTX,
    *const c_char,
    *const c_char,
    *mut c_char,
    c_int,
    *mut c_char,
    c_int,
    *mut c_char,
    c_int,
);

const SMBC_ENCRYPTLEVEL_REQUIRE: c_int = 2;

#[link(name = "smbclient")]
extern "C" {
    fn smbc_new_context() -> *mut SMBCCTX;
    fn smbc_init_context(ctx: *mut SMBCCTX) -> *mut SMBCCTX;
    fn smbc_set_context(ctx: *mut SMBCCTX) -> *mut SMBCCTX;
    fn smbc_free_context(ctx: *mut SMBCCTX, shutdown_ctx: c_int) -> c_int;
    fn smbc_setFunctionAuthDataWithContext(ctx: *mut SMBCCTX, f: AuthFn);
    fn smbc_setOptionSmbEncryptionLevel(ctx: *mut SMBCCTX, level: c_int);
    fn smbc_setOptionProtocols(ctx: *mut SMBCCTX, min: *const c_char, max: *const c_char) -> c_int;
    fn smbc_setConfiguration(ctx: *mut SMBCCTX, file: *const c_char) -> c_int;
    fn smbc_open(url: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int;
    fn smbc_lseek(fd: c_int, offset: libc::off_t, whence: c_int) -> libc::off_t;
    fn smbc_read(fd: c_int, buf: *mut c_void, len: libc::size_t) -> libc::ssize_t;
    fn smbc_write(fd: c_int, buf: *const c_void, len: libc::size_t) -> libc::ssize_t;
    fn smbc_close(fd: c_int) -> c_int;
}

/// user, password: what the authentication callback hands libsmbclient.
static CREDENTIALS: OnceLock<(CString, CString)> = OnceLock::new();

/// Copies S (with its NUL) into libsmbclient's buffer of LEN bytes, if it fits.
fn fill(dst: *mut c_char, len: c_int, s: &CString) {
    let bytes = s.as_bytes_with_nul();
    if len > 0 && bytes.len() <= len as usize {
        // SAFETY: libsmbclient hands a writable buffer of `len` bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr().cast(), dst, bytes.len()) };
    }
}

extern "C" fn auth(
    _ctx: *mut SMBCCTX,
    _srv: *const c_char,
    _shr: *const c_char,
    _wg: *mut c_char,
    _wglen: c_int,
    un: *mut c_char,
    unlen: c_int,
    pw: *mut c_char,
    pwlen: c_int,
) {
    if let Some((user, password)) = CREDENTIALS.get() {
        fill(un, unlen, user);
        fill(pw, pwlen, password);
    }
}

fn errno() -> String {
    std::io::Error::last_os_error().to_string()
}

pub fn run(t: &Target, meter: &mut Meter) -> Result<Counts, String> {
    let cstr = |s: &str| CString::new(s).map_err(|e| e.to_string());
    CREDENTIALS.set((cstr(&t.user)?, cstr(&t.password)?)).map_err(|_| "credentials set twice")?;
    // Client settings libsmbclient has no setter for, in smb.conf syntax, loaded after
    // init (init loads the system smb.conf, which would otherwise override them).
    let conf_path = std::env::temp_dir().join(format!("smbclient-choice-{}.conf", std::process::id()));
    let signing = if t.sign { "required" } else { "default" };
    std::fs::write(&conf_path, format!("[global]\n  client signing = {signing}\n"))
        .map_err(|e| format!("{}: {e}", conf_path.display()))?;
    let url = cstr(&format!("smb://{}:{}/{}/{}", t.host, t.port, t.share, t.file))?;
    let ctx;
    // SAFETY: the calls follow libsmbclient.h: a new context, its options, init, then made
    // the context of the compatibility calls (smbc_open ...). All strings outlive the calls.
    unsafe {
        ctx = smbc_new_context();
        if ctx.is_null() {
            return Err(format!("smbc_new_context: {}", errno()));
        }
        smbc_setFunctionAuthDataWithContext(ctx, auth);
        // The same dialect the crate negotiates with this server (SMB 3.1.1).
        let proto = cstr("SMB3_11")?;
        smbc_setOptionProtocols(ctx, proto.as_ptr(), proto.as_ptr());
        if t.encrypt {
            smbc_setOptionSmbEncryptionLevel(ctx, SMBC_ENCRYPTLEVEL_REQUIRE);
        }
        if smbc_init_context(ctx).is_null() {
            return Err(format!("smbc_init_context: {}", errno()));
        }
        let conf = cstr(&conf_path.to_string_lossy())?;
        if smbc_setConfiguration(ctx, conf.as_ptr()) != 0 {
            return Err(format!("smbc_setConfiguration: {}", errno()));
        }
        smbc_set_context(ctx);
    }
    let _ = std::fs::remove_file(&conf_path);

    // SAFETY: a valid URL string; the context is set.
    let fd = unsafe { smbc_open(url.as_ptr(), libc::O_RDWR, 0) };
    if fd < 0 {
        return Err(format!("smbc_open smb://{}:{}/{}/{}: {}", t.host, t.port, t.share, t.file, errno()));
    }
    let mut offsets = Offsets::new(t.file_size);
    let mut counts = Counts::default();
    let mut buf = vec![0x5a_u8; BLOCK];
    meter.mark();
    let t0 = Instant::now();
    while t0.elapsed() < t.duration {
        let off = offsets.next_offset();
        let started = Instant::now();
        // SAFETY: fd is open; buf holds BLOCK bytes.
        let n = unsafe {
            if smbc_lseek(fd, off as libc::off_t, libc::SEEK_SET) < 0 {
                -1
            } else {
                match t.op {
                    Op::Read => smbc_read(fd, buf.as_mut_ptr().cast(), BLOCK),
                    Op::Write => smbc_write(fd, buf.as_ptr().cast(), BLOCK),
                }
            }
        };
        counts.latencies_ns.push(started.elapsed().as_nanos() as u64);
        counts.requests += 1;
        if n != BLOCK as isize {
            counts.errors += 1;
            counts.first_error.get_or_insert(if n < 0 { errno() } else { format!("short transfer: {n} bytes") });
        }
    }
    meter.stop();
    // SAFETY: fd is open; ctx came from smbc_new_context.
    unsafe {
        smbc_close(fd);
        smbc_free_context(ctx, 1);
    }
    Ok(counts)
}
