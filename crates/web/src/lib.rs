//! Analytics: the versioned JSON API over results files ([`api`], aggregation in
//! [`query`], the packed heat-map encoding in [`packed`], heat-map columns of several seconds in
//! [`columns`]), the HTTP server with the
//! embedded UI ([`server`] on axum/tokio, [`request`], [`access`], [`tls`], [`assets`]),
//! the self-contained HTML report ([`report`]) and PNG heat maps ([`plot`]).

pub mod access;
pub mod api;
pub mod assets;
mod busy;
pub mod columns;
mod events;
pub mod packed;
pub mod plot;
mod plot_text;
pub mod query;
pub mod report;
pub mod request;
pub mod server;
mod stall;
pub mod tls;

pub use api::Api;
pub use server::Server;

#[cfg(test)]
mod hosts_fixture;
#[cfg(test)]
mod server_fixture;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_answers;
#[cfg(test)]
mod tests_fixtures;
#[cfg(test)]
mod tests_hostile;
#[cfg(test)]
mod tests_hosts;
#[cfg(test)]
mod tests_http;
#[cfg(test)]
mod tests_props;
#[cfg(test)]
mod tests_server;
