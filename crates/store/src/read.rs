//! Reading a results file back into memory, and the effective status of its run.

use crate::schema::{APPLICATION_ID, SCHEMA_VERSION};
use crate::{stat, ProbeRow, Results, RunInfo, Status, StepRow, StoreError, StoredRun};
use ioscope_metrics::{FileCounts, Histogram, OpInterval, OpSeries, Snapshot, WorkerCounts};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

/// Opens a results file read-only and loads everything. Works on a file still being
/// written and on one left by a killed run (its `-wal` file is read too).
pub fn open(path: &Path) -> Result<Results, StoreError> {
    let mut results = read(path, None)?;
    settle_status(&mut results);
    Ok(results)
}

/// Brings `results` (read earlier from `path`) up to date: the run, hosts, steps and
/// probes are read again; of the seconds, only those from the last one held onwards
/// (the last may have been incomplete on some host). For following a run as it goes.
pub fn refresh(results: &mut Results) -> Result<(), StoreError> {
    let from = results.seconds.last().map(|s| s.second);
    let mut fresh = read(&results.path.clone(), from)?;
    if let Some(from) = from {
        results.seconds.retain(|s| s.second < from);
    }
    results.seconds.append(&mut fresh.seconds);
    fresh.seconds = std::mem::take(&mut results.seconds);
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
    let mut r = Reader { path, conn: &tx, version, from_second: from_second.unwrap_or(0) };
    let (info, ended_unix_ms, stored_status, stored_detail) = r.run()?;
    let hosts = r.hosts()?;
    let seconds = r.seconds()?;
    let steps = r.steps()?;
    let probes = r.probes()?;
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
    };
    Ok(results)
}

/// The effective status: a file that says `running` but whose process is gone was
/// interrupted.
fn settle_status(results: &mut Results) {
    if results.run.stored_status == Status::Running && !still_running(&results.run.info) {
        results.run.status = Status::Interrupted;
        results.run.status_detail = Some(format!(
            "the run stopped without finishing (killed or crashed); {} seconds kept",
            results.seconds_kept()
        ));
    }
}

/// Whether the process that wrote a `running` file is still at it: same host, the pid
/// exists and it is an ioscope process. A run from another host cannot be checked and
/// counts as stopped.
fn still_running(run: &RunInfo) -> bool {
    if crate::hostname().as_deref() != Some(run.host.as_str()) || run.pid == 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{}/comm", run.pid)) {
        Ok(comm) => comm.trim_end() == "ioscope",
        Err(_) => false,
    }
}

/// Stores a counter sample of a per-worker or per-file series.
fn set_counter(c: &mut ioscope_metrics::Counts, stat: &str, value: u64) {
    match stat {
        stat::OPS => c.ops = value,
        stat::BYTES => c.bytes = value,
        stat::ERRORS => c.errors = value,
        _ => {} // a statistic this version does not know: skipped
    }
}

/// Version 2 files (no per-file series) and 3 (no error kinds, no skips) are read as they are.
const OLDEST_READABLE: i32 = 2;

struct Reader<'a> {
    path: &'a Path,
    conn: &'a Connection,
    version: i32,
    /// Seconds before this one are not read.
    from_second: u32,
}

fn u64_of(v: ValueRef<'_>) -> Result<Option<u64>, String> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Integer(i) => u64::try_from(i).map(Some).map_err(|_| format!("negative value {i}")),
        ValueRef::Text(t) => {
            let s = std::str::from_utf8(t).map_err(|_| "non-UTF-8 number".to_string())?;
            s.trim().parse().map(Some).map_err(|_| format!("bad number {s:?}"))
        }
        ValueRef::Real(f) if f >= 0.0 => Ok(Some(f as u64)),
        other => Err(format!("unexpected value {other:?}")),
    }
}

fn u128_of(v: ValueRef<'_>) -> Result<Option<u128>, String> {
    match v {
        ValueRef::Text(t) => {
            let s = std::str::from_utf8(t).map_err(|_| "non-UTF-8 number".to_string())?;
            s.trim().parse().map(Some).map_err(|_| format!("bad number {s:?}"))
        }
        ValueRef::Real(f) if f >= 0.0 => Ok(Some(f as u128)),
        other => u64_of(other).map(|o| o.map(u128::from)),
    }
}

impl Reader<'_> {
    fn sql(&self) -> impl FnOnce(rusqlite::Error) -> StoreError + '_ {
        StoreError::sqlite(self.path)
    }
    fn corrupt(&self, detail: String) -> StoreError {
        StoreError::Corrupt { path: self.path.to_path_buf(), detail }
    }

    #[allow(clippy::type_complexity)]
    fn run(&mut self) -> Result<(RunInfo, Option<i64>, Status, Option<String>), StoreError> {
        let row = self
            .conn
            .query_row(
                "SELECT ioscope_version, host, pid, command_line, started_unix_ms, ended_unix_ms,
                        status, status_detail, planned_duration_ns, plan_json, workload_toml,
                        workload_hash
                 FROM run WHERE id = 1",
                [],
                |r| {
                    Ok((
                        RunInfo {
                            ioscope_version: r.get(0)?,
                            host: r.get(1)?,
                            pid: r.get(2)?,
                            command_line: r.get(3)?,
                            started_unix_ms: r.get(4)?,
                            planned_duration_ns: r.get::<_, i64>(8)?.max(0) as u64,
                            plan_json: r.get(9)?,
                            workload_toml: r.get(10)?,
                            workload_hash: r.get(11)?,
                        },
                        r.get::<_, Option<i64>>(5)?,
                        r.get::<_, String>(6)?,
                        r.get::<_, Option<String>>(7)?,
                    ))
                },
            )
            .optional()
            .map_err(self.sql())?;
        let Some((info, ended, status, detail)) = row else {
            return Err(self.corrupt("the run table is empty".into()));
        };
        let status = status.parse::<Status>().map_err(|e| self.corrupt(e.to_string()))?;
        Ok((info, ended, status, detail))
    }

    fn hosts(&mut self) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
        let mut stmt = self.conn.prepare("SELECT name, config_json FROM host ORDER BY name").map_err(self.sql())?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(self.sql())?
            .collect::<Result<Vec<_>, _>>()
            .map_err(self.sql())?;
        // A configuration that is not JSON is kept as a string rather than refused.
        Ok(rows
            .into_iter()
            .map(|(name, json)| {
                let v = serde_json::from_str(&json).unwrap_or(serde_json::Value::String(json));
                (name, v)
            })
            .collect())
    }

    fn steps(&mut self) -> Result<Vec<StepRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT idx, label, threads, rate_iops, curve_pct, start_second, warmup_ns, duration_ns
                 FROM step ORDER BY idx",
            )
            .map_err(self.sql())?;
        let rows = stmt
            .query_map([], |r| {
                Ok(StepRow {
                    index: r.get(0)?,
                    label: r.get(1)?,
                    threads: r.get(2)?,
                    rate_iops: r.get::<_, Option<i64>>(3)?.map(|v| v.max(0) as u64),
                    curve_pct: r.get(4)?,
                    start_second: r.get(5)?,
                    warmup_ns: r.get::<_, i64>(6)?.max(0) as u64,
                    duration_ns: r.get::<_, i64>(7)?.max(0) as u64,
                })
            })
            .map_err(self.sql())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.sql())
    }

    fn probes(&mut self) -> Result<Vec<ProbeRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, command, at_ns, duration_ns, exit_code, detail FROM probe ORDER BY at_ns, name")
            .map_err(self.sql())?;
        let rows = stmt
            .query_map([], |r| {
                Ok(ProbeRow {
                    name: r.get(0)?,
                    command: r.get(1)?,
                    at_ns: r.get::<_, i64>(2)?.max(0) as u64,
                    duration_ns: r.get::<_, i64>(3)?.max(0) as u64,
                    exit_code: r.get(4)?,
                    detail: r.get(5)?,
                })
            })
            .map_err(self.sql())?;
        rows.collect::<Result<Vec<_>, _>>().map_err(self.sql())
    }

    fn seconds(&mut self) -> Result<Vec<Snapshot>, StoreError> {
        struct SeriesRow {
            stat: String,
            host: String,
            workload: String,
            op: String,
            worker: Option<u32>,
            file: Option<String>,
            error: Option<String>,
        }
        let mut series = HashMap::new();
        {
            let file = if self.version >= 3 { "file" } else { "NULL" };
            let error = if self.version >= 4 { "error" } else { "NULL" };
            let mut stmt = self
                .conn
                .prepare(&format!("SELECT id, stat, host, workload, op, worker, {file}, {error} FROM series"))
                .map_err(self.sql())?;
            let mut rows = stmt.query([]).map_err(self.sql())?;
            while let Some(r) = rows.next().map_err(self.sql())? {
                let id: i64 = r.get(0).map_err(self.sql())?;
                let row = SeriesRow {
                    stat: r.get(1).map_err(self.sql())?,
                    host: r.get(2).map_err(self.sql())?,
                    workload: r.get(3).map_err(self.sql())?,
                    op: r.get(4).map_err(self.sql())?,
                    worker: r.get(5).map_err(self.sql())?,
                    file: r.get(6).map_err(self.sql())?,
                    error: r.get(7).map_err(self.sql())?,
                };
                series.insert(id, row);
            }
        }

        #[derive(Default)]
        struct Building {
            snap: Option<Snapshot>,
            ops: HashMap<(String, String), usize>,
            workers: HashMap<(u32, String), usize>,
            files: HashMap<(String, String), usize>,
        }
        let mut snaps: BTreeMap<(u32, String), Building> = BTreeMap::new();
        let new_snap = |second: u32, host: &str, interval_ns: u64, step: u32, warmup: bool| Snapshot {
            second,
            interval_ns,
            step,
            warmup,
            host: host.to_string(),
            ops: Vec::new(),
            workers: Vec::new(),
            files: Vec::new(),
        };
        {
            let mut stmt = self
                .conn
                .prepare("SELECT host, second, interval_ns, step, warmup FROM tick WHERE second >= ?1")
                .map_err(self.sql())?;
            let mut rows = stmt.query([self.from_second]).map_err(self.sql())?;
            while let Some(r) = rows.next().map_err(self.sql())? {
                let host: String = r.get(0).map_err(self.sql())?;
                let second: u32 = r.get(1).map_err(self.sql())?;
                let interval = u64_of(r.get_ref(2).map_err(self.sql())?).map_err(|e| self.corrupt(e))?.unwrap_or(0);
                let step: u32 = r.get(3).map_err(self.sql())?;
                let warmup: bool = r.get(4).map_err(self.sql())?;
                let b = snaps.entry((second, host.clone())).or_default();
                b.snap = Some(new_snap(second, &host, interval, step, warmup));
            }
        }

        let mut stmt = self
            .conn
            .prepare(
                "SELECT series_id, second, interval_ns, value, sum, min, max, hist
                 FROM sample WHERE second >= ?1 ORDER BY second, series_id",
            )
            .map_err(self.sql())?;
        let mut rows = stmt.query([self.from_second]).map_err(self.sql())?;
        while let Some(r) = rows.next().map_err(self.sql())? {
            let id: i64 = r.get(0).map_err(self.sql())?;
            let second: u32 = r.get(1).map_err(self.sql())?;
            let Some(s) = series.get(&id) else {
                return Err(self.corrupt(format!("sample of unknown series {id}")));
            };
            let bad = |e: String| self.corrupt(format!("series {id} ({}) second {second}: {e}", s.stat));
            let num = |i: usize| -> Result<Option<u64>, StoreError> {
                u64_of(r.get_ref(i).map_err(self.sql())?).map_err(bad)
            };
            let interval = num(2)?.unwrap_or(0);
            let value = num(3)?.unwrap_or(0);

            let b = snaps.entry((second, s.host.clone())).or_default();
            let snap = b.snap.get_or_insert_with(|| new_snap(second, &s.host, interval, 0, false));
            if let Some(file) = &s.file {
                let i = *b.files.entry((file.clone(), s.op.clone())).or_insert_with(|| {
                    snap.files.push(FileCounts { file: file.clone(), op: s.op.clone(), counts: Default::default() });
                    snap.files.len() - 1
                });
                set_counter(&mut snap.files[i].counts, &s.stat, value);
                continue;
            }
            match s.worker {
                Some(worker) => {
                    let i = *b.workers.entry((worker, s.op.clone())).or_insert_with(|| {
                        snap.workers.push(WorkerCounts { worker, op: s.op.clone(), counts: Default::default() });
                        snap.workers.len() - 1
                    });
                    set_counter(&mut snap.workers[i].counts, &s.stat, value);
                }
                None => {
                    let i = *b.ops.entry((s.workload.clone(), s.op.clone())).or_insert_with(|| {
                        snap.ops.push(OpSeries {
                            workload: s.workload.clone(),
                            op: s.op.clone(),
                            data: OpInterval::empty(),
                        });
                        snap.ops.len() - 1
                    });
                    let d = &mut snap.ops[i].data;
                    if let Some(kind) = &s.error {
                        d.errors_by_kind.push((kind.clone(), value));
                        continue;
                    }
                    let hist = |d: &mut Histogram| -> Result<(), StoreError> {
                        let blob = match r.get_ref(7).map_err(self.sql())? {
                            ValueRef::Null => return Ok(()),
                            ValueRef::Blob(b) => b,
                            other => return Err(bad(format!("histogram is {:?}, not a blob", other.data_type()))),
                        };
                        let sum = u128_of(r.get_ref(4).map_err(self.sql())?).map_err(bad)?.unwrap_or(0);
                        let (min, max) = (num(5)?.unwrap_or(0), num(6)?.unwrap_or(0));
                        *d = Histogram::decode_sparse(blob, sum, min, max).map_err(|e| bad(e.to_string()))?;
                        Ok(())
                    };
                    match s.stat.as_str() {
                        stat::OPS => d.counts.ops = value,
                        stat::BYTES => d.counts.bytes = value,
                        stat::ERRORS => d.counts.errors = value,
                        stat::LATENCY => hist(&mut d.latency_ns)?,
                        stat::SERVICE_TIME => hist(&mut d.service_ns)?,
                        stat::SIZE => hist(&mut d.size_bytes)?,
                        stat::OFFSET => hist(&mut d.offset_bytes)?,
                        stat::SKIPPED => d.skipped = value,
                        _ => {}
                    }
                }
            }
        }
        Ok(snaps.into_values().filter_map(|b| b.snap).collect())
    }
}
