//! Writing a results file: create, one transaction per second, finish.

use crate::schema::{self, APPLICATION_ID, SCHEMA_VERSION};
use crate::{ProbeRow, RunInfo, Status, StepRow, StoreError};
use ioscope_metrics::stat::{Dim, Kind, Stat, StatId};
use ioscope_metrics::{Op, Snapshot, STATS};
use ioscope_metrics::{TargetSecond, TargetValue};
use rusqlite::types::Value;
use rusqlite::{params, Connection, OpenFlags, TransactionBehavior};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a statement waits for a lock held by a reader before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// (stat, host, workload, op, worker, file, error); worker -1: the other workers.
type SeriesKey = (&'static str, String, String, Op, Option<i64>, Option<String>, Option<String>);

/// (stat, host, dimension values sorted): a target series.
type TargetKey = (StatId, String, Vec<(Dim, String)>);

/// `series.worker` of the row that stands for every worker without one of its own.
pub(crate) const OTHER_WORKERS: i64 = -1;

/// Checks, before any I/O, that `path` can become a new results file: nothing is in the
/// way (see [`check_free_name`]), and its directory exists and takes a new file (not
/// read-only, not full of inodes, not /proc). The CLI calls this before preparing.
pub fn check_new_path(path: &Path) -> Result<(), StoreError> {
    check_free_name(path)?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let cannot = |detail: String| StoreError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!("cannot create the results file: {detail}")),
    };
    if !dir.is_dir() {
        return Err(cannot(format!("directory {} does not exist", dir.display())));
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let probe = dir.join(format!(".{name}.{}.check", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"ioscope"));
    let _ = std::fs::remove_file(&probe);
    written.map_err(|e| cannot(e.to_string()))
}

/// Refuses an existing path (a dangling symlink too), and leftover `-wal`/`-journal` files
/// beside it (SQLite would replay them into the new file).
fn check_free_name(path: &Path) -> Result<(), StoreError> {
    if path.symlink_metadata().is_ok() {
        return Err(StoreError::Exists { path: path.to_path_buf() });
    }
    for suffix in ["-wal", "-journal"] {
        let leftover = crate::sidecar(path, suffix);
        if leftover.symlink_metadata().is_ok() {
            return Err(StoreError::Leftover { path: path.to_path_buf(), leftover });
        }
    }
    Ok(())
}

/// How a finished results file was left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finished {
    /// One self-contained file.
    OneFile,
    /// Complete, but its last seconds are still in the `-wal` file beside it, for this
    /// reason; the next reader that can write folds them in.
    WithWal(String),
}

/// Writes one run's results file.
pub struct Writer {
    conn: Connection,
    path: PathBuf,
    series: HashMap<SeriesKey, i64>,
    /// Target series by (stat, host, dimension values).
    target_series: HashMap<TargetKey, i64>,
    /// Tells readers the run is still writing (crate::liveness), until the writer is dropped.
    _alive: Option<crate::liveness::Held>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("path", &self.path).finish_non_exhaustive()
    }
}

fn int(v: u64) -> Value {
    match i64::try_from(v) {
        Ok(i) => Value::Integer(i),
        Err(_) => Value::Text(v.to_string()),
    }
}

fn int128(v: u128) -> Value {
    match i64::try_from(v) {
        Ok(i) => Value::Integer(i),
        Err(_) => Value::Text(v.to_string()),
    }
}

impl Writer {
    /// Creates a new results file at `path` (never over an existing one) and records the
    /// run (status `running`) and the hosts' configuration.
    pub fn create(path: &Path, run: &RunInfo, hosts: &[(String, serde_json::Value)]) -> Result<Self, StoreError> {
        check_free_name(path)?;
        // Claim the path atomically: two runs racing for one name cannot both win.
        std::fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                StoreError::Exists { path: path.to_path_buf() }
            } else {
                StoreError::Io { path: path.to_path_buf(), source: e }
            }
        })?;
        match Self::init(path, run, hosts) {
            Ok(w) => Ok(w),
            Err(e) => {
                // We created it; leave nothing half-made behind.
                for suffix in ["", "-wal", "-shm", "-journal"] {
                    let mut s = path.as_os_str().to_owned();
                    s.push(suffix);
                    let _ = std::fs::remove_file(PathBuf::from(s));
                }
                Err(e)
            }
        }
    }

    fn init(path: &Path, run: &RunInfo, hosts: &[(String, serde_json::Value)]) -> Result<Self, StoreError> {
        // Before the file says `running`: from then on a reader can tell whether it is.
        let _alive = crate::liveness::hold(path);
        let err = StoreError::sqlite(path);
        let mut conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                .map_err(StoreError::sqlite(path))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(StoreError::sqlite(path))?;
        let mode = set_journal_mode(&conn, path, "wal")?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: format!("cannot switch to WAL mode (got journal_mode {mode})"),
            });
        }
        conn.execute_batch(&format!(
            "PRAGMA synchronous = NORMAL;
             PRAGMA application_id = {APPLICATION_ID};
             PRAGMA user_version = {SCHEMA_VERSION};"
        ))
        .map_err(StoreError::sqlite(path))?;

        let tx = conn.transaction().map_err(StoreError::sqlite(path))?;
        tx.execute_batch(schema::CREATE).map_err(StoreError::sqlite(path))?;
        for (k, v) in schema::meta_rows() {
            tx.execute("INSERT INTO meta(key, value) VALUES (?1, ?2)", params![k, v])
                .map_err(StoreError::sqlite(path))?;
        }
        tx.execute(
            "INSERT INTO run(id, ioscope_version, host, pid, command_line, started_unix_ms,
                 ended_unix_ms, status, status_detail, planned_duration_ns, plan_json,
                 workload_toml, workload_hash)
             VALUES (1, ?1, ?2, ?3, ?4, ?5, NULL, 'running', NULL, ?6, ?7, ?8, ?9)",
            params![
                run.ioscope_version,
                run.host,
                run.pid,
                run.command_line,
                run.started_unix_ms,
                int(run.planned_duration_ns),
                run.plan_json,
                run.workload_toml,
                run.workload_hash,
            ],
        )
        .map_err(StoreError::sqlite(path))?;
        for (name, config) in hosts {
            tx.execute("INSERT INTO host(name, config_json) VALUES (?1, ?2)", params![name, config.to_string()])
                .map_err(StoreError::sqlite(path))?;
        }
        tx.commit().map_err(err)?;
        Ok(Writer { conn, path: path.to_path_buf(), series: HashMap::new(), target_series: HashMap::new(), _alive })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records one second of one host in one transaction: when this returns, the second
    /// survives a kill of the process.
    pub fn write_second(&mut self, s: &Snapshot) -> Result<(), StoreError> {
        let path = self.path.as_path();
        let tx =
            self.conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(StoreError::sqlite(path))?;
        // Series created in this transaction join the cache only once it commits.
        let mut created: HashMap<SeriesKey, i64> = HashMap::new();
        let cache = &self.series;
        let mut series_id = |stat: &'static Stat,
                             workload: &str,
                             op: Op,
                             worker: Option<i64>,
                             file: Option<&str>,
                             error: Option<&str>| {
            let key: SeriesKey = (
                stat.stored,
                s.host.clone(),
                workload.to_string(),
                op,
                worker,
                file.map(str::to_string),
                error.map(str::to_string),
            );
            if let Some(id) = cache.get(&key) {
                return Ok(*id);
            }
            if let Some(id) = created.get(&key) {
                return Ok(*id);
            }
            tx.prepare_cached(
                "INSERT INTO series(stat, unit, kind, host, workload, op, worker, file, error) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?
            .execute(params![stat.stored, stat.unit, stat.kind.name(), s.host, workload, op.name(), worker, file, error])?;
            let id = tx.last_insert_rowid();
            created.insert(key, id);
            Ok::<i64, rusqlite::Error>(id)
        };

        // Series by the registry: counters of every op (with their kinds of failure), per
        // worker and per file where the statistic is kept so, then every op's histograms.
        let counters = || STATS.iter().filter(|st| st.kind == Kind::Counter);
        let result = (|| {
            tx.execute(
                "INSERT INTO tick(host, second, interval_ns, step, warmup, not_broken_down)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![s.host, s.second, int(s.interval_ns), s.step, s.warmup, int(s.not_broken_down)],
            )?;
            let mut cpu = tx.prepare_cached(
                "INSERT INTO worker_cpu(host, second, worker, cpu_ns, wait_ns) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for w in &s.worker_cpu {
                cpu.execute(params![s.host, s.second, w.worker, int(w.cpu_ns), int(w.wait_ns)])?;
            }
            let interval = int(s.interval_ns);
            let mut insert = tx.prepare_cached(
                "INSERT INTO sample(series_id, second, interval_ns, value, sum, min, max, hist)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            let mut counter = |id: i64, value: u64| {
                insert.execute(params![
                    id,
                    s.second,
                    interval,
                    int(value),
                    None::<i64>,
                    None::<i64>,
                    None::<i64>,
                    None::<Vec<u8>>
                ])
            };
            for o in &s.ops {
                for st in counters() {
                    let Some(v) = o.data.count(st.id) else { continue };
                    if !st.sparse || v > 0 {
                        counter(series_id(st, &o.workload, o.op, None, None, None)?, v)?;
                    }
                    // Kinds of failure: only seconds in which they are not zero.
                    if st.has(Dim::Error) {
                        for (kind, n) in o.data.errors_by_kind.iter().filter(|(_, n)| *n > 0) {
                            counter(series_id(st, &o.workload, o.op, None, None, Some(kind))?, *n)?;
                        }
                    }
                }
            }
            for w in &s.workers {
                for st in counters().filter(|st| st.has(Dim::Worker)) {
                    let Some(v) = w.counts.get(st.id) else { continue };
                    counter(series_id(st, "", w.op, Some(i64::from(w.worker)), None, None)?, v)?;
                }
            }
            for f in &s.files {
                for st in counters().filter(|st| st.has(Dim::File)) {
                    let Some(v) = f.counts.get(st.id) else { continue };
                    counter(series_id(st, "", f.op, None, Some(&f.file), None)?, v)?;
                }
            }
            let mut quantiles = tx.prepare_cached(
                "INSERT INTO quantiles(series_id, second, p50, p90, p99, p999) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            // A distribution's sample, and its percentiles when it has values.
            let mut dist = |id: i64, h: &ioscope_metrics::Histogram| {
                if h.is_empty() {
                    insert.execute(params![
                        id,
                        s.second,
                        interval,
                        0,
                        None::<i64>,
                        None::<i64>,
                        None::<i64>,
                        None::<Vec<u8>>
                    ])?;
                    return Ok(());
                }
                insert.execute(params![
                    id,
                    s.second,
                    interval,
                    int(h.count()),
                    int128(h.sum()),
                    h.min().map(int),
                    h.max().map(int),
                    h.encode_sparse(),
                ])?;
                let q = |p| int(h.quantile(p).unwrap_or(0));
                quantiles.execute(params![id, s.second, q(0.5), q(0.9), q(0.99), q(0.999)])?;
                Ok::<(), rusqlite::Error>(())
            };
            // Only the quantities an operation has (no size or offset for a sync or an open).
            let dists = |op: Op| STATS.iter().filter(move |st| st.kind == Kind::Distribution && st.id.applies_to(op));
            for o in &s.ops {
                for st in dists(o.op) {
                    let Some(h) = o.data.histogram(st.id) else { continue };
                    dist(series_id(st, &o.workload, o.op, None, None, None)?, h)?;
                }
            }
            // The busiest workers and files, and the rest as one row.
            for w in &s.worker_dists {
                let worker = w.worker.map_or(OTHER_WORKERS, i64::from);
                for st in dists(w.op).filter(|st| st.has(Dim::Worker)) {
                    let Some(h) = w.data.histogram(st.id) else { continue };
                    dist(series_id(st, "", w.op, Some(worker), None, None)?, h)?;
                }
            }
            for f in &s.file_dists {
                for st in dists(f.op).filter(|st| st.has(Dim::File)) {
                    let Some(h) = f.data.histogram(st.id) else { continue };
                    dist(series_id(st, "", f.op, None, Some(&f.file), None)?, h)?;
                }
            }
            Ok::<(), rusqlite::Error>(())
        })();
        result.map_err(StoreError::sqlite(path))?;
        tx.commit().map_err(StoreError::sqlite(path))?;
        self.series.extend(created);
        Ok(())
    }

    /// Records one second of a host's target series (`side = 'target'`). Series of a
    /// second already written are refused by the file (one sample per series and second).
    pub fn write_target(&mut self, t: &TargetSecond) -> Result<(), StoreError> {
        let interval_ns = t.interval_ns.max(1);
        let path = self.path.clone();
        let tx = self.conn.transaction().map_err(StoreError::sqlite(&path))?;
        let cache = &self.target_series;
        let mut created = HashMap::new();
        let result = (|| {
            let mut insert = tx.prepare_cached(
                "INSERT INTO sample(series_id, second, interval_ns, value, sum, min, max, hist)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            let mut quantiles = tx.prepare_cached(
                "INSERT INTO quantiles(series_id, second, p50, p90, p99, p999) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for s in &t.series {
                let stat = ioscope_metrics::stat::stat(s.stat);
                let mut labels = s.labels.clone();
                labels.sort();
                let key = (s.stat, t.host.clone(), labels);
                let id = match cache.get(&key).or_else(|| created.get(&key)) {
                    Some(id) => *id,
                    None => {
                        let col = |d: Dim| s.labels.iter().find(|(x, _)| *x == d).map(|(_, v)| v.as_str());
                        tx.prepare_cached(
                            "INSERT INTO series(stat, unit, kind, host, workload, op, side, cpu, mode, nic, disk, process, syscall)
                             VALUES (?1, ?2, ?3, ?4, '', ?5, 'target', ?6, ?7, ?8, ?9, ?10, ?11)",
                        )?
                        .execute(params![
                            stat.stored,
                            stat.unit,
                            stat.kind.name(),
                            t.host,
                            col(Dim::Op).unwrap_or(""),
                            col(Dim::Cpu),
                            col(Dim::Mode),
                            col(Dim::Nic),
                            col(Dim::Disk),
                            col(Dim::Process),
                            col(Dim::Syscall)
                        ])?;
                        let id = tx.last_insert_rowid();
                        created.insert(key, id);
                        id
                    }
                };
                match &s.value {
                    TargetValue::Count(v) | TargetValue::Gauge(v) => {
                        insert.execute(params![
                            id,
                            t.second,
                            int(interval_ns),
                            int(*v),
                            None::<i64>,
                            None::<i64>,
                            None::<i64>,
                            None::<Vec<u8>>
                        ])?;
                    }
                    TargetValue::Dist(h) => {
                        let empty = h.count() == 0;
                        insert.execute(params![
                            id,
                            t.second,
                            int(interval_ns),
                            int(h.count()),
                            (!empty).then(|| int128(h.sum())),
                            h.min().map(int),
                            h.max().map(int),
                            (!empty).then(|| h.encode_sparse()),
                        ])?;
                        if !empty {
                            let q = |p| int(h.quantile(p).unwrap_or(0));
                            quantiles.execute(params![id, t.second, q(0.5), q(0.9), q(0.99), q(0.999)])?;
                        }
                    }
                }
            }
            Ok::<(), rusqlite::Error>(())
        })();
        result.map_err(StoreError::sqlite(&path))?;
        tx.commit().map_err(StoreError::sqlite(&path))?;
        // Only series of a committed transaction exist.
        self.target_series.extend(created);
        Ok(())
    }

    /// Sets a row of the `meta` table (what the run was set up with, for people reading
    /// the file: how distributions are broken down, say).
    pub fn set_meta(&mut self, key: &str, value: &str) -> Result<(), StoreError> {
        self.conn
            .execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)", params![key, value])
            .map_err(StoreError::sqlite(&self.path))?;
        Ok(())
    }

    /// Records what data validation found (`--verify`): the host's run and its first
    /// mismatches.
    pub fn write_verification(
        &mut self,
        run: &crate::VerifyRun,
        rows: &[crate::MismatchRow],
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction().map_err(StoreError::sqlite(&self.path))?;
        tx.execute_batch(schema::CREATE_VERIFY).map_err(StoreError::sqlite(&self.path))?;
        tx.execute(
            "INSERT OR REPLACE INTO verify_run(host, run_id, block_len, stamped_blocks, stamp_ns, mismatches)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                run.host,
                run.run_id,
                run.block_len,
                run.stamped_blocks.min(i64::MAX as u64) as i64,
                run.stamp_ns.min(i64::MAX as u64) as i64,
                run.mismatches.min(i64::MAX as u64) as i64
            ],
        )
        .map_err(StoreError::sqlite(&self.path))?;
        for m in rows {
            tx.execute(
                "INSERT INTO verify_mismatch(host, second, file, path, offset, kind, expected_generation, found_header_json)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    m.host,
                    m.second,
                    m.file,
                    m.path,
                    m.offset.min(i64::MAX as u64) as i64,
                    m.kind,
                    m.expected_generation,
                    m.found_header_json
                ],
            )
            .map_err(StoreError::sqlite(&self.path))?;
        }
        tx.commit().map_err(StoreError::sqlite(&self.path))?;
        Ok(())
    }

    /// Records the run's steps (before their first second; a repeat's steps as it starts).
    pub fn write_steps(&mut self, steps: &[StepRow]) -> Result<(), StoreError> {
        let tx = self.conn.transaction().map_err(StoreError::sqlite(&self.path))?;
        for st in steps {
            tx.execute(
                "INSERT INTO step(idx, label, threads, rate_iops, curve_pct, start_second, warmup_ns, duration_ns, repeat)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    st.index,
                    st.label,
                    st.threads,
                    st.rate_iops.map(int),
                    st.curve_pct,
                    st.start_second,
                    int(st.warmup_ns),
                    int(st.duration_ns),
                    st.repeat
                ],
            )
            .map_err(StoreError::sqlite(&self.path))?;
        }
        tx.commit().map_err(StoreError::sqlite(&self.path))
    }

    /// Fills in the rate of a curve step once its max step has been measured.
    pub fn set_step_rate(&mut self, index: u32, rate_iops: u64) -> Result<(), StoreError> {
        self.conn
            .execute("UPDATE step SET rate_iops = ?2 WHERE idx = ?1", params![index, int(rate_iops)])
            .map_err(StoreError::sqlite(&self.path))?;
        Ok(())
    }

    /// Sets a step's measured duration to the time its seconds of `host` really lasted
    /// (a step ended early, once steady).
    pub fn end_step_early(&mut self, index: u32, host: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE step SET duration_ns = (SELECT COALESCE(SUM(interval_ns), 0) FROM tick
                     WHERE step = ?1 AND host = ?2 AND warmup = 0) WHERE idx = ?1",
                params![index, host],
            )
            .map_err(StoreError::sqlite(&self.path))?;
        Ok(())
    }

    /// Records one finished start of a probe.
    pub fn write_probe(&mut self, p: &ProbeRow) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO probe(name, command, at_ns, duration_ns, exit_code, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![p.name, p.command, int(p.at_ns), int(p.duration_ns), p.exit_code, p.detail],
            )
            .map_err(StoreError::sqlite(&self.path))?;
        Ok(())
    }

    /// Replaces a host's configuration (what is only known once the run has started,
    /// such as how the engine was set up).
    pub fn update_host(&mut self, name: &str, config: &serde_json::Value) -> Result<(), StoreError> {
        self.conn
            .execute("UPDATE host SET config_json = ?2 WHERE name = ?1", params![name, config.to_string()])
            .map_err(StoreError::sqlite(&self.path))?;
        Ok(())
    }

    /// Records how the run ended, checkpoints the WAL and switches the file back to
    /// `journal_mode=DELETE`: one self-contained file remains.
    ///
    /// Once the status is committed the results are complete; folding the `-wal` file into
    /// the results file may still fail (a full disk). That is not a failed run: the answer
    /// says the results are in two files until the next reader folds them.
    pub fn finish(self, status: Status, detail: Option<&str>, ended_unix_ms: i64) -> Result<Finished, StoreError> {
        let path = self.path;
        let conn = self.conn;
        conn.execute(
            "UPDATE run SET status = ?1, status_detail = ?2, ended_unix_ms = ?3 WHERE id = 1",
            params![status.as_str(), detail, ended_unix_ms],
        )
        .map_err(StoreError::sqlite(&path))?;
        let folded = conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(StoreError::sqlite(&path))
            .and_then(|()| set_journal_mode(&conn, &path, "delete"));
        match folded {
            Ok(mode) if mode.eq_ignore_ascii_case("delete") => {
                conn.close().map_err(|(_, e)| StoreError::sqlite(&path)(e))?;
                Ok(Finished::OneFile)
            }
            Ok(mode) => Ok(Finished::WithWal(format!("could not leave WAL mode (journal_mode is {mode})"))),
            Err(e) => Ok(Finished::WithWal(e.to_string())),
        }
    }
}

/// Switches the journal mode and returns the mode in force. While a reader (the UI,
/// `ioscope show`) has the file open, SQLite refuses the switch at once, without waiting
/// its busy timeout: so it is tried again until BUSY_TIMEOUT has passed.
pub(crate) fn set_journal_mode(conn: &Connection, path: &Path, mode: &str) -> Result<String, StoreError> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        let busy = match conn.query_row(&format!("PRAGMA journal_mode = {mode}"), [], |r| r.get::<_, String>(0)) {
            Ok(got) if got.eq_ignore_ascii_case(mode) => return Ok(got),
            Ok(got) => Ok(got),
            Err(rusqlite::Error::SqliteFailure(f, m)) if f.code == rusqlite::ErrorCode::DatabaseBusy => {
                Err(rusqlite::Error::SqliteFailure(f, m))
            }
            Err(e) => return Err(StoreError::sqlite(path)(e)),
        };
        if std::time::Instant::now() >= deadline {
            return busy.map_err(StoreError::sqlite(path));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Marks seconds of a finished run as warm-up (`warmup = "auto"`): for each (step, second),
/// the step's seconds before that one, on every host, and the step's row takes their time
/// from its measured duration into its warm-up. Every reader (summary, SQL views, UI)
/// leaves warm-up seconds out, so they all agree.
pub fn mark_warmup(path: &Path, marks: &[(u32, u32)]) -> Result<(), StoreError> {
    let err = |e| StoreError::sqlite(path)(e);
    let mut conn =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(err)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(err)?;
    for (step, second) in marks {
        tx.execute("UPDATE tick SET warmup = 1 WHERE step = ?1 AND second < ?2 AND warmup = 0", params![step, second])
            .map_err(err)?;
        tx.execute(
            "UPDATE step SET warmup_ns = warmup_ns + (?2 - start_second) * 1000000000,
                 duration_ns = MAX(0, duration_ns - (?2 - start_second) * 1000000000)
             WHERE idx = ?1 AND ?2 > start_second",
            params![step, second],
        )
        .map_err(err)?;
    }
    tx.commit().map_err(err)?;
    conn.close().map_err(|(_, e)| err(e))
}
