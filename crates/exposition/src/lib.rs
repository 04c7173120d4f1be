//! Prometheus / OpenMetrics exposition: totals of ioscope's per-second series
//! ([`openmetrics::Exposition`], fed by `ioscope probe`'s target seconds or a run's client
//! seconds) served as OpenMetrics text at `/metrics` ([`serve::serve_metrics`]).
//! docs/probe.md "Prometheus / OpenMetrics" lists the names, labels and buckets.

pub mod openmetrics;
pub mod serve;

pub use openmetrics::{Exposition, CONTENT_TYPE};
pub use serve::{needs_token, serve_metrics, MetricsServer, ServeError, Shared};
