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
