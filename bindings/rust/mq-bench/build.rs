//! Compiles the C suite's mq workloads (bench/suite: common, mq_pull, mq_stress_push) into this
//! benchmark, against the same libmq as the Rust binding, so both run in one process, in the
//! same rounds.
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let suite = manifest.join("../../../bench/suite");
    let include = std::env::var("DEP_MQ_INCLUDE").expect("mq-sys exports its include directory");
    let files = ["common.cpp", "mq_pull.cpp", "mq_stress_push.cpp"].map(|f| suite.join(f));
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    println!("cargo:rerun-if-changed=src/c_suite.cpp");
    cc::Build::new()
        .cpp(true)
        .std("c++20")
        .files(&files)
        .file("src/c_suite.cpp")
        .include(&suite)
        .include(include)
        .define("MQ_STATIC", None)
        .opt_level(2)
        .warnings(false)
        .compile("mq_c_suite");
}
