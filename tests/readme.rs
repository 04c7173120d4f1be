//! The README's examples, run as written: every ```sh block of README.md, in order, in one
//! bash session started at the clone's top directory with this build's `ioscope` first on
//! PATH. A block is left out only under a `<!-- readme test: not run, WHY -->` line that
//! says why. Each command must exit as its comment says (`exit 2`), else 0. The NFS, S3 and
//! SMB servers are the repository's scripts, which the examples start themselves (root);
//! scripts/test.sh runs this alone, after the stages that use those servers.

use std::path::Path;
use std::process::Command;

/// A command of a block: its text (continuation lines joined) and the exit code asked.
struct Example {
    line: usize,
    text: String,
    exit: i32,
}

/// The commands of the README's runnable ```sh blocks, and the reasons given for the others.
fn examples(readme: &str) -> (Vec<Example>, Vec<String>) {
    let (mut out, mut skipped) = (Vec::new(), Vec::new());
    let lines: Vec<&str> = readme.lines().collect();
    let mut k = 0;
    while k < lines.len() {
        if lines[k] != "```sh" {
            k += 1;
            continue;
        }
        let note = k.checked_sub(1).map(|p| lines[p]).unwrap_or("");
        let skip = note.strip_prefix("<!-- readme test: not run, ").and_then(|r| r.strip_suffix(" -->"));
        k += 1;
        let mut pending: Option<(usize, String)> = None;
        while k < lines.len() && lines[k] != "```" {
            let line = lines[k];
            let (start, mut text) = pending.take().unwrap_or((k + 1, String::new()));
            text.push_str(line.trim_end_matches('\\'));
            text.push(' ');
            if line.ends_with('\\') {
                pending = Some((start, text));
            } else if skip.is_none() && !line.trim_start().starts_with('#') {
                let exit = if comment_of(&text).contains("exit 2") { 2 } else { 0 };
                out.push(Example { line: start, text, exit });
            }
            k += 1;
        }
        if let Some(why) = skip {
            assert!(why.len() > 10, "README.md line {k}: a block left out says why: {note}");
            skipped.push(why.to_string());
        }
        k += 1;
    }
    (out, skipped)
}

/// The trailing `# comment` of a command line (outside quotes).
fn comment_of(text: &str) -> &str {
    let (mut single, mut double) = (false, false);
    for (i, c) in text.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && (i == 0 || text[..i].ends_with(' ')) => return &text[i..],
            _ => {}
        }
    }
    ""
}

#[test]
fn the_readme_is_read_into_its_commands_and_every_block_left_out_says_why() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let (run, skipped) = examples(&readme);
    assert!(run.len() >= 20, "{} commands", run.len());
    assert!(run.iter().any(|e| e.exit == 2 && e.text.contains("validate examples/bad.toml")));
    assert!(run.iter().all(|e| !e.text.contains("/mnt/test")), "examples keep to their own directory");
    assert!(skipped.len() <= 6, "{skipped:?}");
}

#[test]
#[ignore = "starts nfs-ganesha, MinIO and Samba from the repository's scripts (root): scripts/test.sh runs it alone"]
fn every_readme_example_runs_as_written_and_exits_as_it_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let (run, _) = examples(&readme);
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_ioscope")).parent().unwrap();
    let mut script = String::from("set -u\n");
    for (k, e) in run.iter().enumerate() {
        // The marker goes to both streams so that each example's own stderr can be shown.
        script.push_str(&format!("{}\nrc=$?; echo \"@@readme {k} $rc\"; echo \"@@readme {k} $rc\" >&2\n", e.text));
    }
    // The scratch directory the first example made.
    script.push_str("[ -n \"${d:-}\" ] && rm -rf \"$d\"\n");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("bash").arg("-c").arg(&script).current_dir(root).env("PATH", path).output().unwrap();
    // The servers the examples started are stopped whatever happened.
    for stop in
        [&["scripts/nfs-ganesha.sh", "stop"][..], &["scripts/s3-server.sh", "stop"], &["scripts/smb-server.sh", "stop"]]
    {
        let _ = Command::new(stop[0]).args(&stop[1..]).current_dir(root).output();
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let codes: Vec<(usize, i32)> = stdout
        .lines()
        .filter_map(|l| {
            let mut f = l.strip_prefix("@@readme ")?.split(' ');
            Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
        })
        .collect();
    let tail: String =
        stderr.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
    assert_eq!(codes.len(), run.len(), "every example ran:\n{tail}");
    let wrong: Vec<String> = codes
        .iter()
        .filter(|(k, code)| *code != run[*k].exit)
        .map(|(k, code)| {
            format!(
                "README.md line {}: exit {code}, not {}: {}\n--- its stderr\n{}",
                run[*k].line,
                run[*k].exit,
                run[*k].text,
                stderr_of(&stderr, *k)
            )
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// What example `k` wrote to stderr: the lines between the markers of `k - 1` and `k`, the
/// last 80 of them.
fn stderr_of(stderr: &str, k: usize) -> String {
    let mut lines: Vec<&str> = Vec::new();
    for line in stderr.lines() {
        match line.strip_prefix("@@readme ").and_then(|r| r.split(' ').next()?.parse::<usize>().ok()) {
            Some(done) if done == k => break,
            Some(_) => lines.clear(),
            None => lines.push(line),
        }
    }
    let from = lines.len().saturating_sub(80);
    lines[from..].join("\n")
}
