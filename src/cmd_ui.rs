//! `ioscope ui`, `ioscope report` and `ioscope plot`: Analytics over results files, as a
//! served UI, a self-contained HTML file, or a PNG heat map.

use crate::cli::PlotArgs;
use crate::{outfile, CmdResult, Failure, Kind};
use ioscope_web::server::{Options, StartError};
use ioscope_web::tls::TlsFiles;
use ioscope_web::{query::Query, Api, Server};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Starts the UI server for `files` and prints where to open it.
pub fn start(files: &[PathBuf], listen: SocketAddr, tls: Option<TlsFiles>) -> Result<Server, Failure> {
    serve(Api::new(files), listen, tls)
}

/// Starts the UI server for the run about to be written to `out` (`run --ui`).
pub fn start_for_run(out: &Path, listen: SocketAddr, tls: Option<TlsFiles>) -> Result<Server, Failure> {
    serve(Api::for_new_run(out), listen, tls)
}

fn serve(api: Api, listen: SocketAddr, tls: Option<TlsFiles>) -> Result<Server, Failure> {
    let server = Server::start_opts(listen, api, Options { tls, ..Options::default() }).map_err(|e| match e {
        StartError::Tls(e) => Failure::invalid(e),
        e => Failure::failed(anyhow::anyhow!("{e} (choose another address with --listen 127.0.0.1:PORT)")),
    })?;
    let urls = server.urls();
    eprintln!("Analytics UI: {}", urls[0]);
    if server.addr.ip().is_unspecified() {
        eprintln!("  {} listens on all interfaces of this host", server.addr);
        if urls.len() > 1 {
            eprintln!("  also at: {}", urls[1..].join("  "));
        }
    }
    if server.token.is_some() {
        let encrypted = if server.tls { "encrypted" } else { "not encrypted" };
        eprintln!("  (listening beyond loopback: every request needs this token; traffic is {encrypted})");
    }
    Ok(server)
}

pub fn ui(files: &[PathBuf], listen: SocketAddr, tls: Option<TlsFiles>) -> CmdResult {
    for f in files {
        ioscope_store::open(f).map_err(Failure::invalid)?;
    }
    let server = start(files, listen, tls)?;
    eprintln!("  serving {} run(s); Ctrl-C to stop", files.len());
    server.wait();
    Ok(())
}

/// Writes the HTML report; the caller has checked `out`.
pub fn write_report(file: &Path, out: &Path, force: bool) -> CmdResult {
    ioscope_store::open(file).map_err(Failure::invalid)?;
    let html = ioscope_web::report::render(file)
        .map_err(|e| Failure::said(Kind::RunFailed, format!("{}: error: {e}", file.display())))?;
    outfile::write(out, html.as_bytes(), force)
}

pub fn report(file: &Path, out: &Path, force: bool) -> CmdResult {
    outfile::check(out, force)?;
    write_report(file, out, force)?;
    eprintln!("report: {} (opens in any browser, no server needed)", out.display());
    Ok(())
}

pub fn plot(args: &PlotArgs) -> CmdResult {
    let query = Query::new(&args.stat)
        .and_then(|q| match &args.by {
            Some(by) => q.by(by),
            None => Ok(q),
        })
        .and_then(|q| match &args.filter {
            Some(w) => q.filter(w),
            None => Ok(q),
        });
    let query = query.map_err(Failure::invalid)?;
    outfile::check(&args.out, args.force)?;
    let results = ioscope_store::open(&args.file).map_err(Failure::invalid)?;
    let opts = ioscope_web::plot::PlotOptions { width: args.width, panel_height: args.height };
    let png = ioscope_web::plot::render(&results, &query, &opts).map_err(Failure::invalid)?;
    outfile::write(&args.out, &png, args.force)
}
