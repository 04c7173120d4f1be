//! The UI's test data (ui-tests/fixtures/generated/) is what the API answers for the small
//! results file of the tests, so the UI's tests cannot drift from the API. This test fails
//! when a committed file differs from the answer; `IOSCOPE_WRITE_FIXTURES=1 cargo test -p
//! ioscope-web ui_fixtures` rewrites them.

use crate::api::Api;
use crate::tests::write_results;
use std::path::PathBuf;

/// (file, API path, query): the answers the UI's unit tests read.
const FIXTURES: &[(&str, &str, &str)] = &[
    ("runs.json", "/api/v1/runs", ""),
    ("run-0.json", "/api/v1/runs/0", ""),
    ("series-ops.json", "/api/v1/runs/0/series", "stat=ops"),
    ("series-ops-by-op.json", "/api/v1/runs/0/series", "stat=ops&by=op"),
    ("series-latency-by-op.json", "/api/v1/runs/0/series", "stat=latency&by=op"),
    ("series-probe.json", "/api/v1/runs/0/series", "stat=probe"),
    ("heatmap-latency-by-op.json", "/api/v1/runs/0/heatmap", "stat=latency&by=op"),
    ("heatmap-latency-by-op.packed.json", "/api/v1/runs/0/heatmap", "stat=latency&by=op&encoding=packed"),
    ("heatmap-offset.json", "/api/v1/runs/0/heatmap", "stat=offset"),
    ("series-latency-by-file-write.json", "/api/v1/runs/0/series", "stat=latency&by=file&where=op:write"),
    ("heatmap-latency-by-file-write.json", "/api/v1/runs/0/heatmap", "stat=latency&by=file&where=op:write"),
];

/// The same of the four-host run (hosts_fixture.rs), for the UI's host rows.
const HOSTS_FIXTURES: &[(&str, &str, &str)] = &[
    ("hosts-run-0.json", "/api/v1/runs/0", ""),
    ("hosts-series-ops-by-host.json", "/api/v1/runs/0/series", "stat=ops&by=host"),
];

/// The same of the run with target series (server_fixture.rs), for the server worksheet.
const SERVER_FIXTURES: &[(&str, &str, &str)] = &[
    ("server-run-0.json", "/api/v1/runs/0", ""),
    ("server-series-process-cpu-by-process.json", "/api/v1/runs/0/series", "stat=process_cpu&by=process"),
    ("server-series-disk-ops-by-disk.json", "/api/v1/runs/0/series", "stat=disk_ops&by=disk"),
    ("server-series-disk-queue.json", "/api/v1/runs/0/series", "stat=disk_queue"),
    ("server-series-page-cache.json", "/api/v1/runs/0/series", "stat=page_cache"),
    ("server-series-cpu-by-mode.json", "/api/v1/runs/0/series", "stat=cpu&by=mode"),
    ("server-heatmap-block-latency-by-op.json", "/api/v1/runs/0/heatmap", "stat=block_latency&by=op"),
];

/// Run 0 compared with the four-host run, for the UI's compare table.
const COMPARE_FIXTURES: &[(&str, &str, &str)] = &[("compare-0-with-1.json", "/api/v1/runs/0/compare", "with=1")];

#[test]
fn ui_fixtures_are_what_the_api_answers() {
    let dir = tempfile::tempdir().unwrap();
    let api = Api::new(&[write_results(dir.path())]);
    let hosts_path = dir.path().join("hosts.ioscope");
    crate::hosts_fixture::write_hosts_results(&hosts_path).unwrap();
    let hosts_api = Api::new(std::slice::from_ref(&hosts_path));
    let server_path = dir.path().join("server.ioscope");
    crate::server_fixture::write_server_results(&server_path).unwrap();
    let server_api = Api::new(&[server_path]);
    let compare_dir = dir.path().join("compare");
    std::fs::create_dir(&compare_dir).unwrap();
    let compare_api = Api::new(&[write_results(&compare_dir), hosts_path.clone()]);
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ui-tests/fixtures/generated");
    let write = std::env::var_os("IOSCOPE_WRITE_FIXTURES").is_some();
    let mut stale = Vec::new();
    let all = FIXTURES
        .iter()
        .map(|f| (&api, f))
        .chain(HOSTS_FIXTURES.iter().map(|f| (&hosts_api, f)))
        .chain(SERVER_FIXTURES.iter().map(|f| (&server_api, f)))
        .chain(COMPARE_FIXTURES.iter().map(|f| (&compare_api, f)));
    for (api, (file, path, query)) in all {
        let answer = api.get(path, query);
        assert_eq!(answer.status, 200, "{path}?{query}: {}", answer.body);
        let mut value = answer.json();
        // Where the test's temporary file was: not part of what the UI reads.
        redact_paths(&mut value);
        let text = serde_json::to_string_pretty(&value).unwrap() + "\n";
        let target = out.join(file);
        if write {
            std::fs::create_dir_all(&out).unwrap();
            std::fs::write(&target, &text).unwrap();
        } else if std::fs::read_to_string(&target).ok().as_deref() != Some(text.as_str()) {
            stale.push(target.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "these UI fixtures differ from what the API answers: {stale:?}; if the API change is intended, \
         rewrite them with IOSCOPE_WRITE_FIXTURES=1 cargo test -p ioscope-web ui_fixtures and commit them"
    );
}

fn redact_paths(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if (k == "path" || k == "results_file") && x.is_string() {
                    *x = "r.ioscope".into();
                } else {
                    redact_paths(x);
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(redact_paths),
        _ => {}
    }
}

/// The hand-written fixtures (ui-tests/fixtures/*.json, shaped for the UI's unit tests:
/// gaps, steps, warm-up, odd buckets) and the API answers they stand for.
const HAND_WRITTEN: &[(&str, &str, &str)] = &[
    ("runs.json", "/api/v1/runs", ""),
    ("run-0.json", "/api/v1/runs/0", ""),
    ("series-ops-by-op.json", "/api/v1/runs/0/series", "stat=ops&by=op"),
    ("series-latency-by-op.json", "/api/v1/runs/0/series", "stat=latency&by=op"),
    ("series-probe.json", "/api/v1/runs/0/series", "stat=probe"),
    ("heatmap-latency-by-op.json", "/api/v1/runs/0/heatmap", "stat=latency&by=op"),
    ("heatmap-offset.json", "/api/v1/runs/0/heatmap", "stat=offset"),
];

#[test]
fn hand_written_ui_fixtures_have_the_shape_of_the_api_answers() {
    let dir = tempfile::tempdir().unwrap();
    let api = Api::new(&[write_results(dir.path())]);
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ui-tests/fixtures");
    for (file, path, query) in HAND_WRITTEN {
        let text = std::fs::read_to_string(fixtures.join(file)).unwrap();
        let fixture: serde_json::Value = serde_json::from_str(&text).unwrap();
        let answer = api.get(path, query).json();
        let mut wrong = Vec::new();
        same_shape(&fixture, &answer, file, &mut wrong);
        assert!(wrong.is_empty(), "ui-tests/fixtures/{file} has drifted from what {path}?{query} answers: {wrong:#?}");
    }
}

/// Collects where `fixture` differs in shape from `answer`: a field missing on either side,
/// or a different JSON type (null matches anything: optional fields). An array's elements
/// are each compared with the answer's first.
fn same_shape(fixture: &serde_json::Value, answer: &serde_json::Value, at: &str, wrong: &mut Vec<String>) {
    use serde_json::Value::*;
    // Free-form by design: a host's configuration, the stored plan, per-host system maps.
    let general: std::string::String = at.split('[').map(|p| p.split_once(']').map_or(p, |x| x.1)).collect();
    if ["hosts.config", ".plan", "summary.system", "summary.by_host"].iter().any(|f| general.ends_with(f)) {
        return;
    }
    match (fixture, answer) {
        (Null, _) | (_, Null) => {}
        (Object(f), Object(a)) => {
            for k in f.keys().filter(|k| !a.contains_key(*k)) {
                wrong.push(format!("{at}.{k}: in the fixture, not in the answer"));
            }
            // Only in the summary of a run of several hosts (the fixture's has one).
            let optional = |k: &str| at.ends_with(".summary") && ["hosts", "total_latency_ns"].contains(&k);
            for k in a.keys().filter(|k| !f.contains_key(*k) && !optional(k)) {
                wrong.push(format!("{at}.{k}: in the answer, not in the fixture"));
            }
            for (k, v) in f {
                if let Some(w) = a.get(k) {
                    same_shape(v, w, &format!("{at}.{k}"), wrong);
                }
            }
        }
        (Array(f), Array(a)) => {
            if let Some(first) = a.first() {
                for (i, v) in f.iter().enumerate() {
                    same_shape(v, first, &format!("{at}[{i}]"), wrong);
                }
            }
        }
        (Number(_), Number(_)) | (String(_), String(_)) | (Bool(_), Bool(_)) => {}
        (f, a) => wrong.push(format!("{at}: {} in the fixture, {} in the answer", kind(f), kind(a))),
    }
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}
