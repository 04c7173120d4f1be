//! `ioscope run` and `ioscope validate`: input to Plan (exit 2 on any problem, before
//! any I/O), working-set preparation, the run, and the end-of-run summary.

use crate::cli::{OutputFlags, RunArgs};
use crate::progress::{Reporter, Shown};
use crate::{exit, terminal, CmdResult, Failure, Kind};
use ioscope_exec::{dataset, workset};
use ioscope_store::Status;
use ioscope_workload::{build_plan, render_diagnostics, Flags, Plan, SourceFile};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Reads a workload file; a missing, unreadable, huge or non-UTF-8 file is invalid input.
/// Reads the workload file, or standard input for `-` (bounded as a file is).
fn read_source(path: &Path) -> Result<SourceFile, Failure> {
    if path == Path::new("-") {
        return read_stdin();
    }
    SourceFile::read(path).map_err(|e| Failure::said(Kind::InvalidInput, e.to_string()))
}

fn read_stdin() -> Result<SourceFile, Failure> {
    use std::io::Read;
    let limit = ioscope_workload::MAX_SOURCE_BYTES;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::said(Kind::InvalidInput, format!("-: error: cannot read standard input: {e}")))?;
    if bytes.len() as u64 > limit {
        let limit = ioscope_workload::format_size(limit);
        return Err(Failure::said(
            Kind::InvalidInput,
            format!("-: error: more than {limit} on standard input: expected a workload file (TOML text)"),
        ));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        Failure::said(
            Kind::InvalidInput,
            format!("-: error: not UTF-8 text (byte {at}): expected a workload file (TOML text)"),
        )
    })?;
    Ok(SourceFile { path: "-".into(), text })
}

/// Builds the plan or prints every problem (exit 2).
pub fn plan_from(file: Option<&Path>, flags: &Flags) -> Result<Plan, Failure> {
    let source = file.map(read_source).transpose()?;
    let plan = build_plan(source.as_ref(), flags).map_err(|diags| {
        eprint!("{}", render_diagnostics(&diags));
        Failure::printed(Kind::InvalidInput)
    })?;
    // What fio's spellings among the flags do differently (the importer says the same).
    for note in ioscope_workload::flag_notes(flags) {
        eprintln!("warning: {note}");
    }
    Ok(plan)
}

pub fn validate(file: Option<&Path>, flags: &Flags) -> CmdResult {
    let plan = plan_from(file, flags)?;
    let threads: u32 = plan.max_threads().iter().sum();
    let threads = if threads == 1 { "1 thread".to_string() } else { format!("{threads} threads") };
    let threads = match plan.hosts.len() {
        0 => threads,
        1 => format!("{threads} on 1 host"),
        n => format!("{threads} per host, {n} hosts"),
    };
    let names: Vec<&str> = plan.workloads.iter().map(|w| w.name.as_str()).collect();
    let steps = plan.steps().len();
    let steps = if steps == 1 { String::new() } else { format!(", {steps} steps") };
    let (engine, duration) = (plan.engine.name(), terminal::duration(plan.total_duration()));
    crate::output::println(&format!(
        "{}: ok ({engine} {}, {threads}{steps}, {duration})",
        file.map_or("flags".into(), |f| f.display().to_string()),
        names.join(" + ")
    ));
    Ok(())
}

pub fn run(args: RunArgs) -> CmdResult {
    let mut plan = plan_from(args.file.as_deref(), &args.workload.flags)?;
    for text in &args.checks {
        ioscope_workload::check::Check::parse(text)
            .map_err(|e| Failure::said(Kind::InvalidInput, format!("--check '{text}': {e}")))?;
    }
    plan.checks.extend(args.checks.iter().cloned());
    let probes = crate::probe::Probes::parse(&args.probe)?;
    crate::cmd_verify::check_journal(&plan, args.journal.as_deref())?;
    execute(&plan, &args.output, &probes, args.journal.as_deref())
}

/// Default results file name: ioscope-YYYYMMDD-HHMMSS.db (UTC) in the current directory.
fn default_out() -> PathBuf {
    PathBuf::from(format!("ioscope-{}.db", terminal::utc_stamp()))
}

/// Runs a valid plan: everything after input validation. Shared with `demo`.
pub fn execute(plan: &Plan, output: &OutputFlags, probes: &crate::probe::Probes, journal: Option<&Path>) -> CmdResult {
    if !plan.hosts.is_empty() {
        return execute_on_hosts(plan, output, probes);
    }
    // A block device: refused without --force, checked against the plan and used as it
    // is; a plan without a size gets the device's (the run records the size it used).
    let mut plan = plan.clone();
    // An existing file (not ioscope's): read as it is, written only with --force; a plan
    // without a size gets the file's.
    let existing = ioscope_exec::existing::resolve(&mut plan).map_err(Failure::invalid)?;
    let device = ioscope_exec::blockdev::resolve(&mut plan).map_err(Failure::invalid)?;
    // Held to the end of the run: no mount, no second run on the device meanwhile.
    let _claim =
        device.as_ref().map(|d| ioscope_exec::blockdev::claim(&d.path)).transpose().map_err(Failure::invalid)?;
    let plan = &plan;
    let out = output.out.clone().unwrap_or_else(default_out);
    ioscope_store::check_new_path(&out).map_err(Failure::invalid)?;
    // A block device target records its own statistics (diskstats, per second): the local
    // probe's samplers, as `--probe local` would start them.
    let mut probes = probes.clone();
    if ioscope_exec::blockdev::is_block_device(&plan.dir) && !probes.at.contains(&crate::probe::Where::Local) {
        probes.at.push(crate::probe::Where::Local);
    }
    let feeds = probes.feeds(output.quiet)?;
    let shown = Shown::of(output.progress, output.quiet, terminal::stderr_is_tty());
    // A line rewritten in place (preparation, the bar) only on a terminal.
    let show_progress = shown.bar();
    // Signals: from here on, Ctrl-C, SIGTERM and SIGHUP stop the run cleanly (results
    // kept). During preparation nothing is measured yet, so they end the process at once.
    let interrupt = Arc::new(AtomicBool::new(false));
    let preparing = Arc::new(AtomicBool::new(true));
    watch_signals(&interrupt, &preparing, show_progress)
        .map_err(|e| Failure::failed(anyhow::Error::new(e).context("cannot handle signals")))?;
    // The UI's address is taken before any I/O: a busy or unusable --listen is found now.
    let server = start_ui(output, &out)?;
    let metrics = crate::metrics::RunMetrics::start(&output.metrics, ioscope_exec::host::hostname())?;
    let feeds = match &metrics {
        Some(m) => m.tee(feeds),
        None => feeds,
    };

    ensure_open_files(plan).map_err(Failure::invalid)?;
    if !plan.verify.is_off() {
        ioscope_exec::verify::memory_check(plan, plan.files as usize)
            .map_err(|e| Failure::said(Kind::InvalidInput, e))?;
    }
    // The directory is this run's alone, and usable, before anything in it is looked at.
    let lock = ioscope_exec::workdir::local_dir(plan)
        .map(|d| ioscope_exec::workdir::lock(&d, &out))
        .transpose()
        .map_err(Failure::invalid)?;
    let created_dir = lock.as_ref().is_some_and(|l| l.created_dir());

    // Data: decide without writing (refusals are invalid input), then prepare.
    let mut dataset = None;
    let mut verify_laid_out = None;
    let files = if let Some(d) = &plan.dataset {
        // The file sets' directories are checked too before anything is written (those in
        // an anchor not made yet are new).
        let (fs, _) = ioscope_exec::storage(plan).map_err(Failure::failed)?;
        let anchor_exists = fs.connect().ok().and_then(|mut c| c.stat(&d.dir).ok().flatten()).is_some();
        for set in plan.filesets.iter().filter(|_| anchor_exists) {
            check_tree(&*fs, set, plan)?;
        }
        let (layout, laid_out) = prepare_dataset(d, plan, output, show_progress, created_dir)?;
        (dataset, verify_laid_out) = (Some(layout), laid_out);
        // A flow's file sets: trees of their own in directories of the dataset's anchor.
        for set in &plan.filesets {
            prepare_dataset(set, plan, output, show_progress, false)?;
        }
        Vec::new()
    } else if !plan.engine.spec().caps.does_io {
        Vec::new()
    } else if let Some(dev) = &device {
        if !output.quiet {
            eprintln!(
                "block device {} ({}, {} of {}, logical block {} bytes): nothing is prepared on it",
                dev.path.display(),
                dev.model.as_deref().unwrap_or(&dev.name),
                terminal::size(plan.size_bytes),
                terminal::size(dev.size_bytes),
                dev.logical_block_bytes
            );
        }
        vec![dev.path.clone()]
    } else if let Some(f) = &existing {
        if !output.quiet {
            eprintln!(
                "existing file {} ({} of {}): used as it is, nothing is prepared on it and --cleanup leaves it",
                f.path.display(),
                terminal::size(plan.size_bytes),
                terminal::size(f.size_bytes)
            );
        }
        vec![f.path.clone()]
    } else {
        let (fs, dir) = ioscope_exec::storage(plan).map_err(Failure::failed)?;
        let mut layout = match workset::check(&*fs, &dir, plan) {
            Ok(mut l) => {
                if created_dir {
                    l.set_created_dir();
                }
                l
            }
            Err(
                e @ (workset::WorksetError::NotOurs { .. }
                | workset::WorksetError::NotAFile { .. }
                | workset::WorksetError::NoSpace { .. }
                | workset::WorksetError::NoParent { .. }),
            ) => return Err(Failure::invalid(e)),
            Err(e) => return Err(Failure::failed(e)),
        };
        if let Some(note) = layout.refused_note() {
            eprintln!("{note}");
        }
        if !layout.to_fill.is_empty() {
            let total = layout.bytes_to_fill();
            if !output.quiet {
                eprintln!(
                    "preparing working set: {} in {} file(s) under {}",
                    terminal::size(total),
                    layout.to_fill.len(),
                    layout.dir.display()
                );
            }
            let started = std::time::Instant::now();
            let report = |done: u64, total: u64| {
                if show_progress {
                    terminal::progress_line(&format!("  filling {} / {}", terminal::size(done), terminal::size(total)));
                }
            };
            let threads: u32 = plan.max_threads().iter().sum();
            let prepared = workset::prepare(&*fs, &mut layout, threads.clamp(1, 8) as usize, &report);
            terminal::clear_line(show_progress);
            prepared.map_err(|e| Failure::failed(anyhow::Error::new(e).context("preparing the working set")))?;
            if !output.quiet {
                let secs = started.elapsed().as_secs_f64();
                eprintln!("  written in {secs:.1} s ({:.0} MB/s)", total as f64 / 1e6 / secs.max(1e-9));
            }
        } else {
            // Nothing to fill; the marker still learns whether this run's writes keep the
            // verify headers it records.
            workset::prepare(&*fs, &mut layout, 1, &|_, _| {})
                .map_err(|e| Failure::failed(anyhow::Error::new(e).context("preparing the working set")))?;
        }
        // Every block the fill writes carries a verify header (generation 0); with --verify
        // the blocks of every file the marker says carry headers of this verify block are
        // checked from the first read (a block without its header is a mismatch).
        if !plan.verify.is_off() {
            let run_id = layout.verify_headers.map_or_else(ioscope_exec::verify::new_run_id, |(id, _)| id);
            let files = layout.carrying_headers(plan.verify_block_bytes());
            verify_laid_out = Some(ioscope_exec::verify::LaidOut { run_id, files });
        }
        layout.files
    };

    preparing.store(false, Ordering::SeqCst);
    if interrupt.load(Ordering::SeqCst) {
        return Err(Failure::said(Kind::Interrupted, "interrupted before the run started; nothing was measured"));
    }
    if let (Some(p), false) = (&plan.precondition, output.quiet) {
        let each = plan.file_size_bytes();
        eprintln!(
            "precondition: writing {} file(s) of {} whole {}x, sequentially in {} writes (recorded, not measured)",
            files.len(),
            terminal::size(each),
            p.passes,
            terminal::size(ioscope_exec::precondition::block_bytes(p, each))
        );
    }
    let mut reporter = Reporter::new(shown);
    let mut on_second = |p: &ioscope_exec::Progress| {
        reporter.second(p);
        metrics.iter().for_each(|m| m.second(p));
    };
    // --until-ci: the same rule the summary states (ioscope_report::repeat::narrow_enough).
    let mut enough =
        |rates: &[Vec<(f64, f64)>]| plan.until_ci.is_some_and(|u| ioscope_report::repeat::narrow_enough(rates, &u));
    let outcome = ioscope_exec::run(
        plan,
        &files,
        ioscope_exec::RunConfig {
            out: out.clone(),
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            workload_toml: ioscope_workload::to_toml(plan),
            workload_hash: ioscope_workload::plan_hash(plan),
            interrupt: &interrupt,
            on_second: &mut on_second,
            dataset,
            probes: feeds,
            enough: Some(&mut enough),
            journal: journal.map(Path::to_path_buf),
            verify_laid_out,
        },
    );
    terminal::clear_line(show_progress);
    let outcome = match outcome {
        Ok(o) => o,
        Err(ioscope_exec::RunError::Precondition(_)) if interrupt.load(Ordering::SeqCst) => {
            return Err(Failure::said(Kind::Interrupted, "interrupted during the precondition; nothing was measured"));
        }
        Err(e) => {
            eprintln!("error: {e}");
            if matches!(e, ioscope_exec::RunError::Store { .. }) {
                crate::cmd_show::after_store_failure(&out, &e.to_string(), output.json);
            }
            return Err(Failure::printed(Kind::RunFailed));
        }
    };
    for e in &outcome.first_errors {
        eprintln!("I/O errors were counted; first {e}");
    }
    mark_auto_warmup(plan, &out);
    let summary = crate::cmd_show::print_summary(&out, output.json);
    // A mismatch has failed the run already (unless `--verify report`): the detail says so.
    say_failed(outcome.status, outcome.detail.as_deref(), &out);
    if let Some(why) = &outcome.wal_kept {
        let wal = ioscope_store::sidecar(&out, "-wal");
        eprintln!(
            "note: the results are complete but still in two files, {} and {} ({why}): keep both; \
             `ioscope show {}` makes them one file once there is space",
            out.display(),
            wal.display(),
            out.display()
        );
    }
    if plan.cleanup && (plan.dataset.is_some() || plan.engine.spec().caps.does_io) {
        match ioscope_exec::prep::cleanup(plan) {
            Ok(r) => {
                if !output.quiet {
                    eprintln!("cleanup: removed {} file(s), {}", r.files, terminal::size(r.bytes));
                }
                if let Some(m) = ioscope_exec::prep::left_message(&r.left) {
                    eprintln!("{m}");
                }
            }
            Err(e) => eprintln!("cleanup failed: {e}"),
        }
    }
    drop(lock); // the directory is free for the next run (a UI may stay up below)
    end(outcome.status, summary?, server, &interrupt)
}

/// A failed run says why on stderr as well (stdout may be JSON a program reads), after
/// its summary, and where what it measured is kept.
fn say_failed(status: Status, detail: Option<&str>, out: &Path) {
    if status == Status::Failed {
        let why = detail.unwrap_or("no reason was recorded");
        eprintln!("error: the run failed: {why}; what it measured is kept in {}", out.display());
    }
}

/// `warmup = "auto"`: the seconds before each step became steady become warm-up in the
/// results file, for every reader; if that fails, the file keeps them measured and says nothing wrong.
fn mark_auto_warmup(plan: &Plan, out: &Path) {
    if plan.warmup_auto {
        if let Err(e) = ioscope_report::steady::mark_auto_warmup(out) {
            eprintln!("warning: warmup auto: the seconds before steady state are still counted as measured: {e}");
        }
    }
}

/// The UI of a run (`--ui`), started before any I/O: a busy or unusable --listen is found now.
fn start_ui(output: &OutputFlags, out: &Path) -> Result<Option<ioscope_web::Server>, Failure> {
    if !output.ui {
        return Ok(None);
    }
    crate::cmd_ui::start_for_run(out, output.listen, output.tls.files())
        .map(Some)
        .map_err(|f| Failure { kind: Kind::InvalidInput, ..f })
}

/// After the summary: the UI stays up until Ctrl-C (unless the run was interrupted), and
/// the run's status becomes the exit code (the summary already said how the run ended);
/// a completed run with a failed check exits 3.
fn end(status: Status, checks_passed: bool, server: Option<ioscope_web::Server>, interrupt: &AtomicBool) -> CmdResult {
    if let Some(server) = server {
        if status != Status::Interrupted {
            eprintln!("the run is over; the UI stays at {} until Ctrl-C", server.url());
            // A Ctrl-C that came after the run ended (even before this line) closes the UI.
            while !interrupt.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
        server.stop();
    }
    match status {
        Status::Completed if !checks_passed => Err(Failure::printed(Kind::CheckFailed)),
        Status::Completed => Ok(()),
        Status::Interrupted => Err(Failure::printed(Kind::Interrupted)),
        Status::Failed | Status::Running => Err(Failure::printed(Kind::RunFailed)),
    }
}

/// Runs a valid plan on its hosts (agents over ssh or listening, see docs/hosts.md): this
/// process coordinates and writes the one results file.
fn execute_on_hosts(plan: &Plan, output: &OutputFlags, probes: &crate::probe::Probes) -> CmdResult {
    let out = output.out.clone().unwrap_or_else(default_out);
    ioscope_store::check_new_path(&out).map_err(Failure::invalid)?;
    let feeds = probes.feeds(output.quiet)?;
    let shown = Shown::of(output.progress, output.quiet, terminal::stderr_is_tty());
    let show_progress = shown.bar();
    let interrupt = Arc::new(AtomicBool::new(false));
    // Ctrl-C stops every host (the run ends interrupted, results kept), also while preparing.
    let preparing = Arc::new(AtomicBool::new(false));
    watch_signals(&interrupt, &preparing, show_progress)
        .map_err(|e| Failure::failed(anyhow::Error::new(e).context("cannot handle signals")))?;
    let server = start_ui(output, &out)?;
    let metrics = crate::metrics::RunMetrics::start(&output.metrics, String::new())?;
    let feeds = match &metrics {
        Some(m) => m.tee(feeds),
        None => feeds,
    };
    let mut reporter = Reporter::new(shown);
    let mut on_second = |p: &ioscope_exec::Progress| {
        reporter.second(p);
        metrics.iter().for_each(|m| m.second(p));
    };
    let quiet = output.quiet;
    let say = |line: &str| {
        if !quiet {
            terminal::clear_line(show_progress);
            eprintln!("{line}");
        }
    };
    let outcome = ioscope_hosts::coordinate(
        plan,
        ioscope_hosts::Coordinate {
            out: out.clone(),
            command_line: std::env::args().collect::<Vec<_>>().join(" "),
            workload_toml: ioscope_workload::to_toml(plan),
            workload_hash: ioscope_workload::plan_hash(plan),
            interrupt: &interrupt,
            on_second: &mut on_second,
            say: &say,
            probes: feeds,
        },
    );
    terminal::clear_line(show_progress);
    let outcome = match outcome {
        Ok(o) => o,
        Err(ioscope_hosts::CoordError::Interrupted) => {
            return Err(Failure::said(Kind::Interrupted, ioscope_hosts::CoordError::Interrupted.to_string()))
        }
        Err(e) => {
            eprintln!("error: {e}");
            if let ioscope_hosts::CoordError::Store { .. } = e {
                crate::cmd_show::after_store_failure(&out, &e.to_string(), output.json);
            }
            return Err(Failure::printed(Kind::RunFailed));
        }
    };
    for e in &outcome.first_errors {
        eprintln!("I/O errors were counted; first {e}");
    }
    mark_auto_warmup(plan, &out);
    let checks_passed = crate::cmd_show::print_summary(&out, output.json)?;
    say_failed(outcome.status, outcome.detail.as_deref(), &out);
    end(outcome.status, checks_passed, server, &interrupt)
}

/// Every worker of a flat posix or uring workload keeps every file of the working set
/// open: raises the soft open-file limit towards the hard one if that is too few (with room
/// for the results file, sockets and rings), and refuses, before anything is written, a run
/// that even the hard limit cannot hold.
fn ensure_open_files(plan: &Plan) -> anyhow::Result<()> {
    if plan.dataset.is_some() || !plan.engine.spec().caps.local_files() {
        return Ok(());
    }
    let threads: u64 = plan.max_threads().iter().map(|t| u64::from(*t)).sum();
    let needed = threads.saturating_mul(u64::from(plan.files)).saturating_add(3);
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Ok(());
    }
    let wanted = needed.saturating_add(64).min(limit.rlim_max);
    if limit.rlim_cur < wanted {
        let raised = libc::rlimit { rlim_cur: wanted, rlim_max: limit.rlim_max };
        // SAFETY: setrlimit reads the struct it is given; the soft limit stays within the hard one.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit.rlim_cur = wanted;
        }
    }
    if limit.rlim_cur < needed {
        anyhow::bail!(
            "{threads} thread(s) × {} file(s) need {needed} open files, and this process may open at most {} \
             (ulimit -n; the hard limit is {}): use fewer --files or --threads, or raise the limit",
            plan.files,
            limit.rlim_cur,
            limit.rlim_max
        );
    }
    Ok(())
}

/// Turns SIGINT, SIGTERM and SIGHUP into a request to stop. While `preparing` is set no
/// measurement has started and no results file exists, so the process ends at once with
/// exit 130 and a message; files prepared so far are ioscope's and are reused or rewritten
/// by the next run, as after a crash.
fn watch_signals(
    interrupt: &Arc<AtomicBool>,
    preparing: &Arc<AtomicBool>,
    progress_shown: bool,
) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let (interrupt, preparing) = (Arc::clone(interrupt), Arc::clone(preparing));
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        for sig in signals.forever() {
            interrupt.store(true, Ordering::SeqCst);
            if preparing.load(Ordering::SeqCst) {
                let name = match sig {
                    SIGHUP => "SIGHUP",
                    SIGTERM => "SIGTERM",
                    _ => "SIGINT",
                };
                terminal::clear_line(progress_shown);
                eprintln!("interrupted ({name}) while preparing; nothing was measured");
                std::process::exit(i32::from(exit::INTERRUPTED));
            }
        }
    })?;
    Ok(())
}

/// Whether the tree at `d`'s anchor can be reused; a refusal is invalid input (exit 2).
fn check_tree(
    fs: &dyn ioscope_engine::fs::FileSystem,
    d: &ioscope_workload::Dataset,
    plan: &Plan,
) -> Result<bool, Failure> {
    match dataset::check(fs, d, plan.force) {
        Ok(r) => Ok(r),
        Err(
            e @ (dataset::DatasetError::NotOurs { .. }
            | dataset::DatasetError::Missing { .. }
            | dataset::DatasetError::NoSpace { .. }
            | dataset::DatasetError::NoParent { .. }),
        ) => Err(Failure::invalid(e)),
        Err(e) => Err(Failure::failed(e)),
    }
}

/// Checks the dataset's (or a file set's) anchor (refusal: exit 2, before any I/O), then
/// creates or reuses the tree, with progress.
fn prepare_dataset(
    d: &ioscope_workload::Dataset,
    plan: &Plan,
    output: &OutputFlags,
    show_progress: bool,
    created_dir: bool,
) -> Result<(dataset::Layout, Option<ioscope_exec::verify::LaidOut>), Failure> {
    let (fs, _) = ioscope_exec::storage(plan).map_err(Failure::failed)?;
    let reusable = check_tree(&*fs, d, plan)?;
    if let Some(refused) = dataset::refused_marker(&*fs, d).filter(|_| plan.force) {
        eprintln!(
            "note: {refused}; with --force the directory is taken as not ioscope's: nothing that marker \
             describes is removed, and the marker is replaced by one of the tree this run creates"
        );
    }
    let layout = dataset::Layout::new(d);
    if !output.quiet {
        let what = if reusable { "reusing" } else { "creating" };
        let tree = match (&d.name, plan.dataset.as_ref().is_some_and(|main| main.dir == d.dir)) {
            (Some(name), false) => format!("fileset {name}"),
            _ => "dataset".to_string(),
        };
        eprintln!(
            "{what} {tree}: {} files, {} in {} directories under {}",
            terminal::int(layout.files()),
            terminal::size(layout.total_bytes()),
            terminal::int(layout.leaf_dirs()),
            d.dir.display()
        );
    }
    let started = std::time::Instant::now();
    let report = |done: u64, total: u64, bytes: u64| {
        if show_progress {
            terminal::progress_line(&format!(
                "  {} / {} files, {}",
                terminal::int(done),
                terminal::int(total),
                terminal::size(bytes)
            ));
        }
    };
    // Local files: a thread per CPU. On a server (a target: NFS) each thread mostly waits for replies.
    let threads = match plan.target {
        Some(_) => 16,
        None => std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 16),
    };
    // The files created now carry verify headers (generation 0), with --verify or not.
    let headers = Some((ioscope_exec::verify::new_run_id(), plan.verify_block_bytes()));
    let prepared = dataset::prepare_stamped(&*fs, d, plan.force, created_dir, threads, &report, headers);
    terminal::clear_line(show_progress);
    match prepared {
        Ok(p) => {
            if !p.reused && !output.quiet {
                let secs = started.elapsed().as_secs_f64();
                eprintln!("  created in {secs:.1} s ({:.0} files/s)", p.layout.files() as f64 / secs.max(1e-9));
            }
            let laid_out = headers
                .filter(|_| !p.stamped.is_empty() && !plan.verify.is_off())
                .map(|(run_id, _)| ioscope_exec::verify::LaidOut { run_id, files: p.stamped });
            Ok((p.layout, laid_out))
        }
        Err(e) => Err(Failure::failed(anyhow::Error::new(e).context("preparing the dataset"))),
    }
}
