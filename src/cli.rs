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
    /// Check a workload file and print every problem; runs nothing.
    Validate { file: PathBuf },
    /// Print the summary of a results file.
    Show {
        file: PathBuf,
        /// Print the versioned JSON summary instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Print the per-second series of a results file.
    Export {
        file: PathBuf,
        #[arg(long, value_enum, default_value = "csv")]
        format: ExportFormat,
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
}

/// Where the UI listens unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

#[derive(Args)]
pub struct PlotArgs {
    pub file: PathBuf,
    /// Distribution to draw: latency, service_time, size or offset.
    #[arg(long, default_value = "latency")]
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
        /// Write the workload file here (never over an existing file) instead of stdout.
        #[arg(short, long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
}

#[derive(Args)]
pub struct RunArgs {
    /// Workload file (TOML). See examples/.
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub workload: WorkloadFlags,
    #[command(flatten)]
    pub output: OutputFlags,
}

#[derive(Args)]
pub struct OutputFlags {
    /// Results file to create (SQLite). Default: ioscope-YYYYMMDD-HHMMSS.db in the current directory.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the JSON summary (schema ioscope.summary/1) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress line and no preparation messages.
    #[arg(long)]
    pub quiet: bool,
    /// Serve the Analytics UI during the run, updated every second (and after it, until Ctrl-C).
    #[arg(long)]
    pub ui: bool,
    /// Address for --ui. Any address other than loopback requires the printed token.
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub tls: TlsFlags,
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
    /// Keep the results file here instead of the temporary directory.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Seconds to run.
    #[arg(long, default_value = "8s")]
    pub duration: String,
}

/// fio-like workload flags. Values are validated by the workload crate.
#[derive(Args, Default)]
#[command(next_help_heading = "Workload")]
pub struct WorkloadFlags {
    /// Access pattern: read, write, randread, randwrite, randrw.
    #[arg(long, value_name = "PATTERN")]
    pub rw: Option<String>,
    /// Share of reads in percent, for --rw randrw.
    #[arg(long, value_name = "PCT", allow_hyphen_values = true)]
    pub rwmix_read: Option<String>,
    /// Block size (4k) or weighted list (4k:60,32k:25,512k:10,4m:5).
    #[arg(long, value_name = "SIZE")]
    pub bs: Option<String>,
    /// Working-set size over all files (256m, 10g).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub size: Option<String>,
    /// Number of files the working set is split into.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub files: Option<String>,
    /// Worker threads.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub threads: Option<String>,
    /// I/Os in flight per thread (engine uring).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub iodepth: Option<String>,
    /// io_uring: let a kernel thread poll the submission queue.
    #[arg(long)]
    pub sqpoll: bool,
    /// How long to run (30s, 5m, 1h30m).
    #[arg(long, value_name = "DUR")]
    pub duration: Option<String>,
    /// Directory for the working set; ioscope creates and marks its own files there.
    #[arg(long, value_name = "PATH")]
    pub dir: Option<String>,
    /// Engine nfs: the NFSv3 server, export and directory, nfs://HOST[:PORT]/EXPORT[/DIR][?nconnect=N&uid=U&gid=G].
    #[arg(long, value_name = "URL")]
    pub target: Option<String>,
    /// O_DIRECT: bypass the page cache.
    #[arg(long)]
    pub direct: bool,
    /// After each write: none, fsync, fdatasync; or dsync (open with O_DSYNC).
    #[arg(long, value_name = "MODE")]
    pub sync: Option<String>,
    /// Open loop: issue this many I/Os per second over all threads; latency counts from the schedule.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub rate_iops: Option<String>,
    /// Unmeasured time before each step (excluded from the summary).
    #[arg(long, value_name = "DUR")]
    pub warmup: Option<String>,
    /// Step threads up: START-MAX[+ADD]/EVERY, e.g. 1-8/5s (1 to 8 threads, one more every 5 s).
    #[arg(long, value_name = "RAMP")]
    pub staircase: Option<String>,
    /// Set any workload key, also inside sections: --set dataset.files=10 --set workload.threads=4.
    #[arg(long, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Engine: posix (pread/pwrite), uring (io_uring, --iodepth in flight) or null (no I/O; measures ioscope itself).
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<String>,
    /// Write into files ioscope did not create.
    #[arg(long)]
    pub force: bool,
    /// Remove the files ioscope created after the run.
    #[arg(long)]
    pub cleanup: bool,
    /// End the run as failed past N failed I/Os or PCT% of the I/Os (default 1%; off: never).
    #[arg(long, value_name = "N|PCT%")]
    pub max_errors: Option<String>,
}

impl WorkloadFlags {
    pub fn to_flags(&self) -> ioscope_workload::Flags {
        ioscope_workload::Flags {
            rw: self.rw.clone(),
            rwmix_read: self.rwmix_read.clone(),
            bs: self.bs.clone(),
            size: self.size.clone(),
            files: self.files.clone(),
            threads: self.threads.clone(),
            iodepth: self.iodepth.clone(),
            duration: self.duration.clone(),
            dir: self.dir.clone(),
            target: self.target.clone(),
            direct: self.direct,
            sync: self.sync.clone(),
            rate_iops: self.rate_iops.clone(),
            engine: self.engine.clone(),
            warmup: self.warmup.clone(),
            staircase: self.staircase.clone(),
            sets: self.set.clone(),
            sqpoll: self.sqpoll,
            force: self.force,
            cleanup: self.cleanup,
            max_errors: self.max_errors.clone(),
        }
    }
}
