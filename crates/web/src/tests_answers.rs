//! The `/series` and `/heatmap` answers, byte for byte, for the small results file of the
//! tests: clients (the UI, scripts, the HTML report's embedded answers) read these texts,
//! so a change of a key, a number's form (`200.0` against `200`) or a null fails here.
//! The texts in crates/web/testdata/answers/ were written by the answers' first form;
//! `IOSCOPE_WRITE_ANSWERS=1 cargo test -p ioscope-web answers_are` rewrites them when an
//! answer is meant to change (say so in docs/api.md).

use crate::api::Api;
use crate::tests::write_results;
use std::path::PathBuf;

/// (file, API path, query).
const ANSWERS: &[(&str, &str, &str)] = &[
    ("series-ops.json", "/api/v1/runs/0/series", "stat=ops"),
    ("series-ops-by-op.json", "/api/v1/runs/0/series", "stat=ops&by=op"),
    ("series-ops-by-host-read.json", "/api/v1/runs/0/series", "stat=ops&by=host&where=op:read"),
    ("series-ops-by-worker.json", "/api/v1/runs/0/series", "stat=ops&by=worker&from=1&to=3"),
    ("series-errors-by-file.json", "/api/v1/runs/0/series", "stat=errors&by=file"),
    ("series-errors-by-error.json", "/api/v1/runs/0/series", "stat=errors&by=error"),
    ("series-bytes-by-step.json", "/api/v1/runs/0/series", "stat=bytes&by=step"),
    ("series-latency-by-op.json", "/api/v1/runs/0/series", "stat=latency&by=op"),
    ("series-size-write.json", "/api/v1/runs/0/series", "stat=size&where=op:write&from=2"),
    ("series-latency-by-file-write.json", "/api/v1/runs/0/series", "stat=latency&by=file&where=op:write"),
    (
        "series-offset-by-worker-other.json",
        "/api/v1/runs/0/series",
        "stat=offset&by=worker&where=worker:(other);worker:2",
    ),
    ("series-probe.json", "/api/v1/runs/0/series", "stat=probe"),
    ("series-probe-by-probe.json", "/api/v1/runs/0/series", "stat=probe&by=probe&to=2"),
    ("series-empty.json", "/api/v1/runs/0/series", "stat=ops&where=op:fsync"),
    ("heatmap-latency-by-op.json", "/api/v1/runs/0/heatmap", "stat=latency&by=op"),
    ("heatmap-offset.json", "/api/v1/runs/0/heatmap", "stat=offset&from=1&to=3"),
    ("heatmap-service-time-by-host.json", "/api/v1/runs/0/heatmap", "stat=service_time&by=host&where=op:write"),
    ("heatmap-empty.json", "/api/v1/runs/0/heatmap", "stat=latency&by=op&where=op:fsync"),
    ("heatmap-latency-by-worker.json", "/api/v1/runs/0/heatmap", "stat=latency&by=worker&from=1&to=2"),
];

/// Packed heat maps: the same fields and values (compared as JSON values, not texts).
const PACKED: &[(&str, &str, &str)] = &[
    ("heatmap-latency-by-op.packed.json", "/api/v1/runs/0/heatmap", "stat=latency&by=op&encoding=packed"),
    ("heatmap-size.packed.json", "/api/v1/runs/0/heatmap", "stat=size&by=host&encoding=packed"),
];

#[test]
fn answers_are_byte_for_byte_what_clients_have_read() {
    let dir = tempfile::tempdir().unwrap();
    let api = Api::new(&[write_results(dir.path())]);
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/answers");
    let write = std::env::var_os("IOSCOPE_WRITE_ANSWERS").is_some();
    let mut changed = Vec::new();
    for (file, path, query) in ANSWERS.iter().chain(PACKED) {
        let answer = api.get(path, query);
        assert_eq!(answer.status, 200, "{path}?{query}: {}", answer.body);
        let target = out.join(file);
        if write {
            std::fs::create_dir_all(&out).unwrap();
            std::fs::write(&target, format!("{}\n", answer.body)).unwrap();
            continue;
        }
        let kept = std::fs::read_to_string(&target).unwrap_or_default();
        let kept = kept.strip_suffix('\n').unwrap_or(&kept);
        let same = if PACKED.iter().any(|p| p.0 == *file) {
            serde_json::from_str::<serde_json::Value>(kept).ok() == Some(answer.json())
        } else {
            kept == answer.body
        };
        if !same {
            changed.push(format!("{path}?{query}\n  was: {kept}\n  now: {}", answer.body));
        }
    }
    assert!(changed.is_empty(), "answers changed:\n{}", changed.join("\n"));
}

/// The compare answer of the small results file (run 0) and the four-host run (run 1):
/// byte for byte, with the temporary directory written as `DIR`.
#[test]
fn the_compare_answer_is_byte_for_byte_what_clients_have_read() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts.ioscope");
    crate::hosts_fixture::write_hosts_results(&hosts).unwrap();
    let api = Api::new(&[write_results(dir.path()), hosts]);
    let answer = api.get("/api/v1/runs/0/compare", "with=1");
    assert_eq!(answer.status, 200, "{}", answer.body);
    let body = answer.body.replace(&dir.path().display().to_string(), "DIR");
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/answers/compare-0-with-1.json");
    if std::env::var_os("IOSCOPE_WRITE_ANSWERS").is_some() {
        std::fs::write(&target, format!("{body}\n")).unwrap();
        return;
    }
    let kept = std::fs::read_to_string(&target).unwrap_or_default();
    assert_eq!(kept.strip_suffix('\n').unwrap_or(&kept), body, "the compare answer changed");
    // What a client needs to know, besides the bytes.
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!((json["a"].as_str(), json["b"].as_str()), (Some("0"), Some("1")));
    assert_eq!(json["comparison"]["schema"], "ioscope.compare/1");
    assert_eq!(json["comparison"]["method"], "single");
    // Asked wrongly: a 400 or 404 saying what is expected.
    let missing = api.get("/api/v1/runs/0/compare", "");
    assert_eq!(missing.status, 400);
    assert!(missing.json()["error"].as_str().unwrap().contains("with=RUN_ID"), "{}", missing.body);
    let unknown = api.get("/api/v1/runs/0/compare", "with=7");
    assert_eq!(unknown.status, 404);
    assert!(unknown.json()["error"].as_str().unwrap().contains("expected a run id from 0 to 1"), "{}", unknown.body);
    assert_eq!(api.get("/api/v1/runs/9/compare", "with=0").status, 404);
}
