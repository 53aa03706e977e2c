//! Every tests/conformance/*.mqs scenario through the Rust testee, one test per file (found by
//! globbing: a new scenario needs no edit here), judged by the conformance runner with this
//! crate's expected-failures list.
use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Arguments, Failed, Trial};

fn scripts_dir() -> PathBuf {
    std::env::var_os("MQ_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/conformance"))
}

/// `MQ_CONFORMANCE_RUNNER` when set (e.g. the CMake build's `mq_conformance`), else the runner
/// this crate compiles from tests/conformance/runner.
fn runner() -> PathBuf {
    std::env::var_os("MQ_CONFORMANCE_RUNNER")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_mq-conformance-runner")))
}

fn run(script: &Path) -> Result<(), Failed> {
    if std::env::var_os("MQ_CONFORMANCE_RUNNER").is_none() && !cfg!(mq_runner) {
        return Err(
            "no conformance runner: tests/conformance/runner is not in this checkout; \
                    set MQ_CONFORMANCE_RUNNER to a built mq_conformance \
                    (cmake --build build --target mq_conformance)"
                .into(),
        );
    }
    let expected = Path::new(env!("CARGO_MANIFEST_DIR")).join("expected_failures.txt");
    let out = Command::new(runner())
        .arg("--testee")
        .arg(env!("CARGO_BIN_EXE_mq-testee"))
        .arg("--expected-failures")
        .arg(&expected)
        .arg(script)
        .output()
        .map_err(|e| format!("cannot start the runner: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .into())
    }
}

fn main() {
    let args = Arguments::from_args();
    let dir = scripts_dir();
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
            Trial::test(name, move || run(&s))
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
