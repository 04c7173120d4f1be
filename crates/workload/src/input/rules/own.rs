//! The rules on a workload's own `iodepth`, `sync` and `direct`: the same as the run's keys
//! (the engine's queue depth, a dataset's one operation at a time, a pattern's depth 1, the
//! engine's direct I/O and its alignment, the I/O buffers), reported where the workload wrote
//! them; and a workload's own `rate_iops`.

use super::*;

impl<'a> Ctx<'a> {
    /// A workload's own `rate_iops`: every workload then has one (the run's rate is their
    /// sum, each one's share its skew), and neither a run-level rate nor a curve nor a skew
    /// says otherwise.
    pub(super) fn own_rate_rules(&mut self, top: &Top, run: &Run) {
        let parsed = run.parsed();
        let Some(first) = parsed.iter().find(|w| w.workload.rate_iops.is_some()) else { return };
        let text = self.text();
        let first_loc = first.own_locs.rate.clone();
        for (key, loc) in [("rate_iops", top.rate.loc()), ("curve", top.curve.loc())] {
            if !matches!(loc, Loc::Default) {
                let note = format!(
                    "workload {} sets its own rate_iops ({}): the run's rate is the sum of the workloads' own",
                    first.workload.name,
                    first_loc.describe(text)
                );
                self.err(&loc, key, format!("no {key} when workloads set their own rate_iops"), note);
            }
        }
        let hosts = run.hosts_given.max(1) as u64;
        for w in &parsed {
            let wl = &w.workload;
            match wl.rate_iops {
                None => {
                    let note = format!(
                        "workload {} sets its own rate_iops ({})",
                        first.workload.name,
                        first_loc.describe(text)
                    );
                    self.err(
                        &w.name_loc,
                        "workload.name",
                        format!("rate_iops in workload {} too, or in none", wl.name),
                        note,
                    );
                }
                Some(r) => {
                    if wl.skew_pct.is_some() {
                        let note = "a workload with its own rate_iops runs at that rate; skew shares a run-level rate";
                        self.err(
                            &w.skew_loc,
                            "workload.skew",
                            "either rate_iops or skew in a workload, not both",
                            note,
                        );
                    }
                    let threads = u64::from(wl.threads).saturating_mul(hosts);
                    if r < threads {
                        let note =
                            format!("each of the {threads} threads of workload {} needs at least 1 IOPS", wl.name);
                        self.err(
                            &w.own_locs.rate,
                            "workload.rate_iops",
                            format!("at least {threads} (1 IOPS per thread)"),
                            note,
                        );
                    }
                }
            }
        }
    }

    pub(super) fn own_io_rules(&mut self, top: &Top, run: &Run) {
        let spec = run.engine.map(EngineKind::spec);
        let run_depth = top.iodepth.or(defaults::number("iodepth")).unwrap_or(1);
        for w in run.parsed() {
            let (wl, locs) = (&w.workload, &w.own_locs);
            if let (Some(depth), Some(e)) = (wl.iodepth, spec) {
                let max = e.caps.max_queue_depth;
                if depth > max {
                    let note = match max {
                        1 => format!(
                            "{} is synchronous: iodepth must be 1 (use engine uring to keep I/Os in flight)",
                            e.name
                        ),
                        _ => format!("engine {} keeps at most {max} I/Os in flight per thread", e.name),
                    };
                    self.err(&locs.iodepth, "workload.iodepth", format!("at most {max} with engine {}", e.name), note);
                } else if depth > 1 && run.has_dataset {
                    let note = "dataset workloads do one operation at a time per thread";
                    self.err(&locs.iodepth, "workload.iodepth", "1 with a [dataset]", note);
                } else if depth > 1 && wl.pattern.is_some() {
                    let note = "a pattern draws column by column, one I/O at a time per thread";
                    self.err(&locs.iodepth, "workload.iodepth", "1 for a pattern workload", note);
                }
            }
            if let (Some(s), true) = (wl.sync, run.has_dataset) {
                if s != SyncMode::None {
                    let note = "dataset workloads write whole files; per-write sync applies to the flat working set";
                    self.err(&locs.sync, "workload.sync", "none with a [dataset]", note);
                }
            }
            if let (Some(s), false) = (wl.sync, wl.writes()) {
                if s != SyncMode::None {
                    let note = format!("sync applies after writes, and workload {} never writes", wl.name);
                    self.err(&locs.sync, "workload.sync", "none for a workload that only reads", note);
                }
            }
            if let (Some(true), Some(e)) = (wl.direct, spec) {
                if !e.caps.direct_io {
                    let note = format!("engine {} has no direct I/O (O_DIRECT)", e.name);
                    self.err(&locs.direct, "workload.direct", format!("direct = false with engine {}", e.name), note);
                } else if e.caps.direct_align_bytes > 0 {
                    let align = e.caps.direct_align_bytes;
                    for b in w.bs.iter().filter(|b| b.bs.bytes % align != 0) {
                        let note = format!(
                            "direct = true (O_DIRECT) needs block sizes that are multiples of {align} bytes; {} is not",
                            b.bs.bytes
                        );
                        self.err(&b.loc.clone(), "bs", format!("a multiple of {align} bytes with direct = true"), note);
                    }
                }
            }
            if let Some(depth) = wl.iodepth {
                let slot = wl.max_block_bytes().div_ceil(4096) * 4096;
                if u128::from(depth) * u128::from(slot) > u128::from(MAX_BUFFER_BYTES_PER_THREAD) {
                    let note = format!(
                        "each thread keeps iodepth × largest bs = {depth} × {} of I/O buffers",
                        format_size(slot)
                    );
                    self.err(&locs.iodepth, "workload.iodepth", "iodepth × largest bs at most 1 GiB per thread", note);
                }
            }
        }
        // All threads' buffers together, each workload at its own depth.
        let parsed = run.parsed();
        if parsed.iter().any(|w| w.workload.iodepth.is_some()) {
            let total: u128 = parsed
                .iter()
                .map(|w| {
                    let d = w.workload.iodepth.map_or(run_depth, u64::from);
                    let slot = w.workload.max_block_bytes().div_ceil(4096) * 4096;
                    u128::from(w.workload.threads) * u128::from(d) * u128::from(slot)
                })
                .sum();
            if total > u128::from(MAX_BUFFER_BYTES) {
                let w = parsed.iter().rev().find(|w| w.workload.iodepth.is_some());
                let loc = w.map_or(Loc::Default, |w| w.own_locs.iodepth.clone());
                let note =
                    format!("the workloads' threads × iodepth × largest bs add up to {total} bytes of I/O buffers");
                self.err(
                    &loc,
                    "workload.iodepth",
                    "threads × iodepth × largest bs at most 64 GiB over all workloads",
                    note,
                );
            }
        }
    }
}

/// The run's rate from the workloads' own: their sum, each one's share its skew, so that the
/// executor, the hosts' split and the reports see one open loop as before.
pub(super) fn apply_own_rates(plan: &mut Plan) {
    let rates: Option<Vec<u64>> = plan.workloads.iter().map(|w| w.rate_iops).collect();
    let Some(rates) = rates else { return };
    let sum: u64 = rates.iter().sum();
    if sum == 0 {
        return;
    }
    plan.rate_iops = Some(sum);
    for (w, r) in plan.workloads.iter_mut().zip(rates) {
        w.skew_pct = Some(r as f64 * 100.0 / sum as f64);
    }
}
