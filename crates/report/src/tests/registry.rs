//! The verdict registry holds: every id is in docs/verdicts.md and has a test that builds
//! its trap and one that builds a clean run of the same shape (an id added without them
//! fails here), and the report's modules import each other without a cycle.

use crate::verdict::{VerdictId, REGISTRY};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each verdict → (its trap test: the verdict is said; its clean test: a run of the same
/// shape, or just short of the rule, without it). One test may do both. The tests are in
/// this crate's sources or the workspace's tests/.
const TRAPS: &[(VerdictId, &str, &str)] = &[
    (
        VerdictId::Interrupted,
        "interrupted_is_said_of_a_run_stopped_before_its_end_only",
        "interrupted_is_said_of_a_run_stopped_before_its_end_only",
    ),
    (
        VerdictId::Failed,
        "failed_is_said_of_a_failed_run_only_as_an_error",
        "failed_is_said_of_a_failed_run_only_as_an_error",
    ),
    (VerdictId::Running, "running_is_said_of_a_run_still_going_only", "running_is_said_of_a_run_still_going_only"),
    (
        VerdictId::NoData,
        "no_data_is_said_of_a_run_without_a_second_only",
        "no_data_is_said_of_a_run_without_a_second_only",
    ),
    (
        VerdictId::TooShort,
        "too_short_is_said_below_ten_measured_seconds_and_not_at_ten",
        "too_short_is_said_below_ten_measured_seconds_and_not_at_ten",
    ),
    (
        VerdictId::ShorterThanPlanned,
        "shorter_than_planned_is_said_of_a_missing_second_not_of_a_whole_run",
        "shorter_than_planned_is_said_of_a_missing_second_not_of_a_whole_run",
    ),
    (VerdictId::Engine, "engine_is_said_of_an_engine_with_a_note_only", "engine_is_said_of_an_engine_with_a_note_only"),
    (
        VerdictId::HostLost,
        "host_lost_is_said_of_a_lost_agent_with_its_second_only",
        "host_lost_is_said_of_a_lost_agent_with_its_second_only",
    ),
    (VerdictId::HostFailed, "host_failed_is_said_of_a_failed_agent_only", "host_failed_is_said_of_a_failed_agent_only"),
    (
        VerdictId::HostLateStart,
        "host_late_start_is_said_of_a_host_that_started_late_only",
        "host_late_start_is_said_of_a_host_that_started_late_only",
    ),
    (
        VerdictId::ClockUncertain,
        "clock_uncertain_is_said_beyond_one_millisecond_and_not_within_it",
        "clock_uncertain_is_said_beyond_one_millisecond_and_not_within_it",
    ),
    (VerdictId::Errors, "errors_are_said_of_failed_ios_by_kind_only", "errors_are_said_of_failed_ios_by_kind_only"),
    (
        VerdictId::UnusableSeconds,
        "unusable_seconds_are_seconds_in_which_every_io_failed_not_some",
        "unusable_seconds_are_seconds_in_which_every_io_failed_not_some",
    ),
    (
        VerdictId::DataMismatch,
        "data_mismatch_is_said_of_a_block_read_back_wrong_only",
        "data_mismatch_is_said_of_a_block_read_back_wrong_only",
    ),
    (
        VerdictId::Stalls,
        "stalls_are_whole_seconds_without_io_not_a_short_last_tick",
        "stalls_are_whole_seconds_without_io_not_a_short_last_tick",
    ),
    (
        VerdictId::LateTicks,
        "late_ticks_are_ticks_beyond_one_and_a_half_seconds_with_the_second_named",
        "late_ticks_are_ticks_beyond_one_and_a_half_seconds_with_the_second_named",
    ),
    (
        VerdictId::Oversubscribed,
        "oversubscribed_is_more_than_eight_threads_per_cpu_without_collector_priority",
        "oversubscribed_is_more_than_eight_threads_per_cpu_without_collector_priority",
    ),
    (
        VerdictId::PerFileIncomplete,
        "per_file_incomplete_is_said_of_io_a_full_ring_left_out_only",
        "per_file_incomplete_is_said_of_io_a_full_ring_left_out_only",
    ),
    (
        VerdictId::SkippedPicks,
        "skipped_picks_are_said_of_picks_that_found_nothing_only",
        "skipped_picks_are_said_of_picks_that_found_nothing_only",
    ),
    (
        VerdictId::ProbeDropped,
        "probe_dropped_is_said_of_events_the_samplers_missed_only",
        "probe_dropped_is_said_of_events_the_samplers_missed_only",
    ),
    (
        VerdictId::RateNotHeld,
        "rate_not_held_whose_shortfall_is_the_skipped_picks_says_so_at_info_and_blames_no_saturation",
        "rate_not_held_is_silent_when_the_rate_asked_was_reached",
    ),
    (
        VerdictId::ClientCache,
        "client_cache_is_said_of_buffered_reads_faster_than_a_device_not_of_device_speed_ones",
        "client_cache_is_said_of_buffered_reads_faster_than_a_device_not_of_device_speed_ones",
    ),
    (
        VerdictId::WorkingSetCached,
        "working_set_cached_is_said_of_buffered_io_on_a_working_set_that_fits_in_memory",
        "working_set_cached_is_said_of_buffered_io_on_a_working_set_that_fits_in_memory",
    ),
    (
        VerdictId::TargetCache,
        "target_cache_is_said_when_the_targets_disks_saw_under_a_tenth_of_the_reads",
        "target_cache_is_said_when_the_targets_disks_saw_under_a_tenth_of_the_reads",
    ),
    (
        VerdictId::ClientBound,
        "a_worker_thread_busy_all_the_time_is_client_bound_and_one_that_waits_is_not",
        "a_worker_thread_busy_all_the_time_is_client_bound_and_one_that_waits_is_not",
    ),
    (
        VerdictId::LinkBound,
        "a_run_at_the_shaped_rate_is_link_bound_with_the_wire_as_evidence",
        "a_run_well_below_the_capacity_or_without_a_route_is_not_link_bound",
    ),
    (
        VerdictId::TargetBound,
        "a_saturated_target_disk_over_a_run_without_steps_is_target_bound",
        "a_saturated_target_disk_over_a_run_without_steps_is_target_bound",
    ),
    (
        VerdictId::Imbalance,
        "a_worker_thread_or_file_far_from_its_peers_is_an_imbalance_with_its_figures",
        "a_worker_thread_or_file_far_from_its_peers_is_an_imbalance_with_its_figures",
    ),
    (
        VerdictId::NotSteady,
        "not_steady_names_the_figure_that_failed_the_rule_with_its_value_and_limit",
        "not_steady_is_silent_for_a_run_of_the_same_shape_whose_latency_holds",
    ),
    (
        VerdictId::FellOutOfSteadyState,
        "a_run_that_falls_out_of_steady_state_gets_the_verdict_naming_the_second_and_what_changed",
        "a_run_that_falls_out_of_steady_state_gets_the_verdict_naming_the_second_and_what_changed",
    ),
];

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every .rs file under `dir`, with its text.
fn rust_files(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push((p.clone(), std::fs::read_to_string(&p).unwrap()));
        }
    }
}

#[test]
fn every_verdict_id_is_unique_kebab_case_and_its_own_row() {
    let mut names = BTreeSet::new();
    for e in REGISTRY {
        assert!(names.insert(e.name), "{} twice", e.name);
        assert!(e.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{}", e.name);
        assert_eq!(e.id.entry().name, e.name, "the row of {:?}", e.id);
        assert!(!e.means.is_empty() && !e.figure.is_empty(), "{} says what it means and names its figure", e.name);
    }
}

#[test]
fn every_verdict_id_of_the_registry_is_described_in_docs_verdicts_md() {
    let docs = std::fs::read_to_string(crate_dir().join("../../docs/verdicts.md")).unwrap();
    let missing: Vec<&str> = REGISTRY
        .iter()
        .map(|e| e.name)
        .filter(|n| !docs.contains(&format!("`{n}`")) && !docs.contains(&format!("\n## {n}\n")))
        .collect();
    assert!(missing.is_empty(), "not in docs/verdicts.md: {missing:?}");
}

#[test]
fn every_verdict_id_has_a_trap_test_and_a_clean_test_that_exist() {
    // Exactly one row per id: adding an id to the registry fails here until its tests are named.
    let listed: BTreeMap<VerdictId, (&str, &str)> = TRAPS.iter().map(|(id, t, c)| (*id, (*t, *c))).collect();
    assert_eq!(listed.len(), TRAPS.len(), "an id listed twice");
    let without: Vec<&str> = REGISTRY.iter().filter(|e| !listed.contains_key(&e.id)).map(|e| e.name).collect();
    assert!(without.is_empty(), "verdicts without a trap and a clean test: {without:?}");

    let mut sources = Vec::new();
    rust_files(&crate_dir().join("src"), &mut sources);
    rust_files(&crate_dir().join("../../tests"), &mut sources);
    for (id, (trap, clean)) in listed {
        for test in [trap, clean] {
            let head = format!("fn {test}(");
            let Some((path, text)) = sources.iter().find(|(_, t)| t.contains(&head)) else {
                panic!("{}: no test fn {test} in the crate or tests/", id.name());
            };
            // The test is about this verdict: its name or its body names it.
            let from = text.find(&head).unwrap();
            let body =
                &text[from..text[from + head.len()..].find("#[test]").map_or(text.len(), |i| from + head.len() + i)];
            let named = test.contains(&id.name().replace('-', "_"))
                || body.contains(&format!("\"{}\"", id.name()))
                || body.contains(&format!("VerdictId::{id:?}"));
            assert!(named, "{test} ({}) does not name the verdict {}", path.display(), id.name());
        }
    }
}

/// The report modules each of the crate's modules names (`crate::x` paths), tests and the
/// crate root (lib.rs: the summary's types and `summarize`, which calls them all) left out.
fn module_imports() -> BTreeMap<String, BTreeSet<String>> {
    let src = crate_dir().join("src");
    let mut files = Vec::new();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        let p = e.path();
        let stem = p.file_stem().unwrap().to_string_lossy().to_string();
        if p.extension().is_some_and(|x| x == "rs") && stem != "lib" && stem != "tests" {
            files.push((stem, std::fs::read_to_string(&p).unwrap()));
        }
    }
    let modules: BTreeSet<String> = files.iter().map(|(m, _)| m.clone()).collect();
    let mut out = BTreeMap::new();
    for (m, text) in &files {
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        let mut uses = BTreeSet::new();
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group.split('}').next().unwrap_or("").split(',').map(|x| x.trim()).collect(),
                None => vec![rest],
            };
            for n in names {
                let first: String = n.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if modules.contains(&first) && first != *m {
                    uses.insert(first);
                }
            }
        }
        out.insert(m.clone(), uses);
    }
    out
}

#[test]
fn the_report_modules_import_each_other_without_a_cycle() {
    let graph = module_imports();
    assert!(graph["aggregate"].contains("notes"), "the parser sees imports: {graph:?}");
    assert!(graph["verdict"].is_empty() && graph["stats"].is_empty(), "leaves: {graph:?}");
    // Depth-first: a module met again on the current path closes a cycle.
    fn visit(m: &str, g: &BTreeMap<String, BTreeSet<String>>, path: &mut Vec<String>, done: &mut BTreeSet<String>) {
        if done.contains(m) {
            return;
        }
        if let Some(at) = path.iter().position(|x| x == m) {
            panic!("import cycle: {} -> {m}", path[at..].join(" -> "));
        }
        path.push(m.to_string());
        for next in g.get(m).into_iter().flatten() {
            visit(next, g, path, done);
        }
        path.pop();
        done.insert(m.to_string());
    }
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done);
    }
}
