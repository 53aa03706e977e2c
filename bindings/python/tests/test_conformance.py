"""Every tests/conformance/*.mqs scenario, one test per file found by globbing (a new scenario
needs no edit here): the repository's runner (mq_conformance) runs it against
conformance_testee.py, which executes the requests through the public Python API. The runner
is MQ_CONFORMANCE_RUNNER, else built from the repository's sources (native_tools.py).

In the Kafka variant (conftest.py), the scenarios of tests/conformance/kafka_scenarios.txt run
again with the testee's broker on the cluster at MQ_KAFKA_BOOTSTRAP (FORMAT.md, "On the Kafka
backend"), one at a time: they share topic names."""

from __future__ import annotations

import os
import pathlib
import shlex
import subprocess
import sys

import pytest
from native_tools import conformance_runner

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]
SCENARIOS = sorted((ROOT / "tests" / "conformance").glob("*.mqs"))
TESTEE = HERE / "conformance_testee.py"
EXPECTED_FAILURES = HERE / "conformance_expected_failures.txt"
EXPECTED_FAILURES_KAFKA = HERE / "conformance_expected_failures_kafka.txt"
KAFKA_LIST = ROOT / "tests" / "conformance" / "kafka_scenarios.txt"


def test_scenarios_were_found() -> None:
    # An empty glob would make test_scenario an empty parametrization, which pytest skips.
    assert SCENARIOS, f"no *.mqs scenarios in {ROOT / 'tests' / 'conformance'}"


def kafka_scenarios() -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in KAFKA_LIST.read_text().splitlines())
    return [name for name in lines if name]


KAFKA_SCENARIOS = kafka_scenarios()


def run_scenario(script: pathlib.Path, expected_failures: pathlib.Path, **env: str) -> None:
    testee = f"{shlex.quote(sys.executable)} {shlex.quote(str(TESTEE))}"
    runner = str(conformance_runner())
    cmd = [runner, "--testee", testee, "--expected-failures", str(expected_failures)]
    # The runner bounds every reply (10 s each) and kills a testee that hangs; this only keeps
    # a broken runner from hanging the suite.
    done = subprocess.run(
        [*cmd, str(script)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **env},
    )
    shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    assert done.returncode == 0, (
        f"{shown} {shlex.join([*cmd, str(script)])}\nexit {done.returncode}\n"
        f"{done.stdout}{done.stderr}"
    )


@pytest.mark.parametrize("script", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(script: pathlib.Path) -> None:
    run_scenario(script, EXPECTED_FAILURES)


@pytest.mark.kafka
def test_the_kafka_list_names_scenarios() -> None:
    assert KAFKA_SCENARIOS, f"no scenario named in {KAFKA_LIST}"
    names = {p.stem for p in SCENARIOS}
    assert [n for n in KAFKA_SCENARIOS if n not in names] == []


@pytest.mark.kafka
@pytest.mark.parametrize("name", KAFKA_SCENARIOS)
def test_scenario_on_kafka(name: str, kafka_bootstrap: str) -> None:
    script = ROOT / "tests" / "conformance" / f"{name}.mqs"
    run_scenario(
        script,
        EXPECTED_FAILURES_KAFKA,
        MQ_CONFORMANCE_BACKEND="kafka",
        MQ_KAFKA_BOOTSTRAP=kafka_bootstrap,
    )


def test_the_testees_kafka_mode_without_a_cluster() -> None:
    # The default build: the testee's broker goes to the cluster (which this core refuses), not
    # to the in-process log, and the manual clock is refused, as FORMAT.md says.
    env = {**os.environ, "MQ_CONFORMANCE_BACKEND": "kafka", "MQ_KAFKA_BOOTSTRAP": "127.0.0.1:1"}
    requests = "hello protocol=1\nclock advance_ns=5\nbroker_new\nend\n"
    done = subprocess.run(
        [sys.executable, str(TESTEE)],
        input=requests,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
    )
    replies = done.stdout.splitlines()
    assert replies[:2] == [
        "MQ_OK protocol=1",
        "testee_error detail=no%20manual%20clock%20on%20the%20Kafka%20backend",
    ]
    assert replies[2].startswith("MQ_ERR_UNSUPPORTED error=")
    assert replies[3:] == ["MQ_OK"]
