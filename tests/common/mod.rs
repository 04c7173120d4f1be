//! Shared fixtures of the integration tests that need more than a temporary directory.
//! A test file uses them with `mod common;` next to `mod skip;` (they report through it).

pub mod lab;
pub mod run;
