//! From what the user typed to a [`Plan`]: the TOML walker, flag merging and validation.
//!
//! Values come from defaults, then the workload file, then flags (a flag replaces the file's
//! value for its key, and only the value in effect is checked). Every problem is collected as a
//! [`Diagnostic`] pointing at the value (or flag) responsible; nothing stops at the first one.

use crate::diagnostic::{closest, Diagnostic};
use crate::plan::{BlockSize, EngineKind, Plan, Rw, SyncMode};
use crate::units::{format_size, parse_duration, parse_size};
use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;
use toml_edit::{Document, Item, TableLike, Value};

/// Raw workload flags from the command line, as typed (strings), so that they are validated
/// together with the file and every error is reported at once. None = not given.
#[derive(Default, Clone, Debug)]
pub struct Flags {
    pub rw: Option<String>,
    pub rwmix_read: Option<String>,
    pub bs: Option<String>,
    pub size: Option<String>,
    pub files: Option<String>,
    pub threads: Option<String>,
    pub iodepth: Option<String>,
    pub duration: Option<String>,
    pub dir: Option<String>,
    pub direct: bool,
    pub sync: Option<String>,
    pub rate_iops: Option<String>,
    pub engine: Option<String>,
    pub sqpoll: bool,
    pub force: bool,
    pub cleanup: bool,
}

/// A workload file's path (as the user gave it) and text.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub path: PathBuf,
    pub text: String,
}

/// Every key a workload file may contain, in canonical order, with its command-line flag
/// (`description` has none).
pub(crate) const KEYS: [(&str, &str); 17] = [
    ("description", ""),
    ("engine", "--engine"),
    ("rw", "--rw"),
    ("rwmix_read", "--rwmix-read"),
    ("bs", "--bs"),
    ("size", "--size"),
    ("files", "--files"),
    ("threads", "--threads"),
    ("iodepth", "--iodepth"),
    ("sqpoll", "--sqpoll"),
    ("duration", "--duration"),
    ("dir", "--dir"),
    ("direct", "--direct"),
    ("sync", "--sync"),
    ("rate_iops", "--rate-iops"),
    ("force", "--force"),
    ("cleanup", "--cleanup"),
];

/// Names people bring from fio (or guess), and the key ioscope uses instead.
const ALIASES: [(&str, &str); 14] = [
    ("blocksize", "bs"),
    ("block_size", "bs"),
    ("numjobs", "threads"),
    ("jobs", "threads"),
    ("runtime", "duration"),
    ("time", "duration"),
    ("directory", "dir"),
    ("path", "dir"),
    ("ioengine", "engine"),
    ("filesize", "size"),
    ("nrfiles", "files"),
    ("rate", "rate_iops"),
    ("rwmixread", "rwmix_read"),
    ("readwrite", "rw"),
];

/// Largest accepted block size.
const MAX_BS: u64 = 256 << 20;
/// Longest accepted run.
const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);
const SIZE_EXAMPLE: &str = "a size like 4k, 64k, 1m";
const DIR_EXPECTED: &str = "a directory path, e.g. --dir /mnt/test or dir = \"/mnt/test\"";

const ENGINES: &[(&str, EngineKind)] = &[
    ("posix", EngineKind::Posix),
    ("uring", EngineKind::Uring),
    ("io_uring", EngineKind::Uring),
    ("null", EngineKind::Null),
];
const RWS: &[(&str, Rw)] = &[
    ("read", Rw::Read),
    ("write", Rw::Write),
    ("randread", Rw::RandRead),
    ("randwrite", Rw::RandWrite),
    ("randrw", Rw::RandRw),
];
const SYNCS: &[(&str, SyncMode)] = &[
    ("none", SyncMode::None),
    ("fsync", SyncMode::Fsync),
    ("fdatasync", SyncMode::Fdatasync),
    ("dsync", SyncMode::Dsync),
];

/// Whether `key` is a workload key (file key names, not flags).
pub fn is_known_key(key: &str) -> bool {
    KEYS.iter().any(|(k, _)| *k == key)
}

fn flag_name(key: &str) -> &'static str {
    KEYS.iter().find(|(k, _)| *k == key).map_or("", |(_, f)| *f)
}

/// Builds the Plan from defaults < file < flags (flags override the file). Returns every
/// problem found, never just the first, in file order, then flag order.
pub fn build_plan(file: Option<&SourceFile>, flags: &Flags) -> Result<Plan, Vec<Diagnostic>> {
    let parsed = file.map(|f| (f, Document::parse(f.text.as_str())));
    let mut ctx = Ctx { file, flags, entries: HashMap::new(), diags: Vec::new(), syntax_failed: false };
    match &parsed {
        Some((_, Ok(doc))) => ctx.walk(doc.as_table()),
        Some((f, Err(e))) => {
            ctx.syntax_failed = true;
            let span = e.span().unwrap_or(f.text.len()..f.text.len());
            // toml_edit says "<what is wrong>, expected <alternatives>".
            let msg = e.message().trim();
            let (what, expected) = msg.split_once(", expected ").unwrap_or((msg, ""));
            let diag = Diagnostic::in_file(&f.path, &f.text, span, "", what, expected, "");
            ctx.diags.push(diag);
        }
        None => {}
    }
    let plan = ctx.plan();
    let mut diags = ctx.diags;
    if diags.is_empty() {
        if let Some(plan) = plan {
            return Ok(plan);
        }
    }
    diags.sort_by_key(|d| match &d.origin {
        crate::Origin::File { line, col, .. } => (0, *line, *col),
        crate::Origin::Flag { .. } => (1, 0, 0),
    });
    Err(diags)
}

/// Validates a file alone (`ioscope validate FILE`): exactly the rules of [`build_plan`] with no
/// flags, so a file that validates also runs.
pub fn validate_file(file: &SourceFile) -> Result<Plan, Vec<Diagnostic>> {
    build_plan(Some(file), &Flags::default())
}

/// Where a value came from, to point a diagnostic at it.
#[derive(Clone, Debug)]
enum Loc {
    /// Bytes `span` of the file; `shown` is the value as written, shortened to one line.
    File { span: Range<usize>, shown: String },
    /// A flag and its text (empty for a bare flag such as `--direct`).
    Flag { flag: &'static str, text: String },
    /// The built-in default: nothing to point at.
    Default,
}

impl Loc {
    /// "line 2", "--rw", "the default": where a setting came from, for explanations.
    fn describe(&self, text: &str) -> String {
        match self {
            Loc::File { span, .. } => {
                format!("line {}", text[..span.start.min(text.len())].matches('\n').count() + 1)
            }
            Loc::Flag { flag, .. } => flag.to_string(),
            Loc::Default => "the default".to_string(),
        }
    }
}

/// The effective input for one key: a file value or a flag's text.
enum Raw<'a> {
    Toml(&'a Item),
    Flag(&'a str),
}

/// The outcome of reading one key.
enum Got<T> {
    /// Neither file nor flag set it.
    Absent,
    /// It was set, and wrong; a diagnostic has been recorded.
    Bad,
    Ok(T, Loc),
}

impl<T: Clone> Got<T> {
    /// The value, or `default` when absent; None when bad.
    fn or(&self, default: T) -> Option<T> {
        match self {
            Got::Absent => Some(default),
            Got::Bad => None,
            Got::Ok(v, _) => Some(v.clone()),
        }
    }
    fn loc(&self) -> Loc {
        match self {
            Got::Ok(_, l) => l.clone(),
            _ => Loc::Default,
        }
    }
}

/// One block-size entry and where its size was written.
#[derive(Clone, Debug)]
struct BsEntry {
    bs: BlockSize,
    loc: Loc,
}

struct Ctx<'a> {
    file: Option<&'a SourceFile>,
    flags: &'a Flags,
    /// The file's known top-level keys: key span and item.
    entries: HashMap<&'static str, (Option<Range<usize>>, &'a Item)>,
    diags: Vec<Diagnostic>,
    /// The file did not parse: skip the rules that need the whole picture.
    syntax_failed: bool,
}

impl<'a> Ctx<'a> {
    fn text(&self) -> &'a str {
        self.file.map_or("", |f| f.text.as_str())
    }

    /// Records a problem with the value at `loc`.
    fn err(&mut self, loc: &Loc, key: &str, expected: impl Into<String>, message: impl Into<String>) {
        let d = match loc {
            Loc::File { span, shown } => {
                let f = self.file.expect("file location without a file");
                Diagnostic::in_file(&f.path, &f.text, span.clone(), key, shown, expected, message)
            }
            Loc::Flag { flag, text } => Diagnostic::at_flag(*flag, key, text, expected, message),
            Loc::Default => Diagnostic::at_flag(flag_name(key), key, "", expected, message),
        };
        self.diags.push(d);
    }

    /// A file location for bytes `span`, showing the source text there.
    fn file_loc(&self, span: Range<usize>) -> Loc {
        let text = self.text();
        let raw = text.get(span.clone()).unwrap_or("");
        let mut shown: String = raw.lines().next().unwrap_or("").to_string();
        if shown.len() < raw.trim_end().len() || shown.chars().count() > 60 {
            shown = shown.chars().take(56).collect::<String>() + " …";
        }
        Loc::File { span, shown }
    }

    /// Location of a file item: its value, or its key when the item has no span of its own.
    fn item_loc(&self, item: &Item, key_span: Option<Range<usize>>) -> Loc {
        match item.span().or(key_span) {
            Some(span) => self.file_loc(span),
            None => Loc::Default,
        }
    }

    /// Walks the file's top level: records known keys and reports unknown ones and tables.
    fn walk(&mut self, root: &'a toml_edit::Table) {
        for (name, _) in root.iter() {
            let Some((key, item)) = root.get_key_value(name) else {
                continue;
            };
            let key_span = key.span();
            if let Some((known, _)) = KEYS.iter().find(|(k, _)| *k == name) {
                self.entries.insert(known, (key_span, item));
                continue;
            }
            let loc = match key_span.clone() {
                Some(s) => self.file_loc(s),
                None => self.item_loc(item, None),
            };
            let mut notes = Vec::new();
            if let Some(t) = item.as_table_like() {
                notes.push(if t.is_dotted() {
                    format!("`{name}.…` is a nested key; workload files are flat: write keys at the top level")
                } else {
                    format!("[{name}] starts a table; workload files are flat: write keys at the top level, with no [section] headers")
                });
            }
            if let Some((_, to)) = ALIASES.iter().find(|(from, _)| name.eq_ignore_ascii_case(from)) {
                notes.push(format!("did you mean `{to}`? (`{name}` is spelled `{to}` in ioscope)"));
            } else if let Some(s) = closest(name, &KEYS.map(|(k, _)| k)) {
                notes.push(format!("did you mean `{s}`?"));
            }
            let expected = format!("one of: {}", KEYS.map(|(k, _)| k).join(", "));
            self.err(&loc, name, expected, notes.join("\n"));
        }
    }

    /// The effective raw input for `key` (flag over file) and its location.
    fn raw(&self, key: &str) -> Option<(Raw<'a>, Loc)> {
        let f = self.flags;
        let flag_text: Option<&'a str> = match key {
            "engine" => f.engine.as_deref(),
            "rw" => f.rw.as_deref(),
            "rwmix_read" => f.rwmix_read.as_deref(),
            "bs" => f.bs.as_deref(),
            "size" => f.size.as_deref(),
            "files" => f.files.as_deref(),
            "threads" => f.threads.as_deref(),
            "iodepth" => f.iodepth.as_deref(),
            "duration" => f.duration.as_deref(),
            "dir" => f.dir.as_deref(),
            "sync" => f.sync.as_deref(),
            "rate_iops" => f.rate_iops.as_deref(),
            "direct" => f.direct.then_some(""),
            "sqpoll" => f.sqpoll.then_some(""),
            "force" => f.force.then_some(""),
            "cleanup" => f.cleanup.then_some(""),
            _ => None,
        };
        if let Some(text) = flag_text {
            let loc = Loc::Flag { flag: flag_name(key), text: text.to_string() };
            return Some((Raw::Flag(text), loc));
        }
        let (key_span, item) = self.entries.get(key)?;
        Some((Raw::Toml(item), self.item_loc(item, key_span.clone())))
    }

    /// A whole number in `min..=max`.
    fn int(&mut self, key: &str, min: u64, max: u64) -> Got<u64> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let parsed: Result<i128, String> = match raw {
            Raw::Flag(text) => text.trim().parse::<i128>().map_err(|_| String::new()),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::Integer(i)) => Ok(i128::from(*i.value())),
                Some(Value::String(s)) if s.value().trim().parse::<i128>().is_ok() => {
                    Err(format!("numbers are written without quotes: {key} = {}", s.value().trim()))
                }
                _ => Err(String::new()),
            },
        };
        match parsed {
            Ok(v) if v >= i128::from(min) && v <= i128::from(max) => Got::Ok(v as u64, loc),
            Ok(_) | Err(_) => {
                let note = parsed.err().unwrap_or_default();
                self.err(&loc, key, format!("a whole number from {min} to {max}"), note);
                Got::Bad
            }
        }
    }

    /// `true` or `false` in the file; a bare flag means true.
    fn boolean(&mut self, key: &str) -> Got<bool> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        match raw {
            Raw::Flag(_) => Got::Ok(true, loc),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::Boolean(b)) => Got::Ok(*b.value(), loc),
                v => {
                    let note = match v.and_then(Value::as_str) {
                        Some(s @ ("true" | "false")) => {
                            format!("write it without quotes: {key} = {s}")
                        }
                        _ => String::new(),
                    };
                    self.err(&loc, key, "true or false", note);
                    Got::Bad
                }
            },
        }
    }

    /// A string, as text; None (after reporting) for another TOML type.
    fn string(&mut self, key: &str, raw: Raw<'a>, loc: &Loc, expected: &str) -> Option<&'a str> {
        match raw {
            Raw::Flag(t) => Some(t),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::String(s)) => Some(s.value().as_str()),
                _ => {
                    self.err(loc, key, expected, "");
                    None
                }
            },
        }
    }

    /// One of a fixed set of names (case-insensitive).
    fn choice<T: Copy>(&mut self, key: &str, choices: &[(&str, T)]) -> Got<T> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
        let expected = format!("one of: {}", names.join(", "));
        let Some(s) = self.string(key, raw, &loc, &expected) else {
            return Got::Bad;
        };
        let t = s.trim().to_ascii_lowercase();
        if let Some((_, v)) = choices.iter().find(|(n, _)| *n == t) {
            return Got::Ok(*v, loc);
        }
        let note = if key == "engine" && t == "libaio" {
            "libaio is not an ioscope engine: use uring for queued asynchronous I/O".to_string()
        } else if let Some(c) = closest(&t, &names) {
            format!("did you mean `{c}`?")
        } else {
            String::new()
        };
        self.err(&loc, key, expected, note);
        Got::Bad
    }

    /// A size in bytes: a size string or an integer byte count; above zero.
    fn size(&mut self, key: &str) -> Got<u64> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = "a size like 1g, 512m, 10g (or a byte count), above 0";
        let parsed = match raw {
            Raw::Flag(t) => parse_size(t),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::String(s)) => parse_size(s.value()),
                Some(Value::Integer(i)) if *i.value() >= 0 => Ok(*i.value() as u64),
                Some(Value::Integer(_)) => Err("a size cannot be negative".into()),
                _ => Err(String::new()),
            },
        };
        match parsed {
            Ok(0) => {
                self.err(&loc, key, expected, "");
                Got::Bad
            }
            Ok(v) => Got::Ok(v, loc),
            Err(note) => {
                self.err(&loc, key, expected, note);
                Got::Bad
            }
        }
    }

    /// A duration: a duration string, or a number of seconds; above zero, at most 30 days.
    fn duration(&mut self, key: &str) -> Got<Duration> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let parsed = match raw {
            Raw::Flag(t) => parse_duration(t),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::String(s)) => parse_duration(s.value()),
                Some(Value::Integer(i)) if *i.value() >= 0 => Ok(Duration::from_secs(*i.value() as u64)),
                Some(Value::Float(x)) if x.value().is_finite() && *x.value() >= 0.0 => {
                    Duration::try_from_secs_f64(*x.value()).map_err(|e| e.to_string())
                }
                Some(Value::Integer(_) | Value::Float(_)) => Err("a duration cannot be negative".into()),
                _ => Err(String::new()),
            },
        };
        let expected = "a duration like 90s, 1m30s, 2h (a bare number is seconds), above 0 and at most 30d";
        match parsed {
            Ok(d) if !d.is_zero() && d <= MAX_DURATION => Got::Ok(d, loc),
            Ok(_) => {
                self.err(&loc, key, expected, "");
                Got::Bad
            }
            Err(note) => {
                self.err(&loc, key, expected, note);
                Got::Bad
            }
        }
    }

    /// The directory for the files; a non-empty path.
    fn dir(&mut self) -> Got<PathBuf> {
        let Some((raw, loc)) = self.raw("dir") else {
            return Got::Absent;
        };
        match self.string("dir", raw, &loc, DIR_EXPECTED) {
            Some(s) if !s.trim().is_empty() => Got::Ok(PathBuf::from(s), loc),
            Some(_) => {
                self.err(&loc, "dir", DIR_EXPECTED, "");
                Got::Bad
            }
            None => Got::Bad,
        }
    }

    /// Block sizes: "4k", 4096, "4k:60,64k:40", or an array of `{size, weight}` tables.
    fn block_sizes(&mut self) -> Got<Vec<BsEntry>> {
        let Some((raw, loc)) = self.raw("bs") else {
            return Got::Absent;
        };
        let expected = "a size like 4k, a byte count, or a weighted list like \"4k:60,64k:40\" \
                        or [{size = \"4k\", weight = 60}, ...]";
        let entries = match raw {
            Raw::Flag(t) => self.bs_list(t, &loc),
            Raw::Toml(Item::ArrayOfTables(arr)) => {
                let tables: Vec<(&dyn TableLike, Loc)> = arr
                    .iter()
                    .map(|t| (t as &dyn TableLike, t.span().map_or(loc.clone(), |s| self.file_loc(s))))
                    .collect();
                self.bs_tables(tables, &loc)
            }
            Raw::Toml(item) => match item.as_value() {
                Some(Value::String(s)) => self.bs_list(s.value(), &loc),
                Some(Value::Integer(i)) => {
                    let bytes = u64::try_from(*i.value()).ok();
                    self.bs_entry(bytes.ok_or_else(|| "a size cannot be negative".into()), 1, &loc).map(|e| vec![e])
                }
                Some(Value::Array(a)) => {
                    let mut tables = Vec::new();
                    let mut ok = true;
                    for v in a.iter() {
                        let vloc = v.span().map_or(loc.clone(), |s| self.file_loc(s));
                        match v.as_inline_table() {
                            Some(t) => tables.push((t as &dyn TableLike, vloc)),
                            None => {
                                self.err(&vloc, "bs", "a table like {size = \"4k\", weight = 60}", "");
                                ok = false;
                            }
                        }
                    }
                    let got = self.bs_tables(tables, &loc);
                    got.filter(|_| ok)
                }
                _ => {
                    self.err(&loc, "bs", expected, "");
                    None
                }
            },
        };
        match entries {
            Some(e) => Got::Ok(e, loc),
            None => Got::Bad,
        }
    }

    /// Checks one block size (1 byte ..= 256 MiB).
    fn bs_entry(&mut self, bytes: Result<u64, String>, weight: u32, loc: &Loc) -> Option<BsEntry> {
        match bytes {
            Ok(b) if (1..=MAX_BS).contains(&b) => {
                Some(BsEntry { bs: BlockSize { bytes: b, weight }, loc: loc.clone() })
            }
            Ok(b) => {
                let note =
                    if b == 0 { String::new() } else { format!("{} is larger than the 256 MiB limit", format_size(b)) };
                self.err(loc, "bs", "a block size from 1 byte to 256 MiB, like 4k, 64k, 1m", note);
                None
            }
            Err(note) => {
                self.err(loc, "bs", SIZE_EXAMPLE, note);
                None
            }
        }
    }

    /// A location inside the string value at `base`: `range` of its content, when the string is
    /// written plainly (no escapes) so that content offsets map to file offsets.
    fn sub_loc(&self, base: &Loc, content: &str, range: Range<usize>) -> Option<Loc> {
        let Loc::File { span, .. } = base else {
            return None;
        };
        let raw = self.text().get(span.clone())?;
        let plain = raw.len() == content.len() + 2
            && (raw.starts_with('"') || raw.starts_with('\''))
            && raw.get(1..raw.len() - 1) == Some(content);
        if !plain {
            return None;
        }
        let start = span.start + 1 + range.start;
        let mut loc = self.file_loc(start..span.start + 1 + range.end);
        if let Loc::File { shown, .. } = &mut loc {
            *shown = format!("\"{}\"", &content[range]);
        }
        Some(loc)
    }

    /// "4k" or "4k:60,32k:25,...". Entries need a weight when there is more than one.
    fn bs_list(&mut self, s: &str, base: &Loc) -> Option<Vec<BsEntry>> {
        let mut pieces = Vec::new();
        let mut start = 0;
        for (i, c) in s.char_indices().chain(std::iter::once((s.len(), ','))) {
            if c == ',' {
                pieces.push(start..i);
                start = i + 1;
            }
        }
        let multi = pieces.len() > 1;
        let mut out = Vec::new();
        let mut ok = true;
        for piece in pieces {
            let text = &s[piece.clone()];
            let trimmed = trim_range(s, piece.clone());
            // Point at the entry itself when possible; otherwise at the whole value, with a note.
            // (A lone size is the whole value: point at all of it, quotes included.)
            let sub = |ctx: &Self, r: Range<usize>| -> (Loc, String) {
                if !multi && weight_free(s) {
                    return (base.clone(), String::new());
                }
                match ctx.sub_loc(base, s, r) {
                    Some(l) => (l, String::new()),
                    None if multi => (base.clone(), format!("in entry \"{}\"", text.trim())),
                    None => (base.clone(), String::new()),
                }
            };
            if trimmed.is_empty() {
                let (loc, _) = sub(self, piece.clone());
                self.err(
                    &loc,
                    "bs",
                    "SIZE:WEIGHT entries separated by commas, like \"4k:60,64k:40\"",
                    "an entry is empty (two commas in a row, or one at an end?)",
                );
                ok = false;
                continue;
            }
            let (size_r, weight_r) = match s[trimmed.clone()].find(':') {
                Some(i) => (
                    trim_range(s, trimmed.start..trimmed.start + i),
                    Some(trim_range(s, trimmed.start + i + 1..trimmed.end)),
                ),
                None => (trimmed.clone(), None),
            };
            let weight = match weight_r {
                Some(wr) => {
                    let w = s[wr.clone()].parse::<u32>().ok().filter(|w| *w > 0);
                    if w.is_none() {
                        let (loc, note) = sub(self, wr);
                        self.err(&loc, "bs", "a weight that is a whole number from 1 to 4294967295, like 4k:60", note);
                    }
                    w
                }
                None if multi => {
                    let (loc, note) = sub(self, trimmed.clone());
                    self.err(&loc, "bs", "SIZE:WEIGHT, like 4k:60 (each entry of a list needs a weight)", note);
                    None
                }
                None => Some(1),
            };
            let (loc, note) = sub(self, size_r.clone());
            let entry = match parse_size(&s[size_r]) {
                Ok(b) => self.bs_entry(Ok(b), weight.unwrap_or(1), &loc),
                Err(e) => {
                    let msg = [note, e].into_iter().filter(|n| !n.is_empty()).collect::<Vec<_>>();
                    self.bs_entry(Err(msg.join("\n")), 1, &loc)
                }
            };
            match (entry, weight) {
                (Some(e), Some(_)) => out.push(e),
                _ => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// `[{size = "4k", weight = 60}, ...]` or `[[bs]]` tables.
    fn bs_tables(&mut self, tables: Vec<(&dyn TableLike, Loc)>, base: &Loc) -> Option<Vec<BsEntry>> {
        if tables.is_empty() {
            self.err(base, "bs", "at least one block size", "");
            return None;
        }
        let multi = tables.len() > 1;
        let mut out = Vec::new();
        let mut ok = true;
        for (t, tloc) in tables {
            let mut misspelt = false;
            for (k, _) in t.iter() {
                if k != "size" && k != "weight" {
                    let kloc = t.key(k).and_then(|k| k.span()).map_or(tloc.clone(), |s| self.file_loc(s));
                    let note = closest(k, &["size", "weight"]).map(|c| format!("did you mean `{c}`?"));
                    self.err(&kloc, &format!("bs.{k}"), "size or weight", note.unwrap_or_default());
                    ok = false;
                    misspelt = true;
                }
            }
            let weight = match t.get_key_value("weight") {
                Some((k, item)) => {
                    let wloc = self.item_loc(item, k.span());
                    let w = item.as_integer().and_then(|w| u32::try_from(w).ok()).filter(|w| *w > 0);
                    if w.is_none() {
                        self.err(&wloc, "bs", "a weight that is a whole number from 1 to 4294967295", "");
                    }
                    w
                }
                // (A misspelt key already explains what is missing.)
                None if misspelt => None,
                None if multi => {
                    self.err(&tloc, "bs", "a weight in each entry, like {size = \"4k\", weight = 60}", "");
                    None
                }
                None => Some(1),
            };
            let entry = match t.get_key_value("size") {
                Some((k, item)) => {
                    let sloc = self.item_loc(item, k.span());
                    let bytes = match item.as_value() {
                        Some(Value::String(s)) => parse_size(s.value()),
                        Some(Value::Integer(i)) => {
                            u64::try_from(*i.value()).map_err(|_| "a size cannot be negative".to_string())
                        }
                        _ => Err(String::new()),
                    };
                    self.bs_entry(bytes, weight.unwrap_or(1), &sloc)
                }
                None if misspelt => None,
                None => {
                    self.err(&tloc, "bs", "a size in each entry, like {size = \"4k\", weight = 60}", "");
                    None
                }
            };
            match (entry, weight) {
                (Some(e), Some(_)) => out.push(e),
                _ => ok = false,
            }
        }
        ok.then_some(out)
    }

    /// Reads every key, applies defaults and the rules between keys. None if anything is wrong
    /// (the diagnostics say what).
    fn plan(&mut self) -> Option<Plan> {
        let engine_g = self.choice("engine", ENGINES);
        let rw_g = self.choice("rw", RWS);
        let rwmix_g = self.int("rwmix_read", 0, 100);
        let bs_g = self.block_sizes();
        let size_g = self.size("size");
        let files_g = self.int("files", 1, 1_000_000);
        let threads_g = self.int("threads", 1, 4096);
        let iodepth_g = self.int("iodepth", 1, 1024);
        let sqpoll_g = self.boolean("sqpoll");
        let duration_g = self.duration("duration");
        let dir_g = self.dir();
        let direct_g = self.boolean("direct");
        let sync_g = self.choice("sync", SYNCS);
        let rate_g = self.int("rate_iops", 1, 100_000_000);
        let force_g = self.boolean("force");
        let cleanup_g = self.boolean("cleanup");
        if let Some((raw, loc)) = self.raw("description") {
            self.string("description", raw, &loc, "a string of free text");
        }

        let engine = engine_g.or(EngineKind::Posix);
        let rw = rw_g.or(Rw::RandRead);
        let default_bs = vec![BsEntry { bs: BlockSize { bytes: 4096, weight: 1 }, loc: Loc::Default }];
        let bs = bs_g.or(default_bs);
        let size = size_g.or(1 << 30);
        let files = files_g.or(1);
        let threads = threads_g.or(1);
        let text = self.text();

        // rwmix_read only means something for randrw.
        if let (Got::Ok(_, loc), Some(rw)) = (&rwmix_g, rw) {
            if rw != Rw::RandRw {
                let note = format!(
                    "rwmix_read applies only to rw = randrw, and rw is {} ({}): remove rwmix_read, or set rw = \"randrw\"",
                    rw.name(),
                    rw_g.loc().describe(text)
                );
                self.err(loc, "rwmix_read", "no rwmix_read unless rw = \"randrw\"", note);
            }
        }
        // posix does one I/O at a time per thread.
        if let (Got::Ok(depth, loc), Some(EngineKind::Posix)) = (&iodepth_g, engine) {
            if *depth > 1 {
                self.err(
                    loc,
                    "iodepth",
                    "1 with engine posix",
                    "posix is synchronous: iodepth must be 1 (use engine uring to keep I/Os in flight)",
                );
            }
        }
        // Submission-queue polling is an io_uring feature.
        if let (Got::Ok(true, loc), Some(e)) = (&sqpoll_g, engine) {
            if e != EngineKind::Uring {
                let note = format!("sqpoll is an io_uring option and the engine is {}", e.name());
                self.err(loc, "sqpoll", "sqpoll only with engine = \"uring\"", note);
            }
        }
        // Each file must hold at least one block of the largest size.
        if let (Some(size), Some(files), Some(bs)) = (size, files, &bs) {
            let largest = bs.iter().max_by_key(|e| e.bs.bytes).expect("bs is never empty");
            let max = largest.bs.bytes;
            let need = u128::from(files) * u128::from(max);
            if u128::from(size) < need {
                let why = format!(
                    "each of the {files} file(s) gets size / files = {} and must hold at least one {} block",
                    format_size(size / files),
                    format_size(max)
                );
                if !matches!(size_g.loc(), Loc::Default) {
                    let need = u64::try_from(need).map_or("more".to_string(), format_size);
                    let expected = format!("at least {need} (files × largest bs = {files} × {})", format_size(max));
                    self.err(&size_g.loc(), "size", expected, why);
                } else if !matches!(files_g.loc(), Loc::Default) {
                    let expected = format!(
                        "at most {} files for size {} and bs {}",
                        size / max,
                        format_size(size),
                        format_size(max)
                    );
                    self.err(&files_g.loc(), "files", expected, why);
                } else {
                    let expected = format!("at most {} with size {}", format_size(size), format_size(size));
                    self.err(&largest.loc.clone(), "bs", expected, why);
                }
            }
        }
        // An open-loop rate is split over the threads; each needs at least 1 I/O per second.
        if let (Got::Ok(rate, loc), Some(threads)) = (&rate_g, threads) {
            if *rate < threads {
                self.err(
                    loc,
                    "rate_iops",
                    format!("at least {threads} (1 IOPS per thread)"),
                    format!("each of the {threads} threads needs at least 1 IOPS"),
                );
            }
        }
        // O_DIRECT needs sector-aligned transfers; the null engine does no I/O and ignores it.
        let direct = direct_g.or(false).unwrap_or(false);
        if let (true, Some(EngineKind::Posix | EngineKind::Uring), Some(bs)) = (direct, engine, &bs) {
            for e in bs.iter().filter(|e| e.bs.bytes % 512 != 0) {
                let note = format!(
                    "direct = true (O_DIRECT, {}) needs block sizes that are multiples of 512 bytes; {} is not",
                    direct_g.loc().describe(text),
                    e.bs.bytes
                );
                self.err(&e.loc.clone(), "bs", "a multiple of 512 bytes with direct = true", note);
            }
        }
        // Syncing only makes sense after writes.
        if let (Got::Ok(sync, loc), Some(rw)) = (&sync_g, rw) {
            if *sync != SyncMode::None && rw.default_read_pct() == 100 {
                let note = format!(
                    "sync applies after writes, and rw = {} ({}) never writes: use rw = write, randwrite or randrw, or sync = \"none\"",
                    rw.name(),
                    rw_g.loc().describe(text)
                );
                self.err(loc, "sync", format!("none with rw = {}", rw.name()), note);
            }
        }
        // The files need a home, unless the engine does no I/O.
        if matches!(dir_g, Got::Absent) && engine != Some(EngineKind::Null) && !self.syntax_failed {
            let mut note =
                format!("engine {} reads and writes files in this directory", engine.map_or("posix", |e| e.name()));
            if let Some(f) = self.file {
                note.push_str(&format!("\nneither --dir nor `dir` in {} was given", f.path.display()));
            }
            self.err(&Loc::Default, "dir", DIR_EXPECTED, note);
        }

        let read_pct = match (rw?, &rwmix_g) {
            (Rw::RandRw, Got::Ok(pct, _)) => *pct as u8,
            (rw, _) => rw.default_read_pct(),
        };
        Some(Plan {
            engine: engine?,
            rw: rw?,
            read_pct,
            block_sizes: bs?.into_iter().map(|e| e.bs).collect(),
            size_bytes: size?,
            files: files? as u32,
            threads: threads? as u32,
            iodepth: iodepth_g.or(1)? as u32,
            duration: duration_g.or(Duration::from_secs(60))?,
            dir: match dir_g {
                Got::Ok(d, _) => d,
                Got::Absent => PathBuf::new(),
                Got::Bad => return None,
            },
            direct,
            sync: sync_g.or(SyncMode::None)?,
            rate_iops: match rate_g {
                Got::Ok(r, _) => Some(r),
                Got::Absent => None,
                Got::Bad => return None,
            },
            sqpoll: sqpoll_g.or(false)?,
            force: force_g.or(false)?,
            cleanup: cleanup_g.or(false)?,
        })
    }
}

/// A lone size without a weight, e.g. "4k" (not "4k:60").
fn weight_free(s: &str) -> bool {
    !s.contains(':')
}

/// `range` of `s` without the whitespace at either end.
fn trim_range(s: &str, range: Range<usize>) -> Range<usize> {
    let t = &s[range.clone()];
    let start = range.start + (t.len() - t.trim_start().len());
    let end = range.end - (t.len() - t.trim_end().len());
    start..end.max(start)
}
