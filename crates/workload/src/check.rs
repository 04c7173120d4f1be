//! Checks: conditions on a run's figures (`read.latency.p99 < 2ms`, `total.iops >= 10k`,
//! `total.errors == 0`), parsed here before the run; ioscope_report::check evaluates them
//! from the run's summary after it, so a check agrees with every other view of its figure.
//!
//! The form is `SCOPE.FIGURE OPERATOR VALUE`:
//! - SCOPE: `total` (the total row) or an operation (`read`, `write`, `fsync`...);
//! - FIGURE: `iops`, `bytes_per_sec`, `ops`, `errors`, or a distribution and its part:
//!   `latency.p99` (response time from the intended start), `service_time.p50` (from
//!   issue), with parts `mean`, `min`, `p50`, `p90`, `p99`, `p999`, `max`;
//! - OPERATOR: `<`, `<=`, `>`, `>=`, `==`, `!=`;
//! - VALUE: a time for latencies (`250us`, `2ms`, `1.5s`; `ns`, `us`/`µs`, `ms`, `s`), a
//!   rate for `bytes_per_sec` (`500MB/s`, `1GiB/s`; B, KB, MB, GB, KiB, MiB, GiB), a count
//!   otherwise (`10k`, `1.5M`, `2G`).

/// A check as parsed: what it reads, how it compares, against what (in the figure's unit).
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// As written.
    pub text: String,
    pub scope: Scope,
    pub figure: Figure,
    pub cmp: Cmp,
    /// In the figure's unit: ns, bytes/s or a count.
    pub threshold: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Scope {
    Total,
    Op(String),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Figure {
    Iops,
    BytesPerSec,
    Ops,
    Errors,
    Latency(Part),
    ServiceTime(Part),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Part {
    Mean,
    Min,
    P50,
    P90,
    P99,
    P999,
    Max,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// Why a check does not parse: the column (1-based, in characters) and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckError {
    pub column: usize,
    pub expected: String,
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "column {}: expected {}", self.column, self.expected)
    }
}

const PARTS: [(&str, Part); 7] = [
    ("mean", Part::Mean),
    ("min", Part::Min),
    ("p50", Part::P50),
    ("p90", Part::P90),
    ("p99", Part::P99),
    ("p999", Part::P999),
    ("max", Part::Max),
];
const OPERATORS: [(&str, Cmp); 6] =
    [("<=", Cmp::Le), (">=", Cmp::Ge), ("==", Cmp::Eq), ("!=", Cmp::Ne), ("<", Cmp::Lt), (">", Cmp::Gt)];
const FIGURES: &str = "iops, bytes_per_sec, ops, errors, latency.PART or service_time.PART";
const PART_NAMES: &str = "mean, min, p50, p90, p99, p999 or max";

fn err(column: usize, expected: impl Into<String>) -> CheckError {
    CheckError { column, expected: expected.into() }
}

/// The 1-based column of byte offset `at` in `text`.
fn column(text: &str, at: usize) -> usize {
    text.get(..at).map_or(1, |s| s.chars().count() + 1)
}

impl Check {
    pub fn parse(text: &str) -> Result<Check, CheckError> {
        let op_at = text.find(['<', '>', '=', '!']).ok_or_else(|| {
            err(
                column(text, text.len()),
                "an operator (<, <=, >, >=, == or !=) after the figure, as in `read.latency.p99 < 2ms`",
            )
        })?;
        let (cmp, op_len) = OPERATORS
            .iter()
            .find(|(s, _)| text[op_at..].starts_with(s))
            .map(|(s, c)| (*c, s.len()))
            .ok_or_else(|| err(column(text, op_at), "an operator: <, <=, >, >=, == or !="))?;
        let subject = &text[..op_at];
        let lead = subject.len() - subject.trim_start().len();
        let (scope, figure) = parse_subject(subject.trim(), |i| column(text, lead + i))?;
        let value_at = op_at + op_len;
        let value = &text[value_at..];
        let value_lead = value.len() - value.trim_start().len();
        let value_col = column(text, value_at + value_lead);
        let threshold = parse_value(value.trim(), figure).map_err(|e| err(value_col, e))?;
        Ok(Check { text: text.trim().to_string(), scope, figure, cmp, threshold })
    }
}

fn parse_subject(subject: &str, col: impl Fn(usize) -> usize) -> Result<(Scope, Figure), CheckError> {
    let parts: Vec<&str> = subject.split('.').collect();
    let scope_text = parts.first().copied().unwrap_or("");
    if scope_text.is_empty() || !scope_text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(err(
            col(0),
            "`total` or an operation (read, write, fsync...) before the figure, as in `read.latency.p99`",
        ));
    }
    let scope = if scope_text == "total" { Scope::Total } else { Scope::Op(scope_text.to_string()) };
    let figure_at = scope_text.len() + 1;
    let figure = match parts.get(1..).unwrap_or(&[]) {
        ["iops"] => Figure::Iops,
        ["bytes_per_sec"] => Figure::BytesPerSec,
        ["ops"] => Figure::Ops,
        ["errors"] => Figure::Errors,
        [dist @ ("latency" | "service_time"), part] => {
            let part_at = figure_at + dist.len() + 1;
            let part = PARTS
                .iter()
                .find(|(name, _)| name == part)
                .map(|(_, p)| *p)
                .ok_or_else(|| err(col(part_at), format!("a part of {dist}: {PART_NAMES}")))?;
            match (*dist, &scope) {
                ("latency", _) => Figure::Latency(part),
                (_, Scope::Total) => {
                    return Err(err(
                        col(figure_at),
                        "latency.PART for the total: service time is per operation, as in `read.service_time.p99`",
                    ))
                }
                _ => Figure::ServiceTime(part),
            }
        }
        [dist @ ("latency" | "service_time")] => {
            return Err(err(col(subject.len()), format!("a part after `{dist}.`: {PART_NAMES}")))
        }
        _ => return Err(err(col(figure_at.min(subject.len())), format!("a figure after `{scope_text}.`: {FIGURES}"))),
    };
    Ok((scope, figure))
}

/// A number and its unit, in the figure's unit.
fn parse_value(v: &str, figure: Figure) -> Result<f64, String> {
    let split = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let unit = unit.trim();
    let x: f64 = number.parse().ok().filter(|x: &f64| x.is_finite()).ok_or_else(|| match figure {
        Figure::Latency(_) | Figure::ServiceTime(_) => "a time like 2ms, 250us or 1.5s".to_string(),
        Figure::BytesPerSec => "a rate like 500MB/s or 1GiB/s".to_string(),
        _ => "a number like 1000, 10k or 1.5M".to_string(),
    })?;
    let scale = match figure {
        Figure::Latency(_) | Figure::ServiceTime(_) => match unit {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            _ => return Err(format!("a time unit after {number}: ns, us, ms or s (as in {number}ms)")),
        },
        Figure::BytesPerSec => match unit {
            "B/s" => 1.0,
            "KB/s" | "kB/s" => 1e3,
            "MB/s" => 1e6,
            "GB/s" => 1e9,
            "KiB/s" => 1024.0,
            "MiB/s" => 1024.0 * 1024.0,
            "GiB/s" => 1024.0 * 1024.0 * 1024.0,
            _ => return Err(format!("a rate unit after {number}: B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s or GiB/s")),
        },
        _ => match unit {
            "" => 1.0,
            "k" | "K" => 1e3,
            "M" => 1e6,
            "G" => 1e9,
            _ => return Err(format!("a count like {number}, {number}k, {number}M or {number}G")),
        },
    };
    Ok(x * scale)
}

impl Part {
    pub fn name(self) -> &'static str {
        PARTS.iter().find(|(_, p)| *p == self).map_or("?", |(n, _)| n)
    }
}

impl Figure {
    /// The unit of the figure and of a check's threshold: `ns`, `bytes/s` or `count`.
    pub fn unit(self) -> &'static str {
        match self {
            Figure::Latency(_) | Figure::ServiceTime(_) => "ns",
            Figure::BytesPerSec => "bytes/s",
            _ => "count",
        }
    }
    pub fn words(self) -> String {
        match self {
            Figure::Iops => "IOPS".to_string(),
            Figure::BytesPerSec => "throughput".to_string(),
            Figure::Ops => "operations".to_string(),
            Figure::Errors => "errors".to_string(),
            Figure::Latency(p) => format!("latency {}", p.name()),
            Figure::ServiceTime(p) => format!("service time {}", p.name()),
        }
    }
}

impl Cmp {
    pub fn holds(self, measured: f64, threshold: f64) -> bool {
        match self {
            Cmp::Lt => measured < threshold,
            Cmp::Le => measured <= threshold,
            Cmp::Gt => measured > threshold,
            Cmp::Ge => measured >= threshold,
            Cmp::Eq => measured == threshold,
            Cmp::Ne => measured != threshold,
        }
    }
    pub fn symbol(self) -> &'static str {
        OPERATORS.iter().find(|(_, c)| *c == self).map_or("?", |(s, _)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_names_the_column_of_what_is_wrong_and_what_was_expected() {
        let e = Check::parse("read.latency.p98 < 2ms").unwrap_err();
        assert_eq!(e.column, 14, "{e}");
        assert!(e.expected.contains("p99"), "{e}");
        let e = Check::parse("read.latency.p99 < 2").unwrap_err();
        assert_eq!(e.column, 20, "{e}");
        assert!(e.expected.contains("time unit"), "{e}");
        let e = Check::parse("read.latency.p99 2ms").unwrap_err();
        assert!(e.expected.contains("operator"), "{e}");
        let e = Check::parse("read.lat.p99 < 2ms").unwrap_err();
        assert_eq!(e.column, 6, "{e}");
        let e = Check::parse("total.bytes_per_sec > 5 furlongs").unwrap_err();
        assert!(e.expected.contains("MB/s"), "{e}");
        let e = Check::parse(" < 2ms").unwrap_err();
        assert!(e.expected.contains("total"), "{e}");
        let e = Check::parse("read.latency < 2ms").unwrap_err();
        assert!(e.expected.contains("p99"), "{e}");
        // The total has no service time: a check that could never pass is refused.
        let e = Check::parse("total.service_time.p99 < 1ms").unwrap_err();
        assert_eq!(e.column, 7, "{e}");
    }

    #[test]
    fn values_are_taken_in_the_figures_unit() {
        assert_eq!(Check::parse("read.latency.p99 < 2ms").unwrap().threshold, 2e6);
        assert_eq!(Check::parse("read.latency.p99<250us").unwrap().threshold, 250e3);
        assert_eq!(Check::parse("write.service_time.max <= 1.5s").unwrap().threshold, 1.5e9);
        assert_eq!(Check::parse("total.bytes_per_sec >= 1GiB/s").unwrap().threshold, 1073741824.0);
        assert_eq!(Check::parse("total.iops > 10k").unwrap().threshold, 1e4);
        assert_eq!(Check::parse("total.errors == 0").unwrap().cmp, Cmp::Eq);
    }
}
