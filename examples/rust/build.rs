//! Compiles the C demo (examples/demo.c) with its `main` renamed, so the `c-demo` binary can run
//! it and the trace test can compare its output with the Rust trace's, byte for byte.
fn main() {
    let include = std::env::var("DEP_MQ_INCLUDE").expect("mq-sys exports its include directory");
    println!("cargo:rerun-if-changed=../demo.c");
    cc::Build::new()
        .file("../demo.c")
        .include(include)
        .define("main", "mq_c_demo_main")
        .define("MQ_STATIC", None)
        .std("c11")
        .warnings(false)
        .compile("mq_c_demo");
}
