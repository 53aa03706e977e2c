"""The GIL is released while calls wait; Ctrl-C ends a waiting poll or publish in the main
thread; close and cancel tokens end waits in other threads."""

from __future__ import annotations

import signal
import threading
import time

import pytest
from conftest import blocked_calls, python_child, wait_until

import mq


def test_other_threads_run_while_one_polls_and_one_publishes(broker: mq.Broker) -> None:
    broker.create_topic("in")
    broker.subscribe("in", "g")
    broker.create_topic("out", capacity=1)
    broker.subscribe("out", "g")
    broker.publish("out", b"fills it")
    errors: list[BaseException] = []

    def run(f: object) -> None:
        try:
            f()  # type: ignore[operator]
        except BaseException as e:
            errors.append(e)

    poller = threading.Thread(target=run, args=(lambda: broker.poll("in", "g", 0, timeout=None),))
    publisher = threading.Thread(
        target=run, args=(lambda: broker.publish("out", b"waits", timeout=None),)
    )
    poller.start()
    publisher.start()
    wait_until(lambda: blocked_calls() == 2, what="both calls waiting in C")
    # Pure-Python work on this thread: with the GIL held by a waiting call it could not run.
    start = time.monotonic()
    n = 0
    while n < 200_000:
        n += 1
    assert blocked_calls() == 2, "both calls still wait while this thread ran"
    assert time.monotonic() - start < 5
    broker.close()
    poller.join(5)
    publisher.join(5)
    assert not poller.is_alive() and not publisher.is_alive()
    assert [type(e) for e in errors] == [mq.Closed, mq.Closed]


def test_cancel_token_ends_a_wait_in_another_thread(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "g")
    tok = mq.CancelToken()
    got: list[BaseException] = []

    def poll() -> None:
        try:
            broker.poll("t", "g", 0, timeout=None, cancel=tok)
        except BaseException as e:
            got.append(e)

    th = threading.Thread(target=poll)
    th.start()
    wait_until(lambda: blocked_calls() == 1, what="poll waiting")
    tok.cancel()
    th.join(5)
    assert [type(e) for e in got] == [mq.Cancelled]
    assert tok.cancelled
    tok.reset()
    assert not tok.cancelled


def test_cancel_token_in_the_main_thread(broker: mq.Broker) -> None:
    broker.create_topic("t")
    broker.subscribe("t", "g")
    tok = mq.CancelToken()

    def cancel_when_waiting() -> None:
        wait_until(lambda: blocked_calls() == 1)
        tok.cancel()

    timer = threading.Thread(target=cancel_when_waiting)
    timer.start()
    with pytest.raises(mq.Cancelled):
        broker.poll("t", "g", 0, timeout=None, cancel=tok)
    timer.join()


CHILD = """
import os, sys, threading, time
import mq
from mq._native import lib

b = mq.Broker()
b.create_topic("t", capacity=1)
b.subscribe("t", "g")
what = sys.argv[1] if len(sys.argv) > 1 else "{what}"
if what == "publish":
    b.publish("t", b"fills it")

def report_when_blocked():
    while lib.mqpy_blocked_calls() < 1:
        time.sleep(0.001)
    print("blocked", flush=True)

threading.Thread(target=report_when_blocked, daemon=True).start()
try:
    if what == "poll":
        b.poll("t", "g", 0, timeout=None)
    elif what == "member_poll":
        b.join("t", "live").poll(timeout=None)
    else:
        b.publish("t", b"waits", timeout=None)
    print("returned", flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
"""


@pytest.mark.parametrize("what", ["poll", "publish", "member_poll"])
def test_ctrl_c_ends_a_blocking_call_within_100_ms(what: str) -> None:
    child = python_child(CHILD.replace("{what}", what))
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line == "blocked\n", (line, child.stderr.read() if child.stderr else "")
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    words = out.split()
    assert words[:1] == ["interrupted"], (out, err)
    latency = float(words[1]) - sent
    assert latency < 0.1, f"KeyboardInterrupt came {latency * 1000:.0f} ms after SIGINT"


SIGNAL_NOT_RAISING = """
import signal, threading, time, os
import mq
from mq._native import lib
seen = []
signal.signal(signal.SIGUSR1, lambda *a: seen.append(1))
b = mq.Broker()
b.create_topic("t")
b.subscribe("t", "g")
def later():
    while lib.mqpy_blocked_calls() < 1:
        time.sleep(0.001)
    os.kill(os.getpid(), signal.SIGUSR1)
    while not seen:
        time.sleep(0.001)
    while lib.mqpy_blocked_calls() < 1:  # waiting again after the handler ran
        time.sleep(0.001)
    b.publish("t", b"late")
threading.Thread(target=later, daemon=True).start()
print([m.value for m in b.poll("t", "g", 0, timeout=None)], seen)
"""


def test_a_signal_whose_handler_does_not_raise_resumes_the_wait() -> None:
    child = python_child(SIGNAL_NOT_RAISING)
    out, err = child.communicate(timeout=20)
    assert out.strip() == "[b'late'] [1]", err
