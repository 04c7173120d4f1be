//! Threads, rate and depth: the queue depth an engine (or a dataset) allows, the I/O buffers
//! threads × iodepth × block size hold, the open-loop rate over the threads, and the workloads'
//! skews.

use super::*;

impl<'a> Ctx<'a> {
    /// A synchronous engine does one I/O at a time per thread; so do dataset workloads.
    pub(super) fn depth_rules(&mut self, top: &Top, run: &Run) {
        self.for_iodepth_rules(top, run);
        let (engine, has_dataset) = (run.engine, run.has_dataset);
        if let (Got::Ok(depth, loc), Some(e)) = (&top.iodepth, engine.map(EngineKind::spec)) {
            let max = e.caps.max_queue_depth;
            if *depth > u64::from(max) {
                let (expected, note) = if max == 1 {
                    let queued = ENGINES.iter().find(|q| q.caps.queued() && q.caps.target.is_none());
                    let note = format!(
                        "{} is synchronous: iodepth must be 1 (use engine {} to keep I/Os in flight)",
                        e.name,
                        queued.map_or("uring", |q| q.name)
                    );
                    (format!("1 with engine {}", e.name), note)
                } else {
                    let note = format!("engine {} keeps at most {max} I/Os in flight per thread", e.name);
                    (format!("at most {max} with engine {}", e.name), note)
                };
                self.err(loc, "iodepth", expected, note);
            } else if *depth > 1 && has_dataset {
                self.err(
                    loc,
                    "iodepth",
                    "1 with a [dataset]",
                    "dataset workloads do one operation at a time per thread",
                );
            }
        }
    }

    /// `for_iodepth`: depths the engine keeps in flight, no workload depth of its own, no
    /// `[dataset]`.
    fn for_iodepth_rules(&mut self, top: &Top, run: &Run) {
        let Got::Ok(depths, loc) = &top.for_iodepth else { return };
        let deepest = depths.iter().copied().max().unwrap_or(1);
        if let Some(e) = run.engine.map(EngineKind::spec) {
            let max = u64::from(e.caps.max_queue_depth);
            if deepest > max {
                let note = format!("engine {} keeps at most {max} I/Os in flight per thread", e.name);
                self.err(loc, "for_iodepth", format!("depths of at most {max} with engine {}", e.name), note);
            }
        }
        if run.has_dataset {
            let note = "dataset workloads do one operation at a time per thread";
            self.err(loc, "for_iodepth", "no for_iodepth with a [dataset]", note);
        }
        if let Got::Ok(_, l) = &top.iodepth {
            let note = "each step of for_iodepth sets the depth; give one of the two";
            self.err(l, "iodepth", "either iodepth or for_iodepth, not both", note);
        }
        if run.parsed().iter().any(|w| w.workload.iodepth.is_some()) {
            let note = "each step of for_iodepth sets every workload's depth";
            self.err(loc, "for_iodepth", "for_iodepth with no [[workload]] iodepth of its own", note);
        }
    }

    /// The I/O buffers fit in memory, the rate gives each thread at least 1 IOPS, the skews
    /// add up to at most 100.
    pub(super) fn buffer_and_rate_rules(&mut self, top: &Top, run: &Run) {
        let (all_bs, parsed, hosts_given) = (&run.all_bs, run.parsed(), run.hosts_given);
        // Each thread holds iodepth buffers of the largest block size, allocated before the
        // run: more than memory can hold must be refused here, not fail in a worker.
        let largest_bs = all_bs.iter().map(|e| e.bs.bytes).max().unwrap_or(4096);
        let slot_bytes = largest_bs.div_ceil(4096) * 4096;
        let mut buffers_refused = false;
        // The deepest step's depth sizes the buffers (for_iodepth), else the run's.
        let depth_g = match &top.for_iodepth {
            Got::Ok(l, loc) => Got::Ok(l.iter().copied().max().unwrap_or(1), loc.clone()),
            _ => top.iodepth.clone(),
        };
        if let Some(depth) = depth_g.or(defaults::number("iodepth")) {
            let per_thread = u128::from(depth) * u128::from(slot_bytes);
            if per_thread > u128::from(MAX_BUFFER_BYTES_PER_THREAD) {
                buffers_refused = true;
                let note = format!(
                    "each thread keeps iodepth × largest bs = {depth} × {} of I/O buffers",
                    format_size(largest_bs)
                );
                let (loc, key) = match depth_g.loc() {
                    Loc::Default => {
                        (all_bs.iter().max_by_key(|e| e.bs.bytes).map_or(Loc::Default, |e| e.loc.clone()), "bs")
                    }
                    l => (l, "iodepth"),
                };
                self.err(&loc, key, "iodepth × largest bs at most 1 GiB per thread", note);
            }
        }
        // An open-loop rate is split over the threads; each needs at least 1 I/O per second.
        let max_threads: u64 = parsed
            .iter()
            .map(|w| {
                let stepped = match (&top.for_threads, &top.staircase) {
                    (Got::Ok(l, _), _) => l.iter().copied().max(),
                    (_, Got::Ok(s, _)) if s.of == StaircaseOf::Threads => Some(u64::from(s.max)),
                    _ => None,
                };
                stepped.unwrap_or(u64::from(w.workload.threads))
            })
            .sum();
        let all_buffers = u128::from(max_threads)
            * u128::from(depth_g.or(defaults::number("iodepth")).unwrap_or(1))
            * u128::from(slot_bytes);
        if all_buffers > u128::from(MAX_BUFFER_BYTES) && !buffers_refused {
            let note = format!(
                "{max_threads} thread(s) × iodepth {} × largest bs {} = {} of I/O buffers",
                depth_g.or(defaults::number("iodepth")).unwrap_or(1),
                format_size(largest_bs),
                u64::try_from(all_buffers).map_or("more than 16 EiB".to_string(), format_size)
            );
            // Point at what is most likely to have been raised: iodepth, else the block size.
            let largest_loc = all_bs.iter().max_by_key(|e| e.bs.bytes).map_or(Loc::Default, |e| e.loc.clone());
            let (loc, key) = match (depth_g.loc(), largest_loc) {
                (Loc::Default, Loc::Default) => (Loc::Default, "threads"),
                (Loc::Default, l) => (l, "bs"),
                (l, _) => (l, "iodepth"),
            };
            self.err(&loc, key, "threads × iodepth × largest bs at most 64 GiB", note);
        }
        if let Got::Ok(rate, loc) = &top.rate {
            // The rate is over all hosts, each running its own threads.
            let all_threads = max_threads.saturating_mul(hosts_given.max(1) as u64);
            if *rate < all_threads {
                let on_hosts = match hosts_given {
                    0 => String::new(),
                    1 => " on the 1 host".to_string(),
                    n => format!(" ({max_threads} on each of {n} hosts)"),
                };
                self.err(
                    loc,
                    "rate_iops",
                    format!("at least {all_threads} (1 IOPS per thread)"),
                    format!("each of the {all_threads} threads{on_hosts} needs at least 1 IOPS"),
                );
            }
        }
        let skew_sum: f64 = parsed.iter().filter_map(|w| w.workload.skew_pct).sum();
        if skew_sum > 100.0 + 1e-9 {
            let loc = parsed.iter().rev().find(|w| w.workload.skew_pct.is_some()).map(|w| w.skew_loc.clone());
            self.err(&loc.unwrap_or(Loc::Default), "workload.skew", "skews that add up to at most 100", "");
        }
    }
}
