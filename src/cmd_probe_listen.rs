//! `ioscope probe --listen ADDR`: samples this machine with crates/probe's samplers and
//! serves the totals as OpenMetrics text at /metrics (crates/exposition) until stopped or
//! for `--duration`.

use crate::cli::ProbeArgs;
use crate::{CmdResult, Failure, Kind};
use ioscope_exposition::{Exposition, Shared};
use std::time::{Duration, Instant};

/// `ioscope probe --listen`: the recording command (`--out`) hands over to it when
/// `--listen` is given (clap refuses both at once).
pub fn probe(args: &ProbeArgs) -> CmdResult {
    let Some(addr) = args.listen.listen else {
        return Err(Failure::said(
            Kind::InvalidInput,
            "ioscope probe needs --out FILE (where to record) or --listen ADDR:PORT (serve OpenMetrics)",
        ));
    };
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
    let state = Shared::new(std::sync::Mutex::new(Exposition::new()));
    let _server =
        crate::metrics::serve(addr, args.listen.token_file.as_deref(), "--listen", "--token-file", state.clone())?;
    listen(processes, duration, &state);
    Ok(())
}

/// Samples from now on and adds each finished second to `state`, for `duration` or
/// until the process is stopped.
pub fn listen(processes: Vec<String>, duration: Option<Duration>, state: &Shared) {
    let probe =
        ioscope_probe::Probe::new(ioscope_probe::ProbeConfig { host: ioscope_exec::host::hostname(), processes });
    if let Some(why) = &probe.kernel_unavailable {
        eprintln!("probe: {why}; serving the procfs statistics only");
    }
    let started = Instant::now();
    let running = probe.start(ioscope_probe::driver::monotonic_ns());
    let add = |seconds: Vec<ioscope_metrics::TargetSecond>| {
        if let Ok(mut e) = state.lock() {
            for t in &seconds {
                e.add_target(t);
            }
        }
    };
    while duration.is_none_or(|d| started.elapsed() < d) {
        std::thread::sleep(Duration::from_millis(100));
        add(running.take());
    }
    add(running.finish(None));
}
