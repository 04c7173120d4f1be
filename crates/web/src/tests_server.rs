//! The results file with target series (server_fixture.rs) through the API and the
//! report: what the server worksheet draws (client latency, process CPU, disk IOPS, block
//! latency) answers on the client's seconds with the units the UI formats.

use crate::api::Api;
use crate::server_fixture::{write_server_results, DISK, PROCESS, SATURATED_FROM, SECONDS, SERVER};
use serde_json::Value;

fn api() -> (tempfile::TempDir, std::path::PathBuf, Api) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.ioscope");
    write_server_results(&path).unwrap();
    let api = Api::new(std::slice::from_ref(&path));
    (dir, path, api)
}

fn get(api: &Api, path: &str, query: &str) -> Value {
    let a = api.get(path, query);
    assert_eq!(a.status, 200, "{path}?{query}: {}", a.body);
    a.json()
}

fn values(v: &Value, key: &str) -> Vec<f64> {
    let s =
        v["series"].as_array().unwrap().iter().find(|s| s["key"] == key).unwrap_or_else(|| panic!("no {key} in {v}"));
    s["values"].as_array().unwrap().iter().map(|x| x.as_f64().expect("a value every second")).collect()
}

#[test]
fn the_server_worksheet_statistics_answer_on_the_client_seconds_with_their_units() {
    let (_d, _p, api) = api();
    let client = get(&api, "/api/v1/runs/0/series", "stat=latency");
    let cpu = get(&api, "/api/v1/runs/0/series", "stat=process_cpu&by=process");
    let iops = get(&api, "/api/v1/runs/0/series", "stat=disk_ops&by=disk");
    let heat = get(&api, "/api/v1/runs/0/heatmap", "stat=block_latency");
    let seconds: Vec<Value> = (0..SECONDS).map(Value::from).collect();
    for answer in [&client, &cpu, &iops, &heat] {
        assert_eq!(answer["seconds"].as_array().unwrap(), &seconds, "{}", answer["stat"]);
    }
    assert_eq!((cpu["unit"].as_str(), iops["unit"].as_str()), (Some("percent"), Some("ops/s")));
    // ganesha.nfsd used about half a CPU (47%..), less once it waits on the disk.
    let p = values(&cpu, PROCESS);
    assert!(p[0] > 40.0 && p[0] < 60.0 && p[SATURATED_FROM as usize] < p[0], "{p:?}");
    let d = values(&iops, DISK);
    assert!(d.iter().all(|&v| v > 300.0), "{d:?}");
    // The block latency heat map has I/O in every second, slower in the disk-bound phase.
    let lat = get(&api, "/api/v1/runs/0/series", "stat=block_latency");
    let p50: Vec<u64> = lat["series"][0]["p50"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
    assert!(p50[SATURATED_FROM as usize] > 5 * p50[0], "{p50:?}");
    // The run's statistic list says which side each one describes and its breakdowns.
    let run = get(&api, "/api/v1/runs/0", "");
    let entry = |name: &str| run["stats"].as_array().unwrap().iter().find(|s| s["name"] == name).cloned().unwrap();
    assert_eq!(entry("latency")["side"], "client");
    assert_eq!(entry("disk_ops")["side"], "target");
    assert_eq!(entry("disk_ops")["dimensions"], serde_json::json!(["host", "disk", "op"]));
    assert_eq!(entry("page_cache")["kind"], "gauge");
    assert_eq!(run["dimensions"]["host"], serde_json::json!(["loadgen", SERVER]));
}

#[test]
fn the_report_of_a_run_with_target_series_embeds_the_server_worksheet_charts() {
    let (_d, path, _api) = api();
    let html = crate::report::render(&path).unwrap();
    for q in [
        "/api/v1/runs/0/series?stat=process_cpu&by=process",
        "/api/v1/runs/0/series?stat=disk_ops&by=disk",
        "/api/v1/runs/0/heatmap?stat=block_latency&encoding=packed",
        "/api/v1/runs/0/heatmap?stat=latency&encoding=packed",
        "/api/v1/runs/0/series?stat=cpu&by=mode",
        "/api/v1/runs/0/series?stat=page_cache",
    ] {
        assert!(html.contains(&format!("\"{q}\"")), "the report embeds {q}");
    }
}
