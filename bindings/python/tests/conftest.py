from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any, Callable

import pytest

import mq

# The Kafka variant (test.sh's Kafka run, README "A Kafka cluster"): the wheel built with
# -C cmake.define.MQ_KAFKA=ON and MQ_PYTHON_VARIANT=kafka. It runs the tests marked kafka, against
# the cluster at MQ_KAFKA_BOOTSTRAP, and only those: the rest ran on the default build, whose
# core refuses a cluster (test_kafka_options.py checks that refusal, which a Kafka build lacks).
KAFKA_VARIANT = os.environ.get("MQ_PYTHON_VARIANT", "default") == "kafka"


def pytest_configure(config: pytest.Config) -> None:
    variant = os.environ.get("MQ_PYTHON_VARIANT", "default")
    if variant not in ("default", "kafka"):
        raise pytest.UsageError(f"MQ_PYTHON_VARIANT={variant}: use default or kafka")


def pytest_report_header() -> str:
    return f"mq variant: {'kafka' if KAFKA_VARIANT else 'default'} (MQ_PYTHON_VARIANT)"


_deselected: list[int] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Each variant's tests are the other's deselected ones, as a cargo feature or a build tag
    # leaves tests out: said in the summary (pytest_terminal_summary), not skipped one by one.
    keep = [i for i in items if (i.get_closest_marker("kafka") is not None) == KAFKA_VARIANT]
    gone = [i for i in items if (i.get_closest_marker("kafka") is not None) != KAFKA_VARIANT]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = keep
    _deselected.append(len(gone))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not sum(_deselected):
        return
    if KAFKA_VARIANT:
        why = "the default variant's tests (they ran on the default build)"
    else:
        why = (
            "the Kafka variant's tests: bindings/python/test.sh runs them (a wheel built with "
            "-C cmake.define.MQ_KAFKA=ON, MQ_PYTHON_VARIANT=kafka, a cluster at MQ_KAFKA_BOOTSTRAP)"
        )
    terminalreporter.write_line(f"mq: {sum(_deselected)} deselected: {why}")


@pytest.fixture
def kafka_bootstrap() -> str:
    """The cluster of the Kafka variant. Missing is a failure, never a skip: the variant exists
    to run against a cluster."""
    bootstrap = os.environ.get("MQ_KAFKA_BOOTSTRAP", "")
    if not bootstrap:
        pytest.fail(
            "MQ_KAFKA_BOOTSTRAP is not set: the Kafka variant needs a cluster (bindings/python/"
            "test.sh starts one with scripts/kafka-server.sh start, or set it to host:port)"
        )
    return bootstrap


@pytest.fixture
def broker() -> Iterator[mq.Broker]:
    with mq.Broker() as b:
        yield b


@pytest.fixture
def clock() -> mq.ManualClock:
    return mq.ManualClock()


def wait_until(cond: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Waits for a condition another thread makes true (never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.001)


def blocked_calls() -> int:
    """Threads inside a blocking mq call right now (counted natively, with the GIL released)."""
    from mq._native import lib

    return int(lib.mqpy_blocked_calls())


def python_child(code: str, *, python: str | None = None, **kw: object) -> subprocess.Popen[str]:
    """Starts a Python child running ``code`` with this interpreter (and this mq)."""
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [python or sys.executable, "-c", textwrap.dedent(code)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **kw,
    )
