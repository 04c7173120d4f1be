//! A run's progress on standard error: a bar rewritten in place on a terminal
//! (percentage, ETA, step, threads), or one line per second when stderr is a file or a
//! pipe (vdbench style: time, second, step, threads, IOPS, MB/s, mean and p99 latency,
//! errors), so that a log of a long run says what happened when.

use crate::cli::ProgressMode;
use crate::terminal;
use ioscope_exec::Progress;
use ioscope_report::format;

/// How progress is shown, resolved from `--progress`, `--quiet` and whether stderr is a terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    Bar,
    Lines,
    Nothing,
}

impl Shown {
    pub fn of(mode: ProgressMode, quiet: bool, stderr_is_tty: bool) -> Self {
        match mode {
            _ if quiet => Shown::Nothing,
            ProgressMode::Auto if stderr_is_tty => Shown::Bar,
            ProgressMode::Auto | ProgressMode::Lines => Shown::Lines,
            ProgressMode::Bar => Shown::Bar,
            ProgressMode::None => Shown::Nothing,
        }
    }

    /// Whether a line is rewritten in place (and must be cleared before other messages).
    pub fn bar(self) -> bool {
        self == Shown::Bar
    }
}

/// Prints each second's progress in the chosen way.
pub struct Reporter {
    shown: Shown,
    header_printed: bool,
}

impl Reporter {
    pub fn new(shown: Shown) -> Self {
        Self { shown, header_printed: false }
    }

    pub fn second(&mut self, p: &Progress) {
        match self.shown {
            Shown::Bar => terminal::progress_line(&fit(&bar_text(p), terminal::stderr_width())),
            Shown::Lines => {
                if !self.header_printed {
                    self.header_printed = true;
                    eprintln!("{}", LINE_HEADER);
                }
                eprintln!("{}", line_text(p, &clock()));
            }
            Shown::Nothing => {}
        }
    }
}

/// The column names of [`line_text`].
pub const LINE_HEADER: &str =
    "    time    sec  step  threads          IOPS        MB/s      mean       p99   errors  step label";

/// One line per second: `14:03:22      5   1/3        4        12,345        48.2   0.31 ms   1.20 ms        0  threads=4`.
pub fn line_text(p: &Progress, time: &str) -> String {
    let ns = |v: Option<u64>| v.map_or("-".to_string(), format::ns);
    let mut label = p.step_label.clone();
    if p.warmup {
        label = if label.is_empty() { "warm-up".to_string() } else { format!("{label} (warm-up)") };
    }
    format!(
        "{time:>8} {:>6} {:>5} {:>8} {:>13} {:>11} {:>9} {:>9} {:>8}  {label}",
        // The run's second as stored and named everywhere else (verdicts, summary, UI,
        // API, SQL): from 0 (docs/analytics.md, "What a second is").
        p.second,
        format!("{}/{}", p.step + 1, p.steps),
        p.threads,
        format::iops(p.iops),
        format::float(p.bytes_per_sec / 1e6, 1),
        ns(p.mean_ns),
        ns(p.p99_ns),
        format::int(p.errors),
    )
    .trim_end()
    .to_string()
}

/// The bar: `  42%  ETA 1m05s   12,345 IOPS   48.2 MB/s   p99 1.2 ms   4 threads   step 2/3 threads=4`.
pub fn bar_text(p: &Progress) -> String {
    let pct = if p.total_s > 0.0 { (p.elapsed_s / p.total_s * 100.0).clamp(0.0, 100.0) } else { 100.0 };
    let eta = eta_text((p.total_s - p.elapsed_s).max(0.0));
    let p99 = p.p99_ns.map_or("-".to_string(), format::ns);
    let errors = if p.errors > 0 { format!("   {} errors", p.errors) } else { String::new() };
    let mut step = String::new();
    if p.steps > 1 || !p.step_label.is_empty() || p.warmup {
        step = format!("   step {}/{}", p.step + 1, p.steps);
        if !p.step_label.is_empty() {
            step.push(' ');
            step.push_str(&p.step_label);
        }
        if p.warmup {
            step.push_str(" (warm-up)");
        }
    }
    let threads = if p.threads == 1 { "1 thread".to_string() } else { format!("{} threads", p.threads) };
    // The measurements first: a narrow terminal cuts the line from the right.
    format!(
        "  {pct:>3.0}%  ETA {eta}   {} IOPS   {} MB/s   p99 {p99}{errors}   {threads}{step}",
        format::iops(p.iops),
        format::float(p.bytes_per_sec / 1e6, 1),
    )
}

/// `text` cut to `width` columns less one (a line that wraps cannot be rewritten in place).
fn fit(text: &str, width: Option<usize>) -> String {
    match width {
        Some(w) if w > 1 => text.chars().take(w - 1).collect(),
        _ => text.to_string(),
    }
}

/// Time left as `45s`, `1m05s` or `2h03m`.
fn eta_text(secs: f64) -> String {
    let s = secs.ceil() as u64;
    match s {
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

/// The local time of day, HH:MM:SS.
fn clock() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let t = now as libc::time_t;
    // SAFETY: localtime_r reads `t` and writes only the struct it is given.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return format!("{:02}:{:02}:{:02}", now % 86_400 / 3600, now % 3600 / 60, now % 60);
    }
    format!("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Progress {
        Progress {
            elapsed_s: 15.0,
            total_s: 60.0,
            iops: 12_345.0,
            bytes_per_sec: 48.2e6,
            errors: 0,
            p99_ns: Some(1_200_000),
            mean_ns: Some(310_000),
            second: 14,
            step: 1,
            steps: 3,
            step_label: "threads=4".into(),
            warmup: false,
            threads: 4,
            ops: Vec::new(),
        }
    }

    #[test]
    fn the_bar_shows_percentage_eta_step_and_threads() {
        let text = bar_text(&sample());
        for part in [" 25%", "ETA 45s", "step 2/3 threads=4", "4 threads", "12,345 IOPS", "48.2 MB/s", "p99 1.2"] {
            assert!(text.contains(part), "{part:?} in {text:?}");
        }
    }

    #[test]
    fn a_progress_line_has_one_value_per_header_column() {
        let line = line_text(&sample(), "14:03:22");
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[..4], ["14:03:22", "14", "2/3", "4"], "{line}");
        assert!(line.contains("12,345") && line.contains("48.2") && line.ends_with("threads=4"), "{line}");
        assert!(LINE_HEADER.contains("IOPS") && LINE_HEADER.contains("p99") && LINE_HEADER.contains("errors"));
    }

    #[test]
    fn quiet_and_none_show_nothing_and_auto_follows_the_terminal() {
        assert_eq!(Shown::of(ProgressMode::Bar, true, true), Shown::Nothing);
        assert_eq!(Shown::of(ProgressMode::None, false, true), Shown::Nothing);
        assert_eq!(Shown::of(ProgressMode::Auto, false, true), Shown::Bar);
        assert_eq!(Shown::of(ProgressMode::Auto, false, false), Shown::Lines);
        assert_eq!(Shown::of(ProgressMode::Lines, false, true), Shown::Lines);
        assert_eq!(eta_text(3725.0), "1h02m");
        assert_eq!(eta_text(65.0), "1m05s");
        assert_eq!(fit("  25%  ETA 3s", Some(8)), "  25%  ");
        assert_eq!(fit("  25%", None), "  25%");
    }
}
