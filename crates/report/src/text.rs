//! The terminal summary: a header, the workload in one line, an aligned table per
//! operation, how latency was measured, the system, and the verdicts.
//!
//! Every string of a results file is data from whoever wrote it (an agent's system
//! description and host name, error kinds, file names): [`render_text`] escapes each
//! (`ioscope_store::printable`) before it is laid out, so none can break a line, colour
//! or rewrite the terminal, whichever field it sits in.

use crate::{format, Summary};
use ioscope_metrics::StatId;
use ioscope_workload::plan::Plan;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Operations in table order: read and write first, the rest by name.
fn op_order(s: &Summary) -> Vec<&str> {
    let mut names: Vec<&str> = s.ops.keys().map(String::as_str).collect();
    let rank = |n: &str| match n {
        "read" => 0,
        "write" => 1,
        _ => 2,
    };
    names.sort_by(|a, b| rank(a).cmp(&rank(b)).then(a.cmp(b)));
    names
}

/// Renders rows as columns: the first left-aligned, the others right-aligned.
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|x| x.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            let pad = width[c] - cell.chars().count();
            if c == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str("  ");
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// name, IOPS, MB/s, p50, p99, errors.
fn part_row(name: String, p: &crate::PartSummary) -> Vec<String> {
    let lat = |v: Option<u64>| v.map_or("-".to_string(), format::ns);
    vec![
        name,
        format::iops(p.iops),
        format::float(p.bytes_per_sec / 1e6, 1),
        lat(p.latency_p50_ns),
        lat(p.latency_p99_ns),
        format::int(p.errors),
    ]
}

/// One line per operation that failed: "errors: write 12,345 EROFS (49.0%), 3 EIO (0.01%)",
/// each kind with its share of the operation's attempts, most frequent first.
fn error_lines(s: &Summary) -> String {
    let mut out = String::new();
    for name in op_order(s) {
        let o = &s.ops[name];
        if o.errors == 0 {
            continue;
        }
        let attempts = (o.ops + o.errors) as f64;
        let mut kinds: Vec<(&String, &u64)> = o.errors_by_kind.iter().collect();
        kinds.sort_by_key(|(k, n)| (std::cmp::Reverse(**n), *k));
        let mut parts: Vec<String> = kinds
            .iter()
            .map(|(k, n)| format!("{} {k} ({})", format::int(**n), format::pct(**n as f64 / attempts)))
            .collect();
        let named: u64 = o.errors_by_kind.values().sum();
        if named < o.errors {
            let n = o.errors - named;
            parts.push(format!("{} of unrecorded kind ({})", format::int(n), format::pct(n as f64 / attempts)));
        }
        out.push_str(&format!("errors: {name} {}\n", parts.join(", ")));
    }
    out
}

/// A signed duration: "-1.2 ms", "+40.0 µs".
fn signed_ns(v: i64) -> String {
    let sign = if v < 0 { "-" } else { "+" };
    format!("{sign}{}", format::ns(v.unsigned_abs()))
}

/// How each host's agent fared, for runs with agents: status, clock offset ± its
/// uncertainty, round trip, and the second a lost host stopped at (details in the notes).
fn agent_table(s: &Summary) -> String {
    if s.hosts.values().all(|h| h.agent.is_none()) {
        return String::new();
    }
    let mut rows =
        vec![["host", "status", "address", "clock offset", "round trip", "lost at"].map(String::from).to_vec()];
    for (host, h) in &s.hosts {
        let Some(a) = &h.agent else {
            rows.push(vec![host.clone(), "local".into()]);
            continue;
        };
        let offset = match (a.clock_offset_ns, a.clock_uncertainty_ns) {
            (Some(o), Some(u)) => format!("{} ± {}", signed_ns(o), format::ns(u)),
            (Some(o), None) => signed_ns(o),
            _ => "-".into(),
        };
        rows.push(vec![
            host.clone(),
            a.status.clone().unwrap_or_else(|| "-".into()),
            match (&a.address, &a.transport) {
                (Some(ad), Some(t)) => format!("{ad} ({t})"),
                (Some(ad), None) => ad.clone(),
                _ => "-".into(),
            },
            offset,
            a.rtt_ns.map_or("-".into(), format::ns),
            a.lost_at_second.map_or(String::new(), |n| format!("second {n}")),
        ]);
    }
    format!("\n{}", table(&rows))
}

/// The end-of-run (and `ioscope show`) summary.
pub fn render_text(s: &Summary) -> String {
    let text = render(&for_terminal(s));
    // What the layout adds is printable; a string that escaped the pass above (the summary
    // did not read back) still loses its control characters here, all but line ends.
    match text.split('\n').map(ioscope_store::printable).any(|l| matches!(l, Cow::Owned(_))) {
        true => text.split('\n').map(ioscope_store::printable).collect::<Vec<_>>().join("\n"),
        false => text,
    }
}

/// The summary as a terminal may be shown it: every string (values and keys) made
/// printable (what `render_text` and the text of `ioscope compare` lay out).
pub fn for_terminal(s: &Summary) -> Cow<'_, Summary> {
    escaped(s).map_or(Cow::Borrowed(s), Cow::Owned)
}

/// The summary with every string (values and keys) made printable; None when none needed it.
fn escaped(s: &Summary) -> Option<Summary> {
    let mut v = serde_json::to_value(s).ok()?;
    if !escape_strings(&mut v) {
        return None;
    }
    serde_json::from_value(v).ok()
}

/// Escapes every string in `v` (keys too); whether any changed.
fn escape_strings(v: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    let owned = |s: &str| match ioscope_store::printable(s) {
        Cow::Owned(e) => Some(e),
        Cow::Borrowed(_) => None,
    };
    match v {
        Value::String(s) => owned(s).map(|e| *s = e).is_some(),
        Value::Array(items) => items.iter_mut().fold(false, |changed, x| escape_strings(x) | changed),
        Value::Object(map) => {
            let mut changed = false;
            for (key, mut x) in std::mem::take(map) {
                changed |= escape_strings(&mut x);
                let key = match owned(&key) {
                    Some(e) => {
                        changed = true;
                        e
                    }
                    None => key,
                };
                map.insert(key, x);
            }
            changed
        }
        _ => false,
    }
}

/// A flow's operations as Filebench lists its flowops: each op's rate and latency, the
/// flow's rounds (`flow`) last.
fn flow_rows(ops: &BTreeMap<String, crate::OpSummary>) -> Vec<Vec<String>> {
    let mut rows =
        vec![["op", "ops/s", "MB/s", "lat mean", "p50", "p99", "max", "errors", "skipped"].map(String::from).to_vec()];
    let order = ops.keys().filter(|k| *k != "flow").chain(ops.keys().filter(|k| *k == "flow"));
    for name in order {
        let o = &ops[name];
        let label = if name == "flow" { "flow (rounds)".to_string() } else { name.clone() };
        let mut row = vec![label, format::iops(o.iops), format::float(o.bytes_per_sec / 1e6, 1)];
        match o.percentiles(StatId::Latency) {
            Some(l) => row.extend([l.mean, l.p50, l.p99, l.max].map(format::ns)),
            None => row.extend(vec!["-".to_string(); 4]),
        }
        row.push(format::int(o.errors));
        row.push(format::int(o.skipped));
        rows.push(row);
    }
    rows
}

fn render(s: &Summary) -> String {
    let mut out =
        format!("ioscope {}  {}  {:.1} s  results: {}\n", s.ioscope_version, s.status, s.duration_s, s.results_file);
    // A recording of `ioscope probe` alone: no load, only the target side.
    if s.ops.is_empty() && s.total.ops == 0 && !s.target.is_empty() {
        out.push_str("target side only (ioscope probe): no load was run\n");
        for (host, config) in &s.system {
            out.push_str(&format!("system   {host}: {}\n", format::system(config)));
        }
        for (host, t) in &s.target {
            target_lines(&mut out, host, t);
        }
        verdict_lines(&mut out, s.verdicts.iter().filter(|v| v.message.starts_with("target ")));
        return out;
    }

    let hash = if s.workload.hash.chars().count() > 8 {
        format!("{}…", s.workload.hash.chars().take(8).collect::<String>())
    } else {
        s.workload.hash.clone()
    };
    let plan = serde_json::from_value::<Plan>(s.workload.plan.clone()).ok();
    match &plan {
        Some(p) => out.push_str(&format!("workload  {}  hash {hash}\n", format::workload(p))),
        None => out.push_str(&format!("workload  hash {hash}\n")),
    }
    // Open loop: response and service time differ by the queueing delay, so show both.
    let open_loop = plan.as_ref().is_some_and(|p| p.rate_iops.is_some());

    let mut rows = vec![["op", "IOPS", "MB/s", "lat mean", "p50", "p90", "p99", "p99.9", "max", "errors"]
        .map(String::from)
        .to_vec()];
    for name in op_order(s) {
        let o = &s.ops[name];
        let mut row = vec![name.to_string(), format::iops(o.iops), format::float(o.bytes_per_sec / 1e6, 1)];
        match o.percentiles(StatId::Latency) {
            Some(l) => row.extend([l.mean, l.p50, l.p90, l.p99, l.p999, l.max].map(format::ns)),
            None => row.extend(vec!["-".to_string(); 6]),
        }
        row.push(format::int(o.errors));
        rows.push(row);
        if let (true, Some(l)) = (open_loop, o.percentiles(StatId::ServiceTime)) {
            let mut row = vec!["  service".to_string(), String::new(), String::new()];
            row.extend([l.mean, l.p50, l.p90, l.p99, l.p999, l.max].map(format::ns));
            rows.push(row);
        }
    }
    let total_row = |label: String, t: &crate::Totals| {
        let mut row = vec![label, format::iops(t.iops), format::float(t.bytes_per_sec / 1e6, 1)];
        row.extend(vec![String::new(); 6]);
        row.push(format::int(t.errors));
        row
    };
    // With hosts, the total and each host carry their transfer latency (each merged from
    // histograms: the total's from every host's, never an average of theirs).
    let with_latency = |mut row: Vec<String>, l: Option<&crate::Distribution>| {
        if let Some(l) = l {
            row.splice(3..9, [l.mean, l.p50, l.p90, l.p99, l.p999, l.max].map(format::ns));
        }
        row
    };
    rows.push(with_latency(total_row(s.total_label.clone(), &s.total), s.total_latency_ns.as_ref()));
    if !s.hosts.is_empty() {
        for (host, h) in &s.hosts {
            rows.push(with_latency(total_row(format!("host {host}"), &h.totals), h.latency_ns.as_ref()));
        }
    } else if s.by_host.len() > 1 {
        for (host, t) in &s.by_host {
            rows.push(total_row(format!("host {host}"), t));
        }
    }
    out.push_str(&table(&rows));
    out.push_str(&error_lines(s));
    out.push_str(&agent_table(s));

    if !s.workloads.is_empty() {
        let mut rows = vec![["workload", "IOPS", "MB/s", "p50", "p99", "errors"].map(String::from).to_vec()];
        for (name, w) in &s.workloads {
            rows.push(part_row(name.clone(), w));
        }
        out.push('\n');
        out.push_str(&table(&rows));
        let plan = serde_json::from_value::<ioscope_workload::Plan>(s.workload.plan.clone()).ok();
        if plan.is_some_and(|p| p.phases() > 0) {
            out.push_str(
                "(a workload of one phase is rated over its phase's seconds; the op rows over the whole run)\n",
            );
        }
    }
    for (name, ops) in &s.flows {
        out.push_str(&format!("\nflow {name}\n"));
        out.push_str(&table(&flow_rows(ops)));
    }
    if !s.steps.is_empty() {
        let mut rows =
            vec![["step", "threads", "rate asked", "IOPS", "MB/s", "p50", "p99", "errors"].map(String::from).to_vec()];
        for st in &s.steps {
            let mut row = vec![
                format!("{} {}", st.index, st.label),
                st.threads.map_or("-".into(), |t| t.to_string()),
                st.rate_iops.map_or("max".into(), format::int),
            ];
            row.extend(part_row(String::new(), &st.measured).into_iter().skip(1));
            rows.push(row);
        }
        out.push('\n');
        out.push_str(&table(&rows));
        let one_step_repeated = s.repeats.as_ref().is_some_and(|r| r.steps.len() < 2);
        match &s.knee {
            Some(k) => out.push_str(&format!("knee: step {} ({}): {}\n", k.step, k.label, k.reason)),
            None if one_step_repeated => {}
            None => out.push_str(
                "knee: none found (throughput reached 90% of its peak only at the last step, or p99 latency did not climb 20% after it)\n",
            ),
        }
    }
    if let Some(rep) = &s.repeats {
        out.push_str(&crate::repeat::text_lines(rep, &s.total_label));
    }
    if !s.probes.is_empty() {
        let mut rows = vec![["probe", "at", "duration", "exit"].map(String::from).to_vec()];
        for p in &s.probes {
            let exit = match (p.exit_code, &p.detail) {
                (Some(c), _) => c.to_string(),
                (None, Some(d)) => d.clone(),
                (None, None) => "-".into(),
            };
            rows.push(vec![
                p.name.clone(),
                format!("{} s", format::num(p.at_s)),
                format::ns((p.duration_s * 1e9) as u64),
                exit,
            ]);
        }
        out.push('\n');
        out.push_str(&table(&rows));
    }

    let service = if open_loop { " (service rows: from issue)" } else { "" };
    out.push_str(&format!(
        "latency: response time from intended start{service}; percentiles within ±{:.1}% (log-linear histogram)\n",
        s.latency_relative_error * 100.0
    ));

    let several = s.system.len() > 1;
    for (i, (host, config)) in s.system.iter().enumerate() {
        let label = if i == 0 { "system" } else { "" };
        let line = format::system(config);
        if several {
            out.push_str(&format!("{label:<9}{host}: {line}\n"));
        } else {
            out.push_str(&format!("{label:<9}{line}\n"));
        }
    }
    for line in crate::content::text_lines(s) {
        out.push_str(&line);
        out.push('\n');
    }
    for line in crate::ended::text_lines(s) {
        out.push_str(&line);
        out.push('\n');
    }
    for line in crate::cache::text_lines(s) {
        out.push_str(&line);
        out.push('\n');
    }
    for (host, t) in &s.target {
        target_lines(&mut out, host, t);
    }
    for line in crate::steady::text_lines(s) {
        out.push_str(&format!("steady   {line}\n"));
    }
    for line in s.verification.iter().flat_map(crate::verification::text_lines) {
        out.push_str(&line);
        out.push('\n');
    }
    verdict_lines(&mut out, s.verdicts.iter());
    for c in &s.checks {
        out.push_str(&format!("check {}  ({})\n", c.message, c.check));
    }
    out
}

/// The verdicts block: one line each, severity first, then the message and the id (the
/// evidence is in the JSON).
fn verdict_lines<'a>(out: &mut String, verdicts: impl Iterator<Item = &'a crate::verdict::Verdict>) {
    let mut verdicts = verdicts.peekable();
    if verdicts.peek().is_none() {
        return;
    }
    out.push_str("verdicts (evidence: ioscope show --json)\n");
    for v in verdicts {
        out.push_str(&format!("  {:<8} {} [{}]\n", v.severity.word(), v.message, v.id));
    }
}

/// The target section: one line for the host, then one per disk, interface and process.
fn target_lines(out: &mut String, host: &str, t: &crate::TargetSummary) {
    let mm = |m: &Option<crate::MeanMax>, f: &dyn Fn(f64) -> String| {
        m.as_ref().map_or("-".to_string(), |m| format!("{} (max {})", f(m.mean), f(m.max)))
    };
    let pct = |v: f64| format!("{}%", format::num(v));
    let rate = |v: f64| format!("{}/s", format::bytes(v as u64));
    let mut line = format!("target   {host}: CPU {} of {} CPUs", mm(&t.cpu_percent, &pct), t.cpus);
    if let Some(c) = t.memory_bytes.get("page_cache") {
        line.push_str(&format!(", page cache {}", format::bytes(c.max as u64)));
    }
    if let Some(p) = &t.probe_cpu_percent {
        line.push_str(&format!(", the probe itself {}", pct(p.mean)));
    }
    if let Some(why) = &t.ebpf {
        line.push_str(&format!(" (no eBPF: {why})"));
    }
    out.push_str(&format!("{line}\n"));
    for (disk, d) in &t.disks {
        let mut l = format!(
            "           disk {disk}: {} IOPS, {}, busy {}, queue {}",
            mm(&d.iops, &|v| format::iops(v)),
            mm(&d.bytes_per_sec, &rate),
            mm(&d.util_percent, &pct),
            mm(&d.queue_depth, &|v| format::float(v, 1))
        );
        if let Some(lat) = &d.latency_ns {
            l.push_str(&format!(
                ", block latency p50 {} p99 {} max {}",
                format::ns(lat.p50),
                format::ns(lat.p99),
                format::ns(lat.max)
            ));
        }
        out.push_str(&format!("{l}\n"));
    }
    for (nic, n) in t.nics.iter().filter(|(_, n)| n.rx_bytes_per_sec.as_ref().is_some_and(|r| r.max > 0.0)) {
        out.push_str(&format!(
            "           nic {nic}: in {}, out {}, {} dropped\n",
            mm(&n.rx_bytes_per_sec, &rate),
            mm(&n.tx_bytes_per_sec, &rate),
            format::int(n.drops)
        ));
    }
    for (name, p) in &t.processes {
        let mut l = format!("           process {name}: CPU {}", mm(&p.cpu_percent, &pct));
        for (call, c) in &p.syscalls {
            let lat = c.latency_ns.as_ref().map_or(String::new(), |d| format!(" p99 {}", format::ns(d.p99)));
            l.push_str(&format!(", {call} {}{lat}", format::int(c.count)));
        }
        out.push_str(&format!("{l}\n"));
    }
}
