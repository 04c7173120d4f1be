//! Terminal output: the line rewritten in place (only on a TTY) and small formatters.

use std::io::{IsTerminal, Write};
use std::time::Duration;

pub fn stderr_is_tty() -> bool {
    std::io::stderr().is_terminal()
}

/// The width of the terminal on stderr, in columns, if it is one.
pub fn stderr_width() -> Option<usize> {
    let mut size = libc::winsize { ws_row: 0, ws_col: 0, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCGWINSZ writes the struct it is given; it fails on anything but a terminal.
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(usize::from(size.ws_col))
}

/// Rewrites the current stderr line.
pub fn progress_line(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "\r\x1b[2K{text}");
    let _ = e.flush();
}

/// Clears the progress line, if one was shown.
pub fn clear_line(shown: bool) {
    if shown {
        progress_line("");
    }
}

pub fn size(bytes: u64) -> String {
    ioscope_workload::format_size(bytes)
}

pub fn duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => format!("{} ms", d.as_millis()),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// Current UTC time as YYYYMMDD-HHMMSS.
pub fn utc_stamp() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + (month <= 2) as i64;
    format!("{year:04}{month:02}{day:02}-{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// A count with thousands separators: "12,345".
pub fn int(n: u64) -> String {
    ioscope_report::format::int(n)
}
