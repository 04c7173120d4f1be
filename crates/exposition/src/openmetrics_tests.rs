use super::*;
use ioscope_metrics::histogram::bucket_index;
use ioscope_metrics::{Op, OpInterval, TargetSeries};
use std::collections::{BTreeSet, HashMap};

/// Label pairs as read, in order.
type Pairs = Vec<(String, String)>;

/// One sample line: its name, labels (in order) and value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

/// A family: its TYPE, UNIT and samples.
#[derive(Debug, Default)]
struct Family {
    kind: String,
    unit: Option<String>,
    samples: Vec<Sample>,
}

fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// `{a="x",b="y"} rest` -> labels and rest; label values unescaped, strictly.
fn parse_labels(s: &str) -> Result<(Pairs, &str), String> {
    let Some(mut rest) = s.strip_prefix('{') else { return Ok((Vec::new(), s)) };
    let mut labels = Vec::new();
    loop {
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((labels, r));
        }
        if !labels.is_empty() {
            rest = rest.strip_prefix(',').ok_or(format!("expected , in {s:?}"))?;
        }
        let eq = rest.find('=').ok_or(format!("no = in {s:?}"))?;
        let name = &rest[..eq];
        if !valid_name(name) {
            return Err(format!("label name {name:?}"));
        }
        rest = rest[eq + 1..].strip_prefix('"').ok_or(format!("unquoted value in {s:?}"))?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err(format!("unterminated value in {s:?}")),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => return Err(format!("bad escape {other:?} in {s:?}")),
                },
                Some((_, '\n')) => return Err(format!("raw line feed in {s:?}")),
                Some((_, c)) => value.push(c),
            }
        };
        rest = &rest[end + 1..];
        if labels.iter().any(|(n, _): &(String, String)| n == name) {
            return Err(format!("label {name} twice in {s:?}"));
        }
        labels.push((name.to_string(), value));
    }
}

/// A strict reader of what [`Exposition::render`] may write (the subset of OpenMetrics it
/// uses): every sample in a family declared just before it by TYPE, UNIT a suffix of the
/// name, no family twice, `# EOF` once and last.
fn parse(text: &str) -> Result<BTreeMap<String, Family>, String> {
    let body = text.strip_suffix("# EOF\n").ok_or("no `# EOF` line at the end")?;
    if body.contains("# EOF") {
        return Err("# EOF before the end".into());
    }
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in body.lines() {
        if let Some(meta) = line.strip_prefix("# ") {
            let mut parts = meta.splitn(3, ' ');
            let (what, name, rest) = (parts.next(), parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            match what {
                Some("TYPE") => {
                    if families.contains_key(name) || !valid_name(name) {
                        return Err(format!("family {name:?} declared twice or badly named"));
                    }
                    if !["counter", "gauge", "histogram"].contains(&rest) {
                        return Err(format!("type {rest:?}"));
                    }
                    families.insert(name.to_string(), Family { kind: rest.to_string(), ..Family::default() });
                    current = Some(name.to_string());
                }
                Some("UNIT") | Some("HELP") => {
                    let fam = families.get_mut(name).filter(|_| current.as_deref() == Some(name));
                    let fam = fam.ok_or(format!("{line:?} outside its family"))?;
                    if !fam.samples.is_empty() {
                        return Err(format!("{line:?} after samples"));
                    }
                    if what == Some("UNIT") {
                        if !name.ends_with(&format!("_{rest}")) {
                            return Err(format!("unit {rest} is not a suffix of {name}"));
                        }
                        fam.unit = Some(rest.to_string());
                    }
                }
                _ => return Err(format!("unknown line {line:?}")),
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).ok_or(format!("sample without value {line:?}"))?;
        let name = &line[..name_end];
        let (labels, rest) = parse_labels(&line[name_end..])?;
        let value_text = rest.strip_prefix(' ').ok_or(format!("no space before value in {line:?}"))?;
        let value: f64 = value_text.parse().map_err(|_| format!("value {value_text:?}"))?;
        if !value.is_finite() || value < 0.0 {
            return Err(format!("value {value} in {line:?}"));
        }
        let fam_name = current.as_ref().ok_or(format!("sample before any TYPE: {line:?}"))?;
        let fam = families.get_mut(fam_name).expect("current family exists");
        let suffixes: &[&str] = match fam.kind.as_str() {
            "counter" => &["_total"],
            "gauge" => &[""],
            _ => &["_bucket", "_count", "_sum"],
        };
        if !suffixes.iter().any(|s| name == format!("{fam_name}{s}")) {
            return Err(format!("sample {name} in family {fam_name} ({})", fam.kind));
        }
        fam.samples.push(Sample { name: name.to_string(), labels, value });
    }
    for (name, fam) in &families {
        if fam.unit.is_none() {
            return Err(format!("{name} has no UNIT"));
        }
        let mut seen = BTreeSet::new();
        for s in &fam.samples {
            if !seen.insert((s.name.clone(), s.labels.clone())) {
                return Err(format!("{name}: sample {} {:?} twice", s.name, s.labels));
            }
        }
        if fam.kind == "histogram" {
            check_histogram(name, fam)?;
        }
    }
    Ok(families)
}

/// Per label set: `le` rising to `+Inf`, counts cumulative, `+Inf` equal to `_count`, a `_sum`.
fn check_histogram(name: &str, fam: &Family) -> Result<(), String> {
    let mut buckets: HashMap<Pairs, Vec<(f64, f64)>> = HashMap::new();
    let mut counts = HashMap::new();
    let mut sums = HashMap::new();
    for s in &fam.samples {
        let mut labels = s.labels.clone();
        if s.name.ends_with("_bucket") {
            let (last, _) = labels.pop().ok_or(format!("{name}: a bucket without le"))?;
            let le = &s.labels.last().expect("popped").1;
            if last != "le" {
                return Err(format!("{name}: le is not the last label"));
            }
            let le = if le == "+Inf" { f64::INFINITY } else { le.parse().map_err(|_| format!("le {le:?}"))? };
            buckets.entry(labels).or_default().push((le, s.value));
        } else if s.name.ends_with("_count") {
            counts.insert(labels, s.value);
        } else {
            sums.insert(labels, s.value);
        }
    }
    for (labels, b) in &buckets {
        if b.windows(2).any(|w| w[0].0 >= w[1].0 || w[0].1 > w[1].1) {
            return Err(format!("{name} {labels:?}: le not rising or counts not cumulative"));
        }
        let last = b.last().expect("a bucket");
        if last.0 != f64::INFINITY || Some(&last.1) != counts.get(labels) || !sums.contains_key(labels) {
            return Err(format!("{name} {labels:?}: no +Inf bucket equal to _count, or no _sum"));
        }
    }
    if buckets.len() != counts.len() || counts.len() != sums.len() {
        return Err(format!("{name}: series without buckets, count or sum"));
    }
    Ok(())
}

fn hist(values: &[u64]) -> Histogram {
    let mut h = Histogram::new();
    for v in values {
        h.record(*v);
    }
    h
}

fn second(n: u64, series: Vec<TargetSeries>) -> TargetSecond {
    TargetSecond { host: "server".into(), second: n, interval_ns: 1_000_000_000, series }
}

fn sample<'a>(families: &'a BTreeMap<String, Family>, family: &str, name: &str, labels: &[(&str, &str)]) -> &'a Sample {
    let want: Vec<(String, String)> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    families[family]
        .samples
        .iter()
        .find(|s| s.name == name && s.labels == want)
        .unwrap_or_else(|| panic!("no {name}{want:?} in {:?}", families[family].samples))
}

/// Two seconds of everything a probe and a run record.
fn busy_exposition() -> Exposition {
    let mut e = Exposition::new();
    for n in 0..2 {
        e.add_target(&second(
            n,
            vec![
                TargetSeries::new(
                    StatId::CpuTime,
                    &[(Dim::Cpu, "cpu0"), (Dim::Mode, "user")],
                    TargetValue::Count(1_500_000_000),
                ),
                TargetSeries::new(
                    StatId::DiskOps,
                    &[(Dim::Op, "write"), (Dim::Disk, "loop3")],
                    TargetValue::Count(100),
                ),
                TargetSeries::new(StatId::MemDirty, &[], TargetValue::Gauge(4096 * (n + 1))),
                TargetSeries::new(
                    StatId::ProcessCpu,
                    &[(Dim::Process, "odd \"name\\\nx"), (Dim::Mode, "system")],
                    TargetValue::Count(10_000_000),
                ),
                TargetSeries::new(
                    StatId::BlockLatency,
                    &[(Dim::Disk, "loop3"), (Dim::Op, "write")],
                    TargetValue::Dist(hist(&[1023, 1024, 50_000, 2_000_000, u64::MAX])),
                ),
                TargetSeries::new(
                    StatId::BlockSize,
                    &[(Dim::Disk, "loop3"), (Dim::Op, "write")],
                    TargetValue::Dist(hist(&[4096, 4096, 131072])),
                ),
            ],
        ));
        let mut data = OpInterval::empty();
        data.counts.ops = 10;
        data.counts.bytes = 40960;
        data.latency_ns = hist(&[100_000; 10]);
        data.size_bytes = hist(&[4096; 10]);
        e.add_client("client1", &[OpSeries { workload: "db".into(), op: Op::Read, data }]);
    }
    e
}

#[test]
fn the_text_is_strict_openmetrics_every_family_typed_buckets_cumulative_and_eof_last() {
    let text = busy_exposition().render();
    let families = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    for name in [
        "ioscope_cpu_time_seconds",
        "ioscope_disk_ops",
        "ioscope_mem_dirty_bytes",
        "ioscope_process_cpu_seconds",
        "ioscope_block_latency_seconds",
        "ioscope_block_size_bytes",
        "ioscope_io_ops",
        "ioscope_io_bytes",
        "ioscope_io_errors",
        "ioscope_io_latency_seconds",
        "ioscope_io_size_bytes",
    ] {
        assert!(families.contains_key(name), "{name} missing:\n{text}");
    }
    assert_eq!(families["ioscope_block_latency_seconds"].kind, "histogram");
    assert_eq!(families["ioscope_mem_dirty_bytes"].kind, "gauge");
    assert_eq!(families["ioscope_cpu_time_seconds"].unit.as_deref(), Some("seconds"));
    // An empty exposition is valid too (a scrape before the first second).
    parse(&Exposition::new().render()).unwrap();
}

#[test]
fn counters_add_up_the_seconds_in_the_exposed_unit_and_gauges_keep_the_last_level() {
    let families = parse(&busy_exposition().render()).unwrap();
    let cpu = [("host", "server"), ("cpu", "cpu0"), ("mode", "user")];
    assert_eq!(sample(&families, "ioscope_cpu_time_seconds", "ioscope_cpu_time_seconds_total", &cpu).value, 3.0);
    // Labels in the statistic's order (disk, op), whatever order the series had.
    let disk = [("host", "server"), ("disk", "loop3"), ("op", "write")];
    assert_eq!(sample(&families, "ioscope_disk_ops", "ioscope_disk_ops_total", &disk).value, 200.0);
    assert_eq!(
        sample(&families, "ioscope_mem_dirty_bytes", "ioscope_mem_dirty_bytes", &[("host", "server")]).value,
        8192.0
    );
    let read = [("host", "client1"), ("op", "read"), ("workload", "db")];
    assert_eq!(sample(&families, "ioscope_io_ops", "ioscope_io_ops_total", &read).value, 20.0);
    assert_eq!(sample(&families, "ioscope_io_latency_seconds", "ioscope_io_latency_seconds_sum", &read).value, 0.002);
    assert_eq!(sample(&families, "ioscope_seconds", "ioscope_seconds_total", &[]).value, 4.0);
}

#[test]
fn label_values_are_escaped_as_the_spec_says() {
    let text = busy_exposition().render();
    assert!(text.contains(r#"process="odd \"name\\\nx""#), "{text}");
    let families = parse(&text).unwrap();
    let labels = [("host", "server"), ("process", "odd \"name\\\nx"), ("mode", "system")];
    let s = sample(&families, "ioscope_process_cpu_seconds", "ioscope_process_cpu_seconds_total", &labels);
    assert_eq!(s.value, 0.02);
}

#[test]
fn histogram_bounds_are_ends_of_ioscope_buckets_so_cumulative_counts_are_exact() {
    for b in NS_BOUNDS.iter().chain(&BYTES_BOUNDS) {
        assert_eq!(bucket_range(bucket_index(*b)).1, *b, "{b} ends its bucket");
        assert_eq!(bucket_range(bucket_index(b + 1)).0, b + 1, "{} starts the next", b + 1);
    }
    assert_eq!(NS_BOUNDS[0], 1023);
    assert_eq!(NS_BOUNDS[NS_BOUNDS.len() - 1], (1 << 36) - 1, "about 68.7 s");
    assert_eq!((BYTES_BOUNDS[0], BYTES_BOUNDS[BYTES_BOUNDS.len() - 1]), (511, (1 << 40) - 1));
    // Values on both sides of each bound: each counted exactly where it belongs.
    let families = parse(&busy_exposition().render()).unwrap();
    let le = |family: &str, bound: &str| {
        let labels = [("host", "server"), ("disk", "loop3"), ("op", "write"), ("le", bound)];
        sample(&families, family, &format!("{family}_bucket"), &labels).value
    };
    let lat = "ioscope_block_latency_seconds";
    assert_eq!(le(lat, "0.000001023"), 2.0, "1023 ns, twice");
    assert_eq!(le(lat, "0.000002047"), 4.0, "and 1024 ns");
    assert_eq!(le(lat, "0.000065535"), 6.0, "and 50 µs");
    assert_eq!(le(lat, "68.719476735"), 8.0, "and 2 ms, not u64::MAX ns");
    assert_eq!(le(lat, "+Inf"), 10.0);
    let size = "ioscope_block_size_bytes";
    assert_eq!(le(size, "4095.0"), 0.0, "a 4 KiB I/O is not below 4096");
    assert_eq!(le(size, "8191.0"), 4.0);
    assert_eq!(le(size, "262143.0"), 6.0);
}

#[test]
fn every_statistic_has_one_valid_family_name_and_every_distribution_fixed_buckets() {
    let mut names = BTreeSet::new();
    for st in stat::all().filter(|s| s.kind != Kind::Event) {
        let name = family_name(st);
        assert!(valid_name(&name) && names.insert(name.clone()), "{name}");
        if st.kind == Kind::Distribution {
            assert!(!unit(st.unit).bounds.is_empty(), "{}: no bucket bounds for unit {}", st.stored, st.unit);
        }
    }
    assert!(names.contains("ioscope_disk_ops") && names.contains("ioscope_cpu_time_seconds"), "{names:?}");
}

#[test]
fn totals_past_what_a_float_holds_exactly_are_written_exactly() {
    assert_eq!(scaled(u128::from(u64::MAX) * 3, 1_000_000_000), "55340232221.128654845");
    assert_eq!(scaled(1_500_000_000, 1_000_000_000), "1.5");
    assert_eq!(scaled(2_000_000_000, 1_000_000_000), "2");
    assert_eq!(le_text(1023, 1_000_000_000), "0.000001023");
    assert_eq!(le_text(511, 1), "511.0");
}

#[test]
fn client_series_have_only_the_statistics_their_operation_has() {
    let mut e = Exposition::new();
    let mut data = OpInterval::empty();
    data.counts.ops = 3;
    data.latency_ns = hist(&[2_000_000; 3]);
    e.add_client("", &[OpSeries { workload: String::new(), op: Op::Fsync, data }]);
    let text = e.render();
    let families = parse(&text).unwrap();
    // No host and no workload label when there is none; fsync has no size or offset, and
    // nothing was skipped.
    assert_eq!(sample(&families, "ioscope_io_ops", "ioscope_io_ops_total", &[("op", "fsync")]).value, 3.0);
    assert_eq!(
        sample(&families, "ioscope_io_latency_seconds", "ioscope_io_latency_seconds_sum", &[("op", "fsync")]).value,
        0.006
    );
    for absent in ["ioscope_io_size_bytes", "ioscope_io_offset_bytes", "ioscope_io_skipped_ops"] {
        assert!(!families.contains_key(absent), "{absent}:\n{text}");
    }
}
