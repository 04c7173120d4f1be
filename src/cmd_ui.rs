//! `ioscope ui`, `ioscope report` and `ioscope plot`: Analytics over results files, as a
//! served UI, a self-contained HTML file, or a PNG heat map.

use crate::cli::PlotArgs;
use crate::exit;
use ioscope_web::server::{Options, StartError};
use ioscope_web::tls::TlsFiles;
use ioscope_web::{query::Query, Api, Server};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Starts the UI server for `files` and prints where to open it.
pub fn start(files: &[PathBuf], listen: SocketAddr, tls: Option<TlsFiles>) -> Result<Server, u8> {
    serve(Api::new(files), listen, tls)
}

/// Starts the UI server for the run about to be written to `out` (`run --ui`).
pub fn start_for_run(out: &Path, listen: SocketAddr, tls: Option<TlsFiles>) -> Result<Server, u8> {
    serve(Api::for_new_run(out), listen, tls)
}

fn serve(api: Api, listen: SocketAddr, tls: Option<TlsFiles>) -> Result<Server, u8> {
    let server = Server::start_opts(listen, api, Options { tls, ..Options::default() }).map_err(|e| match e {
        StartError::Tls(e) => {
            eprintln!("error: {e}");
            exit::INVALID_INPUT
        }
        e => {
            eprintln!("error: {e} (choose another address with --listen 127.0.0.1:PORT)");
            exit::RUN_FAILED
        }
    })?;
    let urls = server.urls();
    eprintln!("Analytics UI: {}", urls[0]);
    if server.addr.ip().is_unspecified() {
        eprintln!("  {} listens on all interfaces of this host", server.addr);
        if urls.len() > 1 {
            eprintln!("  also at: {}", urls[1..].join("  "));
        }
    }
    match (server.token.is_some(), server.tls) {
        (true, false) => {
            eprintln!("  (listening beyond loopback: every request needs this token; traffic is not encrypted)")
        }
        (true, true) => {
            eprintln!("  (listening beyond loopback: every request needs this token; traffic is encrypted)")
        }
        _ => {}
    }
    Ok(server)
}

pub fn ui(files: &[PathBuf], listen: SocketAddr, tls: Option<TlsFiles>) -> u8 {
    for f in files {
        if let Err(e) = ioscope_store::open(f) {
            eprintln!("error: {e}");
            return exit::INVALID_INPUT;
        }
    }
    match start(files, listen, tls) {
        Ok(server) => {
            eprintln!("  serving {} run(s); Ctrl-C to stop", files.len());
            server.wait();
            exit::OK
        }
        Err(code) => code,
    }
}

/// Refuses to replace an existing file unless told to, and never writes through a
/// symbolic link (not even a dangling one, which would create the file it points to).
fn check_out(out: &Path, force: bool) -> Result<(), u8> {
    match out.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => {
            eprintln!("{}: error: is a symbolic link; ioscope does not write through links", out.display());
            Err(exit::INVALID_INPUT)
        }
        Ok(_) if !force => {
            eprintln!("{}: error: file exists; use --force to replace it", out.display());
            Err(exit::INVALID_INPUT)
        }
        _ => Ok(()),
    }
}

/// Writes `out`: a new file (O_EXCL), or with `force` an existing regular file; never
/// through a symbolic link (O_NOFOLLOW), even if one appeared since [`check_out`].
fn write(out: &Path, bytes: &[u8], force: bool) -> u8 {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).custom_flags(libc::O_NOFOLLOW);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    match options.open(out).and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all())) {
        Ok(()) => exit::OK,
        Err(e) => {
            let why = match e.raw_os_error() {
                Some(libc::ELOOP) => "is a symbolic link; ioscope does not write through links".to_string(),
                Some(libc::EEXIST) => "file exists; use --force to replace it".to_string(),
                _ => e.to_string(),
            };
            eprintln!("{}: error: {why}", out.display());
            exit::RUN_FAILED
        }
    }
}

/// Writes the HTML report; the caller has checked `out`.
pub fn write_report(file: &Path, out: &Path, force: bool) -> u8 {
    if let Err(e) = ioscope_store::open(file) {
        eprintln!("error: {e}");
        return exit::INVALID_INPUT;
    }
    match ioscope_web::report::render(file) {
        Ok(html) => write(out, html.as_bytes(), force),
        Err(e) => {
            eprintln!("{}: error: {e}", file.display());
            exit::RUN_FAILED
        }
    }
}

pub fn report(file: &Path, out: &Path, force: bool) -> u8 {
    if let Err(code) = check_out(out, force) {
        return code;
    }
    let code = write_report(file, out, force);
    if code == exit::OK {
        eprintln!("report: {} (opens in any browser, no server needed)", out.display());
    }
    code
}

pub fn plot(args: &PlotArgs) -> u8 {
    let query = Query::new(&args.stat)
        .and_then(|q| match &args.by {
            Some(by) => q.by(by),
            None => Ok(q),
        })
        .and_then(|q| match &args.filter {
            Some(w) => q.filter(w),
            None => Ok(q),
        });
    let query = match query {
        Ok(q) => q,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::INVALID_INPUT;
        }
    };
    if let Err(code) = check_out(&args.out, args.force) {
        return code;
    }
    let results = match ioscope_store::open(&args.file) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::INVALID_INPUT;
        }
    };
    let opts = ioscope_web::plot::PlotOptions { width: args.width, panel_height: args.height };
    match ioscope_web::plot::render(&results, &query, &opts) {
        Ok(png) => write(&args.out, &png, args.force),
        Err(e) => {
            eprintln!("error: {e}");
            exit::INVALID_INPUT
        }
    }
}
