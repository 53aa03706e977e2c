//! The Rust trace prints exactly the C demo's trace and push sections.
use std::process::Command;

fn run(exe: &str) -> String {
    let out = Command::new(exe)
        .env("NO_COLOR", "1")
        .output()
        .expect("run the example");
    assert!(
        out.status.success(),
        "{exe} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// From the "Reference trace" line up to the reference stress (which has timings).
fn trace_section(demo: &str) -> &str {
    let start = demo
        .find("Reference trace")
        .expect("the demo prints the reference trace");
    let end = demo.find("\nReference stress").unwrap_or(demo.len());
    &demo[start..end]
}

#[test]
fn rust_trace_matches_the_c_demo_byte_for_byte() {
    let c = run(env!("CARGO_BIN_EXE_c-demo"));
    let rust = run(env!("CARGO_BIN_EXE_mq-examples"));
    let want = trace_section(&c);
    assert!(
        want.contains("handler call 4"),
        "the C demo's push section is missing:\n{c}"
    );
    assert_eq!(rust, want, "the Rust trace differs from the C demo's");
}
