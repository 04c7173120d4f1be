//! The `/api/v1` JSON API (docs/api.md) over one or more results files. A file is read
//! again when it changes on disk, so a run still being written is served live.

use crate::query::{self, Query};
use ioscope_store::{ProbeRow, Results, Status, StepRow, StoreError};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

pub const API_VERSION: u32 = 1;

/// An answer: HTTP status and JSON text.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: String,
    /// The body gzipped, when it was asked for and the answer is kept (compressed once).
    pub gzipped: Option<Arc<Vec<u8>>>,
}

impl Answer {
    fn ok(body: &impl Serialize) -> Self {
        match serde_json::to_string(body) {
            Ok(text) => Answer { status: 200, body: text, gzipped: None },
            Err(e) => Answer::error(500, format!("cannot write the answer: {e}")),
        }
    }
    fn error(status: u16, message: impl Into<String>) -> Self {
        Answer { status, body: json!({ "error": message.into() }).to_string(), gzipped: None }
    }
    /// The body as a JSON value.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// What identifies a version of a results file on disk (the file and its SQLite WAL).
type Stamp = Vec<(Option<SystemTime>, u64)>;

fn stamp(path: &Path) -> Stamp {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    [path.to_path_buf(), PathBuf::from(wal)]
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| (m.modified().ok(), m.len())).unwrap_or((None, 0)))
        .collect()
}

struct Loaded {
    stamp: Stamp,
    results: Arc<Results>,
}

/// One results file served as run `id`.
pub struct RunSource {
    pub id: String,
    pub path: PathBuf,
    /// The file of a run this process is starting (`run --ui`): until it can first be
    /// read it is served as a live run with nothing stored yet, not as an error.
    new_run: bool,
    cache: Mutex<Option<Loaded>>,
    /// Answers (200 only) for the file as it is now: a finished run's detail and heat maps
    /// are computed once, not on every page load.
    answers: Mutex<Answers>,
}

/// Answers by `path?query`, for one version of the file (its stamp), at most
/// [`ANSWER_CACHE_BYTES`] in all.
#[derive(Default)]
struct Answers {
    stamp: Option<Stamp>,
    bytes: usize,
    by_request: HashMap<String, Kept>,
}

struct Kept {
    body: String,
    gzipped: Option<Arc<Vec<u8>>>,
}

/// Kept answers at least this large are gzipped once when a client accepts gzip; smaller
/// ones are left to the server's compression.
const GZIP_KEPT_BYTES: usize = 64 * 1024;

const ANSWER_CACHE_BYTES: usize = 256 << 20;

impl RunSource {
    pub fn new(id: usize, path: &Path) -> Self {
        RunSource {
            id: id.to_string(),
            path: path.to_path_buf(),
            new_run: false,
            cache: Mutex::new(None),
            answers: Mutex::new(Answers::default()),
        }
    }

    /// A new run's file, not created yet.
    pub fn new_run(path: &Path) -> Self {
        RunSource { new_run: true, ..RunSource::new(0, path) }
    }

    /// The file's contents, or None while this is a new run's file that has never been read
    /// (it is being created). Decided under the cache's lock: another request that reads
    /// the file first cannot turn this one's "starting" into an error.
    fn results_or_starting(&self) -> Result<Option<Arc<Results>>, StoreError> {
        {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if self.new_run && cache.is_none() {
                let now = stamp(&self.path);
                let Ok(results) = ioscope_store::open(&self.path) else { return Ok(None) };
                let results = Arc::new(results);
                *cache = Some(Loaded { stamp: now, results: Arc::clone(&results) });
                return Ok(Some(results));
            }
        }
        // Read before: the cache is never emptied again.
        self.results().map(Some)
    }

    /// The file's contents, read again only when the file changed since the last read;
    /// then only the newest seconds are read (a run being written grows at the end).
    pub fn results(&self) -> Result<Arc<Results>, StoreError> {
        let now = stamp(&self.path);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        match cache.as_mut() {
            Some(l) if l.stamp == now => Ok(Arc::clone(&l.results)),
            Some(l) => {
                // Refreshed in place unless a request still holds the previous version.
                match Arc::get_mut(&mut l.results) {
                    Some(r) => ioscope_store::refresh(r)?,
                    None => l.results = Arc::new(ioscope_store::open(&self.path)?),
                }
                l.stamp = now;
                Ok(Arc::clone(&l.results))
            }
            None => {
                let results = Arc::new(ioscope_store::open(&self.path)?);
                *cache = Some(Loaded { stamp: now, results: Arc::clone(&results) });
                Ok(results)
            }
        }
    }

    /// The answer to `request` for the file version `now`, if it was computed already
    /// (gzipped too when `gzip` and it is large).
    fn cached(&self, now: &Stamp, request: &str, gzip: bool) -> Option<Answer> {
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        if answers.stamp.as_ref() != Some(now) {
            return None;
        }
        let kept = answers.by_request.get_mut(request)?;
        if gzip && kept.body.len() >= GZIP_KEPT_BYTES && kept.gzipped.is_none() {
            kept.gzipped = gzip_fast(kept.body.as_bytes()).map(Arc::new);
        }
        Some(Answer { status: 200, body: kept.body.clone(), gzipped: kept.gzipped.clone().filter(|_| gzip) })
    }

    /// Keeps an answer computed for the file version `now` (or newer: the file may have
    /// changed since `now` was taken, and a newer answer under an older stamp is only
    /// replaced sooner).
    fn remember(&self, now: Stamp, request: String, body: &str) {
        let mut answers = self.answers.lock().unwrap_or_else(|e| e.into_inner());
        if answers.stamp.as_ref() != Some(&now) {
            *answers = Answers { stamp: Some(now), ..Answers::default() };
        }
        // Room for the body and its compressed form.
        let cost = body.len() + body.len() / 2;
        if answers.bytes.saturating_add(cost) > ANSWER_CACHE_BYTES {
            return;
        }
        answers.bytes += cost;
        answers.by_request.insert(request, Kept { body: body.to_string(), gzipped: None });
    }

    pub fn name(&self) -> String {
        self.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| self.id.clone())
    }
}

/// The runs being served.
pub struct Api {
    pub runs: Vec<RunSource>,
    /// Debug builds only, for the tests that show a panic while answering is contained:
    /// `GET /api/v1/debug/panic` panics. Off unless IOSCOPE_DEBUG_UI_PANIC is set.
    #[cfg(debug_assertions)]
    pub debug_panic: bool,
}

impl Api {
    pub fn new(paths: &[PathBuf]) -> Self {
        Api::of(paths.iter().enumerate().map(|(i, p)| RunSource::new(i, p)).collect())
    }

    /// The API of the run this process is about to write to `path` (`run --ui`).
    pub fn for_new_run(path: &Path) -> Self {
        Api::of(vec![RunSource::new_run(path)])
    }

    fn of(runs: Vec<RunSource>) -> Self {
        Api {
            runs,
            #[cfg(debug_assertions)]
            debug_panic: std::env::var_os("IOSCOPE_DEBUG_UI_PANIC").is_some(),
        }
    }

    /// Answers `GET path?query` for a path under `/api/v1/`.
    pub fn get(&self, path: &str, query: &str) -> Answer {
        self.get_with(path, query, false)
    }

    /// [`Api::get`], with the body gzipped too when `gzip` and the answer is large and kept.
    pub fn get_with(&self, path: &str, query: &str, gzip: bool) -> Answer {
        #[cfg(debug_assertions)]
        if self.debug_panic && path == "/api/v1/debug/panic" {
            panic!("a deliberate panic while answering (IOSCOPE_DEBUG_UI_PANIC)");
        }
        let params = parse_query(query);
        let pairs = params.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        let parts: Vec<&str> = path.trim_start_matches("/api/v1").split('/').filter(|p| !p.is_empty()).collect();
        match parts.as_slice() {
            ["runs"] => Answer::ok(&self.run_list()),
            // Two files: not kept with either run's answers (each may change on its own).
            ["runs", id, "compare"] => self.compare(id, &params),
            ["runs", id, rest @ ..] => {
                let run = match self.find(id) {
                    Ok(run) => run,
                    Err(e) => return Answer::error(404, e.to_string()),
                };
                // Taken before the file is read: an answer is never kept under a newer stamp.
                let now = stamp(&run.path);
                let request = format!("{path}?{query}");
                if let Some(answer) = run.cached(&now, &request, gzip) {
                    return answer;
                }
                let results = match run.results_or_starting() {
                    Ok(Some(r)) => r,
                    Ok(None) => {
                        let why = format!("run {id} is starting and has stored nothing yet; try again in a second");
                        return Answer::error(404, why);
                    }
                    Err(e) => return Answer::error(500, e.to_string()),
                };
                let answer = match rest {
                    [] => Answer::ok(&run_detail(run, &results)),
                    ["series"] => match checked(pairs, &results) {
                        Ok(q) => Answer::ok(&query::series(&results, &q)),
                        Err(e) => Answer::error(400, e.to_string()),
                    },
                    ["heatmap"] => match heatmap(pairs, &params, &results) {
                        Ok(answer) => answer,
                        Err(e) => Answer::error(400, e),
                    },
                    _ => Answer::error(404, format!("no such path {} (see docs/api.md)", query::echo(path))),
                };
                if answer.status == 200 {
                    run.remember(now.clone(), request.clone(), &answer.body);
                    if gzip {
                        return run.cached(&now, &request, true).unwrap_or(answer);
                    }
                }
                answer
            }
            _ => Answer::error(404, format!("no such path {} (see docs/api.md)", query::echo(path))),
        }
    }

    /// `GET /api/v1/runs/{id}/compare?with={other}`: run `other` (B) compared with run `id` (A).
    fn compare(&self, id: &str, params: &[(String, String)]) -> Answer {
        let Some(with) = params.iter().rev().find(|(k, _)| k == "with").map(|(_, v)| v.as_str()) else {
            return Answer::error(400, "compare needs with=RUN_ID, the run compared with this one (see docs/api.md)");
        };
        let mut summaries = Vec::new();
        for run_id in [id, with] {
            let run = match self.find(run_id) {
                Ok(run) => run,
                Err(e) => return Answer::error(404, e.to_string()),
            };
            match run.results_or_starting() {
                Ok(Some(r)) => summaries.push(ioscope_report::summarize(&r, &run.path)),
                Ok(None) => {
                    let why = format!("run {run_id} is starting and has stored nothing yet; try again in a second");
                    return Answer::error(404, why);
                }
                Err(e) => return Answer::error(500, e.to_string()),
            }
        }
        let comparison = ioscope_report::compare::compare(&summaries[0], &summaries[1]);
        Answer::ok(&CompareAnswer { a: id.to_string(), b: with.to_string(), comparison })
    }

    fn run_list(&self) -> RunList {
        RunList { api_version: API_VERSION, runs: self.runs.iter().map(list_entry).collect() }
    }

    /// The run served as `id`, or why there is none.
    pub fn find(&self, id: &str) -> Result<&RunSource, NoSuchRun> {
        self.runs.iter().find(|r| r.id == id).ok_or_else(|| NoSuchRun { id: id.to_string(), served: self.runs.len() })
    }

    /// Run `id`'s entry in `GET /api/v1/runs`, None when there is no such run.
    pub fn entry(&self, id: &str) -> Option<ListEntry> {
        self.find(id).ok().map(list_entry)
    }
}

/// A run id that names no served run (HTTP 404).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no run {} ({})", query::echo(.id), served_ids(*.served))]
pub struct NoSuchRun {
    pub id: String,
    /// How many runs are served (ids 0 to served - 1).
    pub served: usize,
}

fn served_ids(served: usize) -> String {
    match served {
        0 => "no runs are served".to_string(),
        n => format!("expected a run id from 0 to {}", n - 1),
    }
}

/// How a heat map's cells are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Nested arrays of numbers (the default).
    Json,
    /// Base64 varint strings ([`crate::packed`]).
    Packed,
}

/// `GET /api/v1/runs/{id}/heatmap`: one column per second, or per `column_seconds`.
fn heatmap<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    params: &[(String, String)],
    results: &Results,
) -> Result<Answer, String> {
    let q = checked(pairs, results).map_err(|e| e.to_string())?;
    let packed = encoding(params).map_err(|e| e.to_string())? == Encoding::Packed;
    let width = params.iter().rev().find(|(k, _)| k == "column_seconds").map(|(_, v)| v.as_str());
    let width = crate::columns::column_seconds(width).map_err(|e| e.to_string())?.filter(|&w| w > 1);
    let answer = match (width, packed) {
        (Some(w), true) => crate::columns::heatmap_packed(results, &q, w).map(|a| Answer::ok(&a)),
        (Some(w), false) => crate::columns::heatmap(results, &q, w).map(|a| Answer::ok(&a)),
        (None, true) => crate::packed::heatmap_packed(results, &q).map(|a| Answer::ok(&a)),
        (None, false) => query::heatmap(results, &q).map(|a| Answer::ok(&a)),
    };
    answer.map_err(|e| e.to_string())
}

/// The `encoding` parameter of a heat-map query.
fn encoding(params: &[(String, String)]) -> Result<Encoding, query::QueryError> {
    match params.iter().rev().find(|(k, _)| k == "encoding").map(|(_, v)| v.as_str()) {
        None | Some("" | "json") => Ok(Encoding::Json),
        Some("packed") => Ok(Encoding::Packed),
        Some(other) => Err(query::QueryError::UnknownEncoding(other.to_string())),
    }
}

/// `bytes` gzipped at the fastest level, like the server's other answers: the first
/// viewer of an hour-long heat map waits a fraction of what the best level costs (several
/// seconds for 16 MB of JSON here) for about 15 % more bytes (None only if compressing
/// into memory failed).
fn gzip_fast(bytes: &[u8]) -> Option<Vec<u8>> {
    use std::io::Write;
    let mut z = flate2::write::GzEncoder::new(Vec::with_capacity(bytes.len() / 3), flate2::Compression::fast());
    z.write_all(bytes).ok()?;
    z.finish().ok()
}

/// A series or heat-map query, parsed and checked against the run before any work.
fn checked<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    results: &Results,
) -> Result<Query, query::QueryError> {
    let q = Query::parse(pairs)?;
    query::check_range(results, &q)?;
    Ok(q)
}

/// `GET /api/v1/runs`.
#[derive(Serialize, Debug)]
pub struct RunList {
    pub api_version: u32,
    pub runs: Vec<ListEntry>,
}

/// `GET /api/v1/runs/{id}/compare?with={other}`.
#[derive(Serialize, Debug)]
pub struct CompareAnswer {
    /// Run A's id (the run shown; the baseline).
    pub a: String,
    /// Run B's id (the run compared with it).
    pub b: String,
    /// As `ioscope compare A B --json` (schema/compare.schema.json).
    pub comparison: ioscope_report::compare::Comparison,
}

/// A run in `GET /api/v1/runs`: its entry, or why its file cannot be read.
#[derive(Serialize, Debug)]
#[serde(untagged)]
pub enum ListEntry {
    Run(RunEntry),
    Unreadable { id: String, name: String, path: PathBuf, error: String },
}

impl ListEntry {
    /// Whether the run is still being written (an unreadable one is not followed).
    pub fn live(&self) -> bool {
        matches!(self, ListEntry::Run(r) if r.live)
    }
}

/// A run's identity and progress (the entry of the list, the start of its detail).
#[derive(Serialize, Debug, Clone)]
pub struct RunEntry {
    pub id: String,
    pub name: String,
    pub path: PathBuf,
    pub status: &'static str,
    pub live: bool,
    pub started_unix_ms: Option<i64>,
    pub first_second: Option<u32>,
    pub last_second: Option<u32>,
}

/// `GET /api/v1/runs/{id}`.
#[derive(Serialize, Debug)]
pub struct RunDetail<'a> {
    #[serde(flatten)]
    pub entry: RunEntry,
    pub summary: ioscope_report::Summary,
    pub hosts: Vec<HostEntry<'a>>,
    /// The validated plan as stored (`ioscope_workload::Plan` as JSON).
    pub plan: Value,
    pub workload_toml: &'a str,
    pub steps: &'a [StepRow],
    pub probes: &'a [ProbeRow],
    /// The statistics the run has, with units and dimensions.
    pub stats: Vec<query::StatEntry>,
    /// Every value each dimension takes.
    pub dimensions: query::DimensionValues,
}

/// A host of the run and its system configuration.
#[derive(Serialize, Debug)]
pub struct HostEntry<'a> {
    pub name: &'a str,
    pub config: &'a Value,
}

fn list_entry(run: &RunSource) -> ListEntry {
    match run.results_or_starting() {
        Ok(Some(r)) => ListEntry::Run(run_entry(run, &r)),
        Ok(None) => ListEntry::Run(RunEntry {
            id: run.id.clone(),
            name: run.name(),
            path: run.path.clone(),
            status: Status::Running.as_str(),
            live: true,
            started_unix_ms: None,
            first_second: None,
            last_second: None,
        }),
        Err(e) => {
            ListEntry::Unreadable { id: run.id.clone(), name: run.name(), path: run.path.clone(), error: e.to_string() }
        }
    }
}

fn run_entry(run: &RunSource, r: &Results) -> RunEntry {
    let range = query::second_range(r);
    RunEntry {
        id: run.id.clone(),
        name: run.name(),
        path: run.path.clone(),
        status: r.run.status.as_str(),
        live: r.run.status == Status::Running,
        started_unix_ms: Some(r.run.info.started_unix_ms),
        first_second: range.map(|x| x.0),
        last_second: range.map(|x| x.1),
    }
}

/// `GET /api/v1/runs/{id}`.
pub fn run_detail<'a>(run: &RunSource, r: &'a Results) -> RunDetail<'a> {
    RunDetail {
        entry: run_entry(run, r),
        summary: ioscope_report::summarize(r, &run.path),
        hosts: r.hosts.iter().map(|(name, config)| HostEntry { name, config }).collect(),
        plan: serde_json::from_str(&r.run.info.plan_json).unwrap_or(Value::Null),
        workload_toml: &r.run.info.workload_toml,
        steps: &r.steps,
        probes: &r.probes,
        stats: query::stat_list(r),
        dimensions: query::dimension_values(r),
    }
}

/// Splits and percent-decodes `a=1&b=x%3Ay`.
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            // Two hex digits exactly: from_str_radix alone would also take a sign ("%+1").
            b'%' if i + 2 < bytes.len() && bytes[i + 1..i + 3].iter().all(u8::is_ascii_hexdigit) => {
                let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                out.push(hex(bytes[i + 1]) * 16 + hex(bytes[i + 2]));
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes like JavaScript's encodeURIComponent, keeping `:` and `;` (the
/// separators of `where`) as they are: the form `queryPath` in assets/api.js writes.
pub fn encode_component(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'():;".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The path of a series or heat-map query, exactly as the UI writes it (report keys); the
/// UI asks for heat maps in the packed encoding.
pub fn query_path(run_id: &str, kind: &str, stat: &str, by: Option<&str>, filter: &str) -> String {
    let mut p = format!("/api/v1/runs/{run_id}/{kind}?stat={}", encode_component(stat));
    if let Some(by) = by {
        p.push_str(&format!("&by={}", encode_component(by)));
    }
    if !filter.is_empty() {
        p.push_str(&format!("&where={}", encode_component(filter)));
    }
    if kind == "heatmap" {
        p.push_str("&encoding=packed");
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_kept_for_the_file_version_it_was_computed_for_and_no_longer() {
        let dir = tempfile::tempdir().unwrap();
        let path = crate::tests::write_results(dir.path());
        let api = Api::new(std::slice::from_ref(&path));
        let first = api.get("/api/v1/runs/0/heatmap", "stat=latency");
        assert_eq!(first.status, 200);
        let run = &api.runs[0];
        let request = "/api/v1/runs/0/heatmap?stat=latency".to_string();
        // Mark the kept answer: while the file is unchanged, it is what is answered.
        run.remember(stamp(&path), request.clone(), "kept");
        assert!(
            api.get_with("/api/v1/runs/0/heatmap", "stat=latency", true).gzipped.is_none(),
            "small: not kept gzipped"
        );
        assert_eq!(api.get("/api/v1/runs/0/heatmap", "stat=latency").body, "kept");
        // A large kept answer is gzipped once for clients that take gzip.
        let large = format!("[{}0]", "1234567,".repeat(GZIP_KEPT_BYTES / 4));
        run.remember(stamp(&path), request.clone(), &large);
        let gz = api.get_with("/api/v1/runs/0/heatmap", "stat=latency", true).gzipped.expect("gzipped");
        let mut back = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(gz.as_slice()), &mut back).unwrap();
        assert_eq!(back, large);
        assert!(gz.len() < large.len() / 10);
        let again = api.get_with("/api/v1/runs/0/heatmap", "stat=latency", true).gzipped.unwrap();
        assert!(Arc::ptr_eq(&gz, &again), "compressed once");
        assert!(api.get("/api/v1/runs/0/heatmap", "stat=latency").gzipped.is_none());
        // The file changes: the answer is computed again from it.
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(later).unwrap();
        assert_eq!(api.get("/api/v1/runs/0/heatmap", "stat=latency").body, first.body);
        // Errors are not kept.
        assert_eq!(api.get("/api/v1/runs/0/heatmap", "stat=nope").status, 400);
        assert!(run.cached(&stamp(&path), "/api/v1/runs/0/heatmap?stat=nope", false).is_none());
    }
}
