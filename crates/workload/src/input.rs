//! From what the user typed to a [`Plan`]: flag merging, the TOML walker and validation.
//!
//! Values come from defaults, then the workload file, then flags (a flag replaces the file's
//! value for its key, and only the value in effect is checked). Every problem is collected as a
//! [`Diagnostic`] pointing at the value (or flag) responsible; nothing stops at the first one.
//!
//! Two layers. The raw layer reads every source into typed values with their locations:
//! [`sources`] (the file's known keys, flags resolved to keys, `--set`), [`values`] and
//! [`blocks`] (a reader per form), [`top`] (the top-level keys, read once), [`sections`] and
//! [`hosts`] (the tables), [`defaults`] (each key's default as the key table declares it). The
//! rules layer, [`rules`], turns them into a Plan, one module per concern.

use crate::diagnostic::{closest, Diagnostic, MAX_DIAGNOSTICS};
use crate::host::{OnHostLoss, MAX_HOSTS};
use crate::keys::{self, FioMeaning, Section, PATTERN_KEYS};
use crate::plan::{
    Amount, BlockSize, CacheMode, Dataset, DatasetFormat, EngineKind, FileIo, FileSelect, MaxErrors, Operation,
    Pattern, PatternMap, Plan, Precondition, Probe, Rw, Staircase, StaircaseOf, Steps, SyncMode, UntilCi, VerifyMode,
    Workload, AMOUNT_MAX_DURATION_S, DEFAULT_MAX_REPEATS_UNTIL_CI, MAX_NUMBER_IOS, MAX_PASSES, MAX_PRECONDITION_PASSES,
    MAX_REPEATS, MIN_REPEATS_UNTIL_CI,
};
use crate::units::{duration_literal, format_size, parse_duration, parse_size, UnitError};
use ioscope_engine_table::{Capability, Target, TargetRule, ENGINES};
use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;
use toml_edit::{Document, Item, TableLike, Value};

mod access;
mod blocks;
mod content;
mod defaults;
mod fio_flags;
mod flow;
mod hosts;
mod own;
mod rules;
mod sections;
mod sources;
mod top;
mod values;

use sources::*;

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
/// `fileselect`'s plain names (it also takes "zipf:THETA").
const FILESELECTS: &[(&str, FileSelect)] = &[("random", FileSelect::Random), ("sequential", FileSelect::Sequential)];
const FORMATS: &[(&str, DatasetFormat)] =
    &[("reuse", DatasetFormat::Reuse), ("always", DatasetFormat::Always), ("never", DatasetFormat::Never)];
/// Most steps a run may have.
const MAX_STEPS: u64 = 10_000;
/// Phases of a run (`phase` in a [[workload]]): each runs its own workloads, one after another.
pub(crate) const MAX_PHASES: u32 = 64;
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

/// What fio's spellings among `flags` do differently here (`--ioengine=libaio` runs on
/// io_uring), one line each, to print as warnings; the importer notes the same in a job file.
pub fn flag_notes(flags: &Flags) -> Vec<String> {
    let mut notes = Vec::new();
    fio_flags::convert_flags(&flags.given, &mut Vec::new(), &mut notes);
    notes
}

/// Builds the Plan from defaults < file < flags (flags override the file). Returns every
/// problem found, never just the first, in file order, then flag order.
pub fn build_plan(file: Option<&SourceFile>, flags: &Flags) -> Result<Plan, Vec<Diagnostic>> {
    let parsed = file.map(|f| (f, Document::parse(f.text.as_str())));
    let mut diags = Vec::new();
    let sets = parse_sets(&flags.sets, &mut diags);
    let converted = fio_flags::convert_flags(&flags.given, &mut diags, &mut Vec::new());
    let flag_values = resolve_flags(&flags.given, &converted, &mut diags);
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
#[derive(Clone, Default)]
enum Got<T> {
    /// Neither file nor flag set it.
    #[default]
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
    /// An optional key's value: Some(None) when absent, None when bad.
    fn opt(&self) -> Option<Option<T>> {
        match self {
            Got::Absent => Some(None),
            Got::Bad => None,
            Got::Ok(v, _) => Some(Some(v.clone())),
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
}

/// A workload and where its values were written (for the rules between keys).
struct ParsedWorkload {
    workload: Workload,
    bs: Vec<BsEntry>,
    name_loc: Loc,
    /// Where its `flow` was written (Default without one).
    flow_loc: Loc,
    skew_loc: Loc,
    own_locs: own::OwnLocs,
}

/// One item of a list value.
enum ListItem<'a> {
    Text(&'a str),
    Toml(&'a Value),
}
