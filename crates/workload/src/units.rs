//! Sizes and durations as people type them ("4k", "1m30s") and as ioscope writes them back.
//!
//! Sizes are binary, like fio: `k` = 1024 bytes, `m` = 1024 k, and so on; `4k`, `4K`, `4kb`,
//! `4KiB` and `4 KiB` all mean 4096 bytes, and a bare number is bytes. Durations are a sum of
//! `NUMBERunit` parts (`ns`, `us`, `ms`, `s`, `m`, `h`, `d`); a bare number is seconds.

use std::time::Duration;

const KIB: u64 = 1024;

/// Why a size or a duration does not read; the text is the note shown to the user.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("empty size")]
    EmptySize,
    #[error("empty duration")]
    EmptyDuration,
    #[error("a size cannot be negative")]
    NegativeSize,
    #[error("a duration cannot be negative")]
    NegativeDuration,
    #[error("\"{0}\" is not a number")]
    NotANumber(String),
    #[error("\"{0}\" does not start with a number")]
    NoNumber(String),
    #[error("\"{0}\" is not a size unit (use k, m, g, t or p, powers of 1024; a bare number is bytes)")]
    SizeUnit(String),
    #[error("\"{0}\" is too large")]
    TooLarge(String),
    #[error("\"{0}\" is not a whole number of bytes")]
    NotWholeBytes(String),
    #[error("too long")]
    TooLong,
    #[error("expected a number before \"{0}\"")]
    NumberBefore(String),
    #[error("\"{0}\" needs a unit (ms, s, m, h, d)")]
    NeedsUnit(String),
    #[error("\"{0}\" is not a duration unit (use ms, s, m, h or d)")]
    DurationUnit(String),
}

/// Binary size units, largest first: (suffix letter, bytes, long name used by [`format_size`]).
const SIZE_UNITS: [(char, u64, &str); 5] = [
    ('p', KIB.pow(5), "PiB"),
    ('t', KIB.pow(4), "TiB"),
    ('g', KIB.pow(3), "GiB"),
    ('m', KIB.pow(2), "MiB"),
    ('k', KIB, "KiB"),
];

/// Splits "12.5" into whole and fractional digit strings; rejects anything else.
fn split_number(num: &str) -> Result<(&str, &str), UnitError> {
    let (whole, frac) = match num.split_once('.') {
        Some((w, f)) => (w, f),
        None => (num, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && frac.is_empty()) || !digits(whole) || !digits(frac) {
        return Err(UnitError::NotANumber(num.to_string()));
    }
    if num.ends_with('.') {
        return Err(UnitError::NotANumber(num.to_string()));
    }
    Ok((whole, frac))
}

/// `whole.frac × unit`, exactly; Err if it overflows. Returns (value, remainder != 0).
fn scale(whole: &str, frac: &str, unit: u64) -> Option<(u64, bool)> {
    let w: u64 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    let mut total = w.checked_mul(unit)?;
    if !frac.is_empty() {
        let frac = frac.trim_end_matches('0');
        if frac.len() > 18 {
            return None;
        }
        let denom = 10u128.pow(frac.len() as u32);
        let f: u128 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
        let part = f * unit as u128;
        total = total.checked_add(u64::try_from(part / denom).ok()?)?;
        return Some((total, part % denom != 0));
    }
    Some((total, false))
}

/// Parses a size in bytes: "4k" = 4096, "1m", "10g", "1t", "512" (bytes), "4KiB", "4kb", "4 KiB",
/// "1.5g". Case-insensitive. Zero is accepted; callers reject it where it makes no sense.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let t = s.trim();
    if t.is_empty() {
        return Err(UnitError::EmptySize);
    }
    if t.starts_with('-') {
        return Err(UnitError::NegativeSize);
    }
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(UnitError::NoNumber(t.to_string()));
    }
    let (whole, frac) = split_number(num)?;
    let unit_lc = unit.trim_start().to_ascii_lowercase();
    let mult = match unit_lc.as_str() {
        "" | "b" => 1,
        u => {
            let mut chars = u.chars();
            let letter = chars.next().unwrap_or(' ');
            let rest = chars.as_str();
            let found = SIZE_UNITS.iter().find(|(c, _, _)| *c == letter);
            match (found, rest) {
                (Some((_, bytes, _)), "" | "b" | "ib") => *bytes,
                _ => return Err(UnitError::SizeUnit(unit.trim_start().to_string())),
            }
        }
    };
    match scale(whole, frac, mult) {
        None => Err(UnitError::TooLarge(t.to_string())),
        Some((_, true)) => Err(UnitError::NotWholeBytes(t.to_string())),
        Some((v, false)) => Ok(v),
    }
}

/// Parses a duration: "90s", "1m30s", "2h", "500ms", "1.5h", "1d", "5" (bare number = seconds).
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let t = s.trim().to_ascii_lowercase();
    if t.is_empty() {
        return Err(UnitError::EmptyDuration);
    }
    if t.starts_with('-') {
        return Err(UnitError::NegativeDuration);
    }
    if split_number(&t).is_ok() {
        let (whole, frac) = split_number(&t)?;
        let (ns, _) = scale(whole, frac, 1_000_000_000).ok_or(UnitError::TooLong)?;
        return Ok(Duration::from_nanos(ns));
    }
    let mut rest = t.as_str();
    let mut total: u64 = 0;
    while !rest.is_empty() {
        rest = rest.trim_start();
        let n = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let (num, after) = rest.split_at(n);
        if num.is_empty() {
            return Err(UnitError::NumberBefore(after.to_string()));
        }
        let (whole, frac) = split_number(num)?;
        let after = after.trim_start();
        let u = after.find(|c: char| !c.is_ascii_alphabetic() && c != 'µ').unwrap_or(after.len());
        let (unit, next) = after.split_at(u);
        let unit_ns: u64 = match unit {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" | "sec" | "secs" => 1_000_000_000,
            "m" | "min" | "mins" => 60_000_000_000,
            "h" | "hr" | "hour" | "hours" => 3_600_000_000_000,
            "d" | "day" | "days" => 86_400_000_000_000,
            "" => return Err(UnitError::NeedsUnit(num.to_string())),
            other => return Err(UnitError::DurationUnit(other.to_string())),
        };
        let (part, _) = scale(whole, frac, unit_ns).ok_or(UnitError::TooLong)?;
        total = total.checked_add(part).ok_or(UnitError::TooLong)?;
        rest = next;
    }
    Ok(Duration::from_nanos(total))
}

/// Human-readable size: "512 B", "4 KiB", "256 MiB", "1.5 GiB" (at most two decimals).
pub fn format_size(bytes: u64) -> String {
    for (_, unit, name) in SIZE_UNITS {
        if bytes >= unit {
            if bytes % unit == 0 {
                return format!("{} {name}", bytes / unit);
            }
            let v = bytes as f64 / unit as f64;
            let s = format!("{v:.2}");
            let s = s.trim_end_matches('0').trim_end_matches('.');
            return format!("{s} {name}");
        }
    }
    format!("{bytes} B")
}

/// The shortest exact size string that [`parse_size`] reads back: "4k", "1g", "1536" (bytes).
pub fn size_literal(bytes: u64) -> String {
    for (letter, unit, _) in SIZE_UNITS {
        if bytes >= unit && bytes % unit == 0 {
            return format!("{}{letter}", bytes / unit);
        }
    }
    bytes.to_string()
}

/// A whole number of seconds as the importers write it, in its largest exact unit: "90s",
/// "5m", "2h" (never mixed, so that a converted file reads like the one it came from).
pub fn secs_literal(secs: u64) -> String {
    match secs {
        0 => "0s".into(),
        n if n % 3600 == 0 => format!("{}h", n / 3600),
        n if n % 60 == 0 => format!("{}m", n / 60),
        n => format!("{n}s"),
    }
}

/// An exact duration string that [`parse_duration`] reads back: "1m30s", "500ms", "2h".
pub fn duration_literal(d: Duration) -> String {
    let mut ns = d.as_nanos();
    if ns == 0 {
        return "0s".into();
    }
    let parts: [(&str, u128); 7] = [
        ("d", 86_400_000_000_000),
        ("h", 3_600_000_000_000),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ];
    let mut out = String::new();
    for (name, unit) in parts {
        // Days only when the duration is a whole number of them: "36h" reads better than "1d12h".
        if name == "d" && ns % unit != 0 {
            continue;
        }
        if ns >= unit {
            out.push_str(&format!("{}{name}", ns / unit));
            ns %= unit;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_like_fio() {
        let table: &[(&str, u64)] = &[
            ("4k", 4096),
            ("4K", 4096),
            ("4kb", 4096),
            ("4KB", 4096),
            ("4KiB", 4096),
            ("4 KiB", 4096),
            ("1m", 1 << 20),
            ("256MiB", 256 << 20),
            ("10g", 10 << 30),
            ("1t", 1 << 40),
            ("1p", 1 << 50),
            ("512", 512),
            ("512b", 512),
            ("0", 0),
            ("1.5g", 3 << 29),
            (" 64k ", 65536),
        ];
        for (s, want) in table {
            assert_eq!(parse_size(s), Ok(*want), "parse_size({s:?})");
        }
    }

    #[test]
    fn bad_sizes_are_rejected_with_a_reason() {
        for s in ["", "8q", "k", "-4k", "4kk", "1.2.3k", "4 x", "0.3k", "99999999999p", "4mib2"] {
            assert!(parse_size(s).is_err(), "parse_size({s:?}) should fail");
        }
        assert!(parse_size("8q").unwrap_err().to_string().contains("\"q\""));
        assert!(parse_size("-1").unwrap_err().to_string().contains("negative"));
    }

    #[test]
    fn durations_parse() {
        let table: &[(&str, u64)] = &[
            ("90s", 90_000),
            ("1m30s", 90_000),
            ("1m 30s", 90_000),
            ("2h", 7_200_000),
            ("500ms", 500),
            ("5", 5_000),
            ("1.5h", 5_400_000),
            ("1d", 86_400_000),
            ("60S", 60_000),
        ];
        for (s, ms) in table {
            assert_eq!(parse_duration(s), Ok(Duration::from_millis(*ms)), "parse_duration({s:?})");
        }
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        for s in ["", "abc", "5x", "-5s", "s", "1m30"] {
            assert!(parse_duration(s).is_err(), "parse_duration({s:?}) should fail");
        }
    }

    #[test]
    fn sizes_format_for_people() {
        assert_eq!(format_size(512), "512 B");
        assert_eq!(format_size(4096), "4 KiB");
        assert_eq!(format_size(256 << 20), "256 MiB");
        assert_eq!(format_size(3 << 29), "1.5 GiB");
        assert_eq!(format_size(1 << 40), "1 TiB");
        assert_eq!(format_size(0), "0 B");
    }

    #[test]
    fn importers_write_seconds_in_their_largest_exact_unit() {
        let table: &[(u64, &str)] = &[(0, "0s"), (59, "59s"), (60, "1m"), (5400, "90m"), (7200, "2h"), (86_400, "24h")];
        for (secs, text) in table {
            assert_eq!(secs_literal(*secs), *text);
            assert_eq!(parse_duration(text).unwrap(), Duration::from_secs(*secs));
        }
    }

    #[test]
    fn literals_read_back_exactly() {
        for b in [1, 512, 1536, 4096, 65536, 3 << 29, 1 << 30, (1 << 30) + 1, u64::MAX] {
            assert_eq!(parse_size(&size_literal(b)), Ok(b), "{b}");
        }
        assert_eq!(size_literal(4096), "4k");
        assert_eq!(size_literal(1 << 30), "1g");
        for d in [
            Duration::from_secs(60),
            Duration::from_secs(90),
            Duration::from_millis(1500),
            Duration::from_nanos(3_600_000_000_123),
            Duration::from_secs(86_400 * 30),
            Duration::from_secs(86_400 + 3600),
        ] {
            assert_eq!(parse_duration(&duration_literal(d)), Ok(d), "{d:?}");
        }
        assert_eq!(duration_literal(Duration::from_secs(90)), "1m30s");
        assert_eq!(duration_literal(Duration::from_secs(86_400 * 30)), "30d");
    }
}
