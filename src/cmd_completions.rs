//! `ioscope completions SHELL` and `ioscope man`: the shell completion scripts and the
//! manual page, generated from the command-line definition itself (the workload flags from
//! the key table), so they name every flag the binary takes and nothing else.

use crate::{CmdResult, Failure, Kind};
use clap::CommandFactory;
use std::path::Path;

pub fn completions(shell: clap_complete::Shell) -> CmdResult {
    let mut cmd = crate::cli::Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "ioscope", &mut out);
    write_stdout(&out)
}

/// `ioscope man [COMMAND]`: the page of ioscope or of one command on stdout; with `--dir`,
/// every page (ioscope.1, ioscope-run.1, ioscope-import-fio.1, ...) written there.
pub fn man(command: &[String], dir: Option<&Path>) -> CmdResult {
    let failed = |e: std::io::Error| Failure::said(Kind::RunFailed, format!("man page: {e}"));
    let pages = pages(crate::cli::Cli::command(), "ioscope");
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir).map_err(failed)?;
        for (name, cmd) in &pages {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd.clone()).render(&mut out).map_err(failed)?;
            std::fs::write(dir.join(format!("{name}.1")), out).map_err(failed)?;
        }
        return Ok(());
    }
    let wanted = std::iter::once("ioscope").chain(command.iter().map(String::as_str)).collect::<Vec<_>>().join("-");
    let Some((_, cmd)) = pages.into_iter().find(|(name, _)| *name == wanted) else {
        return Err(Failure::said(
            Kind::InvalidInput,
            format!("no command {:?}: expected one of ioscope's commands, as in `ioscope man run`", command.join(" ")),
        ));
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out).map_err(failed)?;
    write_stdout(&out)
}

/// Every command with its page name: `ioscope`, `ioscope-run`, `ioscope-import-fio`, ...
fn pages(cmd: clap::Command, name: &str) -> Vec<(String, clap::Command)> {
    let mut all = vec![(name.to_string(), cmd.clone().name(name.to_string()).bin_name(name.replace('-', " ")))];
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        all.extend(pages(sub.clone(), &format!("{name}-{}", sub.get_name())));
    }
    all
}

fn write_stdout(bytes: &[u8]) -> CmdResult {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        // A closed pipe (`ioscope man | head`) is the reader's choice, not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::said(Kind::RunFailed, format!("standard output: {e}"))),
    }
}
