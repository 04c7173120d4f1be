//! One measurement of one SMB client library: 4 KiB random reads or writes on one file of
//! the share in `IOSCOPE_SMB_URL` (as started by scripts/smb-server.sh), for a fixed time,
//! at a fixed number of requests in flight. Prints one JSON line: requests, requests per
//! second, this process's CPU time per request (getrusage, all threads) and smbd's CPU time
//! per request (its process group's utime+stime from /proc), and the dialect, signing and
//! encryption smbd reports for the connection (smbstatus).
//!
//! Both clients are driven the way an ioscope engine would drive them: from one thread, in a
//! loop that submits until the depth is reached and then reaps at least one completion.
//!
//! Usage: smbclient-choice --client crate|libsmbclient --op read|write --file NAME
//!        --size BYTES [--depth N] [--secs S] [--encrypt] [--sign] [--runtime current|multi]
//!        [--nodelay]
//!
//! libsmbclient runs also record each request's latency (p50_ms, p99_ms in the JSON: exact
//! order statistics of every request, no histogram); crate runs print null there.

mod libsmb;
mod smbcrate;

use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Op {
    Read,
    Write,
}

/// What every client needs to know: where, who, which file, and how.
pub struct Target {
    pub host: String,
    pub port: u16,
    pub share: String,
    pub user: String,
    pub password: String,
    pub file: String,
    pub file_size: u64,
    pub op: Op,
    pub depth: usize,
    pub duration: Duration,
    /// Require SMB3 encryption of every message.
    pub encrypt: bool,
    /// Require signing (libsmbclient; the crate always signs a non-guest session).
    pub sign: bool,
    /// The crate only: tokio's current-thread runtime (driven inside reap) or a
    /// multi-thread one with one worker thread.
    pub multi_thread_runtime: bool,
    /// The crate only: set TCP_NODELAY on its socket (see smbcrate.rs).
    pub nodelay: bool,
}

pub const BLOCK: usize = 4096;

/// Counts of one timed loop.
#[derive(Default)]
pub struct Counts {
    pub requests: u64,
    /// Requests that failed or moved fewer than BLOCK bytes.
    pub errors: u64,
    pub first_error: Option<String>,
    /// The crate only: reap gave up waiting (see smbcrate.rs).
    pub hung: bool,
    /// libsmbclient only: each request's time, from before its seek to its return (one
    /// request in flight, so nothing waits to be sent).
    pub latencies_ns: Vec<u64>,
}

/// The q-quantile (0..1) of the recorded latencies, in ms; "null" when none were.
fn quantile_ms(sorted: &[u64], q: f64) -> String {
    if sorted.is_empty() {
        return "null".into();
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    format!("{:.4}", sorted[i.min(sorted.len() - 1)] as f64 / 1e6)
}

/// Random 4 KiB-aligned offsets in the file (xorshift64*; the same sequence for every client).
pub struct Offsets {
    state: u64,
    blocks: u64,
}

impl Offsets {
    pub fn new(file_size: u64) -> Self {
        Offsets { state: 0x9E37_79B9_7F4A_7C15, blocks: (file_size / BLOCK as u64).max(1) }
    }
    pub fn next_offset(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        (self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) % self.blocks) * BLOCK as u64
    }
}

/// CPU time (user + system) of this process, all threads.
fn self_cpu() -> Duration {
    // SAFETY: getrusage writes into the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CPU time (user + system, in clock ticks) of every live process in smbd's process group
/// (scripts/smb-server.sh starts smbd with setsid; the connection's own smbd is a child).
fn smbd_ticks(pgid: Option<u32>) -> u64 {
    let Some(pgid) = pgid else { return 0 };
    let mut total = 0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let Some(rest) = stat.rfind(") ").map(|i| &stat[i + 2..]) else { continue };
        let f: Vec<&str> = rest.split_whitespace().collect();
        // rest starts at field 3 (state): pgrp is field 5, utime 14, stime 15.
        if f.len() > 12 && f[2] == pgid.to_string() {
            total += f[11].parse::<u64>().unwrap_or(0) + f[12].parse::<u64>().unwrap_or(0);
        }
    }
    total
}

fn ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }) as f64
}

/// What smbd says about our connection: `smbstatus -p` lists each session with its
/// protocol version, encryption and signing. Only one client is connected during a run.
fn smb_status(conf: &str) -> String {
    let out = std::process::Command::new("smbstatus").args(["-s", conf, "-p"]).output();
    let Ok(out) = out else { return "smbstatus failed".into() };
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter(|l| l.contains("ioscope") && l.contains("SMB"))
        .map(|l| l.split_whitespace().skip(4).collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The measurement around a client's timed loop: the client calls `mark` when it starts
/// timing and `stop` when the time is up, before it closes anything.
pub struct Meter {
    smbd_pgid: Option<u32>,
    started: Option<(Instant, Duration, u64)>,
    result: Option<(Duration, Duration, f64)>,
    pub status_conf: Option<String>,
    pub status: String,
}

impl Meter {
    pub fn mark(&mut self) {
        if let Some(conf) = &self.status_conf {
            self.status = smb_status(conf);
        }
        self.started = Some((Instant::now(), self_cpu(), smbd_ticks(self.smbd_pgid)));
    }
    /// Ends the timed interval (before the client closes its file and connection).
    pub fn stop(&mut self) {
        let (t0, c0, s0) = self.started.expect("mark was called");
        let wall = t0.elapsed();
        let cpu = self_cpu() - c0;
        let smbd = smbd_ticks(self.smbd_pgid).saturating_sub(s0) as f64 / ticks_per_sec();
        self.result = Some((wall, cpu, smbd));
    }
}

fn parse_url(url: &str) -> Result<(String, String, u16, String), String> {
    // smb://USER@HOST:PORT/SHARE
    let rest = url.strip_prefix("smb://").ok_or("IOSCOPE_SMB_URL must start with smb://")?;
    let (user, rest) = rest.split_once('@').ok_or("IOSCOPE_SMB_URL has no user@")?;
    let (hostport, share) = rest.split_once('/').ok_or("IOSCOPE_SMB_URL has no /share")?;
    let (host, port) = hostport.rsplit_once(':').unwrap_or((hostport, "445"));
    let port = port.parse().map_err(|_| format!("bad port in IOSCOPE_SMB_URL: {port}"))?;
    Ok((user.into(), host.into(), port, share.trim_end_matches('/').into()))
}

fn main() {
    if let Err(e) = run() {
        eprintln!("smbclient-choice: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut client, mut op, mut file, mut size) = (None, None, None, None);
    let (mut depth, mut secs, mut encrypt, mut sign, mut multi) = (1, 5.0, false, false, false);
    let mut nodelay = false;
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--client" => client = Some(val()?),
            "--op" => {
                op = Some(match val()?.as_str() {
                    "read" => Op::Read,
                    "write" => Op::Write,
                    o => return Err(format!("--op {o}: expected read or write")),
                })
            }
            "--file" => file = Some(val()?),
            "--size" => size = Some(val()?.parse::<u64>().map_err(|e| format!("--size: {e}"))?),
            "--depth" => depth = val()?.parse().map_err(|e| format!("--depth: {e}"))?,
            "--secs" => secs = val()?.parse().map_err(|e| format!("--secs: {e}"))?,
            "--encrypt" => encrypt = true,
            "--sign" => sign = true,
            "--nodelay" => nodelay = true,
            "--runtime" => {
                multi = match val()?.as_str() {
                    "current" => false,
                    "multi" => true,
                    r => return Err(format!("--runtime {r}: expected current or multi")),
                }
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    let client = client.ok_or("--client crate|libsmbclient is required")?;
    let url = std::env::var("IOSCOPE_SMB_URL").map_err(|_| "IOSCOPE_SMB_URL is not set")?;
    let pw_file =
        std::env::var("IOSCOPE_SMB_PASSWORD_FILE").map_err(|_| "IOSCOPE_SMB_PASSWORD_FILE is not set")?;
    let password = std::fs::read_to_string(&pw_file)
        .map_err(|e| format!("{pw_file}: {e}"))?
        .trim_end()
        .to_string();
    let (user, host, port, share) = parse_url(&url)?;
    let target = Target {
        host,
        port,
        share,
        user,
        password,
        file: file.ok_or("--file is required")?,
        file_size: size.ok_or("--size is required")?,
        op: op.ok_or("--op is required")?,
        depth,
        duration: Duration::from_secs_f64(secs),
        encrypt,
        sign,
        multi_thread_runtime: multi,
        nodelay,
    };
    // The server's state dir is the password file's: its pid file names smbd's group.
    let state_dir = std::path::Path::new(&pw_file).parent().unwrap_or(std::path::Path::new("."));
    let smbd_pgid = std::fs::read_to_string(state_dir.join("smbd.pid"))
        .ok()
        .and_then(|s| s.trim().parse().ok());
    let conf = state_dir.join("smb.conf");
    let mut meter = Meter {
        smbd_pgid,
        started: None,
        result: None,
        status_conf: conf.exists().then(|| conf.to_string_lossy().into_owned()),
        status: String::new(),
    };
    let mut counts = match client.as_str() {
        "crate" => smbcrate::run(&target, &mut meter)?,
        "libsmbclient" => {
            if target.depth != 1 {
                return Err("libsmbclient is synchronous: --depth must be 1".into());
            }
            libsmb::run(&target, &mut meter)?
        }
        c => return Err(format!("--client {c}: expected crate or libsmbclient")),
    };
    let (wall, cpu, smbd) = meter.result.ok_or("the client did not time its loop")?;
    let mut latencies = std::mem::take(&mut counts.latencies_ns);
    latencies.sort_unstable();
    let n = counts.requests.max(1) as f64;
    println!(
        "{{\"client\":\"{client}\",\"op\":\"{:?}\",\"depth\":{},\"encrypt\":{},\"sign\":{},\
         \"runtime\":\"{}\",\"nodelay\":{},\"requests\":{},\"errors\":{},\"hung\":{},\"wall_s\":{:.3},\
         \"requests_per_s\":{:.1},\"client_cpu_us_per_request\":{:.2},\
         \"smbd_cpu_us_per_request\":{:.2},\"p50_ms\":{},\"p99_ms\":{},\"smbstatus\":\"{}\",\"first_error\":\"{}\"}}",
        target.op,
        target.depth,
        target.encrypt,
        target.sign,
        if target.multi_thread_runtime { "multi" } else { "current" },
        target.nodelay,
        counts.requests,
        counts.errors,
        counts.hung,
        wall.as_secs_f64(),
        counts.requests as f64 / wall.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / n,
        smbd * 1e6 / n,
        quantile_ms(&latencies, 0.5),
        quantile_ms(&latencies, 0.99),
        meter.status.replace('"', "'"),
        counts.first_error.unwrap_or_default().replace('"', "'"),
    );
    Ok(())
}
