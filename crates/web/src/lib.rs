//! Analytics: the versioned JSON API over results files ([`api`], aggregation in
//! [`query`]), the HTTP server with the embedded UI ([`server`], [`assets`]), the
//! self-contained HTML report ([`report`]) and PNG heat maps ([`plot`]).

pub mod api;
pub mod assets;
pub mod plot;
pub mod query;
pub mod report;
pub mod server;

pub use api::Api;
pub use server::Server;

#[cfg(test)]
mod tests;
