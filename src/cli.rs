//! Command-line definitions. Workload flags are taken as raw strings and validated
//! together with the workload file, so every error is reported at once.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "ioscope",
    version,
    about = "A storage performance lab: apply load, record every I/O into per-second histograms, show what happened."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run a workload (a TOML file, flags, or both; flags override the file).
    Run(Box<RunArgs>),
    /// Check a workload (a file, `-` for standard input, flags, or both, as `run` takes them) and print every problem; runs nothing.
    Validate {
        /// Workload file (TOML), or `-` to read it from standard input; without one the flags alone are checked.
        file: Option<PathBuf>,
        #[command(flatten)]
        workload: WorkloadFlags,
    },
    /// Print the summary of a results file.
    Show {
        file: PathBuf,
        /// Print the versioned JSON summary instead of the table.
        #[arg(long)]
        json: bool,
        /// Print each host's system record instead (CPU, governor, memory, kernel and its
        /// command line, target file system and device, NICs, route, NFS, versions).
        #[arg(long)]
        system: bool,
        #[command(flatten)]
        out: OutFile,
    },
    /// Compare two runs' figures per step and operation: the difference of B from A, with its 95% confidence interval when both have repeats (docs/compare.md).
    Compare {
        /// The results file of run A (the baseline).
        a: PathBuf,
        /// The results file of run B (compared with A).
        b: PathBuf,
        /// Print the versioned JSON comparison (schema ioscope.compare/1) instead of the table.
        #[arg(long)]
        json: bool,
        /// Exit 3 when a difference of B from A holds this, e.g. 'read.iops < -5%' or 'total.latency.p99 > 10%' (repeatable; with repeats on both sides only a significant difference fails; docs/compare.md).
        #[arg(long = "fail-if", value_name = "CONDITION")]
        fail_if: Vec<String>,
    },
    /// Print the per-second series of a results file.
    Export {
        file: PathBuf,
        #[arg(long, value_enum, default_value = "csv")]
        format: ExportFormat,
        #[command(flatten)]
        out: OutFile,
    },
    /// Run a short mixed workload in a temporary directory and print its summary.
    Demo(DemoArgs),
    /// Convert another tool's workload file into an ioscope workload file.
    Import {
        #[command(subcommand)]
        from: ImportFrom,
    },
    /// Serve the Analytics UI (heat maps, breakdowns, drill-down, compare) for results files.
    Ui {
        /// Results files; the first is shown, the others can be compared with it.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Address to serve on. Any address other than loopback requires the printed token.
        #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_LISTEN)]
        listen: SocketAddr,
        #[command(flatten)]
        tls: TlsFlags,
    },
    /// Write a self-contained HTML report (summary, steps, system, charts, heat maps).
    Report {
        file: PathBuf,
        /// The HTML file to write.
        #[arg(short, long, value_name = "FILE")]
        out: PathBuf,
        /// Replace the output file if it exists.
        #[arg(long)]
        force: bool,
    },
    /// Render a heat map (time x value, colour = count) of a results file as a PNG image.
    Plot(PlotArgs),
    /// Run load for a coordinator on another host (`ioscope run --hosts ...`); see docs/hosts.md.
    Agent(AgentArgs),
    /// After a crash (of ioscope, its host or the target): re-read every block a run's journal (`run --verify --journal FILE`) says was written, and report durable writes lost or stale, corrupt and misplaced blocks (exit 1), and acknowledged writes never made durable that are gone (allowed); see docs/verify.md.
    Verify {
        /// The journal the run kept (`ioscope run --verify --journal FILE`).
        #[arg(long, value_name = "FILE")]
        journal: PathBuf,
        /// The target did not crash: every acknowledged write must be there, durable or not.
        #[arg(long)]
        strict: bool,
        /// Print the versioned JSON report (schema ioscope.verify-journal/1) instead of the text.
        #[arg(long)]
        json: bool,
    },
    /// Record what this machine (a file server, say) does, per second, without load: CPU, memory, network, disks, named processes, and with eBPF block and system-call latency; see docs/probe.md.
    Probe(ProbeArgs),
    /// Print a shell completion script for every command and flag (install: see the README).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff, section 1) of ioscope or of one command, or write every page into a directory (install: see the README).
    Man {
        /// The command whose page to print, as in `ioscope man run` or `ioscope man import fio`.
        command: Vec<String>,
        /// Write every page (ioscope.1, ioscope-run.1, ...) into this directory instead.
        #[arg(long, value_name = "DIR", conflicts_with = "command")]
        dir: Option<PathBuf>,
    },
}

/// `ioscope probe`: target-side samplers alone.
#[derive(Args)]
pub struct ProbeArgs {
    /// Results file to record into until stopped (Ctrl-C) or for --duration (never over an existing file).
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Stop after this long (30s, 5m, 1h).
    #[arg(long, value_name = "DUR")]
    pub duration: Option<String>,
    /// A process (its name, as in /proc/PID/comm) whose CPU and system calls are recorded. Repeatable; default ganesha.nfsd, nfsd, smbd, minio, versitygw.
    #[arg(long = "process", value_name = "NAME")]
    pub processes: Vec<String>,
    #[command(flatten)]
    pub listen: ProbeListenFlags,
}

/// `ioscope probe --listen`: serve the totals to Prometheus (docs/probe.md "Prometheus / OpenMetrics").
#[derive(Args, Clone, Default)]
pub struct ProbeListenFlags {
    /// Serve the current totals as OpenMetrics text at http://ADDR:PORT/metrics (for Prometheus) instead of recording, until stopped or for --duration. Any address other than loopback needs --token-file.
    #[arg(long, value_name = "ADDR:PORT", conflicts_with = "out")]
    pub listen: Option<SocketAddr>,
    /// The bearer token every scrape must carry (a file of one line, at least 16 characters); required with a --listen address other than loopback.
    #[arg(long, value_name = "FILE", requires = "listen")]
    pub token_file: Option<PathBuf>,
}

/// `ioscope run --metrics`: the run's client series for Prometheus.
#[derive(Args, Clone, Default)]
pub struct MetricsFlags {
    /// Serve the run's client series (ops, bytes, errors, latency histograms per op and workload) as OpenMetrics text at http://ADDR:PORT/metrics while it runs. Any address other than loopback needs --metrics-token-file.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<SocketAddr>,
    /// The bearer token every scrape of --metrics must carry (a file of one line, at least 16 characters).
    #[arg(long, value_name = "FILE", requires = "metrics")]
    pub metrics_token_file: Option<PathBuf>,
}

/// `ioscope agent`: over an ssh session (started by the coordinator) or listening.
#[derive(Args)]
#[command(group(clap::ArgGroup::new("transport").required(true).args(["stdio", "listen"])))]
pub struct AgentArgs {
    /// Speak the protocol over stdin and stdout (the coordinator starts the agent this way
    /// over ssh and sends the call token as the first line).
    #[arg(long)]
    pub stdio: bool,
    /// Listen on this address for a coordinator (needs --token-file and --root; and
    /// --tls-cert/--tls-key unless the address is loopback).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<SocketAddr>,
    /// The file holding the token every call must carry (at least 16 characters).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// The only directory the agent creates, reads or writes files under.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Stop a running load after this long without a call from the coordinator (e.g. 10s);
    /// a run's own host_timeout replaces it once the run is prepared.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    pub coordinator_timeout: String,
    /// Serve the protocol over TLS with this certificate chain (PEM, server certificate first).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

/// Where the UI listens unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

/// `plot --stat`'s help: the distributions of the statistics registry.
fn plot_stat_help() -> String {
    use ioscope_metrics::stat::{all, Kind};
    let names: Vec<&str> = all().filter(|s| s.kind == Kind::Distribution).map(|s| s.name).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("Distribution to draw: {} or {last}", rest.join(", ")),
        _ => format!("Distribution to draw: {}", names.join("")),
    }
}

#[derive(Args)]
pub struct PlotArgs {
    pub file: PathBuf,
    #[arg(long, default_value = "latency", help = plot_stat_help())]
    pub stat: String,
    /// One panel per value of this dimension: op, workload, host or step.
    #[arg(long, value_name = "DIMENSION")]
    pub by: Option<String>,
    /// Only these rows, as DIMENSION:VALUE[;DIMENSION:VALUE...] (e.g. op:write).
    #[arg(long = "where", value_name = "FILTER")]
    pub filter: Option<String>,
    /// The PNG file to write.
    #[arg(short, long, value_name = "FILE")]
    pub out: PathBuf,
    /// Image width in pixels (200 to 8192).
    #[arg(long, default_value_t = 1200, value_parser = clap::value_parser!(u32).range(200..=8192))]
    pub width: u32,
    /// Height of each panel in pixels (80 to 4096).
    #[arg(long, default_value_t = 320, value_parser = clap::value_parser!(u32).range(80..=4096))]
    pub height: u32,
    /// Replace the output file if it exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Subcommand)]
pub enum ImportFrom {
    /// A vdbench parameter file (fsd, fwd, rd): every unsupported parameter is reported.
    Vdbench {
        file: PathBuf,
        #[command(flatten)]
        out: OutFile,
    },
    /// A Filebench workload (.f: filesets, processes, threads, flowops, run): what has no
    /// equivalent is reported.
    Filebench {
        file: PathBuf,
        #[command(flatten)]
        out: OutFile,
    },
    /// A fio job file ([global] and job sections): options without an equivalent are reported.
    Fio {
        /// The fio job file.
        file: PathBuf,
        #[command(flatten)]
        out: OutFile,
        /// Import only this stonewall group (1 = the jobs before the first stonewall).
        #[arg(long, value_name = "N")]
        group: Option<usize>,
    },
}

/// `-o FILE` and `--force` for a command that otherwise prints to standard output.
#[derive(Args, Default)]
pub struct OutFile {
    /// Write to this file instead of standard output (a new file; see --force).
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Replace the output file if it exists.
    #[arg(long, requires = "out")]
    pub force: bool,
}

/// How a run shows its progress on standard error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ProgressMode {
    /// `bar` on a terminal, `lines` otherwise.
    #[default]
    Auto,
    /// One line rewritten in place: percentage, ETA, step, threads, IOPS, MB/s, p99.
    Bar,
    /// One line per second: time, step, threads, IOPS, MB/s, mean and p99 latency, errors.
    Lines,
    /// Nothing.
    None,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
}

#[derive(Args)]
pub struct RunArgs {
    /// Workload file (TOML), or `-` to read it from standard input. See examples/.
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub workload: WorkloadFlags,
    #[command(flatten)]
    pub output: OutputFlags,
    #[command(flatten)]
    pub probe: ProbeFlags,
    /// A condition on the run's figures, checked after it: SCOPE.FIGURE OP VALUE, as in 'read.latency.p99 < 2ms', 'total.iops >= 10k', 'total.errors == 0' (docs/checks.md). Repeatable; a failed check makes the exit code 3.
    #[arg(long = "check", value_name = "EXPR")]
    pub checks: Vec<String>,
    /// With --verify: keep each block's last acknowledged and durable write in FILE (a new file), so that `ioscope verify --journal FILE` can check the target after a crash of ioscope, its host or the target (docs/verify.md, "Journal").
    #[arg(long, value_name = "FILE")]
    pub journal: Option<PathBuf>,
}

/// Target-side samplers attached to a run (docs/probe.md).
#[derive(Args, Default, Clone)]
pub struct ProbeFlags {
    /// Record what the target does, in the run's seconds: local (this machine) or ssh://[USER@]HOST[:PORT] (an agent there, as with --hosts). Repeatable.
    #[arg(long = "probe", value_name = "WHERE")]
    pub at: Vec<String>,
    /// A process (its name, as in /proc/PID/comm) whose CPU and system calls the probe records. Repeatable; default ganesha.nfsd, nfsd, smbd, minio, versitygw.
    #[arg(long = "probe-process", value_name = "NAME")]
    pub processes: Vec<String>,
}

#[derive(Args)]
pub struct OutputFlags {
    /// Results file to create (SQLite; never over an existing file). Default: ioscope-YYYYMMDD-HHMMSS.db in the current directory.
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the JSON summary (schema ioscope.summary/1) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress (as --progress none) and no preparation messages.
    #[arg(long)]
    pub quiet: bool,
    /// Progress on stderr: auto (a bar on a terminal, one line per second otherwise), bar, lines or none.
    #[arg(long, value_enum, value_name = "MODE", default_value = "auto")]
    pub progress: ProgressMode,
    /// Serve the Analytics UI during the run, updated every second (and after it, until Ctrl-C).
    #[arg(long)]
    pub ui: bool,
    /// Address for --ui. Any address other than loopback requires the printed token.
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub tls: TlsFlags,
    #[command(flatten)]
    pub metrics: MetricsFlags,
}

/// HTTPS for the Analytics UI (docs/security.md).
#[derive(Args, Clone, Default)]
pub struct TlsFlags {
    /// Serve the UI over HTTPS with this certificate chain (PEM, server certificate first).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

impl TlsFlags {
    pub fn files(&self) -> Option<ioscope_web::tls::TlsFiles> {
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(ioscope_web::tls::TlsFiles { cert: cert.clone(), key: key.clone() }),
            _ => None,
        }
    }
}

#[derive(Args, Default)]
pub struct DemoArgs {
    /// Keep the results file here instead of the temporary directory (never over an existing file).
    #[arg(short, long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Seconds to run.
    #[arg(long, default_value = "8s")]
    pub duration: String,
    /// Progress on stderr: auto, bar, lines or none (see `ioscope run --help`).
    #[arg(long, value_enum, value_name = "MODE", default_value = "auto")]
    pub progress: ProgressMode,
}

/// The workload flags, built from the key table (`ioscope_workload::keys`): each key's flag
/// in every spelling (`--rwmix-read`, `--rwmix_read`, fio's `--rwmixread`) and fio's options
/// (no-ops, switches, refusals). Values are taken as typed and validated by the workload
/// crate, with the file, so every error is reported at once.
#[derive(Default)]
pub struct WorkloadFlags {
    pub flags: ioscope_workload::Flags,
}

/// Help heading of the workload flags.
const WORKLOAD_HEADING: &str = "Workload (TOML keys of the same name; see docs/workload.md)";
/// Help heading of fio's options that are accepted and ignored.
const FIO_HEADING: &str = "fio options accepted for compatibility";
/// Clap ids of the workload flags: the flag's spelling under this prefix.
const ID_PREFIX: &str = "workload:";

/// A form that may start with `-` (a negative number reaches the workload crate, which
/// says what is wrong with it, instead of being taken for a flag).
fn numeric(form: &str) -> bool {
    matches!(form, "N" | "PCT" | "SIZE")
}

/// The values of a flag whose value is optional (form `[fail|report]`): `fail|report`.
fn optional_values(form: &str) -> Option<&str> {
    form.strip_prefix('[')?.strip_suffix(']')
}

/// Joins `--verify report` into `--verify=report` for flags whose value is optional, and
/// `--direct 1` into `--direct=1` for switches, when the next word is one of the flag's
/// values; any other next word (the workload file) is left alone, so a bare `--verify`
/// never swallows it.
pub fn join_optional_values(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    use ioscope_workload::keys::{self, Section};
    // Switches take fio's `--direct 1` too; every spelling of the key is joined.
    let optional: Vec<(String, Vec<&str>)> = keys::in_section(Section::Top)
        .filter(|k| k.flag.is_some())
        .filter_map(|k| {
            let values = if k.is_switch() { Some("0|1") } else { optional_values(k.form) }?;
            Some(k.spellings().into_iter().map(move |s| (format!("--{s}"), values.split('|').collect())))
        })
        .flatten()
        .collect();
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter().peekable();
    while let Some(a) = it.next() {
        let joined = a.to_str().and_then(|flag| {
            let (_, values) = optional.iter().find(|(f, _)| f == flag)?;
            let next = it.peek()?.to_str()?;
            values.contains(&next).then(|| format!("{flag}={next}"))
        });
        match joined {
            Some(j) => {
                it.next();
                out.push(j.into());
            }
            None => out.push(a),
        }
        if out.last().is_some_and(|a| a == "--") {
            out.extend(it);
            break;
        }
    }
    out
}

/// `--set`'s long help: every key it accepts.
fn set_long_help() -> String {
    let keys = ioscope_workload::keys::settable().join(", ");
    format!(
        "Set any workload key, also inside sections: --set dataset.files=10 --set workload.threads=4.\n\nKeys: {keys}."
    )
}

impl clap::Args for WorkloadFlags {
    fn augment_args(mut cmd: clap::Command) -> clap::Command {
        use clap::{Arg, ArgAction};
        use ioscope_workload::keys::{self, FioMeaning, Section};
        for key in keys::in_section(Section::Top) {
            let Some(flag) = key.flag else { continue };
            for (i, spelling) in key.spellings().into_iter().enumerate() {
                let mut arg =
                    Arg::new(format!("{ID_PREFIX}{spelling}")).long(spelling).action(ArgAction::Set).hide(i > 0);
                if key.is_switch() {
                    // `--direct`, `--direct=1`, `--direct=0` (fio's form).
                    arg = arg.num_args(0..=1).require_equals(true).default_missing_value("").value_name("0|1");
                } else if let Some(values) = optional_values(key.form) {
                    // `--verify`, `--verify=report`; `--verify report` is joined by [`join_optional_values`].
                    arg = arg.num_args(0..=1).require_equals(true).default_missing_value("").value_name(values);
                } else {
                    arg = arg.value_name(key.form).allow_hyphen_values(numeric(key.form));
                }
                if i == 0 {
                    let fio: Vec<String> =
                        key.fio.iter().filter(|f| **f != flag && **f != key.name).map(|f| format!("--{f}")).collect();
                    let mut help = key.help_text().trim_end_matches('.').to_string();
                    if !fio.is_empty() {
                        help.push_str(&format!(" (fio: {})", fio.join(", ")));
                    }
                    help.push('.');
                    if !key.default.is_empty() {
                        help.push_str(&format!(" [default: {}]", key.default));
                    }
                    arg = arg.help(help).help_heading(WORKLOAD_HEADING);
                    if let Some(c) = key.short {
                        arg = arg.short(c);
                    }
                }
                cmd = cmd.arg(arg);
            }
        }
        cmd = cmd.arg(
            Arg::new(format!("{ID_PREFIX}set"))
                .long("set")
                .value_name("KEY=VALUE")
                .action(ArgAction::Append)
                .help("Set any workload key, also inside sections: --set dataset.files=10 --set workload.threads=4.")
                .long_help(set_long_help())
                .help_heading(WORKLOAD_HEADING),
        );
        for option in keys::FIO_OPTIONS {
            for (i, spelling) in keys::fio_spellings(option).into_iter().enumerate() {
                let mut arg = Arg::new(format!("{ID_PREFIX}{spelling}"))
                    .long(spelling)
                    .action(ArgAction::Set)
                    .num_args(0..=1)
                    .default_missing_value("")
                    .hide(true);
                match option.meaning {
                    // A refused option's value is taken as `--filename X` too, so that it is
                    // named in the refusal instead of being taken for the workload file.
                    FioMeaning::Refused(_) | FioMeaning::Only { .. } => arg = arg.value_name("VALUE"),
                    // `--bssplit 4k/60:64k/40` and `--bssplit=4k/60:64k/40`.
                    FioMeaning::Converted { key, .. } => {
                        arg = arg.value_name("VALUE");
                        if i == 0 {
                            let help =
                                format!("Converted to --{} as the fio importer converts it.", key.replace('_', "-"));
                            arg = arg.hide(false).help(help).help_heading(FIO_HEADING);
                        }
                    }
                    FioMeaning::Switch { .. } => arg = arg.require_equals(true).value_name("0|1"),
                    FioMeaning::NoOp(why) => {
                        arg = arg.require_equals(true).value_name("0|1");
                        if i == 0 {
                            arg = arg.hide(false).help(format!("Ignored: {why}.")).help_heading(FIO_HEADING);
                        }
                    }
                }
                cmd = cmd.arg(arg);
            }
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl clap::FromArgMatches for WorkloadFlags {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut given: Vec<(usize, String, String)> = Vec::new();
        let mut sets = Vec::new();
        for id in m.ids() {
            let Some(spelling) = id.as_str().strip_prefix(ID_PREFIX) else { continue };
            if m.value_source(id.as_str()) != Some(clap::parser::ValueSource::CommandLine) {
                continue;
            }
            let values = m.get_many::<String>(id.as_str()).into_iter().flatten();
            let indices = m.indices_of(id.as_str()).into_iter().flatten();
            if spelling == "set" {
                sets.extend(values.cloned());
                continue;
            }
            for (index, value) in indices.zip(values) {
                given.push((index, spelling.to_string(), value.clone()));
            }
        }
        // Command-line order, so that a later flag for the same key wins.
        given.sort_by_key(|(index, _, _)| *index);
        let given = given.into_iter().map(|(_, flag, text)| (flag, text)).collect();
        Ok(WorkloadFlags { flags: ioscope_workload::Flags { given, sets } })
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}
