//! The four-host results file (hosts_fixture.rs) through the API: the host breakdown adds
//! up to the whole, the drill host -> op -> file answers, and the summary's host rows,
//! statuses and notes name the slow host.

use crate::api::Api;
use crate::hosts_fixture::{write_hosts_results, HOSTS, SECONDS, SLOW};
use serde_json::Value;

fn api() -> (tempfile::TempDir, Api) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosts.ioscope");
    write_hosts_results(&path).unwrap();
    (dir, Api::new(&[path]))
}

fn get(api: &Api, path: &str, query: &str) -> Value {
    let a = api.get(path, query);
    assert_eq!(a.status, 200, "{path}?{query}: {}", a.body);
    a.json()
}

fn values(v: &Value, key: &str) -> Vec<f64> {
    let s =
        v["series"].as_array().unwrap().iter().find(|s| s["key"] == key).unwrap_or_else(|| panic!("no {key} in {v}"));
    s["values"].as_array().unwrap().iter().map(|x| x.as_f64().expect("every host has every second")).collect()
}

#[test]
fn every_counter_by_host_sums_exactly_to_the_whole_in_every_second() {
    let (_d, api) = api();
    for stat in ["ops", "bytes"] {
        let whole = values(&get(&api, "/api/v1/runs/0/series", &format!("stat={stat}")), "all");
        let by = get(&api, "/api/v1/runs/0/series", &format!("stat={stat}&by=host"));
        let keys: Vec<&str> = by["series"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
        assert_eq!(keys.len(), HOSTS.len(), "{keys:?}");
        assert_eq!(whole.len(), SECONDS as usize);
        for (i, w) in whole.iter().enumerate() {
            let sum: f64 = HOSTS.iter().map(|h| values(&by, h)[i]).sum();
            assert_eq!(sum, *w, "{stat}, second {i}");
        }
    }
}

#[test]
fn drilling_host_then_op_then_file_answers_the_files_of_that_hosts_operation() {
    let (_d, api) = api();
    let whole = get(&api, "/api/v1/runs/0/series", &format!("stat=ops&where=host:{SLOW};op:read"));
    let by_file = get(&api, "/api/v1/runs/0/series", &format!("stat=ops&by=file&where=host:{SLOW};op:read"));
    let files: Vec<&str> = by_file["series"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
    assert_eq!(files, ["f0", "f1", "f2", "f3"]);
    for (i, w) in values(&whole, "all").iter().enumerate() {
        assert_eq!(files.iter().map(|f| values(&by_file, f)[i]).sum::<f64>(), *w, "second {i}");
    }
    // The slow host's reads take five times as long as another's, file by file.
    let lat = |host: &str| {
        let v = get(&api, "/api/v1/runs/0/series", &format!("stat=latency&by=file&where=host:{host};op:read"));
        v["series"][0]["p50"][0].as_f64().unwrap()
    };
    assert!(lat(SLOW) > 4.0 * lat("h1"), "{} vs {}", lat(SLOW), lat("h1"));
}

#[test]
fn the_summary_of_four_hosts_has_their_rows_statuses_and_names_the_slow_one() {
    let (_d, api) = api();
    let run = get(&api, "/api/v1/runs/0", "");
    let s = &run["summary"];
    let hosts = s["hosts"].as_object().unwrap();
    assert_eq!(hosts.keys().map(String::as_str).collect::<Vec<_>>(), HOSTS);
    let sum: u64 = hosts.values().map(|h| h["ops"].as_u64().unwrap()).sum();
    assert_eq!(sum, s["total"]["ops"].as_u64().unwrap());
    assert_eq!(hosts["h2"]["agent"]["status"], "completed");
    assert_eq!(hosts["h4"]["agent"]["clock_offset_ns"], 1_234_567);
    let notes: Vec<&str> = s["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    let slow: Vec<&&str> = notes.iter().filter(|n| n.contains("differs from the other hosts")).collect();
    assert_eq!(slow.len(), 1, "{notes:#?}");
    assert!(slow[0].starts_with(&format!("host {SLOW} differs")), "{}", slow[0]);
    // The file's plan is not readable: rates per host, not per thread.
    assert!(slow[0].contains(" MB/s against the median host's") && !slow[0].contains("per thread"), "{}", slow[0]);
    assert!(slow[0].contains("latency p50"), "{}", slow[0]);
    assert!(notes.iter().any(|n| n.starts_with("host h2's clock offset is known to ±2.5 ms")), "{notes:#?}");
}
