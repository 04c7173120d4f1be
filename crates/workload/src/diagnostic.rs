//! Problems in the user's input, with where they are and how they look on a terminal.
//!
//! A file problem prints like a compiler error, with the line and a caret under the value:
//!
//! ```text
//! job.toml:3:6: error: bs "8q": expected a size like 4k, 64k, 1m
//!   |
//! 3 | bs = "8q"
//!   |      ^^^^
//!   = note: "q" is not a size unit (use k, m, g, t or p, powers of 1024; a bare number is bytes)
//! ```
//!
//! A flag problem is one line: `--threads -4: error: expected a whole number from 1 to 4096`.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// Where a problem is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// In a workload file. `line` and `col` are 1-based; `col` and `span_len` count chars.
    File {
        path: PathBuf,
        line: usize,
        col: usize,
        /// The source line (without its newline) to show under the message: all of it, or
        /// up to 120 chars around the problem, cut with "…".
        line_text: String,
        /// Where the carets start in `line_text` (1-based chars) and how many there are.
        caret_col: usize,
        span_len: usize,
    },
    /// In a command-line flag, e.g. `--bs`.
    Flag { flag: String },
    /// Not one problem: how many more were found and not kept (see [`MAX_DIAGNOSTICS`]).
    Omitted { count: usize },
}

/// Most problems kept and shown for one input: past this, they are only counted (a file of
/// a million bad values gets a screenful, not a million messages).
pub const MAX_DIAGNOSTICS: usize = 50;
/// Longest key or value echoed back; longer ones are cut with "…".
const MAX_ECHO_CHARS: usize = 60;
/// Longest note or expected form shown (they may quote the input).
const MAX_NOTE_CHARS: usize = 400;
/// Widest part of a source line shown under a file problem.
const MAX_LINE_CHARS: usize = 120;

/// `s` cut to `max` chars, with "…" when it was longer; control characters (escape
/// sequences, NUL) become U+FFFD so that echoing input cannot drive the terminal.
pub(crate) fn clip(s: &str, max: usize) -> String {
    let mut out: String = s.chars().take(max).map(printable).collect();
    if s.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// `c`, or the replacement character for a control character other than a tab.
fn printable(c: char) -> char {
    if c.is_control() && c != '\t' {
        '\u{FFFD}'
    } else {
        c
    }
}

/// Every line of `s` cut to `max` chars; at most 20 lines.
fn clip_lines(s: &str, max: usize) -> String {
    s.lines().take(20).map(|l| clip(l, max)).collect::<Vec<_>>().join("\n")
}

/// A problem in the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub origin: Origin,
    /// The workload key concerned (`bs`, `threads`, ...); for an unknown key, the key as written
    /// (a file diagnostic whose key is not a workload key displays as `unknown key "..."`);
    /// empty for a TOML syntax error.
    pub key: String,
    /// The offending value as written (TOML source text for files, the flag's text for flags);
    /// empty when there is none (a missing key, a bare flag like `--direct`). For a TOML syntax
    /// error, what is wrong ("duplicate key").
    pub value: String,
    /// What would have been accepted.
    pub expected: String,
    /// Extra sentences (a suggestion, why two settings conflict), one note per line; may be empty.
    pub message: String,
    /// `key` is another tool's option (a Filebench attribute, in an import), not a
    /// workload key: it is named as it is, never as an unknown key.
    pub foreign: bool,
}

impl Diagnostic {
    /// A problem at byte range `span` of `text`, the contents of the file at `path`.
    pub fn in_file(
        path: impl Into<PathBuf>,
        text: &str,
        span: Range<usize>,
        key: impl Into<String>,
        value: impl Into<String>,
        expected: impl Into<String>,
        message: impl Into<String>,
    ) -> Diagnostic {
        let (line, col, line_text, span_len) = locate(text, span);
        let (line_text, caret_col, span_len) = window(&redact(&line_text), col, span_len);
        Diagnostic {
            origin: Origin::File { path: path.into(), line, col, line_text, caret_col, span_len },
            key: clip(&key.into(), MAX_ECHO_CHARS),
            value: clip(&redact(&value.into()), MAX_ECHO_CHARS),
            expected: clip_lines(&expected.into(), MAX_NOTE_CHARS),
            message: clip_lines(&message.into(), MAX_NOTE_CHARS),
            foreign: false,
        }
    }

    /// A problem with command-line flag `flag` (e.g. `--bs`).
    pub fn at_flag(
        flag: impl Into<String>,
        key: impl Into<String>,
        value: impl Into<String>,
        expected: impl Into<String>,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            origin: Origin::Flag { flag: clip(&flag.into(), MAX_ECHO_CHARS) },
            key: clip(&key.into(), MAX_ECHO_CHARS),
            value: clip(&redact(&value.into()), MAX_ECHO_CHARS),
            expected: clip_lines(&expected.into(), MAX_NOTE_CHARS),
            message: clip_lines(&message.into(), MAX_NOTE_CHARS),
            foreign: false,
        }
    }

    /// Stands for `count` more problems that were found and not kept.
    pub fn omitted(count: usize) -> Diagnostic {
        Diagnostic {
            origin: Origin::Omitted { count },
            key: String::new(),
            value: String::new(),
            expected: String::new(),
            message: String::new(),
            foreign: false,
        }
    }

    /// How many problems this stands for.
    fn count(&self) -> usize {
        match self.origin {
            Origin::Omitted { count } => count,
            _ => 1,
        }
    }

    /// What the first line says after "error: ".
    fn headline(&self) -> String {
        let mut s = match &self.origin {
            Origin::Flag { .. } | Origin::Omitted { .. } => String::new(),
            Origin::File { .. } if self.key.is_empty() && self.value.is_empty() => "invalid TOML".to_string(),
            Origin::File { .. } if self.key.is_empty() => format!("invalid TOML ({})", self.value),
            Origin::File { .. } if !self.foreign && !crate::input::is_known_key(&self.key) => {
                format!("unknown key \"{}\"", self.key)
            }
            Origin::File { .. } if self.value.is_empty() => self.key.clone(),
            Origin::File { .. } => format!("{} {}", self.key, self.value),
        };
        if !self.expected.is_empty() {
            if !s.is_empty() {
                s.push_str(": ");
            }
            s.push_str("expected ");
            s.push_str(&self.expected);
        }
        s
    }
}

/// The part of a long `line` to show around 1-based char column `col`: (text, where the
/// carets start in it, how many carets). Short lines are shown whole.
fn window(line: &str, col: usize, span_len: usize) -> (String, usize, usize) {
    let chars = line.chars().count();
    if chars <= MAX_LINE_CHARS {
        return (line.chars().map(printable).collect(), col, span_len);
    }
    // Some context before the problem, the rest after it.
    let start = col.saturating_sub(1).saturating_sub(MAX_LINE_CHARS / 3).min(chars.saturating_sub(MAX_LINE_CHARS));
    let end = (start + MAX_LINE_CHARS).min(chars);
    let mut shown: String = line.chars().skip(start).take(end - start).map(printable).collect();
    let mut caret_col = col - start;
    if start > 0 {
        shown.insert(0, '…');
        caret_col += 1;
    }
    if end < chars {
        shown.push('…');
    }
    let span_len = span_len.min(end.saturating_sub(col.saturating_sub(1))).max(1);
    (shown, caret_col, span_len)
}

/// `text` with the password of every URL's `SCHEME://USER:PASSWORD@` replaced by as many
/// `*` (so that carets under the line still line up): a target refused for holding a
/// password is not echoed with it.
fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let auth_end = tail.find(['/', '?', '#', ' ', '"', '\'']).unwrap_or(tail.len());
        let authority = &tail[..auth_end];
        match (authority.rfind('@'), authority.find(':')) {
            (Some(at), Some(colon)) if colon < at => {
                out.push_str(&authority[..=colon]);
                out.push_str(&"*".repeat(authority[colon + 1..at].chars().count()));
                out.push_str(&authority[at..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[auth_end..];
    }
    out.push_str(rest);
    out
}

/// Byte span → (line, col, line text, span length in chars on that line), all 1-based chars.
fn locate(text: &str, span: Range<usize>) -> (usize, usize, String, usize) {
    let mut start = span.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line = text[..start].matches('\n').count() + 1;
    let col = text[line_start..start].chars().count() + 1;
    let line_text = text[line_start..line_end].trim_end_matches('\r').to_string();
    let mut end = span.end.clamp(start, line_end);
    while !text.is_char_boundary(end) {
        end += 1;
    }
    let span_len = text[start..end].trim_end_matches('\r').chars().count().max(1);
    (line, col, line_text, span_len)
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headline = self.headline();
        let notes = self.message.lines().filter(|l| !l.trim().is_empty());
        match &self.origin {
            Origin::Flag { flag } => {
                let sep = if headline.is_empty() { "" } else { ": " };
                if self.value.is_empty() {
                    write!(f, "{flag}: error{sep}{headline}")?;
                } else {
                    write!(f, "{flag} {}: error{sep}{headline}", self.value)?;
                }
                for note in notes {
                    write!(f, "\n  = note: {note}")?;
                }
            }
            Origin::Omitted { count } => {
                let s = if *count == 1 { "" } else { "s" };
                write!(f, "… and {count} more error{s}, not shown (the first {MAX_DIAGNOSTICS} are above)")?;
            }
            Origin::File { path, line, col, line_text, caret_col, span_len } => {
                let num = line.to_string();
                let pad = " ".repeat(num.len());
                writeln!(f, "{}:{line}:{col}: error: {headline}", path.display())?;
                writeln!(f, "{pad} |")?;
                writeln!(f, "{num} | {line_text}")?;
                // Keep tabs so that the carets line up with the source line.
                let indent: String = line_text
                    .chars()
                    .take(caret_col.saturating_sub(1))
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                write!(f, "{pad} | {indent}{}", "^".repeat((*span_len).max(1)))?;
                for note in notes {
                    write!(f, "\n{pad} = note: {note}")?;
                }
            }
        }
        Ok(())
    }
}

/// All diagnostics for the terminal, a blank line between them, then a count line such as
/// `3 errors; nothing was run.` Empty input gives an empty string.
pub fn render_diagnostics(d: &[Diagnostic]) -> String {
    if d.is_empty() {
        return String::new();
    }
    let mut out = String::new();
    for diag in d {
        out.push_str(&diag.to_string());
        out.push_str("\n\n");
    }
    let n: usize = d.iter().map(Diagnostic::count).sum();
    out.push_str(&format!("{n} error{}; nothing was run.\n", if n == 1 { "" } else { "s" }));
    out
}

/// Optimal-string-alignment edit distance (a swap of two neighbours counts as one edit).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

/// The candidate closest to `word` (ignoring case, `-` vs `_`), if it is close enough to be a typo.
pub(crate) fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    // A long word is no typo of a short name (and comparing it would cost its length squared).
    if word.chars().count() > 64 {
        return None;
    }
    let norm = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    let w = norm(word);
    let limit = (w.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (edit_distance(&w, &norm(c)), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_diagnostic_shows_line_and_carets() {
        let text = "# job\nrw = \"randread\"\nbs = \"8q\"\n";
        let start = text.find("\"8q\"").unwrap();
        let d = Diagnostic::in_file("job.toml", text, start..start + 4, "bs", "\"8q\"", "a size like 4k, 64k, 1m", "");
        assert_eq!(
            d.to_string(),
            "job.toml:3:6: error: bs \"8q\": expected a size like 4k, 64k, 1m\n  |\n3 | bs = \"8q\"\n  |      ^^^^"
        );
    }

    #[test]
    fn columns_count_chars_not_bytes() {
        let text = "description = \"é\"; bs = 1\nthreads = -4";
        let (line, col, _, len) = locate(text, 17..18);
        assert_eq!((line, col, len), (1, 17, 1));
        let at = text.find("-4").unwrap();
        let (line, col, lt, len) = locate(text, at..at + 2);
        assert_eq!((line, col, lt.as_str(), len), (2, 11, "threads = -4", 2));
    }

    #[test]
    fn a_password_in_a_url_is_not_echoed() {
        assert_eq!(redact("smb://u:hunter2@h/s"), "smb://u:*******@h/s");
        assert_eq!(redact("target = \"smb://u:pw@h/s\" # smb://x@y"), "target = \"smb://u:**@h/s\" # smb://x@y");
        assert_eq!(
            redact("nfs://h:2049/e and s3://b/k?endpoint=http://h:9/"),
            "nfs://h:2049/e and s3://b/k?endpoint=http://h:9/"
        );
        assert_eq!(redact("no url"), "no url");
        let d = Diagnostic::at_flag("--target", "target", "smb://u:hunter2@h/s", "an SMB target", "");
        assert!(!d.to_string().contains("hunter2"), "{d}");
    }

    #[test]
    fn flag_diagnostic_is_one_line_plus_notes() {
        let d = Diagnostic::at_flag("--threads", "threads", "-4", "a whole number from 1 to 4096", "");
        assert_eq!(d.to_string(), "--threads -4: error: expected a whole number from 1 to 4096");
        let d = Diagnostic::at_flag("--iodepth", "iodepth", "8", "1 with engine posix", "why");
        assert_eq!(d.to_string(), "--iodepth 8: error: expected 1 with engine posix\n  = note: why");
    }

    #[test]
    fn unknown_key_headline_and_count_line() {
        let text = "thraeds = 4\n";
        let d = Diagnostic::in_file("j.toml", text, 0..7, "thraeds", "", "one of: threads", "did you mean `threads`?");
        let s = d.to_string();
        assert!(s.starts_with("j.toml:1:1: error: unknown key \"thraeds\": expected one of"));
        assert!(s.ends_with("  | ^^^^^^^\n  = note: did you mean `threads`?"), "{s}");
        let all = render_diagnostics(&[d.clone(), d]);
        assert!(all.ends_with("\n\n2 errors; nothing was run.\n"));
        assert_eq!(render_diagnostics(&[]), "");
    }

    #[test]
    fn a_long_line_is_shown_around_the_problem_with_the_carets_under_it() {
        let line: String = (0..300).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        for col in 1..=301 {
            let (shown, caret_col, len) = window(&line, col, 1000);
            let chars: Vec<char> = shown.chars().collect();
            assert!(chars.len() <= MAX_LINE_CHARS + 2, "col {col}");
            assert!(len >= 1 && caret_col + len - 1 <= chars.len() + 1, "col {col}: {caret_col} + {len}");
            if col <= 300 {
                assert_eq!(chars[caret_col - 1], line.chars().nth(col - 1).unwrap(), "col {col}");
            }
        }
        assert_eq!(window("short", 2, 3), ("short".to_string(), 2, 3));
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("abc", 3), "abc");
    }

    #[test]
    fn typo_suggestions() {
        assert_eq!(edit_distance("thraeds", "threads"), 1);
        assert_eq!(closest("thraeds", &["threads", "rw"]), Some("threads"));
        assert_eq!(closest("rate-iops", &["rate_iops", "rw"]), Some("rate_iops"));
        assert_eq!(closest("zzzzzz", &["threads", "rw"]), None);
    }
}
