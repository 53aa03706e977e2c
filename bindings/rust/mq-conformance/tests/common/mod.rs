//! What both conformance harnesses share: where the scenarios and the runner are, and one run of
//! the runner on one scenario through this crate's testee.
use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::Failed;

pub fn scripts_dir() -> PathBuf {
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

/// Runs `script` with the expected-failures list `expected` (a file of this crate), the testee
/// inheriting this process's environment plus `env`.
pub fn run(script: &Path, expected: &str, env: &[(&str, &str)]) -> Result<(), Failed> {
    if std::env::var_os("MQ_CONFORMANCE_RUNNER").is_none() && !cfg!(mq_runner) {
        return Err(
            "no conformance runner: tests/conformance/runner is not in this checkout; \
                    set MQ_CONFORMANCE_RUNNER to a built mq_conformance \
                    (cmake --build build --target mq_conformance)"
                .into(),
        );
    }
    let expected = Path::new(env!("CARGO_MANIFEST_DIR")).join(expected);
    let out = Command::new(runner())
        .arg("--testee")
        .arg(env!("CARGO_BIN_EXE_mq-testee"))
        .arg("--expected-failures")
        .arg(&expected)
        .arg(script)
        .envs(env.iter().copied())
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
