//! Every tests/conformance/*.mqs scenario through the Rust testee, one test per file (found by
//! globbing: a new scenario needs no edit here), judged by the conformance runner with this
//! crate's expected-failures list.
use std::path::PathBuf;

use libtest_mimic::{Arguments, Trial};

mod common;

fn main() {
    let args = Arguments::from_args();
    let dir = common::scripts_dir();
    let mut scripts: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "mqs"))
        .collect();
    scripts.sort();
    assert!(
        !scripts.is_empty(),
        "no .mqs scenarios in {}",
        dir.display()
    );
    let trials = scripts
        .into_iter()
        .map(|s| {
            let name = s.file_stem().unwrap().to_string_lossy().into_owned();
            // The in-process backend, whatever the environment says.
            Trial::test(name, move || {
                common::run(
                    &s,
                    "expected_failures.txt",
                    &[("MQ_CONFORMANCE_BACKEND", "")],
                )
            })
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
