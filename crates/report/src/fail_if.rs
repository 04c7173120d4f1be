//! `ioscope compare A B --fail-if 'read.iops < -5%'`: conditions on the difference of B
//! from A, in percent of A, that fail the comparison (exit 3), so that a CI job can fail
//! on a regression. The grammar is that of `--check` (docs/checks.md) with a signed
//! percentage for a value and the four figures compare has:
//!
//! - `SCOPE.FIGURE OPERATOR VALUE%`; SCOPE `total` or an operation (`read`, `write`...);
//! - FIGURE `iops`, `bytes_per_sec`, `latency.p50` or `latency.p99`;
//! - OPERATOR `<`, `<=`, `>` or `>=`; VALUE a signed percentage (`-5%`, `+10%`, `10%`).
//!
//! A condition is judged in every step both runs have. When both runs have repeats, it
//! fails only where the difference is significant (its interval lies beyond ±1% of A,
//! docs/compare.md): a regression the data do not show is not one. With one run on a side
//! there is no interval: the difference is judged as measured, and the result says it may
//! be noise.

use crate::compare::{figure_label, signed_pct, Comparison, FailIfResult};
/// The comparison of `--check`; `==` and `!=` are refused here.
pub use ioscope_workload::check::Cmp;

/// A condition as parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct FailIf {
    /// As written.
    pub text: String,
    /// `total` or an operation.
    pub op: String,
    /// One of [`crate::compare::FIGURES`].
    pub figure: &'static str,
    pub cmp: Cmp,
    /// In percent of A.
    pub threshold_pct: f64,
}

/// Why a condition does not parse: the column (1-based, in characters) and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailIfError {
    pub column: usize,
    pub expected: String,
}

impl std::fmt::Display for FailIfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "column {}: expected {}", self.column, self.expected)
    }
}

const FORM: &str = "as in `read.iops < -5%` or `total.latency.p99 > 10%`";

fn err(text: &str, at: usize, expected: String) -> FailIfError {
    FailIfError { column: text.get(..at).map_or(1, |s| s.chars().count() + 1), expected }
}

impl FailIf {
    pub fn parse(text: &str) -> Result<FailIf, FailIfError> {
        let Some(op_at) = text.find(['<', '>', '=', '!']) else {
            return Err(err(text, text.len(), format!("an operator (<, <=, > or >=) after the figure, {FORM}")));
        };
        let rest = &text[op_at..];
        let (cmp, len) = match () {
            _ if rest.starts_with("<=") => (Cmp::Le, 2),
            _ if rest.starts_with(">=") => (Cmp::Ge, 2),
            _ if rest.starts_with('<') => (Cmp::Lt, 1),
            _ if rest.starts_with('>') => (Cmp::Gt, 1),
            _ => {
                return Err(err(
                    text,
                    op_at,
                    "an operator: <, <=, > or >= (a difference is never exactly a value)".into(),
                ))
            }
        };
        let subject = &text[..op_at];
        let lead = subject.len() - subject.trim_start().len();
        let subject = subject.trim();
        let (op, figure_text) = subject.split_once('.').unwrap_or((subject, ""));
        if op.is_empty() || !op.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err(text, lead, format!("`total` or an operation (read, write...) before the figure, {FORM}")));
        }
        let figure = match figure_text {
            "iops" => "iops",
            "bytes_per_sec" => "bytes_per_sec",
            "latency.p50" => "latency_p50_ns",
            "latency.p99" => "latency_p99_ns",
            _ => {
                return Err(err(
                    text,
                    lead + op.len() + 1,
                    format!("a figure compare has after `{op}.`: iops, bytes_per_sec, latency.p50 or latency.p99"),
                ))
            }
        };
        let value_at = op_at + len;
        let value = &text[value_at..];
        let value_at = value_at + (value.len() - value.trim_start().len());
        let value = value.trim();
        let threshold_pct = value
            .strip_suffix('%')
            .and_then(|n| n.trim().parse::<f64>().ok())
            .filter(|x| x.is_finite())
            .ok_or_else(|| err(text, value_at, format!("a signed percentage of A like -5% or +10%, {FORM}")))?;
        Ok(FailIf { text: text.trim().to_string(), op: op.to_string(), figure, cmp, threshold_pct })
    }
}

/// Judges each condition against the comparison.
pub fn evaluate(conditions: &[FailIf], c: &Comparison) -> Vec<FailIfResult> {
    conditions.iter().map(|f| evaluate_one(f, c)).collect()
}

fn evaluate_one(f: &FailIf, c: &Comparison) -> FailIfResult {
    let mut failed = false;
    let mut said = Vec::new();
    for st in &c.steps {
        let Some(fc) = st.figures.iter().find(|x| x.op == f.op && x.figure == f.figure) else { continue };
        let Some(pct) = fc.difference_pct else {
            said.push(format!("step {}: A is 0, no percentage", st.step));
            continue;
        };
        let holds = f.cmp.holds(pct, f.threshold_pct);
        let (fails, why) = match (holds, fc.significant) {
            (false, _) => (false, "passed"),
            (true, Some(true)) => (true, "failed (significant)"),
            (true, Some(false)) => (false, "passed: within the repeats' noise (not significant)"),
            (true, None) => (true, "failed (one run on a side: it may be noise)"),
        };
        failed |= fails;
        said.push(format!("step {}: {} {} {}: {why}", st.step, f.op, figure_label(f.figure), signed_pct(pct)));
    }
    let message = if said.is_empty() {
        failed = true;
        format!("failed: no step of both runs has {} {}, so nothing was compared", f.op, figure_label(f.figure))
    } else {
        said.join("; ")
    };
    FailIfResult { condition: f.text.clone(), failed, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A comparison of one step with read IOPS differing by `pct`, significant or not
    /// (None: one run on a side, no interval).
    fn compared(pct: f64, significant: Option<bool>) -> Comparison {
        let mut c = crate::compare::compare(&crate::link::tests::empty_summary(), &crate::link::tests::empty_summary());
        c.steps = vec![crate::compare::StepComparison {
            step: 0,
            label: String::new(),
            figures: vec![crate::compare::FigureComparison {
                op: "read".into(),
                figure: "iops".into(),
                a: 1000.0,
                b: 1000.0 * (1.0 + pct / 100.0),
                a_repeats: 3,
                b_repeats: 3,
                difference: 10.0 * pct,
                difference_pct: Some(pct),
                interval: None,
                significant,
                finding: String::new(),
                message: String::new(),
            }],
        }];
        c
    }

    fn failed(condition: &str, c: &Comparison) -> bool {
        evaluate(&[FailIf::parse(condition).unwrap()], c)[0].failed
    }

    #[test]
    fn fail_if_fails_on_a_significant_regression_and_not_on_noise_or_an_improvement() {
        let regression = "read.iops < -5%";
        assert!(failed(regression, &compared(-8.0, Some(true))), "significant: fails");
        assert!(!failed(regression, &compared(-8.0, Some(false))), "within the repeats' noise: passes");
        assert!(failed(regression, &compared(-8.0, None)), "one run a side: judged as measured");
        assert!(!failed(regression, &compared(-3.0, Some(true))), "less than asked");
        assert!(!failed(regression, &compared(20.0, Some(true))), "an improvement");
        let r = &evaluate(&[FailIf::parse(regression).unwrap()], &compared(-8.0, None))[0];
        assert_eq!(r.message, "step 0: read IOPS -8.0%: failed (one run on a side: it may be noise)");
        // A figure neither run has is not a pass.
        assert!(failed("write.iops < -5%", &compared(-8.0, Some(true))));
    }

    #[test]
    fn a_condition_parses_into_its_figure_and_a_bad_one_names_its_column() {
        let f = FailIf::parse("read.iops < -5%").unwrap();
        assert_eq!((f.op.as_str(), f.figure, f.cmp, f.threshold_pct), ("read", "iops", Cmp::Lt, -5.0));
        let f = FailIf::parse(" total.latency.p99 >= +10 %").unwrap();
        assert_eq!((f.op.as_str(), f.figure, f.cmp, f.threshold_pct), ("total", "latency_p99_ns", Cmp::Ge, 10.0));
        let e = FailIf::parse("read.iops < -5").unwrap_err();
        assert_eq!(e.column, 13, "{e}");
        assert!(e.expected.contains("signed percentage"), "{e}");
        let e = FailIf::parse("read.ops < -5%").unwrap_err();
        assert_eq!(e.column, 6, "{e}");
        assert!(FailIf::parse("read.iops == 5%").is_err());
        assert!(FailIf::parse("read.iops").unwrap_err().expected.contains("operator"));
        assert!(FailIf::parse("r/d.iops < 1%").is_err());
        assert!(FailIf::parse("read.iops < nan%").is_err());
    }
}
