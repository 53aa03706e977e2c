from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Callable

import pytest

import mq


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
