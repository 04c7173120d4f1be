//! The command line as a user meets it: shell completions and the manual page name every
//! workload flag of the key table; `validate` checks flags alone and a workload on standard
//! input; fio's `--direct 1` (with a space) is taken as `--direct=1`; fio's `--bssplit`, `--rwmixwrite`,
//! `--filename` and `--ioengine=libaio` give the native flag's plan, `--output` is refused saying why.

use std::io::Write;
use std::process::Stdio;

fn ioscope() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_ioscope"))
}

fn run_ok(args: &[&str]) -> std::process::Output {
    let out = ioscope().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Every workload flag the key table gives the command line (its first spelling).
fn key_flags() -> Vec<String> {
    use ioscope_workload::keys::{self, Section};
    keys::in_section(Section::Top).filter_map(|k| k.flag).map(str::to_string).collect()
}

fn stdout_of(args: &[&str]) -> String {
    String::from_utf8(run_ok(args).stdout).unwrap()
}

#[test]
fn shell_completions_name_every_workload_flag_of_the_key_table() {
    let flags = key_flags();
    assert!(flags.len() > 30 && flags.iter().any(|f| f == "rwmix-read"), "{flags:?}");
    let (bash, zsh, fish) =
        (stdout_of(&["completions", "bash"]), stdout_of(&["completions", "zsh"]), stdout_of(&["completions", "fish"]));
    for f in &flags {
        assert!(bash.contains(&format!("--{f} ")), "bash completion lacks --{f}");
        assert!(zsh.contains(&format!("'--{f}=")) || zsh.contains(&format!("'--{f}[")), "zsh completion lacks --{f}");
        assert!(
            fish.contains(&format!("-l {f} ")) || fish.ends_with(&format!("-l {f}")),
            "fish completion lacks -l {f}"
        );
    }
    // The other commands are there too.
    assert!(bash.contains("ioscope__subcmd__validate") || bash.contains("ioscope,validate"), "bash: validate");
    assert!(fish.contains("__fish_ioscope_using_subcommand show"), "fish: show");
}

#[test]
fn the_man_pages_name_every_workload_flag_and_every_command() {
    let run_page = stdout_of(&["man", "run"]);
    assert!(run_page.starts_with(".ie") && run_page.contains(".TH ioscope-run 1"), "{}", &run_page[..200]);
    for f in key_flags() {
        let roff = format!("\\-\\-{}", f.replace('-', "\\-"));
        assert!(run_page.contains(&roff), "ioscope-run(1) lacks --{f}");
    }
    let dir = tempfile::tempdir().unwrap();
    run_ok(&["man", "--dir", dir.path().to_str().unwrap()]);
    for page in ["ioscope", "ioscope-run", "ioscope-validate", "ioscope-import-fio", "ioscope-completions"] {
        let text =
            std::fs::read_to_string(dir.path().join(format!("{page}.1"))).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(&format!(".TH {page} 1")), "{page}");
    }
    let out = ioscope().args(["man", "no-such-command"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn validate_checks_flags_alone_and_a_workload_on_standard_input() {
    let out = stdout_of(&[
        "validate",
        "--rw",
        "randread",
        "--bs",
        "16k",
        "--size",
        "8m",
        "--duration",
        "5s",
        "--dir",
        "/tmp/d",
    ]);
    assert!(out.starts_with("flags: ok (posix randread, 1 thread, 5s)"), "{out}");
    let bad = ioscope().args(["validate", "--bs", "4q"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--bs"), "{bad:?}");

    let piped = |text: &str, flags: &[&str]| {
        let mut child = ioscope()
            .args(["validate", "-"])
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let ok = piped("rw = \"randwrite\"\nsize = \"4m\"\nduration = \"3s\"\ndir = \"/tmp/d\"\n", &["--threads", "2"]);
    assert!(ok.status.success(), "{ok:?}");
    assert!(String::from_utf8_lossy(&ok.stdout).starts_with("-: ok (posix randwrite, 2 threads, 3s)"), "{ok:?}");
    let wrong = piped("rw = \"randwrite\"\nbs = \"4q\"\ndir = \"/tmp/d\"\n", &[]);
    assert_eq!(wrong.status.code(), Some(2), "{wrong:?}");
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("-:2:"), "names standard input's line: {wrong:?}");
}

#[test]
fn a_switch_takes_fios_value_after_a_space() {
    // `--direct 1` is `--direct=1`, not a workload file named "1"; a file after a bare switch stays a file.
    let out = stdout_of(&[
        "validate",
        "--rw",
        "read",
        "--size",
        "4m",
        "--direct",
        "1",
        "--duration",
        "2s",
        "--dir",
        "/tmp/d",
    ]);
    assert!(out.starts_with("flags: ok"), "{out}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("w.toml");
    std::fs::write(&file, "rw = \"read\"\nsize = \"4m\"\nduration = \"2s\"\ndir = \"/tmp/d\"\n").unwrap();
    let out = stdout_of(&["validate", "--direct", file.to_str().unwrap()]);
    assert!(out.contains("w.toml: ok"), "{out}");
}

/// The plan hash of a 1-second run on engine null with `flags` (from `ioscope show --json`).
fn plan_of_run(dir: &std::path::Path, flags: &[&str]) -> String {
    let out = dir.join(format!("r{}.db", std::fs::read_dir(dir).unwrap().count()));
    let data = dir.join("data");
    let data = data.to_str().unwrap();
    let base = ["run", "--engine", "null", "--duration", "1s", "--size", "1m", "--dir", data];
    let mut args: Vec<&str> = base.to_vec();
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--out", out.to_str().unwrap()]);
    run_ok(&args);
    let shown: serde_json::Value =
        serde_json::from_str(&stdout_of(&["show", "--json", out.to_str().unwrap()])).unwrap();
    shown["workload"]["hash"].as_str().unwrap().to_string()
}

/// `flags` refused before any I/O, exit 2, with a message naming `flag`.
fn refused_naming(flags: &[&str], flag: &str) {
    let out = ioscope().arg("validate").args(["--dir", "/tmp/d", "--size", "1m"]).args(flags).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{flags:?}: {out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with(&format!("{flag} ")) && err.contains("error: expected"), "{flags:?}: {err}");
}

#[test]
fn fios_bssplit_flag_is_a_weighted_bs_list_with_a_space_or_an_equals_sign() {
    let dir = tempfile::tempdir().unwrap();
    let native = plan_of_run(dir.path(), &["--bs", "4k:60,64k:40"]);
    assert_eq!(plan_of_run(dir.path(), &["--bssplit", "4k/60:64k/40"]), native);
    assert_eq!(plan_of_run(dir.path(), &["--bssplit=4k/60:64k/40"]), native);
    refused_naming(&["--bssplit", "4k/200"], "--bssplit");
    refused_naming(&["--bssplit=4k/60,8k/40"], "--bssplit");
}

#[test]
fn fios_rwmixwrite_flag_is_rwmix_read_100_minus_it_with_a_space_or_an_equals_sign() {
    let dir = tempfile::tempdir().unwrap();
    let native = plan_of_run(dir.path(), &["--rw", "randrw", "--rwmix-read", "70"]);
    assert_eq!(plan_of_run(dir.path(), &["--rw", "randrw", "--rwmixwrite", "30"]), native);
    assert_eq!(plan_of_run(dir.path(), &["--rw", "randrw", "--rwmixwrite=30"]), native);
    refused_naming(&["--rw", "randrw", "--rwmixwrite", "130"], "--rwmixwrite");
}

#[test]
fn fios_filename_flag_is_the_working_set_directory_with_a_space_or_an_equals_sign() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let native = plan_of_run(dir.path(), &[]);
    let file = data.join("f1");
    let file = file.to_str().unwrap();
    assert_eq!(plan_of_run(dir.path(), &["--filename", file]), native);
    let with_equals = format!("--filename={file}");
    assert_eq!(plan_of_run(dir.path(), &[with_equals.as_str()]), native);
    assert!(!std::path::Path::new(file).exists(), "the working set is ioscope's own files, not {file}");
    refused_naming(&["--filename", "/a/x:/b/y"], "--filename");
}

#[test]
fn fios_ioengine_libaio_flag_runs_on_uring_with_a_warning_with_a_space_or_an_equals_sign() {
    for flags in [&["--ioengine", "libaio"][..], &["--ioengine=libaio"]] {
        let out = ioscope().args(["validate", "--dir", "/tmp/d", "--size", "1m"]).args(flags).output().unwrap();
        assert!(out.status.success(), "{flags:?}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("flags: ok (uring randread"), "{flags:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("warning: --ioengine=libaio: ioscope runs it on io_uring"), "{flags:?}: {err}");
    }
    // ioscope's own flag names ioscope's engines only.
    refused_naming(&["--engine", "libaio"], "--engine");
}

#[test]
fn fios_output_flag_is_refused_saying_where_the_report_and_the_results_go() {
    for flags in [&["--output", "report.txt"][..], &["--output=report.txt"]] {
        let out = ioscope().args(["validate", "--dir", "/tmp/d", "--size", "1m"]).args(flags).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("--output report.txt: error") && err.contains("--out FILE"), "{flags:?}: {err}");
    }
}
