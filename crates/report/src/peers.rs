//! Members of a group that differ from their peers beyond noise (`imbalance`): hosts of
//! a run, one host's worker threads, the files of a flat working set.

use crate::format;
use crate::hosts::HostSeconds;
use crate::stats::{mean_se, median, round2};
use crate::verdict::{Verdict, VerdictId};

/// A host's throughput per thread is named when it differs from the median host's by more
/// than this share...
const HOST_THROUGHPUT_SHARE: f64 = 0.2;
/// ...and by more than this many standard errors of its own per-second values.
const HOST_NOISE_SE: f64 = 3.0;
/// A host's latency p50 or p99 is named at this many times the median host's...
const HOST_LATENCY_FACTOR: f64 = 1.5;
/// ...when at least this many of its transfers (and of the median host's) lie beyond the
/// percentile: fewer, and a percentile is one unlucky I/O.
const HOST_LATENCY_TAIL: u64 = 20;
/// Hosts are compared over at least this many seconds that all of them ran.
const HOST_MIN_SECONDS: usize = 3;

/// A host that differs from the others beyond noise, in throughput per thread or in
/// latency (the seeds' one client behind a bad cable), over the seconds all hosts ran.
/// Needs three hosts: with two there is no majority to tell which one is odd.
/// `per_thread`: the rates are per thread (else per host: the plans were not readable).
pub(crate) fn host_outliers(hosts: &[HostSeconds], bytes: bool, per_thread: bool) -> Vec<Verdict> {
    outliers(&HOSTS, hosts, bytes, per_thread)
}

/// What is compared with its peers, in words.
pub(crate) struct Peers {
    /// "host", "worker thread", "file".
    pub one: &'static str,
    pub many: &'static str,
    /// The evidence key naming the odd one.
    pub key: &'static str,
    /// What such a difference usually is.
    pub advice: &'static str,
}

const HOSTS: Peers = Peers {
    one: "host",
    many: "hosts",
    key: "host",
    advice:
        "a slower link, mount or CPU on one client looks like this: compare its system configuration with the others'",
};

/// Members of a group (hosts, one host's worker threads, files) that differ from the
/// others beyond noise, in throughput (per thread when `per_thread`) or latency, over the
/// seconds all of them ran. Needs three: with two there is no majority to tell which one
/// is odd.
pub(crate) fn outliers(peers: &Peers, hosts: &[HostSeconds], bytes: bool, per_thread: bool) -> Vec<Verdict> {
    let n_seconds = hosts.iter().map(|h| h.per_thread.len()).min().unwrap_or(0);
    if hosts.len() < 3 || n_seconds < HOST_MIN_SECONDS {
        return Vec::new();
    }
    let unit = |v: f64| {
        if bytes {
            // Two decimals, more below 0.1 MB/s (a standard error is often that small).
            let mb = v / 1e6;
            format!("{} MB/s", format::float(mb, if mb.abs() >= 0.1 { 2 } else { 4 }))
        } else {
            format!("{} IOPS", format::iops(v))
        }
    };
    let means: Vec<f64> = hosts.iter().map(|h| mean_se(&h.per_thread).0).collect();
    let median_rate = median(&means).unwrap_or(0.0);
    let pct = |h: &HostSeconds, q: f64| h.latency.quantile(q).map(|v| v as f64);
    let median_of = |q: f64| median(&hosts.iter().filter_map(|h| pct(h, q)).collect::<Vec<_>>());
    let (median_p50, median_p99) = (median_of(0.5), median_of(0.99));
    // Enough transfers beyond a percentile to trust it (the median host's count too).
    let counts: Vec<f64> = hosts.iter().map(|h| h.latency.count() as f64).collect();
    let median_count = median(&counts).unwrap_or(0.0);
    let trusted = |count: u64, q: f64| {
        let tail = |c: f64| c * (1.0 - q);
        tail(count as f64) >= HOST_LATENCY_TAIL as f64 && tail(median_count) >= HOST_LATENCY_TAIL as f64
    };

    let mut out = Vec::new();
    for h in hosts {
        let mut why = Vec::new();
        let mut evidence = serde_json::Map::new();
        let (mean, se) = mean_se(&h.per_thread);
        let diff = mean - median_rate;
        if median_rate > 0.0 && diff.abs() > HOST_THROUGHPUT_SHARE * median_rate && diff.abs() > HOST_NOISE_SE * se {
            let key = if bytes { "bytes_per_sec" } else { "iops" };
            let per = if per_thread { "_per_thread" } else { "" };
            evidence.insert(format!("{key}{per}"), round2(mean).into());
            evidence.insert(format!("median_{key}{per}"), round2(median_rate).into());
            evidence.insert(format!("{key}{per}_standard_error"), round2(se).into());
            evidence.insert("difference_pct".into(), round2(diff / median_rate * 100.0).into());
            why.push(format!(
                "{}{} against the median {}'s {} ({:+.0}%; the standard error of its seconds is ±{})",
                unit(mean),
                if per_thread { " per thread" } else { "" },
                peers.one,
                unit(median_rate),
                diff / median_rate * 100.0,
                unit(se)
            ));
        }
        let count = h.latency.count();
        let mut lat = Vec::new();
        for (name, q, m) in [("p50", 0.5, median_p50), ("p99", 0.99, median_p99)] {
            let (Some(v), Some(m)) = (pct(h, q), m) else { continue };
            if m > 0.0 && v > HOST_LATENCY_FACTOR * m && trusted(count, q) {
                evidence.insert(format!("latency_{name}_ns"), (v as u64).into());
                evidence.insert(format!("median_latency_{name}_ns"), (m as u64).into());
                lat.push(format!(
                    "{name} {} against the median {}'s {} ({:.1}x)",
                    format::ns(v as u64),
                    peers.one,
                    format::ns(m as u64),
                    v / m
                ));
            }
        }
        if !lat.is_empty() {
            why.push(format!("latency {}", lat.join(", ")));
        }
        if !why.is_empty() {
            let mut v = Verdict::new(
                VerdictId::Imbalance,
                format!(
                    "{} {} differs from the other {} beyond noise over the {n_seconds} s they all ran: {}; {}",
                    peers.one,
                    h.host,
                    peers.many,
                    why.join("; "),
                    peers.advice
                ),
            )
            .with(peers.key, h.host.as_str())
            .with(&format!("{}s", peers.key), hosts.len())
            .with("seconds", n_seconds);
            v.evidence.extend(evidence);
            out.push(v);
        }
    }
    out
}
