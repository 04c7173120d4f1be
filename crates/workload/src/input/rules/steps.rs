//! Steps and end conditions: loops, curve, staircase and phases that make the steps, repeats and
//! until_ci, until_steady, and the limits of the whole run (steps, its length, probe times).

use super::hosts::hosts_n;
use super::*;

impl<'a> Ctx<'a> {
    /// Repeats: until_ci needs enough of them; a run with hosts has none.
    pub(super) fn repeat_rules(&mut self, top: &Top, run: &Run) {
        let hosts = &run.hosts;
        if let (Got::Ok(n, loc), Got::Ok(..)) = (&top.repeat, &top.until_ci) {
            if *n < u64::from(MIN_REPEATS_UNTIL_CI) {
                let note = format!(
                    "with until_ci, repeat is the most repeats, and until_ci measures at least {MIN_REPEATS_UNTIL_CI}"
                );
                self.err(loc, "repeat", format!("at least {MIN_REPEATS_UNTIL_CI} with until_ci"), note);
            }
        }
        if hosts.as_ref().is_some_and(|h| !h.is_empty()) {
            for (key, loc) in [("repeat", top.repeat.loc()), ("until_ci", top.until_ci.loc())] {
                if !matches!(loc, Loc::Default) {
                    let note =
                        "repeats run on one host; for many hosts, run the plan several times (one results file each)";
                    self.err(&loc, key, "no repeats in a run with hosts ([[host]] tables or --hosts)", note);
                }
            }
        }
    }

    /// What makes the steps: one of curve or rate, staircase or for_threads, a hosts staircase
    /// over the run's hosts, a staircase's own step duration.
    pub(super) fn step_rules(&mut self, top: &Top, run: &Run) {
        let (hosts, text) = (&run.hosts, self.text());
        if let (Got::Ok(_, loc), Got::Ok(..)) = (&top.curve, &top.rate) {
            let note = "a curve runs at max rate first, then at percentages of it: it sets the rate itself";
            self.err(loc, "curve", "either curve or rate_iops, not both", note);
        }
        if let (Got::Ok(st, loc), Got::Ok(..)) = (&top.staircase, &top.for_threads) {
            let note = match st.of {
                StaircaseOf::Threads => "both step the thread count",
                // Steps of hosts × threads would no longer be a staircase.
                StaircaseOf::Hosts => "a run steps one count: a hosts staircase runs each workload's own threads on every host (set them with threads)",
            };
            self.err(loc, "staircase", "either staircase or for_threads, not both", note);
        }
        if let (Got::Ok(st, loc), Some(hosts)) = (&top.staircase, &hosts) {
            let n = hosts.len();
            let top = st.counts().last().copied().unwrap_or(0) as usize;
            if st.of == StaircaseOf::Hosts && n == 0 {
                let note = "a hosts staircase steps the number of client hosts, and this run has none";
                self.err(loc, "staircase", "a hosts staircase with hosts ([[host]] tables or --hosts)", note);
            } else if st.of == StaircaseOf::Hosts && st.max as usize > n {
                let note = format!("the staircase goes up to {} hosts, and the run has {}", st.max, hosts_n(n));
                self.err(loc, "staircase", format!("at most {} (the run's hosts)", hosts_n(n)), note);
            } else if st.of == StaircaseOf::Hosts && top < n {
                let idle: Vec<&str> = hosts[top..].iter().map(|h| h.name.as_str()).collect();
                let note = format!("its last step uses {top} of the {n} hosts, so {} would never run", idle.join(", "));
                let expected = format!(
                    "a staircase whose last step uses all {n} hosts, like \"hosts:1-{n}/{}\"",
                    duration_literal(st.every)
                );
                self.err(loc, "staircase", expected, note);
            }
        }
        // Flags override the file: a --staircase replaces the file's duration, and a
        // --duration sets the steps of the file's staircase; both in one place is a conflict.
        let from_flag = |l: &Loc| matches!(l, Loc::Flag { .. });
        let one_place = from_flag(&top.staircase.loc()) == from_flag(&top.duration.loc());
        if let (Got::Ok(_, loc), Got::Ok(..), true) = (&top.staircase, &top.duration, one_place) {
            let note = format!(
                "the staircase's /EVERY part is each step's duration, and duration is also set ({})",
                top.duration.loc().describe(text)
            );
            self.err(loc, "staircase", "no duration with a staircase", note);
        }
    }

    /// Phases (`phase` in the [[workload]]s): numbered from 1 with none left empty, and no
    /// rate, whose share is over all of a run's workloads while a phase runs only some.
    pub(super) fn phase_rules(&mut self, top: &Top, run: &Run) {
        let named: Vec<(u32, &Loc)> =
            run.parsed().iter().filter_map(|w| w.workload.phase.map(|p| (p, &w.own_locs.phase))).collect();
        let Some(&(last, last_loc)) = named.iter().max_by_key(|(p, _)| *p) else { return };
        let empty: Vec<String> =
            (1..last).filter(|p| named.iter().all(|(q, _)| q != p)).map(|p| p.to_string()).collect();
        if !empty.is_empty() {
            let note = format!("no workload has phase {}, so the run would idle through it", empty.join(", "));
            self.err(last_loc, "workload.phase", format!("phases 1 to {last}, each with a workload"), note);
        }
        let own_rate = run.parsed().iter().find(|w| w.workload.rate_iops.is_some()).map(|w| w.own_locs.rate.clone());
        let rated = [("rate_iops", top.rate.loc()), ("curve", top.curve.loc())]
            .into_iter()
            .find(|(_, l)| !matches!(l, Loc::Default))
            .or(own_rate.map(|l| ("workload.rate_iops", l)));
        if let Some((key, loc)) = rated {
            let note = "a rate is shared over all the workloads of a run, and each phase runs only its own";
            self.err(&loc, key, "no rate_iops or curve in a run with phases", note);
        }
    }

    /// The limits of the whole run, once the Plan is built: steps, length, repeats, probes.
    /// None (after reporting) when the run is too long.
    pub(super) fn run_limits(&mut self, plan: &Plan, top: &Top, run: &Run) -> Option<()> {
        let (staircase_loc, duration_loc) = (top.staircase.loc(), top.duration.loc());
        let (repeat_loc, until_ci_loc) = (top.repeat.loc(), top.until_ci.loc());
        // The first loop that is set, to point at when there are too many steps.
        let loops = [
            ("for_threads", top.for_threads.loc()),
            ("for_iodepth", top.for_iodepth.loc()),
            ("for_bs", top.for_bs.loc()),
            ("for_rwmix_read", top.for_pct.loc()),
            ("curve", top.curve.loc()),
            ("staircase", top.staircase.loc()),
        ];
        let (loop_key, loop_loc) =
            loops.into_iter().find(|(_, l)| !matches!(l, Loc::Default)).unwrap_or(("for_threads", Loc::Default));
        // Counted, not built: a few long lists multiply into more steps than memory holds.
        let steps = plan.step_count();
        if steps > MAX_STEPS {
            self.err(&loop_loc, loop_key, format!("at most {MAX_STEPS} steps"), format!("the loops make {steps}"));
            return None;
        }
        let step_time = plan.warmup + plan.steps.staircase.map_or(plan.duration, |s| s.every);
        let total_ns = u128::from(steps) * step_time.as_nanos();
        if total_ns > MAX_DURATION.as_nanos() {
            let (key, loc) = match plan.steps.staircase {
                Some(_) => ("staircase", staircase_loc),
                None => ("duration", duration_loc),
            };
            let total = Duration::from_secs(u64::try_from(total_ns / 1_000_000_000).unwrap_or(u64::MAX));
            let note = format!(
                "{steps} step(s) × {} each (warm-up included) = {}",
                duration_literal(step_time),
                duration_literal(total)
            );
            self.err(&loc, key, "a run of at most 30d in all", note);
            return None;
        }
        // `until_steady` ends the run: with several steps it would cut the later ones.
        if let Some(w) = plan.until_steady_s {
            if steps > 1 {
                let note = format!("the loops or staircase make {steps} steps; until_steady ends the run, so only a run of one step takes it");
                self.err(&top.until_steady.loc(), "until_steady", "until_steady on a run of one step", note);
            }
            if !plan.hosts.is_empty() {
                let note = "each host would stop on its own seconds; run it on one host".to_string();
                self.err(&top.until_steady.loc(), "until_steady", "until_steady on a run without hosts", note);
            }
            if plan.steady_window_s.is_some_and(|s| s != w) {
                let note = "until_steady sets the steady-state window itself; give one of the two".to_string();
                self.err(
                    &top.steady_window.loc(),
                    "steady_window",
                    "steady_window equal to until_steady, or only one of them",
                    note,
                );
            }
        }
        let repeats = plan.max_repeats();
        if repeats > 1 && total_ns.saturating_mul(u128::from(repeats)) > MAX_DURATION.as_nanos() {
            let (key, loc) = match &repeat_loc {
                Loc::Default => ("until_ci", until_ci_loc),
                l => ("repeat", l.clone()),
            };
            let run_time = Duration::from_secs(u64::try_from(total_ns / 1_000_000_000).unwrap_or(u64::MAX));
            let note = format!(
                "{repeats} repeat(s){} × {} each = more than 30d",
                if key == "until_ci" {
                    format!(" (the most until_ci runs by default: {DEFAULT_MAX_REPEATS_UNTIL_CI})")
                } else {
                    String::new()
                },
                duration_literal(run_time)
            );
            self.err(&loc, key, "a run of at most 30d in all, repeats included", note);
            return None;
        }
        // A probe start after the end of the run would never happen.
        let total = plan.total_duration();
        for (probe, at_loc) in run.probes.iter().flatten() {
            if let Some(late) = probe.at.iter().find(|a| **a >= total) {
                let note = format!(
                    "{} is not before the end of the run, which lasts {} (steps and warm-ups included)",
                    duration_literal(*late),
                    duration_literal(total)
                );
                self.err(at_loc, "probe.at", "times before the end of the run", note);
            }
        }
        Some(())
    }
}
