//! `ioscope probe --out FILE`: target-side samplers alone, recording until stopped (or for
//! `--duration`) into a results file of their own: the target side's series, one tick per
//! second, no load.

use crate::cli::ProbeArgs;
use crate::{terminal, CmdResult, Failure, Kind};
use ioscope_metrics::Snapshot;
use ioscope_store::{RunInfo, Status, Writer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub fn probe(args: &ProbeArgs) -> CmdResult {
    if args.listen.listen.is_some() {
        return crate::cmd_probe_listen::probe(args);
    }
    let duration = args
        .duration
        .as_deref()
        .map(|d| match ioscope_workload::parse_duration(d) {
            Ok(d) if d >= Duration::from_secs(1) => Ok(d),
            _ => Err(Failure::said(
                Kind::InvalidInput,
                format!("--duration {d:?}: expected a duration of at least 1 s (30s, 5m, 1h)"),
            )),
        })
        .transpose()?;
    let processes = crate::probe::process_names(&args.processes, "--process")?;
    let probes = crate::probe::Probes { at: vec![crate::probe::Where::Local], processes };
    let Some(out) = &args.out else {
        return Err(Failure::said(Kind::InvalidInput, "ioscope probe needs --out FILE (where to record)"));
    };
    ioscope_store::check_new_path(out).map_err(Failure::invalid)?;
    let interrupt = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, Arc::clone(&interrupt))
            .map_err(|e| Failure::failed(anyhow::Error::new(e).context("cannot handle signals")))?;
    }

    let Some(probe) = probes.local(false) else { unreachable!("--probe local was given") };
    let host = ioscope_exec::host::hostname();
    let mut config = ioscope_exec::host::describe(None);
    config["probe"] = probe.describe();
    let info = RunInfo {
        ioscope_version: env!("CARGO_PKG_VERSION").to_string(),
        host: host.clone(),
        pid: std::process::id(),
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        started_unix_ms: ioscope_exec::clock::unix_ms(),
        planned_duration_ns: duration.map_or(0, |d| d.as_nanos() as u64),
        plan_json: "{}".into(),
        workload_toml: String::new(),
        workload_hash: String::new(),
    };
    let store_err = |e: ioscope_store::StoreError| Failure::failed(anyhow::Error::new(e));
    let mut writer = Writer::create(out, &info, &[(host.clone(), config)]).map_err(store_err)?;
    let t0 = ioscope_probe::driver::monotonic_ns() + 100_000_000;
    let running = probe.start(t0);
    eprintln!("probe: recording {} into {} until Ctrl-C", host, out.display());
    let seconds = duration.map(|d| d.as_secs());
    let mut written = 0u64;
    // One tick per second: the time axis of a file with no load.
    let write = |writer: &mut Writer, t: ioscope_metrics::TargetSecond| -> Result<(), ioscope_store::StoreError> {
        writer.write_second(&Snapshot::new(t.second as u32, t.interval_ns, &t.host))?;
        writer.write_target(&t)
    };
    let mut failed = None;
    while !interrupt.load(Ordering::SeqCst) && seconds.is_none_or(|n| written < n) && failed.is_none() {
        std::thread::sleep(Duration::from_millis(100));
        for t in running.take() {
            if seconds.is_some_and(|n| t.second >= n) {
                continue;
            }
            if let Err(e) = write(&mut writer, t) {
                failed = Some(e);
                break;
            }
            written += 1;
        }
    }
    drop(running);
    let interrupted = interrupt.load(Ordering::SeqCst);
    let (status, detail) = match &failed {
        Some(e) => (Status::Failed, Some(e.to_string())),
        None if interrupted && seconds.is_some() => (Status::Interrupted, Some("stopped by a signal".to_string())),
        None => (Status::Completed, None),
    };
    writer.finish(status, detail.as_deref(), ioscope_exec::clock::unix_ms()).map_err(store_err)?;
    eprintln!(
        "probe: {written} seconds recorded in {} ({})",
        out.display(),
        terminal::duration(Duration::from_secs(written))
    );
    if let Some(e) = failed {
        return Err(Failure::failed(anyhow::Error::new(e)));
    }
    // What was recorded, as `ioscope show` prints it.
    let results = ioscope_store::open(out).map_err(store_err)?;
    crate::output::println(&ioscope_report::render_text(&ioscope_report::summarize(&results, out)));
    Ok(())
}
