//! Reading a results file back into memory, and the effective status of its run.
//!
//! Every value is checked on the way in (see check.rs): a file that is valid SQLite but
//! damaged gives an error naming the table, the row and the value, never a panic, an
//! allocation out of proportion to the file, or numbers quietly made up.

use crate::check::{self, Cell};
use crate::schema::{APPLICATION_ID, SCHEMA_VERSION};
use crate::write::OTHER_WORKERS;
use crate::{ProbeRow, Results, RunInfo, Status, StepRow, StoreError, StoredRun, StoredTarget, TargetSample};
use ioscope_metrics::stat::{self, Dim, Kind, Side, Stat, StatId};
use ioscope_metrics::TargetValue;
use ioscope_metrics::{
    FileCounts, FileDists, Histogram, Op, OpInterval, OpSeries, Snapshot, WorkerCounts, WorkerDists, STATS,
};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

/// Opens a results file read-only and loads everything. Works on a file still being
/// written and on one left by a killed run (its `-wal` file is read too).
///
/// A run that stopped without finishing (killed, crashed) left its last seconds in the
/// `-wal` file beside the results file; they are folded into the file here when it can be
/// written, so that from then on the results file alone holds the whole run.
pub fn open(path: &Path) -> Result<Results, StoreError> {
    let mut results = read(path, None)?;
    check::whole(path, &[&results.seconds])?;
    settle_status(&mut results);
    // Any run that is not going on any more: also one that recorded its end but could not
    // checkpoint (a full disk under --out), whose -wal the run says the next `show` folds in.
    if results.run.status != Status::Running {
        fold_wal(path);
    }
    Ok(results)
}

/// `path` with `suffix` appended: the `-wal` and `-shm` files beside a results file.
pub fn sidecar(path: &Path, suffix: &str) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    s.into()
}

/// Checkpoints a stopped run's `-wal` into the results file and leaves WAL mode, as
/// `Writer::finish` would have. Best effort: nothing happens if the file or its
/// directory is read-only, or if any other connection has it open (SQLite refuses the
/// checkpoint or the mode change then); the data is readable either way.
fn fold_wal(path: &Path) {
    if !sidecar(path, "-wal").exists() {
        return;
    }
    let Ok(conn) =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
    else {
        return;
    };
    let busy = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0));
    if busy == Ok(0) {
        let _ = conn.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get::<_, String>(0));
    }
    let _ = conn.close();
}

/// Brings `results` (read earlier from `path`) up to date: the run, hosts, steps and
/// probes are read again; of the seconds, only those from the last one held onwards
/// (the last may have been incomplete on some host). For following a run as it goes.
pub fn refresh(results: &mut Results) -> Result<(), StoreError> {
    let from = results.seconds.last().map(|s| s.second);
    let mut fresh = read(&results.path.clone(), from)?;
    let kept = results.seconds.partition_point(|s| Some(s.second) < from);
    check::whole(&results.path, &[&results.seconds[..kept], &fresh.seconds])?;
    results.seconds.truncate(kept);
    results.seconds.append(&mut fresh.seconds);
    fresh.seconds = std::mem::take(&mut results.seconds);
    // Target series: the samples kept before `from`, then the fresh ones.
    let mut target = std::mem::take(&mut results.target);
    for t in &mut target {
        t.samples.retain(|x| Some(x.second) < from);
    }
    for f in std::mem::take(&mut fresh.target) {
        match target.iter_mut().find(|t| std::ptr::eq(t.stat, f.stat) && t.host == f.host && t.labels == f.labels) {
            Some(t) => t.samples.extend(f.samples),
            None => target.push(f),
        }
    }
    target.retain(|t| !t.samples.is_empty());
    fresh.target = target;
    *results = fresh;
    settle_status(results);
    Ok(())
}

/// Reads a results file: every second, or those from `from_second` on.
fn read(path: &Path, from_second: Option<u32>) -> Result<Results, StoreError> {
    let meta = std::fs::metadata(path).map_err(|e| StoreError::Io { path: path.to_path_buf(), source: e })?;
    if !meta.is_file() {
        return Err(StoreError::NotResults { path: path.to_path_buf(), detail: "not a regular file".into() });
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(StoreError::sqlite(path))?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(StoreError::sqlite(path))?;
    let not_results = |detail: String| StoreError::NotResults { path: path.to_path_buf(), detail };

    let app_id: i32 = conn.query_row("PRAGMA application_id", [], |r| r.get(0)).map_err(|e| match e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::NotADatabase => {
            not_results("not an SQLite database".into())
        }
        e => StoreError::Sqlite { path: path.to_path_buf(), source: e },
    })?;
    // (Opening a WAL-mode file makes an empty -wal if there was none.)
    let wal_bytes = std::fs::metadata(crate::sidecar(path, "-wal")).map_or(0, |m| m.len());
    if app_id == 0 && wal_bytes == 0 {
        // An empty header: also what the .db of a killed run looks like when copied without
        // its -wal (everything, even the header, was still in the -wal).
        return Err(not_results(
            "SQLite application_id is 0: an empty database, or the file of a killed run copied without its \
             -wal file, which holds its data (copy both, or run `ioscope show` on the original first: it \
             makes them one file)"
                .into(),
        ));
    }
    if app_id != APPLICATION_ID {
        return Err(not_results(format!("SQLite application_id is {app_id:#x}, expected {APPLICATION_ID:#x}")));
    }
    let version: i32 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(StoreError::sqlite(path))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::Version { path: path.to_path_buf(), found: version, supported: SCHEMA_VERSION });
    }
    if version < OLDEST_READABLE {
        return Err(not_results(format!(
            "schema version {version}, written by an older ioscope; this one reads versions {OLDEST_READABLE} to {SCHEMA_VERSION}"
        )));
    }

    // One read transaction: a consistent view even while a run is still writing.
    let tx = conn.unchecked_transaction().map_err(StoreError::sqlite(path))?;
    let r = Reader { path, conn: &tx, version, from_second: from_second.unwrap_or(0) };
    r.tables()?;
    let (info, ended_unix_ms, stored_status, stored_detail) = r.run()?;
    let hosts = r.hosts()?;
    let steps = r.steps()?;
    let probes = r.probes()?;
    let (target, target_ids) = r.target()?;
    let seconds = r.seconds(&steps, &target_ids)?;
    let verification = r.verification()?;
    // The target side's seconds are the run's: none far past its last tick (a probe may be
    // a second or two ahead of a collector that fell behind).
    let last_tick = seconds.iter().map(|s| s.second).max().unwrap_or(0);
    for t in &target {
        if let Some(x) = t.samples.iter().find(|x| x.second > last_tick.saturating_add(TARGET_AHEAD_SECONDS)) {
            return Err(check::corrupt(
                path,
                "sample",
                &format!("second={}", x.second),
                format_args!("a target second past the run's last second {last_tick}"),
            ));
        }
    }
    drop(tx);

    let results = Results {
        path: path.to_path_buf(),
        schema_version: version,
        run: StoredRun {
            info,
            ended_unix_ms,
            stored_status,
            stored_detail: stored_detail.clone(),
            status: stored_status,
            status_detail: stored_detail,
        },
        hosts,
        seconds,
        steps,
        probes,
        target,
        verification,
    };
    Ok(results)
}

/// The effective status: a file that says `running` but whose process is gone was
/// interrupted.
fn settle_status(results: &mut Results) {
    if results.run.stored_status == Status::Running && !crate::liveness::still_running(&results.path, &results.run.info)
    {
        results.run.status = Status::Interrupted;
        results.run.status_detail = Some(format!(
            "the run stopped without finishing (killed or crashed); {} seconds kept",
            results.seconds_kept()
        ));
    }
}

/// How far past the run's last tick a target second may lie.
const TARGET_AHEAD_SECONDS: u32 = 10;

/// Version 2 files (no per-file series) and 3 (no error kinds, no skips) are read as they are.
const OLDEST_READABLE: i32 = 2;

/// Tables a results file has (`meta` is for people and is not read).
const TABLES: [&str; 7] = ["run", "host", "tick", "step", "probe", "series", "sample"];

struct Reader<'a> {
    path: &'a Path,
    conn: &'a Connection,
    version: i32,
    /// Seconds before this one are not read.
    from_second: u32,
}

/// A statistic's bit in the sets of statistics a series has had in a second: its place
/// in the registry.
fn bit(stat: &Stat) -> u32 {
    STATS.iter().position(|s| std::ptr::eq(s, stat)).map_or(0, |i| 1 << i)
}

/// The statistics that must be there each second, as bits: of every op (all series but
/// the sparse ones), and of every worker's and file's series.
fn required(of: impl Fn(&Stat) -> bool) -> u32 {
    STATS.iter().filter(|s| of(s)).fold(0, |bits, s| bits | bit(s))
}

/// (stat, host, workload, op, worker, file, error): what tells series apart.
type SeriesKey = (String, String, String, Op, Option<Option<u32>>, Option<String>, Option<String>);

/// One row being read.
struct RowView<'r> {
    path: &'r Path,
    table: &'static str,
    /// Describes the row, only when an error needs it.
    row: &'r dyn Fn() -> String,
    r: &'r rusqlite::Row<'r>,
}

impl<'r> RowView<'r> {
    fn at(&self, i: usize, column: &'static str) -> Result<Cell<'r>, StoreError> {
        let value = self.r.get_ref(i).map_err(StoreError::sqlite(self.path))?;
        Ok(Cell { table: self.table, row: self.row, column, value })
    }
}

impl Reader<'_> {
    fn sql(&self) -> impl FnOnce(rusqlite::Error) -> StoreError + '_ {
        StoreError::sqlite(self.path)
    }

    /// Runs `sql` and hands each row to `each` with what describes the row in error
    /// messages: its `key` columns ("series_id=5 second=3").
    fn rows(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        table: &'static str,
        key: &[usize],
        mut each: impl FnMut(&RowView<'_>, &dyn Fn() -> String) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(self.sql())?;
        let names: Vec<String> = stmt.column_names().iter().map(|s| s.to_string()).collect();
        let mut rows = stmt.query(params).map_err(self.sql())?;
        while let Some(r) = rows.next().map_err(self.sql())? {
            let describe = || {
                let parts = key.iter().map(|&k| {
                    let v = r.get_ref(k).map_or_else(|e| e.to_string(), check::show);
                    format!("{}={v}", names[k])
                });
                parts.collect::<Vec<_>>().join(" ")
            };
            each(&RowView { path: self.path, table, row: &describe, r }, &describe)?;
        }
        Ok(())
    }

    /// Whether the file has the (optional) table `name`.
    fn has_table(&self, name: &str) -> Result<bool, StoreError> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |r| r.get(0))
            .map_err(self.sql())?;
        Ok(n > 0)
    }

    /// Every table is there.
    fn tables(&self) -> Result<(), StoreError> {
        let mut stmt = self.conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").map_err(self.sql())?;
        let names: HashSet<String> = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(self.sql())?
            .collect::<Result<_, _>>()
            .map_err(self.sql())?;
        match TABLES.iter().find(|t| !names.contains(**t)) {
            Some(t) => Err(check::corrupt(self.path, t, "", "the table is missing")),
            None => Ok(()),
        }
    }

    #[allow(clippy::type_complexity)]
    fn run(&self) -> Result<(RunInfo, Option<i64>, Status, Option<String>), StoreError> {
        let p = self.path;
        let mut found = None;
        self.rows(
            "SELECT ioscope_version, host, pid, command_line, started_unix_ms, ended_unix_ms,
                    status, status_detail, planned_duration_ns, plan_json, workload_toml,
                    workload_hash, id
             FROM run WHERE id = 1",
            [],
            "run",
            &[12],
            |c, row| {
                let status = c.at(6, "status")?.text(p)?;
                let status = status
                    .parse::<Status>()
                    .map_err(|e| check::corrupt(p, "run", &row(), format_args!("status: {e}")))?;
                let info = RunInfo {
                    ioscope_version: c.at(0, "ioscope_version")?.text(p)?,
                    host: c.at(1, "host")?.text(p)?,
                    pid: c.at(2, "pid")?.u32(p)?,
                    command_line: c.at(3, "command_line")?.text(p)?,
                    started_unix_ms: c.at(4, "started_unix_ms")?.i64(p)?,
                    planned_duration_ns: c.at(8, "planned_duration_ns")?.uint(p, i64::MAX as u64)?,
                    plan_json: c.at(9, "plan_json")?.text(p)?,
                    workload_toml: c.at(10, "workload_toml")?.text(p)?,
                    workload_hash: c.at(11, "workload_hash")?.text(p)?,
                };
                found =
                    Some((info, c.at(5, "ended_unix_ms")?.opt_i64(p)?, status, c.at(7, "status_detail")?.opt_text(p)?));
                Ok(())
            },
        )?;
        found.ok_or_else(|| check::corrupt(p, "run", "", "no row with id 1 (the run)"))
    }

    fn hosts(&self) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
        let p = self.path;
        let mut hosts = Vec::new();
        self.rows("SELECT name, config_json FROM host ORDER BY name", [], "host", &[0], |c, _| {
            let (name, json) = (c.at(0, "name")?.text(p)?, c.at(1, "config_json")?.text(p)?);
            // A configuration that is not JSON is kept as a string rather than refused.
            let v = serde_json::from_str(&json).unwrap_or(serde_json::Value::String(json));
            hosts.push((name, v));
            Ok(())
        })?;
        Ok(hosts)
    }

    fn steps(&self) -> Result<Vec<StepRow>, StoreError> {
        let p = self.path;
        let mut steps: Vec<StepRow> = Vec::new();
        let repeat = if self.version >= 7 { "repeat" } else { "0" };
        self.rows(
            &format!(
                "SELECT idx, label, threads, rate_iops, curve_pct, start_second, warmup_ns, duration_ns, {repeat}
                 FROM step ORDER BY idx"
            ),
            [],
            "step",
            &[0],
            |c, row| {
                let step = StepRow {
                    index: c.at(0, "idx")?.u32(p)?,
                    label: c.at(1, "label")?.text(p)?,
                    threads: c.at(2, "threads")?.opt_u32(p)?,
                    rate_iops: c.at(3, "rate_iops")?.opt_uint(p, i64::MAX as u64)?,
                    curve_pct: c.at(4, "curve_pct")?.opt_uint(p, 100)?.map(|v| v as u8),
                    start_second: c.at(5, "start_second")?.u32(p)?,
                    warmup_ns: c.at(6, "warmup_ns")?.uint(p, i64::MAX as u64)?,
                    duration_ns: c.at(7, "duration_ns")?.uint(p, i64::MAX as u64)?,
                    repeat: c.at(8, "repeat")?.u32(p)?,
                };
                if steps.last().is_some_and(|s| s.index == step.index) {
                    return Err(check::corrupt(p, "step", &row(), "a second row for the same step"));
                }
                // Repeats run one after the other: a later step never belongs to an earlier one.
                if let Some(before) = steps.last().filter(|s| s.repeat > step.repeat) {
                    let what = format!("repeat {} after a step of repeat {}", step.repeat, before.repeat);
                    return Err(check::corrupt(p, "step", &row(), what));
                }
                steps.push(step);
                Ok(())
            },
        )?;
        Ok(steps)
    }

    fn probes(&self) -> Result<Vec<ProbeRow>, StoreError> {
        let p = self.path;
        let mut probes = Vec::new();
        // A probe's start names a second of the run.
        let max_at = (u32::MAX as u64 + 1) * 1_000_000_000 - 1;
        self.rows(
            "SELECT name, command, at_ns, duration_ns, exit_code, detail FROM probe ORDER BY at_ns, name",
            [],
            "probe",
            &[0, 2],
            |c, _| {
                probes.push(ProbeRow {
                    name: c.at(0, "name")?.text(p)?,
                    command: c.at(1, "command")?.text(p)?,
                    at_ns: c.at(2, "at_ns")?.uint(p, max_at.min(i64::MAX as u64))?,
                    duration_ns: c.at(3, "duration_ns")?.uint(p, i64::MAX as u64)?,
                    exit_code: c.at(4, "exit_code")?.opt_i32(p)?,
                    detail: c.at(5, "detail")?.opt_text(p)?,
                });
                Ok(())
            },
        )?;
        Ok(probes)
    }

    /// What data validation found (`--verify`); None when the file has no such tables.
    fn verification(&self) -> Result<Option<crate::Verification>, StoreError> {
        if !self.has_table("verify_run")? {
            return Ok(None);
        }
        let p = self.path;
        let mut v = crate::Verification::default();
        let max = i64::MAX as u64;
        self.rows(
            "SELECT host, run_id, block_len, stamped_blocks, stamp_ns, mismatches FROM verify_run ORDER BY host",
            [],
            "verify_run",
            &[0],
            |c, _| {
                v.runs.push(crate::VerifyRun {
                    host: c.at(0, "host")?.text(p)?,
                    run_id: c.at(1, "run_id")?.text(p)?,
                    block_len: c.at(2, "block_len")?.u32(p)?,
                    stamped_blocks: c.at(3, "stamped_blocks")?.uint(p, max)?,
                    stamp_ns: c.at(4, "stamp_ns")?.uint(p, max)?,
                    mismatches: c.at(5, "mismatches")?.uint(p, max)?,
                });
                Ok(())
            },
        )?;
        if self.has_table("verify_mismatch")? {
            self.rows(
                "SELECT host, second, file, path, offset, kind, expected_generation, found_header_json
                 FROM verify_mismatch ORDER BY rowid LIMIT 100000",
                [],
                "verify_mismatch",
                &[0, 1, 4],
                |c, _| {
                    v.mismatches.push(crate::MismatchRow {
                        host: c.at(0, "host")?.text(p)?,
                        second: c.at(1, "second")?.u32(p)?,
                        file: c.at(2, "file")?.u32(p)?,
                        path: c.at(3, "path")?.text(p)?,
                        offset: c.at(4, "offset")?.uint(p, max)?,
                        kind: c.at(5, "kind")?.text(p)?,
                        expected_generation: c.at(6, "expected_generation")?.text(p)?,
                        found_header_json: c.at(7, "found_header_json")?.opt_text(p)?,
                    });
                    Ok(())
                },
            )?;
        }
        Ok(Some(v))
    }

    /// The target side's series with samples (version 6), ordered by id, and the ids of
    /// every target series (those of statistics this version does not know are left out).
    fn target(&self) -> Result<(Vec<StoredTarget>, HashSet<i64>), StoreError> {
        let p = self.path;
        if self.version < 6 {
            return Ok((Vec::new(), HashSet::new()));
        }
        let mut series: BTreeMap<i64, StoredTarget> = BTreeMap::new();
        let mut unknown: HashSet<i64> = HashSet::new();
        self.rows(
            "SELECT id, stat, host, op, cpu, mode, nic, disk, process, syscall FROM series WHERE side = 'target'",
            [],
            "series",
            &[0],
            |c, row| {
                let id = c.at(0, "id")?.i64(p)?;
                let stored = c.at(1, "stat")?.text(p)?;
                let Some(stat) = stat::by_stored(&stored).filter(|s| s.side == Side::Target) else {
                    unknown.insert(id);
                    return Ok(());
                };
                let mut labels = Vec::new();
                let op = c.at(3, "op")?.text(p)?;
                if !op.is_empty() {
                    labels.push((Dim::Op, op));
                }
                for (i, dim) in Dim::TARGET.iter().enumerate() {
                    if let Some(v) = c.at(4 + i, dim.name())?.opt_text(p)? {
                        labels.push((*dim, v));
                    }
                }
                if let Some((d, _)) = labels.iter().find(|(d, _)| !stat.has(*d)) {
                    return Err(check::corrupt(
                        p,
                        "series",
                        &row(),
                        format_args!("{} has no dimension {}", stat.stored, d.name()),
                    ));
                }
                let t = StoredTarget { stat, host: c.at(2, "host")?.text(p)?, labels, samples: Vec::new() };
                series.insert(id, t);
                Ok(())
            },
        )?;
        self.rows(
            "SELECT x.series_id, x.second, x.interval_ns, x.value, x.sum, x.min, x.max, x.hist
             FROM sample x JOIN series s ON s.id = x.series_id WHERE s.side = 'target' AND x.second >= ?1
             ORDER BY x.series_id, x.second",
            [self.from_second],
            "sample",
            &[0, 1],
            |c, row| {
                let id = c.at(0, "series_id")?.i64(p)?;
                let Some(t) = series.get_mut(&id) else {
                    return if unknown.contains(&id) {
                        Ok(())
                    } else {
                        Err(c.at(0, "series_id")?.err(p, "names no row of table series"))
                    };
                };
                let second = c.at(1, "second")?.u32(p)?;
                let interval_ns = c.at(2, "interval_ns")?.uint(p, u64::MAX)?;
                if interval_ns == 0 {
                    return Err(c.at(2, "interval_ns")?.err(p, "is 0"));
                }
                let value = c.at(3, "value")?.uint(p, u64::MAX)?;
                let corrupt = |detail: String| check::corrupt(p, "sample", &row(), detail);
                let value = match t.stat.kind {
                    Kind::Counter => TargetValue::Count(value),
                    Kind::Gauge => TargetValue::Gauge(value),
                    Kind::Distribution | Kind::Event => TargetValue::Dist(match c.at(7, "hist")?.value {
                        ValueRef::Null if value == 0 => Histogram::new(),
                        ValueRef::Null => return Err(corrupt(format!("value {value} but no histogram"))),
                        ValueRef::Blob(blob) => {
                            let sum = c.at(4, "sum")?.opt_u128(p)?;
                            let min = c.at(5, "min")?.opt_uint(p, u64::MAX)?;
                            let max = c.at(6, "max")?.opt_uint(p, u64::MAX)?;
                            check::histogram(blob, value, sum, min, max).map_err(|e| corrupt(e.to_string()))?
                        }
                        other => {
                            return Err(c
                                .at(7, "hist")?
                                .err(p, format_args!("is {}, expected a blob", check::show(other))))
                        }
                    }),
                };
                if t.samples.last().is_some_and(|s| s.second >= second) {
                    return Err(corrupt(format!("a second row of series {id} for second {second}")));
                }
                t.samples.push(TargetSample { second, interval_ns, value });
                Ok(())
            },
        )?;
        let mut ids: HashSet<i64> = unknown;
        ids.extend(series.keys());
        Ok((series.into_values().filter(|t| !t.samples.is_empty()).collect(), ids))
    }

    fn seconds(&self, steps: &[StepRow], target_ids: &HashSet<i64>) -> Result<Vec<Snapshot>, StoreError> {
        let p = self.path;
        struct SeriesRow {
            stat: String,
            /// The registry's entry; None for a statistic this version does not know
            /// (its samples are skipped).
            entry: Option<&'static Stat>,
            host: String,
            workload: String,
            op: Op,
            /// Some(None): the other workers (-1, distributions of version 5).
            worker: Option<Option<u32>>,
            file: Option<String>,
            error: Option<String>,
        }
        let mut series: HashMap<i64, SeriesRow> = HashMap::new();
        {
            let mut keys: HashMap<SeriesKey, i64> = HashMap::new();
            let file = if self.version >= 3 { "file" } else { "NULL" };
            let error = if self.version >= 4 { "error" } else { "NULL" };
            let client = if self.version >= 6 { "WHERE side = 'client'" } else { "" };
            self.rows(
                &format!("SELECT id, stat, host, workload, op, worker, {file}, {error} FROM series {client}"),
                [],
                "series",
                &[0],
                |c, row| {
                    let id = c.at(0, "id")?.i64(p)?;
                    let stat = c.at(1, "stat")?.text(p)?;
                    let op = c.at(4, "op")?.text(p)?;
                    let Some(op) = Op::parse(&op) else {
                        let names: Vec<&str> = Op::ALL.iter().map(|o| o.name()).collect();
                        return Err(c.at(4, "op")?.err(
                            p,
                            format_args!("{op:?} is not an operation (expected one of {})", names.join(", ")),
                        ));
                    };
                    let entry = stat::by_stored(&stat);
                    let dist = entry.is_some_and(|e| e.kind == Kind::Distribution);
                    let worker = match c.at(5, "worker")?.opt_i64(p)? {
                        Some(OTHER_WORKERS) if dist && self.version >= 5 => Some(None),
                        _ => c.at(5, "worker")?.opt_u32(p)?.map(Some),
                    };
                    let s = SeriesRow {
                        entry,
                        stat,
                        host: c.at(2, "host")?.text(p)?,
                        workload: c.at(3, "workload")?.text(p)?,
                        op,
                        worker,
                        file: c.at(6, "file")?.opt_text(p)?,
                        error: c.at(7, "error")?.opt_text(p)?,
                    };
                    let apart = s.worker.is_some() || s.file.is_some();
                    if apart && dist && (self.version < 5 || !s.workload.is_empty()) {
                        return Err(check::corrupt(
                            p,
                            "series",
                            &row(),
                            "a per-worker or per-file distribution with a workload or in a file before version 5",
                        ));
                    }
                    if s.worker.is_some() && s.file.is_some() {
                        return Err(check::corrupt(p, "series", &row(), "both a worker and a file"));
                    }
                    let kinds = s.entry.is_some_and(|e| e.has(Dim::Error));
                    if s.error.is_some() && (!kinds || s.worker.is_some() || s.file.is_some()) {
                        return Err(check::corrupt(
                            p,
                            "series",
                            &row(),
                            "an error kind on a series other than an op's io.errors",
                        ));
                    }
                    let key = (
                        s.stat.clone(),
                        s.host.clone(),
                        s.workload.clone(),
                        s.op,
                        s.worker,
                        s.file.clone(),
                        s.error.clone(),
                    );
                    if let Some(other) = keys.insert(key, id) {
                        return Err(check::corrupt(p, "series", &row(), format_args!("the same series as id={other}")));
                    }
                    if series.insert(id, s).is_some() {
                        return Err(check::corrupt(p, "series", &row(), "a second row with this id"));
                    }
                    Ok(())
                },
            )?;
        }

        /// A second of one host as it is assembled, with which statistics each of its
        /// series has had (see [`bit`]).
        struct Building {
            snap: Snapshot,
            ops: HashMap<(String, Op), (usize, u32)>,
            workers: HashMap<(u32, Op), (usize, u32)>,
            files: HashMap<(String, Op), (usize, u32)>,
            worker_dists: HashMap<(Option<u32>, Op), (usize, u32)>,
            file_dists: HashMap<(String, Op), (usize, u32)>,
            /// (op row, error kind): each kind once (a set, not a search per kind).
            kinds: HashSet<(usize, String)>,
        }
        let step_ids: HashSet<u32> = steps.iter().map(|s| s.index).collect();
        let step_list: Vec<u32> = steps.iter().map(|s| s.index).collect();
        let mut snaps: BTreeMap<(u32, String), Building> = BTreeMap::new();
        // Every row unless refreshing: a negative or NULL second is damage to report,
        // not a row to leave out.
        let newer = if self.from_second > 0 { "WHERE second >= ?1" } else { "WHERE ?1 = 0" };
        self.rows(
            &format!(
                "SELECT host, second, interval_ns, step, warmup, {} FROM tick {newer}",
                if self.version >= 5 { "not_broken_down" } else { "0" }
            ),
            [self.from_second],
            "tick",
            &[0, 1],
            |c, row| {
                let host = c.at(0, "host")?.text(p)?;
                let second = c.at(1, "second")?.u32(p)?;
                let interval_ns = c.at(2, "interval_ns")?.uint(p, u64::MAX)?;
                if interval_ns == 0 {
                    return Err(c.at(2, "interval_ns")?.err(p, "is 0: a second must have lasted some time"));
                }
                let step = c.at(3, "step")?.u32(p)?;
                if !step_ids.is_empty() && !step_ids.contains(&step) {
                    return Err(c.at(3, "step")?.err(p, format_args!("{step} is not in table step")));
                }
                let warmup = c.at(4, "warmup")?.bool(p)?;
                let not_broken_down = c.at(5, "not_broken_down")?.uint(p, i64::MAX as u64)?;
                let snap = Snapshot {
                    second,
                    interval_ns,
                    step,
                    warmup,
                    host: host.clone(),
                    ops: Vec::new(),
                    workers: Vec::new(),
                    files: Vec::new(),
                    worker_dists: Vec::new(),
                    file_dists: Vec::new(),
                    not_broken_down,
                    worker_cpu: Vec::new(),
                };
                let building = Building {
                    snap,
                    ops: HashMap::new(),
                    workers: HashMap::new(),
                    files: HashMap::new(),
                    worker_dists: HashMap::new(),
                    file_dists: HashMap::new(),
                    kinds: HashSet::new(),
                };
                if snaps.insert((second, host), building).is_some() {
                    return Err(check::corrupt(p, "tick", &row(), "a second row for the same host and second"));
                }
                Ok(())
            },
        )?;

        // Worker threads' CPU time: a table files of earlier versions do not have.
        if self.has_table("worker_cpu")? {
            self.rows(
                &format!(
                    "SELECT host, second, worker, cpu_ns, wait_ns FROM worker_cpu {newer} ORDER BY second, host, worker"
                ),
                [self.from_second],
                "worker_cpu",
                &[0, 1, 2],
                |c, _| {
                    let host = c.at(0, "host")?.text(p)?;
                    let second = c.at(1, "second")?.u32(p)?;
                    let worker = c.at(2, "worker")?.u32(p)?;
                    let cpu_ns = c.at(3, "cpu_ns")?.uint(p, i64::MAX as u64)?;
                    let wait_ns = c.at(4, "wait_ns")?.uint(p, i64::MAX as u64)?;
                    let Some(b) = snaps.get_mut(&(second, host.clone())) else {
                        return Err(c.at(1, "second")?.err(p, format_args!("no row of table tick for host {host:?}")));
                    };
                    b.snap.worker_cpu.push(ioscope_metrics::WorkerCpu { worker, cpu_ns, wait_ns });
                    Ok(())
                },
            )?;
        }

        self.rows(
            &format!(
                "SELECT series_id, second, interval_ns, value, sum, min, max, hist
                 FROM sample {newer} ORDER BY second, series_id"
            ),
            [self.from_second],
            "sample",
            &[0, 1],
            |c, row| {
                let id = c.at(0, "series_id")?.i64(p)?;
                let second = c.at(1, "second")?.u32(p)?;
                let Some(s) = series.get(&id) else {
                    if target_ids.contains(&id) {
                        return Ok(()); // read by `target`
                    }
                    return Err(c.at(0, "series_id")?.err(p, "names no row of table series"));
                };
                let corrupt = |detail: String| check::corrupt(p, "sample", &row(), detail);
                let Some(b) = snaps.get_mut(&(second, s.host.clone())) else {
                    return Err(corrupt(format!("no row of table tick for host {:?} second {second}", s.host)));
                };
                let interval = c.at(2, "interval_ns")?.uint(p, u64::MAX)?;
                if interval != b.snap.interval_ns {
                    return Err(c
                        .at(2, "interval_ns")?
                        .err(p, format_args!("{interval} differs from the tick's {}", b.snap.interval_ns)));
                }
                let value = c.at(3, "value")?.uint(p, u64::MAX)?;
                let snap = &mut b.snap;
                let Some(entry) = s.entry else { return Ok(()) }; // a statistic this version does not know
                                                                  // Each series has one row per second.
                let mark = |bits: &mut u32| {
                    let new = bit(entry);
                    if *bits & new != 0 {
                        return Err(corrupt(format!("a second row of series {id} for second {second}")));
                    }
                    *bits |= new;
                    Ok(())
                };
                let hist = |h: &mut Histogram| -> Result<(), StoreError> {
                    match c.at(7, "hist")?.value {
                        // An empty distribution: nothing but its zero count.
                        ValueRef::Null if value == 0 => Ok(()),
                        ValueRef::Null => Err(corrupt(format!("value {value} but no histogram"))),
                        ValueRef::Blob(blob) => {
                            let sum = c.at(4, "sum")?.opt_u128(p)?;
                            let min = c.at(5, "min")?.opt_uint(p, u64::MAX)?;
                            let max = c.at(6, "max")?.opt_uint(p, u64::MAX)?;
                            *h = check::histogram(blob, value, sum, min, max).map_err(|e| corrupt(e.to_string()))?;
                            Ok(())
                        }
                        other => {
                            Err(c.at(7, "hist")?.err(p, format_args!("is {}, expected a blob", check::show(other))))
                        }
                    }
                };
                // A busiest worker's or file's distributions, or the rest's (version 5).
                if entry.kind == Kind::Distribution && (s.file.is_some() || s.worker.is_some()) {
                    let data = if let Some(file) = &s.file {
                        let (i, bits) = b.file_dists.entry((file.clone(), s.op)).or_insert_with(|| {
                            snap.file_dists.push(FileDists { file: file.clone(), op: s.op, data: OpInterval::empty() });
                            (snap.file_dists.len() - 1, 0)
                        });
                        mark(bits)?;
                        &mut snap.file_dists[*i].data
                    } else {
                        let worker = s.worker.flatten();
                        let (i, bits) = b.worker_dists.entry((worker, s.op)).or_insert_with(|| {
                            snap.worker_dists.push(WorkerDists { worker, op: s.op, data: OpInterval::empty() });
                            (snap.worker_dists.len() - 1, 0)
                        });
                        mark(bits)?;
                        &mut snap.worker_dists[*i].data
                    };
                    if let Some(h) = data.histogram_mut(entry.id) {
                        hist(h)?;
                    }
                    if entry.id == StatId::Latency {
                        data.counts.ops = value;
                    }
                    if entry.id == StatId::Size {
                        data.counts.bytes = data.size_bytes.sum() as u64;
                    }
                    return Ok(());
                }
                if let Some(file) = &s.file {
                    let (i, bits) = b.files.entry((file.clone(), s.op)).or_insert_with(|| {
                        snap.files.push(FileCounts { file: file.clone(), op: s.op, counts: Default::default() });
                        (snap.files.len() - 1, 0)
                    });
                    if let Some(cell) = snap.files[*i].counts.get_mut(entry.id).filter(|_| entry.has(Dim::File)) {
                        mark(bits)?;
                        *cell = value;
                    }
                    return Ok(());
                }
                if let Some(Some(worker)) = s.worker {
                    let (i, bits) = b.workers.entry((worker, s.op)).or_insert_with(|| {
                        snap.workers.push(WorkerCounts { worker, op: s.op, counts: Default::default() });
                        (snap.workers.len() - 1, 0)
                    });
                    if let Some(cell) = snap.workers[*i].counts.get_mut(entry.id).filter(|_| entry.has(Dim::Worker)) {
                        mark(bits)?;
                        *cell = value;
                    }
                    return Ok(());
                }
                let (i, bits) = b.ops.entry((s.workload.clone(), s.op)).or_insert_with(|| {
                    snap.ops.push(OpSeries { workload: s.workload.clone(), op: s.op, data: OpInterval::empty() });
                    (snap.ops.len() - 1, 0)
                });
                let d = &mut snap.ops[*i].data;
                // Error kinds and skips come beside the per-op statistics, not among them.
                if let Some(kind) = &s.error {
                    if !b.kinds.insert((*i, kind.clone())) {
                        return Err(corrupt(format!("a second row of series {id} for second {second}")));
                    }
                    d.errors_by_kind.push((kind.clone(), value));
                    return Ok(());
                }
                if entry.sparse {
                    if let Some(cell) = d.count_mut(entry.id) {
                        *cell = value;
                    }
                    return Ok(());
                }
                mark(bits)?;
                let d = &mut snap.ops[*i].data;
                if let Some(cell) = d.count_mut(entry.id) {
                    *cell = value;
                } else if let Some(h) = d.histogram_mut(entry.id) {
                    hist(h)?;
                }
                Ok(())
            },
        )?;

        // Every series of a second is there, and each operation's counts are its
        // histograms' (the recorder derives them so): a missing or changed row is
        // damage, not a second with less I/O.
        let mut out = Vec::with_capacity(snaps.len());
        for ((second, host), b) in snaps {
            let at =
                |what: String| check::corrupt(p, "sample", "", format_args!("host {host:?} second {second}: {what}"));
            // Every statistic the operation has (no size or offset row for a sync or an open).
            let full = |bits: u32, need: u32, op: Op, what: &str| match STATS
                .iter()
                .find(|s| need & bit(s) & !bits != 0 && s.id.applies_to(op))
            {
                Some(stat) => Err(at(format!("no {} row for {what} (its other statistics have one)", stat.stored))),
                None => Ok(()),
            };
            let (of_op, of_worker, of_file, of_dists) = (
                required(|s| s.is_series() && !s.sparse),
                required(|s| s.has(Dim::Worker) && s.kind == Kind::Counter),
                required(|s| s.has(Dim::File) && s.kind == Kind::Counter),
                required(|s| s.kind == Kind::Distribution),
            );
            for ((worker, op), (_, bits)) in &b.worker_dists {
                let worker = worker.map_or_else(|| ioscope_metrics::OTHER.to_string(), |w| w.to_string());
                full(*bits, of_dists, *op, &format!("worker {worker} op {:?}", op.name()))?;
            }
            for ((file, op), (_, bits)) in &b.file_dists {
                full(*bits, of_dists, *op, &format!("file {file:?} op {:?}", op.name()))?;
            }
            for ((workload, op), (_, bits)) in &b.ops {
                full(*bits, of_op, *op, &format!("workload {workload:?} op {:?}", op.name()))?;
            }
            // The rules of a second, the same a coordinator applies to an agent's.
            check::second(&b.snap, &step_list, false).map_err(at)?;
            for ((worker, op), (_, bits)) in &b.workers {
                full(*bits, of_worker, *op, &format!("worker {worker} op {:?}", op.name()))?;
            }
            for ((file, op), (_, bits)) in &b.files {
                full(*bits, of_file, *op, &format!("file {file:?} op {:?}", op.name()))?;
            }
            out.push(b.snap);
        }
        Ok(out)
    }
}
