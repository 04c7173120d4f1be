//! OpenMetrics exposition scraped by a real Prometheus (the Debian `prometheus` package,
//! installed by scripts/test.sh): `ioscope probe --listen` and `ioscope run --metrics`
//! serve, Prometheus scrapes them every second, and its HTTP API answers a rate and a
//! histogram quantile that must be finite and plausible. Also: the token rule of both
//! flags (no token beyond loopback: exit 2 naming the flag), and the Host check of both
//! without a token (421 for a name that is not loopback's: DNS rebinding).

mod common;
mod skip;

use common::run::ioscope;
use serde_json::Value;
use skip::skip;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A child process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts an ioscope command that serves metrics and returns it with the address it says
/// it serves at (it is given port 0: no race for a free port).
fn serving(cmd: &mut Command) -> (Killed, SocketAddr) {
    let mut child = Killed(cmd.stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap());
    let stderr = child.0.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("metrics (OpenMetrics): http://") {
                let _ = tx.send(Ok(rest.trim_end_matches("/metrics").to_string()));
            } else {
                let _ = tx.send(Err(line));
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut said = Vec::new();
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Ok(addr)) => return (child, addr.parse().unwrap()),
            Ok(Err(line)) => said.push(line),
            Err(_) => panic!("no metrics address from {cmd:?}; it said: {said:?}"),
        }
    }
}

/// A port nobody listens on now (Prometheus takes its address as a flag).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// GET over HTTP/1.0 (one answer, no chunking): status and body.
fn http_get(addr: SocketAddr, path_and_query: &str) -> Option<(u16, String)> {
    let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(conn, "GET {path_and_query} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut answer = String::new();
    conn.read_to_string(&mut answer).ok()?;
    let status = answer.split(' ').nth(1)?.parse().ok()?;
    let body = answer.split_once("\r\n\r\n")?.1.to_string();
    Some((status, body))
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query through Prometheus' HTTP API: the values of its result vector.
fn query(prometheus: SocketAddr, promql: &str) -> Vec<f64> {
    let Some((200, body)) = http_get(prometheus, &format!("/api/v1/query?query={}", percent_encode(promql))) else {
        return Vec::new();
    };
    let answer: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    assert_eq!(answer["status"], "success", "{promql}: {body}");
    let result = answer["data"]["result"].as_array().cloned().unwrap_or_default();
    result.iter().filter_map(|r| r["value"][1].as_str()?.parse().ok()).collect()
}

/// Polls a query until it has a value (Prometheus needs two scrapes in the window).
fn first_value(prometheus: SocketAddr, promql: &str) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(40);
    while Instant::now() < deadline {
        if let [v] = query(prometheus, promql)[..] {
            return v;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("Prometheus never answered {promql} with one value");
}

/// CPUs as /proc/stat lists them (`cpu0`, `cpu1`, ...).
fn cpus() -> usize {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    stat.lines().filter(|l| l.strip_prefix("cpu").is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))).count()
}

fn start_prometheus(dir: &Path, targets: &[(&str, SocketAddr)], token_file: &Path) -> (Killed, SocketAddr) {
    let mut config = String::from("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n");
    for (job, addr) in targets {
        config.push_str(&format!(
            "  - job_name: {job}\n    authorization:\n      type: Bearer\n      credentials_file: {}\n    static_configs:\n      - targets: ['{addr}']\n",
            token_file.display()
        ));
    }
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("tsdb").display()))
        .arg(format!("--web.listen-address={addr}"))
        .arg("--log.level=warn")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .unwrap();
    let child = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while http_get(addr, "/-/ready").is_none_or(|(status, _)| status != 200) {
        assert!(
            Instant::now() < deadline,
            "Prometheus not ready: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    (child, addr)
}

#[test]
fn prometheus_scrapes_probe_and_run_metrics_and_answers_a_rate_and_a_histogram_quantile() {
    if Command::new("prometheus").arg("--version").output().is_err() {
        return skip("no prometheus (Debian package `prometheus`) on PATH");
    }
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "prometheus-scrape-token-0123456789\n").unwrap();
    let (_probe, probe_addr) = serving(
        ioscope().args(["probe", "--listen", "127.0.0.1:0", "--duration", "90s"]).arg("--token-file").arg(&token),
    );
    // Disk and CPU work, itself served: its latency histogram is a quantile every build has
    // (the probe's block and syscall latency need the eBPF samplers).
    let (_run, run_addr) = serving(
        ioscope()
            .args(["run", "--metrics", "127.0.0.1:0", "--duration", "60s", "--size", "16m", "--rw", "randrw"])
            .args(["--rate-iops", "5000", "--quiet", "--dir"])
            .arg(dir.path().join("data"))
            .arg("-o")
            .arg(dir.path().join("run.db"))
            .arg("--metrics-token-file")
            .arg(&token),
    );
    let (_prometheus, prometheus) = start_prometheus(dir.path(), &[("probe", probe_addr), ("run", run_addr)], &token);
    // Rates over windows that hold scrapes from end to end (a window still filling is
    // extrapolated from too few: a rate too low).
    let deadline = Instant::now() + Duration::from_secs(40);
    while first_value(prometheus, "min(count_over_time(up[11s]))") < 11.0 {
        assert!(Instant::now() < deadline, "Prometheus did not scrape every second");
        std::thread::sleep(Duration::from_millis(500));
    }
    assert_eq!(query(prometheus, "min(up)"), [1.0], "both targets up (the bearer token accepted)");

    // A rate: CPU time over every CPU and mode is the CPUs' count of seconds per second
    // (at most 100% per CPU), and some of it was not idle. The totals grow a second at a
    // time while Prometheus scrapes at its own phase: the 9 s between a 10 s window's first
    // and last scrape hold 9 seconds, give or take one (±11%) on an idle machine.
    let total = first_value(prometheus, r#"sum(rate(ioscope_cpu_time_seconds_total{job="probe"}[10s]))"#);
    let busy = first_value(prometheus, r#"sum(rate(ioscope_cpu_time_seconds_total{job="probe",mode!="idle"}[10s]))"#);
    let n = cpus() as f64;
    // On a busy machine a probe second can reach the exposition late, so a window may hold
    // one or two seconds fewer: the bounds catch a wrong unit or CPUs counted twice or
    // half, not the timing.
    assert!(total.is_finite() && total > 0.6 * n && total <= 1.25 * n, "CPU seconds per second {total} with {n} CPUs");
    // (Two queries, evaluated a moment apart: on a machine busy on every CPU, busy is
    // all of total, give or take what that moment moved the windows.)
    assert!(busy > 0.0 && busy <= total * 1.01, "busy {busy} of {total}");
    let counted = first_value(prometheus, r#"count(count by (cpu) (ioscope_cpu_time_seconds_total{job="probe"}))"#);
    assert_eq!(counted, n, "one cpu label per CPU of /proc/stat");

    // A histogram quantile: the run's p99 latency, from exact cumulative buckets.
    let rate = first_value(prometheus, r#"sum(rate(ioscope_io_ops_total{job="run"}[10s]))"#);
    assert!(rate > 2000.0 && rate < 5600.0, "{rate} ops/s at --rate-iops 5000 (±11% as above)");
    let p99 = first_value(
        prometheus,
        r#"histogram_quantile(0.99, sum by (le) (rate(ioscope_io_latency_seconds_bucket{job="run"}[5s])))"#,
    );
    assert!(p99.is_finite() && p99 > 0.0 && p99 < 10.0, "p99 latency {p99} s");
    let p50 = first_value(
        prometheus,
        r#"histogram_quantile(0.5, sum by (le) (rate(ioscope_io_latency_seconds_bucket{job="run"}[5s])))"#,
    );
    assert!(p50 > 0.0 && p50 <= p99, "p50 {p50} s, p99 {p99} s");
    eprintln!("Prometheus: CPU {total:.3} s/s ({busy:.3} not idle) on {n} CPUs; run {rate:.0} ops/s, p50 {p50} s, p99 {p99} s");
    // With the eBPF samplers the probe has block latency too: its quantile must hold up.
    if !query(prometheus, r#"ioscope_block_latency_seconds_count{job="probe"}"#).is_empty() {
        let block = first_value(
            prometheus,
            r#"histogram_quantile(0.99, sum by (le) (rate(ioscope_block_latency_seconds_bucket{job="probe"}[5s])))"#,
        );
        assert!(block.is_nan() || (block > 0.0 && block < 10.0), "block p99 {block} s");
    }
}

#[test]
fn metrics_beyond_loopback_without_a_token_exit_2_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = ioscope().args(["probe", "--listen", "0.0.0.0:0", "--duration", "1s"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--listen 0.0.0.0:0") && stderr.contains("--token-file"), "{stderr}");

    let data = dir.path().join("data");
    let results = dir.path().join("run.db");
    let out = ioscope()
        .args(["run", "--metrics", "0.0.0.0:0", "--duration", "1s", "--size", "1m", "--dir"])
        .arg(&data)
        .arg("-o")
        .arg(&results)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--metrics 0.0.0.0:0") && stderr.contains("--metrics-token-file"), "{stderr}");
    assert!(!data.exists() && !results.exists(), "nothing is written before the refusal");

    // A token file that is no token is refused the same way, naming its flag.
    let short = dir.path().join("short");
    std::fs::write(&short, "abc\n").unwrap();
    let out = ioscope().args(["probe", "--listen", "0.0.0.0:0", "--token-file"]).arg(&short).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--token-file") && stderr.contains("only 3 characters"), "{stderr}");
}

/// GET /metrics with these `Host` lines: the status.
fn status_with_hosts(addr: SocketAddr, hosts: &[String]) -> u16 {
    let mut conn = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let hosts: String = hosts.iter().map(|h| format!("Host: {h}\r\n")).collect();
    write!(conn, "GET /metrics HTTP/1.1\r\n{hosts}Connection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{answer}"))
}

#[test]
fn metrics_answers_421_to_a_foreign_or_missing_or_doubled_host() {
    let dir = tempfile::tempdir().unwrap();
    let (_probe, probe_addr) = serving(ioscope().args(["probe", "--listen", "127.0.0.1:0", "--duration", "60s"]));
    let (_run, run_addr) = serving(
        ioscope()
            .args(["run", "--metrics", "127.0.0.1:0", "--duration", "60s", "--size", "1m", "--rate-iops", "100"])
            .args(["--quiet", "--dir"])
            .arg(dir.path().join("data"))
            .arg("-o")
            .arg(dir.path().join("run.db")),
    );
    for (what, addr) in [("probe --listen", probe_addr), ("run --metrics", run_addr)] {
        let port = addr.port();
        for hosts in [
            vec!["evil.example".to_string()],
            vec![format!("evil.example:{port}")],
            vec![],
            vec![addr.to_string(), addr.to_string()],
        ] {
            assert_eq!(status_with_hosts(addr, &hosts), 421, "{what} with Host {hosts:?}");
        }
        for host in [addr.to_string(), format!("localhost:{port}")] {
            assert_eq!(status_with_hosts(addr, std::slice::from_ref(&host)), 200, "{what} with Host {host}");
        }
    }
}
