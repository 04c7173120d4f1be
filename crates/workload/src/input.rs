//! From what the user typed to a [`Plan`]: the TOML walker, flag merging and validation.
//!
//! Values come from defaults, then the workload file, then flags (a flag replaces the file's
//! value for its key, and only the value in effect is checked). Every problem is collected as a
//! [`Diagnostic`] pointing at the value (or flag) responsible; nothing stops at the first one.

use crate::diagnostic::{closest, Diagnostic, MAX_DIAGNOSTICS};
use crate::host::{OnHostLoss, MAX_HOSTS};
use crate::keys::{self, FioMeaning, Section, PATTERN_KEYS};
use crate::plan::{
    BlockSize, CacheMode, Dataset, DatasetFormat, EngineKind, FileIo, FileSelect, MaxErrors, Operation, Pattern,
    PatternMap, Plan, Probe, Rw, Staircase, StaircaseOf, Steps, SyncMode, UntilCi, VerifyMode, Workload,
    DEFAULT_MAX_REPEATS_UNTIL_CI, MAX_REPEATS, MIN_REPEATS_UNTIL_CI,
};
use crate::units::{duration_literal, format_size, parse_duration, parse_size, UnitError};
use ioscope_engine_table::{Capability, Target, TargetRule, ENGINES};
use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;
use toml_edit::{Document, Item, TableLike, Value};

mod access;
mod hosts;

/// Raw workload flags from the command line, as typed (strings), so that they are validated
/// together with the file and every error is reported at once.
#[derive(Default, Clone, Debug)]
pub struct Flags {
    /// Flags in command-line order: the flag's name without dashes, as typed (`threads`,
    /// `numjobs`, `rwmix_read`; any spelling in [`crate::keys`]), and its text ("" for a bare
    /// switch such as `--direct`). A later flag for the same key wins.
    pub given: Vec<(String, String)>,
    /// `--set KEY=VALUE`, in order: any key, `section.key` inside sections (for
    /// `[[workload]]` and `[[probe]]`, every entry). A later one wins.
    pub sets: Vec<String>,
}

impl Flags {
    /// These flags and `--FLAG TEXT` (`flag` without dashes; `text` "" for a bare switch).
    pub fn with(mut self, flag: &str, text: &str) -> Flags {
        self.given.push((flag.to_string(), text.to_string()));
        self
    }
}

/// A workload file's path (as the user gave it) and text.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub path: PathBuf,
    pub text: String,
}

/// Largest workload (or vdbench parameter) file read: far more than any real one, small
/// enough that reading and checking it is quick.
pub const MAX_SOURCE_BYTES: u64 = 4 << 20;

impl SourceFile {
    /// Reads a workload file: a regular file (a FIFO is refused, not waited on) of at most
    /// [`MAX_SOURCE_BYTES`], UTF-8 (TOML is), else why not,
    /// as one line for the terminal (`path: error: ...`, with line and column for bad bytes).
    pub fn read(path: &std::path::Path) -> Result<SourceFile, ReadError> {
        use crate::readfile::FileError;
        // A path too long to open is still echoed short.
        let shown = crate::diagnostic::clip(&path.display().to_string(), 200);
        let bytes = crate::readfile::read(path, MAX_SOURCE_BYTES).map_err(|e| match e {
            FileError::Io(source) => ReadError::Io { path: shown.clone(), source },
            FileError::NotRegular(kind) => ReadError::NotAFile { path: shown.clone(), kind },
            FileError::TooLarge(_) => ReadError::TooLarge { path: shown.clone(), limit: format_size(MAX_SOURCE_BYTES) },
        })?;
        match String::from_utf8(bytes) {
            Ok(text) => Ok(SourceFile { path: path.to_path_buf(), text }),
            Err(e) => {
                let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
                let line = good.iter().filter(|b| **b == b'\n').count() + 1;
                let line_start = good.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
                let col = String::from_utf8_lossy(&good[line_start..]).chars().count() + 1;
                let byte = e.as_bytes()[good.len()];
                Err(ReadError::NotUtf8 { path: shown, line, col, byte })
            }
        }
    }
}

/// Why a workload file could not be read: one line for the terminal, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: error: cannot read the file: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: error: not a regular file ({kind}): expected a workload file (TOML text)")]
    NotAFile { path: String, kind: &'static str },
    #[error("{path}: error: the file is larger than {limit}: expected a workload file (TOML text)")]
    TooLarge { path: String, limit: String },
    #[error("{path}:{line}:{col}: error: byte 0x{byte:02x} is not UTF-8 text: expected a workload file (TOML, which is UTF-8)")]
    NotUtf8 { path: String, line: usize, col: usize, byte: u8 },
}

/// Why a value does not read. Its text is the note under the diagnostic; the expected form
/// is said by the caller.
#[derive(Debug, thiserror::Error)]
enum ValueError {
    #[error(transparent)]
    Unit(#[from] UnitError),
    /// A hint about what was written (`numbers are written without quotes`).
    #[error("{0}")]
    Hint(String),
    /// Not of the expected form; nothing more to say.
    #[error("")]
    Form,
}

/// vdbench's names, and the key ioscope uses, inside sections.
const SECTION_ALIASES: [(&str, &str); 8] = [
    ("anchor", "dir"),
    ("totalsize", "total_size"),
    ("workingsetsize", "working_set"),
    ("xfersize", "bs"),
    ("rdpct", "rwmix_read"),
    ("numjobs", "threads"),
    ("size", "sizes"),
    ("cmd", "command"),
];

/// Names people guess, and the key ioscope uses instead (fio's names are in the key table).
const ALIASES: [(&str, &str); 11] = [
    ("block_size", "bs"),
    ("jobs", "threads"),
    ("time", "duration"),
    ("path", "dir"),
    ("filesize", "size"),
    ("rate", "rate_iops"),
    ("elapsed", "duration"),
    ("fwdrate", "rate_iops"),
    ("iorate", "rate_iops"),
    ("forthreads", "for_threads"),
    ("forxfersize", "for_bs"),
];

/// Largest accepted block size.
const MAX_BS: u64 = 256 << 20;
/// Most I/O buffer memory of one thread (iodepth × largest block size), and of all.
const MAX_BUFFER_BYTES_PER_THREAD: u64 = 1 << 30;
const MAX_BUFFER_BYTES: u64 = 64 << 30;
/// Longest accepted run.
const MAX_DURATION: Duration = Duration::from_secs(30 * 86_400);
const SIZE_EXAMPLE: &str = "a size like 4k, 64k, 1m";
const DIR_EXPECTED: &str = "a directory path, e.g. --dir /mnt/test or dir = \"/mnt/test\"";
const TARGET_DATASET_DIR_EXPECTED: &str =
    "a directory under the target: a relative path like \"tree\", or nfs://..., s3://... or smb://... under the target";
const TARGET_EXPECTED: &str =
    "a target like nfs://server/export/dir?nconnect=4, s3://bucket/prefix?endpoint=http://127.0.0.1:9000 or smb://user@server/share/dir";

const RWS: &[(&str, Rw)] = &[
    ("read", Rw::Read),
    ("write", Rw::Write),
    ("randread", Rw::RandRead),
    ("randwrite", Rw::RandWrite),
    ("randrw", Rw::RandRw),
    ("rw", Rw::ReadWrite),
];
const OPERATIONS: &[(&str, Operation)] = &[
    ("read", Operation::Read),
    ("write", Operation::Write),
    ("create", Operation::Create),
    ("delete", Operation::Delete),
    ("mkdir", Operation::Mkdir),
    ("rmdir", Operation::Rmdir),
    ("open", Operation::Open),
    ("close", Operation::Close),
    ("getattr", Operation::Getattr),
    ("setattr", Operation::Setattr),
    ("copy", Operation::Copy),
    ("move", Operation::Move),
    ("list", Operation::List),
];
const ON_HOST_LOSS: &[(&str, OnHostLoss)] = &[("stop", OnHostLoss::Stop), ("continue", OnHostLoss::Continue)];
/// Shortest and longest `host_timeout`.
const HOST_TIMEOUT_RANGE: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(3600));
const FILEIOS: &[(&str, FileIo)] = &[("sequential", FileIo::Sequential), ("random", FileIo::Random)];
const FORMATS: &[(&str, DatasetFormat)] =
    &[("reuse", DatasetFormat::Reuse), ("always", DatasetFormat::Always), ("never", DatasetFormat::Never)];
/// Most steps a run may have.
const MAX_STEPS: u64 = 10_000;
/// Most files a dataset may have.
const MAX_DATASET_FILES: u128 = crate::layout::MAX_DATASET_FILES as u128;
const VERIFY_MODES: &[(&str, VerifyMode)] =
    &[("off", VerifyMode::Off), ("fail", VerifyMode::Fail), ("report", VerifyMode::Report)];
const CACHES: &[(&str, CacheMode)] =
    &[("cold", CacheMode::Cold), ("warm", CacheMode::Warm), ("as-is", CacheMode::AsIs)];
const SYNCS: &[(&str, SyncMode)] = &[
    ("none", SyncMode::None),
    ("fsync", SyncMode::Fsync),
    ("fdatasync", SyncMode::Fdatasync),
    ("dsync", SyncMode::Dsync),
];

/// Whether `key` is a workload key (file key names, not flags).
pub fn is_known_key(key: &str) -> bool {
    table_key(key).is_some() || key.strip_prefix("workload.pattern.").is_some_and(|k| PATTERN_KEYS.contains(&k))
}

/// The table entry of a key as the walker names it: `threads`, `dataset.files`.
fn table_key(key: &str) -> Option<&'static keys::Key> {
    match key.split_once('.') {
        Some((sec, name)) => Section::TABLES.iter().find(|s| s.name() == sec).and_then(|s| keys::find(*s, name)),
        None => keys::find(Section::Top, key),
    }
}

/// The flag of a top-level key, as shown in messages (`--rwmix-read`); "" when it has none.
fn flag_name(key: &str) -> String {
    table_key(key).and_then(|k| k.flag).filter(|_| !key.contains('.')).map_or(String::new(), |f| format!("--{f}"))
}

/// The top-level names of a workload file: its keys, then its sections.
fn top_names() -> Vec<&'static str> {
    keys::in_section(Section::Top).map(|k| k.name).chain(Section::TABLES.iter().map(|s| s.name())).collect()
}

/// A flag resolved to its key: the key, its text, and the flag as typed (`--numjobs`).
struct FlagValue<'a> {
    key: &'static str,
    text: &'a str,
    flag: String,
}

/// Resolves the command-line flags to keys: any spelling of a key's flag, or a fio option
/// (a switch that sets a key, a no-op, or a refusal with the reason).
fn resolve_flags<'a>(given: &'a [(String, String)], diags: &mut Vec<Diagnostic>) -> Vec<FlagValue<'a>> {
    let mut out = Vec::new();
    for (name, text) in given {
        let flag = format!("--{name}");
        if let Some(key) = keys::by_flag(name) {
            out.push(FlagValue { key: key.name, text: text.as_str(), flag });
            continue;
        }
        let meaning = match keys::by_fio_name(name) {
            Some(keys::FioMatch::Option(o)) => o.meaning,
            // A key without a flag of its own: only `--set` and the file.
            Some(keys::FioMatch::Key(k)) => {
                let expected = format!("--set {}=VALUE (`{}` has no flag of its own)", k.name, k.name);
                diags.push(Diagnostic::at_flag(&flag, "", text, expected, ""));
                continue;
            }
            None => {
                diags.push(Diagnostic::at_flag(&flag, "", text, "a workload flag (see ioscope run --help)", ""));
                continue;
            }
        };
        match meaning {
            FioMeaning::Switch { key, on, off, other } => match text.trim() {
                "" | "1" => out.push(FlagValue { key, text: on, flag }),
                "0" => out.push(FlagValue { key, text: off, flag }),
                _ => diags.push(Diagnostic::at_flag(&flag, "", text, "1 or 0", other)),
            },
            FioMeaning::NoOp(_) => {}
            // A bare flag is fio's `=1`.
            FioMeaning::Only { value, why } if text.trim() != value && !(text.is_empty() && value == "1") => {
                let expected = format!("{flag}={value} (ioscope does not do what fio's {flag}={text} asks)");
                diags.push(Diagnostic::at_flag(&flag, "", text, expected, why));
            }
            FioMeaning::Only { .. } => {}
            FioMeaning::Refused(why) => {
                let expected = format!("a flag ioscope has (fio's {flag} has no equivalent)");
                diags.push(Diagnostic::at_flag(&flag, "", text, expected, why));
            }
        }
    }
    out
}

/// A file that is not TOML but reads like fio's ini format: a `.fio` name, or a `[global]`
/// section, or several of fio's own options set without quotes (`ioengine=libaio`, `rw=randread`).
fn looks_like_fio_job_file(path: &std::path::Path, text: &str) -> bool {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("fio")) {
        return true;
    }
    let mut fio_options = 0;
    for line in text.lines().take(1000).map(str::trim) {
        if line.eq_ignore_ascii_case("[global]") {
            return true;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let value = value.trim();
        if ["ioengine", "rw", "readwrite", "numjobs", "iodepth", "runtime", "filename", "directory", "bs", "size"]
            .contains(&key.trim())
            && !value.is_empty()
            && !value.starts_with(['"', '\'', '[', '{'])
            && value.parse::<f64>().is_err()
        {
            fio_options += 1;
        }
    }
    // One unquoted value is more likely a TOML slip than a fio file.
    fio_options >= 2
}

/// Builds the Plan from defaults < file < flags (flags override the file). Returns every
/// problem found, never just the first, in file order, then flag order.
pub fn build_plan(file: Option<&SourceFile>, flags: &Flags) -> Result<Plan, Vec<Diagnostic>> {
    let parsed = file.map(|f| (f, Document::parse(f.text.as_str())));
    let mut diags = Vec::new();
    let sets = parse_sets(&flags.sets, &mut diags);
    let flag_values = resolve_flags(&flags.given, &mut diags);
    let mut ctx = Ctx {
        file,
        flags: flag_values,
        sets: sets.iter().map(|(k, v, t)| (k.as_str(), v.as_ref(), t.as_str())).collect(),
        entries: HashMap::new(),
        arrays: HashMap::new(),
        current: None,
        diags,
        syntax_failed: false,
        omitted: 0,
    };
    match &parsed {
        Some((_, Ok(doc))) => ctx.walk(doc.as_table()),
        Some((f, Err(e))) => {
            ctx.syntax_failed = true;
            let span = e.span().unwrap_or(f.text.len()..f.text.len());
            // toml_edit says "<what is wrong>, expected <alternatives>".
            let msg = e.message().trim();
            let (what, expected) = msg.split_once(", expected ").unwrap_or((msg, ""));
            let hint = if looks_like_fio_job_file(&f.path, &f.text) {
                format!(
                    "this looks like a fio job file: convert it with `ioscope import fio {} -o workload.toml`",
                    f.path.display()
                )
            } else {
                String::new()
            };
            let diag = Diagnostic::in_file(&f.path, &f.text, span, "", what, expected, &hint);
            ctx.diags.push(diag);
        }
        None => {}
    }
    let plan = ctx.plan();
    let omitted = ctx.omitted;
    let mut diags = ctx.diags;
    if diags.is_empty() {
        if let Some(plan) = plan {
            return Ok(plan);
        }
        // Every refusal records why; this is a bug, caught by the tests, never a silent exit.
        debug_assert!(false, "a workload was refused without a diagnostic");
        let note = "the workload was refused without a reason: this is a bug in ioscope";
        diags.push(Diagnostic::at_flag("ioscope", "", "", "", note));
    }
    diags.sort_by_key(|d| match &d.origin {
        crate::Origin::File { line, col, .. } => (0, *line, *col),
        crate::Origin::Flag { .. } => (1, 0, 0),
        crate::Origin::Omitted { .. } => (2, 0, 0),
    });
    if omitted > 0 {
        diags.push(Diagnostic::omitted(omitted));
    }
    Err(diags)
}

/// `--set KEY=VALUE` flags: (key, value as a TOML array/table/boolean if it reads as one, text).
fn parse_sets(sets: &[String], diags: &mut Vec<Diagnostic>) -> Vec<(String, Option<Item>, String)> {
    let known = keys::settable();
    let mut out = Vec::new();
    for set in sets {
        let Some((key, value)) = set.split_once('=') else {
            diags.push(Diagnostic::at_flag("--set", "", set, "KEY=VALUE, e.g. --set dataset.files=10", ""));
            continue;
        };
        let key = key.trim();
        if !known.iter().any(|k| k == key) {
            let names: Vec<&str> = known.iter().map(String::as_str).collect();
            let note = match keys::by_fio_name(key) {
                Some(keys::FioMatch::Key(k)) => {
                    format!("did you mean `{}`? (`{key}` is spelled `{}` in ioscope)", k.name, k.name)
                }
                _ => closest(key, &names).map(|c| format!("did you mean `{c}`?")).unwrap_or_default(),
            };
            let expected = "a workload key (see docs/workload.md), e.g. threads, dataset.files, workload.threads";
            diags.push(Diagnostic::at_flag("--set", key, set, expected, note));
            continue;
        }
        let item = value
            .trim()
            .parse::<Value>()
            .ok()
            .filter(|v| matches!(v, Value::Array(_) | Value::InlineTable(_) | Value::Boolean(_)))
            .map(Item::Value);
        out.push((key.to_string(), item, value.trim().to_string()));
    }
    out
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
    Flag { flag: String, text: String },
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

/// A file's keys at one level: full key ("threads", "dataset.depth") to key span and item.
type Entries<'a> = HashMap<String, (Option<Range<usize>>, &'a Item)>;
/// One table of an array section: its header span and keys.
type ArrayEntry<'a> = (Option<Range<usize>>, Entries<'a>);

struct Ctx<'a> {
    file: Option<&'a SourceFile>,
    /// The command-line flags, resolved to keys, in order.
    flags: Vec<FlagValue<'a>>,
    /// `--set` flags: key, value as TOML (arrays, tables, booleans), text.
    sets: Vec<(&'a str, Option<&'a Item>, &'a str)>,
    /// The file's known keys outside arrays of tables.
    entries: Entries<'a>,
    /// Each `[[workload]]` and `[[probe]]`: its header span and keys.
    arrays: HashMap<&'static str, Vec<ArrayEntry<'a>>>,
    /// The array entry being read: keys of that section are looked up in it.
    current: Option<(&'static str, usize)>,
    diags: Vec<Diagnostic>,
    /// The file did not parse: skip the rules that need the whole picture.
    syntax_failed: bool,
    /// Problems found past the first [`MAX_DIAGNOSTICS`].
    omitted: usize,
}

impl<'a> Ctx<'a> {
    fn text(&self) -> &'a str {
        self.file.map_or("", |f| f.text.as_str())
    }

    /// Records a problem with the value at `loc`; past [`MAX_DIAGNOSTICS`], only counts it.
    fn err(&mut self, loc: &Loc, key: &str, expected: impl Into<String>, message: impl Into<String>) {
        if self.diags.len() >= MAX_DIAGNOSTICS {
            self.omitted += 1;
            return;
        }
        let d = match loc {
            Loc::File { span, shown } => {
                let f = self.file.expect("file location without a file");
                Diagnostic::in_file(&f.path, &f.text, span.clone(), key, shown, expected, message)
            }
            Loc::Flag { flag, text } => Diagnostic::at_flag(flag, key, text, expected, message),
            // Nothing to point at (a required key missing, a value from `--set`): name the
            // key's flag, or the key itself when it has no flag.
            Loc::Default => {
                let flag = Some(flag_name(key)).filter(|f| !f.is_empty()).unwrap_or_else(|| key.to_string());
                Diagnostic::at_flag(flag, key, "", expected, message)
            }
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

    /// Walks the file: records known keys (top level and sections), reports unknown ones.
    fn walk(&mut self, root: &'a toml_edit::Table) {
        for (name, _) in root.iter() {
            let Some((key, item)) = root.get_key_value(name) else {
                continue;
            };
            let key_span = key.span();
            if let Some(section) = Section::TABLES.into_iter().find(|s| s.name() == name) {
                let (sec, array) = (section.name(), section.is_array());
                let header = item.span().or(key_span.clone());
                match (item, array) {
                    (Item::ArrayOfTables(a), true) => {
                        for t in a.iter() {
                            let entries = self.section(section, t);
                            self.arrays.entry(sec).or_default().push((t.span().or(header.clone()), entries));
                        }
                    }
                    (Item::Table(_), true) => {
                        let loc = self.item_loc(item, key_span);
                        self.err(&loc, name, format!("[[{sec}]] (double brackets: there may be several)"), "");
                    }
                    (_, false) if item.is_table_like() => {
                        let entries = self.section(section, item.as_table_like().expect("table"));
                        self.entries.extend(entries);
                    }
                    _ => {
                        let loc = self.item_loc(item, key_span);
                        let form = if array { format!("[[{sec}]] tables") } else { format!("a [{sec}] table") };
                        self.err(&loc, name, form, "");
                    }
                }
                continue;
            }
            if let Some(known) = keys::find(Section::Top, name) {
                self.entries.insert(known.name.to_string(), (key_span, item));
                continue;
            }
            let loc = match key_span.clone() {
                Some(s) => self.file_loc(s),
                None => self.item_loc(item, None),
            };
            let mut notes = Vec::new();
            if item.is_table_like() {
                notes.push(format!(
                    "[{name}] is not a section of a workload file: the sections are [dataset], [[workload]], [[probe]], [[host]] and [[check]]"
                ));
            }
            let names = top_names();
            let fio = keys::by_fio_name(name);
            if let Some(keys::FioMatch::Key(k)) = fio {
                notes.push(format!("did you mean `{}`? (`{name}` is spelled `{}` in ioscope)", k.name, k.name));
            } else if let Some((_, to)) = ALIASES.iter().find(|(from, _)| name.eq_ignore_ascii_case(from)) {
                notes.push(format!("did you mean `{to}`? (`{name}` is spelled `{to}` in ioscope)"));
            } else if let Some(keys::FioMatch::Option(o)) = fio {
                match o.meaning {
                    FioMeaning::Switch { key, .. } => notes.push(format!("`{name}` is fio's: set `{key}` instead")),
                    FioMeaning::NoOp(why) | FioMeaning::Only { why, .. } | FioMeaning::Refused(why) => {
                        notes.push(format!("`{name}` is fio's: {why}"))
                    }
                }
            } else if let Some(s) = closest(name, &names) {
                notes.push(format!("did you mean `{s}`?"));
            }
            let expected = format!("one of: {}", names.join(", "));
            self.err(&loc, name, expected, notes.join("\n"));
        }
    }

    /// The keys of one section table, as "section.key"; unknown keys are reported.
    fn section(&mut self, section: Section, t: &'a dyn TableLike) -> Entries<'a> {
        let sec = section.name();
        let keys: Vec<&str> = keys::in_section(section).map(|k| k.name).collect();
        let mut out = Entries::new();
        for (k, item) in t.iter() {
            let key_span = t.key(k).and_then(|k| k.span());
            if keys.contains(&k) {
                out.insert(format!("{sec}.{k}"), (key_span, item));
                continue;
            }
            let loc = match key_span {
                Some(s) => self.file_loc(s),
                None => self.item_loc(item, None),
            };
            let note = match SECTION_ALIASES.iter().find(|(from, to)| k.eq_ignore_ascii_case(from) && keys.contains(to))
            {
                Some((_, to)) => format!("did you mean `{to}`? (`{k}` is spelled `{to}` in ioscope)"),
                None => closest(k, &keys).map(|c| format!("did you mean `{c}`?")).unwrap_or_default(),
            };
            self.err(&loc, &format!("{sec}.{k}"), format!("in [{sec}], one of: {}", keys.join(", ")), note);
        }
        out
    }

    /// The effective raw input for `key` (flag over file) and its location. Keys of an
    /// array section ("workload.threads") are read from the entry being parsed.
    fn raw(&self, key: &str) -> Option<(Raw<'a>, Loc)> {
        if let Some((_, item, text)) = self.sets.iter().rev().find(|(k, _, _)| *k == key) {
            let loc = Loc::Flag { flag: "--set".into(), text: format!("{key}={text}") };
            return Some((item.map_or(Raw::Flag(text), Raw::Toml), loc));
        }
        if let Some(f) = self.flags.iter().rev().find(|f| f.key == key) {
            let loc = Loc::Flag { flag: f.flag.clone(), text: f.text.to_string() };
            return Some((Raw::Flag(f.text), loc));
        }
        let (key_span, item) = match (key.split_once('.'), self.current) {
            (Some((sec, _)), Some((cur, i))) if sec == cur => self.arrays.get(cur)?.get(i)?.1.get(key)?,
            _ => self.entries.get(key)?,
        };
        Some((Raw::Toml(item), self.item_loc(item, key_span.clone())))
    }

    /// A whole number in `min..=max`.
    fn int(&mut self, key: &str, min: u64, max: u64) -> Got<u64> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let parsed: Result<i128, ValueError> = match raw {
            Raw::Flag(text) => text.trim().parse::<i128>().map_err(|_| ValueError::Form),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::Integer(i)) => Ok(i128::from(*i.value())),
                Some(Value::String(s)) if s.value().trim().parse::<i128>().is_ok() => {
                    Err(ValueError::Hint(format!("numbers are written without quotes: {key} = {}", s.value().trim())))
                }
                _ => Err(ValueError::Form),
            },
        };
        match parsed {
            Ok(v) if v >= i128::from(min) && v <= i128::from(max) => Got::Ok(v as u64, loc),
            Ok(_) | Err(_) => {
                let note = parsed.err().map(|e| e.to_string()).unwrap_or_default();
                self.err(&loc, key, format!("a whole number from {min} to {max}"), note);
                Got::Bad
            }
        }
    }

    /// `true` or `false` in the file; a bare flag means true, and a flag's `=1`/`=0` (fio's
    /// spelling) or `=true`/`=false` says which.
    fn boolean(&mut self, key: &str) -> Got<bool> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        match raw {
            Raw::Flag(text) => match text.trim().to_ascii_lowercase().as_str() {
                "" | "1" | "true" => Got::Ok(true, loc),
                "0" | "false" => Got::Ok(false, loc),
                _ => {
                    self.err(&loc, key, "1 or 0 (true or false); the flag alone means 1", "");
                    Got::Bad
                }
            },
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

    /// A string, as text; None (after reporting) for another TOML type, or a string with a
    /// NUL character (which no path, name or command can hold).
    fn string(&mut self, key: &str, raw: Raw<'a>, loc: &Loc, expected: &str) -> Option<&'a str> {
        let text = match raw {
            Raw::Flag(t) => t,
            Raw::Toml(item) => match item.as_value() {
                Some(Value::String(s)) => s.value().as_str(),
                _ => {
                    self.err(loc, key, expected, "");
                    return None;
                }
            },
        };
        if text.contains('\0') {
            self.err(loc, key, expected, "it contains a NUL character (\\u0000)");
            return None;
        }
        Some(text)
    }

    /// `verify`: off, fail or report; the flag alone (`--verify`) is fail.
    fn verify_mode(&mut self) -> Got<VerifyMode> {
        if let Some((Raw::Flag(t), loc)) = self.raw("verify") {
            if t.trim().is_empty() {
                return Got::Ok(VerifyMode::Fail, loc);
            }
        }
        self.choice("verify", VERIFY_MODES)
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
        // fio's values of the same meaning (`--ioengine psync`).
        let t = table_key(key).map_or(t.as_str(), |k| k.native_value(&t)).to_string();
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
            Raw::Flag(t) => parse_size(t).map_err(ValueError::from),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::String(s)) => parse_size(s.value()).map_err(ValueError::from),
                Some(Value::Integer(i)) if *i.value() >= 0 => Ok(*i.value() as u64),
                Some(Value::Integer(_)) => Err(UnitError::NegativeSize.into()),
                _ => Err(ValueError::Form),
            },
        };
        match parsed {
            Ok(0) => {
                self.err(&loc, key, expected, "");
                Got::Bad
            }
            Ok(v) => Got::Ok(v, loc),
            Err(note) => {
                self.err(&loc, key, expected, note.to_string());
                Got::Bad
            }
        }
    }

    /// A duration: a duration string, or a number of seconds; above zero, at most 30 days.
    fn duration(&mut self, key: &str) -> Got<Duration> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = "a duration like 90s, 1m30s, 2h (a bare number is seconds), above 0 and at most 30d";
        match raw_duration(raw) {
            Ok(d) if !d.is_zero() && d <= MAX_DURATION => Got::Ok(d, loc),
            Ok(_) => {
                self.err(&loc, key, expected, "");
                Got::Bad
            }
            Err(note) => {
                self.err(&loc, key, expected, note.to_string());
                Got::Bad
            }
        }
    }

    /// A step's measured time or warm-up: whole seconds (results are recorded per second,
    /// so a step must fill whole seconds), at least `min_s` seconds, at most 30 days.
    fn step_time(&mut self, key: &str, min_s: u64) -> Got<Duration> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = if min_s == 0 {
            "0 or a whole number of seconds up to 30d, like 10s, 1m (a bare number is seconds)".to_string()
        } else {
            format!("a whole number of seconds from {min_s}s to 30d, like 90s, 1m30s, 2h (a bare number is seconds)")
        };
        let note = match raw_duration(raw) {
            Ok(d) if d.as_secs() >= min_s && d.subsec_nanos() == 0 && d <= MAX_DURATION => return Got::Ok(d, loc),
            Ok(d) if d.subsec_nanos() != 0 => {
                format!(
                    "ioscope records results once a second: {} is not a whole number of seconds",
                    duration_literal(d)
                )
            }
            Ok(d) if d > MAX_DURATION => String::new(),
            Ok(_) if min_s > 0 => format!("a run of less than {min_s}s measures nothing"),
            Ok(_) => String::new(),
            Err(note) => note.to_string(),
        };
        self.err(&loc, key, expected, note);
        Got::Bad
    }

    /// `warmup`: a step time, or `auto` (each step's seconds before it became steady).
    fn warmup(&mut self) -> (Got<Duration>, bool) {
        let auto = match self.raw("warmup") {
            Some((Raw::Flag(t), _)) => t.trim() == "auto",
            Some((Raw::Toml(item), _)) => item.as_str() == Some("auto"),
            None => false,
        };
        if auto {
            return (Got::Absent, true);
        }
        let before = self.diags.len();
        let got = self.step_time("warmup", 0);
        if let Some(d) = self.diags.get_mut(before) {
            d.expected = format!("auto, or {}", d.expected);
        }
        (got, false)
    }

    /// `max_errors`: a count (a TOML integer or its text), a share like "1%", or "off".
    fn max_errors(&mut self) -> Got<MaxErrors> {
        let Some((raw, loc)) = self.raw("max_errors") else {
            return Got::Absent;
        };
        let expected = "a count of failed I/Os (like 1000), a share of the I/Os (like \"1%\" or \"0.1%\"), or \"off\"";
        let parsed = match raw {
            Raw::Flag(t) => MaxErrors::parse(t).map_err(|e| ValueError::Hint(e.to_string())),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::Integer(i)) => {
                    u64::try_from(*i.value()).map(MaxErrors::Count).map_err(|_| ValueError::Form)
                }
                Some(Value::String(s)) => MaxErrors::parse(s.value()).map_err(|e| ValueError::Hint(e.to_string())),
                _ => Err(ValueError::Form),
            },
        };
        match parsed {
            Ok(m) => Got::Ok(m, loc),
            Err(note) => {
                self.err(&loc, "max_errors", expected, note.to_string());
                Got::Bad
            }
        }
    }

    /// `until_ci = "95:5%"`: the confidence and the half-width of the interval.
    fn until_ci(&mut self) -> Got<UntilCi> {
        let Some((raw, loc)) = self.raw("until_ci") else {
            return Got::Absent;
        };
        let expected = "CONFIDENCE:HALF_WIDTH%, like \"95:5%\" (a 95% interval within ±5% of the mean): \
                        the confidence from 50 to 99.9, the half-width above 0 and at most 100%";
        let Some(text) = self.string("until_ci", raw, &loc, expected) else {
            return Got::Bad;
        };
        match UntilCi::parse(text) {
            Some(u) => Got::Ok(u, loc),
            None => {
                self.err(&loc, "until_ci", expected, "");
                Got::Bad
            }
        }
    }

    /// A directory path (non-empty).
    fn dir(&mut self, key: &str) -> Got<PathBuf> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        match self.string(key, raw, &loc, DIR_EXPECTED) {
            // Linux's limits (PATH_MAX, NAME_MAX), checked here rather than after preparing.
            Some(s) if s.len() >= 4096 || s.split('/').any(|c| c.len() > 255) => {
                let note = format!(
                    "the path has {} bytes; a path has at most 4095 bytes and each name in it at most 255",
                    s.len()
                );
                self.err(&loc, key, DIR_EXPECTED, note);
                Got::Bad
            }
            Some(s) if !s.trim().is_empty() => Got::Ok(PathBuf::from(s), loc),
            Some(_) => {
                self.err(&loc, key, DIR_EXPECTED, "");
                Got::Bad
            }
            None => Got::Bad,
        }
    }

    /// Free text (a name, a command); not empty.
    fn text_value(&mut self, key: &str, expected: &str) -> Got<String> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        match self.string(key, raw, &loc, expected) {
            Some(s) if !s.trim().is_empty() => Got::Ok(s.to_string(), loc),
            Some(_) => {
                self.err(&loc, key, expected, "it is empty");
                Got::Bad
            }
            None => Got::Bad,
        }
    }

    /// The items of a list value: a TOML array (each item with its location), a flag's
    /// comma-separated text, or (when `single_ok`) a lone value.
    fn list_items(&mut self, key: &str, expected: &str, single_ok: bool) -> Option<(Vec<(ListItem<'a>, Loc)>, Loc)> {
        let (raw, loc) = self.raw(key)?;
        let items = match raw {
            Raw::Flag(t) => t.split(',').map(|p| (ListItem::Text(p.trim()), loc.clone())).collect(),
            Raw::Toml(item) => match item.as_value() {
                Some(Value::Array(a)) => {
                    a.iter().map(|v| (ListItem::Toml(v), v.span().map_or(loc.clone(), |s| self.file_loc(s)))).collect()
                }
                Some(v) if single_ok => vec![(ListItem::Toml(v), loc.clone())],
                _ => {
                    self.err(&loc, key, expected, "");
                    return Some((Vec::new(), loc));
                }
            },
        };
        Some((items, loc))
    }

    /// A list of whole numbers in `min..=max`, like `[1, 2, 4]` (flag: "1,2,4").
    fn int_list(&mut self, key: &str, min: u64, max: u64) -> Got<Vec<u64>> {
        let expected = format!("a list of whole numbers from {min} to {max}, like [1, 2, 4]");
        let Some((items, loc)) = self.list_items(key, &expected, false) else {
            return Got::Absent;
        };
        let mut out = Vec::new();
        for (item, iloc) in &items {
            let v = match item {
                ListItem::Text(t) => t.parse::<i64>().ok(),
                ListItem::Toml(v) => v.as_integer(),
            };
            match v.filter(|v| *v >= min as i64 && *v <= max as i64) {
                Some(v) => out.push(v as u64),
                None => self.err(iloc, key, expected.as_str(), ""),
            }
        }
        if items.is_empty() || out.len() != items.len() {
            if items.is_empty() {
                self.err(&loc, key, expected.as_str(), "the list is empty");
            }
            return Got::Bad;
        }
        Got::Ok(out, loc)
    }

    /// A list of durations, like `["30m", "60m"]`, or one duration.
    fn duration_list(&mut self, key: &str) -> Got<Vec<Duration>> {
        let expected = "durations from the start of the run, like [\"30m\", \"60m\"]";
        let Some((items, loc)) = self.list_items(key, expected, true) else {
            return Got::Absent;
        };
        let mut out = Vec::new();
        for (item, iloc) in &items {
            let d = match item {
                ListItem::Text(t) => parse_duration(t).map_err(ValueError::from),
                ListItem::Toml(v) => duration_value(v),
            };
            match d {
                Ok(d) if d <= MAX_DURATION => out.push(d),
                Ok(_) => self.err(iloc, key, expected, "at most 30d"),
                Err(note) => self.err(iloc, key, expected, note.to_string()),
            }
        }
        if items.is_empty() {
            self.err(&loc, key, expected, "the list is empty");
            return Got::Bad;
        }
        if out.len() != items.len() {
            return Got::Bad;
        }
        Got::Ok(out, loc)
    }

    /// `for_bs`: a list of block sizes or weighted lists, like `["4k", "64k"]` (flag: "4k 64k").
    fn bs_lists(&mut self, key: &str) -> Got<Vec<Vec<BsEntry>>> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = "a list of block sizes like [\"4k\", \"64k\"] (each may be a weighted list)";
        let mut out = Vec::new();
        let mut ok = true;
        match raw {
            Raw::Flag(t) => {
                for piece in t.split_whitespace() {
                    match self.bs_list(key, piece, &loc) {
                        Some(e) => out.push(e),
                        None => ok = false,
                    }
                }
            }
            Raw::Toml(item) => match item.as_value() {
                Some(Value::Array(a)) => {
                    for v in a.iter() {
                        let vloc = v.span().map_or(loc.clone(), |s| self.file_loc(s));
                        let entries = match v {
                            Value::String(s) => self.bs_list(key, s.value(), &vloc),
                            Value::Integer(i) => {
                                let bytes = u64::try_from(*i.value()).map_err(|_| UnitError::NegativeSize.into());
                                self.bs_entry(key, bytes, 1, &vloc).map(|e| vec![e])
                            }
                            _ => {
                                self.err(&vloc, key, expected, "");
                                None
                            }
                        };
                        match entries {
                            Some(e) => out.push(e),
                            None => ok = false,
                        }
                    }
                }
                _ => {
                    self.err(&loc, key, expected, "");
                    ok = false;
                }
            },
        }
        if out.is_empty() && ok {
            self.err(&loc, key, expected, "the list is empty");
            ok = false;
        }
        if ok {
            Got::Ok(out, loc)
        } else {
            Got::Bad
        }
    }

    /// `curve = true` (10, 20 ... 100) or a list of percentages of the max rate.
    fn curve(&mut self) -> Got<Vec<u8>> {
        if let Some((Raw::Toml(item), loc)) = self.raw("curve") {
            if let Some(b) = item.as_bool() {
                return Got::Ok(if b { (1..=10).map(|i| i * 10).collect() } else { Vec::new() }, loc);
            }
        }
        match self.int_list("curve", 1, 100) {
            Got::Ok(v, loc) => Got::Ok(v.into_iter().map(|p| p as u8).collect(), loc),
            Got::Absent => Got::Absent,
            Got::Bad => Got::Bad,
        }
    }

    /// `staircase = "1-8/5s"` or `"2-16+2/10s"` (threads), or `"hosts:1-4/60s"` (hosts).
    fn staircase(&mut self) -> Got<Staircase> {
        let Some((raw, loc)) = self.raw("staircase") else {
            return Got::Absent;
        };
        let expected = "START-MAX/EVERY or START-MAX+ADD/EVERY, like \"1-8/5s\" (1 to 8 threads, one more every 5 s), \
                        or hosts:START-MAX[+ADD]/EVERY, like \"hosts:1-4/60s\" (one more host every 60 s)";
        let Some(text) = self.string("staircase", raw, &loc, expected) else {
            return Got::Bad;
        };
        let t = text.trim();
        let (of, t, most) = match t.split_once(':') {
            Some((unit, rest)) if unit.trim().eq_ignore_ascii_case("hosts") => {
                (StaircaseOf::Hosts, rest, MAX_HOSTS as u32)
            }
            Some((unit, rest)) if unit.trim().eq_ignore_ascii_case("threads") => (StaircaseOf::Threads, rest, 4096),
            _ => (StaircaseOf::Threads, t, 4096),
        };
        let parsed =
            (|| {
                let (range, every) = t.split_once('/')?;
                let (range, add) = match range.split_once('+') {
                    Some((r, a)) => (r, a.trim().parse::<u32>().ok()?),
                    None => (range, 1),
                };
                let (start, max) = range.split_once('-')?;
                let (start, max) = (start.trim().parse::<u32>().ok()?, max.trim().parse::<u32>().ok()?);
                let every = parse_duration(every).ok()?;
                // Each step fills whole seconds: results are recorded once a second.
                let every_ok = every.as_secs() >= 1 && every.subsec_nanos() == 0 && every <= MAX_DURATION;
                (start >= 1 && max >= start && max <= most && (1..=most).contains(&add) && every_ok)
                    .then_some(Staircase { start, add, max, every, of })
            })();
        match parsed {
            Some(s) => Got::Ok(s, loc),
            None => {
                let what = if of == StaircaseOf::Hosts { "hosts" } else { "threads" };
                let note = format!(
                    "{what} from 1 to {most}, START at most MAX, ADD from 1 to {most}; \
                     EVERY a whole number of seconds from 1s to 30d"
                );
                self.err(&loc, "staircase", expected, note);
                Got::Bad
            }
        }
    }

    /// `fileselect`: random, sequential, or "zipf:THETA".
    fn fileselect(&mut self, key: &str) -> Got<FileSelect> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = "random, sequential, or zipf:THETA (THETA above 0, like zipf:1.2)";
        let Some(text) = self.string(key, raw, &loc, expected) else {
            return Got::Bad;
        };
        let t = text.trim().to_ascii_lowercase();
        let parsed = match t.as_str() {
            "random" => Some(FileSelect::Random),
            "sequential" | "seq" => Some(FileSelect::Sequential),
            "zipf" => Some(FileSelect::Zipf(1.0)),
            z => z
                .strip_prefix("zipf:")
                .and_then(|x| x.trim().parse::<f64>().ok())
                .filter(|x| x.is_finite() && *x > 0.0 && *x <= 10.0)
                .map(FileSelect::Zipf),
        };
        match parsed {
            Some(f) => Got::Ok(f, loc),
            None => {
                self.err(&loc, key, expected, "");
                Got::Bad
            }
        }
    }

    /// A percentage above 0 and at most 100 (an integer or a float).
    fn percent(&mut self, key: &str) -> Got<f64> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let v = match raw {
            Raw::Flag(t) => t.trim().parse::<f64>().ok(),
            Raw::Toml(item) => item.as_float().or_else(|| item.as_integer().map(|i| i as f64)),
        };
        match v.filter(|v| *v > 0.0 && *v <= 100.0) {
            Some(v) => Got::Ok(v, loc),
            None => {
                self.err(&loc, key, "a percentage above 0 and at most 100, like 50", "");
                Got::Bad
            }
        }
    }

    /// `pattern = { text = "HELLO", map = "offset", column = "1s" }`.
    fn pattern(&mut self, key: &str) -> Got<Pattern> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = "a table like { text = \"HELLO\", map = \"offset\" } (map: offset or size; column: time per font column, default 1s)";
        let table = match raw {
            Raw::Toml(item) => item.as_table_like(),
            Raw::Flag(_) => None,
        };
        let Some(t) = table else {
            self.err(&loc, key, expected, "");
            return Got::Bad;
        };
        let mut ok = true;
        for (k, _) in t.iter() {
            if !PATTERN_KEYS.contains(&k) {
                let kloc = t.key(k).and_then(|k| k.span()).map_or(loc.clone(), |s| self.file_loc(s));
                let note = closest(k, &PATTERN_KEYS).map(|c| format!("did you mean `{c}`?")).unwrap_or_default();
                self.err(&kloc, &format!("{key}.{k}"), "text, map or column", note);
                ok = false;
            }
        }
        // Each value is pointed at where it is written, under its own key (`workload.pattern.map`).
        let at = |ctx: &Self, name: &str| t.get_key_value(name).map(|(k, item)| (item, ctx.item_loc(item, k.span())));
        let text = match at(self, "text") {
            None => {
                self.err(&loc, key, expected, "`text` is missing");
                None
            }
            Some((item, tloc)) => {
                let tkey = format!("{key}.text");
                match item.as_str() {
                    Some(s) if s.trim().is_empty() || s.chars().count() > 64 => {
                        self.err(&tloc, &tkey, "a text of 1 to 64 characters", "");
                        None
                    }
                    Some(s) => match crate::font::render(s) {
                        Ok(_) => Some(s.to_string()),
                        Err(c) => {
                            let note = format!("'{c}' has no glyph; the font has {}", crate::font::SUPPORTED);
                            self.err(&tloc, &tkey, "text the 5×7 font can draw", note);
                            None
                        }
                    },
                    None => {
                        self.err(&tloc, &tkey, "a text of 1 to 64 characters, like \"HELLO\"", "");
                        None
                    }
                }
            }
        };
        let map = match at(self, "map") {
            None => Some(PatternMap::Offset),
            Some((item, mloc)) => match item.as_str() {
                Some("offset") => Some(PatternMap::Offset),
                Some("size") => Some(PatternMap::Size),
                _ => {
                    self.err(&mloc, &format!("{key}.map"), "\"offset\" or \"size\"", "");
                    None
                }
            },
        };
        let column = match at(self, "column") {
            None => Some(Duration::from_secs(1)),
            Some((item, cloc)) => match item.as_value().map(duration_value) {
                Some(Ok(d)) if d >= Duration::from_millis(100) && d <= Duration::from_secs(3600) => Some(d),
                _ => {
                    self.err(&cloc, &format!("{key}.column"), "a duration from 100ms to 1h, like \"1s\"", "");
                    None
                }
            },
        };
        match (ok, text, map, column) {
            (true, Some(text), Some(map), Some(column)) => Got::Ok(Pattern { text, map, column }, loc),
            _ => Got::Bad,
        }
    }

    /// Block sizes: "4k", 4096, "4k:60,64k:40", or an array of `{size, weight}` tables.
    fn block_sizes(&mut self, key: &str) -> Got<Vec<BsEntry>> {
        let Some((raw, loc)) = self.raw(key) else {
            return Got::Absent;
        };
        let expected = "a size like 4k, a byte count, or a weighted list like \"4k:60,64k:40\" \
                        or [{size = \"4k\", weight = 60}, ...]";
        let entries = match raw {
            Raw::Flag(t) => self.bs_list(key, t, &loc),
            Raw::Toml(Item::ArrayOfTables(arr)) => {
                let tables: Vec<(&dyn TableLike, Loc)> = arr
                    .iter()
                    .map(|t| (t as &dyn TableLike, t.span().map_or(loc.clone(), |s| self.file_loc(s))))
                    .collect();
                self.bs_tables(key, tables, &loc)
            }
            Raw::Toml(item) => match item.as_value() {
                Some(Value::String(s)) => self.bs_list(key, s.value(), &loc),
                Some(Value::Integer(i)) => {
                    let bytes = u64::try_from(*i.value()).ok();
                    self.bs_entry(key, bytes.ok_or(ValueError::Unit(UnitError::NegativeSize)), 1, &loc).map(|e| vec![e])
                }
                Some(Value::Array(a)) => {
                    let mut tables = Vec::new();
                    let mut ok = true;
                    for v in a.iter() {
                        let vloc = v.span().map_or(loc.clone(), |s| self.file_loc(s));
                        match v.as_inline_table() {
                            Some(t) => tables.push((t as &dyn TableLike, vloc)),
                            None => {
                                self.err(&vloc, key, "a table like {size = \"4k\", weight = 60}", "");
                                ok = false;
                            }
                        }
                    }
                    let got = self.bs_tables(key, tables, &loc);
                    got.filter(|_| ok)
                }
                _ => {
                    self.err(&loc, key, expected, "");
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
    fn bs_entry(&mut self, key: &str, bytes: Result<u64, ValueError>, weight: u32, loc: &Loc) -> Option<BsEntry> {
        match bytes {
            Ok(b) if (1..=MAX_BS).contains(&b) => {
                Some(BsEntry { bs: BlockSize { bytes: b, weight }, loc: loc.clone() })
            }
            Ok(b) => {
                let note =
                    if b == 0 { String::new() } else { format!("{} is larger than the 256 MiB limit", format_size(b)) };
                self.err(loc, key, "a block size from 1 byte to 256 MiB, like 4k, 64k, 1m", note);
                None
            }
            Err(note) => {
                self.err(loc, key, SIZE_EXAMPLE, note.to_string());
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
    fn bs_list(&mut self, key: &str, s: &str, base: &Loc) -> Option<Vec<BsEntry>> {
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
                    key,
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
                        self.err(&loc, key, "a weight that is a whole number from 1 to 4294967295, like 4k:60", note);
                    }
                    w
                }
                None if multi => {
                    let (loc, note) = sub(self, trimmed.clone());
                    self.err(&loc, key, "SIZE:WEIGHT, like 4k:60 (each entry of a list needs a weight)", note);
                    None
                }
                None => Some(1),
            };
            let (loc, note) = sub(self, size_r.clone());
            let entry = match parse_size(&s[size_r]) {
                Ok(b) => self.bs_entry(key, Ok(b), weight.unwrap_or(1), &loc),
                Err(e) => {
                    let msg = [note, e.to_string()].into_iter().filter(|n| !n.is_empty()).collect::<Vec<_>>();
                    self.bs_entry(key, Err(ValueError::Hint(msg.join("\n"))), 1, &loc)
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
    fn bs_tables(&mut self, key: &str, tables: Vec<(&dyn TableLike, Loc)>, base: &Loc) -> Option<Vec<BsEntry>> {
        if tables.is_empty() {
            self.err(base, key, "at least one block size", "");
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
                    self.err(&kloc, &format!("{key}.{k}"), "size or weight", note.unwrap_or_default());
                    ok = false;
                    misspelt = true;
                }
            }
            let weight = match t.get_key_value("weight") {
                Some((k, item)) => {
                    let wloc = self.item_loc(item, k.span());
                    let w = item.as_integer().and_then(|w| u32::try_from(w).ok()).filter(|w| *w > 0);
                    if w.is_none() {
                        self.err(&wloc, key, "a weight that is a whole number from 1 to 4294967295", "");
                    }
                    w
                }
                // (A misspelt key already explains what is missing.)
                None if misspelt => None,
                None if multi => {
                    self.err(&tloc, key, "a weight in each entry, like {size = \"4k\", weight = 60}", "");
                    None
                }
                None => Some(1),
            };
            let entry = match t.get_key_value("size") {
                Some((k, item)) => {
                    let sloc = self.item_loc(item, k.span());
                    let bytes = match item.as_value() {
                        Some(Value::String(s)) => parse_size(s.value()).map_err(ValueError::from),
                        Some(Value::Integer(i)) => {
                            u64::try_from(*i.value()).map_err(|_| UnitError::NegativeSize.into())
                        }
                        _ => Err(ValueError::Form),
                    };
                    self.bs_entry(key, bytes, weight.unwrap_or(1), &sloc)
                }
                None if misspelt => None,
                None => {
                    self.err(&tloc, key, "a size in each entry, like {size = \"4k\", weight = 60}", "");
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
        let engines: Vec<(&str, EngineKind)> = ioscope_engine_table::engine_names().collect();
        let engine_g = self.choice("engine", &engines);
        let iodepth_g = self.int("iodepth", 1, 1024);
        let sqpoll_g = self.boolean("sqpoll");
        let duration_g = self.step_time("duration", 1);
        let (warmup_g, warmup_auto) = self.warmup();
        let steady_window_g = self.step_time("steady_window", 2);
        let until_steady_g = self.step_time("until_steady", 2);
        let mut dir_g = self.dir("dir");
        let mut target_g = self.text_value("target", TARGET_EXPECTED);
        let direct_g = self.boolean("direct");
        let sync_g = self.choice("sync", SYNCS);
        let cache_g = self.choice("cache", CACHES);
        let verify_g = self.verify_mode();
        let verify_block_g = self.size("verify_block");
        let rate_g = self.int("rate_iops", 1, 100_000_000);
        let curve_g = self.curve();
        let for_threads_g = self.int_list("for_threads", 1, 4096);
        let for_bs_g = self.bs_lists("for_bs");
        let for_pct_g = self.int_list("for_rwmix_read", 0, 100);
        let staircase_g = self.staircase();
        let force_g = self.boolean("force");
        let cleanup_g = self.boolean("cleanup");
        let max_errors_g = self.max_errors();
        let breakdown_top_g = self.int("breakdown_top", 0, 10_000);
        let repeat_g = self.int("repeat", 1, u64::from(MAX_REPEATS));
        let until_ci_g = self.until_ci();
        let on_host_loss_g = self.choice("on_host_loss", ON_HOST_LOSS);
        let host_timeout_g = match self.duration("host_timeout") {
            Got::Ok(d, loc) if d < HOST_TIMEOUT_RANGE.0 || d > HOST_TIMEOUT_RANGE.1 => {
                self.err(&loc, "host_timeout", "a duration from 1s to 1h, like 10s", "");
                Got::Bad
            }
            g => g,
        };
        if let Some((raw, loc)) = self.raw("description") {
            self.string("description", raw, &loc, "a string of free text");
        }
        let engine = engine_g.or(EngineKind::Posix);
        let text = self.text();
        // The target, parsed once; its errors are reported with the other engine rules below.
        let target_rule = engine.and_then(|e| e.spec().caps.target);
        // A block device (`--target /dev/X`) for an engine of local files is its `dir`:
        // the device itself is the target (see ioscope_exec::blockdev).
        if let (Got::Ok(dev, loc), None, Got::Absent) = (&target_g, target_rule, &dir_g) {
            if dev.starts_with("/dev/") && engine.is_some_and(|e| e.spec().caps.local_files()) {
                dir_g = Got::Ok(PathBuf::from(dev), loc.clone());
                target_g = Got::Absent;
            }
        }
        let parsed_target = match (&target_g, target_rule) {
            (Got::Ok(url, _), Some(rule)) => Some((rule.parse)(url)),
            _ => None,
        };
        let hosts = self.hosts(engine, target_rule);
        let hosts_given = hosts.as_ref().map_or(0, Vec::len);
        // Each host may have its own dir and target, in place of the top-level ones.
        let every_host_has =
            |f: fn(&crate::host::HostSpec) -> bool| hosts.as_ref().is_some_and(|h| !h.is_empty() && h.iter().all(f));
        let (hosts_dirs, hosts_targets) = (every_host_has(|h| h.dir.is_some()), every_host_has(|h| h.target.is_some()));
        if hosts.as_ref().is_some_and(Vec::is_empty) {
            for (g, key) in [(on_host_loss_g.loc(), "on_host_loss"), (host_timeout_g.loc(), "host_timeout")] {
                if !matches!(g, Loc::Default) {
                    let note = format!("`{key}` is about the client hosts of a many-host run, and this run has none");
                    self.err(&g, key, format!("{key} only with hosts ([[host]] tables or --hosts)"), note);
                }
            }
        }

        // Data: a dataset tree, or the flat working set.
        let has_dataset = self.entries.keys().any(|k| k.starts_with("dataset."))
            || self.sets.iter().any(|(k, _, _)| k.starts_with("dataset."));
        let size_g = self.size("size");
        let files_g = self.int("files", 1, 1_000_000);
        let on_target = target_rule.map(|rule| (rule, parsed_target.as_ref().and_then(|t| t.as_ref().ok())));
        let dataset = if has_dataset { self.dataset(&dir_g, engine, on_target) } else { Some(None) };
        if has_dataset {
            for (g, key) in [(size_g.loc(), "size"), (files_g.loc(), "files")] {
                if !matches!(g, Loc::Default) {
                    let note = format!(
                        "`{key}` sizes the flat working set; with a [dataset], its files and sizes are set there"
                    );
                    self.err(&g, key, "no `size` or `files` with a [dataset]", note);
                }
            }
        }

        // Workloads: [[workload]] tables, or the one workload of the top-level keys.
        let n = self.arrays.get("workload").map_or(0, Vec::len);
        let mut workloads: Vec<Option<ParsedWorkload>> = Vec::new();
        if n == 0 {
            workloads.push(self.flat_workload(has_dataset));
        } else {
            for key in ["rw", "rwmix_read", "bs", "threads", "name"].into_iter().chain(crate::access::KEYS) {
                if let Some((_, loc)) = self.raw(key) {
                    let note = format!("with [[workload]] sections, each workload sets its own `{key}`");
                    self.err(&loc, key, format!("`{key}` inside each [[workload]]"), note);
                }
            }
            for i in 0..n {
                self.current = Some(("workload", i));
                workloads.push(self.workload(i, has_dataset));
                self.current = None;
            }
            let mut names: Vec<&str> = Vec::new();
            for w in workloads.iter().flatten() {
                if names.contains(&w.workload.name.as_str()) {
                    self.err(&w.name_loc, "workload.name", "a name no other workload has", "");
                }
                names.push(&w.workload.name);
            }
        }
        self.sets_need_their_sections(n);
        let probes: Vec<Option<(Probe, Loc)>> = (0..self.arrays.get("probe").map_or(0, Vec::len))
            .map(|i| {
                self.current = Some(("probe", i));
                let p = self.probe(i);
                self.current = None;
                p
            })
            .collect();
        let checks: Vec<Option<String>> = (0..self.arrays.get("check").map_or(0, Vec::len))
            .map(|i| {
                self.current = Some(("check", i));
                let c = self.check(i);
                self.current = None;
                c
            })
            .collect();

        // Repeats.
        if let (Got::Ok(n, loc), Got::Ok(..)) = (&repeat_g, &until_ci_g) {
            if *n < u64::from(MIN_REPEATS_UNTIL_CI) {
                let note = format!(
                    "with until_ci, repeat is the most repeats, and until_ci measures at least {MIN_REPEATS_UNTIL_CI}"
                );
                self.err(loc, "repeat", format!("at least {MIN_REPEATS_UNTIL_CI} with until_ci"), note);
            }
        }
        if hosts.as_ref().is_some_and(|h| !h.is_empty()) {
            for (key, loc) in [("repeat", repeat_g.loc()), ("until_ci", until_ci_g.loc())] {
                if !matches!(loc, Loc::Default) {
                    let note =
                        "repeats run on one host; for many hosts, run the plan several times (one results file each)";
                    self.err(&loc, key, "no repeats in a run with hosts ([[host]] tables or --hosts)", note);
                }
            }
        }

        // Steps.
        if let (Got::Ok(_, loc), Got::Ok(..)) = (&curve_g, &rate_g) {
            let note = "a curve runs at max rate first, then at percentages of it: it sets the rate itself";
            self.err(loc, "curve", "either curve or rate_iops, not both", note);
        }
        if let (Got::Ok(st, loc), Got::Ok(..)) = (&staircase_g, &for_threads_g) {
            let note = match st.of {
                StaircaseOf::Threads => "both step the thread count",
                // Steps of hosts × threads would no longer be a staircase.
                StaircaseOf::Hosts => "a run steps one count: a hosts staircase runs each workload's own threads on every host (set them with threads)",
            };
            self.err(loc, "staircase", "either staircase or for_threads, not both", note);
        }
        if let (Got::Ok(st, loc), Some(hosts)) = (&staircase_g, &hosts) {
            let n = hosts.len();
            let top = st.counts().last().copied().unwrap_or(0) as usize;
            if st.of == StaircaseOf::Hosts && n == 0 {
                let note = "a hosts staircase steps the number of client hosts, and this run has none";
                self.err(loc, "staircase", "a hosts staircase with hosts ([[host]] tables or --hosts)", note);
            } else if st.of == StaircaseOf::Hosts && st.max as usize > n {
                let note = format!("the staircase goes up to {} hosts, and the run has {}", st.max, hosts_n(n));
                self.err(loc, "staircase", format!("at most {} (the run's hosts)", hosts_n(n)), note);
            } else if st.of == StaircaseOf::Hosts && top < n {
                let idle: Vec<&str> = hosts[top..].iter().map(|h| h.name.as_str()).collect();
                let note = format!("its last step uses {top} of the {n} hosts, so {} would never run", idle.join(", "));
                let expected = format!(
                    "a staircase whose last step uses all {n} hosts, like \"hosts:1-{n}/{}\"",
                    duration_literal(st.every)
                );
                self.err(loc, "staircase", expected, note);
            }
        }
        if let (Got::Ok(_, loc), Got::Ok(..)) = (&staircase_g, &duration_g) {
            let note = format!(
                "the staircase's /EVERY part is each step's duration, and duration is also set ({})",
                duration_g.loc().describe(text)
            );
            self.err(loc, "staircase", "no duration with a staircase", note);
        }
        // A synchronous engine does one I/O at a time per thread; so do dataset workloads.
        if let (Got::Ok(depth, loc), Some(e)) = (&iodepth_g, engine.map(EngineKind::spec)) {
            let max = e.caps.max_queue_depth;
            if *depth > u64::from(max) {
                let (expected, note) = if max == 1 {
                    let queued = ENGINES.iter().find(|q| q.caps.queued() && q.caps.target.is_none());
                    let note = format!(
                        "{} is synchronous: iodepth must be 1 (use engine {} to keep I/Os in flight)",
                        e.name,
                        queued.map_or("uring", |q| q.name)
                    );
                    (format!("1 with engine {}", e.name), note)
                } else {
                    let note = format!("engine {} keeps at most {max} I/Os in flight per thread", e.name);
                    (format!("at most {max} with engine {}", e.name), note)
                };
                self.err(loc, "iodepth", expected, note);
            } else if *depth > 1 && has_dataset {
                self.err(
                    loc,
                    "iodepth",
                    "1 with a [dataset]",
                    "dataset workloads do one operation at a time per thread",
                );
            }
        }
        if let (true, Got::Ok(sync, loc)) = (has_dataset, &sync_g) {
            if *sync != SyncMode::None {
                let note = "dataset workloads write whole files through open/write/close; per-write sync applies to the flat working set";
                self.err(loc, "sync", "none with a [dataset]", note);
            }
        }
        let patterned = workloads.iter().flatten().any(|w| w.workload.pattern.is_some());
        if let (true, Some(e)) = (patterned, engine) {
            if !e.spec().caps.patterns || iodepth_g.or(1).unwrap_or(1) > 1 {
                let with = Capability::Patterns.engines_with();
                let note = format!(
                    "a pattern draws column by column, one I/O at a time per thread: use engine {with} with iodepth 1"
                );
                self.err(&engine_g.loc(), "engine", format!("{with}, iodepth 1, for a pattern workload"), note);
            }
        }
        if let (true, Got::Ok(e, loc)) = (has_dataset, &engine_g) {
            if !e.spec().caps.file_ops {
                let with = Capability::FileOps.engines_with();
                let note = format!("dataset workloads (open, create, delete ...) run on engine {with}");
                self.err(loc, "engine", format!("{with} with a [dataset]"), note);
            }
        }
        // An engine with a target, and its target, go together.
        let mut target = None;
        match (&target_g, engine, target_rule, parsed_target) {
            (Got::Ok(_, loc), _, Some(rule), Some(parsed)) => match parsed {
                Ok(t) => target = Some(t),
                Err(e) => self.err(loc, "target", rule.expected, e.0),
            },
            (Got::Ok(_, loc), Some(e), None, _) => {
                let with = Capability::Target.engines_with();
                let note = format!("a target is where engine {with} works, and the engine is {}", e.name());
                self.err(loc, "target", format!("a target only with engine = \"{with}\""), note);
            }
            // Every host may bring its own (a dataset is anchored under the top-level one).
            (Got::Absent, _, Some(_), _) if hosts_targets && !has_dataset => {}
            (Got::Absent, _, Some(rule), _) => self.err(&engine_g.loc(), "target", rule.expected, rule.missing),
            _ => {}
        }
        // Submission-queue polling is an io_uring feature.
        if let (Got::Ok(true, loc), Some(e)) = (&sqpoll_g, engine) {
            if !e.spec().caps.sqpoll {
                let note = format!("sqpoll is an io_uring option and the engine is {}", e.name());
                let with = Capability::Sqpoll.engines_with();
                self.err(loc, "sqpoll", format!("sqpoll only with engine = \"{with}\""), note);
            }
        }
        let parsed: Vec<&ParsedWorkload> = workloads.iter().flatten().collect();
        let all_ok = parsed.len() == workloads.len();
        // Every block size the run can use: the workloads' and the for_bs steps'.
        let mut all_bs: Vec<BsEntry> = parsed.iter().flat_map(|w| w.bs.iter().cloned()).collect();
        if let Got::Ok(lists, _) = &for_bs_g {
            all_bs.extend(lists.iter().flatten().cloned());
        }
        // Each file must hold at least one block of the largest size.
        let (size, files) = (size_g.or(1 << 30), files_g.or(1));
        if let (false, Some(size), Some(files), Some(largest)) =
            (has_dataset, size, files, all_bs.iter().max_by_key(|e| e.bs.bytes))
        {
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
        // An object store writes whole objects: no partial or random writes, no sync, no
        // directories or attributes.
        if let Some(e) = engine.filter(|e| e.spec().caps.objects) {
            let name = e.name();
            if let Got::Ok(sync, loc) = &sync_g {
                if *sync != SyncMode::None {
                    let note = format!("engine {name}: a PUT is durable when it succeeds; there is nothing to sync");
                    self.err(loc, "sync", "none", note);
                }
            }
            if let (false, Some(size), Some(files)) = (has_dataset, size, files) {
                let object = size / files.max(1);
                for w in parsed.iter().filter(|w| w.workload.writes()) {
                    if let Some(b) = w.bs.iter().find(|b| b.bs.bytes != object) {
                        let note = format!(
                            "engine {name} writes whole objects: each write PUTs one object of size / files = {}, so bs must be that size",
                            format_size(object)
                        );
                        self.err(
                            &b.loc.clone(),
                            "bs",
                            format!("{} (the object size) for a workload that writes", format_size(object)),
                            note,
                        );
                    }
                }
            }
            for w in parsed.iter().filter(|_| has_dataset) {
                let op = w.workload.operation;
                let refused = match op {
                    Operation::Mkdir | Operation::Rmdir => {
                        Some("there are no directories to make or remove: a prefix exists while an object is under it")
                    }
                    Operation::Setattr => Some("objects have no attributes to set"),
                    Operation::Write if w.workload.fileio == FileIo::Random => {
                        Some("an object is written whole or in order, part after part: use fileio = \"sequential\"")
                    }
                    _ => None,
                };
                if let Some(why) = refused {
                    let (key, expected) = match op {
                        Operation::Write => ("fileio", "sequential"),
                        _ => ("operation", "read, write, create, delete, open, close, getattr, copy, move or list"),
                    };
                    self.err(
                        &w.name_loc.clone(),
                        key,
                        format!("{expected} with engine {name}"),
                        format!("engine {name}: {why}"),
                    );
                }
            }
        }
        // Each thread holds iodepth buffers of the largest block size, allocated before the
        // run: more than memory can hold must be refused here, not fail in a worker.
        let largest_bs = all_bs.iter().map(|e| e.bs.bytes).max().unwrap_or(4096);
        let slot_bytes = largest_bs.div_ceil(4096) * 4096;
        let mut buffers_refused = false;
        if let Some(depth) = iodepth_g.or(1) {
            let per_thread = u128::from(depth) * u128::from(slot_bytes);
            if per_thread > u128::from(MAX_BUFFER_BYTES_PER_THREAD) {
                buffers_refused = true;
                let note = format!(
                    "each thread keeps iodepth × largest bs = {depth} × {} of I/O buffers",
                    format_size(largest_bs)
                );
                let (loc, key) = match iodepth_g.loc() {
                    Loc::Default => {
                        (all_bs.iter().max_by_key(|e| e.bs.bytes).map_or(Loc::Default, |e| e.loc.clone()), "bs")
                    }
                    l => (l, "iodepth"),
                };
                self.err(&loc, key, "iodepth × largest bs at most 1 GiB per thread", note);
            }
        }
        // An open-loop rate is split over the threads; each needs at least 1 I/O per second.
        let max_threads: u64 = parsed
            .iter()
            .map(|w| {
                let stepped = match (&for_threads_g, &staircase_g) {
                    (Got::Ok(l, _), _) => l.iter().copied().max(),
                    (_, Got::Ok(s, _)) if s.of == StaircaseOf::Threads => Some(u64::from(s.max)),
                    _ => None,
                };
                stepped.unwrap_or(u64::from(w.workload.threads))
            })
            .sum();
        let all_buffers = u128::from(max_threads) * u128::from(iodepth_g.or(1).unwrap_or(1)) * u128::from(slot_bytes);
        if all_buffers > u128::from(MAX_BUFFER_BYTES) && !buffers_refused {
            let note = format!(
                "{max_threads} thread(s) × iodepth {} × largest bs {} = {} of I/O buffers",
                iodepth_g.or(1).unwrap_or(1),
                format_size(largest_bs),
                u64::try_from(all_buffers).map_or("more than 16 EiB".to_string(), format_size)
            );
            // Point at what is most likely to have been raised: iodepth, else the block size.
            let largest_loc = all_bs.iter().max_by_key(|e| e.bs.bytes).map_or(Loc::Default, |e| e.loc.clone());
            let (loc, key) = match (iodepth_g.loc(), largest_loc) {
                (Loc::Default, Loc::Default) => (Loc::Default, "threads"),
                (Loc::Default, l) => (l, "bs"),
                (l, _) => (l, "iodepth"),
            };
            self.err(&loc, key, "threads × iodepth × largest bs at most 64 GiB", note);
        }
        if let Got::Ok(rate, loc) = &rate_g {
            // The rate is over all hosts, each running its own threads.
            let all_threads = max_threads.saturating_mul(hosts_given.max(1) as u64);
            if *rate < all_threads {
                let on_hosts = match hosts_given {
                    0 => String::new(),
                    1 => " on the 1 host".to_string(),
                    n => format!(" ({max_threads} on each of {n} hosts)"),
                };
                self.err(
                    loc,
                    "rate_iops",
                    format!("at least {all_threads} (1 IOPS per thread)"),
                    format!("each of the {all_threads} threads{on_hosts} needs at least 1 IOPS"),
                );
            }
        }
        let skew_sum: f64 = parsed.iter().filter_map(|w| w.workload.skew_pct).sum();
        if skew_sum > 100.0 + 1e-9 {
            let loc = parsed.iter().rev().find(|w| w.workload.skew_pct.is_some()).map(|w| w.skew_loc.clone());
            self.err(&loc.unwrap_or(Loc::Default), "workload.skew", "skews that add up to at most 100", "");
        }
        // O_DIRECT needs sector-aligned transfers; engines without a page cache here (null
        // does no I/O, nfs has no client cache) take direct = true as it is.
        let direct = direct_g.or(false).unwrap_or(false);
        if let (Got::Ok(true, loc), Some(e)) = (&direct_g, engine) {
            if !e.spec().caps.direct_io {
                let note = format!("engine {} has no direct I/O (O_DIRECT)", e.name());
                let with = Capability::DirectIo.engines_with();
                self.err(loc, "direct", format!("direct = false with engine {}, or engine {with}", e.name()), note);
            }
        }
        // Warming reads the files through this host's page cache: an engine whose files are
        // on a server (ioscope's own client, no client cache) has none to warm.
        if let (Got::Ok(CacheMode::Warm, loc), Some(e)) = (&cache_g, engine) {
            if e.spec().caps.target.is_some() {
                let note = format!(
                    "engine {} reads and writes through ioscope's own client, which keeps no page cache on this host",
                    e.name()
                );
                self.err(loc, "cache", "cache = \"cold\" or \"as-is\" with this engine", note);
            }
        }
        let align = engine.map_or(0, |e| e.spec().caps.direct_align_bytes);
        if direct && align > 0 {
            for e in all_bs.iter().filter(|e| e.bs.bytes % align != 0) {
                let note = format!(
                    "direct = true (O_DIRECT, {}) needs block sizes that are multiples of {align} bytes; {} is not",
                    direct_g.loc().describe(text),
                    e.bs.bytes
                );
                self.err(&e.loc.clone(), "bs", format!("a multiple of {align} bytes with direct = true"), note);
            }
        }
        // Syncing only makes sense after writes.
        if let (Got::Ok(sync, loc), true) = (&sync_g, all_ok) {
            let writes = parsed.iter().any(|w| w.workload.writes())
                || matches!(&for_pct_g, Got::Ok(l, _) if l.iter().any(|p| *p < 100));
            if *sync != SyncMode::None && !writes {
                let note = match (n, parsed.first()) {
                    (0, Some(w)) => format!(
                        "sync applies after writes, and rw = {} ({}) never writes: use rw = write, randwrite or randrw, or sync = \"none\"",
                        w.workload.rw_name(),
                        self.raw("rw").map_or(Loc::Default, |(_, l)| l).describe(text)
                    ),
                    _ => "sync applies after writes, and no workload writes: set rwmix_read below 100 or operation = \"write\", or sync = \"none\"".to_string(),
                };
                self.err(loc, "sync", "none when nothing is written", note);
            }
        }
        // Data validation: blocks every transfer covers whole, on an engine that keeps data.
        if let Got::Ok(mode, loc) = &verify_g {
            if !mode.is_off() {
                let refuse = if engine.is_some_and(|e| !e.spec().caps.does_io) {
                    Some("engine null stores nothing to read back")
                } else if hosts.as_ref().is_some_and(|h| !h.is_empty()) {
                    Some("each host keeps its own record of the blocks it wrote, so blocks written by one host and read by another cannot be checked: verify on one host")
                } else if patterned {
                    Some("a pattern workload draws its offsets by picture, not by block")
                } else {
                    None
                };
                if let Some(why) = refuse {
                    self.err(loc, "verify", "verify = \"off\" here", why);
                }
            }
        }
        let verify_block = match &verify_block_g {
            Got::Ok(b, loc) => {
                let ok = (u64::from(crate::plan::MIN_VERIFY_BLOCK)..=u64::from(crate::plan::MAX_VERIFY_BLOCK))
                    .contains(b)
                    && b % 512 == 0;
                if !ok {
                    self.err(loc, "verify_block", "a multiple of 512 bytes from 512 to 64m, like \"4k\"", "");
                }
                ok.then_some(*b as u32)
            }
            _ => None,
        };
        if matches!(&verify_g, Got::Ok(m, _) if !m.is_off()) {
            let sizes: Vec<u64> = all_bs.iter().map(|e| e.bs.bytes).collect();
            let block = verify_block.unwrap_or_else(|| crate::plan::default_verify_block(&sizes));
            // A default that is no multiple of a sector: the sizes themselves must be.
            let block = if block % crate::plan::MIN_VERIFY_BLOCK == 0 { block } else { crate::plan::MIN_VERIFY_BLOCK };
            for e in all_bs.iter().filter(|e| e.bs.bytes % u64::from(block) != 0) {
                let note = format!(
                    "with verify on, every transfer covers whole verify blocks of {} ({}); {} is not a multiple of it",
                    format_size(u64::from(block)),
                    match verify_block_g.loc() {
                        Loc::Default =>
                            "the greatest common divisor of the block sizes, at least 512 bytes".to_string(),
                        l => format!("verify_block, {}", l.describe(text)),
                    },
                    format_size(e.bs.bytes),
                );
                self.err(&e.loc.clone(), "bs", format!("a multiple of {block} bytes with verify on"), note);
            }
        }
        // The files need a home, unless the engine does no I/O.
        let no_local_files = engine.is_some_and(|e| !e.spec().caps.local_files());
        if matches!(dir_g, Got::Absent) && !has_dataset && !no_local_files && !self.syntax_failed && !hosts_dirs {
            let mut note =
                format!("engine {} reads and writes files in this directory", engine.map_or("posix", |e| e.name()));
            if let Some(f) = self.file {
                note.push_str(&format!("\nneither --dir nor `dir` in {} was given", f.path.display()));
            }
            self.err(&Loc::Default, "dir", DIR_EXPECTED, note);
        }

        let (staircase_loc, duration_loc) = (staircase_g.loc(), duration_g.loc());
        let (repeat_loc, until_ci_loc) = (repeat_g.loc(), until_ci_g.loc());
        // The first loop that is set, to point at when there are too many steps.
        let loops = [
            ("for_threads", for_threads_g.loc()),
            ("for_bs", for_bs_g.loc()),
            ("for_rwmix_read", for_pct_g.loc()),
            ("curve", curve_g.loc()),
            ("staircase", staircase_g.loc()),
        ];
        let (loop_key, loop_loc) =
            loops.into_iter().find(|(_, l)| !matches!(l, Loc::Default)).unwrap_or(("for_threads", Loc::Default));
        let steps = Steps {
            for_threads: match for_threads_g {
                Got::Ok(l, _) => l.into_iter().map(|t| t as u32).collect(),
                Got::Absent => Vec::new(),
                Got::Bad => return None,
            },
            for_bs: match for_bs_g {
                Got::Ok(l, _) => l.into_iter().map(|e| e.into_iter().map(|e| e.bs).collect()).collect(),
                Got::Absent => Vec::new(),
                Got::Bad => return None,
            },
            for_read_pct: match for_pct_g {
                Got::Ok(l, _) => l.into_iter().map(|p| p as u8).collect(),
                Got::Absent => Vec::new(),
                Got::Bad => return None,
            },
            curve: curve_g.or(Vec::new())?,
            staircase: match staircase_g {
                Got::Ok(s, _) => Some(s),
                Got::Absent => None,
                Got::Bad => return None,
            },
        };
        let plan = Plan {
            engine: engine?,
            iodepth: iodepth_g.or(1)? as u32,
            sqpoll: sqpoll_g.or(false)?,
            direct,
            sync: sync_g.or(SyncMode::None)?,
            cache: cache_g.or(CacheMode::Cold)?,
            dir: match dir_g {
                Got::Ok(d, _) => d,
                Got::Absent => PathBuf::new(),
                Got::Bad => return None,
            },
            target: match target_g {
                Got::Bad => return None,
                _ => target,
            },
            size_bytes: if has_dataset { 0 } else { size? },
            size_default: !has_dataset && matches!(size_g, Got::Absent),
            files: if has_dataset { 0 } else { files? as u32 },
            dataset: dataset?,
            workloads: workloads.into_iter().map(|w| w.map(|w| w.workload)).collect::<Option<Vec<_>>>()?,
            duration: duration_g.or(Duration::from_secs(60))?,
            warmup: warmup_g.or(Duration::ZERO)?,
            rate_iops: match rate_g {
                Got::Ok(r, _) => Some(r),
                Got::Absent => None,
                Got::Bad => return None,
            },
            steps,
            probes: probes.iter().map(|p| p.as_ref().map(|(p, _)| p.clone())).collect::<Option<Vec<_>>>()?,
            force: force_g.or(false)?,
            cleanup: cleanup_g.or(false)?,
            max_errors: max_errors_g.or(MaxErrors::default())?,
            breakdown_top: match breakdown_top_g {
                Got::Ok(n, _) => Some(n as u32),
                Got::Absent => None,
                Got::Bad => return None,
            },
            hosts: hosts?,
            on_host_loss: on_host_loss_g.or(OnHostLoss::Stop)?,
            host_timeout: host_timeout_g.or(crate::host::DEFAULT_HOST_TIMEOUT)?,
            host_share: None,
            checks: checks.into_iter().collect::<Option<Vec<_>>>()?,
            warmup_auto,
            steady_window_s: match &steady_window_g {
                Got::Ok(d, _) => Some(d.as_secs() as u32),
                Got::Absent => None,
                Got::Bad => return None,
            },
            until_steady_s: match &until_steady_g {
                Got::Ok(d, _) => Some(d.as_secs() as u32),
                Got::Absent => None,
                Got::Bad => return None,
            },
            repeat: match repeat_g {
                Got::Ok(n, _) => Some(n as u32),
                Got::Absent => None,
                Got::Bad => return None,
            },
            until_ci: match until_ci_g {
                Got::Ok(u, _) => Some(u),
                Got::Absent => None,
                Got::Bad => return None,
            },
            verify: verify_g.or(VerifyMode::Off)?,
            verify_block: match verify_block_g {
                Got::Bad => return None,
                _ => verify_block,
            },
        };
        // Counted, not built: a few long lists multiply into more steps than memory holds.
        let steps = plan.step_count();
        if steps > MAX_STEPS {
            self.err(&loop_loc, loop_key, format!("at most {MAX_STEPS} steps"), format!("the loops make {steps}"));
            return None;
        }
        let step_time = plan.warmup + plan.steps.staircase.map_or(plan.duration, |s| s.every);
        let total_ns = u128::from(steps) * step_time.as_nanos();
        if total_ns > MAX_DURATION.as_nanos() {
            let (key, loc) = match plan.steps.staircase {
                Some(_) => ("staircase", staircase_loc),
                None => ("duration", duration_loc),
            };
            let total = Duration::from_secs(u64::try_from(total_ns / 1_000_000_000).unwrap_or(u64::MAX));
            let note = format!(
                "{steps} step(s) × {} each (warm-up included) = {}",
                duration_literal(step_time),
                duration_literal(total)
            );
            self.err(&loc, key, "a run of at most 30d in all", note);
            return None;
        }
        // `until_steady` ends the run: with several steps it would cut the later ones.
        if let Some(w) = plan.until_steady_s {
            if steps > 1 {
                let note = format!("the loops or staircase make {steps} steps; until_steady ends the run, so only a run of one step takes it");
                self.err(&until_steady_g.loc(), "until_steady", "until_steady on a run of one step", note);
            }
            if !plan.hosts.is_empty() {
                let note = "each host would stop on its own seconds; run it on one host".to_string();
                self.err(&until_steady_g.loc(), "until_steady", "until_steady on a run without hosts", note);
            }
            if plan.steady_window_s.is_some_and(|s| s != w) {
                let note = "until_steady sets the steady-state window itself; give one of the two".to_string();
                self.err(
                    &steady_window_g.loc(),
                    "steady_window",
                    "steady_window equal to until_steady, or only one of them",
                    note,
                );
            }
        }
        let repeats = plan.max_repeats();
        if repeats > 1 && total_ns.saturating_mul(u128::from(repeats)) > MAX_DURATION.as_nanos() {
            let (key, loc) = match &repeat_loc {
                Loc::Default => ("until_ci", until_ci_loc),
                l => ("repeat", l.clone()),
            };
            let run = Duration::from_secs(u64::try_from(total_ns / 1_000_000_000).unwrap_or(u64::MAX));
            let note = format!(
                "{repeats} repeat(s){} × {} each = more than 30d",
                if key == "until_ci" {
                    format!(" (the most until_ci runs by default: {DEFAULT_MAX_REPEATS_UNTIL_CI})")
                } else {
                    String::new()
                },
                duration_literal(run)
            );
            self.err(&loc, key, "a run of at most 30d in all, repeats included", note);
            return None;
        }
        // A probe start after the end of the run would never happen.
        let total = plan.total_duration();
        for (probe, at_loc) in probes.iter().flatten() {
            if let Some(late) = probe.at.iter().find(|a| **a >= total) {
                let note = format!(
                    "{} is not before the end of the run, which lasts {} (steps and warm-ups included)",
                    duration_literal(*late),
                    duration_literal(total)
                );
                self.err(at_loc, "probe.at", "times before the end of the run", note);
            }
        }
        if !self.diags.is_empty() {
            return None;
        }
        Some(plan)
    }

    /// `--set workload.KEY` and `--set probe.KEY` change every [[workload]] or [[probe]] of
    /// the file; with none there, they would change nothing, which is refused, not ignored.
    fn sets_need_their_sections(&mut self, workloads: usize) {
        let probes = self.arrays.get("probe").map_or(0, Vec::len);
        let hosts = self.arrays.get("host").map_or(0, Vec::len);
        let sets: Vec<(&str, &str)> = self.sets.iter().map(|(k, _, t)| (*k, *t)).collect();
        for (key, text) in sets {
            let Some((section, inner)) = key.split_once('.') else { continue };
            let note = match section {
                "workload" if workloads == 0 => {
                    let file = if self.file.is_some() { "the workload file has" } else { "there is" };
                    let mut note = format!("{file} no [[workload]] section, so `{key}` would change nothing");
                    if ["rw", "rwmix_read", "bs", "threads", "name"]
                        .iter()
                        .chain(&crate::access::KEYS)
                        .any(|k| *k == inner)
                    {
                        note.push_str(&format!(
                            "\nthe one workload of a file without [[workload]] takes the top-level key: --set {inner}={text}"
                        ));
                    }
                    note
                }
                "host" if hosts == 0 => {
                    let file = if self.file.is_some() { "the workload file has" } else { "there is" };
                    format!("{file} no [[host]] section, so `{key}` would change nothing (a host is a [[host]] table with its address, or --hosts)")
                }
                "probe" if probes == 0 => {
                    let file = if self.file.is_some() { "the workload file has" } else { "there is" };
                    format!("{file} no [[probe]] section, so `{key}` would change nothing (a probe is a [[probe]] table with its command and at)")
                }
                _ => continue,
            };
            let loc = Loc::Flag { flag: "--set".into(), text: format!("{key}={text}") };
            self.err(&loc, key, format!("a [[{section}]] section in the workload file for {section}.* keys"), note);
        }
    }

    /// The one workload of a file without [[workload]]: `rw`, `rwmix_read`, `bs`, `threads`.
    fn flat_workload(&mut self, has_dataset: bool) -> Option<ParsedWorkload> {
        let (rw_g, rw_skip) = self.rw_and_skip("rw");
        let rwmix_g = self.int("rwmix_read", 0, 100);
        let bs_g = self.block_sizes("bs");
        let threads_g = self.int("threads", 1, 4096);
        let name_g = self.text_value("name", "a name like \"job1\"");
        let text = self.text();
        // rwmix_read only means something for randrw (and rw, its sequential form).
        if let (Got::Ok(_, loc), Some(rw)) = (&rwmix_g, rw_g.or(Rw::RandRead)) {
            if !rw.is_mixed() {
                let note = format!(
                    "rwmix_read applies only to rw = randrw or rw, and rw is {} ({}): remove rwmix_read, or set rw = \"randrw\"",
                    rw.name(),
                    rw_g.loc().describe(text)
                );
                self.err(loc, "rwmix_read", "no rwmix_read unless rw = \"randrw\"", note);
            }
        }
        let rw = rw_g.or(Rw::RandRead)?;
        let read_pct = match (rw, &rwmix_g) {
            (rw, Got::Ok(pct, _)) if rw.is_mixed() => *pct as u8,
            (rw, _) => rw.default_read_pct(),
        };
        let default_bs = vec![BsEntry { bs: BlockSize { bytes: 4096, weight: 1 }, loc: Loc::Default }];
        let bs = bs_g.or(default_bs)?;
        let access =
            self.access("", access::Context { random: rw.is_random(), tree: has_dataset, pattern: false, rw_skip });
        Some(ParsedWorkload {
            name_loc: name_g.loc(),
            workload: Workload {
                name: name_g.or(rw.name().to_string())?,
                operation: if read_pct > 0 { Operation::Read } else { Operation::Write },
                read_pct,
                block_sizes: bs.iter().map(|e| e.bs).collect(),
                fileio: if rw.is_random() { FileIo::Random } else { FileIo::Sequential },
                fileselect: if has_dataset || rw.is_random() { FileSelect::Random } else { FileSelect::Sequential },
                threads: threads_g.or(1)? as u32,
                skew_pct: None,
                pattern: None,
                access: access?,
            },
            bs,
            skew_loc: Loc::Default,
        })
    }

    /// One [[workload]] table (keys "workload.*" of entry `i`).
    fn workload(&mut self, i: usize, has_dataset: bool) -> Option<ParsedWorkload> {
        let name_g = self.text_value("workload.name", "a name like \"seqread\"");
        let op_g = self.choice("workload.operation", OPERATIONS);
        let (rw_g, rw_skip) = self.rw_and_skip("workload.rw");
        let rwmix_g = self.int("workload.rwmix_read", 0, 100);
        let bs_g = self.block_sizes("workload.bs");
        let fileio_g = self.choice("workload.fileio", FILEIOS);
        let fileselect_g = self.fileselect("workload.fileselect");
        let threads_g = self.int("workload.threads", 1, 4096);
        let skew_g = self.percent("workload.skew");
        let pattern_g = self.pattern("workload.pattern");
        for (other, key) in [(op_g.loc(), "operation"), (fileio_g.loc(), "fileio")] {
            if let (Got::Ok(_, loc), false) = (&rw_g, matches!(other, Loc::Default)) {
                let note = format!("rw names the operation and the file I/O order at once; `{key}` is also set");
                self.err(loc, "workload.rw", format!("either rw or {key}, not both"), note);
            }
        }
        let op = match &rw_g {
            Got::Ok(rw, _) => Some(if rw.default_read_pct() > 0 { Operation::Read } else { Operation::Write }),
            _ => op_g.or(Operation::Read),
        };
        if let (Some(op), Got::Ok(_, loc)) = (op, &op_g) {
            if !op.transfers() && !has_dataset {
                let note = format!(
                    "`{}` works on the files and directories of a [dataset]; without one, only read and write apply",
                    op.name()
                );
                self.err(loc, "workload.operation", "read or write without a [dataset]", note);
            }
        }
        if let (Some(op), Got::Ok(_, loc)) = (op, &rwmix_g) {
            if !op.transfers() {
                let note = format!("rwmix_read mixes reads and writes; the operation is {}", op.name());
                self.err(loc, "workload.rwmix_read", "rwmix_read only with operation read or write", note);
            }
        }
        if let (Got::Ok(_, loc), true) = (&pattern_g, has_dataset || op.is_some_and(|o| !o.transfers())) {
            self.err(loc, "workload.pattern", "a pattern only for read or write on the flat working set", "");
        }
        let read_pct = match (&rwmix_g, &rw_g, op) {
            (Got::Ok(p, _), _, _) => *p as u8,
            (_, Got::Ok(rw, _), _) => rw.default_read_pct(),
            (_, _, Some(Operation::Write)) => 0,
            _ => 100,
        };
        let fileio = match &rw_g {
            Got::Ok(rw, _) => FileIo::from_random(rw.is_random()),
            _ => fileio_g.or(if has_dataset { FileIo::Sequential } else { FileIo::Random })?,
        };
        let default_bs = vec![BsEntry { bs: BlockSize { bytes: 4096, weight: 1 }, loc: Loc::Default }];
        let bs = bs_g.or(default_bs)?;
        let cx = access::Context {
            random: fileio == FileIo::Random,
            tree: has_dataset,
            pattern: matches!(pattern_g, Got::Ok(..)),
            rw_skip,
        };
        let access = self.access("workload.", cx);
        Some(ParsedWorkload {
            name_loc: name_g.loc(),
            skew_loc: skew_g.loc(),
            workload: Workload {
                name: name_g.or(format!("workload{}", i + 1))?,
                operation: op?,
                read_pct,
                block_sizes: bs.iter().map(|e| e.bs).collect(),
                fileio,
                fileselect: fileselect_g.or(FileSelect::Random)?,
                threads: threads_g.or(1)? as u32,
                skew_pct: match skew_g {
                    Got::Ok(s, _) => Some(s),
                    Got::Absent => None,
                    Got::Bad => return None,
                },
                pattern: match pattern_g {
                    Got::Ok(p, _) => Some(p),
                    Got::Absent => None,
                    Got::Bad => return None,
                },
                access: access?,
            },
            bs,
        })
    }

    /// The [dataset] table. Some(None) never: a present dataset is Some(Some) or None (bad).
    fn dataset(
        &mut self,
        top_dir: &Got<PathBuf>,
        engine: Option<EngineKind>,
        on_target: Option<(TargetRule, Option<&Target>)>,
    ) -> Option<Option<Dataset>> {
        let dir_g = self.dir("dataset.dir");
        let depth_g = self.int("dataset.depth", 0, 8);
        let width_g = self.int("dataset.width", 1, 10_000);
        let files_g = self.int("dataset.files", 1, 10_000_000);
        let sizes_g = self.block_sizes("dataset.sizes");
        let total_g = self.size("dataset.total_size");
        let ws_g = self.size("dataset.working_set");
        let format_g = self.choice("dataset.format", FORMATS);
        let dir = match (dir_g, top_dir) {
            (dir_g, _) if on_target.is_some() => self.target_anchor(dir_g, engine, on_target),
            (Got::Ok(d, _), _) => Some(d),
            (Got::Absent, Got::Ok(d, _)) => Some(d.clone()),
            (Got::Absent, Got::Absent) => {
                self.err(
                    &Loc::Default,
                    "dataset.dir",
                    "the dataset's anchor directory: dir in [dataset], or the top-level dir",
                    "",
                );
                None
            }
            _ => None,
        };
        let (depth, width, files) = (depth_g.or(1)?, width_g.or(1)?, files_g.or(1)?);
        // Checked: 10000^8 × 10000000 does not fit even in a u128.
        let total = u128::from(width).checked_pow(depth as u32).and_then(|d| d.checked_mul(u128::from(files)));
        if !matches!(total, Some(t) if t <= MAX_DATASET_FILES) {
            let total = total.map_or("more than 10^38".to_string(), |t| t.to_string());
            let note = format!("width^depth × files = {width}^{depth} × {files} = {total} files");
            self.err(&files_g.loc(), "dataset.files", format!("at most {MAX_DATASET_FILES} files in all"), note);
            return None;
        }
        let default_sizes = vec![BsEntry { bs: BlockSize { bytes: 64 << 10, weight: 1 }, loc: Loc::Default }];
        Some(Some(Dataset {
            dir: dir?,
            depth: depth as u32,
            width: width as u32,
            files: files as u32,
            sizes: sizes_g.or(default_sizes)?.into_iter().map(|e| e.bs).collect(),
            total_size_bytes: match total_g {
                Got::Ok(v, _) => Some(v),
                Got::Absent => None,
                Got::Bad => return None,
            },
            working_set_bytes: match ws_g {
                Got::Ok(v, _) => Some(v),
                Got::Absent => None,
                Got::Bad => return None,
            },
            format: format_g.or(DatasetFormat::Reuse)?,
        }))
    }

    /// With an engine that has a target (nfs, s3, smb) the dataset lives on the server, under the
    /// target: `dataset.dir` is a relative path there (the target's directory itself when
    /// absent), or its URL spelling (`nfs://...`, `s3://...`), which is how the plan keeps it.
    fn target_anchor(
        &mut self,
        dir_g: Got<PathBuf>,
        engine: Option<EngineKind>,
        on_target: Option<(TargetRule, Option<&Target>)>,
    ) -> Option<PathBuf> {
        // A missing or malformed target is reported with the target.
        let (rule, Some(t)) = on_target? else { return None };
        let base = PathBuf::from(&t.root);
        let scheme = t.root.split_once("://").map_or(String::new(), |(s, _)| format!("{s}://"));
        let (d, loc) = match dir_g {
            Got::Ok(d, loc) => (d, loc),
            Got::Absent => return Some(base),
            Got::Bad => return None,
        };
        let text = d.to_string_lossy();
        let under = match (rule.parse)(&text) {
            Ok(dt) => Some(PathBuf::from(dt.root)).filter(|p| p.starts_with(&base)),
            Err(_) if text.starts_with(&scheme) => None,
            Err(_) if d.is_absolute() || d.components().any(|c| c == std::path::Component::ParentDir) => None,
            Err(_) => Some(base.join(&d)),
        };
        if under.is_none() {
            let name = engine.map_or("nfs", EngineKind::name);
            let note = format!("with engine {name} the dataset lives on the server, under {}", base.display());
            self.err(&loc, "dataset.dir", TARGET_DATASET_DIR_EXPECTED, note);
        }
        under
    }

    /// One [[check]] table: its expression, which must parse (a malformed one is pointed
    /// at in the file, at the column the check's parser names).
    fn check(&mut self, i: usize) -> Option<String> {
        let expected = "a condition like \"read.latency.p99 < 2ms\" (SCOPE.FIGURE OPERATOR VALUE, see docs/checks.md)";
        match self.text_value("check.expr", expected) {
            Got::Ok(text, loc) => match crate::check::Check::parse(&text) {
                Ok(_) => Some(text),
                Err(e) => {
                    let at = self.inside_string(&loc, &text, e.column);
                    self.err(&at, "check.expr", e.expected, format!("in \"{text}\""));
                    None
                }
            },
            Got::Absent => {
                let header = self.arrays.get("check").and_then(|a| a.get(i)).and_then(|(s, _)| s.clone());
                let loc = header.map_or(Loc::Default, |s| self.file_loc(s));
                self.err(&loc, "check.expr", "expr in each [[check]]", "`check.expr` is missing");
                None
            }
            Got::Bad => None,
        }
    }

    /// The location of the character at `column` (1-based) of a string value written at
    /// `loc` (a quoted string with no escapes before it); the whole value otherwise.
    fn inside_string(&self, loc: &Loc, value: &str, column: usize) -> Loc {
        let Loc::File { span, .. } = loc else { return loc.clone() };
        let written = self.text().get(span.clone()).unwrap_or("");
        let offset = value.char_indices().nth(column.saturating_sub(1)).map_or(value.len(), |(i, _)| i);
        let plain = written.len() >= 2 && written.get(1..written.len() - 1) == Some(value);
        if !plain {
            return loc.clone();
        }
        let start = span.start + 1 + offset;
        let end = (start + 1).min(span.end - 1).max(start);
        self.file_loc(start..end)
    }

    /// One [[probe]] table, and where its `at` is written.
    fn probe(&mut self, i: usize) -> Option<(Probe, Loc)> {
        let command_g = self.text_value("probe.command", "a shell command, like \"rsync -a /src/ /dst/\"");
        let name_g = self.text_value("probe.name", "a name like \"rsync\"");
        let at_g = self.duration_list("probe.at");
        let timeout_g = self.duration("probe.timeout");
        if matches!(command_g, Got::Absent) || matches!(at_g, Got::Absent) {
            let header = self.arrays.get("probe").and_then(|a| a.get(i)).and_then(|(s, _)| s.clone());
            let loc = header.map_or(Loc::Default, |s| self.file_loc(s));
            let missing = if matches!(command_g, Got::Absent) { "probe.command" } else { "probe.at" };
            self.err(&loc, missing, "command and at in each [[probe]]", format!("`{missing}` is missing"));
            return None;
        }
        let command = command_g.or(String::new())?;
        let default_name =
            command.split_whitespace().next().unwrap_or("probe").rsplit('/').next().unwrap_or("probe").to_string();
        let at_loc = at_g.loc();
        let mut at = at_g.or(Vec::new())?;
        at.sort();
        let probe = Probe {
            name: name_g.or(default_name)?,
            command,
            at,
            timeout: match timeout_g {
                Got::Ok(t, _) => Some(t),
                Got::Absent => None,
                Got::Bad => return None,
            },
        };
        Some((probe, at_loc))
    }
}

/// A workload and where its values were written (for the rules between keys).
struct ParsedWorkload {
    workload: Workload,
    bs: Vec<BsEntry>,
    name_loc: Loc,
    skew_loc: Loc,
}

/// One item of a list value.
enum ListItem<'a> {
    Text(&'a str),
    Toml(&'a Value),
}

/// "1 host", "4 hosts".
fn hosts_n(n: usize) -> String {
    if n == 1 {
        "1 host".to_string()
    } else {
        format!("{n} hosts")
    }
}

/// A duration from a TOML value: a string like "90s", or a number of seconds.
fn duration_value(v: &Value) -> Result<Duration, ValueError> {
    match v {
        Value::String(s) => Ok(parse_duration(s.value())?),
        Value::Integer(i) if *i.value() >= 0 => Ok(Duration::from_secs(*i.value() as u64)),
        Value::Float(x) if x.value().is_finite() && *x.value() >= 0.0 => {
            Duration::try_from_secs_f64(*x.value()).map_err(|e| ValueError::Hint(e.to_string()))
        }
        Value::Integer(_) | Value::Float(_) => Err(UnitError::NegativeDuration.into()),
        _ => Err(ValueError::Form),
    }
}

/// A duration from a flag's text or a file value.
fn raw_duration(raw: Raw) -> Result<Duration, ValueError> {
    match raw {
        Raw::Flag(t) => Ok(parse_duration(t)?),
        Raw::Toml(item) => item.as_value().map_or(Err(ValueError::Form), duration_value),
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
