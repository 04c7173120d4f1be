//! Makes a long results file from a short real one, for the UI bench (bench/ui.mjs): the
//! sample's seconds (after its first, a warm-up) are repeated in order until the asked
//! number of seconds, renumbered, as one completed run. The heat maps then have the
//! sample's real per-second histograms, an hour of them, written in seconds instead of
//! an hour.
//!
//! Usage: cargo run --release -p ioscope-web --example stretch_run SAMPLE.db OUT.db SECONDS

use ioscope_store::{RunInfo, Status, Writer};
use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [sample, out, seconds] = args.as_slice() else {
        eprintln!("usage: stretch_run SAMPLE.db OUT.db SECONDS");
        std::process::exit(2);
    };
    let seconds: u32 = seconds.parse().unwrap_or_else(|_| {
        eprintln!("SECONDS {seconds:?}: expected a whole number");
        std::process::exit(2)
    });
    if let Err(e) = stretch(&PathBuf::from(sample), &PathBuf::from(out), seconds) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn stretch(sample: &std::path::Path, out: &std::path::Path, seconds: u32) -> Result<(), String> {
    let r = ioscope_store::open(sample).map_err(|e| e.to_string())?;
    let first = r.seconds.first().map(|s| s.second).ok_or("the sample has no seconds")?;
    let pool: Vec<_> = r.seconds.iter().filter(|s| s.second > first).collect();
    let distinct: Vec<u32> = {
        let mut d: Vec<u32> = pool.iter().map(|s| s.second).collect();
        d.dedup();
        d
    };
    if distinct.is_empty() {
        return Err("the sample needs at least two seconds".into());
    }
    let info = RunInfo {
        planned_duration_ns: u64::from(seconds) * 1_000_000_000,
        command_line: format!("{} (stretched to {seconds} s from {})", r.run.info.command_line, sample.display()),
        ..r.run.info.clone()
    };
    let mut w = Writer::create(out, &info, &r.hosts).map_err(|e| e.to_string())?;
    for s in 0..seconds {
        let from = distinct[s as usize % distinct.len()];
        for snap in pool.iter().filter(|x| x.second == from) {
            let mut snap = (*snap).clone();
            snap.second = s;
            snap.step = 0;
            snap.warmup = false;
            w.write_second(&snap).map_err(|e| e.to_string())?;
        }
    }
    let ended = info.started_unix_ms + i64::from(seconds) * 1000;
    w.finish(Status::Completed, None, ended).map_err(|e| e.to_string())?;
    Ok(())
}
