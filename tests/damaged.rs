//! Damaged results files: copies of a real run's file, still valid SQLite, with random
//! and boundary values in every column of every table, rows removed and tables dropped.
//! Every reader (show, export, report, plot and the UI's API) must give a result or an
//! error naming the table, never panic, and stay within memory in proportion to the file.
//!
//! Seeded: set IOSCOPE_DAMAGE_SEED to replay a failure (the seed is printed).

use rusqlite::types::Value;
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Damaged copies checked in process (every reader), and how many of them also through
/// the binary (exit code, message, peak memory of the child).
const COPIES: usize = 300;
const CLI_EVERY: usize = 15;
/// Peak RSS allowed to a child reading a damaged file of about 100 KB.
const CHILD_RSS_LIMIT_KB: i64 = 256 * 1024;

fn ioscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ioscope"))
}

/// A real results file: a posix staircase with per-file counts, two steps run twice
/// (`repeat`: step rows of repeat 0 and 1) and a probe.
fn real_results(dir: &Path) -> PathBuf {
    let toml = dir.join("w.toml");
    std::fs::write(
        &toml,
        "engine = \"posix\"\nrw = \"randrw\"\nbs = \"4k\"\nsize = \"1m\"\nfiles = 2\nstaircase = \"1-2/2s\"\n\
         rate_iops = 400\nrepeat = 2\n\n[[probe]]\nname = \"tick\"\ncommand = \"true\"\nat = [\"1s\"]\n",
    )
    .unwrap();
    let out = dir.join("base.db");
    let run = ioscope()
        .args(["run", toml.to_str().unwrap(), "--quiet", "--probe", "local", "--dir"])
        .arg(dir.join("data"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    out
}

fn boundary_value(rng: &mut fastrand::Rng) -> Value {
    match rng.usize(0..16) {
        0 => Value::Integer(0),
        1 => Value::Integer(-1),
        2 => Value::Integer(i64::MAX),
        3 => Value::Integer(i64::MIN),
        4 => Value::Integer(2_000_000_000),
        5 => Value::Integer(u32::MAX as i64),
        6 => Value::Integer(u32::MAX as i64 + 1),
        7 => Value::Null,
        8 => Value::Text("18446744073709551616".into()),
        9 => Value::Text(["", "x", "running", "completed", "{}", "-5", "1e9"][rng.usize(0..7)].into()),
        10 => Value::Real([1.5, -0.0, 1e300, f64::NAN][rng.usize(0..4)]),
        11 => Value::Blob((0..rng.usize(0..64)).map(|_| rng.u8(..)).collect()),
        12 => Value::Blob(vec![0xff; rng.usize(1..20)]),
        13 => Value::Integer(rng.i64(..)),
        14 => Value::Integer(rng.i64(-3..1_000_000_000_000)),
        _ => Value::Integer(rng.i64(0..100)),
    }
}

/// Tables with their columns.
fn tables(conn: &Connection) -> Vec<(String, Vec<String>)> {
    let names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    names
        .into_iter()
        .map(|t| {
            let cols: Vec<String> = conn
                .prepare(&format!("SELECT name FROM pragma_table_info('{t}')"))
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            (t, cols)
        })
        .collect()
}

/// Rebuilds a table without its constraints (NOT NULL, CHECK, keys), so any value fits.
fn unconstrain(conn: &Connection, table: &str) {
    conn.execute_batch(&format!(
        "DROP VIEW IF EXISTS samples; DROP VIEW IF EXISTS op_seconds; DROP VIEW IF EXISTS percentiles;
         CREATE TABLE damaged_copy AS SELECT * FROM {table};
         DROP TABLE {table};
         ALTER TABLE damaged_copy RENAME TO {table};"
    ))
    .unwrap();
}

/// Applies 1 to 3 random damages; returns what was done, for the failure message.
fn damage(conn: &Connection, rng: &mut fastrand::Rng) -> Vec<String> {
    let mut done = Vec::new();
    conn.execute_batch("PRAGMA ignore_check_constraints = ON; PRAGMA foreign_keys = OFF").unwrap();
    for _ in 0..rng.usize(1..=3) {
        let all = tables(conn);
        let (table, cols) = &all[rng.usize(0..all.len())];
        let rows: i64 = conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).unwrap();
        let what = rng.usize(0..100);
        if what < 3 {
            conn.execute_batch(&format!("DROP VIEW IF EXISTS samples; DROP VIEW IF EXISTS op_seconds; DROP VIEW IF EXISTS percentiles; DROP TABLE {table}")).unwrap();
            done.push(format!("dropped table {table}"));
            continue;
        }
        if rows == 0 {
            continue;
        }
        // A row by position, then named by all its values.
        let offset = rng.i64(0..rows);
        let values: Vec<Value> = conn
            .query_row(&format!("SELECT * FROM {table} LIMIT 1 OFFSET {offset}"), [], |r| {
                (0..cols.len()).map(|i| r.get::<_, Value>(i)).collect()
            })
            .unwrap();
        let filter: Vec<String> = cols.iter().enumerate().map(|(i, c)| format!("{c} IS ?{}", i + 2)).collect();
        let filter = filter.join(" AND ");
        if what < 15 {
            let n = conn
                .execute(
                    &format!("DELETE FROM {table} WHERE ?1 IS NULL AND {filter}"),
                    rusqlite::params_from_iter(std::iter::once(Value::Null).chain(values)),
                )
                .unwrap();
            done.push(format!("deleted {n} row(s) of {table} at offset {offset}"));
            continue;
        }
        let col = rng.usize(0..cols.len());
        let value = boundary_value(rng);
        let sql = format!("UPDATE {table} SET {} = ?1 WHERE {filter}", cols[col]);
        let params = || std::iter::once(value.clone()).chain(values.iter().cloned());
        if conn.execute(&sql, rusqlite::params_from_iter(params())).is_err() {
            unconstrain(conn, table);
            conn.execute(&sql, rusqlite::params_from_iter(params())).unwrap();
        }
        done.push(format!("{table}.{} = {value:?} at offset {offset}", cols[col]));
    }
    done
}

/// Every reader in process: the store, the summary (text and JSON), both exports, the
/// HTML report, a plot and every API endpoint. Returns the error, if the file was refused.
fn read_everything(path: &Path) -> Option<String> {
    let results = match ioscope_store::open(path) {
        Ok(r) => r,
        Err(e) => return Some(e.to_string()),
    };
    let summary = ioscope_report::summarize(&results, path);
    let _ = ioscope_report::render_text(&summary);
    let _ = ioscope_report::render_json(&summary);
    let _ = ioscope_report::export_csv(&results);
    let _ = ioscope_report::export_json(&results);
    let _ = ioscope_web::report::render(path);
    let q = ioscope_web::query::Query::new("latency").unwrap().by("op").unwrap();
    let opts = ioscope_web::plot::PlotOptions { width: 400, panel_height: 80 };
    let _ = ioscope_web::plot::render(&results, &q, &opts);
    let api = ioscope_web::Api::new(&[path.to_path_buf()]);
    let _ = api.get("/api/v1/runs", "");
    let _ = api.get("/api/v1/runs/0", "");
    for stat in ioscope_web::query::STATS {
        for by in ["", "&by=op", "&by=worker", "&by=file", "&by=step", "&by=probe"] {
            let _ = api.get("/api/v1/runs/0/series", &format!("stat={}{by}", stat.name));
            let _ = api.get("/api/v1/runs/0/heatmap", &format!("stat={}{by}", stat.name));
        }
    }
    None
}

/// An error a user can act on: it names the table (or says the file is not results).
fn clear(message: &str) -> bool {
    message.contains("table ") || message.contains("not an ioscope results file")
}

fn max_child_rss_kb() -> i64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss
}

#[test]
fn damaged_results_files_give_a_result_or_an_error_naming_the_table_never_a_panic() {
    let seed =
        std::env::var("IOSCOPE_DAMAGE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
    println!("damage seed {seed} (IOSCOPE_DAMAGE_SEED={seed} replays it)");
    let mut rng = fastrand::Rng::with_seed(seed);
    let tmp = tempfile::tempdir().unwrap();
    let base = real_results(tmp.path());
    assert!(read_everything(&base).is_none(), "the undamaged file reads");
    let rss_before = max_child_rss_kb();

    let (mut refused, mut cli_runs) = (0, 0);
    for i in 0..COPIES {
        let path = tmp.path().join(format!("d{i}.db"));
        std::fs::copy(&base, &path).unwrap();
        let done = {
            let conn = Connection::open(&path).unwrap();
            damage(&conn, &mut rng)
        };
        let outcome = std::panic::catch_unwind(|| read_everything(&path));
        match outcome {
            Err(_) => panic!("seed {seed} copy {i}: a reader panicked after {done:?}"),
            Ok(Some(e)) => {
                assert!(clear(&e), "seed {seed} copy {i}: unclear error {e:?} after {done:?}");
                refused += 1;
            }
            Ok(None) => {}
        }
        if i % CLI_EVERY == 0 {
            cli_runs += 1;
            let p = path.to_str().unwrap();
            let png = tmp.path().join(format!("d{i}.png"));
            let html = tmp.path().join(format!("d{i}.html"));
            for args in [
                vec!["show", p],
                vec!["show", p, "--json"],
                vec!["export", p],
                vec!["export", p, "--format", "json"],
                vec!["report", p, "-o", html.to_str().unwrap()],
                vec!["plot", p, "--by", "op", "-o", png.to_str().unwrap()],
            ] {
                let out = ioscope().args(&args).output().unwrap();
                let err = String::from_utf8_lossy(&out.stderr);
                let code = out.status.code();
                assert!(
                    matches!(code, Some(0..=2)) && !err.contains("panicked"),
                    "seed {seed} copy {i}: {args:?} ended {:?}: {err} after {done:?}",
                    out.status
                );
                // plot answers 2 for "no latency values recorded", which names no table.
                if code != Some(0) && !err.contains("no latency values") {
                    assert!(clear(&err), "seed {seed} copy {i}: {args:?}: unclear error {err:?} after {done:?}");
                }
            }
        }
    }
    let rss = max_child_rss_kb();
    println!("{COPIES} damaged copies, {refused} refused with an error; {cli_runs} checked through the binary, peak child RSS {rss} KiB (before: {rss_before} KiB)");
    assert!(rss < CHILD_RSS_LIMIT_KB, "a child reading a damaged file of ~100 KB peaked at {rss} KiB");
    let mut own: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut own) };
    assert!(own.ru_maxrss < 1024 * 1024, "the in-process readers peaked at {} KiB", own.ru_maxrss);
}
