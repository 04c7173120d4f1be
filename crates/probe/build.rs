//! With the `ebpf` feature: compiles the BPF programs in src/bpf/*.bpf.c (clang, CO-RE) and
//! generates their libbpf-rs skeletons into OUT_DIR, against a vmlinux.h dumped from this
//! machine's kernel BTF (never committed). Without the feature: nothing.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "ebpf")]
    ebpf::build();
}

#[cfg(feature = "ebpf")]
mod ebpf {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    const PROGRAMS: [&str; 2] = ["block", "syscalls"];
    const BTF: &str = "/sys/kernel/btf/vmlinux";

    pub fn build() {
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        println!("cargo:rerun-if-changed=src/bpf/hist.bpf.h");
        println!("cargo:rerun-if-changed=src/bpf/bucket.bpf.h");
        let include = out.join("include");
        std::fs::create_dir_all(&include)
            .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", include.display())));
        vmlinux_h(&include.join("vmlinux.h"));
        if Command::new("clang").arg("--version").output().is_err() {
            fail("cannot run clang; the ebpf feature needs it (Debian: apt-get install clang llvm libelf-dev zlib1g-dev pkg-config)");
        }
        for name in PROGRAMS {
            let source = format!("src/bpf/{name}.bpf.c");
            println!("cargo:rerun-if-changed={source}");
            let skel = out.join(format!("{name}.skel.rs"));
            libbpf_cargo::SkeletonBuilder::new()
                .source(&source)
                .clang_args([format!("-I{}", include.display()), "-Isrc/bpf".to_string()])
                .build_and_generate(&skel)
                .unwrap_or_else(|e| fail(&format!("cannot compile {source} into a skeleton: {e:#}")));
        }
    }

    /// The kernel's types for CO-RE, from its BTF through bpftool.
    fn vmlinux_h(path: &Path) {
        if !Path::new(BTF).exists() {
            fail(&format!(
                "{BTF} is missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF), which the ebpf feature needs"
            ));
        }
        let out =
            Command::new("bpftool").args(["btf", "dump", "file", BTF, "format", "c"]).output().unwrap_or_else(|e| {
                fail(&format!("cannot run bpftool ({e}); the ebpf feature needs it (Debian: apt-get install bpftool)"))
            });
        if !out.status.success() {
            fail(&format!(
                "bpftool btf dump file {BTF} format c failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        std::fs::write(path, &out.stdout).unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
    }

    fn fail(why: &str) -> ! {
        eprintln!("error: {why}");
        panic!("{why}");
    }
}
