//! Compiles the conformance runner (tests/conformance/runner, C++, owned by the core) into the
//! `mq-conformance-runner` binary, so `cargo test` runs the scenarios with no CMake build.
//! Without the runner's sources in the checkout the binary only reports that.
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=MQ_CONFORMANCE_RUNNER_SRC");
    println!("cargo:rustc-check-cfg=cfg(mq_runner)");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let dir = std::env::var_os("MQ_CONFORMANCE_RUNNER_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../../../tests/conformance/runner"));
    println!("cargo:rerun-if-changed={}", dir.display());
    let files = ["main.cpp", "scenario.cpp", "script.cpp", "testee.cpp"].map(|f| dir.join(f));
    if !files.iter().all(|f| f.is_file()) {
        println!(
            "cargo:warning=mq-conformance: no conformance runner at {} (tests/conformance/runner): \
             the conformance tests fail unless MQ_CONFORMANCE_RUNNER names a built runner",
            dir.display()
        );
        return;
    }
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    // The runner's main, renamed, is a C++ function: a C entry point calls it.
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    let shim = out.join("runner_entry.cpp");
    std::fs::write(
        &shim,
        "int mq_conformance_cxx_main(int argc, char **argv);\n\
         extern \"C\" int mq_conformance_main(int argc, char **argv) {\n\
             return mq_conformance_cxx_main(argc, argv);\n\
         }\n",
    )
    .unwrap();
    cc::Build::new()
        .cpp(true)
        .std("c++20")
        .files(&files)
        .file(&shim)
        .include(&dir)
        .define("main", "mq_conformance_cxx_main")
        .opt_level(2)
        .warnings(false)
        .compile("mq_conformance_runner");
    println!("cargo:rustc-cfg=mq_runner");
}
