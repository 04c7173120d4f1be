//! `ioscope`: the command line. Subcommands live in their own modules; this file maps
//! every outcome to one exit code (see docs/exit-codes.md).

/// `eprintln!` that ignores a failing stderr (full disk, closed pipe) instead of
/// panicking: there is nowhere left to report it. Defined before the modules so that it
/// is the one they use (see output.rs).
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` that ignores a failing stderr, like [`eprintln!`].
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

mod cli;
mod cmd_agent;
mod cmd_compare;
mod cmd_completions;
mod cmd_demo;
mod cmd_import;
mod cmd_import_fio;
mod cmd_probe;
mod cmd_probe_listen;
mod cmd_run;
mod cmd_show;
mod cmd_ui;
mod cmd_verify;
mod metrics;
mod outfile;
mod output;
mod probe;
mod progress;
mod terminal;

use clap::Parser;
use std::process::ExitCode;

/// Exit codes, in one place.
pub mod exit {
    pub const OK: u8 = 0;
    /// The run failed (target could not be opened, results file could not be written).
    pub const RUN_FAILED: u8 = 1;
    /// Invalid input: nothing was run and nothing was written into the target.
    pub const INVALID_INPUT: u8 = 2;
    /// The run completed and one of its checks (`--check`) failed.
    pub const CHECK_FAILED: u8 = 3;
    /// Interrupted (Ctrl-C, SIGTERM or SIGHUP); results up to that moment are kept.
    pub const INTERRUPTED: u8 = 130;
}

/// What kind of failure ended a command; [`main`] turns it into the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Bad input (flags, workload, paths): nothing was run, nothing was written (exit 2).
    InvalidInput,
    /// The run or the command failed while doing its work (exit 1).
    RunFailed,
    /// Ctrl-C, SIGTERM or SIGHUP (exit 130).
    Interrupted,
    /// The run completed; a check on its figures failed (exit 3; the summary says which).
    CheckFailed,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::InvalidInput => exit::INVALID_INPUT,
            Kind::RunFailed => exit::RUN_FAILED,
            Kind::Interrupted => exit::INTERRUPTED,
            Kind::CheckFailed => exit::CHECK_FAILED,
        }
    }
}

/// How a command failed: its kind and what to tell the user (printed once, by [`main`]).
#[derive(Debug)]
pub struct Failure {
    pub kind: Kind,
    pub message: Message,
}

#[derive(Debug)]
pub enum Message {
    /// Printed as `error: ` and the error with its context chain ([`chain_text`]).
    Error(anyhow::Error),
    /// Printed as it is: messages that name their file first (`FILE: error: ...`, like a
    /// compiler) or that are not errors (`interrupted before the run started`).
    Said(String),
    /// Already printed where it happened (diagnostics, a summary of a failed run).
    Printed,
}

impl Failure {
    /// Bad input, reported as `error: ...`.
    pub fn invalid(e: impl Into<anyhow::Error>) -> Self {
        Self { kind: Kind::InvalidInput, message: Message::Error(e.into()) }
    }
    /// A failed run or command, reported as `error: ...`.
    pub fn failed(e: impl Into<anyhow::Error>) -> Self {
        Self { kind: Kind::RunFailed, message: Message::Error(e.into()) }
    }
    /// A failure whose message is printed as it is.
    pub fn said(kind: Kind, text: impl Into<String>) -> Self {
        Self { kind, message: Message::Said(text.into()) }
    }
    /// A failure already reported to the user.
    pub fn printed(kind: Kind) -> Self {
        Self { kind, message: Message::Printed }
    }
    /// Tells the user (for a failure that does not end the command).
    pub fn print(&self) {
        match &self.message {
            Message::Error(e) => eprintln!("error: {}", chain_text(e)),
            Message::Said(text) => eprintln!("{text}"),
            Message::Printed => {}
        }
    }
}

/// What every command returns.
pub type CmdResult = Result<(), Failure>;

/// "context: error: cause". Our library errors quote their source in their own message
/// ("cannot create a file here (Permission denied)"): the chain ends at the first cause
/// already quoted, so nothing is said twice and nothing below it (a library's internals) is
/// added to a message users know.
fn chain_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            break;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

/// The exit code of a command's outcome, after printing its message.
fn exit_code(outcome: CmdResult) -> u8 {
    let code = match outcome {
        Ok(()) => exit::OK,
        Err(failure) => {
            failure.print();
            failure.kind.code()
        }
    };
    // Output lost to a full disk (not a closed pipe) fails an otherwise successful command.
    if code == exit::OK && output::failed() {
        exit::RUN_FAILED
    } else {
        code
    }
}

/// glibc's allocator hands a freed block of a megabyte or so back to the kernel
/// (its dynamic mmap threshold, and the trim of a thread's arena) and faults it in again,
/// zeroed, at the next allocation of that size. A client library that allocates each reply
/// (the smb crate: a 1 MiB READ is three such buffers) then spends most of its CPU in page
/// faults: 1 MiB SMB reads at QD4 took 1.97 ms of CPU each, 0.66 ms with freed memory kept
/// for reuse (bench/results/2026-11-28-vm-smb.md). Blocks under 32 MiB come from the heap
/// and freed ones stay there; the heap is as large as the run's peak, no larger.
fn allocator_policy() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any other thread runs.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}

/// A panic in the UI server's threads is caught there (the request is answered 500) and
/// the server and the run go on; so is one inside an engine's `caught::catching` (a
/// client library fed a peer's reply: that request fails). Anywhere else it ends the process at once, as it always
/// did: a run's threads wait for one another, so a run that lost one would never end; the
/// results file keeps every committed second and reads as interrupted.
fn panic_policy() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        if !ioscope_web::server::on_ui_thread() && !ioscope_engine::caught::is_catching() {
            std::process::abort();
        }
    }));
}

fn main() -> ExitCode {
    allocator_policy();
    panic_policy();
    let cli = cli::Cli::parse_from(cli::join_optional_values(std::env::args_os().collect()));
    let outcome = match cli.command {
        cli::Command::Run(args) => cmd_run::run(*args),
        cli::Command::Validate { file, workload } => cmd_run::validate(file.as_deref(), &workload.flags),
        cli::Command::Show { file, json, system: true, out } => cmd_show::show_system(&file, json, &out),
        cli::Command::Show { file, json, system: false, out } => cmd_show::show(&file, json, &out),
        cli::Command::Compare { a, b, json, fail_if } => cmd_compare::compare(&a, &b, json, &fail_if),
        cli::Command::Export { file, format, out } => cmd_show::export(&file, format, &out),
        cli::Command::Demo(args) => cmd_demo::demo(args),
        cli::Command::Import { from: cli::ImportFrom::Vdbench { file, out } } => cmd_import::vdbench(&file, &out),
        cli::Command::Import { from: cli::ImportFrom::Filebench { file, out } } => cmd_import::filebench(&file, &out),
        cli::Command::Import { from: cli::ImportFrom::Fio { file, out, group } } => {
            cmd_import_fio::fio(&file, &out, group)
        }
        cli::Command::Ui { files, listen, tls } => cmd_ui::ui(&files, listen, tls.files()),
        cli::Command::Report { file, out, force } => cmd_ui::report(&file, &out, force),
        cli::Command::Plot(args) => cmd_ui::plot(&args),
        cli::Command::Agent(args) => cmd_agent::agent(&args),
        cli::Command::Probe(args) => cmd_probe::probe(&args),
        cli::Command::Verify { journal, strict, json } => cmd_verify::verify(&journal, strict, json),
        cli::Command::Completions { shell } => cmd_completions::completions(shell),
        cli::Command::Man { command, dir } => cmd_completions::man(&command, dir.as_deref()),
    };
    ExitCode::from(exit_code(outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Like the libraries' errors: the message quotes the source, which is also its source().
    #[derive(Debug)]
    struct Quoting {
        dir: String,
        source: std::io::Error,
    }

    impl std::fmt::Display for Quoting {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{}: cannot create a file here ({})", self.dir, self.source)
        }
    }

    impl std::error::Error for Quoting {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn an_error_that_quotes_its_cause_reads_as_before_with_its_context_in_front() {
        let e = || Quoting { dir: "/d".into(), source: std::io::Error::other("Permission denied") };
        assert_eq!(chain_text(&anyhow::Error::new(e())), "/d: cannot create a file here (Permission denied)");
        let with_context = anyhow::Error::new(e()).context("preparing the working set");
        assert_eq!(
            chain_text(&with_context),
            "preparing the working set: /d: cannot create a file here (Permission denied)"
        );
        assert_eq!(Kind::InvalidInput.code(), 2);
        assert_eq!((Kind::RunFailed.code(), Kind::Interrupted.code()), (1, 130));
    }
}
