//! Writes the four-host results file of the host-breakdown tests (see
//! `src/hosts_fixture.rs`): h1..h4 for 20 s, h3 slow. Used by
//! ui-tests/browser/hosts.test.mjs; `cargo test` builds it.
//!
//! Usage: cargo run -p ioscope-web --example hosts_run OUT.db

#[allow(dead_code)]
#[path = "../src/hosts_fixture.rs"]
mod hosts_fixture;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out] = args.as_slice() else {
        eprintln!("usage: hosts_run OUT.db");
        std::process::exit(2);
    };
    if let Err(e) = hosts_fixture::write_hosts_results(std::path::Path::new(out)) {
        eprintln!("error: {out}: {e}");
        std::process::exit(1);
    }
}
