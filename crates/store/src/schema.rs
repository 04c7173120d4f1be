//! The SQL schema of a results file, version [`SCHEMA_VERSION`].
//!
//! Kept readable with the sqlite3 CLI: one row per run, hosts with their configuration
//! as JSON, series (a statistic plus its dimensions) and one sample per series and
//! second. Every value is in the unit named by its series (`series.unit`), and
//! distributions carry their sparse histogram beside the exact count, sum, min and max.
//!
//! A run with `--verify` adds the tables `verify_run` and `verify_mismatch`
//! (`CREATE_VERIFY`) to a version 7 file; readers take a file without them as a run
//! without verification, so no version change was needed.
//!
//! Version 7 adds `step.repeat`: a run of the plan's steps repeated (`--repeat`,
//! `--until-ci`) has one step row per step and repeat (repeat r, the same label), in one
//! timeline whose seconds continue; the views carry it. Version 6 files are read as
//! repeat 0.
//!
//! Version 6 adds the target side: `series.side` ('client' or 'target': what
//! `ioscope probe` samplers recorded on a server), the target dimensions `cpu`, `mode`,
//! `nic`, `disk`, `process` and `syscall`, and kind 'gauge'. Version 5 files are read as
//! they are (every series of theirs is the client's).
//!
//! Version 5 adds distributions per worker and per file (the busiest of each second, the
//! rest in one row: `worker` = -1, `file` = '(other)'), `tick.not_broken_down`, the
//! `quantiles` table and the views `op_seconds` and `percentiles` for SQL users. Version
//! 4 files are read as they are (they have no per-worker or per-file distributions).

/// `PRAGMA user_version` of files this crate writes and reads.
pub const SCHEMA_VERSION: i32 = 7;

/// The tables of data validation (`--verify`), created by the run that verifies: files
/// of runs without it (and of earlier versions) have none, and read as no verification.
pub(crate) const CREATE_VERIFY: &str = r#"
-- Per host: the run id its blocks carry, the verify block, the cost of stamping, and the
-- exact count of mismatches (verify_mismatch keeps the first 1,000).
CREATE TABLE IF NOT EXISTS verify_run(
    host           TEXT PRIMARY KEY,
    run_id         TEXT NOT NULL,
    block_len      INTEGER NOT NULL,
    stamped_blocks INTEGER NOT NULL,
    stamp_ns       INTEGER NOT NULL,
    mismatches     INTEGER NOT NULL
);

-- A block read back that failed its check: kind corrupt, misplaced, stale or lost; the
-- generations it could hold; the header found (JSON, NULL when none could be read).
CREATE TABLE IF NOT EXISTS verify_mismatch(
    host                TEXT NOT NULL,
    second              INTEGER NOT NULL,
    file                INTEGER NOT NULL,
    path                TEXT NOT NULL,
    offset              INTEGER NOT NULL,
    kind                TEXT NOT NULL,
    expected_generation TEXT NOT NULL,
    found_header_json   TEXT
);
"#;

/// `PRAGMA application_id` of an ioscope results file: "IOSC" in ASCII.
pub const APPLICATION_ID: i32 = 0x494F_5343;

/// `meta.format` of an ioscope results file.
pub const FORMAT: &str = "ioscope results";

pub(crate) const CREATE: &str = r#"
CREATE TABLE meta(
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- The run: exactly one row. `status` stays 'running' until the run finishes, so a
-- file left by a killed run says 'running' (readers work out that it was interrupted).
CREATE TABLE run(
    id                  INTEGER PRIMARY KEY CHECK (id = 1),
    ioscope_version     TEXT    NOT NULL,
    host                TEXT    NOT NULL,
    pid                 INTEGER NOT NULL,
    command_line        TEXT    NOT NULL,
    started_unix_ms     INTEGER NOT NULL,
    ended_unix_ms       INTEGER,
    status              TEXT    NOT NULL
        CHECK (status IN ('running', 'completed', 'interrupted', 'failed')),
    status_detail       TEXT,
    planned_duration_ns INTEGER NOT NULL,
    plan_json           TEXT    NOT NULL,
    workload_toml       TEXT    NOT NULL,
    workload_hash       TEXT    NOT NULL
);

-- Every host that ran load, with its configuration (CPU, memory, kernel, file system...).
CREATE TABLE host(
    name        TEXT PRIMARY KEY,
    config_json TEXT NOT NULL
);

-- One row per host and finished second: the second exists even when nothing completed.
-- `step` is the step the second belongs to; `warmup` = 1 for the step's warm-up seconds,
-- which summaries leave out. `not_broken_down`: I/O of the second that could not be
-- broken down by file (the collector fell behind the workers); when it is not 0 the
-- second has no per-file distributions.
CREATE TABLE tick(
    host            TEXT    NOT NULL,
    second          INTEGER NOT NULL,
    interval_ns     INTEGER NOT NULL,
    step            INTEGER NOT NULL DEFAULT 0,
    warmup          INTEGER NOT NULL DEFAULT 0,
    not_broken_down INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (host, second)
) WITHOUT ROWID;

-- The run's steps (a staircase, a curve, for-loops; one row for a plain run). `rate_iops`
-- is the rate asked (NULL = max; a curve step's rate is filled in once its max step has
-- been measured); `threads` is the threads of every workload (NULL = each its own).
-- `repeat`: which run of the plan's steps the step belongs to (0 for the first; a run
-- with `--repeat`/`--until-ci` has each step once per repeat, with the same label).
CREATE TABLE step(
    idx          INTEGER PRIMARY KEY,
    repeat       INTEGER NOT NULL DEFAULT 0,
    label        TEXT    NOT NULL,
    threads      INTEGER,
    rate_iops    INTEGER,
    curve_pct    INTEGER,
    start_second INTEGER NOT NULL,
    warmup_ns    INTEGER NOT NULL,
    duration_ns  INTEGER NOT NULL
);

-- Foreground probes: one row per start of a command run during the load.
CREATE TABLE probe(
    name        TEXT    NOT NULL,
    command     TEXT    NOT NULL,
    at_ns       INTEGER NOT NULL,
    duration_ns INTEGER NOT NULL,
    exit_code   INTEGER,
    detail      TEXT
);

-- How busy each worker thread of a host was in a second: cpu_ns on a CPU (user and
-- system), wait_ns runnable but waiting for a CPU (the kernel's schedstat; 0 where it
-- is not readable). (cpu_ns + wait_ns) / interval_ns of the tick near 1: the thread never
-- waited for its storage. Worker numbers are those of per-worker series. Absent from
-- files of earlier versions.
CREATE TABLE worker_cpu(
    host    TEXT    NOT NULL,
    second  INTEGER NOT NULL,
    worker  INTEGER NOT NULL,
    cpu_ns  INTEGER NOT NULL,
    wait_ns INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (host, second, worker)
) WITHOUT ROWID;

-- A statistic with its dimensions. `worker`, `file` and `error` are NULL for the
-- per-host, per-workload, per-op series (all statistics; io.size only for operations that
-- move bytes, io.offset only for reads and writes: none for a sync, an open or a close). Per-worker and per-file series
-- carry no workload: the counters of every worker and of every file of a flat workload
-- (a file tree: of its busiest files, the rest as file '(other)'), and the distributions
-- (kind 'distribution') of the busiest workers and files of each operation and second
-- (the workload key `breakdown_top`, also in meta 'breakdown'), the rest in one series:
-- worker -1 for the other workers, file '(other)' for the other files. Their samples
-- are stored for seconds in which they saw I/O; the busiest and '(other)' add up to the
-- operation's whole. Sum only the rows with worker, file and error NULL for totals
-- (the view `op_seconds` does). `error` names the kind of the failed I/Os an `io.errors` series counts ("ENOSPC",
-- "NFS3ERR_STALE", "short read"; samples stored for seconds in which it is not zero);
-- `io.skipped` counts operations that found no file in the state they need (file trees).
-- side = 'target': what the target did (`--probe`, `ioscope probe`; docs/probe.md): cpu.*,
-- process.*, mem.*, net.*, disk.*, block.*, syscall.*, with workload '' and op the block
-- request's kind ('' when the statistic has none), and their own dimensions in cpu, mode,
-- nic, disk, process and syscall (NULL when not one of the statistic's). Their seconds
-- are the run's: second 0 starts at the run's time zero on every side. A gauge's value
-- is its level at the end of the second (mem.*, in bytes).
CREATE TABLE series(
    id       INTEGER PRIMARY KEY,
    stat     TEXT NOT NULL,
    unit     TEXT NOT NULL,
    kind     TEXT NOT NULL CHECK (kind IN ('counter', 'distribution', 'gauge')),
    host     TEXT NOT NULL,
    workload TEXT NOT NULL DEFAULT '',
    op       TEXT NOT NULL,
    worker   INTEGER,
    file     TEXT,
    error    TEXT,
    side     TEXT NOT NULL DEFAULT 'client' CHECK (side IN ('client', 'target')),
    cpu      TEXT,
    mode     TEXT,
    nic      TEXT,
    disk     TEXT,
    process  TEXT,
    syscall  TEXT
);
CREATE UNIQUE INDEX series_key ON series(stat, host, workload, op, ifnull(worker, 'none'), ifnull(file, ''), ifnull(error, ''),
    side, ifnull(cpu, ''), ifnull(mode, ''), ifnull(nic, ''), ifnull(disk, ''), ifnull(process, ''), ifnull(syscall, ''));

-- One value per series and second. Counter: value = count. Distribution: value = count,
-- sum/min/max exact (NULL when empty; INTEGER, or decimal TEXT past 2^63-1), and hist =
-- the sparse histogram (see meta 'hist_encoding').
CREATE TABLE sample(
    series_id   INTEGER NOT NULL REFERENCES series(id),
    second      INTEGER NOT NULL,
    interval_ns INTEGER NOT NULL,
    value       INTEGER NOT NULL,
    sum,
    min,
    max,
    hist        BLOB,
    PRIMARY KEY (series_id, second)
) WITHOUT ROWID;

-- Percentiles of every non-empty distribution sample, from the same histogram (bucket
-- midpoints clamped to the exact min and max, within meta 'histogram's error).
CREATE TABLE quantiles(
    series_id INTEGER NOT NULL REFERENCES series(id),
    second    INTEGER NOT NULL,
    p50       INTEGER NOT NULL,
    p90       INTEGER NOT NULL,
    p99       INTEGER NOT NULL,
    p999      INTEGER NOT NULL,
    PRIMARY KEY (series_id, second)
) WITHOUT ROWID;

-- For reading by hand: samples with their series spelled out. Per-workload, per-worker,
-- per-file and per-error-kind rows are all here: summing io.ops over this view counts
-- the same I/O several times (use op_seconds for totals).
CREATE VIEW samples AS
SELECT x.second, t.step, st.repeat, t.warmup, s.side, s.host, s.workload, s.op, s.worker, s.file, s.error,
       s.cpu, s.mode, s.nic, s.disk, s.process, s.syscall, s.stat, s.unit,
       x.interval_ns, x.value, x.sum, x.min, x.max, length(x.hist) AS hist_bytes
FROM sample x JOIN series s ON s.id = x.series_id
LEFT JOIN tick t ON t.host = s.host AND t.second = x.second
LEFT JOIN step st ON st.idx = t.step;

-- One row per second, host, workload and operation: each I/O counted once. Rates divide
-- by the second's measured interval.
CREATE VIEW op_seconds AS
SELECT x.second, t.step, st.repeat, t.warmup, s.host, s.workload, s.op, x.interval_ns,
       sum(CASE s.stat WHEN 'io.ops' THEN x.value END) AS ops,
       sum(CASE s.stat WHEN 'io.bytes' THEN x.value END) AS bytes,
       sum(CASE s.stat WHEN 'io.errors' THEN x.value END) AS errors,
       sum(CASE s.stat WHEN 'io.ops' THEN x.value END) * 1e9 / x.interval_ns AS ops_per_s,
       sum(CASE s.stat WHEN 'io.bytes' THEN x.value END) * 1e9 / x.interval_ns AS bytes_per_s
FROM sample x JOIN series s ON s.id = x.series_id
LEFT JOIN tick t ON t.host = s.host AND t.second = x.second
LEFT JOIN step st ON st.idx = t.step
WHERE s.side = 'client' AND s.worker IS NULL AND s.file IS NULL AND s.error IS NULL AND s.stat IN ('io.ops', 'io.bytes', 'io.errors')
GROUP BY x.second, s.host, s.workload, s.op;

-- Percentiles per second of every distribution series (stat io.latency, io.service_time,
-- io.size, io.offset, per op, per worker and per file; block.* and syscall.latency of the
-- target side), in the series' unit.
CREATE VIEW percentiles AS
SELECT x.second, t.step, st.repeat, t.warmup, s.side, s.host, s.workload, s.op, s.worker, s.file, s.disk, s.process, s.syscall,
       s.stat, s.unit,
       x.value AS count, x.min, q.p50, q.p90, q.p99, q.p999, x.max
FROM quantiles q JOIN sample x ON x.series_id = q.series_id AND x.second = q.second
JOIN series s ON s.id = q.series_id
LEFT JOIN tick t ON t.host = s.host AND t.second = q.second
LEFT JOIN step st ON st.idx = t.step;
"#;

/// Rows of the `meta` table written at creation.
pub(crate) fn meta_rows() -> Vec<(&'static str, String)> {
    use ioscope_metrics::histogram::{BUCKETS, GROUPING_POWER, RELATIVE_ERROR};
    use ioscope_metrics::stat::{stat, StatId};
    vec![
        ("format", FORMAT.to_string()),
        ("schema_version", SCHEMA_VERSION.to_string()),
        (
            "histogram",
            format!(
                "log-linear: values below {} exact, then {} buckets per power of two \
                 (grouping power {GROUPING_POWER}), {BUCKETS} buckets; bucket midpoints \
                 within {:.2}%",
                2u64 << GROUPING_POWER,
                1u64 << GROUPING_POWER,
                RELATIVE_ERROR * 100.0
            ),
        ),
        ("hist_encoding", "sparse: LEB128 varint pairs (bucket index delta, count) of non-zero buckets".to_string()),
        (
            "latency",
            format!(
                "{}: response time from the intended start; {}: from issue",
                stat(StatId::Latency).stored,
                stat(StatId::ServiceTime).stored
            ),
        ),
        ("statistics", statistics()),
    ]
}

/// The `meta` row `statistics`: each statistic stored as series, from the registry, for
/// people reading the file with the sqlite3 CLI ("io.ops (ops, counter): Operations; ...").
fn statistics() -> String {
    let list = ioscope_metrics::stat::all().filter(|s| s.is_series());
    list.map(|s| format!("{} ({}, {}): {}", s.stored, s.unit, s.kind.name(), s.label)).collect::<Vec<_>>().join("; ")
}
