//! Foreground probes: commands run at set moments during the load (the seeds' rsync timed
//! under background load). Each start is timed from spawn to exit and reported with its
//! exit code; a probe still running when the run ends is killed and says so.

use crate::clock::now_ns;
use ioscope_store::ProbeRow;
use ioscope_workload::Probe;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

/// Runs every probe start in time order (one at a time), from run start `t0`, until `stop`.
pub fn run_probes(probes: &[Probe], t0: u64, stop: &AtomicBool, out: &Sender<ProbeRow>) {
    let mut starts: Vec<(Duration, &Probe)> = probes.iter().flat_map(|p| p.at.iter().map(move |a| (*a, p))).collect();
    starts.sort_by_key(|(at, _)| *at);
    for (at, probe) in starts {
        let due = t0 + at.as_nanos() as u64;
        while now_ns() < due {
            if stop.load(Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5).min(Duration::from_nanos(due.saturating_sub(now_ns()))));
        }
        let at_ns = now_ns().saturating_sub(t0);
        let _ = out.send(run_one(probe, at_ns, stop));
    }
}

/// Runs one start of a probe with `sh -c`, its output discarded.
fn run_one(probe: &Probe, at_ns: u64, stop: &AtomicBool) -> ProbeRow {
    let row = |duration_ns: u64, exit_code: Option<i32>, detail: Option<String>| ProbeRow {
        name: probe.name.clone(),
        command: probe.command.clone(),
        at_ns,
        duration_ns,
        exit_code,
        detail,
    };
    let started = Instant::now();
    let spawned = Command::new("sh")
        .arg("-c")
        .arg(&probe.command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return row(0, None, Some(format!("could not start sh: {e}"))),
    };
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let ns = started.elapsed().as_nanos() as u64;
                let detail = status.code().is_none().then(|| format!("ended by a signal ({status})"));
                return row(ns, status.code(), detail);
            }
            Ok(None) => {}
            Err(e) => return row(started.elapsed().as_nanos() as u64, None, Some(e.to_string())),
        }
        let timed_out = probe.timeout.is_some_and(|t| started.elapsed() >= t);
        if timed_out || stop.load(Relaxed) {
            let _ = child.kill();
            let _ = child.wait();
            let why = if timed_out { "killed after its timeout" } else { "killed: the run ended first" };
            return row(started.elapsed().as_nanos() as u64, None, Some(why.to_string()));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}
