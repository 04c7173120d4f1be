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
mod cmd_demo;
mod cmd_import;
mod cmd_run;
mod cmd_show;
mod cmd_ui;
mod output;
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
    /// Interrupted (Ctrl-C, SIGTERM or SIGHUP); results up to that moment are kept.
    pub const INTERRUPTED: u8 = 130;
}

/// A panic in the UI server's threads is caught there (the request is answered 500) and
/// the server and the run go on. Anywhere else it ends the process at once, as it always
/// did: a run's threads wait for one another, so a run that lost one would never end; the
/// results file keeps every committed second and reads as interrupted.
fn panic_policy() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        if !ioscope_web::server::on_ui_thread() {
            std::process::abort();
        }
    }));
}

fn main() -> ExitCode {
    panic_policy();
    let cli = cli::Cli::parse();
    let code = match cli.command {
        cli::Command::Run(args) => cmd_run::run(*args),
        cli::Command::Validate { file } => cmd_run::validate(&file),
        cli::Command::Show { file, json } => cmd_show::show(&file, json),
        cli::Command::Export { file, format } => cmd_show::export(&file, format),
        cli::Command::Demo(args) => cmd_demo::demo(args),
        cli::Command::Import { from: cli::ImportFrom::Vdbench { file, out } } => {
            cmd_import::vdbench(&file, out.as_deref())
        }
        cli::Command::Ui { files, listen, tls } => cmd_ui::ui(&files, listen, tls.files()),
        cli::Command::Report { file, out, force } => cmd_ui::report(&file, &out, force),
        cli::Command::Plot(args) => cmd_ui::plot(&args),
    };
    // Output lost to a full disk (not a closed pipe) fails an otherwise successful command.
    let code = if code == exit::OK && output::failed() { exit::RUN_FAILED } else { code };
    ExitCode::from(code)
}
