//! Writes the results file of the server-worksheet tests (see `src/server_fixture.rs`): a
//! local client for 30 s with the target series of host "server" (CPU, memory, eth0,
//! loop3, ganesha.nfsd). Used by ui-tests/browser/server.test.mjs; `cargo test` builds it.
//!
//! Usage: cargo run -p ioscope-web --example server_run OUT.db

#[allow(dead_code)]
#[path = "../src/server_fixture.rs"]
mod server_fixture;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [out] = args.as_slice() else {
        eprintln!("usage: server_run OUT.db");
        std::process::exit(2);
    };
    if let Err(e) = server_fixture::write_server_results(std::path::Path::new(out)) {
        eprintln!("error: {out}: {e}");
        std::process::exit(1);
    }
}
