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
    ("series-ops-by-op.json", "/api/v1/runs/0/series", "stat=ops&by=op"),
    ("series-latency-by-op.json", "/api/v1/runs/0/series", "stat=latency&by=op"),
    ("heatmap-latency-by-op.json", "/api/v1/runs/0/heatmap", "stat=latency&by=op"),
    ("heatmap-latency-by-op.packed.json", "/api/v1/runs/0/heatmap", "stat=latency&by=op&encoding=packed"),
];

#[test]
fn ui_fixtures_are_what_the_api_answers() {
    let dir = tempfile::tempdir().unwrap();
    let api = Api::new(&[write_results(dir.path())]);
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../ui-tests/fixtures/generated");
    let write = std::env::var_os("IOSCOPE_WRITE_FIXTURES").is_some();
    let mut stale = Vec::new();
    for (file, path, query) in FIXTURES {
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
