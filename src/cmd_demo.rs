//! `ioscope demo`: a short, sensible mixed workload in a temporary directory, so a new
//! user sees a complete run, its summary and where its results went.

use crate::cli::{DemoArgs, OutputFlags};
use crate::{output, terminal, CmdResult, Failure, Kind};
use ioscope_workload::{build_plan, Flags};

pub fn demo(args: DemoArgs) -> CmdResult {
    let work = tempfile::Builder::new()
        .prefix("ioscope-demo-")
        .tempdir()
        .map_err(|e| Failure::failed(anyhow::Error::new(e).context("cannot create a temporary directory")))?;
    let flags = Flags::default()
        .with("rw", "randrw")
        .with("rwmix-read", "70")
        .with("bs", "4k:70,64k:30")
        .with("size", "256m")
        .with("threads", "2")
        .with("duration", &args.duration)
        .with("dir", &work.path().join("data").display().to_string());
    let plan = build_plan(None, &flags).map_err(|d| {
        eprint!("{}", ioscope_workload::render_diagnostics(&d));
        Failure::printed(Kind::InvalidInput)
    })?;
    let out =
        args.out.unwrap_or_else(|| std::env::temp_dir().join(format!("ioscope-demo-{}.db", terminal::utc_stamp())));
    eprintln!(
        "ioscope demo: 70% random reads / 30% writes, 4 KiB and 64 KiB blocks, 256 MiB working set, 2 threads, {}",
        args.duration
    );
    let output = OutputFlags {
        out: Some(out.clone()),
        json: false,
        quiet: false,
        progress: args.progress,
        ui: false,
        listen: crate::cli::DEFAULT_LISTEN.parse().expect("default address"),
        tls: Default::default(),
        metrics: Default::default(),
    };
    let outcome = crate::cmd_run::execute(&plan, &output, &Default::default(), None);
    drop(work); // removes the working set
    if out.exists() {
        let f = out.display();
        let report = out.with_extension("html");
        let written = if report.exists() {
            false
        } else {
            crate::cmd_ui::write_report(&out, &report, false).map_err(|f| f.print()).is_ok()
        };
        if written {
            output::println(&format!(
                "\nlook at it: open {} in a browser (heat maps, breakdowns, steps, system)",
                report.display()
            ));
            output::println(&format!(
                "  or: ioscope ui {f}              # the Analytics worksheet at http://{}/",
                crate::cli::DEFAULT_LISTEN
            ));
        }
        output::println(&format!("\nresults: {f}"));
        output::println(&format!(
            "  ioscope show {f}                  # this summary again (--json: machine-readable)"
        ));
        output::println(&format!("  ioscope export {f} --format csv   # one row per second"));
        output::println(&format!("  sqlite3 {f} 'select * from samples limit 5'   # the raw per-second series"));
    }
    if let Some(note) = path_note() {
        output::println(&note);
    }
    outcome
}

/// When the `ioscope` a user would type is not this binary (run with `cargo run`, or from
/// the build directory): where it is, and how to make it a command.
fn path_note() -> Option<String> {
    let exe = std::env::current_exe().ok()?.canonicalize().ok()?;
    path_note_for(&exe, &std::env::var_os("PATH").unwrap_or_default())
}

fn path_note_for(exe: &std::path::Path, path: &std::ffi::OsStr) -> Option<String> {
    let found = std::env::split_paths(path)
        .map(|dir| dir.join("ioscope"))
        .find(|candidate| candidate.is_file())
        .and_then(|candidate| candidate.canonicalize().ok());
    if found.as_deref() == Some(exe) {
        return None;
    }
    let other = match found {
        Some(other) => format!(" (`ioscope` on PATH is {}, another build)", other.display()),
        None => String::new(),
    };
    Some(format!(
        "\nthis ioscope is {}{other}; to make it the `ioscope` command: cargo install --path . --locked \
         (into ~/.cargo/bin), or: ln -s {} ~/.local/bin/ioscope",
        exe.display(),
        exe.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_says_where_ioscope_is_unless_it_is_the_ioscope_on_path() {
        let tmp = tempfile::tempdir().unwrap();
        let (build, bin) = (tmp.path().join("build"), tmp.path().join("bin"));
        std::fs::create_dir_all(&build).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(build.join("ioscope"), b"").unwrap();
        let exe = build.join("ioscope").canonicalize().unwrap();
        let note = path_note_for(&exe, std::ffi::OsStr::new("/nonexistent:/also-not")).unwrap();
        assert!(note.contains(&format!("this ioscope is {}", exe.display())), "{note}");
        assert!(note.contains("cargo install --path . --locked"), "{note}");
        std::os::unix::fs::symlink(&exe, bin.join("ioscope")).unwrap();
        assert_eq!(path_note_for(&exe, bin.as_os_str()), None, "installed (here as a link): nothing to say");
        std::fs::remove_file(bin.join("ioscope")).unwrap();
        std::fs::write(bin.join("ioscope"), b"other").unwrap();
        let note = path_note_for(&exe, bin.as_os_str()).unwrap();
        assert!(note.contains("another build"), "{note}");
    }
}
