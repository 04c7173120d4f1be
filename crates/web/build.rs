//! Embeds every file under assets/ into the binary: generates a table of
//! (name, content type, bytes) that `assets.rs` includes.

use std::fmt::Write;
use std::path::Path;

fn main() {
    // Read at run time, not compiled in: a build script built for a clone at another path
    // (sharing CARGO_TARGET_DIR) must still read this clone's assets.
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("assets");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("crates/web/assets")
        .map(|e| e.expect("assets entry").file_name().into_string().expect("UTF-8 asset name"))
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    let mut out = String::from("pub static ASSETS: &[(&str, &str, &[u8])] = &[\n");
    for n in &names {
        println!("cargo:rerun-if-changed={}", dir.join(n).display());
        let mime = match n.rsplit('.').next() {
            Some("html") => "text/html; charset=utf-8",
            Some("js") => "text/javascript; charset=utf-8",
            Some("css") => "text/css; charset=utf-8",
            Some("svg") => "image/svg+xml",
            Some("png") => "image/png",
            _ => "application/octet-stream",
        };
        writeln!(out, "    ({n:?}, {mime:?}, include_bytes!({:?})),", dir.join(n).display().to_string()).unwrap();
    }
    out.push_str("];\n");
    let target = Path::new(&std::env::var("OUT_DIR").unwrap()).join("assets_table.rs");
    std::fs::write(target, out).unwrap();
}
