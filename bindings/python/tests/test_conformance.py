"""Every tests/conformance/*.mqs scenario, one test per file found by globbing (a new scenario
needs no edit here): the repository's runner (mq_conformance) runs it against
conformance_testee.py, which executes the requests through the public Python API."""

from __future__ import annotations

import os
import pathlib
import shlex
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SCENARIOS = sorted((ROOT / "tests" / "conformance").glob("*.mqs"))
TESTEE = HERE / "conformance_testee.py"
EXPECTED_FAILURES = HERE / "conformance_expected_failures.txt"
RUNNER_CANDIDATES = (
    HERE.parent / "build-core" / "tests" / "conformance" / "mq_conformance",  # test.sh's
    ROOT / "build" / "tests" / "conformance" / "mq_conformance",  # scripts/test.sh's
)


def runner() -> pathlib.Path:
    """MQ_CONFORMANCE_RUNNER (set by test.sh), else a runner already built in the repository."""
    env = os.environ.get("MQ_CONFORMANCE_RUNNER")
    if env:
        if not os.access(env, os.X_OK):
            pytest.fail(f"MQ_CONFORMANCE_RUNNER={env} is not an executable file")
        return pathlib.Path(env)
    for cand in RUNNER_CANDIDATES:
        if os.access(cand, os.X_OK):
            return cand
    pytest.fail(
        "the conformance runner mq_conformance is not built: run bindings/python/test.sh, or "
        "build it (cmake -S . -B build -DMQ_BUILD_TESTS=ON && cmake --build build --target "
        "mq_conformance) and set MQ_CONFORMANCE_RUNNER to its path"
    )


def test_scenarios_were_found() -> None:
    # An empty glob would make test_scenario an empty parametrization, which pytest skips.
    assert SCENARIOS, f"no *.mqs scenarios in {ROOT / 'tests' / 'conformance'}"


@pytest.mark.parametrize("script", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(script: pathlib.Path) -> None:
    testee = f"{shlex.quote(sys.executable)} {shlex.quote(str(TESTEE))}"
    cmd = [str(runner()), "--testee", testee, "--expected-failures", str(EXPECTED_FAILURES)]
    # The runner bounds every reply (10 s each) and kills a testee that hangs; this only keeps
    # a broken runner from hanging the suite.
    done = subprocess.run(
        [*cmd, str(script)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, (
        f"{shlex.join([*cmd, str(script)])}\nexit {done.returncode}\n{done.stdout}{done.stderr}"
    )
