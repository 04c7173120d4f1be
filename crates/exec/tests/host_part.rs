//! One host's part of a many-host plan runs as is: a host that sits out the first step of
//! a hosts staircase idles through it (no I/O, its seconds still written) and then runs.

use ioscope_exec::{run, Progress, RunConfig};
use ioscope_workload::{build_plan, render_diagnostics, Flags};
use std::sync::atomic::AtomicBool;

#[test]
fn a_host_idle_in_a_step_writes_its_seconds_without_io_and_runs_the_next() {
    let flags = Flags::default()
        .with("engine", "null")
        .with("threads", "2")
        .with("hosts", "c1,c2")
        .with("staircase", "hosts:1-2/1s");
    let plan = build_plan(None, &flags).unwrap_or_else(|d| panic!("{}", render_diagnostics(&d)));
    // The second host joins in the second step.
    let part = plan.for_host(1);
    let tmp = tempfile::tempdir().unwrap();
    let interrupt = AtomicBool::new(false);
    let mut seconds: Vec<Progress> = Vec::new();
    let mut on_second = |p: &Progress| seconds.push(p.clone());
    let outcome = run(
        &part,
        &[],
        RunConfig {
            out: tmp.path().join("r.db"),
            command_line: "test".into(),
            workload_toml: ioscope_workload::to_toml(&part),
            workload_hash: ioscope_workload::plan_hash(&part),
            interrupt: &interrupt,
            on_second: &mut on_second,
            dataset: None,
            probes: Vec::new(),
            enough: None,
            journal: None,
            verify_laid_out: None,
        },
    )
    .unwrap();
    assert_eq!(outcome.status, ioscope_store::Status::Completed, "{:?}", outcome.detail);
    let by_step: Vec<(u32, u32, bool)> = seconds.iter().map(|p| (p.step, p.threads, p.iops > 0.0)).collect();
    assert_eq!(by_step, [(0, 0, false), (1, 2, true)], "{seconds:?}");
    assert_eq!(seconds[0].step_label, "hosts=1 threads=0");
    assert_eq!(seconds[1].step_label, "hosts=2");
}
