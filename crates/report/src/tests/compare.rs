//! `ioscope compare`: Welch's t against a hand-computed example, the rule for a
//! significant difference on repeat sets, what is said without repeats, and what differs
//! between the runs' workloads and systems.

use super::*;
use crate::compare::{compare, render_compare_json, render_compare_text, welch, Comparison, FigureComparison};
use crate::repeat::{RepeatFigure, RepeatSummary, StepRepeats};

const COMPARE_SCHEMA_FILE: &str = include_str!("../../../../schema/compare.schema.json");

/// Figure statistics as the repeats give them (mean, spread; the interval is not used).
fn figure(values: &[f64]) -> RepeatFigure {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let stddev = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    RepeatFigure {
        values: values.to_vec(),
        mean,
        ci_low: mean,
        ci_high: mean,
        half_width_pct: 0.0,
        stddev,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    }
}

/// A completed run whose one step has `iops` read IOPS per repeat (and 4 KiB per I/O, a
/// p99 of 100 µs in every repeat).
fn repeated(iops: &[f64]) -> Summary {
    let mut s = summarize(&results(Status::Completed), Path::new("/tmp/a.ioscope"));
    let figures: BTreeMap<String, RepeatFigure> = [
        ("iops".to_string(), figure(iops)),
        ("bytes_per_sec".to_string(), figure(&iops.iter().map(|v| v * 4096.0).collect::<Vec<_>>())),
        ("latency_p99_ns".to_string(), figure(&vec![100_095.0; iops.len()])),
    ]
    .into();
    s.repeats = Some(RepeatSummary {
        count: iops.len() as u32,
        confidence_pct: 95.0,
        stopped: "count".into(),
        steps: vec![StepRepeats {
            step: 0,
            label: String::new(),
            ops: [("read".to_string(), figures.clone()), ("total".to_string(), figures)].into(),
            trend: None,
        }],
    });
    s
}

fn row<'a>(c: &'a Comparison, op: &str, figure: &str) -> &'a FigureComparison {
    c.steps[0].figures.iter().find(|f| f.op == op && f.figure == figure).unwrap_or_else(|| panic!("{op} {figure}"))
}

#[test]
fn welch_matches_a_hand_computed_example() {
    // A: mean 12, variance 4; B: mean 18, variance 20/3. By hand: se² = 4/3 + (20/3)/4 = 3;
    // df = 3² / ((4/3)²/2 + (5/3)²/3) = 9 / (49/27) = 243/49 ≈ 4.959; t = 6/√3 ≈ 3.464.
    let w = welch(&[10.0, 12.0, 14.0], &[15.0, 17.0, 19.0, 21.0], 95.0).unwrap();
    assert_eq!((w.mean_a, w.mean_b, w.difference), (12.0, 18.0, 6.0));
    assert!((w.se - 3f64.sqrt()).abs() < 1e-12, "{}", w.se);
    assert!((w.df - 243.0 / 49.0).abs() < 1e-12, "{}", w.df);
    // Student t tables, two-sided 95%: 2.776 at 4 and 2.571 at 5 degrees of freedom; 4.959
    // lies just below 5.
    assert!(w.t_crit > 2.5706 && w.t_crit < 2.58, "{}", w.t_crit);
    assert!((w.low - (6.0 - w.t_crit * 3f64.sqrt())).abs() < 1e-12);
    assert!((w.high - (6.0 + w.t_crit * 3f64.sqrt())).abs() < 1e-12);
    assert!(w.low > 1.5 && w.low < 1.56 && w.high > 10.44 && w.high < 10.5, "{w:?}");
    // Tables at 5 df: t = 3.365 is p = 0.02, t = 4.032 is p = 0.01; 3.464 lies between.
    assert!(w.p_value > 0.01 && w.p_value < 0.025, "{}", w.p_value);
    // The same samples swapped: the difference and its interval change sign.
    let back = welch(&[15.0, 17.0, 19.0, 21.0], &[10.0, 12.0, 14.0], 95.0).unwrap();
    assert!((back.low + w.high).abs() < 1e-12 && (back.high + w.low).abs() < 1e-12);
    // Fewer than two values, or a value that is not a number: no test.
    assert!(welch(&[1.0], &[1.0, 2.0], 95.0).is_none());
    assert!(welch(&[1.0, f64::NAN], &[1.0, 2.0], 95.0).is_none());
    // No spread on either side: an interval of zero width, at the difference.
    let flat = welch(&[5.0, 5.0], &[6.0, 6.0, 6.0], 95.0).unwrap();
    assert_eq!((flat.low, flat.high, flat.p_value), (1.0, 1.0, 0.0));
}

#[test]
fn a_real_twenty_percent_difference_between_repeat_sets_is_significant() {
    let a = repeated(&[1000.0, 1003.0, 998.0, 1001.0, 999.0]);
    let b = repeated(&[1199.0, 1202.0, 1200.0, 1198.0, 1201.0]);
    let c = compare(&a, &b);
    assert_eq!(c.method, "welch");
    assert_eq!((c.a.repeats, c.b.repeats), (5, 5));
    let iops = row(&c, "read", "iops");
    assert_eq!(iops.significant, Some(true));
    assert_eq!(iops.finding, "higher");
    let i = iops.interval.as_ref().unwrap();
    assert!(i.low_pct.unwrap() > 19.0 && i.high_pct.unwrap() < 21.0, "{i:?}");
    assert!(iops.message.starts_with("B is 20.0% higher (95% CI +19."), "{}", iops.message);
    assert_eq!(row(&c, "total", "bytes_per_sec").significant, Some(true));
    // The same p99 in every repeat of both: no difference at all.
    let p99 = row(&c, "read", "latency_p99_ns");
    assert_eq!((p99.significant, p99.finding.as_str()), (Some(false), "negligible"));
    // Lower is said too.
    let down = compare(&b, &a);
    assert_eq!(row(&down, "read", "iops").finding, "lower");
    let message = &row(&down, "read", "iops").message;
    assert!(message.starts_with("B is 16.6% lower (95% CI -16.9% to -16.4%)"), "{message}");
    let text = render_compare_text(&c);
    assert!(text.contains("compare  A: /tmp/a.ioscope (5 repeats, completed)"), "{text}");
    let line = text.lines().find(|l| l.starts_with("read IOPS")).unwrap();
    assert!(
        line.contains("1,000") && line.contains("1,200") && line.contains("+20.0%") && line.ends_with("yes"),
        "{line}"
    );
    assert!(text.contains("method: Welch's t on the repeat means"), "{text}");
}

#[test]
fn a_statistically_real_but_negligible_difference_is_not_reported_as_one() {
    // A rate-limited run repeats to a hundredth of a percent: the interval excludes 0, yet
    // no one acts on 0.01%.
    let a = repeated(&[1000.00, 1000.01, 999.99, 1000.00, 1000.01]);
    let b = repeated(&[1000.10, 1000.11, 1000.09, 1000.10, 1000.11]);
    let c = compare(&a, &b);
    let iops = row(&c, "read", "iops");
    let i = iops.interval.as_ref().unwrap();
    assert!(i.low > 0.0, "the interval excludes 0: {i:?}");
    assert_eq!((iops.significant, iops.finding.as_str()), (Some(false), "negligible"));
    assert!(iops.message.starts_with("no difference beyond ±1% (95% CI +0.0"), "{}", iops.message);
    // Real but not shown to reach 1%: said, and not significant.
    let c = compare(&repeated(&[1000.0, 1001.0, 999.0]), &repeated(&[1008.0, 1009.0, 1007.0]));
    let iops = row(&c, "read", "iops");
    assert_eq!((iops.significant, iops.finding.as_str()), (Some(false), "small"), "{iops:?}");
    // Noisy repeats: an interval that includes 0.
    let c = compare(&repeated(&[900.0, 1100.0, 1000.0]), &repeated(&[950.0, 1150.0, 1050.0]));
    let iops = row(&c, "read", "iops");
    assert_eq!((iops.significant, iops.finding.as_str()), (Some(false), "not-significant"));
    assert!(iops.message.contains("includes 0"), "{}", iops.message);
}

#[test]
fn without_repeats_a_difference_may_be_noise() {
    let a = summarize(&results(Status::Completed), Path::new("/tmp/a.ioscope"));
    let mut b = a.clone();
    b.ops.get_mut("read").unwrap().iops = 960.0;
    let c = compare(&a, &b);
    assert_eq!(c.method, "single");
    let iops = row(&c, "read", "iops");
    assert_eq!((iops.a, iops.b, iops.difference_pct), (800.0, 960.0, Some(20.0)));
    assert_eq!((iops.significant, iops.interval.as_ref(), iops.finding.as_str()), (None, None, "noise"));
    assert!(iops.message.contains("may be noise"), "{}", iops.message);
    assert!(c.notes[0].starts_with("one run each: a difference may be noise"), "{:?}", c.notes);
    // The total's latency is left out: two operations' percentiles cannot be merged here.
    let total: Vec<&str> = c.steps[0].figures.iter().filter(|f| f.op == "total").map(|f| f.figure.as_str()).collect();
    assert_eq!(total, ["iops", "bytes_per_sec"]);
    let ops: Vec<&str> = c.steps[0].figures.iter().map(|f| f.op.as_str()).collect();
    assert_eq!(ops.first(), Some(&"read"));
    let text = render_compare_text(&c);
    assert!(text.contains("may be noise"), "{text}");
    assert!(text.contains("workload same (hash 3f2a9c0d…)"), "{text}");
    // One side with repeats, one without: still no interval.
    let c = compare(&repeated(&[1000.0, 1001.0, 999.0]), &a);
    assert_eq!(row(&c, "read", "iops").significant, None);
    assert!(c.notes[0].starts_with("A has 3 repeats, B is one run"), "{:?}", c.notes);
}

#[test]
fn differing_workloads_and_systems_are_named() {
    let a = summarize(&results(Status::Completed), Path::new("/tmp/a.ioscope"));
    let mut b = a.clone();
    b.workload.hash = "99990000aaaabbbb".into();
    b.workload.plan["rate_iops"] = 1200.into();
    b.workload.plan["workloads"][0]["threads"] = 4.into();
    b.system.get_mut("h1").unwrap()["kernel"] = "6.19.0".into();
    b.system.get_mut("h1").unwrap()["memory_available_bytes"] = 5.into();
    let c = compare(&a, &b);
    let w = c.workload_differs.as_ref().unwrap();
    assert_eq!(w.keys, ["rate_iops", "workloads[0].threads"]);
    assert_eq!(c.system_differs, ["host h1: kernel: 6.18.0 vs 6.19.0"], "free memory is no difference of system");
    let text = render_compare_text(&c);
    assert!(text.contains("workload differs (hash 3f2a9c0d… vs 99990000…): rate_iops, workloads[0].threads"), "{text}");
    assert!(text.contains("system differs: host h1: kernel: 6.18.0 vs 6.19.0"), "{text}");
    // Another host: named as such.
    let mut other = a.clone();
    let config = other.system.remove("h1").unwrap();
    other.system.insert("h2".into(), config);
    assert_eq!(compare(&a, &other).system_differs, ["hosts: A ran on h1, B on h2"]);
    assert!(compare(&a, &a).workload_differs.is_none());
}

#[test]
fn steps_are_matched_by_index_and_a_missing_one_is_said() {
    let mut a = summarize(&results(Status::Completed), Path::new("/tmp/a.ioscope"));
    a.steps = vec![step(0, 1000.0, 100_000), step(1, 2000.0, 200_000)];
    let mut b = a.clone();
    b.steps = vec![step(0, 1100.0, 100_000)];
    let c = compare(&a, &b);
    assert_eq!(c.steps.len(), 1);
    assert_eq!(c.steps[0].label, "threads=1");
    assert_eq!(row(&c, "total", "iops").difference, 100.0);
    assert!(c.notes.contains(&"step 1 is only in A".to_string()), "{:?}", c.notes);
    assert!(render_compare_text(&c).contains("step 0 threads=1\n"));
}

fn validate(json: &serde_json::Value) -> Vec<String> {
    let schema: serde_json::Value = serde_json::from_str(COMPARE_SCHEMA_FILE).unwrap();
    let v = jsonschema::draft202012::new(&schema).expect("the schema compiles");
    v.iter_errors(json).map(|e| format!("{} at {}", e, e.instance_path)).collect()
}

#[test]
fn comparison_validates_against_the_schema_file() {
    let single = summarize(&results(Status::Completed), Path::new("/tmp/a.ioscope"));
    let mut other = single.clone();
    other.workload.hash = "99990000aaaabbbb".into();
    for c in [
        compare(&repeated(&[1000.0, 1001.0, 999.0]), &repeated(&[1200.0, 1201.0, 1199.0])),
        compare(&single, &other),
        compare(&repeated(&[1000.0, 1001.0, 999.0]), &single),
    ] {
        let json: serde_json::Value = serde_json::from_str(&render_compare_json(&c)).unwrap();
        let errors = validate(&json);
        assert!(errors.is_empty(), "{errors:#?}");
        assert_eq!(json["schema"], "ioscope.compare/1");
        // It reads back into a Comparison (as the UI's answer is read).
        let back: Comparison = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), json);
    }
    // The schema does reject what is wrong.
    let c = compare(&repeated(&[1000.0, 1001.0, 999.0]), &repeated(&[1200.0, 1201.0, 1199.0]));
    let mut json = serde_json::to_value(&c).unwrap();
    json["schema"] = "ioscope.compare/2".into();
    json["steps"][0]["figures"][0]["significant"] = "yes".into();
    json.as_object_mut().unwrap().remove("notes");
    assert_eq!(validate(&json).len(), 3, "{:#?}", validate(&json));
}
