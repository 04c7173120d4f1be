//! Serving totals to Prometheus (crates/exposition): the token rule of `--metrics` and
//! `probe --listen` (a token file beyond loopback, checked before anything starts), and
//! `ioscope run --metrics`, which adds each second of the run's client series and of its
//! probes' target series.

use crate::cli::MetricsFlags;
use crate::{Failure, Kind};
use ioscope_exec::TargetFeed;
use ioscope_exposition::{serve_metrics, Exposition, MetricsServer, ServeError, Shared};
use ioscope_proto::Token;
use std::net::SocketAddr;
use std::path::Path;

/// Starts serving at `addr`: `flag` and `token_flag` name the flags in messages. A
/// non-loopback address without a token, an unreadable token file or an address that
/// cannot be used is invalid input (exit 2).
pub fn serve(
    addr: SocketAddr,
    token_file: Option<&Path>,
    flag: &str,
    token_flag: &str,
    state: Shared,
) -> Result<MetricsServer, Failure> {
    let token = token_file
        .map(Token::from_file)
        .transpose()
        .map_err(|e| Failure::said(Kind::InvalidInput, format!("{token_flag}: {e}")))?;
    let server = serve_metrics(addr, token, state).map_err(|e| {
        let text = match e {
            ServeError::NeedsToken { addr } => format!(
                "{flag} {addr}: not a loopback address, so every scrape must carry a token: give {token_flag} FILE (one line of at least 16 characters; Prometheus: authorization.credentials_file)"
            ),
            e => format!("{flag} {addr}: {e}"),
        };
        Failure::said(Kind::InvalidInput, text)
    })?;
    eprintln!("metrics (OpenMetrics): http://{}/metrics", server.addr);
    Ok(server)
}

/// `ioscope run --metrics`: the run's client series, served while it runs.
pub struct RunMetrics {
    state: Shared,
    /// The host label: this machine for a local run; none for a run on hosts (its
    /// seconds are every host's, merged).
    host: String,
    _server: MetricsServer,
}

impl RunMetrics {
    /// Starts the server of `--metrics` (None without it), before any I/O.
    pub fn start(flags: &MetricsFlags, host: String) -> Result<Option<RunMetrics>, Failure> {
        let Some(addr) = flags.metrics else { return Ok(None) };
        let state = Shared::new(std::sync::Mutex::new(Exposition::new()));
        let server =
            serve(addr, flags.metrics_token_file.as_deref(), "--metrics", "--metrics-token-file", state.clone())?;
        Ok(Some(RunMetrics { state, host, _server: server }))
    }

    /// Adds the second just written.
    pub fn second(&self, p: &ioscope_exec::Progress) {
        if let Ok(mut e) = self.state.lock() {
            e.add_client(&self.host, &p.ops);
        }
    }

    /// The probes (`--probe`), whose target seconds are served too as they reach the run.
    pub fn tee(&self, feeds: Vec<Box<dyn TargetFeed>>) -> Vec<Box<dyn TargetFeed>> {
        let tee = |inner| Box::new(Tee { inner, state: self.state.clone() }) as Box<dyn TargetFeed>;
        feeds.into_iter().map(tee).collect()
    }
}

/// A probe whose seconds are also added to the exposition.
struct Tee {
    inner: Box<dyn TargetFeed>,
    state: Shared,
}

fn add(state: &Shared, seconds: &[ioscope_metrics::TargetSecond]) {
    if let Ok(mut e) = state.lock() {
        seconds.iter().for_each(|t| e.add_target(t));
    }
}

impl TargetFeed for Tee {
    fn host(&self) -> (String, serde_json::Value) {
        self.inner.host()
    }
    fn start(&mut self, t0_monotonic_ns: u64) {
        self.inner.start(t0_monotonic_ns);
    }
    fn take(&mut self) -> Vec<ioscope_metrics::TargetSecond> {
        let seconds = self.inner.take();
        add(&self.state, &seconds);
        seconds
    }
    fn finish(self: Box<Self>, last: Option<u64>) -> Vec<ioscope_metrics::TargetSecond> {
        let Tee { inner, state } = *self;
        let seconds = inner.finish(last);
        add(&state, &seconds);
        seconds
    }
}
