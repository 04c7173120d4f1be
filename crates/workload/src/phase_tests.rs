//! Phases: each [[workload]] may name the phase it runs in; the phases run one after another,
//! each making the steps of the run's loops, and fio's stonewall groups import to them.

use crate::*;
use std::path::PathBuf;

fn src(text: &str) -> SourceFile {
    SourceFile { path: PathBuf::from("job.toml"), text: text.to_string() }
}

fn plan(text: &str) -> Plan {
    validate_file(&src(text)).unwrap_or_else(|d| panic!("{}", render_diagnostics(&d)))
}

fn error(text: &str) -> String {
    match validate_file(&src(text)) {
        Ok(p) => panic!("expected an error, got {p:?}"),
        Err(d) => render_diagnostics(&d),
    }
}

const WRITE_THEN_READ: &str = "dir = \"/tmp/x\"\nduration = \"10s\"\nfor_threads = [1, 4]\n\n\
[[workload]]\nname = \"fill\"\nrw = \"write\"\nbs = \"1m\"\nphase = 1\n\n\
[[workload]]\nname = \"read\"\nrw = \"randread\"\nphase = 2\n\n\
[[workload]]\nname = \"background\"\nrw = \"randread\"\nthreads = 2\n";

#[test]
fn each_phase_runs_its_own_workloads_over_the_steps_of_the_loops_one_after_another() {
    let p = plan(WRITE_THEN_READ);
    assert_eq!(p.phases(), 2);
    let steps = p.steps();
    assert_eq!(steps.len() as u64, p.step_count());
    let labels: Vec<String> = steps.iter().map(Step::label).collect();
    assert_eq!(labels, ["phase=1 threads=1", "phase=1 threads=4", "phase=2 threads=1", "phase=2 threads=4"]);
    let threads = |s: &Step| -> Vec<u32> { p.workloads.iter().map(|w| s.threads_of(w)).collect() };
    // A workload of another phase idles; one without a phase runs in every phase.
    assert_eq!(threads(&steps[1]), [4, 0, 4]);
    assert_eq!(threads(&steps[2]), [0, 1, 1]);
    assert_eq!(p.max_threads(), [4, 4, 4]);
    assert_eq!(p.total_duration(), std::time::Duration::from_secs(40));
    // The canonical text (what an agent gets, and the workload hash) keeps the phases.
    let again = plan(&to_toml(&p));
    assert_eq!(again, p);
    let back: Plan = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
    assert_eq!(back, p);
    // A plan stored before phases existed reads as one without them.
    let without: Plan = serde_json::from_str(
        &serde_json::to_string(&plan(&WRITE_THEN_READ.replace("phase = 1\n", "").replace("phase = 2\n", ""))).unwrap(),
    )
    .unwrap();
    assert_eq!((without.phases(), without.steps().len()), (0, 2));
}

#[test]
fn a_phase_left_without_a_workload_or_a_rate_over_phases_is_refused_where_written() {
    let e = error(&WRITE_THEN_READ.replace("phase = 2", "phase = 3"));
    assert!(
        e.contains("job.toml:14:9")
            && e.contains("phases 1 to 3, each with a workload")
            && e.contains("no workload has phase 2"),
        "{e}"
    );
    let e = error(&format!("rate_iops = 1000\n{WRITE_THEN_READ}"));
    assert!(e.contains("job.toml:1:") && e.contains("no rate_iops or curve in a run with phases"), "{e}");
    let e = error(&WRITE_THEN_READ.replace("phase = 1\n", "phase = 1\nrate_iops = 10\n"));
    assert!(e.contains("no rate_iops or curve in a run with phases"), "{e}");
    let e = error(&WRITE_THEN_READ.replace("phase = 1", "phase = 0"));
    assert!(e.contains("workload.phase"), "{e}");
    // An end by amount ends the step it is in: only a run of one step takes it.
    let e = error(&format!("io_size = \"1g\"\n{}", WRITE_THEN_READ.replace("for_threads = [1, 4]\n", "")));
    assert!(e.contains("io_size"), "{e}");
}

fn import(text: &str) -> Result<String, String> {
    let none = |p: &std::path::Path, _: u64| -> Result<String, fio::ReadError> {
        Err(fio::ReadError::Unreadable { file: p.display().to_string(), error: std::io::ErrorKind::NotFound.into() })
    };
    match fio::convert(std::path::Path::new("job.fio"), text, None, &none) {
        Ok(c) => Ok(c.toml),
        Err(fio::FioError::Refused(f)) => Err(f.iter().map(|f| f.to_string()).collect::<Vec<_>>().join("\n")),
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn fio_stonewall_groups_that_are_not_steps_of_one_another_import_to_phases() {
    let job = "[global]\nioengine=libaio\ndirectory=/tmp/x\nsize=64m\nruntime=10\ntime_based\n\
[seq-write]\nrw=write\nbs=1m\niodepth=16\n[rand-read]\nstonewall\nrw=randread\nbs=4k\nnumjobs=4\n";
    let toml = import(job).unwrap();
    assert!(toml.contains("# all 2 stonewall groups, one phase each"), "{toml}");
    let p = plan(&toml);
    assert_eq!(p.phases(), 2);
    let w: Vec<(&str, Option<u32>, u32)> = p.workloads.iter().map(|w| (w.name.as_str(), w.phase, w.threads)).collect();
    assert_eq!(w, [("seq-write", Some(1), 1), ("rand-read", Some(2), 4)]);
    assert_eq!(p.iodepth_of(&p.workloads[0]), 16, "{toml}");
    assert_eq!(p.steps().len(), 2);
    // fio's rate is over a group; ioscope's over a run, which phases split: refused.
    let e = import(&job.replace("numjobs=4\n", "numjobs=4\nrate_iops=100\n")).unwrap_err();
    assert!(e.contains("a run with phases has no rate"), "{e}");
    // More groups than phases: refused, saying the most.
    let mut many = String::from("[global]\nioengine=libaio\ndirectory=/tmp/x\nsize=64m\nruntime=1\ntime_based\n");
    for g in 0..65 {
        many.push_str(&format!("[j{g}]\nstonewall\nrw={}\n", if g % 2 == 0 { "write" } else { "randread" }));
    }
    let e = import(&many).unwrap_err();
    assert!(e.contains("ioscope runs at most 64 phases, and the job file runs 65 stonewall groups"), "{e}");
    // fio's `threads` is its `thread`.
    let t = import(&job.replace("[global]\n", "[global]\nthreads=1\n")).unwrap();
    assert!(t.contains("threads=1: ioscope runs every job as threads of one process"), "{t}");
}
