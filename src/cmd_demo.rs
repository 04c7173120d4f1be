//! `ioscope demo`: a short, sensible mixed workload in a temporary directory, so a new
//! user sees a complete run, its summary and where its results went.

use crate::cli::{DemoArgs, OutputFlags};
use crate::{exit, output, terminal};
use ioscope_workload::{build_plan, Flags};

pub fn demo(args: DemoArgs) -> u8 {
    let work = match tempfile::Builder::new().prefix("ioscope-demo-").tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: cannot create a temporary directory: {e}");
            return exit::RUN_FAILED;
        }
    };
    let flags = Flags {
        rw: Some("randrw".into()),
        rwmix_read: Some("70".into()),
        bs: Some("4k:70,64k:30".into()),
        size: Some("256m".into()),
        threads: Some("2".into()),
        duration: Some(args.duration.clone()),
        dir: Some(work.path().join("data").display().to_string()),
        ..Flags::default()
    };
    let plan = match build_plan(None, &flags) {
        Ok(p) => p,
        Err(d) => {
            eprint!("{}", ioscope_workload::render_diagnostics(&d));
            return exit::INVALID_INPUT;
        }
    };
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
        ui: false,
        listen: crate::cli::DEFAULT_LISTEN.parse().expect("default address"),
        tls: Default::default(),
    };
    let code = crate::cmd_run::execute(&plan, &output);
    drop(work); // removes the working set
    if out.exists() {
        let f = out.display();
        let report = out.with_extension("html");
        if !report.exists() && crate::cmd_ui::write_report(&out, &report, false) == exit::OK {
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
    code
}
